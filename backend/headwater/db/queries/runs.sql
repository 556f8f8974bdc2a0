-- name: read_runs
-- The runs an event is about to update, locked: each run's state and every dataset it touched so far
-- (one row per dataset; a run that touched none has one row with NULL datasets).
SELECT r.run_uuid, r.current_state, r.current_state_at, rd.dataset_uuid, rd.direction, d.node_id,
       d.namespace, d.name
FROM runs r
LEFT JOIN run_datasets rd USING (run_uuid)
LEFT JOIN datasets d USING (dataset_uuid)
WHERE r.run_uuid = ANY($1::uuid[])
FOR UPDATE OF r;

-- name: write_run_events
-- Creates or updates runs ($1, one per run, each the row one event or several folded into it would
-- insert), records the state events ($2), and merges the datasets touched ($3: run, dataset,
-- INPUT|OUTPUT, version, first and last seen) into the run's (the latest version wins). The run's
-- state after the event and the job version of a finished run come decided by ingest's fold (over the
-- row read_runs locked): a stored run's row is written once per event, with its final values, and a run
-- an ingest transaction creates once, with all of its events folded (store.runs.NewRuns).
WITH input AS (
    SELECT * FROM jsonb_to_recordset($1::jsonb)
        AS t(run_uuid uuid, job_uuid uuid, parent_run_uuid uuid, root_run_uuid uuid, state text,
             state_at timestamptz, job_version_uuid uuid, started_at timestamptz, ended_at timestamptz,
             nominal_start_time timestamptz, nominal_end_time timestamptz, error_message text, error_language text,
             error_stack_trace text, facets jsonb, facets_at timestamptz, warnings jsonb, created_at timestamptz,
             updated_at timestamptz, reported_run_id text)
),
upserted AS (
    INSERT INTO runs AS r (run_uuid, job_uuid, parent_run_uuid, root_run_uuid, current_state, current_state_at,
                           job_version_uuid, started_at, ended_at, nominal_start_time, nominal_end_time,
                           error_message, error_language, error_stack_trace, facets, facets_at, warnings,
                           created_at, updated_at, reported_run_id)
    SELECT run_uuid, job_uuid, parent_run_uuid, root_run_uuid, state, state_at, job_version_uuid, started_at,
           ended_at, nominal_start_time, nominal_end_time, error_message, error_language, error_stack_trace, facets,
           facets_at, warnings, created_at, updated_at, reported_run_id
    FROM input
    -- What follows is what store.runs.NewRuns does for a run's events in one transaction: keep the two
    -- alike.
    ON CONFLICT (run_uuid) DO UPDATE SET
        parent_run_uuid = coalesce(r.parent_run_uuid, excluded.parent_run_uuid),
        root_run_uuid = coalesce(r.root_run_uuid, excluded.root_run_uuid),
        reported_run_id = coalesce(r.reported_run_id, excluded.reported_run_id),
        current_state = excluded.current_state,
        current_state_at = excluded.current_state_at,
        job_version_uuid = coalesce(excluded.job_version_uuid, r.job_version_uuid),
        started_at = least(r.started_at, excluded.started_at),
        ended_at = CASE WHEN excluded.ended_at IS NULL THEN r.ended_at
                        WHEN r.ended_at IS NULL THEN excluded.ended_at
                        ELSE greatest(r.ended_at, excluded.ended_at) END,
        nominal_start_time = coalesce(excluded.nominal_start_time, r.nominal_start_time),
        nominal_end_time = coalesce(excluded.nominal_end_time, r.nominal_end_time),
        error_message = coalesce(excluded.error_message, r.error_message),
        error_language = coalesce(excluded.error_language, r.error_language),
        error_stack_trace = coalesce(excluded.error_stack_trace, r.error_stack_trace),
        facets = merge_facets(r.facets, r.facets_at, excluded.facets, excluded.facets_at),
        facets_at = greatest(r.facets_at, excluded.facets_at),
        warnings = r.warnings || excluded.warnings,
        created_at = least(r.created_at, excluded.created_at),
        updated_at = greatest(r.updated_at, excluded.updated_at)
    RETURNING r.run_uuid
),
state_event AS (
    INSERT INTO run_states (run_uuid, state, event_time)
    SELECT * FROM json_to_recordset($2::json) AS t(run_uuid uuid, state text, event_time timestamptz)
    ON CONFLICT DO NOTHING
),
touched AS (
    INSERT INTO run_datasets AS rd (run_uuid, dataset_uuid, direction, dataset_version_uuid, first_seen_at,
                                    last_seen_at)
    SELECT t.run_uuid, t.dataset_uuid, t.direction, t.version_uuid, t.first_seen_at, t.last_seen_at
    FROM json_to_recordset($3::json)
        AS t(run_uuid uuid, dataset_uuid uuid, direction text, version_uuid uuid, first_seen_at timestamptz,
             last_seen_at timestamptz)
    ON CONFLICT (run_uuid, direction, dataset_uuid) DO UPDATE SET
        dataset_version_uuid = CASE WHEN excluded.last_seen_at >= rd.last_seen_at
                                    THEN coalesce(excluded.dataset_version_uuid, rd.dataset_version_uuid)
                                    ELSE coalesce(rd.dataset_version_uuid, excluded.dataset_version_uuid) END,
        first_seen_at = least(rd.first_seen_at, excluded.first_seen_at),
        last_seen_at = greatest(rd.last_seen_at, excluded.last_seen_at)
    -- Rewritten only when the version or the first sighting changes, not by every later event.
    WHERE excluded.first_seen_at < rd.first_seen_at
       OR (CASE WHEN excluded.last_seen_at >= rd.last_seen_at
                THEN coalesce(excluded.dataset_version_uuid, rd.dataset_version_uuid)
                ELSE coalesce(rd.dataset_version_uuid, excluded.dataset_version_uuid) END)
          IS DISTINCT FROM rd.dataset_version_uuid
)
SELECT count(*) FROM upserted;

