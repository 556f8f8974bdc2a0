-- Queries of `headwater spark ...`: partitioned reads by id range ($1 inclusive, $2 exclusive),
-- each run by one Spark task, and the staging of asset heat scores.

-- name: fetch_raw_event_id_bounds
-- Smallest and largest raw_event_id and the number of raw events (NULLs when there are none).
SELECT min(raw_event_id) AS lo, max(raw_event_id) AS hi, count(*) AS n FROM raw_events;

-- name: fetch_raw_event_hashes
-- Content hashes of the raw events in an id range: the events a backfill must not store again.
SELECT content_hash FROM raw_events WHERE raw_event_id >= $1 AND raw_event_id < $2;

-- name: fetch_raw_events_for_export
-- Raw events in an id range with eventTime in [$3, $4), with their payloads and job namespace:
-- store/pipeline.py decodes the payloads (compressed: see store/payloads.py) and keeps, when a
-- namespace is asked for, the events naming it as their job's or one of their datasets' namespace.
SELECT raw_event_id, event_time, payload, payload_zstd, job_namespace
FROM raw_events
WHERE raw_event_id >= $1 AND raw_event_id < $2
  AND ($3::timestamptz IS NULL OR event_time >= $3)
  AND ($4::timestamptz IS NULL OR event_time < $4);

-- name: fetch_node_id_bounds
-- Smallest and largest node_id over datasets and jobs (they share one sequence).
SELECT min(lo) AS lo, max(hi) AS hi, sum(n)::bigint AS n
FROM (SELECT min(node_id) AS lo, max(node_id) AS hi, count(*) AS n FROM datasets
      UNION ALL
      SELECT min(node_id), max(node_id), count(*) FROM jobs) b;

-- name: fetch_lineage_nodes_for_export
-- Datasets and jobs with node_id in a range: identity, descriptive columns, times and heat.
SELECT node_id, 'dataset:' || namespace || ':' || name AS node_key, 'DATASET' AS node_type, namespace, name,
       description, source_name, NULL::text AS job_type, created_at, updated_at, deleted_at, heat
FROM datasets WHERE node_id >= $1 AND node_id < $2
UNION ALL
SELECT node_id, 'job:' || namespace || ':' || name, 'JOB', namespace, name,
       description, NULL, job_type, created_at, updated_at, deleted_at, heat
FROM jobs WHERE node_id >= $1 AND node_id < $2;

-- name: fetch_edge_id_bounds
-- Smallest and largest edge_id of lineage_edges.
SELECT min(edge_id) AS lo, max(edge_id) AS hi, count(*) AS n FROM lineage_edges;

-- name: fetch_lineage_edges_for_export
-- Lineage edges in an id range, each end as node id, node key and namespace, with its validity
-- interval [valid_from, valid_to) (valid_to NULL: the edge is current).
SELECT e.edge_id, e.edge_type,
       e.src_node_id,
       CASE WHEN e.edge_type = 'READ' THEN 'dataset:' || d.namespace || ':' || d.name
            ELSE 'job:' || j.namespace || ':' || j.name END AS src_key,
       CASE WHEN e.edge_type = 'READ' THEN d.namespace ELSE j.namespace END AS src_namespace,
       e.dst_node_id,
       CASE WHEN e.edge_type = 'READ' THEN 'job:' || j.namespace || ':' || j.name
            ELSE 'dataset:' || d.namespace || ':' || d.name END AS dst_key,
       CASE WHEN e.edge_type = 'READ' THEN j.namespace ELSE d.namespace END AS dst_namespace,
       e.manual, e.first_seen_at, e.last_seen_at, e.valid_from, e.valid_to, e.last_run_uuid::text AS last_run_id
FROM lineage_edges e
JOIN datasets d ON d.dataset_uuid = e.dataset_uuid
JOIN jobs j ON j.job_uuid = e.job_uuid
WHERE e.edge_id >= $1 AND e.edge_id < $2;

-- name: fetch_column_edge_id_bounds
-- Smallest and largest column_edge_id of column_lineage.
SELECT min(column_edge_id) AS lo, max(column_edge_id) AS hi, count(*) AS n FROM column_lineage;

-- name: fetch_column_edges_for_export
-- Column lineage edges in an id range: output field <- input field (through a job), with their
-- validity interval.
SELECT c.column_edge_id,
       'dataset:' || o.namespace || ':' || o.name AS output_key, o.namespace AS output_namespace, c.output_field,
       'dataset:' || i.namespace || ':' || i.name AS input_key, i.namespace AS input_namespace, c.input_field,
       CASE WHEN j.job_uuid IS NULL THEN NULL ELSE 'job:' || j.namespace || ':' || j.name END AS job_key,
       c.transformation_type, c.transformation_subtype, c.description, c.masking, c.derived,
       c.first_seen_at, c.last_seen_at, c.valid_from, c.valid_to
FROM column_lineage_confirmed c
JOIN datasets o ON o.dataset_uuid = c.output_dataset_uuid
JOIN datasets i ON i.dataset_uuid = c.input_dataset_uuid
LEFT JOIN jobs j ON j.job_uuid = c.job_uuid
WHERE c.column_edge_id >= $1 AND c.column_edge_id < $2;

-- name: fetch_live_node_ids
-- Node ids in a range of the datasets and jobs that are not deleted: the nodes heat is computed for.
SELECT node_id FROM datasets WHERE node_id >= $1 AND node_id < $2 AND deleted_at IS NULL
UNION ALL
SELECT node_id FROM jobs WHERE node_id >= $1 AND node_id < $2 AND deleted_at IS NULL;

-- name: fetch_current_edges
-- The current (open) lineage edges in an id range, as (src_node_id, dst_node_id).
SELECT src_node_id, dst_node_id FROM lineage_edges
WHERE edge_id >= $1 AND edge_id < $2 AND valid_to IS NULL;

-- name: insert_heat_run
-- Records the start of a heat computation; returns its id.
INSERT INTO heat_runs (damping, max_iterations, tolerance) VALUES ($1, $2, $3) RETURNING heat_run_id;

-- name: apply_heat_scores
-- Moves the staged scores of heat run $1 into datasets.heat and jobs.heat in one statement (nodes
-- without a score, i.e. deleted ones, get NULL), records the run's figures, and drops its staging
-- rows. Returns how many datasets and jobs were scored.
WITH scores AS (
    SELECT node_id, heat FROM heat_scores WHERE heat_run_id = $1
),
scored_datasets AS (
    UPDATE datasets d SET heat = s.heat
    FROM (SELECT d2.dataset_uuid, s2.heat
          FROM datasets d2 LEFT JOIN scores s2 ON s2.node_id = d2.node_id) s
    WHERE d.dataset_uuid = s.dataset_uuid AND d.heat IS DISTINCT FROM s.heat
    RETURNING 1
),
scored_jobs AS (
    UPDATE jobs j SET heat = s.heat
    FROM (SELECT j2.job_uuid, s2.heat
          FROM jobs j2 LEFT JOIN scores s2 ON s2.node_id = j2.node_id) s
    WHERE j.job_uuid = s.job_uuid AND j.heat IS DISTINCT FROM s.heat
    RETURNING 1
),
cleared AS (
    DELETE FROM heat_scores WHERE heat_run_id = $1
),
finished AS (
    UPDATE heat_runs SET applied_at = now(), node_count = $2, edge_count = $3, iterations = $4, delta = $5
    WHERE heat_run_id = $1
)
SELECT (SELECT count(*) FROM scores s JOIN datasets d ON d.node_id = s.node_id) AS datasets,
       (SELECT count(*) FROM scores s JOIN jobs j ON j.node_id = s.node_id) AS jobs,
       (SELECT count(*) FROM scored_datasets) + (SELECT count(*) FROM scored_jobs) AS changed;

-- name: fetch_hottest_nodes
-- The $1 datasets and jobs with the highest heat, as (node key, heat).
SELECT node_key, heat FROM (
    SELECT 'dataset:' || namespace || ':' || name AS node_key, heat FROM datasets WHERE heat IS NOT NULL
    UNION ALL
    SELECT 'job:' || namespace || ':' || name, heat FROM jobs WHERE heat IS NOT NULL
) n
ORDER BY heat DESC, node_key
LIMIT $1;

-- name: vacuum_model
-- Reclaims the row versions ingest leaves behind in the tables it updates in place, and refreshes
-- their statistics. Every event rewrites its job, run and datasets rows (most updates move an indexed
-- column, updated_at, so they are not HOT and only VACUUM frees them): without it, 200,000 events of
-- a backfill left 64 dead versions of each dataset row, and every lookup waded through them. A
-- manual VACUUM is not throttled as autovacuum is, and ingest from other sessions goes on beside it.
VACUUM (ANALYZE) datasets, dataset_versions, jobs, job_versions, runs, run_datasets, lineage_edges,
                 column_lineage;

-- name: analyze_model
-- Refreshes the planner's statistics of the tables ingest only inserts into. A backfill grows them
-- faster than autovacuum samples them; stale row counts would make the planner scan whole tables.
ANALYZE raw_events, dataset_aliases, dataset_fields, run_states;
