-- Rows that ingest merges again and again (a run and its states and datasets, once per event of
-- the run; edges, column edges and fields, once per event that reports them) carry no foreign keys.
-- PostgreSQL checks a foreign key again whenever a row inserted by the same transaction is updated,
-- so a batch that merges the events of a run spent most of its time re-checking keys it had just
-- written (~50 µs a key, three per column edge). Ingest writes the datasets, jobs and versions these
-- rows point to earlier in the same transaction, and those are never deleted (only marked deleted),
-- so the references hold by construction; tests check them after every kind of ingest.
ALTER TABLE runs DROP CONSTRAINT runs_job_uuid_fkey;
ALTER TABLE runs DROP CONSTRAINT runs_job_version_uuid_fkey;
ALTER TABLE run_states DROP CONSTRAINT run_states_run_uuid_fkey;
ALTER TABLE run_datasets DROP CONSTRAINT run_datasets_run_uuid_fkey;
ALTER TABLE run_datasets DROP CONSTRAINT run_datasets_dataset_uuid_fkey;
ALTER TABLE run_datasets DROP CONSTRAINT run_datasets_dataset_version_uuid_fkey;
ALTER TABLE dataset_fields DROP CONSTRAINT dataset_fields_dataset_uuid_fkey;
ALTER TABLE lineage_edges DROP CONSTRAINT lineage_edges_job_uuid_fkey;
ALTER TABLE lineage_edges DROP CONSTRAINT lineage_edges_dataset_uuid_fkey;
ALTER TABLE column_lineage DROP CONSTRAINT column_lineage_output_dataset_uuid_fkey;
ALTER TABLE column_lineage DROP CONSTRAINT column_lineage_input_dataset_uuid_fkey;
ALTER TABLE column_lineage DROP CONSTRAINT column_lineage_job_uuid_fkey;
