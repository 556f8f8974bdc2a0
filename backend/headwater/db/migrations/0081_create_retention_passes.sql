-- Every pass of `headwater retention` (or of serve's periodic retention): the horizon it removed
-- history before, and what it removed per table. The latest horizon is where point-in-time answers
-- stop: a lineage question about an earlier time is refused rather than answered from what is left.
-- A pass is recorded before it removes anything, so that no answer is built from a half-removed past.
CREATE TABLE retention_passes (
    pass_id     bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    horizon     timestamptz NOT NULL,
    keep_days   int         NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    removed     jsonb       NOT NULL DEFAULT '{}'
);
CREATE INDEX retention_passes_horizon_idx ON retention_passes (horizon DESC);
