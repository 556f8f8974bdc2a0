-- The month partitions of raw_events (re-created after every migrate). A month runs from its first
-- day at 00:00 UTC to the next; its partition is raw_events_YYYY_MM. Partitions are created ahead
-- of need by `serve` and `headwater retention`, and on demand by ingest for a late or early event;
-- raw_events_default takes what no month partition does: events more than a year ahead or more than
-- ten years back (a wrong clock, or a producer sending one event a month of the year 1000, must not
-- make a partition per month of its error), and events of a month whose partition could not be
-- created because the table stayed busy. Its events are moved into their month's partition when
-- that partition is created.

-- Whether the month starting at `month` gets a partition of its own (see above).
CREATE OR REPLACE FUNCTION raw_events_month_partitioned(month timestamptz) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT month <= now() + interval '1 year'
       AND month >= date_trunc('month', now() - interval '10 years', 'UTC')
$$;

CREATE OR REPLACE FUNCTION raw_events_partition_name(month timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT 'raw_events_' || to_char(month AT TIME ZONE 'UTC', 'YYYY_MM')
$$;

-- Creates the partition of the month starting at `month` unless it exists, moving into it the
-- events the default partition holds for that month (a partition cannot be created over rows the
-- default partition has for its range). The caller holds an ACCESS EXCLUSIVE lock on raw_events,
-- so that no other session creates it at the same time. True when it was created here.
CREATE OR REPLACE FUNCTION raw_events_create_partition(month timestamptz) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    name text := raw_events_partition_name(month);
    upper timestamptz := month + interval '1 month';
BEGIN
    IF to_regclass(quote_ident(name)) IS NOT NULL THEN
        RETURN false;
    END IF;
    IF EXISTS (SELECT 1 FROM raw_events_default WHERE event_time >= month AND event_time < upper) THEN
        EXECUTE format('CREATE TABLE %I (LIKE raw_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS '
                       'INCLUDING COMPRESSION)', name);
        EXECUTE format('WITH moved AS (DELETE FROM raw_events_default WHERE event_time >= %L '
                       'AND event_time < %L RETURNING *) INSERT INTO %I SELECT * FROM moved',
                       month, upper, name);
        EXECUTE format('ALTER TABLE raw_events ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)',
                       name, month, upper);
    ELSE
        EXECUTE format('CREATE TABLE %I PARTITION OF raw_events FOR VALUES FROM (%L) TO (%L)',
                       name, month, upper);
    END IF;
    RETURN true;
END
$$;

-- Ingest, before it stores events with these event times: the starts of their months that have a
-- partition, after creating the missing ones it may. Creating a partition locks raw_events until
-- the ingest transaction commits, and waits for the transactions writing to it to end: at most
-- 2 s, during which other ingest queues behind the lock, once per new month. Ingest calls this
-- first in its transaction, holding no lock another session could wait for; a deadlock all the
-- same (another caller) or a wait longer than that sends those events to the default partition
-- this time, and their month is tried again with the next events.
CREATE OR REPLACE FUNCTION raw_events_ensure_partitions(times timestamptz[]) RETURNS timestamptz[]
LANGUAGE plpgsql AS $$
DECLARE
    month timestamptz;
    ready timestamptz[] := '{}';
    locked boolean := false;
    previous text;
BEGIN
    FOR month IN SELECT DISTINCT date_trunc('month', t, 'UTC') FROM unnest(times) AS t LOOP
        IF to_regclass(quote_ident(raw_events_partition_name(month))) IS NOT NULL THEN
            ready := ready || month;
        ELSIF raw_events_month_partitioned(month) THEN
            BEGIN
                IF NOT locked THEN
                    previous := current_setting('lock_timeout');
                    PERFORM set_config('lock_timeout', '2s', true);
                    LOCK TABLE raw_events IN ACCESS EXCLUSIVE MODE;
                    PERFORM set_config('lock_timeout', previous, true);
                    locked := true;
                END IF;
                PERFORM raw_events_create_partition(month);
                ready := ready || month;
            -- The block's changes are undone, the lock_timeout set above with them.
            EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
                NULL;
            END;
        END IF;
    END LOOP;
    RETURN ready;
END
$$;
