-- Ingest asks, for each edge an event reports, whether the same edge was closed after the event's
-- time (a late event must not reopen it). The time indexes lead with one end of the edge only, so
-- that probe walked every edge of the node at the other end: for a job reading thousands of tables
-- in one event, every edge inserted before it in the same statement, which made the write
-- quadratic. Closed edges by both ends answer it with one probe; open edges never enter this index.
CREATE INDEX lineage_edges_closed_key ON lineage_edges (src_node_id, dst_node_id, valid_to)
    WHERE valid_to IS NOT NULL;
