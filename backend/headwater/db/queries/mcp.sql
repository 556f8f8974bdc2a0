-- name: find_nodes
-- Datasets, jobs and columns (dataset fields) whose name contains $1 (LIKE-escaped, any case), of
-- the kinds in $4 (DATASET, JOB, COLUMN), optionally in namespace $3 and tagged $5 (a column: its
-- field or its dataset), not deleted. Ordered as search_nodes orders by HEAT: hottest first (a
-- column has its dataset's heat; never computed last), then exact matches of $2 (the text
-- unescaped), prefixes, shorter names. One row of the page of $6 rows after $7, each with the total
-- number of matches; a single row of nulls but the total when the page is empty.
WITH hits AS (
    SELECT 'DATASET' AS kind, d.namespace, d.name, NULL::text AS field, NULL::text AS field_type,
           d.name AS matched, d.updated_at, d.heat
    FROM datasets d
    WHERE 'DATASET' = ANY($4::text[]) AND d.deleted_at IS NULL
      AND lower(d.name) LIKE '%' || lower($1) || '%' AND ($3::text IS NULL OR d.namespace = $3)
      AND ($5::text IS NULL OR EXISTS (
          SELECT 1 FROM dataset_tags dt JOIN tags t USING (tag_uuid)
          WHERE dt.dataset_uuid = d.dataset_uuid AND t.name = $5))
    UNION ALL
    SELECT 'JOB', j.namespace, j.name, NULL, NULL, j.name, j.updated_at, j.heat
    FROM jobs j
    WHERE 'JOB' = ANY($4::text[]) AND j.deleted_at IS NULL
      AND lower(j.name) LIKE '%' || lower($1) || '%' AND ($3::text IS NULL OR j.namespace = $3)
      AND ($5::text IS NULL OR EXISTS (
          SELECT 1 FROM job_tags jt JOIN tags t USING (tag_uuid)
          WHERE jt.job_uuid = j.job_uuid AND t.name = $5))
    UNION ALL
    SELECT 'COLUMN', d.namespace, d.name, f.name, f.type, f.name, d.updated_at, d.heat
    FROM dataset_fields f JOIN datasets d USING (dataset_uuid)
    WHERE 'COLUMN' = ANY($4::text[]) AND d.deleted_at IS NULL
      AND lower(f.name) LIKE '%' || lower($1) || '%' AND ($3::text IS NULL OR d.namespace = $3)
      AND ($5::text IS NULL OR EXISTS (
          SELECT 1 FROM dataset_field_tags ft JOIN tags t USING (tag_uuid)
          WHERE ft.dataset_uuid = d.dataset_uuid AND ft.field_name = f.name AND t.name = $5)
        OR EXISTS (
          SELECT 1 FROM dataset_tags dt JOIN tags t USING (tag_uuid)
          WHERE dt.dataset_uuid = d.dataset_uuid AND t.name = $5))
),
page AS (
    SELECT * FROM hits
    ORDER BY heat DESC NULLS LAST, lower(matched) = lower($2) DESC,
             lower(matched) LIKE lower($1) || '%' DESC, length(matched), matched, kind, namespace, name
    LIMIT $6 OFFSET $7
)
SELECT total.n AS total, page.*
FROM (SELECT count(*) AS n FROM hits) total
LEFT JOIN page ON true
ORDER BY page.heat DESC NULLS LAST, lower(page.matched) = lower($2) DESC,
         lower(page.matched) LIKE lower($1) || '%' DESC, length(page.matched), page.matched, page.kind,
         page.namespace, page.name;

-- name: fetch_suspect_changes
-- What may explain a bad dataset, from the change log of the nodes $1 (lineage node ids) at or
-- after $2: runs that ended FAIL or ABORT, job versions that replaced an earlier one, and schema
-- changes. Newest first, the page of $3 rows after $4, each with the total number of such changes.
WITH found AS (
    SELECT change_id, kind, node_id, namespace, at, details, created_at
    FROM change_log
    WHERE node_id = ANY($1::text[]) AND at >= $2
      AND ((kind = 'RUN_STATE_CHANGED' AND details ->> 'state' IN ('FAIL', 'ABORT'))
           OR (kind = 'JOB_VERSION_CHANGED' AND details ->> 'previousVersion' IS NOT NULL)
           OR kind = 'SCHEMA_CHANGED')
),
page AS (SELECT * FROM found ORDER BY at DESC, change_id DESC LIMIT $3 OFFSET $4)
SELECT total.n AS total, page.*
FROM (SELECT count(*) AS n FROM found) total
LEFT JOIN page ON true
ORDER BY page.at DESC, page.change_id DESC;
