-- name: fetch_jobs_by_keys
-- Jobs by (namespace, name).
SELECT j.job_uuid, j.node_id, j.namespace, j.name, j.parent_job_uuid, j.job_type, j.description, j.facets,
       j.created_at, j.updated_at, j.current_version_uuid, j.latest_run_uuid, j.deleted_at, j.manual, j.heat
FROM unnest($1::text[], $2::text[]) AS t(namespace, name)
JOIN jobs j ON j.namespace = t.namespace AND j.name = t.name;

-- name: fetch_jobs_by_uuids
-- Jobs by uuid.
SELECT j.job_uuid, j.node_id, j.namespace, j.name, j.parent_job_uuid, j.job_type, j.description, j.facets,
       j.created_at, j.updated_at, j.current_version_uuid, j.latest_run_uuid, j.deleted_at, j.manual, j.heat
FROM jobs j
WHERE j.job_uuid = ANY($1::uuid[]);

-- name: fetch_child_jobs
-- The jobs whose parent is one of the given jobs, by name.
SELECT j.job_uuid, j.node_id, j.namespace, j.name, j.parent_job_uuid, j.job_type, j.description, j.facets,
       j.created_at, j.updated_at, j.current_version_uuid, j.latest_run_uuid, j.deleted_at, j.manual, j.heat
FROM jobs j
WHERE j.parent_job_uuid = ANY($1::uuid[])
ORDER BY j.parent_job_uuid, j.namespace, j.name;

-- name: page_jobs
-- One page of jobs ordered by (namespace, name); the same filters and keyset as page_datasets.
SELECT j.job_uuid, j.node_id, j.namespace, j.name, j.parent_job_uuid, j.job_type, j.description, j.facets,
       j.created_at, j.updated_at, j.current_version_uuid, j.latest_run_uuid, j.deleted_at, j.manual, j.heat
FROM jobs j
WHERE ($1::text IS NULL OR j.namespace = $1)
  AND ($2::text IS NULL OR lower(j.name) LIKE '%' || lower($2) || '%')
  AND ($3 OR j.deleted_at IS NULL)
  AND ($4::text IS NULL OR (j.namespace, j.name) > ($4, $5::text))
ORDER BY j.namespace, j.name
LIMIT $6 OFFSET $7;

-- name: page_jobs_by_heat
-- page_jobs ordered by heat, hottest first and never computed (NULL) last, then (namespace,
-- name); the keyset is the last row's heat ($8, NULL for a row without heat) and ($4, $5).
SELECT j.job_uuid, j.node_id, j.namespace, j.name, j.parent_job_uuid, j.job_type, j.description, j.facets,
       j.created_at, j.updated_at, j.current_version_uuid, j.latest_run_uuid, j.deleted_at, j.manual, j.heat
FROM jobs j
WHERE ($1::text IS NULL OR j.namespace = $1)
  AND ($2::text IS NULL OR lower(j.name) LIKE '%' || lower($2) || '%')
  AND ($3 OR j.deleted_at IS NULL)
  AND ($4::text IS NULL
       OR CASE WHEN $8::double precision IS NULL
               THEN j.heat IS NULL AND (j.namespace, j.name) > ($4, $5::text)
               ELSE j.heat < $8 OR j.heat IS NULL
                    OR (j.heat = $8 AND (j.namespace, j.name) > ($4, $5::text)) END)
ORDER BY j.heat DESC NULLS LAST, j.namespace, j.name
LIMIT $6 OFFSET $7;

-- name: page_jobs_by_updated_at
-- page_jobs ordered by updated_at, newest first, then (namespace, name); the keyset is the last
-- row's updated_at ($8) and ($4, $5).
SELECT j.job_uuid, j.node_id, j.namespace, j.name, j.parent_job_uuid, j.job_type, j.description, j.facets,
       j.created_at, j.updated_at, j.current_version_uuid, j.latest_run_uuid, j.deleted_at, j.manual, j.heat
FROM jobs j
WHERE ($1::text IS NULL OR j.namespace = $1)
  AND ($2::text IS NULL OR lower(j.name) LIKE '%' || lower($2) || '%')
  AND ($3 OR j.deleted_at IS NULL)
  AND ($4::text IS NULL OR j.updated_at < $8::timestamptz
       OR (j.updated_at = $8 AND (j.namespace, j.name) > ($4, $5::text)))
ORDER BY j.updated_at DESC, j.namespace, j.name
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
          j.created_at, j.updated_at, j.current_version_uuid, j.latest_run_uuid, j.deleted_at, j.manual, j.heat,
          (t.was_deleted_at IS NULL) = $3 AS changed;
