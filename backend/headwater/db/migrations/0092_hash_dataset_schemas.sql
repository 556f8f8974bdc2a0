-- A dataset's current schema as a 64-bit hash of its fields (names, types and descriptions, in
-- order), set by ingest with the fields themselves. Every event naming a dataset compares the schema
-- it reports with the stored one: comparing hashes spares aggregating the stored fields for each
-- (a tenth of ingest's PostgreSQL time). NULL for schemas set before this column: their fields are
-- read as before until ingest next sets them. Adds a column without rewriting the table.
ALTER TABLE datasets ADD COLUMN fields_hash bigint;
