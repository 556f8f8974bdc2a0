-- name: upsert_column_lineage
-- Opens or refreshes column edges (output field <- input field through a job), producer-reported
-- or derived ($12), marking them superseded ($13) when the other source is preferred.
WITH input AS (
    SELECT DISTINCT ON (out_ds, out_field, in_ds, in_field, coalesce(ttype, ''), coalesce(tsub, '')) *
    FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::boolean[])
        AS t(out_ds, out_field, in_ds, in_field, ttype, tsub, descr, masking)
),
refreshed AS (
    UPDATE column_lineage c SET
        first_seen_at = least(c.first_seen_at, $10),
        last_seen_at = greatest(c.last_seen_at, $10),
        description = coalesce(i.descr, c.description),
        masking = coalesce(i.masking, c.masking),
        last_run_uuid = CASE WHEN $10 >= c.last_seen_at THEN coalesce($11, c.last_run_uuid) ELSE c.last_run_uuid END,
        superseded = $13
    FROM input i
    WHERE c.valid_to IS NULL AND c.output_dataset_uuid = i.out_ds AND c.output_field = i.out_field
      AND c.input_dataset_uuid = i.in_ds AND c.input_field = i.in_field
      AND coalesce(c.job_uuid, '00000000-0000-0000-0000-000000000000'::uuid)
          = coalesce($9::uuid, '00000000-0000-0000-0000-000000000000'::uuid)
      AND coalesce(c.transformation_type, '') = coalesce(i.ttype, '')
      AND coalesce(c.transformation_subtype, '') = coalesce(i.tsub, '')
      AND c.derived = $12
    RETURNING c.output_dataset_uuid, c.output_field, c.input_dataset_uuid, c.input_field, c.transformation_type,
              c.transformation_subtype
)
INSERT INTO column_lineage (output_dataset_uuid, output_field, input_dataset_uuid, input_field, job_uuid,
                            transformation_type, transformation_subtype, description, masking, derived,
                            first_seen_at, last_seen_at, valid_from, last_run_uuid, superseded)
SELECT i.out_ds, i.out_field, i.in_ds, i.in_field, $9, i.ttype, i.tsub, i.descr, i.masking, $12, $10, $10, $10, $11,
       $13
FROM input i
WHERE NOT EXISTS (
    SELECT 1 FROM refreshed r
    WHERE r.output_dataset_uuid = i.out_ds AND r.output_field = i.out_field AND r.input_dataset_uuid = i.in_ds
      AND r.input_field = i.in_field AND coalesce(r.transformation_type, '') = coalesce(i.ttype, '')
      AND coalesce(r.transformation_subtype, '') = coalesce(i.tsub, ''));

-- name: close_stale_column_lineage
-- A completed run that reported column lineage for an output replaces the job's earlier column
-- edges into that output: those not reported by this run ($5) nor confirmed since ($3) are closed.
UPDATE column_lineage c SET valid_to = $3
WHERE c.job_uuid = $1 AND c.output_dataset_uuid = ANY($2::uuid[]) AND c.valid_to IS NULL
  AND c.derived = $4 AND c.last_seen_at < $3 AND c.last_run_uuid IS DISTINCT FROM $5;
