"""Group commit: the events of concurrent requests written together, one transaction per group.

Each server process has one IngestQueue. A request prepares its events (validation happened
before), hands them over and waits for the transaction holding them; a writer waits for its turn
among every process's ingest writes (``ingest_turn``), then takes what is waiting, whole requests up
to ``group_events`` events, and stores it with ``write_prepared`` as one batch. While a group is
being written, the next one gathers, so the size of a group follows the load: one event when a
single client posts, hundreds under many. Every request gets its own
results, and a request's events share one transaction (all or none), except those of a request
that asks for per-event results (a ``/batch``, an array of Trino events): one larger than a group is
written in parts of a group, one part per group beside what else waits, so that a 4,000-event batch
no longer holds every other request back for the seconds it takes (posts waited up to 5.7 s here,
now 1.7 s).

A group the database refuses (not for its state: for something its events hold) is written again in
halves, down to the requests that fail alone, so that only they fail (``service.writing_apart``: a
few of a thousand cost some twenty transactions, not a thousand). Such a request with per-event
results is then written in halves too, down to the events that fail alone: each of those is answered
``failed`` with the database's reason, and the others are stored as if it had not been there.

Events waiting or being written are bounded (``queue_events``): past that a request is refused at
once with a 503, which OpenLineage clients retry, instead of piling up in memory. A request that
is not committed within ``timeout_ms`` answers 503 too; its events may still be committed later,
and the client's retry then answers ``duplicate``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

import asyncpg

from headwater.errors import AppError, DatabaseUnavailableError, EventRefusedError
from headwater.ingest.service import (
    RACES,
    IngestResult,
    PreparedEvent,
    ingest_prepared,
    ingest_turn,
    is_transient,
    prepare_events,
    retrying_races,
    sliced,
    write_prepared,
    writing_apart,
)
from headwater.store import payloads

if TYPE_CHECKING:
    from headwater.ingest.normalize import AliasRule
    from headwater.ingest.validate import ValidEvent
    from headwater.settings import Settings

log = logging.getLogger("headwater.ingest")

# Events prepared per hand-over to a worker thread: small enough that a large request's preparing
# interleaves with other requests'.
_PREPARE_CHUNK = 32
# A request whose events hold at most this many bytes of JSON, none with SQL to parse, is prepared
# on the event loop: about 0.04 ms a KB (1.3 ms at this size, no more than validating it). Handing
# each small request to a thread and back cost more than preparing it; the hand-overs competing for
# the GIL with the loop took 32 clients posting Spark events from 787-848 to 902-969 events/s.
_PREPARE_ON_LOOP_BYTES = 32 * 1024


class IngestOverloadedError(AppError):
    code = "ingest_overloaded"
    status = 503
    title = "Ingest overloaded"


@dataclass
class _Request:
    events: list[PreparedEvent]
    done: asyncio.Future[list[IngestResult]]
    # A result per event: an event the database refuses fails alone, not the request.
    per_event: bool = False


class IngestQueue:
    """Gathers the events of concurrent requests and commits them in groups (see the module)."""

    def __init__(self, pool: asyncpg.Pool, alias_rules: list[AliasRule], settings: Settings) -> None:
        self._pool = pool
        self._rules = alias_rules
        self._group_events = max(1, settings.ingest_group_events)
        self._wait = settings.ingest_group_wait_ms / 1000
        self._capacity = settings.ingest_queue_events
        self._timeout = settings.ingest_timeout_ms / 1000
        self._writer_count = max(1, settings.ingest_writers)
        self._waiting: deque[_Request] = deque()
        self._waiting_events = 0
        # Parts of large requests that may be stored in parts, a group's worth each, in order: one
        # joins each group, beside up to a group's worth of other requests.
        self._parts: deque[_Request] = deque()
        # Events of requests admitted and not yet answered: preparing, waiting or being written.
        self._admitted = 0
        self._wake = asyncio.Event()
        self._writers: list[asyncio.Task[None]] = []
        self._training: asyncio.Task[None] | None = None

    @property
    def pending_events(self) -> int:
        """Events of requests accepted and not yet answered: what the queue holds in memory."""
        return self._admitted

    async def start(self) -> None:
        self._writers = [asyncio.create_task(self._write_loop()) for _ in range(self._writer_count)]

    async def stop(self) -> None:
        """Write what was handed over, then stop the writers."""
        while self._admitted:
            await asyncio.sleep(0.01)
        tasks = self._writers + ([self._training] if self._training else [])
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def submit(self, events: list[ValidEvent], *, in_parts: bool = False) -> list[IngestResult]:
        """Store a request's events in one transaction, shared with other requests' events; with
        ``in_parts``, a large request's in several, each part committed within the timeout of the
        one before (an answer that times out may leave the first parts stored: the retry finds
        them duplicates)."""
        count = len(events)
        # A request larger than the whole queue is still taken when nothing else is waiting.
        if self._admitted and self._admitted + count > self._capacity:
            raise IngestOverloadedError(
                f"Ingest is overloaded: {self._admitted:,} events are waiting to be written. "
                "Retry later."
            )
        self._admitted += count
        try:
            prepared = await self._prepare(events)
        except BaseException:
            self._admitted -= count
            raise
        if not in_parts or count <= self._group_events:
            self._waiting_events += count
            return await self._committed(self._handed_over(prepared, self._waiting, in_parts))
        size = self._group_events
        parts = [
            self._handed_over(prepared[i : i + size], self._parts, per_event=True)
            for i in range(0, count, size)
        ]
        results: list[IngestResult] = []
        for part in parts:
            results += await self._committed(part)
        return results

    def _handed_over(
        self, events: list[PreparedEvent], lane: deque[_Request], per_event: bool
    ) -> asyncio.Future[list[IngestResult]]:
        done: asyncio.Future[list[IngestResult]] = asyncio.get_running_loop().create_future()
        # A request that timed out no longer reads its outcome; it is not an error left unseen.
        done.add_done_callback(lambda f: f.cancelled() or f.exception())
        lane.append(_Request(events, done, per_event))
        self._wake.set()
        return done

    async def _committed(self, done: asyncio.Future[list[IngestResult]]) -> list[IngestResult]:
        try:
            return await asyncio.wait_for(asyncio.shield(done), self._timeout)
        except TimeoutError:
            raise DatabaseUnavailableError(
                f"The events were not committed within {self._timeout:g} s; the database is slow "
                "or unavailable. Retry later."
            ) from None

    async def _prepare(self, events: list[ValidEvent]) -> list[PreparedEvent]:
        # A small request without SQL on the loop (see _PREPARE_ON_LOOP_BYTES). The others in a
        # worker thread, a chunk at a time: one event's SQL facet may take a second to parse
        # (thousands of statements), and on the event loop that would stall every other request.
        if sum(e.size for e in events) <= _PREPARE_ON_LOOP_BYTES and not any(map(_names_sql, events)):
            return prepare_events(events, self._rules)
        prepared: list[PreparedEvent] = []
        for start in range(0, len(events), _PREPARE_CHUNK):
            chunk = events[start : start + _PREPARE_CHUNK]
            prepared += await asyncio.to_thread(prepare_events, chunk, self._rules)
        return prepared

    async def _write_loop(self) -> None:
        while True:
            await self._wake.wait()
            if not self._waiting and not self._parts:
                self._wake.clear()
                continue
            if self._wait and self._waiting_events < self._group_events:
                await asyncio.sleep(self._wait)
            group: list[_Request] = []
            try:
                await self._write_in_turn(group)
            except Exception as exc:  # a bug here must not stop ingest; each request gets it
                log.exception("writing a group of %d requests failed", len(group))
                for request in group:
                    if not request.done.done():
                        request.done.set_exception(exc)
            finally:
                self._admitted -= sum(len(request.events) for request in group)

    def _take_group(self) -> list[_Request]:
        """The next part of a large request, if any, then the requests waiting, whole, up to
        ``group_events`` events (one request at least, if any)."""
        group: list[_Request] = [self._parts.popleft()] if self._parts else []
        size = 0
        # Beside a part, still one waiting request at least, however large: it is not held back
        # for as long as parts keep coming.
        while self._waiting and (not size or size + len(self._waiting[0].events) <= self._group_events):
            request = self._waiting.popleft()
            group.append(request)
            size += len(request.events)
        self._waiting_events -= size
        if not self._waiting and not self._parts:
            self._wake.clear()
        return group

    async def _write_in_turn(self, group: list[_Request]) -> None:
        """Wait for this writer's turn among every process's ingest writes, then take the requests
        waiting (into ``group``) and write them in that transaction.

        The group is taken once the turn is ours, not before: with several server workers, the
        requests that arrive while another worker's writer holds the turn join this group instead
        of waiting for the next one. Measured side by side, two workers, 32 clients: transactions of
        3 events instead of 1.4, 2.6 statements per event instead of 4.2, 896 and 925 events/s
        instead of 745 and 762 (one worker: unchanged).
        """
        try:
            async with self._pool.acquire() as conn, ingest_turn(conn):
                group += self._take_group()
                if not group:  # another writer of this process took them meanwhile
                    return
                results = await write_prepared(conn, [p for r in group for p in r.events], self._rules)
                train = payloads.wants_dictionary(conn)
        except Exception as exc:
            if not group:
                # The database failed before the turn came: the requests waiting get the failure.
                group += self._take_group()
            if isinstance(exc, RACES):
                await self._write(group)
            else:
                await self._failed(group, exc)
            return
        self._answer(group, results)
        if train and self._training is None:
            self._training = asyncio.create_task(self._train_payload_dictionary())

    async def _train_payload_dictionary(self) -> None:
        """Train the database's first payload dictionary once enough events are stored, beside
        ingest (its own connection, outside the ingest turn), so that the events after it are
        stored compressed against it (``store.payloads``)."""
        try:
            async with self._pool.acquire() as conn:
                await payloads.train_dictionary_beside_ingest(conn)
        except Exception:  # no connection to train on
            log.exception("training a payload dictionary failed; payloads stay compressed without one")
        finally:
            self._training = None

    async def _write(self, group: list[_Request]) -> None:
        try:
            results = await self._store([p for r in group for p in r.events])
        except Exception as exc:
            await self._failed(group, exc)
            return
        self._answer(group, results)

    async def _failed(self, group: list[_Request], exc: Exception) -> None:
        """A group whose write failed: for the database's state, every request gets the failure;
        for something its events hold, the requests in halves, down to those that fail alone (see
        the module)."""
        if is_transient(exc):
            for request in group:
                request.done.set_exception(exc)
            return
        try:
            outcomes = await writing_apart(group, self._store_requests, _failure, failed=exc)
        except Exception as failure:  # the database itself failed meanwhile: retried by clients
            for request in group:
                request.done.set_exception(failure)
            return
        for request, outcome in zip(group, outcomes, strict=True):
            if not isinstance(outcome, Exception):
                request.done.set_result(outcome)
            elif request.per_event:
                await self._write_apart(request, outcome)
            else:
                request.done.set_exception(_refusal(request, outcome))

    async def _store_requests(self, group: list[_Request]) -> list[list[IngestResult] | Exception]:
        results = await self._store([p for r in group for p in r.events])
        # A list typed to hold the failures writing_apart puts beside these results.
        return list(sliced(results, (len(r.events) for r in group)))

    async def _write_apart(self, request: _Request, exc: Exception) -> None:
        """A request with per-event results that failed alone with ``exc``: its events in halves,
        down to those refused alone (see the module)."""
        try:
            results = await writing_apart(request.events, self._store, _refused, failed=exc)
        except Exception as exc:  # the database itself failed meanwhile: the request is retried
            request.done.set_exception(exc)
            return
        request.done.set_result(results)

    @staticmethod
    def _answer(group: list[_Request], results: list[IngestResult]) -> None:
        for request, own in zip(group, sliced(results, (len(r.events) for r in group)), strict=True):
            if not request.done.done():
                request.done.set_result(own)

    async def _store(self, events: list[PreparedEvent]) -> list[IngestResult]:
        async def write() -> list[IngestResult]:
            async with self._pool.acquire() as conn:
                return await ingest_prepared(conn, events, self._rules)

        return await retrying_races(write, pause=0.01)


def _failure(_: _Request, exc: Exception) -> Exception:
    return exc


def _database_reason(exc: asyncpg.PostgresError) -> str:
    """PostgreSQL's reason for refusing, as every refusal quotes it."""
    return f"{exc} (SQLSTATE {exc.sqlstate})"


def _refusal(request: _Request, exc: Exception) -> Exception:
    """What a request stored all or none is answered when it failed alone: for the database's
    refusal of something it holds, a 4xx naming the reason (clients retry a 5xx, in vain here)."""
    if not isinstance(exc, asyncpg.PostgresError):
        return exc
    if len(request.events) == 1:
        reason = f"The database refused the event: {_database_reason(exc)}."
    else:
        reason = (
            f"The database refused an event of the array: {_database_reason(exc)}; none of "
            f"its {len(request.events)} events was stored. Post them to /api/v1/lineage/batch for "
            "a result per event."
        )
    log.warning("a request was refused: %s", reason)
    return EventRefusedError(reason)


def _refused(event: PreparedEvent, exc: Exception) -> IngestResult:
    """The result of an event the database refused for a reason of its own."""
    if isinstance(exc, asyncpg.PostgresError):
        reason = f"The database refused the event: {_database_reason(exc)}."
        log.warning("an event of a batch was refused: %s", reason)
    else:
        log.error("storing an event of a batch failed", exc_info=exc)
        reason = "Storing the event failed on an internal error, written to the server's log."
    return IngestResult("failed", event.event.kind, event.run_id, reason=reason)


def _names_sql(event: ValidEvent) -> bool:
    """Whether the event carries a SQL facet, whose parsing may take seconds of CPU."""
    job = event.raw.get("job")
    facets = job.get("facets") if isinstance(job, dict) else None
    return isinstance(facets, dict) and "sql" in facets
