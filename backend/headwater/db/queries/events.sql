-- name: insert_raw_events
-- Stores events in the order given; an event whose content hash is already stored (or given twice)
-- is skipped. The same content always has the same event time, so the key (content_hash,
-- event_time) finds a stored copy in the one month partition it can be in. Returns the content
-- hash and new raw_event_id of each event stored. The payload is the event's JSON as ingest encoded
-- it, compressed by store/payloads.py (see migration 0095).
INSERT INTO raw_events (content_hash, event_kind, event_type, event_time, run_uuid, job_namespace, job_name,
                        producer, payload_zstd)
SELECT h, k, et, at, run, ns, nm, p, z FROM unnest($1::bytea[], $2::text[], $3::text[], $4::timestamptz[], $5::uuid[], $6::text[], $7::text[],
                     $8::text[], $9::bytea[]) WITH ORDINALITY AS t(h, k, et, at, run, ns, nm, p, z, ord)
ORDER BY ord
ON CONFLICT (content_hash, event_time) DO NOTHING
RETURNING content_hash, raw_event_id;

-- name: ensure_raw_event_partitions
-- The starts of the months of event times $1 (as text: asyncpg would send 0001-01-01T00:00Z, the
-- first month's start, as -infinity) that have a partition of raw_events, after creating those it
-- can (views/raw_event_partitions.sql).
SELECT raw_events_ensure_partitions($1::text[]::timestamptz[]);

-- name: fetch_raw_event_partitions
-- The month partitions of raw_events, oldest first: name, first instant and end (exclusive).
SELECT c.relname AS name, b.month AS starts, b.month + interval '1 month' AS ends
FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
CROSS JOIN LATERAL (
    SELECT make_timestamptz(substr(c.relname, 12, 4)::int, substr(c.relname, 17, 2)::int, 1, 0, 0, 0, 'UTC')
           AS month
) b
WHERE i.inhparent = 'raw_events'::regclass AND c.relname ~ '^raw_events_[0-9]{4}_[0-9]{2}$'
ORDER BY b.month;

-- name: fetch_missing_raw_event_partitions
-- Starts of the months that should have a partition and have none: this month and the next $1,
-- and the months of the events the default partition holds (unless too far ahead or back: see
-- raw_events_month_partitioned).
SELECT m AS month
FROM (SELECT date_trunc('month', now(), 'UTC') + make_interval(months => ahead) AS m
      FROM generate_series(0, $1::int) AS ahead
      UNION
      SELECT DISTINCT date_trunc('month', event_time, 'UTC') FROM raw_events_default) months
WHERE raw_events_month_partitioned(m) AND to_regclass(quote_ident(raw_events_partition_name(m))) IS NULL
ORDER BY m;

-- name: create_raw_event_partition
-- Creates the partition of the month starting at $1 (as text, as above; the caller holds the
-- table's lock); true when it was created here, false when it existed.
SELECT raw_events_create_partition($1::text::timestamptz);

-- name: begin_ingest_writes
-- Ingest transactions of every process (server workers, consumers, imports) take turns: groups
-- that share rows (a parent job, a popular dataset) would otherwise lock them in different orders
-- and deadlock; what runs outside the database (HTTP, validation, SQL parsing) still runs in
-- parallel. Held until the transaction ends.
-- Ingest's statements then plan once per connection (a generic plan, reused by every transaction),
-- unlike every other statement of the connection (see headwater.db.pool), and never by a sequential
-- scan. Their lookups are keyed (unique keys, fenced LATERAL probes of an index), so the plan built
-- for the first transaction, on tables still empty, is the one they need at any size; without
-- sequential scans a generic plan cannot bet on a table staying small. Planning a custom plan per
-- execution cost as much as running the statement: with `auto`, statements over unnest() of their
-- arrays were re-planned every time (their custom estimates beat the generic one), 24 % of
-- PostgreSQL's time with 32 clients. Measured side by side (write path alone, groups of 16, 30,000
-- events from an empty store): 341 falling to 218 events/s with custom plans, 433 to 459 with these.
-- Never JIT, whatever the connection's settings: the estimates of these statements of many CTEs
-- cross jit_above_cost, and compiling them tripled ingest's PostgreSQL CPU per event on a connection
-- that allowed it. All for the transaction only.
-- Returns the newest payload dictionary (id and creation time): the one the transaction's payloads
-- are compressed against (store/payloads.py).
SELECT pg_advisory_xact_lock(hashtext('headwater.ingest')),
       set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_seqscan', 'off', true),
       set_config('jit', 'off', true), d.dictionary_id, d.created_at
FROM (SELECT 1) one
LEFT JOIN LATERAL (SELECT dictionary_id, created_at FROM payload_dictionaries
                   ORDER BY dictionary_id DESC LIMIT 1) d ON true;

-- name: visit_rewritten_rows
-- Reads the runs ($1) and jobs ($2, $3: namespace and name) the process's previous ingest
-- transaction wrote, now that it has committed. PostgreSQL prunes a page as a scan reads it once the
-- page is short of room, so the old versions those writes left are reclaimed now instead of staying
-- until VACUUM, which they did: runs are appended and the runs of a page often complete in one
-- transaction, and a job's page is written by the run that completes and then not read until its
-- next run; nothing else visited those pages. Each count reads a column outside the index, so that
-- the heap is read where an index-only scan would not.
SELECT (SELECT count(r.updated_at) FROM runs r WHERE r.run_uuid = ANY($1::uuid[]))
     + (SELECT count(j.updated_at) FROM unnest($2::text[], $3::text[]) AS t(namespace, name)
            JOIN jobs j ON j.namespace = t.namespace AND j.name = t.name);
