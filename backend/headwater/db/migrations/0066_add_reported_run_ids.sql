-- A runId that is not a UUID is stored as its name-based UUID (as Marquez does); the string the
-- producer sent is kept to show beside it. NULL when the runId was a UUID.
ALTER TABLE runs ADD COLUMN reported_run_id text;
