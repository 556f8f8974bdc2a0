-- name: resolve_dataset_ids
-- Datasets matching any candidate (namespace, name) split of a node id, directly or by alias.
SELECT DISTINCT d.dataset_uuid, d.node_id, d.namespace, d.name, t.namespace AS asked_namespace
FROM unnest($1::text[], $2::text[]) AS t(namespace, name)
JOIN dataset_aliases a ON a.namespace = t.namespace AND a.name = t.name
JOIN datasets d ON d.dataset_uuid = a.dataset_uuid;

-- name: resolve_job_ids
-- Jobs matching any candidate (namespace, name) split of a node id.
SELECT j.job_uuid, j.node_id, j.namespace, j.name
FROM unnest($1::text[], $2::text[]) AS t(namespace, name)
JOIN jobs j ON j.namespace = t.namespace AND j.name = t.name;

-- name: walk_lineage
-- Nodes reachable from the roots ($1) within $2 hops each (hop limits per root), following open
-- edges (or those valid at $5 when given) downstream ($3) and/or upstream ($4). UNION dedupes
-- (node, hops, limit) rows so cycles end. Returns each node with its fewest hops.
WITH RECURSIVE down(node_id, hops, lim) AS (
    SELECT r, 0, l FROM unnest($1::bigint[], $2::int[]) AS t(r, l) WHERE $3
    UNION
    SELECT e.dst_node_id, w.hops + 1, w.lim
    FROM down w JOIN lineage_edges e ON e.src_node_id = w.node_id
    WHERE w.hops < w.lim
      AND (CASE WHEN $5::timestamptz IS NULL THEN e.valid_to IS NULL
                ELSE e.valid_from <= $5 AND (e.valid_to IS NULL OR e.valid_to > $5) END)
),
up(node_id, hops, lim) AS (
    SELECT r, 0, l FROM unnest($1::bigint[], $2::int[]) AS t(r, l) WHERE $4
    UNION
    SELECT e.src_node_id, w.hops + 1, w.lim
    FROM up w JOIN lineage_edges e ON e.dst_node_id = w.node_id
    WHERE w.hops < w.lim
      AND (CASE WHEN $5::timestamptz IS NULL THEN e.valid_to IS NULL
                ELSE e.valid_from <= $5 AND (e.valid_to IS NULL OR e.valid_to > $5) END)
)
SELECT node_id, min(hops) AS hops
FROM (SELECT node_id, hops FROM down UNION ALL SELECT node_id, hops FROM up) AS reached
GROUP BY node_id;

-- name: fetch_edges_between
-- Edges (open, or valid at $2) whose both ends are among the given nodes.
SELECT DISTINCT e.src_node_id, e.dst_node_id, e.manual
FROM lineage_edges e
WHERE e.src_node_id = ANY($1::bigint[]) AND e.dst_node_id = ANY($1::bigint[])
  AND (CASE WHEN $2::timestamptz IS NULL THEN e.valid_to IS NULL
            ELSE e.valid_from <= $2 AND (e.valid_to IS NULL OR e.valid_to > $2) END);

-- name: fetch_dataset_nodes
-- Dataset details for lineage nodes, with their current fields.
SELECT d.node_id, d.dataset_uuid, d.namespace, d.name, d.source_name, d.description, d.created_at, d.updated_at,
       d.current_version_at AS last_modified_at, d.facets, d.deleted_at,
       coalesce((SELECT jsonb_agg(jsonb_build_object('name', f.name, 'type', f.type, 'description', f.description)
                                  ORDER BY f.position)
                 FROM dataset_fields f WHERE f.dataset_uuid = d.dataset_uuid), '[]'::jsonb) AS fields
FROM datasets d WHERE d.node_id = ANY($1::bigint[]);

-- name: fetch_job_nodes
-- Job details for lineage nodes, with the parent job and the latest run.
SELECT j.node_id, j.job_uuid, j.namespace, j.name, j.job_type, j.description, j.created_at, j.updated_at,
       j.facets, j.deleted_at, p.namespace AS parent_namespace, p.name AS parent_name,
       r.run_uuid AS latest_run_uuid, r.current_state AS latest_run_state,
       r.started_at AS latest_run_started_at, r.ended_at AS latest_run_ended_at
FROM jobs j
LEFT JOIN jobs p ON p.job_uuid = j.parent_job_uuid
LEFT JOIN LATERAL (SELECT run_uuid, current_state, started_at, ended_at FROM runs
                   WHERE runs.job_uuid = j.job_uuid ORDER BY coalesce(current_state_at, created_at) DESC LIMIT 1) r
       ON true
WHERE j.node_id = ANY($1::bigint[]);
