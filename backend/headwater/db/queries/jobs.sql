-- name: upsert_jobs
-- Creates or touches jobs, each as of its event's time ($8), and registers their namespaces; facets
-- merge per key with the later eventTime winning (`_deleted` facets: delete_node_facets). As for
-- datasets, a row is rewritten only when something in it changes (updated_at and facets_at are the
-- time of the last change). Returns each job's uuid, node id and whether it was created.
WITH given AS (
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::jsonb[],
                         $8::timestamptz[], $9::uuid[])
        AS t(namespace, name, parent_namespace, parent_name, job_type, description, facets, at, new_uuid)
),
-- A job names its parent ($3, $4), upserted by the same statement: the parent's uuid is the stored
-- one, else the one its new row is given ($9).
input AS (
    SELECT g.*,
           CASE WHEN g.parent_namespace IS NOT NULL THEN
               coalesce((SELECT p.job_uuid FROM jobs p
                         WHERE p.namespace = g.parent_namespace AND p.name = g.parent_name),
                        (SELECT p.new_uuid FROM given p
                         WHERE p.namespace = g.parent_namespace AND p.name = g.parent_name))
           END AS parent_job_uuid
    FROM given g
),
namespaces_seen AS (
    INSERT INTO namespaces (name)
    SELECT DISTINCT namespace FROM input
    ON CONFLICT (name) DO NOTHING
),
written AS (
    INSERT INTO jobs AS j (job_uuid, namespace, name, parent_job_uuid, job_type, description, facets, facets_at,
                           created_at, updated_at)
    SELECT new_uuid, namespace, name, parent_job_uuid, job_type, description, facets, at, at, at
    FROM input
    ON CONFLICT (namespace, name) DO UPDATE SET
        parent_job_uuid = coalesce(excluded.parent_job_uuid, j.parent_job_uuid),
        job_type = merge_reported(j.job_type, j.facets_at, excluded.job_type, excluded.facets_at),
        (description, facets, facets_at, updated_at, created_at) = (SELECT * FROM merged_node_report(j, excluded))
    WHERE node_report_changes(j, excluded, j.job_type, excluded.job_type)
       OR coalesce(excluded.parent_job_uuid, j.parent_job_uuid) IS DISTINCT FROM j.parent_job_uuid
    RETURNING j.namespace, j.name, j.job_uuid, j.node_id, (xmax = 0) AS created
)
SELECT * FROM written
UNION ALL
SELECT j.namespace, j.name, j.job_uuid, j.node_id, false
FROM (SELECT DISTINCT namespace, name FROM input) i
     CROSS JOIN LATERAL (SELECT * FROM jobs j WHERE j.namespace = i.namespace AND j.name = i.name OFFSET 0) j
WHERE NOT EXISTS (SELECT 1 FROM written w WHERE w.namespace = i.namespace AND w.name = i.name);

-- name: fetch_jobs_by_identity
-- Uuid, node id and creation time (the earliest eventTime) of the stored jobs among the given
-- identities ($1, $2: namespace, name), an index probe per job: the parent jobs a batch names, and
-- rows another transaction created while an upsert was running, which the upsert's snapshot cannot see.
SELECT t.namespace, t.name, j.job_uuid, j.node_id, j.created_at
FROM unnest($1::text[], $2::text[]) AS t(namespace, name)
     CROSS JOIN LATERAL (SELECT j.job_uuid, j.node_id, j.created_at FROM jobs j
                         WHERE j.namespace = t.namespace AND j.name = t.name OFFSET 0) j;

-- name: upsert_job_versions
-- The job version for (inputs, outputs, code) of each job ($3, $4: JSON arrays of dataset uuids);
-- created on first sight, rewritten only by an earlier run arriving late. Returns their uuids
-- (versions not rewritten come from the statement's snapshot).
WITH input AS (
    SELECT * FROM unnest($1::uuid[], $2::text[], $3::jsonb[], $4::jsonb[], $5::text[], $6::uuid[],
                         $7::timestamptz[])
        AS t(job_uuid, version, inputs, outputs, code_hash, run_uuid, at)
),
written AS (
    INSERT INTO job_versions AS v (job_uuid, version, input_uuids, output_uuids, code_hash, created_by_run_uuid,
                                   created_at)
    SELECT job_uuid, version, ARRAY(SELECT jsonb_array_elements_text(inputs)::uuid),
           ARRAY(SELECT jsonb_array_elements_text(outputs)::uuid), code_hash, run_uuid, at
    FROM input
    ON CONFLICT (job_uuid, version) DO UPDATE SET
        created_by_run_uuid = excluded.created_by_run_uuid, created_at = excluded.created_at
    WHERE excluded.created_at < v.created_at
    RETURNING v.job_uuid, v.job_version_uuid, (xmax = 0) AS created
)
SELECT * FROM written
UNION ALL
SELECT v.job_uuid, v.job_version_uuid, false
FROM input i JOIN job_versions v ON v.job_uuid = i.job_uuid AND v.version = i.version
WHERE NOT EXISTS (SELECT 1 FROM written w WHERE w.job_uuid = i.job_uuid);

-- name: fetch_job_versions
-- Job versions by (job, version hash) (for versions another transaction created while an upsert
-- was running, which the upsert's snapshot cannot see).
SELECT v.job_uuid, v.job_version_uuid, false AS created
FROM unnest($1::uuid[], $2::text[]) AS t(job_uuid, version)
JOIN job_versions v ON v.job_uuid = t.job_uuid AND v.version = t.version;

-- name: set_job_versions
-- Makes each job version ($2), computed from a completed run's datasets, its job's current one if the
-- run ($4) is the job's latest completed one by eventTime ($3), and closes at that time what the new
-- version no longer has:
-- - the job's open, non-manual edges that the run did not report ($5 inputs, $6 outputs: JSON arrays
--   of dataset uuids) and that no later event confirmed;
-- - the job's column edges into the outputs the run reported column lineage for ($7: per job, a JSON
--   array of {outputs, derived}: the derived edges, or the reported ones) that the run did not
--   report and that were not confirmed since its eventTime (the whole sets they belonged to go).
-- Returns a row per job that moved (with its previous current version, inputs and outputs, to tell
-- which edges the change added) and a row per edge closed; no row for a job that did not move.
-- (The run's row got its version when its event was written.) Each job's edges and each output's
-- column edges are looked up through their index (the fenced LATERALs), whatever the statistics say.
WITH input AS (
    SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::uuid[], $5::jsonb[], $6::jsonb[],
                         $7::jsonb[])
        AS t(job_uuid, version_uuid, at, run_uuid, inputs, outputs, column_outputs)
),
previous AS (
    SELECT j.job_uuid, j.current_version_uuid, j.current_version_at, j.latest_run_uuid, v.version,
           v.input_uuids, v.output_uuids
    FROM jobs j LEFT JOIN job_versions v ON v.job_version_uuid = j.current_version_uuid
    WHERE j.job_uuid = ANY(ARRAY(SELECT job_uuid FROM input)) FOR UPDATE OF j
),
moved AS (
    SELECT i.job_uuid, i.version_uuid, i.at, coalesce(i.run_uuid, p.latest_run_uuid) AS latest_run_uuid,
           p.current_version_uuid AS previous_version_uuid, p.version AS previous_version,
           p.input_uuids AS previous_input_uuids, p.output_uuids AS previous_output_uuids,
           (p.current_version_uuid, p.current_version_at, p.latest_run_uuid)
               IS DISTINCT FROM (i.version_uuid, i.at, coalesce(i.run_uuid, p.latest_run_uuid)) AS changes
    FROM input i JOIN previous p USING (job_uuid)
    WHERE p.current_version_at IS NULL OR p.current_version_at <= i.at
),
-- A job that moves to what it already holds (the same run's version again, as when the run's START
-- arrives after its COMPLETE) still closes what the version lacks, but its row is not rewritten.
moved_rows AS (
    UPDATE jobs j SET current_version_uuid = m.version_uuid, current_version_at = m.at,
                      latest_run_uuid = m.latest_run_uuid
    FROM moved m
    WHERE j.job_uuid = m.job_uuid AND m.changes
),
stale_edges AS (
    SELECT x.edge_id, t.at
    FROM input t
         JOIN moved USING (job_uuid)
         CROSS JOIN LATERAL (
             SELECT e.edge_id FROM lineage_edges e
             WHERE e.job_uuid = t.job_uuid AND e.valid_to IS NULL AND NOT e.manual AND e.last_seen_at < t.at
               AND NOT ((e.edge_type = 'READ' AND t.inputs ? e.dataset_uuid::text)
                        OR (e.edge_type = 'WRITE' AND t.outputs ? e.dataset_uuid::text))
             OFFSET 0
         ) x
),
closed_edges AS (
    UPDATE lineage_edges e SET valid_to = (SELECT s.at FROM stale_edges s WHERE s.edge_id = e.edge_id)
    WHERE e.edge_id = ANY (ARRAY(SELECT edge_id FROM stale_edges))
    RETURNING e.src_node_id, e.dst_node_id, e.job_uuid, e.edge_type, e.dataset_uuid
),
stale_column_edges AS (
    SELECT x.column_edge_id, t.at, m.set_row
    FROM input t
         JOIN moved USING (job_uuid)
         CROSS JOIN LATERAL jsonb_array_elements(t.column_outputs) AS c(item)
         CROSS JOIN LATERAL jsonb_array_elements_text(c.item->'outputs') AS o(dataset_uuid)
         -- The output's whole set, whose confirmation its members take when later (see the view
         -- column_lineage_confirmed).
         LEFT JOIN LATERAL (
             SELECT m.ctid AS set_row, m.set_hash, m.last_seen_at, m.last_run_uuid FROM column_edge_sets m
             WHERE m.job_uuid = t.job_uuid AND m.output_dataset_uuid = o.dataset_uuid::uuid
               AND m.derived = (c.item->>'derived')::boolean AND m.whole
             OFFSET 0
         ) m ON true
         CROSS JOIN LATERAL (
             SELECT l.column_edge_id
             FROM column_lineage l
             WHERE l.output_dataset_uuid = o.dataset_uuid::uuid AND l.job_uuid = t.job_uuid AND l.valid_to IS NULL
               AND l.derived = (c.item->>'derived')::boolean
               -- Its confirmation: not by this run, and before it.
               AND CASE WHEN l.set_hash = m.set_hash AND m.last_seen_at > l.last_seen_at
                        THEN m.last_seen_at < t.at AND m.last_run_uuid IS DISTINCT FROM t.run_uuid
                        ELSE l.last_seen_at < t.at AND l.last_run_uuid IS DISTINCT FROM t.run_uuid END
             OFFSET 0
         ) x
),
closed_column_edges AS (
    UPDATE column_lineage l
    SET valid_to = (SELECT s.at FROM stale_column_edges s WHERE s.column_edge_id = l.column_edge_id)
    WHERE l.column_edge_id = ANY (ARRAY(SELECT column_edge_id FROM stale_column_edges))
),
-- A whole set that loses an edge is no longer what its events report: its row (found above) goes,
-- and the edges left open keep the confirmation it gave them. The next event reporting the set
-- writes it edge by edge. (A set that is not whole is never confirmed as a whole, nor lends its
-- confirmation: its row may stay.)
broken_sets AS (
    DELETE FROM column_edge_sets m
    WHERE m.ctid = ANY (ARRAY(SELECT DISTINCT set_row FROM stale_column_edges WHERE set_row IS NOT NULL))
    RETURNING m.job_uuid, m.output_dataset_uuid, m.derived, m.set_hash, m.last_seen_at, m.last_run_uuid
),
left_members AS (
    SELECT x.column_edge_id, m.last_seen_at, m.last_run_uuid
    FROM broken_sets m
    CROSS JOIN LATERAL (
        SELECT l.column_edge_id FROM column_lineage l
        WHERE l.output_dataset_uuid = m.output_dataset_uuid AND l.job_uuid = m.job_uuid AND l.derived = m.derived
          AND l.valid_to IS NULL AND l.set_hash = m.set_hash AND l.last_seen_at < m.last_seen_at
        OFFSET 0
    ) x
    WHERE x.column_edge_id <> ALL (ARRAY(SELECT column_edge_id FROM stale_column_edges))
),
left_column_edges AS (
    UPDATE column_lineage l
    SET last_seen_at = (SELECT x.last_seen_at FROM left_members x WHERE x.column_edge_id = l.column_edge_id),
        last_run_uuid = (SELECT x.last_run_uuid FROM left_members x WHERE x.column_edge_id = l.column_edge_id),
        set_hash = NULL
    WHERE l.column_edge_id = ANY (ARRAY(SELECT column_edge_id FROM left_members))
)
SELECT job_uuid, true AS moved, previous_version_uuid, previous_version, previous_input_uuids,
       previous_output_uuids, NULL::bigint AS src_node_id, NULL::bigint AS dst_node_id, NULL::text AS edge_type,
       NULL::uuid AS dataset_uuid
FROM moved
UNION ALL
SELECT job_uuid, false, NULL, NULL, NULL, NULL, src_node_id, dst_node_id, edge_type, dataset_uuid
FROM closed_edges;

-- name: delete_node_facets
-- Removes from datasets and jobs the facets events marked `_deleted` ($1: DATASET or JOB, $2 and $3:
-- its namespace and name, $4: a JSON array of facet names, $5: the event's time), unless their stored
-- facets are later than the event (node_deletes_facets); the upserts merged the rest of the events.
WITH input AS (
    SELECT t.kind, t.namespace, t.name, ARRAY(SELECT jsonb_array_elements_text(t.deleted)) AS deleted, t.at
    FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[], $5::timestamptz[])
        AS t(kind, namespace, name, deleted, at)
),
datasets_deleted AS (
    UPDATE datasets d SET (facets, facets_at, updated_at) = (SELECT * FROM node_facets_deleted(d, i.deleted, i.at)),
                          facets_writes = d.facets_writes + 1
    FROM input i
    WHERE i.kind = 'DATASET' AND (d.namespace, d.name) = (i.namespace, i.name) AND node_deletes_facets(d, i.deleted, i.at)
)
UPDATE jobs j SET (facets, facets_at, updated_at) = (SELECT * FROM node_facets_deleted(j, i.deleted, i.at))
FROM input i
WHERE i.kind = 'JOB' AND (j.namespace, j.name) = (i.namespace, i.name) AND node_deletes_facets(j, i.deleted, i.at);
