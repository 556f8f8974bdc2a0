-- Lineage derived by Headwater from a job's SQL, beside what producers report.
-- lineage_edges.derived: the edge is known only from the SQL (no producer reported it).
-- column_lineage.superseded: another source's column edges for the same output and job are
-- preferred (the producer's, unless they name fields the output does not have; then the derived).
ALTER TABLE lineage_edges ADD COLUMN derived boolean NOT NULL DEFAULT false;
ALTER TABLE column_lineage ADD COLUMN superseded boolean NOT NULL DEFAULT false;
