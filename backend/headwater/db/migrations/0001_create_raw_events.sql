-- Every accepted OpenLineage event exactly as received. Append-only: the model tables are derived
-- from it and can be rebuilt from it. content_hash (SHA-256 of the event with sorted keys) makes
-- retried deliveries of the same event a no-op.
CREATE TABLE raw_events (
    raw_event_id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    content_hash   bytea       NOT NULL UNIQUE,
    event_kind     text        NOT NULL CHECK (event_kind IN ('RUN', 'DATASET', 'JOB')),
    event_type     text,
    event_time     timestamptz NOT NULL,
    run_uuid       uuid,
    job_namespace  text,
    job_name       text,
    producer       text,
    received_at    timestamptz NOT NULL DEFAULT now(),
    payload        jsonb       NOT NULL
);

CREATE INDEX raw_events_run_uuid_idx ON raw_events (run_uuid) WHERE run_uuid IS NOT NULL;
CREATE INDEX raw_events_event_time_idx ON raw_events (event_time);
