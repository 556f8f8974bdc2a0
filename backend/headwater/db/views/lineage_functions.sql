-- Helpers of the lineage queries (re-created after every migrate).

-- A time as Python's datetime.isoformat() spells it in UTC (microseconds only when non-zero), so
-- node documents built in SQL read the same whatever the session's TimeZone.
CREATE OR REPLACE FUNCTION lineage_iso_time(t timestamptz) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT to_char(t AT TIME ZONE 'UTC',
                   CASE WHEN date_trunc('second', t) = t THEN 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"'
                        ELSE 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"' END)
$$;

-- The edges leaving the frontier nodes, forwards (downstream) or backwards, as (from_id, to_id):
-- open edges, or those valid at as_of (valid_from <= as_of < valid_to). Inlined by the planner into
-- the walks that call it; only the branch for the asked direction and time runs.
DROP FUNCTION IF EXISTS lineage_neighbours(bigint[], boolean, timestamptz);
CREATE FUNCTION lineage_neighbours(frontier bigint[], downstream boolean, as_of timestamptz)
RETURNS TABLE (from_id bigint, to_id bigint)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT e.src_node_id, e.dst_node_id
    FROM unnest(frontier) AS f(id) JOIN lineage_edges e ON e.src_node_id = f.id AND e.valid_to IS NULL
    WHERE downstream AND as_of IS NULL
    UNION ALL
    SELECT e.src_node_id, e.dst_node_id
    FROM unnest(frontier) AS f(id) JOIN lineage_edges e ON e.src_node_id = f.id
    WHERE downstream AND as_of IS NOT NULL
      AND e.valid_from <= as_of AND (e.valid_to IS NULL OR e.valid_to > as_of)
    UNION ALL
    SELECT e.dst_node_id, e.src_node_id
    FROM unnest(frontier) AS f(id) JOIN lineage_edges e ON e.dst_node_id = f.id AND e.valid_to IS NULL
    WHERE NOT downstream AND as_of IS NULL
    UNION ALL
    SELECT e.dst_node_id, e.src_node_id
    FROM unnest(frontier) AS f(id) JOIN lineage_edges e ON e.dst_node_id = f.id
    WHERE NOT downstream AND as_of IS NOT NULL
      AND e.valid_from <= as_of AND (e.valid_to IS NULL OR e.valid_to > as_of)
$$;

-- The version stamp of lineage node documents. A dataset's: the transaction id that wrote its row
-- (ingest rewrites the row with its fields, its current version and facets, all a document shows). A
-- job's: the transaction ids that wrote its row (current version, facets) and its latest run's row
-- (the document's latestRun; a new run or a run's new state does not rewrite the job), both in one
-- bigint (lineage_job_stamp). An unchanged stamp means an unchanged document.
CREATE OR REPLACE FUNCTION lineage_job_stamp(job_xmin xid, latest_run_xmin xid) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    -- Both 32-bit ids whole: the job's in the high half (shifted down by 2^31 to stay in range), the
    -- run's (0, never a row's, when the job has no run) in the low half.
    SELECT (job_xmin::text::bigint - 2147483648) * 4294967296 + coalesce(latest_run_xmin::text::bigint, 0)
$$;

DROP FUNCTION IF EXISTS lineage_node_stamps(bigint[]);
CREATE FUNCTION lineage_node_stamps(node_ids bigint[])
RETURNS TABLE (node_id bigint, stamp bigint)
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT d.node_id, d.xmin::text::bigint FROM datasets d WHERE d.node_id = ANY(node_ids)
    UNION ALL
    SELECT j.node_id,
           lineage_job_stamp(j.xmin, (SELECT r.xmin FROM runs r WHERE r.job_uuid = j.job_uuid
                                      ORDER BY r.created_at DESC, r.run_uuid LIMIT 1))
    FROM jobs j WHERE j.node_id = ANY(node_ids)
$$;

-- Marquez-shaped `data` documents of lineage nodes, as JSON text, with their version stamp.
-- PL/pgSQL so the plan is cached, and without JIT: answers of thousands of nodes cross
-- jit_above_cost, and compiling costs more than it saves on a query this short.
DROP FUNCTION IF EXISTS lineage_node_documents(bigint[]);
CREATE FUNCTION lineage_node_documents(node_ids bigint[])
RETURNS TABLE (node_id bigint, stamp bigint, node_type text, namespace text, name text, data text)
LANGUAGE plpgsql STABLE PARALLEL SAFE SET jit = off AS $$
BEGIN
    RETURN QUERY
    SELECT d.node_id, d.xmin::text::bigint, 'DATASET'::text, d.namespace, d.name,
           json_build_object(
               'type', 'DB_TABLE',
               'id', json_build_object('namespace', d.namespace, 'name', d.name),
               'name', d.name, 'physicalName', d.name, 'namespace', d.namespace,
               'sourceName', d.source_name, 'description', d.description,
               'fields', coalesce((SELECT json_agg(json_build_object('name', f.name, 'type', f.type,
                                                                     'description', f.description)
                                                   ORDER BY f.position)
                                   FROM dataset_fields f WHERE f.dataset_uuid = d.dataset_uuid), '[]'),
               'createdAt', lineage_iso_time(d.created_at), 'updatedAt', lineage_iso_time(d.updated_at),
               'lastModifiedAt', lineage_iso_time(d.current_version_at),
               'deleted', d.deleted_at IS NOT NULL, 'heat', d.heat, 'facets', d.facets)::text
    FROM datasets d WHERE d.node_id = ANY(node_ids)
    UNION ALL
    SELECT j.node_id, lineage_job_stamp(j.xmin, r.xmin), 'JOB'::text, j.namespace, j.name,
           json_build_object(
               -- Marquez's BATCH / STREAM / SERVICE (the jobType facet's processingType), as the
               -- catalog's job JSON; the OpenLineage job type (QUERY, DAG ...) keeps its own name.
               'type', CASE upper(j.facets #>> '{jobType,processingType}')
                           WHEN 'STREAMING' THEN 'STREAM' WHEN 'STREAM' THEN 'STREAM'
                           WHEN 'SERVICE' THEN 'SERVICE' ELSE 'BATCH' END,
               'jobType', j.job_type,
               'id', json_build_object('namespace', j.namespace, 'name', j.name),
               'name', j.name, 'simpleName', regexp_replace(j.name, '^.*\.', ''), 'namespace', j.namespace,
               'parentJob', (SELECT json_build_object('namespace', p.namespace, 'name', p.name)
                             FROM jobs p WHERE p.job_uuid = j.parent_job_uuid),
               'parentJobName', (SELECT p.name FROM jobs p WHERE p.job_uuid = j.parent_job_uuid),
               'parentJobUuid', (SELECT p.job_uuid FROM jobs p WHERE p.job_uuid = j.parent_job_uuid),
               -- The current version's datasets, in the version's order (the job's row moves to a
               -- new current version when they change, so the stamp covers them).
               'inputs', coalesce((SELECT json_agg(json_build_object('namespace', d.namespace, 'name', d.name)
                                                   ORDER BY io.n)
                                   FROM job_versions v
                                   CROSS JOIN LATERAL unnest(v.input_uuids) WITH ORDINALITY AS io(uuid, n)
                                   JOIN datasets d ON d.dataset_uuid = io.uuid
                                   WHERE v.job_version_uuid = j.current_version_uuid), '[]'),
               'outputs', coalesce((SELECT json_agg(json_build_object('namespace', d.namespace, 'name', d.name)
                                                    ORDER BY io.n)
                                    FROM job_versions v
                                    CROSS JOIN LATERAL unnest(v.output_uuids) WITH ORDINALITY AS io(uuid, n)
                                    JOIN datasets d ON d.dataset_uuid = io.uuid
                                    WHERE v.job_version_uuid = j.current_version_uuid), '[]'),
               'location', j.facets #>> '{sourceCodeLocation,url}',
               'description', j.description, 'createdAt', lineage_iso_time(j.created_at),
               'updatedAt', lineage_iso_time(j.updated_at), 'deleted', j.deleted_at IS NOT NULL,
               'heat', j.heat,
               -- A Marquez run: its state is Marquez's (COMPLETED, FAILED ...), as in the catalog.
               'latestRun', CASE WHEN r.run_uuid IS NOT NULL THEN json_build_object(
                                'id', r.run_uuid,
                                'state', CASE r.current_state
                                             WHEN 'START' THEN 'RUNNING' WHEN 'RUNNING' THEN 'RUNNING'
                                             WHEN 'COMPLETE' THEN 'COMPLETED' WHEN 'FAIL' THEN 'FAILED'
                                             WHEN 'ABORT' THEN 'ABORTED' ELSE 'NEW' END,
                                'createdAt', lineage_iso_time(r.created_at),
                                'updatedAt', lineage_iso_time(r.updated_at),
                                'startedAt', lineage_iso_time(r.started_at),
                                'endedAt', lineage_iso_time(r.ended_at),
                                'durationMs', trunc(extract(epoch FROM r.ended_at - r.started_at) * 1000)::bigint)
                            END,
               'facets', j.facets)::text
    FROM jobs j
    -- The latest run, whose row is in the stamp as well.
    LEFT JOIN LATERAL (SELECT r.xmin, r.* FROM runs r WHERE r.job_uuid = j.job_uuid
                       ORDER BY r.created_at DESC, r.run_uuid LIMIT 1) r ON true
    WHERE j.node_id = ANY(node_ids);
END
$$;

-- Breadth-first lineage walks from the roots, one level per recursion step: a step carries the
-- frontier and the visited set (arrays), so no node is expanded twice and cycles end, and the whole
-- walk is one statement. One walk per asked direction: downstream follows edges forwards, upstream
-- backwards (lineage_neighbours: open edges, or those valid at as_of). Job roots start at level 0
-- and dataset roots join at level 1; no level passes max_level. Soft-deleted nodes (deleted by
-- as_of, if given) are never entered; with in_namespaces, only nodes in those namespaces are. A
-- walk stops at max_nodes nodes, keeping the lowest node ids of its last level (both directions
-- together may hold up to twice as many). Returns one row: the reached nodes with their lowest
-- level and their document stamp (as lineage_node_stamps), the edges among them (both ends
-- reached), and whether a cap cut a walk; without with_edges, only the nodes and their levels.
-- PL/pgSQL for a plan cached across calls: planning costs about as much as walking a small graph.
DROP FUNCTION IF EXISTS lineage_walk(bigint[], bigint[], int, boolean, boolean, timestamptz, int, text[]);
DROP FUNCTION IF EXISTS lineage_walk(bigint[], bigint[], int, boolean, boolean, timestamptz, int, text[], boolean);
CREATE FUNCTION lineage_walk(
    job_roots bigint[], dataset_roots bigint[], max_level int, downstream boolean, upstream boolean,
    as_of timestamptz, max_nodes int, in_namespaces text[], with_edges boolean DEFAULT true
)
RETURNS TABLE (node_ids bigint[], levels int[], stamps bigint[], edge_srcs bigint[], edge_dsts bigint[],
               truncated boolean)
LANGUAGE plpgsql STABLE PARALLEL SAFE SET jit = off SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    WITH RECURSIVE
    deleted AS MATERIALIZED (
        SELECT node_id FROM datasets
        WHERE deleted_at IS NOT NULL AND ($6::timestamptz IS NULL OR deleted_at <= $6)
          AND node_id <> ALL($1::bigint[] || $2::bigint[])
        UNION ALL
        SELECT node_id FROM jobs
        WHERE deleted_at IS NOT NULL AND ($6 IS NULL OR deleted_at <= $6) AND node_id <> ALL($1 || $2)
    ),
    walk(downstream, level, frontier, visited, reached, truncated) AS (
        SELECT d.downstream, 0, $1::bigint[], $1 || $2::bigint[], cardinality($1), false
        FROM (VALUES (true), (false)) AS d(downstream)
        WHERE CASE WHEN d.downstream THEN $4::boolean ELSE $5::boolean END
        UNION ALL
        SELECT w.downstream, w.level + 1, n.next[1:$7::int - w.reached], w.visited || n.next[1:$7 - w.reached],
               w.reached + least(cardinality(n.next), $7 - w.reached), cardinality(n.next) > $7 - w.reached
        FROM walk w
        CROSS JOIN LATERAL (
            SELECT CASE WHEN w.level = 0 THEN $2 ELSE '{}' END || array_agg(c.id ORDER BY c.id) AS next
            FROM (
                -- EXCEPT: a hashed or sorted set difference whatever the estimates, never a nested loop.
                SELECT x.to_id AS id FROM lineage_neighbours(w.frontier, w.downstream, $6) AS x
                EXCEPT
                SELECT unnest(w.visited)
                EXCEPT
                SELECT node_id FROM deleted
            ) c
            WHERE $8::text[] IS NULL
               OR EXISTS (SELECT 1 FROM datasets d WHERE d.node_id = c.id AND d.namespace = ANY($8))
               OR EXISTS (SELECT 1 FROM jobs j WHERE j.node_id = c.id AND j.namespace = ANY($8))
        ) n
        WHERE w.level < $3::int AND NOT w.truncated AND cardinality(n.next) > 0
    ),
    levels AS (
        SELECT unnest(frontier) AS node_id, level FROM walk
    ),
    reached AS MATERIALIZED (
        SELECT node_id, min(level) AS level FROM levels GROUP BY node_id
    ),
    reached_ids AS (
        SELECT array_agg(node_id) AS ids FROM reached
    ),
    edges AS (
        SELECT x.from_id, x.to_id
        FROM reached_ids, lineage_neighbours(reached_ids.ids, true, $6) AS x
        JOIN reached r ON r.node_id = x.to_id
        WHERE $9
    ),
    stamped AS (
        -- Levels alternate between jobs (even) and datasets (odd), as every edge joins a dataset and a
        -- job; so one probe per node finds its row (a NULL stamp would say otherwise).
        SELECT r.node_id, r.level,
               CASE WHEN NOT $9 THEN NULL
                    WHEN r.level % 2 = 1 THEN (SELECT d.xmin::text::bigint FROM datasets d WHERE d.node_id = r.node_id)
                    ELSE (SELECT lineage_job_stamp(j.xmin, (SELECT lr.xmin FROM runs lr WHERE lr.job_uuid = j.job_uuid
                                                            ORDER BY lr.created_at DESC, lr.run_uuid LIMIT 1))
                          FROM jobs j WHERE j.node_id = r.node_id) END AS stamp
        FROM reached r
    )
    SELECT n.node_ids, n.levels, n.stamps, e.edge_srcs, e.edge_dsts,
           coalesce((SELECT bool_or(w.truncated) FROM walk w), false)
    FROM (SELECT array_agg(node_id) AS node_ids, array_agg(level) AS levels, array_agg(stamp) AS stamps
          FROM stamped) n,
         (SELECT array_agg(from_id) AS edge_srcs, array_agg(to_id) AS edge_dsts FROM edges) e;
END
$$;
