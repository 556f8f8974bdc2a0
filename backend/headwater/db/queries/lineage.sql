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
