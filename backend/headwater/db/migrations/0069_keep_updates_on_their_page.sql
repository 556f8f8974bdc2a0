-- The rows ingest still updates in the steady state, so that each update stays on its page without
-- touching any index (a HOT update), and the old version is reclaimed by the next visit of the page
-- instead of waiting for VACUUM:
-- * a run is updated by its COMPLETE (state, end) and then given its job version: the latest run of a
--   job is now found by start time (runs_job_uuid_idx), so no index covers its state time;
-- * a job gets its current version and latest run at every completed run;
-- * an edge and a column edge are confirmed once by each run that reports them.
-- Room left in each page for those new versions; rewrites nothing now, applies to pages written next.
DROP INDEX IF EXISTS runs_job_latest_idx;
ALTER TABLE runs SET (fillfactor = 60);
ALTER TABLE jobs SET (fillfactor = 60);
ALTER TABLE lineage_edges SET (fillfactor = 60);
ALTER TABLE column_lineage SET (fillfactor = 60);
