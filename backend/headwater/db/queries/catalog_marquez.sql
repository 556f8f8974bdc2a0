-- What Marquez's REST API shows beside the catalog: column lineage of datasets, the raw event
-- list, and the dashboard's counts.

-- name: fetch_column_inputs_by_datasets
-- The input fields of each field of datasets ($1), from current column lineage: one row per
-- (field, input field), by field then input.
SELECT DISTINCT ON (c.output_dataset_uuid, c.output_field, i.namespace, i.name, c.input_field)
       c.output_dataset_uuid AS dataset_uuid, c.output_field AS field, i.namespace, i.name AS dataset,
       c.input_field, c.transformation_type, c.description
FROM column_lineage_confirmed c JOIN datasets i ON i.dataset_uuid = c.input_dataset_uuid
WHERE c.output_dataset_uuid = ANY($1::uuid[]) AND c.valid_to IS NULL
ORDER BY c.output_dataset_uuid, c.output_field, i.namespace, i.name, c.input_field,
         c.derived, c.last_seen_at DESC;

-- name: page_raw_events
-- Stored events with eventTime in [$1, $2), newest first unless $3 ('asc'): $4 rows after $5.
SELECT e.payload, e.payload_zstd
FROM raw_events e
WHERE e.event_time >= $1 AND e.event_time < $2
ORDER BY CASE WHEN $3 = 'asc' THEN e.event_time END,
         CASE WHEN $3 <> 'asc' THEN e.event_time END DESC,
         e.raw_event_id
LIMIT $4 OFFSET $5;

-- name: count_raw_events
-- How many stored events have eventTime in [$1, $2) (an index-only scan of the window).
SELECT count(*) FROM raw_events e WHERE e.event_time >= $1 AND e.event_time < $2;

-- name: count_events_by_type
-- Run events by eventType in each bucket of $2 ('hour' or 'day', in time zone $3) from $1 for $4
-- buckets, oldest first; buckets without events count 0.
WITH buckets AS (
    SELECT b AS start_local
    FROM generate_series(date_trunc($2, $1::timestamptz AT TIME ZONE $3),
                         date_trunc($2, $1::timestamptz AT TIME ZONE $3) + ($4 - 1) * ('1 ' || $2)::interval,
                         ('1 ' || $2)::interval) b
), counted AS (
    SELECT date_trunc($2, e.event_time AT TIME ZONE $3) AS start_local,
           count(*) FILTER (WHERE e.event_type = 'FAIL') AS fail,
           count(*) FILTER (WHERE e.event_type = 'START') AS start,
           count(*) FILTER (WHERE e.event_type = 'COMPLETE') AS complete,
           count(*) FILTER (WHERE e.event_type = 'ABORT') AS abort
    FROM raw_events e
    WHERE e.event_time >= (SELECT min(start_local) FROM buckets) AT TIME ZONE $3
    GROUP BY 1
)
SELECT b.start_local AT TIME ZONE $3 AS start_interval,
       (b.start_local + ('1 ' || $2)::interval) AT TIME ZONE $3 AS end_interval,
       coalesce(c.fail, 0) AS fail, coalesce(c.start, 0) AS start,
       coalesce(c.complete, 0) AS complete, coalesce(c.abort, 0) AS abort
FROM buckets b LEFT JOIN counted c USING (start_local)
ORDER BY b.start_local;

-- name: count_created
-- How many datasets, jobs or sources ($5) existed at the end of each bucket of $2 ('hour' or
-- 'day', in time zone $3) from $1 for $4 buckets, oldest first (Marquez's cumulative counts).
WITH buckets AS (
    SELECT b AS start_local
    FROM generate_series(date_trunc($2, $1::timestamptz AT TIME ZONE $3),
                         date_trunc($2, $1::timestamptz AT TIME ZONE $3) + ($4 - 1) * ('1 ' || $2)::interval,
                         ('1 ' || $2)::interval) b
), created AS (
    SELECT d.created_at FROM datasets d WHERE $5 = 'datasets'
    UNION ALL SELECT j.created_at FROM jobs j WHERE $5 = 'jobs'
    UNION ALL SELECT s.created_at FROM sources s WHERE $5 = 'sources'
), before AS (
    SELECT count(*) AS n FROM created WHERE created_at < (SELECT min(start_local) FROM buckets) AT TIME ZONE $3
), counted AS (
    SELECT date_trunc($2, c.created_at AT TIME ZONE $3) AS start_local, count(*) AS n
    FROM created c WHERE c.created_at >= (SELECT min(start_local) FROM buckets) AT TIME ZONE $3
    GROUP BY 1
)
SELECT b.start_local AT TIME ZONE $3 AS start_interval,
       (b.start_local + ('1 ' || $2)::interval) AT TIME ZONE $3 AS end_interval,
       (SELECT n FROM before) + sum(coalesce(c.n, 0)) OVER (ORDER BY b.start_local) AS count
FROM buckets b LEFT JOIN counted c USING (start_local)
ORDER BY b.start_local;

-- name: page_jobs_by_last_run_state
-- Jobs (not deleted) of every namespace whose latest run is in one of the states $1 (run states
-- as stored; NULL for a job without runs or a run without state), by (namespace, name): $2 rows
-- after skipping $3.
SELECT n.* FROM catalog_nodes('JOB') n LEFT JOIN runs r ON r.run_uuid = n.latest_run_uuid
WHERE n.deleted_at IS NULL AND coalesce(r.current_state, 'OTHER') = ANY($1::text[])
ORDER BY n.namespace, n.name
LIMIT $2 OFFSET $3;

-- name: count_jobs_by_last_run_state
-- How many jobs page_jobs_by_last_run_state matches in all.
SELECT count(*) FROM catalog_nodes('JOB') n LEFT JOIN runs r ON r.run_uuid = n.latest_run_uuid
WHERE n.deleted_at IS NULL AND coalesce(r.current_state, 'OTHER') = ANY($1::text[]);
