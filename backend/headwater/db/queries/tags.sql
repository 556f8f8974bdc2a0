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

-- name: fetch_dataset_tags
-- The tags of datasets, by tag name.
SELECT dt.dataset_uuid, t.tag_uuid, t.name, t.description, t.created_at, dt.tagged_at
FROM dataset_tags dt JOIN tags t ON t.tag_uuid = dt.tag_uuid
WHERE dt.dataset_uuid = ANY($1::uuid[])
ORDER BY dt.dataset_uuid, t.name;

-- name: fetch_dataset_field_tags
-- The tags of the fields of datasets, by field then tag name.
SELECT ft.dataset_uuid, ft.field_name, t.tag_uuid, t.name, t.description, t.created_at, ft.tagged_at
FROM dataset_field_tags ft JOIN tags t ON t.tag_uuid = ft.tag_uuid
WHERE ft.dataset_uuid = ANY($1::uuid[])
ORDER BY ft.dataset_uuid, ft.field_name, t.name;

-- name: fetch_job_tags
-- The tags of jobs, by tag name.
SELECT jt.job_uuid, t.tag_uuid, t.name, t.description, t.created_at, jt.tagged_at
FROM job_tags jt JOIN tags t ON t.tag_uuid = jt.tag_uuid
WHERE jt.job_uuid = ANY($1::uuid[])
ORDER BY jt.job_uuid, t.name;

-- name: insert_dataset_tag
-- Tags a dataset; returns a row only when the tag was not there yet.
INSERT INTO dataset_tags (dataset_uuid, tag_uuid, tagged_at) VALUES ($1, $2, $3)
ON CONFLICT DO NOTHING
RETURNING dataset_uuid;

-- name: delete_dataset_tag
-- Untags a dataset; returns a row only when the tag was there.
DELETE FROM dataset_tags WHERE dataset_uuid = $1 AND tag_uuid = $2 RETURNING dataset_uuid;

-- name: insert_dataset_field_tag
-- Tags a field of a dataset; returns a row only when the tag was not there yet.
INSERT INTO dataset_field_tags (dataset_uuid, field_name, tag_uuid, tagged_at) VALUES ($1, $2, $3, $4)
ON CONFLICT DO NOTHING
RETURNING dataset_uuid;

-- name: delete_dataset_field_tag
-- Untags a field of a dataset; returns a row only when the tag was there.
DELETE FROM dataset_field_tags WHERE dataset_uuid = $1 AND field_name = $2 AND tag_uuid = $3
RETURNING dataset_uuid;

-- name: insert_job_tag
-- Tags a job; returns a row only when the tag was not there yet.
INSERT INTO job_tags (job_uuid, tag_uuid, tagged_at) VALUES ($1, $2, $3)
ON CONFLICT DO NOTHING
RETURNING job_uuid;

-- name: delete_job_tag
-- Untags a job; returns a row only when the tag was there.
DELETE FROM job_tags WHERE job_uuid = $1 AND tag_uuid = $2 RETURNING job_uuid;

-- name: fetch_dataset_field_exists
-- Whether the dataset has a current field named $2.
SELECT EXISTS (SELECT 1 FROM dataset_fields WHERE dataset_uuid = $1 AND name = $2);
