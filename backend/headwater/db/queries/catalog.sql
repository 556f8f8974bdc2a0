-- name: list_namespaces
-- Every namespace with its creation time and when something in it last changed, by name.
SELECT n.name, n.created_at,
       greatest(n.created_at,
                (SELECT max(d.updated_at) FROM datasets d WHERE d.namespace = n.name),
                (SELECT max(j.updated_at) FROM jobs j WHERE j.namespace = n.name)) AS updated_at
FROM namespaces n
ORDER BY n.name;

-- name: fetch_namespaces_by_names
-- The namespaces with the given names (the same shape as list_namespaces).
SELECT n.name, n.created_at,
       greatest(n.created_at,
                (SELECT max(d.updated_at) FROM datasets d WHERE d.namespace = n.name),
                (SELECT max(j.updated_at) FROM jobs j WHERE j.namespace = n.name)) AS updated_at
FROM namespaces n
WHERE n.name = ANY($1::text[]);

-- name: fetch_datasets_by_keys
-- Datasets by (namespace, name) as asked ($1, $2), an alias resolving to its dataset. Returns the
-- asked identity next to the dataset's own.
SELECT t.namespace AS asked_namespace, t.name AS asked_name,
       d.dataset_uuid, d.node_id, d.namespace, d.name, d.source_name, d.description, d.facets, d.created_at,
       d.updated_at, d.current_version_uuid, d.current_version_at, d.deleted_at
FROM unnest($1::text[], $2::text[]) AS t(namespace, name)
JOIN dataset_aliases a ON a.namespace = t.namespace AND a.name = t.name
JOIN datasets d ON d.dataset_uuid = a.dataset_uuid;

-- name: fetch_datasets_by_uuids
-- Datasets by uuid.
SELECT d.dataset_uuid, d.node_id, d.namespace, d.name, d.source_name, d.description, d.facets, d.created_at,
       d.updated_at, d.current_version_uuid, d.current_version_at, d.deleted_at
FROM datasets d
WHERE d.dataset_uuid = ANY($1::uuid[]);

-- name: page_datasets
-- One page of datasets ordered by (namespace, name), after the keyset ($4, $5) when given; filtered
-- by namespace ($1), a case-insensitive name fragment ($2, LIKE-escaped) and deletion ($3); $7
-- rows skipped (offset paging, as Marquez's REST API pages).
SELECT d.dataset_uuid, d.node_id, d.namespace, d.name, d.source_name, d.description, d.facets, d.created_at,
       d.updated_at, d.current_version_uuid, d.current_version_at, d.deleted_at
FROM datasets d
WHERE ($1::text IS NULL OR d.namespace = $1)
  AND ($2::text IS NULL OR lower(d.name) LIKE '%' || lower($2) || '%')
  AND ($3 OR d.deleted_at IS NULL)
  AND ($4::text IS NULL OR (d.namespace, d.name) > ($4, $5::text))
ORDER BY d.namespace, d.name
LIMIT $6 OFFSET $7;

-- name: count_datasets
-- How many datasets page_datasets' filters ($1 to $3) match in all.
SELECT count(*) FROM datasets d
WHERE ($1::text IS NULL OR d.namespace = $1)
  AND ($2::text IS NULL OR lower(d.name) LIKE '%' || lower($2) || '%')
  AND ($3 OR d.deleted_at IS NULL);

-- name: fetch_fields_by_datasets
-- The current fields of datasets, in schema order.
SELECT f.dataset_uuid, f.name, f.type, f.description, f.position
FROM dataset_fields f
WHERE f.dataset_uuid = ANY($1::uuid[])
ORDER BY f.dataset_uuid, f.position;

-- name: fetch_dataset_versions
-- The latest $2 versions of each dataset, newest first.
SELECT v.dataset_version_uuid, v.dataset_uuid, v.version, v.schema_fields, v.storage_version,
       v.created_by_run_uuid, v.created_at
FROM (SELECT v.*, row_number() OVER (PARTITION BY v.dataset_uuid ORDER BY v.created_at DESC, v.version) AS rn
      FROM dataset_versions v WHERE v.dataset_uuid = ANY($1::uuid[])) v
WHERE v.rn <= $2
ORDER BY v.dataset_uuid, v.created_at DESC, v.version;

-- name: fetch_dataset_versions_by_uuids
-- Dataset versions by uuid.
SELECT v.dataset_version_uuid, v.dataset_uuid, v.version, v.schema_fields, v.storage_version,
       v.created_by_run_uuid, v.created_at
FROM dataset_versions v
WHERE v.dataset_version_uuid = ANY($1::uuid[]);

-- name: fetch_runs_writing_datasets
-- The latest $2 runs that wrote each dataset (by the run's creation), newest first.
SELECT w.dataset_uuid, w.run_uuid, w.job_uuid, w.job_version_uuid, w.parent_run_uuid, w.root_run_uuid,
       w.current_state, w.current_state_at, w.started_at, w.ended_at, w.nominal_start_time, w.nominal_end_time,
       w.error_message, w.facets, w.created_at, w.updated_at
FROM (SELECT rd.dataset_uuid, r.*,
             row_number() OVER (PARTITION BY rd.dataset_uuid ORDER BY r.created_at DESC, r.run_uuid) AS rn
      FROM run_datasets rd JOIN runs r ON r.run_uuid = rd.run_uuid
      WHERE rd.dataset_uuid = ANY($1::uuid[]) AND rd.direction = 'OUTPUT') w
WHERE w.rn <= $2
ORDER BY w.dataset_uuid, w.created_at DESC, w.run_uuid;

-- name: fetch_runs_by_uuids
-- Runs by uuid.
SELECT r.run_uuid, r.job_uuid, r.job_version_uuid, r.parent_run_uuid, r.root_run_uuid, r.current_state,
       r.current_state_at, r.started_at, r.ended_at, r.nominal_start_time, r.nominal_end_time, r.error_message,
       r.facets, r.created_at, r.updated_at
FROM runs r
WHERE r.run_uuid = ANY($1::uuid[]);

-- name: fetch_runs_by_jobs
-- The latest $2 runs of each job, newest first, after the run created at $3 / with uuid $4 when
-- given (keyset paging of one job's runs).
SELECT w.run_uuid, w.job_uuid, w.job_version_uuid, w.parent_run_uuid, w.root_run_uuid, w.current_state,
       w.current_state_at, w.started_at, w.ended_at, w.nominal_start_time, w.nominal_end_time, w.error_message,
       w.facets, w.created_at, w.updated_at
FROM (SELECT r.*, row_number() OVER (PARTITION BY r.job_uuid ORDER BY r.created_at DESC, r.run_uuid DESC) AS rn
      FROM runs r
      WHERE r.job_uuid = ANY($1::uuid[])
        AND ($3::timestamptz IS NULL OR (r.created_at, r.run_uuid) < ($3, $4::uuid))) w
WHERE w.rn <= $2
ORDER BY w.job_uuid, w.created_at DESC, w.run_uuid DESC;

-- name: fetch_run_states
-- Every state transition of runs, oldest first.
SELECT s.run_uuid, s.state, s.event_time
FROM run_states s
WHERE s.run_uuid = ANY($1::uuid[])
ORDER BY s.run_uuid, s.event_time, s.state;

-- name: fetch_run_datasets_by_runs
-- The datasets runs read and wrote, with the version read or written.
SELECT rd.run_uuid, rd.dataset_uuid, rd.direction, rd.dataset_version_uuid
FROM run_datasets rd
WHERE rd.run_uuid = ANY($1::uuid[])
ORDER BY rd.run_uuid, rd.direction, rd.first_seen_at, rd.dataset_uuid;

-- name: fetch_jobs_by_keys
-- Jobs by (namespace, name).
SELECT j.job_uuid, j.node_id, j.namespace, j.name, j.parent_job_uuid, j.job_type, j.description, j.facets,
       j.created_at, j.updated_at, j.current_version_uuid, j.latest_run_uuid, j.deleted_at, j.manual
FROM unnest($1::text[], $2::text[]) AS t(namespace, name)
JOIN jobs j ON j.namespace = t.namespace AND j.name = t.name;

-- name: fetch_jobs_by_uuids
-- Jobs by uuid.
SELECT j.job_uuid, j.node_id, j.namespace, j.name, j.parent_job_uuid, j.job_type, j.description, j.facets,
       j.created_at, j.updated_at, j.current_version_uuid, j.latest_run_uuid, j.deleted_at, j.manual
FROM jobs j
WHERE j.job_uuid = ANY($1::uuid[]);

-- name: fetch_child_jobs
-- The jobs whose parent is one of the given jobs, by name.
SELECT j.job_uuid, j.node_id, j.namespace, j.name, j.parent_job_uuid, j.job_type, j.description, j.facets,
       j.created_at, j.updated_at, j.current_version_uuid, j.latest_run_uuid, j.deleted_at, j.manual
FROM jobs j
WHERE j.parent_job_uuid = ANY($1::uuid[])
ORDER BY j.parent_job_uuid, j.namespace, j.name;

-- name: page_jobs
-- One page of jobs ordered by (namespace, name); the same filters and keyset as page_datasets.
SELECT j.job_uuid, j.node_id, j.namespace, j.name, j.parent_job_uuid, j.job_type, j.description, j.facets,
       j.created_at, j.updated_at, j.current_version_uuid, j.latest_run_uuid, j.deleted_at, j.manual
FROM jobs j
WHERE ($1::text IS NULL OR j.namespace = $1)
  AND ($2::text IS NULL OR lower(j.name) LIKE '%' || lower($2) || '%')
  AND ($3 OR j.deleted_at IS NULL)
  AND ($4::text IS NULL OR (j.namespace, j.name) > ($4, $5::text))
ORDER BY j.namespace, j.name
LIMIT $6 OFFSET $7;

-- name: count_jobs
-- How many jobs page_jobs' filters ($1 to $3) match in all.
SELECT count(*) FROM jobs j
WHERE ($1::text IS NULL OR j.namespace = $1)
  AND ($2::text IS NULL OR lower(j.name) LIKE '%' || lower($2) || '%')
  AND ($3 OR j.deleted_at IS NULL);

-- name: fetch_job_versions
-- The latest $2 versions of each job, newest first.
SELECT v.job_version_uuid, v.job_uuid, v.version, v.input_uuids, v.output_uuids, v.code_hash,
       v.created_by_run_uuid, v.created_at
FROM (SELECT v.*, row_number() OVER (PARTITION BY v.job_uuid ORDER BY v.created_at DESC, v.version) AS rn
      FROM job_versions v WHERE v.job_uuid = ANY($1::uuid[])) v
WHERE v.rn <= $2
ORDER BY v.job_uuid, v.created_at DESC, v.version;

-- name: fetch_job_versions_by_uuids
-- Job versions by uuid.
SELECT v.job_version_uuid, v.job_uuid, v.version, v.input_uuids, v.output_uuids, v.code_hash,
       v.created_by_run_uuid, v.created_at
FROM job_versions v
WHERE v.job_version_uuid = ANY($1::uuid[]);

-- name: search_nodes
-- Datasets and jobs (not deleted) whose name contains $1 (LIKE-escaped, any case), optionally in
-- namespace $2 and of kind $5 (DATASET or JOB). Ordered by $6: NAME, UPDATE_AT (newest first), or
-- else relevance: exact matches of $4 (the text unescaped), then prefixes, then shorter names.
-- At most $3 rows.
SELECT kind, namespace, name, updated_at
FROM (
    SELECT 'DATASET' AS kind, d.namespace, d.name, d.updated_at FROM datasets d
    WHERE d.deleted_at IS NULL AND lower(d.name) LIKE '%' || lower($1) || '%'
      AND ($2::text IS NULL OR d.namespace = $2) AND ($5::text IS NULL OR $5 = 'DATASET')
    UNION ALL
    SELECT 'JOB', j.namespace, j.name, j.updated_at FROM jobs j
    WHERE j.deleted_at IS NULL AND lower(j.name) LIKE '%' || lower($1) || '%'
      AND ($2::text IS NULL OR j.namespace = $2) AND ($5::text IS NULL OR $5 = 'JOB')
) hits
ORDER BY CASE WHEN $6::text = 'NAME' THEN name END,
         CASE WHEN $6::text = 'UPDATE_AT' THEN updated_at END DESC,
         lower(name) = lower($4) DESC, lower(name) LIKE lower($1) || '%' DESC, length(name), name, kind,
         namespace
LIMIT $3;

-- name: count_search_nodes
-- How many datasets and jobs search_nodes' filters ($1, $2, $3 the kind) match in all.
SELECT (SELECT count(*) FROM datasets d WHERE d.deleted_at IS NULL AND lower(d.name) LIKE '%' || lower($1) || '%'
          AND ($2::text IS NULL OR d.namespace = $2) AND ($3::text IS NULL OR $3 = 'DATASET'))
     + (SELECT count(*) FROM jobs j WHERE j.deleted_at IS NULL AND lower(j.name) LIKE '%' || lower($1) || '%'
          AND ($2::text IS NULL OR j.namespace = $2) AND ($3::text IS NULL OR $3 = 'JOB')) AS total;

-- name: set_dataset_deleted
-- Soft-deletes ($3 true, at $4) or restores ($3 false) the dataset ($1, $2). Returns the dataset
-- and whether its state changed.
WITH target AS (
    SELECT d.dataset_uuid, d.deleted_at AS was_deleted_at
    FROM dataset_aliases a JOIN datasets d ON d.dataset_uuid = a.dataset_uuid
    WHERE a.namespace = $1 AND a.name = $2
    FOR UPDATE OF d
)
UPDATE datasets d SET deleted_at = CASE WHEN $3 THEN coalesce(d.deleted_at, $4) END
FROM target t
WHERE d.dataset_uuid = t.dataset_uuid
RETURNING d.dataset_uuid, d.node_id, d.namespace, d.name, d.source_name, d.description, d.facets, d.created_at,
          d.updated_at, d.current_version_uuid, d.current_version_at, d.deleted_at,
          (t.was_deleted_at IS NULL) = $3 AS changed;

-- name: set_job_deleted
-- Soft-deletes ($3 true, at $4) or restores ($3 false) the job ($1, $2). Returns the job and
-- whether its state changed.
WITH target AS (
    SELECT j.job_uuid, j.deleted_at AS was_deleted_at FROM jobs j WHERE j.namespace = $1 AND j.name = $2
    FOR UPDATE
)
UPDATE jobs j SET deleted_at = CASE WHEN $3 THEN coalesce(j.deleted_at, $4) END
FROM target t
WHERE j.job_uuid = t.job_uuid
RETURNING j.job_uuid, j.node_id, j.namespace, j.name, j.parent_job_uuid, j.job_type, j.description, j.facets,
          j.created_at, j.updated_at, j.current_version_uuid, j.latest_run_uuid, j.deleted_at, j.manual,
          (t.was_deleted_at IS NULL) = $3 AS changed;

-- name: page_job_runs
-- One page of a job's runs, newest first: $2 rows after skipping $3.
SELECT r.run_uuid, r.job_uuid, r.job_version_uuid, r.parent_run_uuid, r.root_run_uuid, r.current_state,
       r.current_state_at, r.started_at, r.ended_at, r.nominal_start_time, r.nominal_end_time, r.error_message,
       r.facets, r.created_at, r.updated_at
FROM runs r
WHERE r.job_uuid = $1
ORDER BY r.created_at DESC, r.run_uuid DESC
LIMIT $2 OFFSET $3;

-- name: count_job_runs
-- How many runs the job has.
SELECT count(*) FROM runs WHERE job_uuid = $1;
