-- name: upsert_job
-- Creates or touches a job; facets merge per key with the later eventTime winning. Returns its
-- uuid, node id and whether it was created.
INSERT INTO jobs AS j (namespace, name, parent_job_uuid, job_type, description, facets, facets_at, created_at,
                       updated_at)
VALUES ($1, $2, $3, $4, $5, $6::jsonb - $7::text[], $8, $8, $8)
ON CONFLICT (namespace, name) DO UPDATE SET
    parent_job_uuid = coalesce(excluded.parent_job_uuid, j.parent_job_uuid),
    job_type = CASE WHEN j.facets_at <= excluded.facets_at THEN coalesce(excluded.job_type, j.job_type)
                    ELSE coalesce(j.job_type, excluded.job_type) END,
    description = CASE WHEN j.facets_at <= excluded.facets_at THEN coalesce(excluded.description, j.description)
                       ELSE coalesce(j.description, excluded.description) END,
    facets = CASE WHEN j.facets_at <= excluded.facets_at THEN (j.facets || excluded.facets) - $7::text[]
                  ELSE excluded.facets || j.facets END,
    facets_at = greatest(j.facets_at, excluded.facets_at),
    updated_at = greatest(j.updated_at, excluded.updated_at),
    created_at = least(j.created_at, excluded.created_at)
RETURNING j.job_uuid, j.node_id, (xmax = 0) AS created;

-- name: upsert_job_version
-- The job version for (inputs, outputs, code); created on first sight. Returns its uuid.
INSERT INTO job_versions AS v (job_uuid, version, input_uuids, output_uuids, code_hash, created_by_run_uuid,
                               created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (job_uuid, version) DO UPDATE SET
    created_by_run_uuid = CASE WHEN excluded.created_at < v.created_at THEN excluded.created_by_run_uuid
                               ELSE v.created_by_run_uuid END,
    created_at = least(v.created_at, excluded.created_at)
RETURNING v.job_version_uuid, (xmax = 0) AS created;

-- name: set_current_job_version
-- Makes a version the job's current one if it comes from its latest completed run by eventTime.
-- Returns the previous current version uuid when the job moved (no row otherwise).
-- Also returns the previous version's inputs and outputs, to tell which edges the change added.
WITH previous AS (
    SELECT j.current_version_uuid, v.version, v.input_uuids, v.output_uuids
    FROM jobs j LEFT JOIN job_versions v ON v.job_version_uuid = j.current_version_uuid
    WHERE j.job_uuid = $1 FOR UPDATE OF j
)
UPDATE jobs j SET current_version_uuid = $2, current_version_at = $3, latest_run_uuid = coalesce($4, j.latest_run_uuid)
FROM previous p
WHERE j.job_uuid = $1 AND (j.current_version_at IS NULL OR j.current_version_at <= $3)
RETURNING p.current_version_uuid AS previous_version_uuid, p.version AS previous_version,
          p.input_uuids AS previous_input_uuids,
          p.output_uuids AS previous_output_uuids;
