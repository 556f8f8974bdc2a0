-- name: fetch_node_refs
-- The dataset or job behind each lineage node id, with its uuid and identity.
SELECT 'DATASET' AS node_type, d.node_id, d.dataset_uuid AS uuid, d.namespace, d.name
FROM datasets d WHERE d.node_id = ANY($1::bigint[])
UNION ALL
SELECT 'JOB', j.node_id, j.job_uuid, j.namespace, j.name
FROM jobs j WHERE j.node_id = ANY($1::bigint[]);

-- name: upsert_manual_job
-- The manual job ($1, $2) that carries declared dataset -> dataset lineage, created (or restored)
-- at $4. Returns it, whether it was created and whether it is a manual job at all.
INSERT INTO jobs AS j (namespace, name, job_type, description, manual, facets_at, created_at, updated_at)
VALUES ($1, $2, 'MANUAL', $3, true, $4, $4, $4)
ON CONFLICT (namespace, name) DO UPDATE SET
    updated_at = greatest(j.updated_at, excluded.updated_at),
    deleted_at = CASE WHEN j.manual THEN NULL ELSE j.deleted_at END
RETURNING j.job_uuid, j.node_id, j.manual, (xmax = 0) AS created;

-- name: lock_manual_job
-- The manual job ($1, $2), if there is one, locked until the transaction ends (as upsert_manual_job
-- locks it): a flow removed and one added into the same dataset take turns.
SELECT j.job_uuid, j.node_id FROM jobs j WHERE j.namespace = $1 AND j.name = $2 AND j.manual
FOR NO KEY UPDATE;

-- name: fetch_open_edge
-- The open edge from $1 to $2, if any, and whether it is manual.
SELECT e.edge_id, e.manual FROM lineage_edges e
WHERE e.src_node_id = $1 AND e.dst_node_id = $2 AND e.valid_to IS NULL;

-- name: insert_manual_edge
-- Opens a manual edge $1 -> $2 (job $3, dataset $4, READ or WRITE $5, note $6) at $7, unless an
-- edge between the two is already open. Returns its id when it was opened.
INSERT INTO lineage_edges (src_node_id, dst_node_id, job_uuid, dataset_uuid, edge_type, manual, description,
                           first_seen_at, last_seen_at, valid_from)
VALUES ($1, $2, $3, $4, $5, true, $6, $7, $7, $7)
ON CONFLICT (src_node_id, dst_node_id) WHERE valid_to IS NULL DO NOTHING
RETURNING edge_id;

-- name: close_manual_edge
-- Closes the open manual edge $1 -> $2 at $3. Returns it when there was one.
UPDATE lineage_edges e SET valid_to = $3
WHERE e.src_node_id = $1 AND e.dst_node_id = $2 AND e.valid_to IS NULL AND e.manual
RETURNING e.edge_id, e.job_uuid, e.dataset_uuid, e.edge_type;

-- name: count_open_manual_reads
-- How many open manual edges the job $1 reads from.
SELECT count(*) FROM lineage_edges e
WHERE e.job_uuid = $1 AND e.edge_type = 'READ' AND e.manual AND e.valid_to IS NULL;

-- name: close_manual_job_writes
-- Closes the open manual WRITE edges of job $1 at $2. Returns the closed edges' ends.
UPDATE lineage_edges e SET valid_to = $2
WHERE e.job_uuid = $1 AND e.edge_type = 'WRITE' AND e.manual AND e.valid_to IS NULL
RETURNING e.src_node_id, e.dst_node_id;

-- name: retire_manual_job
-- Soft-deletes a manual job left without manual edges (it comes back with the next one).
UPDATE jobs SET deleted_at = $2, updated_at = $2 WHERE job_uuid = $1 AND manual;

-- name: fetch_manual_edges_of_jobs
-- The manual edges (open, or valid at $3 when given) of jobs ($1, $2), with both ends' identities.
SELECT j.namespace AS job_namespace, j.name AS job_name, e.edge_type, d.namespace AS dataset_namespace,
       d.name AS dataset_name, e.description, e.valid_from
FROM unnest($1::text[], $2::text[]) AS t(namespace, name)
JOIN jobs j ON j.namespace = t.namespace AND j.name = t.name
JOIN lineage_edges e ON e.job_uuid = j.job_uuid AND e.manual
JOIN datasets d ON d.dataset_uuid = e.dataset_uuid
WHERE CASE WHEN $3::timestamptz IS NULL THEN e.valid_to IS NULL
           ELSE e.valid_from <= $3 AND (e.valid_to IS NULL OR e.valid_to > $3) END
ORDER BY j.namespace, j.name, e.edge_type, d.namespace, d.name;
