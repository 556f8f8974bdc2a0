-- name: upsert_column_lineage
-- Opens or refreshes column edges ($1: a JSON array of edges, output field <- input field through a
-- job), producer-reported or derived, marking them superseded when the other source is preferred;
-- each edge comes with the eventTime and run of its event. An open edge is found by its key in
-- column_lineage_open_key, one index probe per edge however large the table. Returns the edges opened
-- (not those refreshed).
WITH written AS (
INSERT INTO column_lineage AS c (output_dataset_uuid, output_field, input_dataset_uuid, input_field, job_uuid,
                                 transformation_type, transformation_subtype, description, masking, derived,
                                 first_seen_at, last_seen_at, valid_from, last_run_uuid, superseded)
SELECT DISTINCT ON (out_ds, out_field, in_ds, in_field, coalesce(ttype, ''), coalesce(tsub, ''), job, derived)
       out_ds, out_field, in_ds, in_field, job, ttype, tsub, descr, masking, derived, at, at, at, run_uuid,
       superseded
FROM json_to_recordset($1::json)
    AS t(out_ds uuid, out_field text, in_ds uuid, in_field text, ttype text, tsub text, descr text, masking boolean,
         job uuid, at timestamptz, run_uuid uuid, derived boolean, superseded boolean)
ON CONFLICT (output_dataset_uuid, output_field, input_dataset_uuid, input_field,
             coalesce(job_uuid, '00000000-0000-0000-0000-000000000000'::uuid),
             coalesce(transformation_type, ''), coalesce(transformation_subtype, ''), derived)
    WHERE valid_to IS NULL
DO UPDATE SET
    first_seen_at = least(c.first_seen_at, excluded.first_seen_at),
    last_seen_at = greatest(c.last_seen_at, excluded.last_seen_at),
    description = coalesce(excluded.description, c.description),
    masking = coalesce(excluded.masking, c.masking),
    last_run_uuid = CASE WHEN excluded.last_seen_at >= c.last_seen_at
                         THEN coalesce(excluded.last_run_uuid, c.last_run_uuid) ELSE c.last_run_uuid END,
    superseded = excluded.superseded
-- A later event of the run that last reported the edge changes nothing worth a new row version.
WHERE excluded.first_seen_at < c.first_seen_at
   OR coalesce(excluded.description, c.description) IS DISTINCT FROM c.description
   OR coalesce(excluded.masking, c.masking) IS DISTINCT FROM c.masking
   OR excluded.superseded IS DISTINCT FROM c.superseded
   OR (excluded.last_seen_at > c.last_seen_at AND excluded.last_run_uuid IS DISTINCT FROM c.last_run_uuid)
RETURNING c.job_uuid, c.output_dataset_uuid, c.output_field, c.input_dataset_uuid, c.input_field, c.derived,
          (xmax = 0) AS opened
)
SELECT job_uuid, output_dataset_uuid, output_field, input_dataset_uuid, input_field, derived
FROM written WHERE opened;
