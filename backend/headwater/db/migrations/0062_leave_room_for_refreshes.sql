-- Edges, column edges and a run's datasets are refreshed by every event that reports them again
-- (last_seen_at, last_run_uuid), columns no index covers. Room left in each page lets PostgreSQL
-- keep the new row version on the same page without touching any index (a HOT update).
ALTER TABLE lineage_edges SET (fillfactor = 80);
ALTER TABLE column_lineage SET (fillfactor = 80);
ALTER TABLE run_datasets SET (fillfactor = 80);
