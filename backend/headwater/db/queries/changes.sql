-- name: insert_changes
-- Appends changes to the change log and wakes every listening server (NOTIFY is delivered at
-- commit, so subscribers never see a change before it is committed). Returns the new ids.
WITH inserted AS (
    INSERT INTO change_log (kind, node_id, namespace, at, details)
    SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::jsonb[])
    RETURNING change_id
)
SELECT pg_notify('headwater_changes', max(change_id)::text) AS notified, array_agg(change_id) AS change_ids
FROM inserted;
