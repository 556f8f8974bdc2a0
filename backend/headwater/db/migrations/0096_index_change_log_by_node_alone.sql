-- The change log's node index keys on the node alone. Keyed on (node_id, change_id), every change
-- had an entry of its own, the node's name repeated in each (139 bytes a change on the ingest
-- benchmark, more than a fifth of what the change log takes); keyed on the node, the changes of one
-- node share one entry holding their row ids (PostgreSQL's B-tree deduplication). The one reader
-- by node (MCP's suspect changes: node_id = ANY(...) AND at >= ...) never used change_id's order.
-- Rebuilding the index reads the whole change log once, with writes to it held meanwhile: about a
-- second per million changes.
DROP INDEX change_log_node_idx;
CREATE INDEX change_log_node_idx ON change_log (node_id);
