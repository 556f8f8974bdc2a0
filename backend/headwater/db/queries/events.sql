-- name: insert_raw_events
-- Stores events in the order given; an event whose content hash is already stored (or given twice)
-- is skipped. Returns the content hash and new raw_event_id of each event stored.
INSERT INTO raw_events (content_hash, event_kind, event_type, event_time, run_uuid, job_namespace, job_name,
                        producer, payload)
SELECT h, k, et, at, run, ns, nm, p, payload FROM unnest($1::bytea[], $2::text[], $3::text[], $4::timestamptz[], $5::uuid[], $6::text[], $7::text[],
                     $8::text[], $9::jsonb[]) WITH ORDINALITY AS t(h, k, et, at, run, ns, nm, p, payload, ord)
ORDER BY ord
ON CONFLICT (content_hash) DO NOTHING
RETURNING content_hash, raw_event_id;
