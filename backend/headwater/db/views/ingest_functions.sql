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

-- Whether a report changes a stored dataset or job, which is then rewritten (else it is left as it
-- is: no new row version, no index entries): the report is older than the node, or merging it
-- changes the value its kind reports besides a description (a dataset's source, a job's type), its
-- description or its facets, merged as merge_reported and merge_facets merge them.
CREATE OR REPLACE FUNCTION report_changes_node(stored_created_at timestamptz, reported_created_at timestamptz,
                                               stored_at timestamptz, reported_at timestamptz,
                                               stored_value text, reported_value text,
                                               stored_description text, reported_description text,
                                               stored_facets jsonb, reported_facets jsonb, deleted text[])
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT reported_created_at < stored_created_at
        OR merge_reported(stored_value, stored_at, reported_value, reported_at) IS DISTINCT FROM stored_value
        OR merge_reported(stored_description, stored_at, reported_description, reported_at)
           IS DISTINCT FROM stored_description
        OR merge_facets(stored_facets, stored_at, reported_facets, reported_at, deleted) IS DISTINCT FROM stored_facets
$$;
