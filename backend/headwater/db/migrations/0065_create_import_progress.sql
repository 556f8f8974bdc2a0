-- How far `headwater import marquez` has come for a source and time bounds: the event_time of the
-- last batch committed, written in that batch's transaction, so an interrupted import resumes there.
CREATE TABLE import_progress (
    source     text        NOT NULL,  -- the source URL without its password
    since      timestamptz NOT NULL,  -- '-infinity' when unbounded
    until      timestamptz NOT NULL,  -- 'infinity' when unbounded
    reached    timestamptz NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (source, since, until)
);
