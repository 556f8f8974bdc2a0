-- name: search_nodes
-- Datasets and jobs (not deleted) whose name contains $1 (LIKE-escaped, any case), optionally in
-- namespace $2 and of kind $5 (DATASET or JOB). Ordered by $6: NAME, UPDATE_AT (newest first), HEAT
-- (hottest first, never computed last), or else relevance: exact matches of $4 (the text
-- unescaped), then prefixes, then shorter names; relevance also breaks the other orders' ties.
-- At most $3 rows.
SELECT kind, namespace, name, updated_at, heat
FROM (
    SELECT 'DATASET' AS kind, d.namespace, d.name, d.updated_at, d.heat FROM datasets d
    WHERE d.deleted_at IS NULL AND lower(d.name) LIKE '%' || lower($1) || '%'
      AND ($2::text IS NULL OR d.namespace = $2) AND ($5::text IS NULL OR $5 = 'DATASET')
    UNION ALL
    SELECT 'JOB', j.namespace, j.name, j.updated_at, j.heat FROM jobs j
    WHERE j.deleted_at IS NULL AND lower(j.name) LIKE '%' || lower($1) || '%'
      AND ($2::text IS NULL OR j.namespace = $2) AND ($5::text IS NULL OR $5 = 'JOB')
) hits
ORDER BY CASE WHEN $6::text = 'NAME' THEN name END,
         CASE WHEN $6::text = 'UPDATE_AT' THEN updated_at END DESC,
         CASE WHEN $6::text = 'HEAT' THEN heat END DESC NULLS LAST,
         lower(name) = lower($4) DESC, lower(name) LIKE lower($1) || '%' DESC, length(name), name, kind,
         namespace
LIMIT $3;

-- name: count_search_nodes
-- How many datasets and jobs search_nodes' filters ($1, $2, $3 the kind) match in all.
SELECT (SELECT count(*) FROM datasets d WHERE d.deleted_at IS NULL AND lower(d.name) LIKE '%' || lower($1) || '%'
          AND ($2::text IS NULL OR d.namespace = $2) AND ($3::text IS NULL OR $3 = 'DATASET'))
     + (SELECT count(*) FROM jobs j WHERE j.deleted_at IS NULL AND lower(j.name) LIKE '%' || lower($1) || '%'
          AND ($2::text IS NULL OR j.namespace = $2) AND ($3::text IS NULL OR $3 = 'JOB')) AS total;
