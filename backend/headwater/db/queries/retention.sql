-- Retention (`headwater retention`, operations/retention.py): history before a horizon is removed,
-- what is current never is. Candidates are collected once per pass into temporary tables numbered
-- from 1, then deleted in short transactions of a bounded number of keys each.

-- name: fetch_retention_horizon
-- The horizon of the latest retention pass: nothing before it is kept for point-in-time answers.
SELECT max(horizon) FROM retention_passes;

-- name: fetch_changes_removed_through
-- The highest change id any retention pass removed (or is removing): a cursor below it misses changes.
SELECT max(changes_through) FROM retention_passes;

-- name: fetch_change_recorded_from
-- The first change at or after id $1, and when it was recorded (to find the horizon's change id).
SELECT change_id, created_at FROM change_log WHERE change_id >= $1 ORDER BY change_id LIMIT 1;

-- name: fetch_change_id_bounds
-- The lowest and highest change ids in the log.
SELECT min(change_id) AS low, max(change_id) AS high FROM change_log;

-- name: set_retention_changes_through
-- Pass $1 is about to remove every change up to id $2.
UPDATE retention_passes SET changes_through = $2 WHERE pass_id = $1;

-- name: count_changes_through
-- How many changes have an id up to $1.
SELECT count(*) FROM change_log WHERE change_id <= $1;

-- name: delete_retention_changes
-- The oldest changes up to id $1, at most $2 of them.
DELETE FROM change_log
WHERE change_id IN (SELECT change_id FROM change_log WHERE change_id <= $1 ORDER BY change_id LIMIT $2);

-- name: insert_retention_pass
-- Records a pass before it removes anything ($1 horizon, $2 days kept); returns its id.
INSERT INTO retention_passes (horizon, keep_days) VALUES ($1, $2) RETURNING pass_id;

-- name: finish_retention_pass
-- What pass $1 removed ($2: rows per table).
UPDATE retention_passes SET finished_at = now(), removed = $2::jsonb WHERE pass_id = $1;

-- name: create_retention_candidates
-- The session's candidate tables, emptied: runs, job versions, dataset versions, edges, column edges.
DROP TABLE IF EXISTS retention_runs, retention_job_versions, retention_dataset_versions,
    retention_edges, retention_column_edges;
CREATE TEMP TABLE retention_runs (n bigint PRIMARY KEY, key uuid NOT NULL);
CREATE TEMP TABLE retention_job_versions (n bigint PRIMARY KEY, key uuid NOT NULL);
CREATE TEMP TABLE retention_dataset_versions (n bigint PRIMARY KEY, key uuid NOT NULL);
CREATE TEMP TABLE retention_edges (n bigint PRIMARY KEY, key bigint NOT NULL);
CREATE TEMP TABLE retention_column_edges (n bigint PRIMARY KEY, key bigint NOT NULL);

-- name: collect_retention_runs
-- Runs whose last event is before $1 and that nothing current points to: not the latest run of its
-- job, not the last run of an open edge or column edge, not the run that made a current version,
-- not the parent of a run kept for being recent or its job's latest.
INSERT INTO retention_runs (n, key)
SELECT row_number() OVER (), r.run_uuid
FROM runs r
WHERE r.updated_at < $1
  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.latest_run_uuid = r.run_uuid)
  AND NOT EXISTS (SELECT 1 FROM runs c WHERE c.parent_run_uuid = r.run_uuid
                  AND (c.updated_at >= $1 OR EXISTS (SELECT 1 FROM jobs j WHERE j.latest_run_uuid = c.run_uuid)))
  AND NOT EXISTS (SELECT 1 FROM lineage_edges e WHERE e.valid_to IS NULL AND e.last_run_uuid = r.run_uuid)
  AND NOT EXISTS (SELECT 1 FROM column_lineage_confirmed c WHERE c.valid_to IS NULL AND c.last_run_uuid = r.run_uuid)
  AND NOT EXISTS (SELECT 1 FROM jobs j JOIN job_versions v ON v.job_version_uuid = j.current_version_uuid
                  WHERE v.created_by_run_uuid = r.run_uuid)
  AND NOT EXISTS (SELECT 1 FROM datasets d
                  JOIN dataset_versions v ON v.dataset_version_uuid = d.current_version_uuid
                  WHERE v.created_by_run_uuid = r.run_uuid);

-- name: collect_retention_job_versions
-- Job versions made before $1 that are not their job's current version and that no run kept
-- (a run not among the candidates) belongs to.
INSERT INTO retention_job_versions (n, key)
SELECT row_number() OVER (), v.job_version_uuid
FROM job_versions v
WHERE v.created_at < $1
  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.current_version_uuid = v.job_version_uuid)
  AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.job_version_uuid = v.job_version_uuid
                  AND NOT EXISTS (SELECT 1 FROM retention_runs x WHERE x.key = r.run_uuid));

-- name: collect_retention_dataset_versions
-- Dataset versions made before $1 that are not their dataset's current version and that no kept
-- run read or wrote.
INSERT INTO retention_dataset_versions (n, key)
SELECT row_number() OVER (), v.dataset_version_uuid
FROM dataset_versions v
WHERE v.created_at < $1
  AND NOT EXISTS (SELECT 1 FROM datasets d WHERE d.current_version_uuid = v.dataset_version_uuid)
  AND NOT EXISTS (SELECT 1 FROM run_datasets rd WHERE rd.dataset_version_uuid = v.dataset_version_uuid
                  AND NOT EXISTS (SELECT 1 FROM retention_runs x WHERE x.key = rd.run_uuid));

-- name: collect_retention_edges
-- Edges closed before $1: valid at no time from the horizon on (open edges are current lineage).
INSERT INTO retention_edges (n, key)
SELECT row_number() OVER (), edge_id FROM lineage_edges WHERE valid_to < $1;

-- name: collect_retention_column_edges
-- Column edges closed before $1.
INSERT INTO retention_column_edges (n, key)
SELECT row_number() OVER (), column_edge_id FROM column_lineage WHERE valid_to < $1;

-- name: count_retention_run_rows
-- How many state events and dataset links the candidate runs have (what a dry run reports).
SELECT (SELECT count(*) FROM run_states s JOIN retention_runs x ON x.key = s.run_uuid) AS run_states,
       (SELECT count(*) FROM run_datasets d JOIN retention_runs x ON x.key = d.run_uuid) AS run_datasets;

-- name: delete_retention_runs
-- Deletes the candidate runs numbered ($1, $2], with their state events and dataset links; the
-- candidates are checked again, as an event may have made one current since they were collected.
WITH batch AS (
    SELECT x.key FROM retention_runs x JOIN runs r ON r.run_uuid = x.key
    WHERE x.n > $1 AND x.n <= $2 AND r.updated_at < $3
      AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.latest_run_uuid = r.run_uuid)
), states AS (
    DELETE FROM run_states WHERE run_uuid IN (SELECT key FROM batch) RETURNING 1
), links AS (
    DELETE FROM run_datasets WHERE run_uuid IN (SELECT key FROM batch) RETURNING 1
), gone AS (
    DELETE FROM runs WHERE run_uuid IN (SELECT key FROM batch) RETURNING 1
)
SELECT (SELECT count(*) FROM gone) AS runs, (SELECT count(*) FROM states) AS run_states,
       (SELECT count(*) FROM links) AS run_datasets;

-- name: delete_retention_job_versions
-- Deletes the candidate job versions numbered ($1, $2] that are still not current.
DELETE FROM job_versions v USING retention_job_versions x
WHERE x.n > $1 AND x.n <= $2 AND v.job_version_uuid = x.key
  AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.current_version_uuid = v.job_version_uuid);

-- name: delete_retention_dataset_versions
-- Deletes the candidate dataset versions numbered ($1, $2] that are still not current.
DELETE FROM dataset_versions v USING retention_dataset_versions x
WHERE x.n > $1 AND x.n <= $2 AND v.dataset_version_uuid = x.key
  AND NOT EXISTS (SELECT 1 FROM datasets d WHERE d.current_version_uuid = v.dataset_version_uuid);

-- name: delete_retention_edges
-- Deletes the candidate edges numbered ($1, $2].
DELETE FROM lineage_edges e USING retention_edges x
WHERE x.n > $1 AND x.n <= $2 AND e.edge_id = x.key;

-- name: delete_retention_column_edges
-- Deletes the candidate column edges numbered ($1, $2].
DELETE FROM column_lineage c USING retention_column_edges x
WHERE x.n > $1 AND x.n <= $2 AND c.column_edge_id = x.key;

-- name: count_default_raw_events_before
-- How many events before $1 the default partition of raw_events holds.
SELECT count(*) FROM raw_events_default WHERE event_time < $1;

-- name: delete_default_raw_events_before
-- Deletes up to $2 events before $1 from the default partition of raw_events.
DELETE FROM raw_events_default
WHERE ctid IN (SELECT ctid FROM raw_events_default WHERE event_time < $1 LIMIT $2);
