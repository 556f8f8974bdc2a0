-- name: ensure_governance_progress
-- The progress row exists (a new database, or one emptied).
INSERT INTO governance_progress (singleton) VALUES (true) ON CONFLICT DO NOTHING;

-- name: lock_governance_progress
-- The last applied change id and the policy it was applied under, locked until the transaction
-- ends: a second server applying changes waits here, then starts from where the first stopped.
SELECT last_change_id, policy FROM governance_progress WHERE singleton FOR UPDATE;

-- name: set_governance_lock_timeout
SET LOCAL lock_timeout = '100ms';

-- name: save_governance_progress
UPDATE governance_progress SET last_change_id = $1, policy = $2, updated_at = now() WHERE singleton;

-- name: fetch_governance_progress
SELECT last_change_id, policy, updated_at FROM governance_progress WHERE singleton;

-- name: fetch_governance_job_datasets
-- The datasets the jobs among (namespace, name) candidates ($1, $2) read or write now (open edges),
-- with whether the job writes them.
SELECT DISTINCT e.dataset_uuid, e.edge_type = 'WRITE' AS written
FROM unnest($1::text[], $2::text[]) AS t(namespace, name)
     JOIN jobs j ON j.namespace = t.namespace AND j.name = t.name
     JOIN lineage_edges e ON e.job_uuid = j.job_uuid AND e.valid_to IS NULL;

-- name: fetch_governance_all_datasets
-- Every dataset, for a full recomputation (a new policy).
SELECT dataset_uuid FROM datasets;

-- name: fetch_anything_governed
-- Whether any label is declared or inherited anywhere, or any violation is open: without any,
-- changes to lineage have no governance consequence.
SELECT EXISTS (SELECT 1 FROM governance_declarations)
    OR EXISTS (SELECT 1 FROM governance_inherited)
    OR EXISTS (SELECT 1 FROM governance_violations WHERE cleared_at IS NULL);

-- name: fetch_governance_producer_tags
-- What producers and the tag API say about each dataset ($1): its tags facet, the fields of its
-- schema facet (which may carry tags), and the names of the tags on it and on its fields.
SELECT d.dataset_uuid,
       d.facets -> 'tags' -> 'tags' AS facet_tags,
       d.facets -> 'schema' -> 'fields' AS schema_fields,
       coalesce((SELECT array_agg(t.name) FROM dataset_tags dt JOIN tags t ON t.tag_uuid = dt.tag_uuid
                 WHERE dt.dataset_uuid = d.dataset_uuid), '{}') AS dataset_tags,
       coalesce((SELECT jsonb_agg(jsonb_build_array(ft.field_name, t.name))
                 FROM dataset_field_tags ft JOIN tags t ON t.tag_uuid = ft.tag_uuid
                 WHERE ft.dataset_uuid = d.dataset_uuid), '[]') AS field_tags
FROM datasets d
WHERE d.dataset_uuid = ANY ($1::uuid[]);

-- name: fetch_governance_declarations_of_datasets
-- The declarations of the datasets ($1) from the sources ($2).
SELECT dataset_uuid, field_name, source, label
FROM governance_declarations
WHERE dataset_uuid = ANY ($1::uuid[]) AND source = ANY ($2::text[]);

-- name: delete_governance_declarations
-- Forget the declarations of the datasets' ($1) fields ($2; '' the dataset) from a source ($3).
DELETE FROM governance_declarations g
USING unnest($1::uuid[], $2::text[]) AS t(dataset_uuid, field_name)
WHERE g.dataset_uuid = t.dataset_uuid AND g.field_name = t.field_name AND g.source = $3;

-- name: insert_governance_declarations
INSERT INTO governance_declarations (dataset_uuid, field_name, source, label)
SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[])
ON CONFLICT DO NOTHING;

-- name: fetch_governance_dataset_columns
-- Every field of the datasets ($1) that lineage or governance knows: in the current schema, an
-- output of a column edge (closed ones too: their removal changes what the field inherits), an
-- input of an open one, declared, or inheriting.
SELECT dataset_uuid, name AS field_name FROM dataset_fields WHERE dataset_uuid = ANY ($1::uuid[])
UNION
SELECT output_dataset_uuid, output_field FROM column_lineage WHERE output_dataset_uuid = ANY ($1::uuid[])
UNION
SELECT input_dataset_uuid, input_field FROM column_lineage
WHERE input_dataset_uuid = ANY ($1::uuid[]) AND valid_to IS NULL AND NOT superseded
UNION
SELECT dataset_uuid, field_name FROM governance_declarations
WHERE dataset_uuid = ANY ($1::uuid[]) AND field_name <> ''
UNION
SELECT dataset_uuid, field_name FROM governance_inherited WHERE dataset_uuid = ANY ($1::uuid[]);

-- name: fetch_governance_edges
-- The lineage into each field ($1, $2): open, preferred column edges, with their job and what the
-- policy needs to tell whether the edge masks.
SELECT t.dataset_uuid AS out_ds, t.field_name AS out_field,
       c.input_dataset_uuid AS in_ds, c.input_field AS in_field, c.job_uuid,
       c.transformation_type, c.transformation_subtype, c.description, c.masking
FROM unnest($1::uuid[], $2::text[]) AS t(dataset_uuid, field_name)
     JOIN column_lineage c ON c.output_dataset_uuid = t.dataset_uuid AND c.output_field = t.field_name
                          AND c.valid_to IS NULL AND NOT c.superseded;

-- name: fetch_governance_node_ids
-- The node ids of datasets ($1) and jobs ($2), by uuid.
SELECT dataset_uuid AS node_uuid, 'dataset:' || namespace || ':' || name AS node_id
FROM datasets WHERE dataset_uuid = ANY ($1::uuid[])
UNION ALL
SELECT job_uuid, 'job:' || namespace || ':' || name FROM jobs WHERE job_uuid = ANY ($2::uuid[]);

-- name: fetch_governance_field_labels
-- The labels of each field ($1, $2): declared on it or on its dataset (path null, with the
-- source), and inherited (with the path, JSON text, source null).
SELECT t.dataset_uuid, t.field_name, g.label, NULL::text AS path, g.source
FROM unnest($1::uuid[], $2::text[]) AS t(dataset_uuid, field_name)
     JOIN governance_declarations g ON g.dataset_uuid = t.dataset_uuid AND g.field_name IN (t.field_name, '')
UNION ALL
SELECT t.dataset_uuid, t.field_name, i.label, i.path, NULL
FROM unnest($1::uuid[], $2::text[]) AS t(dataset_uuid, field_name)
     JOIN governance_inherited i ON i.dataset_uuid = t.dataset_uuid AND i.field_name = t.field_name;

-- name: delete_governance_inherited
-- Forget what the fields ($1, $2) inherit (before writing what they inherit now).
DELETE FROM governance_inherited g
USING unnest($1::uuid[], $2::text[]) AS t(dataset_uuid, field_name)
WHERE g.dataset_uuid = t.dataset_uuid AND g.field_name = t.field_name;

-- name: fetch_governance_edges_of_successors
-- The fields computed from the fields ($1, $2) through open, preferred column edges, each with
-- every open, preferred edge into it (as fetch_governance_edges): the next wave and its inputs.
WITH successor AS (
    SELECT DISTINCT c.output_dataset_uuid AS dataset_uuid, c.output_field AS field_name
    FROM unnest($1::uuid[], $2::text[]) AS t(dataset_uuid, field_name)
         JOIN column_lineage c ON c.input_dataset_uuid = t.dataset_uuid AND c.input_field = t.field_name
                              AND c.valid_to IS NULL AND NOT c.superseded
)
SELECT s.dataset_uuid AS out_ds, s.field_name AS out_field,
       c.input_dataset_uuid AS in_ds, c.input_field AS in_field, c.job_uuid,
       c.transformation_type, c.transformation_subtype, c.description, c.masking
FROM successor s
     JOIN column_lineage c ON c.output_dataset_uuid = s.dataset_uuid AND c.output_field = s.field_name
                          AND c.valid_to IS NULL AND NOT c.superseded;

-- name: fetch_governed_datasets
-- The namespace, name and dataset-level labels (declared on the dataset itself) of datasets ($1).
SELECT d.dataset_uuid, d.namespace, d.name,
       coalesce((SELECT array_agg(DISTINCT g.label) FROM governance_declarations g
                 WHERE g.dataset_uuid = d.dataset_uuid AND g.field_name = ''), '{}') AS labels
FROM datasets d
WHERE d.dataset_uuid = ANY ($1::uuid[]);

-- name: fetch_governance_open_violations
SELECT v.violation_id, v.rule, v.dataset_uuid, v.field_name, v.label, v.path
FROM unnest($1::uuid[], $2::text[]) AS t(dataset_uuid, field_name)
     JOIN governance_violations v ON v.dataset_uuid = t.dataset_uuid AND v.field_name = t.field_name
                                 AND v.cleared_at IS NULL;

-- name: fetch_governance_violations_of_unknown_rules
-- Open violations of rules the policy ($1) no longer has.
SELECT violation_id, rule, dataset_uuid, field_name, label, path
FROM governance_violations
WHERE cleared_at IS NULL AND NOT rule = ANY ($1::text[]);

-- name: open_governance_violations
-- Record new violations; returns their ids in the order given.
INSERT INTO governance_violations (rule, dataset_uuid, field_name, label, path, opened_at, opened_change_id)
SELECT rule, dataset_uuid, field_name, label, path, $7, change_id
FROM unnest($1::text[], $2::uuid[], $3::text[], $4::text[], $5::jsonb[], $6::bigint[])
    WITH ORDINALITY AS t(rule, dataset_uuid, field_name, label, path, change_id, n)
ORDER BY n
RETURNING violation_id;

-- name: clear_governance_violations
UPDATE governance_violations v SET cleared_at = $3, cleared_change_id = t.change_id
FROM unnest($1::bigint[], $2::bigint[]) AS t(violation_id, change_id)
WHERE v.violation_id = t.violation_id;

-- name: update_governance_violation_paths
-- An open violation whose label now arrives by another path (or is another, still offending, label).
UPDATE governance_violations v SET label = t.label, path = t.path
FROM unnest($1::bigint[], $2::text[], $3::jsonb[]) AS t(violation_id, label, path)
WHERE v.violation_id = t.violation_id;

-- name: fetch_governance_dataset_identity
SELECT dataset_uuid, namespace, name FROM datasets WHERE namespace = $1 AND name = $2;

-- name: lock_governance_dataset_identity
-- As fetch_governance_dataset_identity, its row locked: two declarations on one dataset take turns
-- (each deletes what the API declared before, which it would not see of one not yet committed).
SELECT dataset_uuid, namespace, name FROM datasets WHERE namespace = $1 AND name = $2
FOR NO KEY UPDATE;

-- name: fetch_governance_dataset_declarations
-- Every declaration on a dataset ($1) and its fields.
SELECT field_name, source, label, declared_at FROM governance_declarations
WHERE dataset_uuid = $1 ORDER BY field_name, label, source;

-- name: fetch_governance_dataset_inherited
-- Every label a dataset's ($1) fields inherit, with its path.
SELECT field_name, label, path FROM governance_inherited WHERE dataset_uuid = $1 ORDER BY field_name, label;

-- name: list_governance_violations
-- Violations, newest first, after a cursor ($1: a violation id, 0 for the first page), open ($2 'open'),
-- cleared ('cleared') or both ('all'), optionally in one namespace ($3) or dataset ($4); $5 rows.
SELECT v.violation_id, v.rule, d.namespace, d.name, v.field_name, v.label, v.path,
       v.opened_at, v.opened_change_id, v.cleared_at, v.cleared_change_id
FROM governance_violations v
     JOIN datasets d ON d.dataset_uuid = v.dataset_uuid
WHERE ($1::bigint = 0 OR v.violation_id < $1)
  AND ($2 = 'all' OR ($2 = 'open') = (v.cleared_at IS NULL))
  AND ($3::text IS NULL OR d.namespace = $3)
  AND ($4::uuid IS NULL OR v.dataset_uuid = $4)
ORDER BY v.violation_id DESC
LIMIT $5;
