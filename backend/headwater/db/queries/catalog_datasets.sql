-- What only datasets have: their current fields and the runs that wrote them (the rest of the
-- catalog is catalog_nodes.sql).

-- name: fetch_fields_by_datasets
-- The current fields of datasets, in schema order.
SELECT f.dataset_uuid, f.name, f.type, f.description, f.position
FROM dataset_fields f
WHERE f.dataset_uuid = ANY($1::uuid[])
ORDER BY f.dataset_uuid, f.position;

-- name: fetch_runs_writing_datasets
-- The latest $2 runs that wrote each dataset (by the run's creation), newest first.
SELECT w.dataset_uuid, w.run_uuid, w.job_uuid, w.job_version_uuid, w.parent_run_uuid, w.root_run_uuid,
       w.current_state, w.current_state_at, w.started_at, w.ended_at, w.nominal_start_time, w.nominal_end_time,
       w.error_message, w.facets, w.created_at, w.updated_at, w.reported_run_id
FROM (SELECT rd.dataset_uuid, r.*,
             row_number() OVER (PARTITION BY rd.dataset_uuid ORDER BY r.created_at DESC, r.run_uuid) AS rn
      FROM run_datasets rd JOIN runs r ON r.run_uuid = rd.run_uuid
      WHERE rd.dataset_uuid = ANY($1::uuid[]) AND rd.direction = 'OUTPUT') w
WHERE w.rn <= $2
ORDER BY w.dataset_uuid, w.created_at DESC, w.run_uuid;
