"""What ingest's transactions report on ``/metrics``: how long each waited for its turn among every
process's ingest writes, how long it held the turn, and how many events it wrote.

Every ingest write of every process takes the turn (``service.ingest_turn``), so the turn is where
ingest's rate is decided: a turn held nearly all the time means the write itself bounds the rate
(more HTTP workers or consumers will not raise it), long waits with the turn mostly free mean the
writers are starved of events, and the events per transaction tell how much each write is shared.
Recorded by every process that writes (servers, ``headwater consume``, backfills), on its own
metrics.
"""

from __future__ import annotations

from prometheus_client import Histogram

_SECONDS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

TURN_WAIT = Histogram(
    "headwater_ingest_turn_wait_seconds",
    "Time an ingest transaction waited for its turn among every process's ingest writes.",
    buckets=_SECONDS,
)
TURN_HELD = Histogram(
    "headwater_ingest_turn_held_seconds",
    "Time an ingest transaction held the turn: from getting it to its commit (or rollback).",
    buckets=_SECONDS,
)
TRANSACTION_EVENTS = Histogram(
    "headwater_ingest_transaction_events",
    "Events written per ingest transaction, duplicates included.",
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096),
)
