-- name: fetch_datasets_by_keys
-- Datasets by (namespace, name) as asked ($1, $2), an alias resolving to its dataset. Returns the
-- asked identity next to the dataset's own.
SELECT t.namespace AS asked_namespace, t.name AS asked_name,
       d.dataset_uuid, d.node_id, d.namespace, d.name, d.source_name, d.description, d.facets, d.created_at,
       d.updated_at, d.current_version_uuid, d.current_version_at, d.deleted_at, d.heat
FROM unnest($1::text[], $2::text[]) AS t(namespace, name)
JOIN dataset_aliases a ON a.namespace = t.namespace AND a.name = t.name
JOIN datasets d ON d.dataset_uuid = a.dataset_uuid;

-- name: fetch_datasets_by_uuids
-- Datasets by uuid.
SELECT d.dataset_uuid, d.node_id, d.namespace, d.name, d.source_name, d.description, d.facets, d.created_at,
       d.updated_at, d.current_version_uuid, d.current_version_at, d.deleted_at, d.heat
FROM datasets d
WHERE d.dataset_uuid = ANY($1::uuid[]);

-- name: page_datasets
-- One page of datasets ordered by (namespace, name), after the keyset ($4, $5) when given; filtered
-- by namespace ($1), a case-insensitive name fragment ($2, LIKE-escaped) and deletion ($3); $7
-- rows skipped (offset paging, as Marquez's REST API pages).
SELECT d.dataset_uuid, d.node_id, d.namespace, d.name, d.source_name, d.description, d.facets, d.created_at,
       d.updated_at, d.current_version_uuid, d.current_version_at, d.deleted_at, d.heat
FROM datasets d
WHERE ($1::text IS NULL OR d.namespace = $1)
  AND ($2::text IS NULL OR lower(d.name) LIKE '%' || lower($2) || '%')
  AND ($3 OR d.deleted_at IS NULL)
  AND ($4::text IS NULL OR (d.namespace, d.name) > ($4, $5::text))
ORDER BY d.namespace, d.name
LIMIT $6 OFFSET $7;

-- name: page_datasets_by_heat
-- page_datasets ordered by heat, hottest first and never computed (NULL) last, then (namespace,
-- name); the keyset is the last row's heat ($8, NULL for a row without heat) and ($4, $5).
SELECT d.dataset_uuid, d.node_id, d.namespace, d.name, d.source_name, d.description, d.facets, d.created_at,
       d.updated_at, d.current_version_uuid, d.current_version_at, d.deleted_at, d.heat
FROM datasets d
WHERE ($1::text IS NULL OR d.namespace = $1)
  AND ($2::text IS NULL OR lower(d.name) LIKE '%' || lower($2) || '%')
  AND ($3 OR d.deleted_at IS NULL)
  AND ($4::text IS NULL
       OR CASE WHEN $8::double precision IS NULL
               THEN d.heat IS NULL AND (d.namespace, d.name) > ($4, $5::text)
               ELSE d.heat < $8 OR d.heat IS NULL
                    OR (d.heat = $8 AND (d.namespace, d.name) > ($4, $5::text)) END)
ORDER BY d.heat DESC NULLS LAST, d.namespace, d.name
LIMIT $6 OFFSET $7;

-- name: page_datasets_by_updated_at
-- page_datasets ordered by updated_at, newest first, then (namespace, name); the keyset is the last
-- row's updated_at ($8) and ($4, $5).
SELECT d.dataset_uuid, d.node_id, d.namespace, d.name, d.source_name, d.description, d.facets, d.created_at,
       d.updated_at, d.current_version_uuid, d.current_version_at, d.deleted_at, d.heat
FROM datasets d
WHERE ($1::text IS NULL OR d.namespace = $1)
  AND ($2::text IS NULL OR lower(d.name) LIKE '%' || lower($2) || '%')
  AND ($3 OR d.deleted_at IS NULL)
  AND ($4::text IS NULL OR d.updated_at < $8::timestamptz
       OR (d.updated_at = $8 AND (d.namespace, d.name) > ($4, $5::text)))
ORDER BY d.updated_at DESC, d.namespace, d.name
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
       w.error_message, w.facets, w.created_at, w.updated_at, w.reported_run_id
FROM (SELECT rd.dataset_uuid, r.*,
             row_number() OVER (PARTITION BY rd.dataset_uuid ORDER BY r.created_at DESC, r.run_uuid) AS rn
      FROM run_datasets rd JOIN runs r ON r.run_uuid = rd.run_uuid
      WHERE rd.dataset_uuid = ANY($1::uuid[]) AND rd.direction = 'OUTPUT') w
WHERE w.rn <= $2
ORDER BY w.dataset_uuid, w.created_at DESC, w.run_uuid;

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
          d.updated_at, d.current_version_uuid, d.current_version_at, d.deleted_at, d.heat,
          (t.was_deleted_at IS NULL) = $3 AS changed;
