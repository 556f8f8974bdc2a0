-- name: write_run_event
-- Creates or updates a run from one event, records the state event, and merges the event's
-- datasets ($14 uuids, $15 INPUT|OUTPUT, $16 versions) into the run's (the latest version wins).
-- The state follows eventTime, except that a terminal state (COMPLETE, FAIL, ABORT) is never
-- replaced by a non-terminal one, and OTHER never sets the state of a run that has one.
-- Returns the state before and after.
WITH previous AS (SELECT current_state FROM runs WHERE run_uuid = $1 FOR UPDATE),
upserted AS (
    INSERT INTO runs AS r (run_uuid, job_uuid, parent_run_uuid, root_run_uuid, current_state, current_state_at,
                           started_at, ended_at, nominal_start_time, nominal_end_time, error_message, error_language,
                           error_stack_trace, facets, facets_at, warnings, created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5::text, $6::timestamptz,
            CASE WHEN $5 IN ('START', 'RUNNING') THEN $6::timestamptz END,
            CASE WHEN $5 IN ('COMPLETE', 'FAIL', 'ABORT') THEN $6::timestamptz END,
            $7, $8, $9, $10, $11, $12, $6, $13, $6, $6)
    ON CONFLICT (run_uuid) DO UPDATE SET
        parent_run_uuid = coalesce(r.parent_run_uuid, excluded.parent_run_uuid),
        root_run_uuid = coalesce(r.root_run_uuid, excluded.root_run_uuid),
        (current_state, current_state_at) = (
            SELECT CASE WHEN wins THEN excluded.current_state ELSE r.current_state END,
                   CASE WHEN wins THEN excluded.current_state_at ELSE r.current_state_at END
            FROM (SELECT
                r.current_state IS NULL
                OR (excluded.current_state IN ('COMPLETE', 'FAIL', 'ABORT')
                    AND (r.current_state NOT IN ('COMPLETE', 'FAIL', 'ABORT')
                         OR excluded.current_state_at >= r.current_state_at))
                OR (excluded.current_state IN ('START', 'RUNNING')
                    AND r.current_state NOT IN ('COMPLETE', 'FAIL', 'ABORT')
                    AND (r.current_state = 'OTHER' OR excluded.current_state_at >= r.current_state_at))
                AS wins) w),
        started_at = least(r.started_at, excluded.started_at),
        ended_at = CASE WHEN excluded.ended_at IS NULL THEN r.ended_at
                        WHEN r.ended_at IS NULL THEN excluded.ended_at
                        ELSE greatest(r.ended_at, excluded.ended_at) END,
        nominal_start_time = coalesce(excluded.nominal_start_time, r.nominal_start_time),
        nominal_end_time = coalesce(excluded.nominal_end_time, r.nominal_end_time),
        error_message = coalesce(excluded.error_message, r.error_message),
        error_language = coalesce(excluded.error_language, r.error_language),
        error_stack_trace = coalesce(excluded.error_stack_trace, r.error_stack_trace),
        facets = CASE WHEN r.facets_at <= excluded.facets_at THEN r.facets || excluded.facets
                      ELSE excluded.facets || r.facets END,
        facets_at = greatest(r.facets_at, excluded.facets_at),
        warnings = r.warnings || excluded.warnings,
        created_at = least(r.created_at, excluded.created_at),
        updated_at = greatest(r.updated_at, excluded.updated_at)
    RETURNING r.current_state, r.current_state_at
),
state_event AS (
    INSERT INTO run_states (run_uuid, state, event_time) VALUES ($1, $5, $6) ON CONFLICT DO NOTHING
),
touched AS (
    INSERT INTO run_datasets AS rd (run_uuid, dataset_uuid, direction, dataset_version_uuid, first_seen_at,
                                    last_seen_at)
    SELECT $1, dataset_uuid, direction, version_uuid, $6, $6
    FROM unnest($14::uuid[], $15::text[], $16::uuid[]) AS t(dataset_uuid, direction, version_uuid)
    ON CONFLICT (run_uuid, direction, dataset_uuid) DO UPDATE SET
        dataset_version_uuid = CASE WHEN excluded.last_seen_at >= rd.last_seen_at
                                    THEN coalesce(excluded.dataset_version_uuid, rd.dataset_version_uuid)
                                    ELSE coalesce(rd.dataset_version_uuid, excluded.dataset_version_uuid) END,
        first_seen_at = least(rd.first_seen_at, excluded.first_seen_at),
        last_seen_at = greatest(rd.last_seen_at, excluded.last_seen_at)
)
SELECT (SELECT current_state FROM previous) AS previous_state, u.current_state, u.current_state_at
FROM upserted u;

-- name: fetch_run_datasets
-- Every dataset a run touched so far, with its canonical identity, for job versioning.
SELECT rd.dataset_uuid, rd.direction, d.node_id, d.namespace, d.name
FROM run_datasets rd JOIN datasets d USING (dataset_uuid)
WHERE rd.run_uuid = $1;

-- name: set_run_job_version
-- Attaches the job version computed from the run's merged datasets.
UPDATE runs SET job_version_uuid = $2 WHERE run_uuid = $1;
