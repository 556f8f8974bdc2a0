-- name: resolve_dataset_ids
-- Datasets matching candidate (namespace, name) splits of node ids, directly or by alias; $1 says
-- which asked id each candidate comes from (returned as `ask`).
SELECT DISTINCT t.ask, d.dataset_uuid, d.node_id, d.namespace, d.name, t.namespace AS asked_namespace
FROM unnest($1::int[], $2::text[], $3::text[]) AS t(ask, namespace, name)
JOIN dataset_aliases a ON a.namespace = t.namespace AND a.name = t.name
JOIN datasets d ON d.dataset_uuid = a.dataset_uuid;

-- name: resolve_job_ids
-- Jobs matching candidate (namespace, name) splits of node ids ($1: the asked id of each).
SELECT t.ask, j.job_uuid, j.node_id, j.namespace, j.name, t.namespace AS asked_namespace
FROM unnest($1::int[], $2::text[], $3::text[]) AS t(ask, namespace, name)
JOIN jobs j ON j.namespace = t.namespace AND j.name = t.name;

-- name: walk_lineage
-- The nodes within reach of the roots, their levels and document stamps, and the edges among them:
-- one call of lineage_walk (db/views), with job roots $1, dataset roots $2, at most $3 levels,
-- downstream $4, upstream $5, edges valid at $6 (open ones when NULL), a node cap $7 per walk and
-- the namespaces $8 to stay in (any when NULL).
SELECT node_ids, levels, stamps, edge_srcs, edge_dsts, truncated
FROM lineage_walk($1::bigint[], $2::bigint[], $3::int, $4::boolean, $5::boolean, $6::timestamptz, $7::int,
                  $8::text[]);

-- name: fetch_lineage_stamps
-- The document version stamps of datasets and jobs by node id (lineage_node_stamps).
SELECT node_id, stamp FROM lineage_node_stamps($1::bigint[]);

-- name: fetch_lineage_nodes
-- Marquez-shaped documents of the given datasets and jobs (lineage_node_documents): node_id, its
-- version stamp, DATASET|JOB, namespace, name and the `data` object as JSON text.
SELECT node_id, stamp, node_type, namespace, name, data FROM lineage_node_documents($1::bigint[]);

-- name: walk_lineage_ids
-- The nodes within reach of the roots and their levels, as walk_lineage finds them over the open
-- edges, without edges, stamps or documents (lineage_walk without with_edges): for lineage scopes,
-- which need no more. Job roots $1, dataset roots $2, at most $3 levels, downstream $4, upstream
-- $5, a node cap $6 per walk. One row: node_ids (bigint), ids as the API spells them
-- (dataset:NS:NAME, job:NS:NAME), levels, and whether the cap cut a walk. A node lies where its
-- level's parity says (datasets odd, jobs even), else it is looked for in the other table; one
-- in neither is left out, as load_graph leaves out a node without a document. The walk's one row
-- is said to be one (LIMIT 1), so that the plan's estimate stays far below jit_above_cost:
-- compiling would cost some 200 ms, a hundred times the lookups.
WITH walk AS MATERIALIZED (
    SELECT w.node_ids, w.levels, w.truncated
    FROM lineage_walk($1::bigint[], $2::bigint[], $3::int, $4::boolean, $5::boolean, NULL::timestamptz, $6::int,
                      NULL::text[], false) AS w
    LIMIT 1
),
named AS MATERIALIZED (
    SELECT r.node_id, r.level,
           coalesce(CASE WHEN r.level % 2 = 1
                         THEN (SELECT 'dataset:' || d.namespace || ':' || d.name FROM datasets d WHERE d.node_id = r.node_id)
                         ELSE (SELECT 'job:' || j.namespace || ':' || j.name FROM jobs j WHERE j.node_id = r.node_id) END,
                    (SELECT 'dataset:' || d.namespace || ':' || d.name FROM datasets d WHERE d.node_id = r.node_id),
                    (SELECT 'job:' || j.namespace || ':' || j.name FROM jobs j WHERE j.node_id = r.node_id)) AS id
    FROM walk CROSS JOIN LATERAL unnest(walk.node_ids, walk.levels) AS r(node_id, level)
)
SELECT array_agg(n.node_id) AS node_ids, array_agg(n.id) AS ids, array_agg(n.level) AS levels,
       coalesce((SELECT walk.truncated FROM walk), false) AS truncated
FROM named n
WHERE n.id IS NOT NULL;
