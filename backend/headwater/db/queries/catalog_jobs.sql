-- What only jobs have: their children (the rest of the catalog is catalog_nodes.sql).

-- name: fetch_child_jobs
-- The jobs whose parent is one of the given jobs, by name (as catalog_nodes rows).
SELECT n.* FROM catalog_nodes('JOB') n
WHERE n.parent_job_uuid = ANY($1::uuid[])
ORDER BY n.parent_job_uuid, n.namespace, n.name;
