-- name: upsert_lineage_edges
-- Opens or refreshes the edges events report ($1: a JSON array; dataset -> job for reads, job ->
-- dataset for writes), each with its job, eventTime and run; an edge stays `derived` only while no
-- producer has reported it. A late, stale event never opens an edge: not one closed after its time, and not
-- one missing from a job version defined by a later completed run. Returns the edges opened.
WITH input AS (
    SELECT DISTINCT ON (src, dst) *
    FROM json_to_recordset($1::json)
        AS t(src bigint, dst bigint, dataset_uuid uuid, edge_type text, job_uuid uuid, at timestamptz, run_uuid uuid,
             derived boolean)
),
refreshed AS (
    UPDATE lineage_edges e SET
        first_seen_at = least(e.first_seen_at, i.at),
        last_seen_at = greatest(e.last_seen_at, i.at),
        valid_from = CASE WHEN i.at < e.valid_from AND NOT EXISTS (
                              SELECT 1 FROM lineage_edges c
                              WHERE c.src_node_id = e.src_node_id AND c.dst_node_id = e.dst_node_id
                                AND c.valid_to IS NOT NULL AND c.valid_to > i.at)
                          THEN i.at ELSE e.valid_from END,
        last_run_uuid = CASE WHEN i.at >= e.last_seen_at THEN coalesce(i.run_uuid, e.last_run_uuid)
                             ELSE e.last_run_uuid END,
        derived = e.derived AND i.derived
    FROM input i
    WHERE e.src_node_id = i.src AND e.dst_node_id = i.dst AND e.valid_to IS NULL
    RETURNING e.src_node_id, e.dst_node_id
)
INSERT INTO lineage_edges (src_node_id, dst_node_id, job_uuid, dataset_uuid, edge_type, first_seen_at, last_seen_at,
                           valid_from, last_run_uuid, derived)
SELECT i.src, i.dst, i.job_uuid, i.dataset_uuid, i.edge_type, i.at, i.at, i.at, i.run_uuid, i.derived
FROM input i
WHERE NOT EXISTS (SELECT 1 FROM refreshed r WHERE r.src_node_id = i.src AND r.dst_node_id = i.dst)
  AND NOT EXISTS (SELECT 1 FROM lineage_edges c
                  WHERE c.src_node_id = i.src AND c.dst_node_id = i.dst AND c.valid_to > i.at)
  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.job_uuid = i.job_uuid AND j.current_version_at > i.at
                  AND j.latest_run_uuid IS DISTINCT FROM i.run_uuid)
RETURNING src_node_id, dst_node_id, job_uuid, edge_type, dataset_uuid;

-- name: close_stale_job_edges
-- A completed run defines its job's current lineage: the job's open, non-manual edges that the run did
-- not report ($3 inputs, $4 outputs: JSON arrays of dataset uuids) and that no later event confirmed
-- are closed at the run's eventTime ($2). Returns the closed edges.
UPDATE lineage_edges e SET valid_to = t.at
FROM unnest($1::uuid[], $2::timestamptz[], $3::jsonb[], $4::jsonb[]) AS t(job_uuid, at, inputs, outputs)
WHERE e.job_uuid = t.job_uuid AND e.valid_to IS NULL AND NOT e.manual AND e.last_seen_at < t.at
  AND NOT ((e.edge_type = 'READ' AND t.inputs ? e.dataset_uuid::text)
           OR (e.edge_type = 'WRITE' AND t.outputs ? e.dataset_uuid::text))
RETURNING e.src_node_id, e.dst_node_id, e.job_uuid, e.edge_type, e.dataset_uuid;
