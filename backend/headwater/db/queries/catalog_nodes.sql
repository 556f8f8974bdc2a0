-- Datasets and jobs alike, $1 the kind ('DATASET' or 'JOB'); see catalog_functions.sql. Every
-- query returns nodes with the columns of catalog_nodes.

-- name: fetch_nodes_by_keys
-- Datasets or jobs by (namespace, name) as asked ($2, $3): a dataset by any of its aliases too.
-- Returns the asked identity next to the node's own.
SELECT t.namespace AS asked_namespace, t.name AS asked_name, n.*
FROM unnest($2::text[], $3::text[]) AS t(namespace, name)
JOIN catalog_names($1) k ON k.namespace = t.namespace AND k.name = t.name
JOIN catalog_nodes($1) n ON n.node_uuid = k.node_uuid;

-- name: fetch_nodes_by_uuids
-- Datasets or jobs by uuid ($2).
SELECT n.* FROM catalog_nodes($1) n WHERE n.node_uuid = ANY($2::uuid[]);

-- name: page_nodes
-- One page of datasets or jobs ordered by (namespace, name), after the keyset ($5, $6) when
-- given; filtered by namespace ($2), a case-insensitive name fragment ($3, LIKE-escaped) and
-- deletion ($4); $8 rows skipped (offset paging, as Marquez's REST API pages).
SELECT n.* FROM catalog_nodes($1) n
WHERE ($2::text IS NULL OR n.namespace = $2)
  AND ($3::text IS NULL OR lower(n.name) LIKE '%' || lower($3) || '%')
  AND ($4 OR n.deleted_at IS NULL)
  AND ($5::text IS NULL OR (n.namespace, n.name) > ($5, $6::text))
ORDER BY n.namespace, n.name
LIMIT $7 OFFSET $8;

-- name: page_nodes_by_heat
-- page_nodes ordered by heat, hottest first and never computed (NULL) last, then (namespace,
-- name); the keyset is the last row's heat ($9, NULL for a row without heat) and ($5, $6).
SELECT n.* FROM catalog_nodes($1) n
WHERE ($2::text IS NULL OR n.namespace = $2)
  AND ($3::text IS NULL OR lower(n.name) LIKE '%' || lower($3) || '%')
  AND ($4 OR n.deleted_at IS NULL)
  AND ($5::text IS NULL
       OR CASE WHEN $9::double precision IS NULL
               THEN n.heat IS NULL AND (n.namespace, n.name) > ($5, $6::text)
               ELSE n.heat < $9 OR n.heat IS NULL
                    OR (n.heat = $9 AND (n.namespace, n.name) > ($5, $6::text)) END)
ORDER BY n.heat DESC NULLS LAST, n.namespace, n.name
LIMIT $7 OFFSET $8;

-- name: page_nodes_by_updated_at
-- page_nodes ordered by updated_at, newest first, then (namespace, name); the keyset is the last
-- row's updated_at ($9) and ($5, $6).
SELECT n.* FROM catalog_nodes($1) n
WHERE ($2::text IS NULL OR n.namespace = $2)
  AND ($3::text IS NULL OR lower(n.name) LIKE '%' || lower($3) || '%')
  AND ($4 OR n.deleted_at IS NULL)
  AND ($5::text IS NULL OR n.updated_at < $9::timestamptz
       OR (n.updated_at = $9 AND (n.namespace, n.name) > ($5, $6::text)))
ORDER BY n.updated_at DESC, n.namespace, n.name
LIMIT $7 OFFSET $8;

-- name: count_nodes
-- How many datasets or jobs page_nodes' filters ($2 to $4) match in all.
SELECT count(*) FROM catalog_nodes($1) n
WHERE ($2::text IS NULL OR n.namespace = $2)
  AND ($3::text IS NULL OR lower(n.name) LIKE '%' || lower($3) || '%')
  AND ($4 OR n.deleted_at IS NULL);

-- name: count_nodes_by_namespaces
-- How many datasets or jobs, not deleted, each of the namespaces $2 holds: one pass for them all
-- (a namespace without any is absent).
SELECT n.namespace, count(*) AS count FROM catalog_nodes($1) n
WHERE n.namespace = ANY($2::text[]) AND n.deleted_at IS NULL
GROUP BY n.namespace;

-- name: set_node_deleted
-- Soft-deletes ($3 true, at $4) or restores ($3 false) the dataset or job $2. Returns a row only
-- when its state changed: the condition is checked again on the locked row, so of two concurrent
-- deletes only one changes it.
WITH d AS (
    UPDATE datasets SET deleted_at = CASE WHEN $3 THEN $4::timestamptz END
    WHERE $1 = 'DATASET' AND dataset_uuid = $2 AND (deleted_at IS NULL) = $3 RETURNING dataset_uuid
), j AS (
    UPDATE jobs SET deleted_at = CASE WHEN $3 THEN $4::timestamptz END
    WHERE $1 = 'JOB' AND job_uuid = $2 AND (deleted_at IS NULL) = $3 RETURNING job_uuid
)
SELECT dataset_uuid FROM d UNION ALL SELECT job_uuid FROM j;

-- name: fetch_node_versions
-- The latest $3 versions of each dataset or job ($2), newest first.
SELECT v.* FROM (
    SELECT v.*, row_number() OVER (PARTITION BY v.node_uuid ORDER BY v.created_at DESC, v.version) AS rn
    FROM catalog_versions($1) v WHERE v.node_uuid = ANY($2::uuid[])) v
WHERE v.rn <= $3
ORDER BY v.node_uuid, v.created_at DESC, v.version;

-- name: page_node_versions
-- One page of a dataset's or job's ($2) versions, newest first: $3 rows after skipping $4.
SELECT v.* FROM catalog_versions($1) v WHERE v.node_uuid = $2
ORDER BY v.created_at DESC, v.version
LIMIT $3 OFFSET $4;

-- name: count_node_versions
-- How many versions a dataset or job ($2) has.
SELECT count(*) FROM catalog_versions($1) v WHERE v.node_uuid = $2;

-- name: fetch_versions_by_uuids
-- Dataset or job versions by uuid ($2).
SELECT v.* FROM catalog_versions($1) v WHERE v.version_uuid = ANY($2::uuid[]);

-- name: fetch_node_version
-- The version of the dataset or job $2 whose version string, or uuid, is $3.
SELECT v.* FROM catalog_versions($1) v
WHERE v.node_uuid = $2 AND (v.version = $3 OR v.version_uuid::text = $3);
