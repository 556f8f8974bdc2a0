-- name: fetch_latest_change_id
-- The highest change id committed so far (0 when the log is empty).
SELECT coalesce(max(change_id), 0) FROM change_log;

-- name: fetch_changes_after
-- Up to $2 changes with ids above $1, plus the changes with the ids in $3 (ids skipped earlier,
-- looked for again), in id order, with the bounds of this statement's snapshot: every transaction
-- below xmin had ended, none at or above xmax had begun. A change id missing below a later one
-- belongs to a transaction still running, or to one rolled back. The snapshot row comes back even
-- when there are no changes (change_id is then NULL).
WITH snap AS (
    SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS xmin,
           pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS xmax
),
found AS (
    (SELECT * FROM change_log WHERE change_id > $1 ORDER BY change_id LIMIT $2)
    UNION ALL
    SELECT * FROM change_log WHERE change_id = ANY($3::bigint[]) AND change_id <= $1
)
SELECT s.xmin, s.xmax, c.change_id, c.kind, c.node_id, c.namespace, c.at, c.details, c.created_at
FROM snap s
LEFT JOIN found c ON true
ORDER BY c.change_id;

-- name: fetch_changes_between
-- Up to $3 changes with ids above $1 and at most $2, in id order (a subscriber catching up).
SELECT change_id, kind, node_id, namespace, at, details, created_at
FROM change_log
WHERE change_id > $1 AND change_id <= $2
ORDER BY change_id
LIMIT $3;

-- name: fetch_running_xids
-- The ids of the transactions now writing in this database (32-bit xids), and the current
-- snapshot's xmax (64-bit) to widen them with. Run before a read of the log, it tells whether a
-- change id missed by an earlier read can still be committed.
SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS xmax,
       coalesce(array_agg(a.backend_xid::text::bigint) FILTER (WHERE a.backend_xid IS NOT NULL), '{}') AS xids
FROM pg_stat_activity a
WHERE a.datid = (SELECT oid FROM pg_database WHERE datname = current_database());
