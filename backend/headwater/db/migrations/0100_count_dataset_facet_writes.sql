-- What a dataset's facets have been through: raised by every write of them (ingest's upsert when it
-- rewrites the row, the removal of `_deleted` facets). A process that knows which facets a dataset
-- holds, as of one count, sends an event's report of the same values as nothing at all, and the
-- upsert checks the count instead of parsing and merging them again (upsert_datasets). A new column
-- with a constant default: no table rewrite.
ALTER TABLE datasets ADD COLUMN facets_writes bigint NOT NULL DEFAULT 0;
