-- name: find_dataset_aliases
-- The dataset (uuid and canonical identity) each of the given identities already resolves to.
SELECT a.namespace, a.name, a.dataset_uuid, d.namespace AS dataset_namespace, d.name AS dataset_name
FROM unnest($1::text[], $2::text[]) AS t(namespace, name)
JOIN dataset_aliases a ON a.namespace = t.namespace AND a.name = t.name
JOIN datasets d ON d.dataset_uuid = a.dataset_uuid;

-- name: fetch_dataset_identities
-- Canonical namespace, name and node id of datasets by uuid.
SELECT dataset_uuid, namespace, name, node_id FROM datasets WHERE dataset_uuid = ANY($1::uuid[]);

-- name: upsert_datasets
-- Creates or touches datasets ($1: a JSON array) by canonical identity, each as of its event's time,
-- and registers their namespaces and the data sources reported with them ($2, $3, $4: name, uri and
-- the order they were reported in; the latest non-null uri of a source is kept).
-- Facets merge per key, the later eventTime winning (`_deleted` facets: delete_node_facets, jobs.sql).
-- A new row starts with the hash of the schema its event reports (fields_hash; the fields themselves
-- go to dataset_fields with replace_dataset_fields, which then leaves the row as it is). A row is
-- rewritten only when its source, description or facets change or an earlier event arrives
-- late (updated_at and facets_at are the time of the last change): a dataset
-- seen again as it was costs no new row version and no index entry.
-- A report may leave out facets its process knows the row holds, value for value, as of a count of
-- the row's facet writes (held_uuid, held_writes: see WrittenFacets). Merging the rest is then the
-- same as merging the whole report; if the row's facets were written since, the report is not
-- merged but handed back as stale, to be sent again whole. (Facets are written by ingest alone, whose
-- transactions take turns: the count cannot move between this statement's check and its merge.)
-- Returns one row per input with its uuid, node id and what the event's schema and version writes
-- are decided by: when its fields were last set, the hash of its current fields (the fields
-- themselves only where no hash is stored) and its current version; the time and count of writes of
-- its facets (rows not rewritten come from the statement's snapshot); and whether it is stale.
WITH input AS (
    SELECT * FROM jsonb_to_recordset($1::jsonb)
        AS t(namespace text, name text, source_name text, description text, facets jsonb, at timestamptz,
             fields_hash bigint, held_uuid uuid, held_writes bigint)
),
stale AS (
    SELECT i.namespace, i.name FROM input i
    WHERE i.held_uuid IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM datasets d
                      WHERE d.namespace = i.namespace AND d.name = i.name AND d.dataset_uuid = i.held_uuid
                        AND d.facets_writes = i.held_writes)
),
namespaces_seen AS (
    INSERT INTO namespaces (name)
    SELECT DISTINCT namespace FROM input
    ON CONFLICT (name) DO NOTHING
),
sources_seen AS (
    INSERT INTO sources (name, uri)
    SELECT DISTINCT ON (n) n, u FROM unnest($2::text[], $3::text[], $4::int[]) AS t(n, u, ord)
    ORDER BY n, u IS NULL, ord DESC
    ON CONFLICT (name) DO UPDATE SET uri = coalesce(excluded.uri, sources.uri), updated_at = now()
    WHERE excluded.uri IS DISTINCT FROM sources.uri AND excluded.uri IS NOT NULL
),
written AS (
    INSERT INTO datasets AS d (namespace, name, source_name, description, facets, facets_at, created_at,
                               updated_at, fields_hash, fields_at)
    SELECT namespace, name, source_name, description, facets, at, at, at, fields_hash,
           CASE WHEN fields_hash IS NOT NULL THEN at END
    FROM input i
    WHERE NOT EXISTS (SELECT 1 FROM stale s WHERE s.namespace = i.namespace AND s.name = i.name)
    ON CONFLICT (namespace, name) DO UPDATE SET
        source_name = merge_reported(d.source_name, d.facets_at, excluded.source_name, excluded.facets_at),
        (description, facets, facets_at, updated_at, created_at) = (SELECT * FROM merged_node_report(d, excluded)),
        facets_writes = d.facets_writes + 1
    WHERE node_report_changes(d, excluded, d.source_name, excluded.source_name)
    RETURNING d.dataset_uuid, d.node_id, d.namespace, d.name, (xmax = 0) AS created, d.fields_at,
              d.current_version_at, d.current_version_uuid, d.fields_hash, d.facets_at, d.facets_writes
),
stored AS (
    SELECT * FROM written
    UNION ALL
    SELECT d.dataset_uuid, d.node_id, d.namespace, d.name, false, d.fields_at, d.current_version_at,
           d.current_version_uuid, d.fields_hash, d.facets_at, d.facets_writes
    FROM (SELECT DISTINCT namespace, name FROM input) i
         CROSS JOIN LATERAL (SELECT * FROM datasets d
                             WHERE d.namespace = i.namespace AND d.name = i.name OFFSET 0) d
    WHERE NOT EXISTS (SELECT 1 FROM written w WHERE w.namespace = i.namespace AND w.name = i.name)
)
SELECT s.*,
       CASE WHEN s.fields_hash IS NULL THEN
           coalesce((SELECT jsonb_agg(jsonb_build_object('name', f.name, 'type', f.type, 'description', f.description)
                                      ORDER BY f.position)
                     FROM dataset_fields f WHERE f.dataset_uuid = s.dataset_uuid), '[]'::jsonb)
       END AS fields,
       EXISTS (SELECT 1 FROM stale x WHERE x.namespace = s.namespace AND x.name = s.name) AS stale
FROM stored s;

-- name: fetch_datasets_by_identity
-- Uuid and node id of the datasets among (namespace, name) identities ($1, $2), one index probe each
-- (for upserts: rows another transaction created while the upsert ran, which its snapshot cannot see).
SELECT d.dataset_uuid, d.node_id, d.namespace, d.name, false AS created
FROM unnest($1::text[], $2::text[]) AS t(namespace, name)
JOIN datasets d ON d.namespace = t.namespace AND d.name = t.name;

-- name: insert_dataset_aliases
-- Records every identity a dataset was seen under; an identity already taken keeps its dataset.
INSERT INTO dataset_aliases (namespace, name, dataset_uuid, alias_type)
SELECT * FROM unnest($1::text[], $2::text[], $3::uuid[], $4::text[])
ON CONFLICT (namespace, name) DO NOTHING;

-- name: fetch_dataset_states
-- For each dataset: when its fields were last set, its current fields (and their hash), and its
-- current version time.
SELECT d.dataset_uuid, d.fields_at, d.current_version_at, d.current_version_uuid, d.fields_hash,
       coalesce((SELECT jsonb_agg(jsonb_build_object('name', f.name, 'type', f.type, 'description', f.description)
                                  ORDER BY f.position)
                 FROM dataset_fields f WHERE f.dataset_uuid = d.dataset_uuid), '[]'::jsonb) AS fields
FROM datasets d
WHERE d.dataset_uuid = ANY($1::uuid[]);

-- name: replace_dataset_fields
-- Sets the current schema of datasets as of an event's time ($3), with its hash ($4): removes fields
-- not listed, upserts the listed ones (a field that did not change is not rewritten). A dataset row
-- that already records this hash and time (one its upsert created) is not rewritten.
WITH input AS (
    SELECT dataset_uuid, e.value AS field, e.ordinality::int AS position
    FROM unnest($1::uuid[], $2::jsonb[]) AS t(dataset_uuid, fields),
         jsonb_array_elements(t.fields) WITH ORDINALITY AS e
),
removed AS (
    DELETE FROM dataset_fields f
    WHERE f.dataset_uuid = ANY($1::uuid[])
      AND NOT EXISTS (SELECT 1 FROM input i WHERE i.dataset_uuid = f.dataset_uuid AND i.field->>'name' = f.name)
),
touched AS (
    UPDATE datasets d SET fields_at = t.at, fields_hash = t.hash
    FROM unnest($1::uuid[], $3::timestamptz[], $4::bigint[]) AS t(dataset_uuid, at, hash)
    WHERE d.dataset_uuid = t.dataset_uuid AND (d.fields_at, d.fields_hash) IS DISTINCT FROM (t.at, t.hash)
)
INSERT INTO dataset_fields (dataset_uuid, name, type, description, position)
SELECT DISTINCT ON (dataset_uuid, field->>'name') dataset_uuid, field->>'name', field->>'type',
       field->>'description', position
FROM input
ORDER BY dataset_uuid, field->>'name', position
ON CONFLICT (dataset_uuid, name) DO UPDATE SET
    type = excluded.type, description = excluded.description, position = excluded.position
WHERE (dataset_fields.type, dataset_fields.description, dataset_fields.position)
      IS DISTINCT FROM (excluded.type, excluded.description, excluded.position);

-- name: upsert_dataset_versions
-- One version per distinct (schema, storage version) of a dataset; a write without a schema facet
-- reuses the current schema. Each write comes with its run ($4) and eventTime ($5); a version is
-- rewritten only by an earlier write arriving late. The version a dataset was written at becomes its
-- current one if this is its latest write by eventTime. Returns the version each dataset was written
-- at (versions not rewritten come from the statement's snapshot).
WITH input AS (
    SELECT * FROM unnest($1::uuid[], $2::jsonb[], $3::text[], $4::uuid[], $5::timestamptz[])
        AS t(dataset_uuid, schema_fields, storage_version, run_uuid, at)
),
resolved AS (
    SELECT r.*, md5(coalesce(r.schema_fields::text, '') || '|' || coalesce(r.storage_version, '')) AS version
    FROM (
        SELECT i.dataset_uuid, i.storage_version, i.run_uuid, i.at,
               coalesce(i.schema_fields,
                        (SELECT v.schema_fields FROM datasets d
                         JOIN dataset_versions v ON v.dataset_version_uuid = d.current_version_uuid
                         WHERE d.dataset_uuid = i.dataset_uuid)) AS schema_fields
        FROM input i
    ) r
),
written AS (
    INSERT INTO dataset_versions AS v (dataset_uuid, version, schema_fields, storage_version, created_by_run_uuid,
                                       created_at)
    SELECT dataset_uuid, version, schema_fields, storage_version, run_uuid, at
    FROM resolved
    ON CONFLICT (dataset_uuid, version) DO UPDATE SET
        created_by_run_uuid = excluded.created_by_run_uuid, created_at = excluded.created_at
    WHERE excluded.created_at < v.created_at
    RETURNING v.dataset_uuid, v.dataset_version_uuid, (xmax = 0) AS created
),
versions AS (
    SELECT * FROM written
    UNION ALL
    SELECT v.dataset_uuid, v.dataset_version_uuid, false
    FROM resolved r JOIN dataset_versions v ON v.dataset_uuid = r.dataset_uuid AND v.version = r.version
    WHERE NOT EXISTS (SELECT 1 FROM written w WHERE w.dataset_uuid = r.dataset_uuid)
),
-- As set_current_dataset_versions, for the versions found here.
made_current AS (
    UPDATE datasets d SET current_version_uuid = v.dataset_version_uuid, current_version_at = i.at
    FROM versions v JOIN input i USING (dataset_uuid)
    WHERE d.dataset_uuid = v.dataset_uuid AND (d.current_version_at IS NULL OR d.current_version_at <= i.at)
      AND d.current_version_uuid IS DISTINCT FROM v.dataset_version_uuid
)
SELECT * FROM versions;

-- name: fetch_dataset_versions
-- The versions writes were at: (dataset, schema or current schema, storage version), as
-- upsert_dataset_versions computes them (for versions another transaction created while an upsert
-- was running, which the upsert's snapshot cannot see).
WITH input AS (
    SELECT * FROM unnest($1::uuid[], $2::jsonb[], $3::text[]) AS t(dataset_uuid, schema_fields, storage_version)
)
SELECT v.dataset_uuid, v.dataset_version_uuid, false AS created
FROM input i
JOIN dataset_versions v
  ON v.dataset_uuid = i.dataset_uuid
 AND v.version = md5(coalesce(coalesce(i.schema_fields,
                                       (SELECT cv.schema_fields FROM datasets d
                                        JOIN dataset_versions cv ON cv.dataset_version_uuid = d.current_version_uuid
                                        WHERE d.dataset_uuid = i.dataset_uuid))::text, '')
                     || '|' || coalesce(i.storage_version, ''));

-- name: set_current_dataset_versions
-- Points datasets at the version of their latest write by eventTime ($3: the time of each write), for
-- versions upsert_dataset_versions could not see.
-- current_version_at is when the current version became current: a write at the current version
-- changes nothing.
UPDATE datasets d SET current_version_uuid = t.version_uuid, current_version_at = t.at
FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[]) AS t(dataset_uuid, version_uuid, at)
WHERE d.dataset_uuid = t.dataset_uuid AND (d.current_version_at IS NULL OR d.current_version_at <= t.at)
  AND d.current_version_uuid IS DISTINCT FROM t.version_uuid;
