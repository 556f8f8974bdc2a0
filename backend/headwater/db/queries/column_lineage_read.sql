-- name: resolve_dataset_fields
-- Dataset fields matching candidate (namespace, dataset, field) splits of datasetField node ids
-- ($1: the asked id of each), the dataset found directly or by alias. `known` says whether the
-- field is in the dataset's schema or in its column lineage (then it is a node).
SELECT t.ask, d.dataset_uuid, d.namespace, d.name, t.field, t.namespace AS asked_namespace,
       EXISTS (SELECT 1 FROM dataset_fields f WHERE f.dataset_uuid = d.dataset_uuid AND f.name = t.field)
       OR EXISTS (SELECT 1 FROM column_lineage c WHERE c.output_dataset_uuid = d.dataset_uuid
                  AND c.output_field = t.field AND NOT c.superseded)
       OR EXISTS (SELECT 1 FROM column_lineage c WHERE c.input_dataset_uuid = d.dataset_uuid
                  AND c.input_field = t.field AND NOT c.superseded)
       AS known
FROM unnest($1::int[], $2::text[], $3::text[], $4::text[]) AS t(ask, namespace, name, field)
JOIN dataset_aliases a ON a.namespace = t.namespace AND a.name = t.name
JOIN datasets d ON d.dataset_uuid = a.dataset_uuid;

-- name: fetch_dataset_columns
-- Every field of the given datasets: those in their schema and those in column lineage (open, or
-- valid at $2; superseded edges are not lineage). Returns (dataset_uuid, field).
SELECT f.dataset_uuid, f.name AS field FROM dataset_fields f WHERE f.dataset_uuid = ANY($1::uuid[])
UNION
SELECT c.output_dataset_uuid, c.output_field FROM column_lineage c
WHERE c.output_dataset_uuid = ANY($1) AND NOT c.superseded
  AND (CASE WHEN $2::timestamptz IS NULL THEN c.valid_to IS NULL
            ELSE c.valid_from <= $2 AND (c.valid_to IS NULL OR c.valid_to > $2) END)
UNION
SELECT c.input_dataset_uuid, c.input_field FROM column_lineage c
WHERE c.input_dataset_uuid = ANY($1) AND NOT c.superseded
  AND (CASE WHEN $2 IS NULL THEN c.valid_to IS NULL
            ELSE c.valid_from <= $2 AND (c.valid_to IS NULL OR c.valid_to > $2) END);

-- name: walk_column_lineage
-- Breadth-first walks over column lineage from the root fields ($1 datasets, $2 fields), one
-- level (one job) per recursion step, carrying the frontier and the visited set so no field is
-- expanded twice and cycles end. DOWNSTREAM ($4) goes from input to output fields, UPSTREAM ($5)
-- from output to input fields (column_lineage_neighbours: open edges, or valid at $6); no level
-- passes $3. Fields of datasets soft-deleted (by $6) are not entered; a walk stops at $7 fields,
-- keeping the lowest (dataset, field) of its last level (both walks together may hold up to twice
-- as many). Returns one row: the reached fields with
-- their lowest level (datasets as text: cheaper keys than uuids for the caller), and whether a cap
-- cut the answer.
WITH RECURSIVE
deleted AS MATERIALIZED (
    SELECT dataset_uuid FROM datasets
    WHERE deleted_at IS NOT NULL AND ($6::timestamptz IS NULL OR deleted_at <= $6)
      AND dataset_uuid <> ALL($1::uuid[])
),
walk(downstream, level, frontier_ds, frontier_fields, visited_ds, visited_fields, reached, truncated) AS (
    SELECT d.downstream, 0, $1, $2::text[], $1, $2, cardinality($1), false
    FROM (VALUES (true), (false)) AS d(downstream)
    WHERE CASE WHEN d.downstream THEN $4::boolean ELSE $5::boolean END
    UNION ALL
    SELECT w.downstream, w.level + 1, n.next_ds[1:$7::int - w.reached], n.next_fields[1:$7 - w.reached],
           w.visited_ds || n.next_ds[1:$7 - w.reached], w.visited_fields || n.next_fields[1:$7 - w.reached],
           w.reached + least(cardinality(n.next_ds), $7 - w.reached), cardinality(n.next_ds) > $7 - w.reached
    FROM walk w
    CROSS JOIN LATERAL (
        -- Both arrays from one sorted input, so they stay parallel.
        SELECT array_agg(c.ds) AS next_ds, array_agg(c.field) AS next_fields
        FROM (
            -- EXCEPT: a hashed or sorted set difference whatever the estimates, never a nested loop.
            SELECT x.to_dataset AS ds, x.to_field AS field
            FROM column_lineage_neighbours(w.frontier_ds, w.frontier_fields, w.downstream, $6) AS x
            WHERE NOT EXISTS (SELECT 1 FROM deleted d WHERE d.dataset_uuid = x.to_dataset)
            EXCEPT
            SELECT * FROM unnest(w.visited_ds, w.visited_fields)
            ORDER BY 1, 2
        ) c
    ) n
    WHERE w.level < $3::int AND NOT w.truncated AND n.next_ds IS NOT NULL
),
levels AS (
    SELECT unnest(frontier_ds) AS ds, unnest(frontier_fields) AS field, level FROM walk
)
SELECT array_agg(r.ds::text) AS datasets, array_agg(r.field) AS fields, array_agg(r.level) AS levels,
       coalesce((SELECT bool_or(w.truncated) FROM walk w), false) AS truncated
FROM (SELECT ds, field, min(level) AS level FROM levels GROUP BY ds, field) r;

-- name: fetch_connected_column_fields
-- Which of the given fields ($1 dataset uuids, $2 fields, parallel) have a column edge, in or out
-- (open, or valid at $3; not superseded): of a dataset's many fields, those lineage can show.
SELECT o.ds::text AS dataset_uuid, o.field
FROM unnest($1::text[]::uuid[], $2::text[]) AS o(ds, field)
WHERE EXISTS (SELECT 1 FROM column_lineage c
              WHERE c.output_dataset_uuid = o.ds AND c.output_field = o.field AND NOT c.superseded
                AND CASE WHEN $3::timestamptz IS NULL THEN c.valid_to IS NULL
                         ELSE c.valid_from <= $3 AND (c.valid_to IS NULL OR c.valid_to > $3) END)
   OR EXISTS (SELECT 1 FROM column_lineage c
              WHERE c.input_dataset_uuid = o.ds AND c.input_field = o.field AND NOT c.superseded
                AND CASE WHEN $3::timestamptz IS NULL THEN c.valid_to IS NULL
                         ELSE c.valid_from <= $3 AND (c.valid_to IS NULL OR c.valid_to > $3) END);

-- name: fetch_column_lineage_edges
-- Column edges (open, or valid at $3; not superseded) into the given output fields ($1 dataset uuids,
-- $2 fields, parallel), one row per transformation, with their source (derived) so the caller can
-- keep each (input field, output field) pair's preferred one. The caller also keeps only inputs that
-- are nodes too: a join on both ends would be planned on guessed array sizes.
SELECT c.input_dataset_uuid::text, c.input_field, c.output_dataset_uuid::text, c.output_field,
       c.transformation_type, c.transformation_subtype, c.description, c.masking, c.derived
FROM unnest($1::text[]::uuid[], $2::text[]) AS o(ds, field)
JOIN column_lineage c ON c.output_dataset_uuid = o.ds AND c.output_field = o.field
WHERE NOT c.superseded AND CASE WHEN $3::timestamptz IS NULL THEN c.valid_to IS NULL
           ELSE c.valid_from <= $3 AND (c.valid_to IS NULL OR c.valid_to > $3) END;

-- name: fetch_column_datasets
-- Identity, current version (none when $2, a past time, is given) and current field types of the
-- datasets holding lineage fields.
SELECT d.dataset_uuid::text, d.namespace, d.name, CASE WHEN $2::timestamptz IS NULL THEN d.current_version_uuid END
       AS version_uuid,
       coalesce((SELECT array_agg(f.name ORDER BY f.position) FROM dataset_fields f
                 WHERE f.dataset_uuid = d.dataset_uuid), '{}')
       AS field_names,
       coalesce((SELECT array_agg(f.type ORDER BY f.position) FROM dataset_fields f
                 WHERE f.dataset_uuid = d.dataset_uuid), '{}')
       AS field_types
FROM datasets d WHERE d.dataset_uuid = ANY($1::text[]::uuid[]);
