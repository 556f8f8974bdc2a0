-- name: upsert_edges
-- Opens or refreshes the edges events report ($1: a JSON array; dataset -> job for reads, job ->
-- dataset for writes), each with its job, eventTime and run (last_seen_at and last_run_uuid: the
-- first sighting by the latest run that reported the edge); an edge stays `derived` only while no
-- producer has reported it. A late, stale event never opens an edge: not one closed after its time,
-- and not one missing from a job version defined by a later completed run.
-- Every lookup is an index probe per edge (the open key, scalar subqueries), never a scan whose
-- cost grows with the table.
-- Opens or refreshes the column edges too ($2: a JSON array of edges, output field <- input field
-- through a job), producer-reported or derived, marking them superseded when the other source is
-- preferred; each edge comes with the eventTime and run of its event. An open column edge is found by
-- its key in column_lineage_open_key, one index probe per edge however large the table.
-- Returns every edge and column edge it opened or changed, as it left them (opened telling which
-- are new, column_edge which kind): what the rest of the transaction compares its events' edges
-- with (``store.edges.WrittenEdges``).
WITH input AS (
    SELECT DISTINCT ON (src, dst) *
    FROM json_to_recordset($1::json)
        AS t(src bigint, dst bigint, dataset_uuid uuid, edge_type text, job_uuid uuid, at timestamptz, run_uuid uuid,
             derived boolean)
),
written AS (
    INSERT INTO lineage_edges AS e (src_node_id, dst_node_id, job_uuid, dataset_uuid, edge_type, first_seen_at,
                                    last_seen_at, valid_from, last_run_uuid, derived)
    SELECT i.src, i.dst, i.job_uuid, i.dataset_uuid, i.edge_type, i.at, i.at, i.at, i.run_uuid, i.derived
    FROM input i
    -- In this order: an event that is not stale, the common case, is decided without looking for
    -- the open edge, whose probe on a fresh table can walk every edge this statement inserted for
    -- the same job (a job reading thousands of tables made the statement quadratic).
    WHERE ((SELECT true FROM lineage_edges c
            WHERE c.src_node_id = i.src AND c.dst_node_id = i.dst AND c.valid_to > i.at LIMIT 1) IS NULL
           AND (SELECT true FROM jobs j
                WHERE j.job_uuid = i.job_uuid AND j.current_version_at > i.at
                  AND j.latest_run_uuid IS DISTINCT FROM i.run_uuid) IS NULL)
       OR (SELECT true FROM lineage_edges o
           WHERE o.src_node_id = i.src AND o.dst_node_id = i.dst AND o.valid_to IS NULL) IS NOT NULL
    ON CONFLICT (src_node_id, dst_node_id) WHERE valid_to IS NULL DO UPDATE SET
        first_seen_at = least(e.first_seen_at, excluded.first_seen_at),
        last_seen_at = greatest(e.last_seen_at, excluded.last_seen_at),
        valid_from = CASE WHEN excluded.valid_from < e.valid_from
                               AND (SELECT true FROM lineage_edges c
                                    WHERE c.src_node_id = e.src_node_id AND c.dst_node_id = e.dst_node_id
                                      AND c.valid_to > excluded.valid_from LIMIT 1) IS NULL
                          THEN excluded.valid_from ELSE e.valid_from END,
        last_run_uuid = CASE WHEN excluded.last_seen_at >= e.last_seen_at
                             THEN coalesce(excluded.last_run_uuid, e.last_run_uuid) ELSE e.last_run_uuid END,
        derived = e.derived AND excluded.derived
    -- A later event of the run that last reported the edge changes nothing worth a new row version.
    WHERE excluded.first_seen_at < e.first_seen_at OR excluded.valid_from < e.valid_from
       OR (e.derived AND NOT excluded.derived)
       OR (excluded.last_seen_at > e.last_seen_at AND excluded.last_run_uuid IS DISTINCT FROM e.last_run_uuid)
    RETURNING src_node_id, dst_node_id, job_uuid, edge_type, dataset_uuid, (xmax = 0) AS opened, derived,
              first_seen_at, last_seen_at, valid_from, last_run_uuid
),
column_written AS (
    INSERT INTO column_lineage AS c (output_dataset_uuid, output_field, input_dataset_uuid, input_field, job_uuid,
                                     transformation_type, transformation_subtype, description, masking, derived,
                                     first_seen_at, last_seen_at, valid_from, last_run_uuid, superseded)
    SELECT DISTINCT ON (out_ds, out_field, in_ds, in_field, coalesce(ttype, ''), coalesce(tsub, ''), job, derived)
           out_ds, out_field, in_ds, in_field, job, ttype, tsub, descr, masking, derived, at, at, at, run_uuid,
           superseded
    FROM json_to_recordset($2::json)
        AS t(out_ds uuid, out_field text, in_ds uuid, in_field text, ttype text, tsub text, descr text, masking boolean,
             job uuid, at timestamptz, run_uuid uuid, derived boolean, superseded boolean)
    ON CONFLICT (output_dataset_uuid, output_field, input_dataset_uuid, input_field,
                 coalesce(job_uuid, '00000000-0000-0000-0000-000000000000'::uuid),
                 coalesce(transformation_type, ''), coalesce(transformation_subtype, ''), derived)
        WHERE valid_to IS NULL
    DO UPDATE SET
        first_seen_at = least(c.first_seen_at, excluded.first_seen_at),
        last_seen_at = greatest(c.last_seen_at, excluded.last_seen_at),
        description = coalesce(excluded.description, c.description),
        masking = coalesce(excluded.masking, c.masking),
        last_run_uuid = CASE WHEN excluded.last_seen_at >= c.last_seen_at
                             THEN coalesce(excluded.last_run_uuid, c.last_run_uuid) ELSE c.last_run_uuid END,
        superseded = excluded.superseded
    -- A later event of the run that last reported the edge changes nothing worth a new row version.
    WHERE excluded.first_seen_at < c.first_seen_at
       OR coalesce(excluded.description, c.description) IS DISTINCT FROM c.description
       OR coalesce(excluded.masking, c.masking) IS DISTINCT FROM c.masking
       OR excluded.superseded IS DISTINCT FROM c.superseded
       OR (excluded.last_seen_at > c.last_seen_at AND excluded.last_run_uuid IS DISTINCT FROM c.last_run_uuid)
    RETURNING c.job_uuid, c.output_dataset_uuid, c.output_field, c.input_dataset_uuid, c.input_field,
              c.transformation_type, c.transformation_subtype, c.derived, (xmax = 0) AS opened, c.first_seen_at,
              c.last_seen_at, c.last_run_uuid, c.description, c.masking, c.superseded
)
SELECT false AS column_edge, opened, job_uuid, derived, first_seen_at, last_seen_at, last_run_uuid, src_node_id,
       dst_node_id, edge_type, dataset_uuid, valid_from,
       NULL::uuid AS output_dataset_uuid, NULL::text AS output_field, NULL::uuid AS input_dataset_uuid,
       NULL::text AS input_field, NULL::text AS transformation_type, NULL::text AS transformation_subtype,
       NULL::text AS description, NULL::boolean AS masking, NULL::boolean AS superseded
FROM written
UNION ALL
SELECT true, opened, job_uuid, derived, first_seen_at, last_seen_at, last_run_uuid, NULL, NULL, NULL, NULL, NULL,
       output_dataset_uuid, output_field, input_dataset_uuid, input_field, transformation_type,
       transformation_subtype, description, masking, superseded
FROM column_written;
