-- One row per change, written in the ingest transaction that caused it. change_id only grows, so
-- subscribers resume from the last id they saw; NOTIFY 'headwater_changes' carries the new max id.
CREATE TABLE change_log (
    change_id  bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind       text        NOT NULL,
    node_id    text        NOT NULL,
    namespace  text,
    at         timestamptz NOT NULL,
    details    jsonb       NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX change_log_node_idx ON change_log (node_id, change_id);

CREATE TABLE tags (
    tag_uuid    uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    name        text        NOT NULL UNIQUE,
    description text,
    created_at  timestamptz NOT NULL DEFAULT now()
);
