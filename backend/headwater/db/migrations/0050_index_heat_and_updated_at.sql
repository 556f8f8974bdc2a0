-- Catalog lists sorted by heat (hottest first, never-scored last) or by last update (newest
-- first), with the name as tie-breaker, as the paged catalog queries order them.
CREATE INDEX datasets_heat_idx ON datasets (heat DESC NULLS LAST, namespace, name);
CREATE INDEX datasets_updated_at_idx ON datasets (updated_at DESC, namespace, name);
CREATE INDEX jobs_heat_idx ON jobs (heat DESC NULLS LAST, namespace, name);
CREATE INDEX jobs_updated_at_idx ON jobs (updated_at DESC, namespace, name);
