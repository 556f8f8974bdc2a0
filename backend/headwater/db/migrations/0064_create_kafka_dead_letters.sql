-- Kafka messages `headwater consume` could not ingest (not JSON, not a valid event, too large, or an
-- event whose write failed on its own): kept here so that their partition goes on and nothing is
-- dropped silently. `headwater dead-letters replay` ingests them again and removes those it stored.
CREATE TABLE kafka_dead_letters (
    dead_letter_id bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    topic          text        NOT NULL,
    "partition"    int         NOT NULL,
    "offset"       bigint      NOT NULL,
    message_key    bytea,
    -- The message as received, cut at a limit (HEADWATER_KAFKA_DEAD_LETTER_MAX_BYTES): a cut one
    -- (payload_size larger than the payload) cannot be replayed.
    payload        bytea,
    payload_size   int         NOT NULL,
    payload_sha256 bytea       NOT NULL,
    -- How the message is read: an OpenLineage event, or a query event of Trino's Kafka listener.
    format         text        NOT NULL CHECK (format IN ('openlineage', 'trino')),
    reason         text        NOT NULL,
    message_time   timestamptz,
    dead_at        timestamptz NOT NULL DEFAULT now(),
    -- A message delivered again (its offset was not committed before a crash) is stored once; a
    -- different message at the same place (the topic re-created) is stored too.
    UNIQUE (topic, "partition", "offset", payload_sha256)
);
CREATE INDEX kafka_dead_letters_dead_at_idx ON kafka_dead_letters (dead_at);
