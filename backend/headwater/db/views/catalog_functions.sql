-- The catalog's one shape of datasets and jobs (re-created after every migrate). The catalog
-- queries read datasets and jobs through these functions with the kind as a parameter, so paging,
-- counting, versions, tags and soft deletes are written once for both. They are plain SQL
-- functions of one SELECT, which the planner inlines: the branch of the other kind is cut by a
-- one-time filter, and the conditions and ORDER BY of the calling query reach the table's indexes.

-- Datasets ('DATASET') or jobs ('JOB'): what both have, then what only one has (NULL or false for
-- the other kind).
DROP FUNCTION IF EXISTS catalog_nodes(text);
CREATE FUNCTION catalog_nodes(kind text)
RETURNS TABLE (node_uuid uuid, node_id bigint, namespace text, name text, description text, facets jsonb,
               created_at timestamptz, updated_at timestamptz, current_version_uuid uuid,
               current_version_at timestamptz, deleted_at timestamptz, heat double precision,
               source_name text, parent_job_uuid uuid, job_type text, latest_run_uuid uuid, manual boolean)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT d.dataset_uuid, d.node_id, d.namespace, d.name, d.description, d.facets, d.created_at,
           d.updated_at, d.current_version_uuid, d.current_version_at, d.deleted_at, d.heat,
           d.source_name, NULL::uuid, NULL::text, NULL::uuid, false
    FROM datasets d WHERE kind = 'DATASET'
    UNION ALL
    SELECT j.job_uuid, j.node_id, j.namespace, j.name, j.description, j.facets, j.created_at,
           j.updated_at, j.current_version_uuid, j.current_version_at, j.deleted_at, j.heat,
           NULL::text, j.parent_job_uuid, j.job_type, j.latest_run_uuid, j.manual
    FROM jobs j WHERE kind = 'JOB'
$$;

-- Every (namespace, name) a dataset or job is found by: a dataset's own identity and its aliases
-- (symlinks, alias rules), a job's name.
DROP FUNCTION IF EXISTS catalog_names(text);
CREATE FUNCTION catalog_names(kind text)
RETURNS TABLE (namespace text, name text, node_uuid uuid)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT a.namespace, a.name, a.dataset_uuid FROM dataset_aliases a WHERE kind = 'DATASET'
    UNION ALL
    SELECT j.namespace, j.name, j.job_uuid FROM jobs j WHERE kind = 'JOB'
$$;

-- The versions of datasets or jobs: what both have, then a dataset version's schema and storage
-- version, a job version's inputs, outputs and code hash.
DROP FUNCTION IF EXISTS catalog_versions(text);
CREATE FUNCTION catalog_versions(kind text)
RETURNS TABLE (version_uuid uuid, node_uuid uuid, version text, created_by_run_uuid uuid,
               created_at timestamptz, schema_fields jsonb, storage_version text, input_uuids uuid[],
               output_uuids uuid[], code_hash text)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT v.dataset_version_uuid, v.dataset_uuid, v.version, v.created_by_run_uuid, v.created_at,
           v.schema_fields, v.storage_version, NULL::uuid[], NULL::uuid[], NULL::text
    FROM dataset_versions v WHERE kind = 'DATASET'
    UNION ALL
    SELECT v.job_version_uuid, v.job_uuid, v.version, v.created_by_run_uuid, v.created_at,
           NULL::jsonb, NULL::text, v.input_uuids, v.output_uuids, v.code_hash
    FROM job_versions v WHERE kind = 'JOB'
$$;

-- The tags on datasets or jobs (field tags are a dataset's own: dataset_field_tags).
DROP FUNCTION IF EXISTS catalog_tag_links(text);
CREATE FUNCTION catalog_tag_links(kind text)
RETURNS TABLE (node_uuid uuid, tag_uuid uuid, tagged_at timestamptz)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT t.dataset_uuid, t.tag_uuid, t.tagged_at FROM dataset_tags t WHERE kind = 'DATASET'
    UNION ALL
    SELECT t.job_uuid, t.tag_uuid, t.tagged_at FROM job_tags t WHERE kind = 'JOB'
$$;
