-- How ingest merges what an event reports into what is stored, the same way for datasets, jobs and
-- runs. Plain SQL functions: PostgreSQL inlines them into the statements that call them.

-- A single value reported at a time: the later report wins, and a null never erases a value.
CREATE OR REPLACE FUNCTION merge_reported(stored anyelement, stored_at timestamptz, reported anyelement,
                                          reported_at timestamptz)
RETURNS anyelement LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN stored_at <= reported_at THEN coalesce(reported, stored) ELSE coalesce(stored, reported) END
$$;

-- Facets reported at a time: merged per key, the later report winning; `deleted` (the `_deleted`
-- facets of the report) removes keys, unless the stored facets are later than the report.
CREATE OR REPLACE FUNCTION merge_facets(stored jsonb, stored_at timestamptz, reported jsonb,
                                        reported_at timestamptz, deleted text[])
RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN stored_at <= reported_at THEN (stored || reported) - coalesce(deleted, ARRAY[]::text[])
                ELSE reported || stored END
$$;
