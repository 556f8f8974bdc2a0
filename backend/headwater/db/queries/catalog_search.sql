-- Datasets and jobs are searched alike, both read through catalog_nodes (catalog_functions.sql):
-- those not deleted whose name contains the text, of the kind asked for (both when none) and in the
-- namespace asked for (any when none).

-- name: search_nodes
-- Hits for the text $1 (LIKE-escaped, any case) in namespace $2 of kind $5, ordered by $6: NAME,
-- UPDATE_AT (newest first), HEAT (hottest first, never computed last), or else relevance: exact
-- matches of $4 (the text unescaped), then prefixes, then shorter names; relevance also breaks the
-- other orders' ties. At most $3 rows.
SELECT n.kind, n.namespace, n.name, n.updated_at, n.heat
FROM (SELECT 'DATASET' AS kind, * FROM catalog_nodes('DATASET')
      UNION ALL
      SELECT 'JOB', * FROM catalog_nodes('JOB')) n
WHERE ($5::text IS NULL OR n.kind = $5) AND n.deleted_at IS NULL
  AND lower(n.name) LIKE '%' || lower($1) || '%' AND ($2::text IS NULL OR n.namespace = $2)
ORDER BY CASE WHEN $6::text = 'NAME' THEN n.name END,
         CASE WHEN $6::text = 'UPDATE_AT' THEN n.updated_at END DESC,
         CASE WHEN $6::text = 'HEAT' THEN n.heat END DESC NULLS LAST,
         lower(n.name) = lower($4) DESC, lower(n.name) LIKE lower($1) || '%' DESC, length(n.name), n.name,
         n.kind, n.namespace
LIMIT $3;

-- name: count_search_nodes
-- How many hits search_nodes' filters match in all: the text $1, namespace $2, kind $3.
SELECT count(*)
FROM (SELECT 'DATASET' AS kind, * FROM catalog_nodes('DATASET')
      UNION ALL
      SELECT 'JOB', * FROM catalog_nodes('JOB')) n
WHERE ($3::text IS NULL OR n.kind = $3) AND n.deleted_at IS NULL
  AND lower(n.name) LIKE '%' || lower($1) || '%' AND ($2::text IS NULL OR n.namespace = $2);
