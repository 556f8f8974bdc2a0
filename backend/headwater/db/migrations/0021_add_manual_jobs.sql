-- Jobs declared by hand rather than reported by an integration. A manual dataset -> dataset flow
-- goes through one such job per destination dataset, so the graph stays dataset -> job -> dataset
-- and lineage depth (counted in jobs) means the same for declared and observed lineage.
ALTER TABLE jobs ADD COLUMN manual boolean NOT NULL DEFAULT false;

-- Who declared a manual edge and why; NULL on observed edges.
ALTER TABLE lineage_edges ADD COLUMN description text;
