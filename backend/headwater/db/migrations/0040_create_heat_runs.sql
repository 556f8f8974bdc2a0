-- Asset heat, computed by `headwater spark heat` (PageRank over the current lineage graph, see
-- headwater/pipeline/jobs/heat.py) and stored in datasets.heat and jobs.heat. Each computation is a
-- heat run; its scores are staged in heat_scores by the Spark tasks, then applied in one transaction.
CREATE TABLE heat_runs (
    heat_run_id    bigint           GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    started_at     timestamptz      NOT NULL DEFAULT now(),
    applied_at     timestamptz,
    damping        double precision NOT NULL,
    max_iterations int              NOT NULL,
    tolerance      double precision NOT NULL,
    iterations     int,
    delta          double precision,
    node_count     bigint,
    edge_count     bigint
);

-- Scratch space between the Spark tasks and the final update: unlogged, emptied when applied.
CREATE UNLOGGED TABLE heat_scores (
    heat_run_id bigint           NOT NULL,
    node_id     bigint           NOT NULL,
    heat        double precision NOT NULL,
    PRIMARY KEY (heat_run_id, node_id)
);
