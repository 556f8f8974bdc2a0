-- raw_events.payload becomes text: the event's JSON exactly as ingest encoded it, instead of jsonb.
-- The raw event is kept for replay, export and audit, and read by field only for a few rows at a
-- time (a run's code, the export's namespace filter), which cast it to jsonb then. Parsing every
-- event into jsonb cost PostgreSQL CPU at each insert, and jsonb is the larger of the two: the
-- ingest benchmark's 5,000 events took 1,630 B/event as jsonb with lz4 (as stored until now), and as
-- text 1,181 B/event with pglz against 1,211 B with lz4 (table with its TOAST, the same rows). pglz
-- is the smaller, so the column is compressed with pglz whatever default_toast_compression says; it
-- costs PostgreSQL about 11 ms more per 1,000 events to compress than lz4 (34 against 23 ms to
-- insert them as text, timed from the client; 45 ms as jsonb with lz4). The content hash is taken of the event with sorted keys, apart
-- from this column, and does not change. Events stored before keep the text jsonb gives them (its
-- key order and spacing): what every reader of the column has been given for them until now.
--
-- A column's type cannot change in place without rewriting every partition under one lock on the
-- whole table, and a text column added beside the jsonb one and filled by updates would leave the
-- jsonb values in the rows (a dropped column's values stay until a row is rewritten) and a dead
-- version of every row: the table would end larger than it began. So the events are moved, as
-- 0080 moved them into partitions: the partitioned table, its partitions and their indexes are
-- renamed raw_events_jsonb*, a new raw_events gets the same partitions (same names and bounds) with
-- a text payload, and each batch moves up to 10,000 events of one old partition, deleted from it
-- and inserted into the new table in one transaction, so that no event is ever in both or in
-- neither, and an interrupted run resumes with the events left. An old partition is dropped as
-- soon as it is empty, so the free disk this needs is about one month's events, not the table's.
-- raw_event_id is kept (the Spark backfill and export read by id ranges). An empty table (a new
-- database) just changes type.

DO $$
DECLARE
    part record;
    rel record;
BEGIN
    -- Set up once: a run resumed after the setup finds payload already text.
    IF (SELECT atttypid FROM pg_attribute WHERE attrelid = 'raw_events'::regclass AND attname = 'payload')
       <> 'jsonb'::regtype THEN
        RETURN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM raw_events) THEN
        ALTER TABLE raw_events ALTER COLUMN payload TYPE text USING payload::text;
        -- A change of type forgets the compression, and setting it does not reach the partitions.
        FOR rel IN SELECT relid::regclass AS name FROM pg_partition_tree('raw_events') LOOP
            EXECUTE format('ALTER TABLE %s ALTER COLUMN payload SET COMPRESSION pglz', rel.name);
        END LOOP;
        RETURN;
    END IF;

    -- The old table, its partitions, their indexes and the id sequence: raw_events* -> raw_events_jsonb*.
    FOR rel IN
        SELECT c.oid::regclass AS name, c.relname, true AS is_index
        FROM pg_partition_tree('raw_events') t
        JOIN pg_index x ON x.indrelid = t.relid
        JOIN pg_class c ON c.oid = x.indexrelid
        UNION ALL
        SELECT c.oid::regclass, c.relname, false
        FROM pg_partition_tree('raw_events') t
        JOIN pg_class c ON c.oid = t.relid
    LOOP
        EXECUTE format('ALTER %s %s RENAME TO %I', CASE WHEN rel.is_index THEN 'INDEX' ELSE 'TABLE' END,
                       rel.name, 'raw_events_jsonb' || substr(rel.relname, length('raw_events') + 1));
    END LOOP;
    ALTER SEQUENCE raw_events_raw_event_id_seq RENAME TO raw_events_jsonb_raw_event_id_seq;

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
        payload        text        COMPRESSION pglz NOT NULL,
        PRIMARY KEY (raw_event_id, event_time),
        UNIQUE (content_hash, event_time)
    ) PARTITION BY RANGE (event_time);
    CREATE INDEX raw_events_run_uuid_idx ON raw_events (run_uuid) WHERE run_uuid IS NOT NULL;
    CREATE INDEX raw_events_event_time_type_idx ON raw_events (event_time) INCLUDE (event_type);

    -- The same partitions, under the names they had.
    FOR part IN
        SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'raw_events_jsonb'::regclass
    LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF raw_events %s',
                       'raw_events' || substr(part.relname, length('raw_events_jsonb') + 1), part.bound);
    END LOOP;

    -- Events stored meanwhile are numbered after the old ones, and no number is given twice.
    PERFORM setval(pg_get_serial_sequence('raw_events', 'raw_event_id'),
                   greatest((SELECT max(raw_event_id) + 1 FROM raw_events_jsonb),
                            (SELECT last_value + is_called::int FROM raw_events_jsonb_raw_event_id_seq)),
                   false);
END
$$;

-- Moves up to `size` events of the first old partition that has any (its oldest ids first, found
-- by its primary key and deleted by their row addresses: each batch reads only its own rows), and
-- drops that partition once it is empty, giving its space back. Returns how many were moved.
CREATE OR REPLACE FUNCTION raw_events_move_jsonb_batch(size int) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    part regclass;
    moved bigint;
    empty boolean;
BEGIN
    IF to_regclass('raw_events_jsonb') IS NULL THEN
        RETURN 0;
    END IF;
    FOR part IN
        SELECT i.inhrelid::regclass FROM pg_inherits i
        WHERE i.inhparent = 'raw_events_jsonb'::regclass ORDER BY i.inhrelid::regclass::text
    LOOP
        EXECUTE format($move$
            WITH moved AS (
                DELETE FROM %1$s
                WHERE ctid = ANY (ARRAY(SELECT ctid FROM %1$s ORDER BY raw_event_id LIMIT %2$s))
                RETURNING *
            )
            INSERT INTO raw_events (raw_event_id, content_hash, event_kind, event_type, event_time,
                                    run_uuid, job_namespace, job_name, producer, received_at, payload)
            OVERRIDING SYSTEM VALUE
            SELECT raw_event_id, content_hash, event_kind, event_type, event_time,
                   run_uuid, job_namespace, job_name, producer, received_at, payload::text
            FROM moved
        $move$, part, size);
        GET DIAGNOSTICS moved = ROW_COUNT;
        IF moved < size THEN
            EXECUTE format('SELECT NOT EXISTS (SELECT 1 FROM %s)', part) INTO empty;
            IF empty THEN
                EXECUTE format('DROP TABLE %s', part);
            END IF;
        END IF;
        IF moved > 0 THEN
            RETURN moved;
        END IF;
    END LOOP;
    RETURN 0;
END
$$;

-- migrate:batch
-- One row per event moved: the runner counts the rows, and stops at a batch of none.
SELECT 1 FROM raw_events_move_jsonb_batch(10000) AS moved, generate_series(1, moved);

-- migrate:finish
DO $$
BEGIN
    IF to_regclass('raw_events_jsonb') IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM raw_events_jsonb) THEN
            RAISE EXCEPTION 'raw_events_jsonb still holds events that were not moved';
        END IF;
        DROP TABLE raw_events_jsonb;
    END IF;
END
$$;
DROP FUNCTION raw_events_move_jsonb_batch(int);
