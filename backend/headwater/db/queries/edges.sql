-- name: upsert_edges
-- Opens or refreshes the edges events report ($1: a JSON array; dataset -> job for reads, job ->
-- dataset for writes), each with its job, eventTime and run (last_seen_at and last_run_uuid: the
-- first sighting by the latest run that reported the edge); an edge stays `derived` only while no
-- producer has reported it. A late, stale event never opens an edge: not one closed after its time,
-- and not one missing from a job version defined by a later completed run.
-- Every lookup is an index probe per edge (the open key, scalar subqueries), never a scan whose
-- cost grows with the table.
-- Opens or refreshes the column edges too, producer-reported or derived, marking them superseded
-- when the other source is preferred. They come as sets ($2: per job, output and derived, the hash
-- of what the event reports of them, its eventTime and run, and the edges: output field <- input
-- field). A set the event reports as stored is confirmed as a
-- whole, on its row in column_edge_sets; the edges of any other set are written one by one (each
-- found by its key in column_lineage_open_key, one index probe per edge however large the table).
-- Returns the edges it opened or changed, as it left them (kind 'edge'), the column edges it opened
-- ('column_edge') and the column edge sets it wrote ('column_set'): what the rest of the transaction
-- compares its events' edges with (``store.edges.WrittenEdges``).
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
-- The column edge sets the events report ($2), each with the stored set of its job, output and
-- derived: a whole set reported again, no earlier than any of its edges was first seen, is
-- confirmed as a whole (its edges as stored are exactly what the event reports, each last confirmed
-- as the set; an event before the set's last confirmation changes none of them).
column_sets AS (
    SELECT t.job, t.out_ds, t.derived, t.hash, t.at, t.run_uuid, t.edges, s.set_hash AS stored_hash,
           s.whole AS stored_whole, s.latest_first_seen_at AS latest_first_seen, s.last_seen_at AS stored_seen,
           s.last_run_uuid AS stored_run,
           coalesce(s.whole AND s.set_hash = t.hash AND t.at >= s.latest_first_seen_at, false) AS whole
    FROM json_to_recordset($2::json) AS t(job uuid, out_ds uuid, derived boolean, hash bigint, at timestamptz,
                                         run_uuid uuid, edges json)
    LEFT JOIN LATERAL (
        SELECT * FROM column_edge_sets s
        WHERE s.job_uuid = t.job AND s.output_dataset_uuid = t.out_ds AND s.derived = t.derived
        OFFSET 0
    ) s ON true
),
-- The edges of the other sets, one by one, each with the open edge it updates and that edge's
-- confirmation (the edge's own, or its whole set's: see the view column_lineage_confirmed), then
-- what the event makes of them. An edge is rewritten when the event changes it as the upsert always
-- did, when it moves to the event's set, or when it takes over its old set's confirmation. (The
-- edges of a set confirmed as a whole are not turned into rows, nor looked up.)
column_merged AS (
    SELECT f.*,
           CASE WHEN f.changed THEN least(f.old_first, f.at) ELSE f.old_first END AS new_first,
           CASE WHEN f.changed THEN greatest(f.seen, f.at) ELSE f.seen END AS new_seen,
           CASE WHEN f.changed AND f.at >= f.seen THEN coalesce(f.run_uuid, f.seen_run) ELSE f.seen_run END
               AS new_run
    FROM (
        SELECT k.job, k.out_ds, k.derived, k.hash, k.at, k.run_uuid, e.out_field, e.in_ds, e.in_field, e.ttype,
               e.tsub, e.descr, e.masking, e.superseded, o.column_edge_id IS NOT NULL AS known,
               o.first_seen_at AS old_first, o.description AS old_descr, o.masking AS old_masking,
               o.set_hash AS old_hash,
               o.last_seen_at AS own_seen, o.last_run_uuid AS own_run, c.seen, c.seen_run,
               -- What made the upsert rewrite an edge before sets: an earlier first sighting, a new
               -- description, masking or preference, a later sighting by another run.
               o.column_edge_id IS NOT NULL
               AND (k.at < o.first_seen_at
                    OR coalesce(e.descr, o.description) IS DISTINCT FROM o.description
                    OR coalesce(e.masking, o.masking) IS DISTINCT FROM o.masking
                    OR e.superseded IS DISTINCT FROM o.superseded
                    OR (k.at > c.seen AND k.run_uuid IS DISTINCT FROM c.seen_run)) AS changed
        FROM column_sets k
        CROSS JOIN LATERAL json_to_recordset(k.edges)
            AS e(out_field text, in_ds uuid, in_field text, ttype text, tsub text, descr text, masking boolean,
                 superseded boolean)
        LEFT JOIN LATERAL (
            SELECT c.column_edge_id, c.first_seen_at, c.description, c.masking, c.superseded, c.set_hash,
                   c.last_seen_at, c.last_run_uuid
            FROM column_lineage c
            WHERE c.output_dataset_uuid = k.out_ds AND c.output_field = e.out_field AND c.input_dataset_uuid = e.in_ds
              AND c.input_field = e.in_field
              AND coalesce(c.job_uuid, '00000000-0000-0000-0000-000000000000'::uuid) = k.job
              AND coalesce(c.transformation_type, '') = coalesce(e.ttype, '')
              AND coalesce(c.transformation_subtype, '') = coalesce(e.tsub, '') AND c.derived = k.derived
              AND c.valid_to IS NULL
            OFFSET 0
        ) o ON true
        CROSS JOIN LATERAL (
            SELECT CASE WHEN m THEN k.stored_seen ELSE o.last_seen_at END AS seen,
                   CASE WHEN m THEN k.stored_run ELSE o.last_run_uuid END AS seen_run
            FROM (SELECT coalesce(k.stored_whole AND o.set_hash = k.stored_hash AND k.stored_seen > o.last_seen_at,
                                  false) AS m) m
        ) c
        WHERE NOT k.whole
    ) f
),
column_written AS (
    INSERT INTO column_lineage AS c (output_dataset_uuid, output_field, input_dataset_uuid, input_field, job_uuid,
                                     transformation_type, transformation_subtype, description, masking, derived,
                                     first_seen_at, last_seen_at, valid_from, last_run_uuid, superseded, set_hash)
    SELECT out_ds, out_field, in_ds, in_field, job, ttype, tsub, coalesce(descr, old_descr),
           coalesce(masking, old_masking), derived, coalesce(new_first, at), coalesce(new_seen, at), at,
           CASE WHEN known THEN new_run ELSE run_uuid END, superseded, hash
    FROM column_merged
    WHERE NOT known OR changed OR old_hash IS DISTINCT FROM hash OR new_seen IS DISTINCT FROM own_seen
       OR new_run IS DISTINCT FROM own_run
    ON CONFLICT (output_dataset_uuid, output_field, input_dataset_uuid, input_field,
                 coalesce(job_uuid, '00000000-0000-0000-0000-000000000000'::uuid),
                 coalesce(transformation_type, ''), coalesce(transformation_subtype, ''), derived)
        WHERE valid_to IS NULL
    DO UPDATE SET
        first_seen_at = excluded.first_seen_at,
        last_seen_at = excluded.last_seen_at,
        description = excluded.description,
        masking = excluded.masking,
        last_run_uuid = excluded.last_run_uuid,
        superseded = excluded.superseded,
        set_hash = excluded.set_hash
    RETURNING c.job_uuid, c.output_dataset_uuid, c.output_field, c.input_dataset_uuid, c.input_field, c.derived,
              (xmax = 0) AS opened
),
-- Open edges of a set written edge by edge that the event no longer reports: they leave the set,
-- keeping the confirmation it gave them.
column_leaving AS (
    SELECT l.column_edge_id, k.stored_seen, k.stored_run
    FROM column_sets k
    CROSS JOIN LATERAL (
        SELECT l.column_edge_id, l.output_field, l.input_dataset_uuid, l.input_field, l.transformation_type,
               l.transformation_subtype
        FROM column_lineage l
        WHERE l.output_dataset_uuid = k.out_ds AND l.job_uuid = k.job AND l.derived = k.derived
          AND l.valid_to IS NULL AND l.set_hash = k.stored_hash AND l.last_seen_at < k.stored_seen
        OFFSET 0
    ) l
    WHERE NOT k.whole AND k.stored_whole
      AND NOT EXISTS (SELECT 1 FROM column_merged f
                      WHERE f.known AND f.job = k.job AND f.out_ds = k.out_ds AND f.derived = k.derived
                        AND f.out_field = l.output_field AND f.in_ds = l.input_dataset_uuid
                        AND f.in_field = l.input_field
                        AND coalesce(f.ttype, '') = coalesce(l.transformation_type, '')
                        AND coalesce(f.tsub, '') = coalesce(l.transformation_subtype, ''))
),
column_left AS (
    UPDATE column_lineage c
    SET last_seen_at = (SELECT x.stored_seen FROM column_leaving x WHERE x.column_edge_id = c.column_edge_id),
        last_run_uuid = (SELECT x.stored_run FROM column_leaving x WHERE x.column_edge_id = c.column_edge_id),
        set_hash = NULL
    WHERE c.column_edge_id = ANY (ARRAY(SELECT column_edge_id FROM column_leaving))
),
-- Each set as the event leaves it: confirmed as a whole by a later sighting of another run, or
-- written edge by edge, and then whole when every edge was left with one and the same sighting,
-- which becomes the set's: the event's own, or, for an event earlier than the set's last
-- confirmation (a run's START arriving after its COMPLETE), the confirmation its edges kept.
sets_written AS (
    INSERT INTO column_edge_sets AS s (job_uuid, output_dataset_uuid, derived, set_hash, whole, latest_first_seen_at,
                                       last_seen_at, last_run_uuid)
    SELECT k.job, k.out_ds, k.derived, k.hash, coalesce(k.whole OR f.whole, false),
           CASE WHEN k.whole THEN k.latest_first_seen ELSE f.latest_first_seen END,
           CASE WHEN f.whole THEN f.seen ELSE k.at END,
           CASE WHEN f.whole THEN f.seen_run ELSE k.run_uuid END
    FROM column_sets k
    LEFT JOIN (
        SELECT f.job, f.out_ds, f.derived,
               count(DISTINCT (coalesce(f.new_seen, f.at), CASE WHEN f.known THEN f.new_run ELSE f.run_uuid END)) = 1
                   AS whole,
               max(coalesce(f.new_seen, f.at)) AS seen,
               (array_agg(CASE WHEN f.known THEN f.new_run ELSE f.run_uuid END))[1] AS seen_run,
               max(coalesce(f.new_first, f.at)) AS latest_first_seen
        FROM column_merged f GROUP BY f.job, f.out_ds, f.derived
    ) f ON f.job = k.job AND f.out_ds = k.out_ds AND f.derived = k.derived
    WHERE NOT k.whole OR (k.at > k.stored_seen AND k.run_uuid IS DISTINCT FROM k.stored_run)
    ON CONFLICT (job_uuid, output_dataset_uuid, derived) DO UPDATE SET
        set_hash = excluded.set_hash,
        whole = excluded.whole,
        latest_first_seen_at = excluded.latest_first_seen_at,
        last_seen_at = excluded.last_seen_at,
        last_run_uuid = excluded.last_run_uuid
    RETURNING s.job_uuid, s.output_dataset_uuid, s.derived, s.set_hash, s.whole, s.latest_first_seen_at,
              s.last_seen_at, s.last_run_uuid
)
SELECT 'edge' AS kind, opened, job_uuid, derived, first_seen_at, last_seen_at, last_run_uuid, src_node_id,
       dst_node_id, edge_type, dataset_uuid, valid_from,
       NULL::uuid AS output_dataset_uuid, NULL::text AS output_field, NULL::uuid AS input_dataset_uuid,
       NULL::text AS input_field, NULL::bigint AS set_hash, NULL::boolean AS whole,
       NULL::timestamptz AS latest_first_seen_at
FROM written
UNION ALL
SELECT 'column_edge', opened, job_uuid, derived, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       output_dataset_uuid, output_field, input_dataset_uuid, input_field, NULL, NULL, NULL
FROM column_written
WHERE opened
UNION ALL
SELECT 'column_set', false, job_uuid, derived, NULL, last_seen_at, last_run_uuid, NULL, NULL, NULL, NULL, NULL,
       output_dataset_uuid, NULL, NULL, NULL, set_hash, whole, latest_first_seen_at
FROM sets_written;
