-- Retention also removes change-log entries recorded before its horizon. A pass records the highest
-- change id it removes before removing any, so that a subscriber resuming from an older cursor is
-- told its changes are gone instead of silently missing them.
ALTER TABLE retention_passes ADD COLUMN changes_through bigint;
