-- name: insert_raw_event
-- The new raw_event_id, or no row when an event with the same content hash is already stored.
INSERT INTO raw_events (content_hash, event_kind, event_type, event_time, run_uuid, job_namespace, job_name,
                        producer, payload)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (content_hash) DO NOTHING
RETURNING raw_event_id;
