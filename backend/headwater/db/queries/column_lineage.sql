-- name: upsert_column_lineage
-- Opens or refreshes column edges (output field <- input field through a job, $9), producer-reported
-- or derived ($12), marking them superseded ($13) when the other source is preferred; each edge comes
-- with the eventTime ($10) and run ($11) of its event.
WITH input AS (
    SELECT DISTINCT ON (out_ds, out_field, in_ds, in_field, coalesce(ttype, ''), coalesce(tsub, ''), job, derived) *
    FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::boolean[],
                $9::uuid[], $10::timestamptz[], $11::uuid[], $12::boolean[], $13::boolean[])
        AS t(out_ds, out_field, in_ds, in_field, ttype, tsub, descr, masking, job, at, run_uuid, derived, superseded)
),
refreshed AS (
    UPDATE column_lineage c SET
        first_seen_at = least(c.first_seen_at, i.at),
        last_seen_at = greatest(c.last_seen_at, i.at),
        description = coalesce(i.descr, c.description),
        masking = coalesce(i.masking, c.masking),
        last_run_uuid = CASE WHEN i.at >= c.last_seen_at THEN coalesce(i.run_uuid, c.last_run_uuid)
                             ELSE c.last_run_uuid END,
        superseded = i.superseded
    FROM input i
    WHERE c.valid_to IS NULL AND c.output_dataset_uuid = i.out_ds AND c.output_field = i.out_field
      AND c.input_dataset_uuid = i.in_ds AND c.input_field = i.in_field
      AND coalesce(c.job_uuid, '00000000-0000-0000-0000-000000000000'::uuid)
          = coalesce(i.job, '00000000-0000-0000-0000-000000000000'::uuid)
      AND coalesce(c.transformation_type, '') = coalesce(i.ttype, '')
      AND coalesce(c.transformation_subtype, '') = coalesce(i.tsub, '')
      AND c.derived = i.derived
    RETURNING c.output_dataset_uuid, c.output_field, c.input_dataset_uuid, c.input_field, c.job_uuid,
              c.transformation_type, c.transformation_subtype, c.derived
)
INSERT INTO column_lineage (output_dataset_uuid, output_field, input_dataset_uuid, input_field, job_uuid,
                            transformation_type, transformation_subtype, description, masking, derived,
                            first_seen_at, last_seen_at, valid_from, last_run_uuid, superseded)
SELECT i.out_ds, i.out_field, i.in_ds, i.in_field, i.job, i.ttype, i.tsub, i.descr, i.masking, i.derived, i.at, i.at,
       i.at, i.run_uuid, i.superseded
FROM input i
WHERE NOT EXISTS (
    SELECT 1 FROM refreshed r
    WHERE r.output_dataset_uuid = i.out_ds AND r.output_field = i.out_field AND r.input_dataset_uuid = i.in_ds
      AND r.input_field = i.in_field AND coalesce(r.transformation_type, '') = coalesce(i.ttype, '')
      AND coalesce(r.transformation_subtype, '') = coalesce(i.tsub, '')
      AND r.job_uuid IS NOT DISTINCT FROM i.job AND r.derived = i.derived);

-- name: close_stale_column_lineage
-- A completed run that reported column lineage for an output replaces its job's ($1) earlier column
-- edges into that output ($2: a JSON array of dataset uuids): those not reported by this run ($5) nor
-- confirmed since its eventTime ($3) are closed. $4: the derived edges, or the reported ones.
UPDATE column_lineage c SET valid_to = t.at
FROM unnest($1::uuid[], $2::jsonb[], $3::timestamptz[], $4::boolean[], $5::uuid[])
    AS t(job_uuid, outputs, at, derived, run_uuid)
WHERE c.job_uuid = t.job_uuid AND t.outputs ? c.output_dataset_uuid::text AND c.valid_to IS NULL
  AND c.derived = t.derived AND c.last_seen_at < t.at AND c.last_run_uuid IS DISTINCT FROM t.run_uuid;
