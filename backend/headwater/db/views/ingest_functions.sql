-- How ingest merges what an event reports into what is stored, the same way for datasets, jobs and
-- runs. Plain SQL functions: PostgreSQL inlines them into the statements that call them.

-- Earlier forms, which took the `_deleted` facets of a report (now removed by their own statement).
DROP FUNCTION IF EXISTS merge_facets(jsonb, timestamptz, jsonb, timestamptz, text[]);
DROP FUNCTION IF EXISTS report_changes_node(timestamptz, timestamptz, timestamptz, timestamptz, text, text,
                                            text, text, jsonb, jsonb, text[]);

-- A single value reported at a time: the later report wins, and a null never erases a value.
CREATE OR REPLACE FUNCTION merge_reported(stored anyelement, stored_at timestamptz, reported anyelement,
                                          reported_at timestamptz)
RETURNS anyelement LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN stored_at <= reported_at THEN coalesce(reported, stored) ELSE coalesce(stored, reported) END
$$;

-- Facets reported at a time: merged per key, the later report winning.
CREATE OR REPLACE FUNCTION merge_facets(stored jsonb, stored_at timestamptz, reported jsonb,
                                        reported_at timestamptz)
RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN stored_at <= reported_at THEN stored || reported ELSE reported || stored END
$$;

-- Whether a report changes a stored dataset or job, which is then rewritten (else it is left as it
-- is: no new row version, no index entries): the report is older than the node, or merging it
-- changes the value its kind reports besides a description (a dataset's source, a job's type), its
-- description or its facets, merged as merge_reported and merge_facets merge them.
CREATE OR REPLACE FUNCTION report_changes_node(stored_created_at timestamptz, reported_created_at timestamptz,
                                               stored_at timestamptz, reported_at timestamptz,
                                               stored_value text, reported_value text,
                                               stored_description text, reported_description text,
                                               stored_facets jsonb, reported_facets jsonb)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT reported_created_at < stored_created_at
        OR merge_reported(stored_value, stored_at, reported_value, reported_at) IS DISTINCT FROM stored_value
        OR merge_reported(stored_description, stored_at, reported_description, reported_at)
           IS DISTINCT FROM stored_description
        OR merge_facets(stored_facets, stored_at, reported_facets, reported_at) IS DISTINCT FROM stored_facets
$$;

-- The catalog shape datasets and jobs share, for their upserts: ``node`` is the stored row and
-- ``reported`` the row the upsert would have inserted (EXCLUDED), of either table; the value only
-- one kind reports (a dataset's source, a job's type) is passed beside them. Taking whole rows, the
-- functions are polymorphic, and PostgreSQL, inlining them, reads each field as a plain column.

-- Whether the report changes the stored node (report_changes_node).
CREATE OR REPLACE FUNCTION node_report_changes(node anyelement, reported anyelement, stored_value text,
                                               reported_value text)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT report_changes_node((node).created_at, (reported).created_at, (node).facets_at, (reported).facets_at,
                               stored_value, reported_value, (node).description, (reported).description,
                               (node).facets, (reported).facets)
$$;

-- The node's description, facets and times once the report is merged in.
CREATE OR REPLACE FUNCTION merged_node_report(node anyelement, reported anyelement)
RETURNS TABLE (description text, facets jsonb, facets_at timestamptz, updated_at timestamptz,
               created_at timestamptz)
LANGUAGE sql IMMUTABLE AS $$
    SELECT merge_reported((node).description, (node).facets_at, (reported).description, (reported).facets_at),
           merge_facets((node).facets, (node).facets_at, (reported).facets, (reported).facets_at),
           greatest((node).facets_at, (reported).facets_at), greatest((node).updated_at, (reported).updated_at),
           least((node).created_at, (reported).created_at)
$$;

-- Whether an event marking facets `_deleted` (``deleted``, at ``at``) removes any from the node: not
-- when the stored facets are later than the event, or hold none of them.
CREATE OR REPLACE FUNCTION node_deletes_facets(node anyelement, deleted text[], at timestamptz)
RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT (node).facets_at <= at AND (node).facets ?| deleted
$$;

-- The node's facets and times once those facets are removed.
CREATE OR REPLACE FUNCTION node_facets_deleted(node anyelement, deleted text[], at timestamptz)
RETURNS TABLE (facets jsonb, facets_at timestamptz, updated_at timestamptz)
LANGUAGE sql IMMUTABLE AS $$
    SELECT (node).facets - deleted, greatest((node).facets_at, at), greatest((node).updated_at, at)
$$;
