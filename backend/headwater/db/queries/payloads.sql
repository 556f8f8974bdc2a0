-- Raw event payloads' zstd dictionaries (store/payloads.py; migration 0095).

-- name: fetch_payload_dictionaries
-- The dictionaries with the ids $1, as frames name them.
SELECT dictionary_id, created_at, dictionary FROM payload_dictionaries WHERE dictionary_id = ANY($1::bigint[]);

-- name: fetch_newest_payload_dictionary_id
SELECT max(dictionary_id) FROM payload_dictionaries;

-- name: payload_dictionary_due
-- Whether a dictionary is due: none yet, or the newest made before $1.
SELECT coalesce((SELECT created_at < $1 FROM payload_dictionaries ORDER BY dictionary_id DESC LIMIT 1), true);

-- name: fetch_latest_payloads
-- The latest $1 stored events' payloads (one of the two columns is set): what a dictionary is
-- trained on.
SELECT payload, payload_zstd FROM raw_events ORDER BY raw_event_id DESC LIMIT $1;

-- name: next_payload_dictionary_id
SELECT nextval('payload_dictionary_ids');

-- name: insert_payload_dictionary
INSERT INTO payload_dictionaries (dictionary_id, dictionary, samples) VALUES ($1, $2, $3);

-- name: try_lock_payload_training
-- One trainer at a time, in every process (any fixed number, other than the other advisory locks').
SELECT pg_try_advisory_lock(x'48454144'::int, x'5a535444'::int);

-- name: unlock_payload_training
SELECT pg_advisory_unlock(x'48454144'::int, x'5a535444'::int);
