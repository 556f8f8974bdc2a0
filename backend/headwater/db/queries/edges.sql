-- name: upsert_lineage_edges
-- Opens or refreshes the edges one event reports (dataset -> job for reads, job -> dataset for
-- writes); an edge stays `derived` only while no producer has reported it. A late, stale event never opens an edge: not one closed after its time, and not one
-- missing from a job version defined by a later completed run. Returns the edges opened.
WITH input AS (
    SELECT DISTINCT ON (src, dst) *
    FROM unnest($1::bigint[], $2::bigint[], $3::uuid[], $4::text[], $8::boolean[])
        AS t(src, dst, dataset_uuid, edge_type, derived)
),
refreshed AS (
    UPDATE lineage_edges e SET
        first_seen_at = least(e.first_seen_at, $6),
        last_seen_at = greatest(e.last_seen_at, $6),
        valid_from = CASE WHEN $6 < e.valid_from AND NOT EXISTS (
                              SELECT 1 FROM lineage_edges c
                              WHERE c.src_node_id = e.src_node_id AND c.dst_node_id = e.dst_node_id
                                AND c.valid_to IS NOT NULL AND c.valid_to > $6)
                          THEN $6 ELSE e.valid_from END,
        last_run_uuid = CASE WHEN $6 >= e.last_seen_at THEN coalesce($7, e.last_run_uuid) ELSE e.last_run_uuid END,
        derived = e.derived AND i.derived
    FROM input i
    WHERE e.src_node_id = i.src AND e.dst_node_id = i.dst AND e.valid_to IS NULL
    RETURNING e.src_node_id, e.dst_node_id
)
INSERT INTO lineage_edges (src_node_id, dst_node_id, job_uuid, dataset_uuid, edge_type, first_seen_at, last_seen_at,
                           valid_from, last_run_uuid, derived)
SELECT i.src, i.dst, $5, i.dataset_uuid, i.edge_type, $6, $6, $6, $7, i.derived
FROM input i
WHERE NOT EXISTS (SELECT 1 FROM refreshed r WHERE r.src_node_id = i.src AND r.dst_node_id = i.dst)
  AND NOT EXISTS (SELECT 1 FROM lineage_edges c
                  WHERE c.src_node_id = i.src AND c.dst_node_id = i.dst AND c.valid_to > $6)
  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.job_uuid = $5 AND j.current_version_at > $6
                  AND j.latest_run_uuid IS DISTINCT FROM $7)
RETURNING src_node_id, dst_node_id, edge_type, dataset_uuid;

-- name: close_stale_job_edges
-- A completed run defines the job's current lineage: its open, non-manual edges that the run did not
-- report ($3 inputs, $4 outputs) and that no later event confirmed are closed at the run's
-- eventTime ($2). Returns the closed edges.
UPDATE lineage_edges e SET valid_to = $2
WHERE e.job_uuid = $1 AND e.valid_to IS NULL AND NOT e.manual AND e.last_seen_at < $2
  AND NOT ((e.edge_type = 'READ' AND e.dataset_uuid = ANY($3::uuid[]))
           OR (e.edge_type = 'WRITE' AND e.dataset_uuid = ANY($4::uuid[])))
RETURNING e.src_node_id, e.dst_node_id, e.edge_type, e.dataset_uuid;
