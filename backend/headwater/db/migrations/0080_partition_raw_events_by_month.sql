-- raw_events becomes a table partitioned by month of event time, so that retention drops a month of
-- events at once (DROP of a partition) instead of deleting millions of rows, and so that reads of a
-- time window only touch its months. Partitions are named raw_events_YYYY_MM; raw_events_default
-- catches an event no month partition takes (see views/raw_event_partitions.sql).
--
-- This rewrites the whole table: the events are moved in batches of 10,000, each batch deleted from
-- the old table and inserted into the new one in one transaction, so that no event is ever in both
-- or in neither, and an interrupted run resumes with the events left. raw_event_id is kept (the
-- Spark backfill and export read by id ranges). The key of idempotency becomes the content hash
-- with the event time: a partitioned table's unique keys must hold its partition key, and the same
-- content always has the same event time, so this key refuses exactly what the old one did.

DO $$
DECLARE
    month timestamptz;
    name text;
BEGIN
    -- Set up once: a run resumed after the setup finds raw_events already partitioned.
    IF (SELECT relkind FROM pg_class WHERE oid = 'raw_events'::regclass) = 'r' THEN
        ALTER TABLE raw_events RENAME TO raw_events_unpartitioned;
        ALTER INDEX raw_events_pkey RENAME TO raw_events_unpartitioned_pkey;
        ALTER INDEX raw_events_content_hash_key RENAME TO raw_events_unpartitioned_content_hash_key;
        ALTER INDEX raw_events_run_uuid_idx RENAME TO raw_events_unpartitioned_run_uuid_idx;
        ALTER INDEX raw_events_event_time_type_idx RENAME TO raw_events_unpartitioned_event_time_type_idx;
        ALTER SEQUENCE raw_events_raw_event_id_seq RENAME TO raw_events_unpartitioned_raw_event_id_seq;

        CREATE TABLE raw_events (
            raw_event_id   bigint GENERATED ALWAYS AS IDENTITY,
            content_hash   bytea       NOT NULL,
            event_kind     text        NOT NULL CHECK (event_kind IN ('RUN', 'DATASET', 'JOB')),
            event_type     text,
            event_time     timestamptz NOT NULL,
            run_uuid       uuid,
            job_namespace  text,
            job_name       text,
            producer       text,
            received_at    timestamptz NOT NULL DEFAULT now(),
            payload        jsonb       NOT NULL,
            PRIMARY KEY (raw_event_id, event_time),
            UNIQUE (content_hash, event_time)
        ) PARTITION BY RANGE (event_time);
        CREATE INDEX raw_events_run_uuid_idx ON raw_events (run_uuid) WHERE run_uuid IS NOT NULL;
        CREATE INDEX raw_events_event_time_type_idx ON raw_events (event_time) INCLUDE (event_type);
        -- As 0061 did for the old table; partitions take their parent's compression.
        BEGIN
            ALTER TABLE raw_events ALTER COLUMN payload SET COMPRESSION lz4;
        EXCEPTION WHEN feature_not_supported THEN
            RAISE NOTICE 'LZ4 is not available: raw event payloads stay compressed with pglz';
        END;
        CREATE TABLE raw_events_default PARTITION OF raw_events DEFAULT;
    END IF;

    -- A partition for every month the old table has events in (it has an index on event_time),
    -- but those more than a year ahead, which go to the default partition as at ingest; and for
    -- this month and the next three, so that ingest finds them ready.
    FOR month IN
        SELECT DISTINCT date_trunc('month', event_time, 'UTC') FROM raw_events_unpartitioned
        WHERE event_time <= now() + interval '1 year'
        UNION
        SELECT date_trunc('month', now(), 'UTC') + make_interval(months => ahead)
        FROM generate_series(0, 3) ahead
    LOOP
        name := 'raw_events_' || to_char(month AT TIME ZONE 'UTC', 'YYYY_MM');
        IF to_regclass(quote_ident(name)) IS NULL THEN
            EXECUTE format('CREATE TABLE %I PARTITION OF raw_events FOR VALUES FROM (%L) TO (%L)',
                           name, month, month + interval '1 month');
        END IF;
    END LOOP;
END
$$;

-- migrate:batch
WITH moved AS (
    DELETE FROM raw_events_unpartitioned
    WHERE raw_event_id IN (SELECT raw_event_id FROM raw_events_unpartitioned
                           ORDER BY raw_event_id LIMIT 10000)
    RETURNING *
)
INSERT INTO raw_events (raw_event_id, content_hash, event_kind, event_type, event_time, run_uuid,
                        job_namespace, job_name, producer, received_at, payload)
OVERRIDING SYSTEM VALUE
SELECT raw_event_id, content_hash, event_kind, event_type, event_time, run_uuid,
       job_namespace, job_name, producer, received_at, payload
FROM moved;

-- migrate:finish
DROP TABLE raw_events_unpartitioned;
-- New events are numbered after the moved ones.
SELECT setval(pg_get_serial_sequence('raw_events', 'raw_event_id'),
              coalesce((SELECT max(raw_event_id) FROM raw_events), 0) + 1, false);
