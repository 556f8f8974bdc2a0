-- name: fetch_runs_by_uuids
-- Runs by uuid.
SELECT r.run_uuid, r.job_uuid, r.job_version_uuid, r.parent_run_uuid, r.root_run_uuid, r.current_state,
       r.current_state_at, r.started_at, r.ended_at, r.nominal_start_time, r.nominal_end_time, r.error_message,
       r.facets, r.created_at, r.updated_at, r.reported_run_id
FROM runs r
WHERE r.run_uuid = ANY($1::uuid[]);

-- name: fetch_runs_by_jobs
-- The latest $2 runs of each job, newest first, after the run created at $3 / with uuid $4 when
-- given (keyset paging of one job's runs).
SELECT w.run_uuid, w.job_uuid, w.job_version_uuid, w.parent_run_uuid, w.root_run_uuid, w.current_state,
       w.current_state_at, w.started_at, w.ended_at, w.nominal_start_time, w.nominal_end_time, w.error_message,
       w.facets, w.created_at, w.updated_at, w.reported_run_id
FROM (SELECT r.*, row_number() OVER (PARTITION BY r.job_uuid ORDER BY r.created_at DESC, r.run_uuid DESC) AS rn
      FROM runs r
      WHERE r.job_uuid = ANY($1::uuid[])
        AND ($3::timestamptz IS NULL OR (r.created_at, r.run_uuid) < ($3, $4::uuid))) w
WHERE w.rn <= $2
ORDER BY w.job_uuid, w.created_at DESC, w.run_uuid DESC;

-- name: page_job_runs
-- One page of a job's runs, newest first: $2 rows after skipping $3.
SELECT r.run_uuid, r.job_uuid, r.job_version_uuid, r.parent_run_uuid, r.root_run_uuid, r.current_state,
       r.current_state_at, r.started_at, r.ended_at, r.nominal_start_time, r.nominal_end_time, r.error_message,
       r.facets, r.created_at, r.updated_at, r.reported_run_id
FROM runs r
WHERE r.job_uuid = $1
ORDER BY r.created_at DESC, r.run_uuid DESC
LIMIT $2 OFFSET $3;

-- name: count_job_runs
-- How many runs the job has.
SELECT count(*) FROM runs WHERE job_uuid = $1;

-- name: fetch_run_states
-- Every state transition of runs, oldest first.
SELECT s.run_uuid, s.state, s.event_time
FROM run_states s
WHERE s.run_uuid = ANY($1::uuid[])
ORDER BY s.run_uuid, s.event_time, s.state;

-- name: fetch_run_datasets_by_runs
-- The datasets runs read and wrote, with the version read or written.
SELECT rd.run_uuid, rd.dataset_uuid, rd.direction, rd.dataset_version_uuid
FROM run_datasets rd
WHERE rd.run_uuid = ANY($1::uuid[])
ORDER BY rd.run_uuid, rd.direction, rd.first_seen_at, rd.dataset_uuid;
