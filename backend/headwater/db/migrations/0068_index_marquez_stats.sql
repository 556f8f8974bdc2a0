-- Marquez's event list and dashboard counts read the raw events of a time window and the datasets,
-- jobs and sources created before a time: with the event type in the index, and indexes on the
-- creation times, those are index-only scans of the window instead of reads of whole rows.
CREATE INDEX raw_events_event_time_type_idx ON raw_events (event_time) INCLUDE (event_type);
DROP INDEX raw_events_event_time_idx;
CREATE INDEX datasets_created_at_idx ON datasets (created_at);
CREATE INDEX jobs_created_at_idx ON jobs (created_at);
CREATE INDEX sources_created_at_idx ON sources (created_at);
