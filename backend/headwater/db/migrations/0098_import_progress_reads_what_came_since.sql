-- What a resumed `headwater import marquez` reads besides the events from `reached` on: those Marquez
-- received after this time (its `created_at`), whatever their event_time. Resuming by event_time
-- alone missed an event Marquez took after an import whose event_time was before the point that
-- import reached: one event dated 2099 by a wrong clock made every later import read nothing.
-- NULL for a source without created_at, whose `reached` is then kept no later than its read began.
ALTER TABLE import_progress ADD COLUMN received_after timestamptz;
