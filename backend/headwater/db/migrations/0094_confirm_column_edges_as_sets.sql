-- A job's column lineage into one output is confirmed as a whole. Every run of a job reports the
-- same column edges again, and each new run rewrote each of them (last_seen_at, last_run_uuid): on
-- the ingest benchmark, four rewrites of each of its 5,796 column edges, the largest share of the
-- rows ingest wrote. Now the edges a job's event reports for one output (producer-reported or
-- derived) form a set, named by a hash of the edges with everything stored of them; the set's row
-- records the latest confirmation of all its edges at once, and an event reporting the same set
-- again, no earlier than any of its edges was first seen, changes at most that one row instead of
-- every edge.
--
-- A column edge is a member of its set while it is open and carries the set's hash (set_hash). A
-- set is whole when each of its edges was last confirmed as the set was (all written by one event,
-- or confirmed since as a whole); only a whole set is confirmed as a whole, and an edge's
-- confirmation (``column_lineage_confirmed``) is its whole set's when that is later, else its own.
-- Edges written before this migration belong to no set (set_hash NULL) and keep their own
-- confirmation until an event reports them again.
CREATE TABLE column_edge_sets (
    job_uuid uuid NOT NULL,
    output_dataset_uuid uuid NOT NULL,
    derived boolean NOT NULL,
    set_hash bigint NOT NULL,
    whole boolean NOT NULL,
    -- The latest first sighting of any of its edges: an event before it may move one earlier, and
    -- is written edge by edge.
    latest_first_seen_at timestamptz NOT NULL,
    -- The latest confirmation of the whole set, and the run that made it.
    last_seen_at timestamptz NOT NULL,
    last_run_uuid uuid,
    PRIMARY KEY (job_uuid, output_dataset_uuid, derived)
) WITH (fillfactor = 60);

ALTER TABLE column_lineage ADD COLUMN set_hash bigint;

-- Column edges with their latest confirmation (last_seen_at, last_run_uuid): an open edge that is a
-- member of a whole set (column_edge_sets: same job, output, derived, and the set's hash) takes the
-- set's confirmation when the set was confirmed later; otherwise, and once closed, the edge's own. Readers of when an edge was last seen read it here, not from column_lineage.
CREATE VIEW column_lineage_confirmed AS
SELECT c.column_edge_id, c.output_dataset_uuid, c.output_field, c.input_dataset_uuid, c.input_field, c.job_uuid,
       c.transformation_type, c.transformation_subtype, c.description, c.masking, c.derived, c.superseded,
       c.first_seen_at, c.valid_from, c.valid_to,
       CASE WHEN s.last_seen_at > c.last_seen_at THEN s.last_seen_at ELSE c.last_seen_at END AS last_seen_at,
       CASE WHEN s.last_seen_at > c.last_seen_at THEN s.last_run_uuid ELSE c.last_run_uuid END AS last_run_uuid
FROM column_lineage c
LEFT JOIN column_edge_sets s
       ON c.valid_to IS NULL AND s.job_uuid = c.job_uuid AND s.output_dataset_uuid = c.output_dataset_uuid
      AND s.derived = c.derived AND s.set_hash = c.set_hash AND s.whole;
