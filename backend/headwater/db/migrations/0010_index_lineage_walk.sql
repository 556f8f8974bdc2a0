-- Indexes of the lineage walk and of its node documents.
-- Soft-deleted datasets and jobs are few; the walk reads them all once to never enter them.
CREATE INDEX datasets_deleted_node_idx ON datasets (node_id) WHERE deleted_at IS NOT NULL;
CREATE INDEX jobs_deleted_node_idx ON jobs (node_id) WHERE deleted_at IS NOT NULL;
-- The latest run of a job (by state time), one index probe per job node.
CREATE INDEX runs_job_latest_idx ON runs (job_uuid, (coalesce(current_state_at, created_at)) DESC, run_uuid);
