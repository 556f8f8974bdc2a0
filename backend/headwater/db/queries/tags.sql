-- name: list_tags
-- Every tag, by name.
SELECT t.tag_uuid, t.name, t.description, t.created_at FROM tags t ORDER BY t.name;

-- name: upsert_tag
-- Creates the tag $1 if it is new; a given description ($2) replaces the stored one. Returns it.
INSERT INTO tags AS t (name, description) VALUES ($1, $2)
ON CONFLICT (name) DO UPDATE SET description = coalesce(excluded.description, t.description)
RETURNING t.tag_uuid, t.name, t.description, t.created_at;

-- name: fetch_tag_by_name
-- The tag named $1, if any.
SELECT t.tag_uuid, t.name, t.description, t.created_at FROM tags t WHERE t.name = $1;

-- name: fetch_dataset_field_tags
-- The tags of the fields of datasets, by field then tag name.
SELECT ft.dataset_uuid, ft.field_name, t.tag_uuid, t.name, t.description, t.created_at, ft.tagged_at
FROM dataset_field_tags ft JOIN tags t ON t.tag_uuid = ft.tag_uuid
WHERE ft.dataset_uuid = ANY($1::uuid[])
ORDER BY ft.dataset_uuid, ft.field_name, t.name;

-- name: insert_dataset_field_tag
-- Tags a field of a dataset; returns a row only when the tag was not there yet.
INSERT INTO dataset_field_tags (dataset_uuid, field_name, tag_uuid, tagged_at) VALUES ($1, $2, $3, $4)
ON CONFLICT DO NOTHING
RETURNING dataset_uuid;

-- name: delete_dataset_field_tag
-- Untags a field of a dataset; returns a row only when the tag was there.
DELETE FROM dataset_field_tags WHERE dataset_uuid = $1 AND field_name = $2 AND tag_uuid = $3
RETURNING dataset_uuid;

-- name: fetch_dataset_field_exists
-- Whether the dataset has a current field named $2.
SELECT EXISTS (SELECT 1 FROM dataset_fields WHERE dataset_uuid = $1 AND name = $2);

-- name: fetch_node_tags
-- The tags of datasets or jobs ($1 the kind, $2 their uuids), by tag name.
SELECT l.node_uuid, t.tag_uuid, t.name, t.description, t.created_at, l.tagged_at
FROM catalog_tag_links($1) l JOIN tags t ON t.tag_uuid = l.tag_uuid
WHERE l.node_uuid = ANY($2::uuid[])
ORDER BY l.node_uuid, t.name;

-- name: set_node_tag
-- Tags ($4 true, at $5) or untags the dataset or job $2 ($1 its kind) with the tag $3. Returns a
-- row only when that changed something.
WITH add_dataset AS (
    INSERT INTO dataset_tags (dataset_uuid, tag_uuid, tagged_at)
    SELECT $2, $3, $5 WHERE $1 = 'DATASET' AND $4
    ON CONFLICT DO NOTHING RETURNING dataset_uuid
), add_job AS (
    INSERT INTO job_tags (job_uuid, tag_uuid, tagged_at)
    SELECT $2, $3, $5 WHERE $1 = 'JOB' AND $4
    ON CONFLICT DO NOTHING RETURNING job_uuid
), remove_dataset AS (
    DELETE FROM dataset_tags WHERE $1 = 'DATASET' AND NOT $4 AND dataset_uuid = $2 AND tag_uuid = $3
    RETURNING dataset_uuid
), remove_job AS (
    DELETE FROM job_tags WHERE $1 = 'JOB' AND NOT $4 AND job_uuid = $2 AND tag_uuid = $3
    RETURNING job_uuid
)
SELECT dataset_uuid FROM add_dataset UNION ALL SELECT job_uuid FROM add_job
UNION ALL SELECT dataset_uuid FROM remove_dataset UNION ALL SELECT job_uuid FROM remove_job;
