-- name: fetch_code_of_runs
-- The stored events of runs $1, latest first per run, with their payloads: store/job_code.py reads
-- the SQL or source code each reported (payloads are compressed: see store/payloads.py).
SELECT e.run_uuid, e.payload, e.payload_zstd
FROM raw_events e
WHERE e.run_uuid = ANY($1::uuid[])
ORDER BY e.run_uuid, e.event_time DESC, e.raw_event_id DESC;
