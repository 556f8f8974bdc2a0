-- Datasets and jobs are no longer indexed by updated_at. The catalog's "most recently updated" order
-- (GraphQL's UPDATED_AT, Marquez search's UPDATE_AT) reads the nodes through catalog_nodes() or a
-- union and sorts them, and never used these indexes: its first page of 100,000 datasets took 33 ms
-- with the index and 33 ms without. Meanwhile every change of a dataset's or job's facets moves
-- updated_at, so each was an update that had to write a new entry in every index of the table (not
-- a HOT update) and left a dead row that only VACUUM reclaims: on the ingest benchmark, 633 of the
-- 1,147 dataset updates. Without the index such an update stays on its page, and the next visit of
-- the page reclaims the old version.
DROP INDEX IF EXISTS datasets_updated_at_idx;
DROP INDEX IF EXISTS jobs_updated_at_idx;
