-- Raw event payloads are compressed by Headwater itself, with zstd and a dictionary trained on the
-- database's own events (store/payloads.py), instead of by PostgreSQL's TOAST compression. Events
-- of one integration repeat the same keys, facet schemas and producer URLs: PostgreSQL compresses
-- each payload on its own (LZ4: 1,178 bytes for a 4.3 KB Spark event of the ingest benchmark), zstd
-- with a dictionary of what events share stores the same payload in about 150. The raw event is
-- then no longer the largest part of what an event costs to keep.
--
-- A payload is in exactly one of two columns: payload (text, as stored before this migration) or
-- payload_zstd (a zstd frame naming its dictionary by id, or none). Rows stored before keep their
-- text: nothing is rewritten, so this runs in an instant on any size of table; retention removes
-- them with their months. Readers decode either (store/payloads.py). The frames are not compressed
-- again by PostgreSQL (STORAGE EXTERNAL).
CREATE TABLE payload_dictionaries (
    dictionary_id bigint PRIMARY KEY,
    dictionary bytea NOT NULL,
    samples integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- zstd keeps dictionary ids below 32,768 for registered dictionaries; a frame carries the id of the
-- dictionary it was made with, and reading it looks the dictionary up by that id.
CREATE SEQUENCE payload_dictionary_ids AS bigint START WITH 32768 MAXVALUE 4294967295;

ALTER TABLE raw_events ALTER COLUMN payload DROP NOT NULL;
ALTER TABLE raw_events ADD COLUMN payload_zstd bytea;
ALTER TABLE raw_events ALTER COLUMN payload_zstd SET STORAGE EXTERNAL;
