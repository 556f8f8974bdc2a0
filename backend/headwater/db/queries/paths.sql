-- name: find_lineage_paths
-- Shortest directed paths from node $1 to node $2 of at most $3 edges: a breadth-first search per
-- asked direction (DOWNSTREAM $4 follows edges forwards, UPSTREAM $5 backwards; open edges, or
-- those valid at $6), each level carrying its frontier and the visited set and stopping at the
-- level that reaches $2. Only the direction(s) with the fewest edges are kept; walking back from
-- $2 level by level keeps the nodes on a shortest path. Soft-deleted nodes (by $6) are skipped.
-- Returns one row per (direction, level) with the nodes on shortest paths at that level, their
-- document stamps, and every edge leaving them in walk order as (from, to): the caller keeps those
-- into the next level's nodes. A walk also stops once it has visited $7 nodes. Each row also says
-- whether a walk stopped at either limit with nodes left to visit (cut), and whether at the second
-- (capped); when there is no path, a single row of nulls says it.
WITH RECURSIVE
deleted AS MATERIALIZED (
    SELECT node_id FROM datasets
    WHERE deleted_at IS NOT NULL AND ($6::timestamptz IS NULL OR deleted_at <= $6)
      AND node_id NOT IN ($1::bigint, $2::bigint)
    UNION ALL
    SELECT node_id FROM jobs
    WHERE deleted_at IS NOT NULL AND ($6 IS NULL OR deleted_at <= $6) AND node_id NOT IN ($1, $2)
),
search(downstream, level, frontier, visited, found) AS (
    SELECT d.downstream, 0, ARRAY[$1], ARRAY[$1], $1 = $2
    FROM (VALUES (true), (false)) AS d(downstream)
    WHERE CASE WHEN d.downstream THEN $4::boolean ELSE $5::boolean END
    UNION ALL
    SELECT w.downstream, w.level + 1, n.next, w.visited || n.next, $2 = ANY(n.next)
    FROM search w
    CROSS JOIN LATERAL (
        SELECT array_agg(DISTINCT x.to_id) AS next
        FROM lineage_neighbours(w.frontier, w.downstream, $6) AS x
        WHERE NOT EXISTS (SELECT 1 FROM unnest(w.visited) AS v(id) WHERE v.id = x.to_id)
          AND NOT EXISTS (SELECT 1 FROM deleted d WHERE d.node_id = x.to_id)
    ) n
    WHERE w.level < $3::int AND NOT w.found AND n.next IS NOT NULL AND cardinality(w.visited) < $7::int
),
hit AS (
    SELECT downstream, level FROM search
    WHERE found AND level = (SELECT min(level) FROM search WHERE found)
),
back(downstream, level, nodes) AS (
    SELECT downstream, level, ARRAY[$2] FROM hit
    UNION ALL
    SELECT b.downstream, b.level - 1, p.prev
    FROM back b
    CROSS JOIN LATERAL (
        -- INTERSECT: a hashed or sorted set operation whatever the estimates, never a nested loop.
        SELECT array_agg(i.id) AS prev
        FROM (
            SELECT x.to_id AS id FROM lineage_neighbours(b.nodes, NOT b.downstream, $6) AS x
            INTERSECT
            SELECT unnest(s.frontier) FROM search s WHERE s.downstream = b.downstream AND s.level = b.level - 1
        ) i
    ) p
    WHERE b.level > 0
),
found_levels AS (
    SELECT b.downstream, b.level, s.node_ids AS nodes, s.stamps, e.edge_froms, e.edge_tos
    FROM back b
    CROSS JOIN LATERAL (
        SELECT array_agg(t.node_id) AS node_ids, array_agg(t.stamp) AS stamps FROM lineage_node_stamps(b.nodes) AS t
    ) s
    CROSS JOIN LATERAL (
        SELECT array_agg(x.from_id) AS edge_froms, array_agg(x.to_id) AS edge_tos
        FROM lineage_neighbours(b.nodes, b.downstream, $6) AS x
    ) e
)
SELECT f.*, c.cut OR c.capped AS cut, c.capped
FROM (
    SELECT coalesce(bool_or(level = $3::int AND NOT found), false) AS cut,
           coalesce(bool_or(level < $3::int AND NOT found AND cardinality(visited) >= $7::int), false) AS capped
    FROM search
) c
LEFT JOIN found_levels f ON true
ORDER BY f.downstream DESC, f.level;
