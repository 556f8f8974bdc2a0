"""ingest_prepared: prepared events -> raw_events + model rows + change log, in one transaction.

Retries are harmless: an event whose content hash is already stored changes nothing. Events of a
run may come in any order; every write below is a merge that respects eventTime.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import datetime as dt
import gc
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeVar

import asyncpg
import msgspec

from headwater.db.failures import is_database_unavailable
from headwater.errors import FieldError
from headwater.ingest.dataset_writes import DatasetWriter, IdentityLists, dataset_identity_lists
from headwater.ingest.job_writes import JobWriter
from headwater.ingest.metrics import TRANSACTION_EVENTS, TURN_HELD, TURN_WAIT
from headwater.ingest.normalize import AliasRule, NormalizedEvent, normalize_event
from headwater.ingest.rounds import Rounds
from headwater.ingest.sql_facets import derive_from_sql
from headwater.ingest.waves import Identity, event_identities, plan_waves
from headwater.store import changes as change_store
from headwater.store import datasets as dataset_store
from headwater.store import edges as edge_store
from headwater.store import events as event_store
from headwater.store import jobs as job_store
from headwater.store import runs as run_store
from headwater.store.changes import Change
from headwater.store.events import RawEventRow

if TYPE_CHECKING:
    from headwater.ingest.validate import ValidEvent

_encoder = msgspec.json.Encoder()

# Garbage collector thresholds while a process ingests (the server, the Marquez import, the Spark
# backfill's writer): events in flight are hundreds of thousands of container objects (events,
# facets, rows) that live for a request or a batch, and with Python's defaults (700, 10, 10) the
# collector walks them again and again for garbage that reference counting frees anyway. Measured:
# the import's CPU per event 0.70 to 0.41 ms, the server's on /batch 0.65 to 0.47 ms, a quarter of
# the backfill's writing time. Rarer collections still catch the odd cycle.
COLLECTOR_THRESHOLDS = (50_000, 20, 100)


@contextlib.contextmanager
def rare_collections() -> Iterator[None]:
    """``COLLECTOR_THRESHOLDS`` for the duration of a block, then the thresholds as they were."""
    before = gc.get_threshold()
    gc.set_threshold(*COLLECTOR_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)


# Failures of an ingest transaction that come from other writers, not from its events: concurrent
# writers (another server worker, a consumer, an import, a backfill) racing on the same rows, or a
# job upserted with its parent naming the uuid the parent's new row is given while another writer
# (a manual job) created the parent meanwhile. Rolled back, the same events may simply be written
# again.
RACES = (
    asyncpg.exceptions.SerializationError,
    asyncpg.exceptions.DeadlockDetectedError,
    asyncpg.exceptions.UniqueViolationError,
    asyncpg.exceptions.ForeignKeyViolationError,
)
RACE_ATTEMPTS = 5

T = TypeVar("T")


async def retrying_races(write: Callable[[], Awaitable[T]], pause: float) -> T:
    """``write()``, run again when it fails on a race (``RACES``), ``RACE_ATTEMPTS`` times in all,
    waiting ``pause`` seconds longer before each new attempt; the last failure is raised."""
    for attempt in range(1, RACE_ATTEMPTS + 1):
        try:
            return await write()
        except RACES:
            if attempt == RACE_ATTEMPTS:
                raise
            await asyncio.sleep(pause * attempt)
    raise AssertionError("unreachable")


def is_transient(exc: BaseException) -> bool:
    """Whether a write failed for the database's state or other writers (a race that kept failing),
    not for anything the events hold: the same write may succeed later."""
    return isinstance(exc, RACES) or is_database_unavailable(exc)


W = TypeVar("W")
R = TypeVar("R")


def sliced(results: list[R], sizes: Iterable[int]) -> list[list[R]]:
    """``results`` (of a write of several requests' or messages' events together) cut into
    consecutive slices of ``sizes``: each one's own."""
    slices, at = [], 0
    for size in sizes:
        slices.append(results[at : at + size])
        at += size
    return slices


async def writing_apart(
    items: list[W],
    write: Callable[[list[W]], Awaitable[list[R]]],
    refused: Callable[[W, Exception], R],
    *,
    failed: Exception | None = None,
) -> list[R]:
    """``write(items)``, one result per item; when it fails for something the items hold (not
    ``is_transient``), or ``failed`` is how it already did, each half again, down to the items that
    fail alone, whose result is then ``refused(item, failure)``. Each write is its own transaction:
    what succeeds stays, in order, as if the refused items had not been there. A few failing items
    of a thousand cost some twenty writes, not a thousand. A transient failure is raised (what was
    written stays written; written again, it is a duplicate)."""
    if failed is None:
        try:
            return await write(items)
        except Exception as exc:
            if is_transient(exc):
                raise
            failed = exc
    if len(items) == 1:
        return [refused(items[0], failed)]
    middle = len(items) // 2
    return await writing_apart(items[:middle], write, refused) + await writing_apart(
        items[middle:], write, refused
    )


# The store operations of the writers (``dataset_writes``, ``job_writes``) in the order an event
# takes them: a wave's events run each one together (see ``rounds``). The dataset identities of
# edges come last: they describe both the edges an event opens and those its job version closes.
WRITE_ORDER = (
    dataset_store.upsert_datasets,
    dataset_store.insert_dataset_aliases,
    dataset_store.replace_dataset_fields,
    dataset_store.upsert_dataset_versions,
    job_store.upsert_jobs,
    run_store.read_runs,
    job_store.upsert_job_versions,
    run_store.write_run_events,
    dataset_store.fetch_dataset_states,
    edge_store.upsert_edges,
    job_store.set_job_versions,
    dataset_store.fetch_dataset_identities,
)


@dataclass(frozen=True)
class IngestResult:
    """What happened to one event: stored, already stored, or (an event of a request with a result
    per event) refused by the database for a reason of its own, ``reason`` saying which."""

    status: Literal["created", "duplicate", "failed"]
    kind: str
    run_id: str | None
    warnings: list[FieldError] = field(default_factory=list)
    reason: str | None = None


@dataclass(frozen=True)
class PreparedEvent:
    """A valid event with what ingest derives from it before touching the database."""

    event: ValidEvent
    payload: str
    normalized: NormalizedEvent

    @property
    def run_id(self) -> str | None:
        run = getattr(self.event.model, "run", None)
        return str(run.run_id) if run else None


# Warnings an event's answer lists and its run keeps; the rest are counted in the last one. An event
# of 3,000 schemas past its share of fields had 2,000, a 300 KB answer.
MAX_WARNINGS = 100


def prepare_events(events: list[ValidEvent], alias_rules: list[AliasRule]) -> list[PreparedEvent]:
    """Encode, normalize and derive SQL lineage: the CPU part of ingest, no I/O."""
    prepared = []
    for event in events:
        n = normalize_event(event, alias_rules)
        for error in derive_from_sql(n, alias_rules):
            n.warnings.append(FieldError("$.job.facets.sql.query", f"SQL lineage: {error}"))
        if len(n.warnings) > MAX_WARNINGS:
            more = len(n.warnings) - MAX_WARNINGS + 1
            n.warnings[MAX_WARNINGS - 1 :] = [FieldError("$", f"{more:,} more warnings not listed")]
        prepared.append(PreparedEvent(event, _encoder.encode(event.raw).decode(), n))
    return prepared


def raw_event_row(p: PreparedEvent) -> RawEventRow:
    """What raw_events keeps of an event."""
    model = p.event.model
    run = getattr(model, "run", None)
    job = getattr(model, "job", None)
    return RawEventRow(
        content_hash=p.event.content_hash,
        kind=p.event.kind,
        event_type=getattr(model, "event_type", None),
        event_time=model.event_time,
        run_uuid=run.run_id if run else None,
        job_namespace=job.namespace if job else None,
        job_name=job.name if job else None,
        producer=model.producer or None,
        payload=p.payload,
    )


async def ingest_prepared(
    conn: asyncpg.Connection, events: list[PreparedEvent], alias_rules: list[AliasRule]
) -> list[IngestResult]:
    """Store prepared events in one transaction (all or none); duplicates are not stored twice."""
    async with ingest_turn(conn):
        return await write_prepared(conn, events, alias_rules)


class _RewrittenRows:
    """The runs and jobs this process's last committed ingest transaction wrote, read again by its
    next one (``event_store.visit_rewritten_rows``) so that PostgreSQL prunes their pages of the
    old versions those writes left. Only a hint: lost with the process, mixed when two transactions
    of one process overlap; what goes unvisited is left to VACUUM, as before."""

    def __init__(self) -> None:
        self.runs: set[uuid.UUID] = set()
        self.jobs: set[tuple[str, str]] = set()
        self._writing_runs: set[uuid.UUID] = set()
        self._writing_jobs: set[tuple[str, str]] = set()

    def wrote(self, events: list[NormalizedEvent]) -> None:
        for n in events:
            if n.run_id is not None:
                self._writing_runs.add(n.run_id)
            if n.job_namespace is not None and n.job_name is not None:
                self._writing_jobs.add((n.job_namespace, n.job_name))
            if n.parent_job is not None:
                self._writing_jobs.add(n.parent_job)

    def committed(self) -> None:
        self.runs, self._writing_runs = self._writing_runs, set()
        self.jobs, self._writing_jobs = self._writing_jobs, set()

    def rolled_back(self) -> None:
        self._writing_runs, self._writing_jobs = set(), set()

    async def visit(self, conn: asyncpg.Connection) -> None:
        runs, jobs = self.runs, self.jobs
        self.runs, self.jobs = set(), set()
        if runs or jobs:
            await event_store.visit_rewritten_rows(conn, sorted(runs), sorted(jobs))


_rewritten = _RewrittenRows()


# The dataset facets each ingest transaction of this task learned (``write_prepared``), handed to the
# process's next transactions once it has committed (``WrittenFacets.publish``); None outside a turn.
_turn_facets: contextvars.ContextVar[list[dataset_store.WrittenFacets] | None] = contextvars.ContextVar(
    "headwater_turn_facets", default=None
)


@contextlib.asynccontextmanager
async def ingest_turn(conn: asyncpg.Connection) -> AsyncIterator[None]:
    """A transaction that has waited for its turn among every process's ingest writes (see the
    query ``begin_ingest_writes``); ``write_prepared`` runs inside it. How long it waited and how
    long it held the turn are on ``/metrics`` (``ingest.metrics``)."""
    asked = time.perf_counter()
    granted: float | None = None
    learned: list[dataset_store.WrittenFacets] = []
    token = _turn_facets.set(learned)
    try:
        async with conn.transaction():
            await event_store.begin_ingest_writes(conn)
            granted = time.perf_counter()
            await _rewritten.visit(conn)
            yield
    except BaseException:
        _rewritten.rolled_back()
        raise
    finally:
        _turn_facets.reset(token)
        if granted is not None:
            TURN_WAIT.observe(granted - asked)
            TURN_HELD.observe(time.perf_counter() - granted)
    _rewritten.committed()
    for written in learned:
        written.publish()


async def write_prepared(
    conn: asyncpg.Connection, events: list[PreparedEvent], alias_rules: list[AliasRule]
) -> list[IngestResult]:
    """Store prepared events in the transaction of an ``ingest_turn``.

    The result is the same as storing the events one by one in the order given: events that share a
    run, job or dataset are written in that order, the others a wave at a time (``waves``, ``rounds``),
    and the change log lists the changes of each event in the order given.
    """
    TRANSACTION_EVENTS.observe(len(events))
    raw_ids = await event_store.insert_raw_events(conn, [raw_event_row(p) for p in events])
    results: list[IngestResult] = []
    fresh: list[NormalizedEvent] = []
    for p, raw_id in zip(events, raw_ids, strict=True):
        if raw_id is None:
            results.append(IngestResult("duplicate", p.event.kind, p.run_id))
            continue
        fresh.append(p.normalized)
        results.append(IngestResult("created", p.event.kind, p.run_id, p.normalized.warnings))
    changes: list[list[Change]] = [[] for _ in fresh]
    if fresh:
        # The identities already recorded, looked up once for the whole batch; the writers add
        # those they record, so that an event sees the aliases of the events before it.
        identity_lists = [dataset_identity_lists(n, alias_rules) for n in fresh]
        [aliases] = await dataset_store.find_dataset_aliases(conn, [event_identities(identity_lists)])
        # When the batch's parent jobs were created, if they are stored: a child event that
        # would not change its parent need not wait for the events writing it (a single event
        # has nothing to wait for).
        parents = {n.parent_job for n in fresh if n.parent_job is not None}
        parents_created = (
            await job_store.find_jobs_created(conn, sorted(parents))
            if len(fresh) > 1 and parents
            else {}
        )
        written_edges = edge_store.WrittenEdges()
        # Facets known from this process's committed transactions are used only inside a turn,
        # whose commit hands on what this one learns.
        turn_facets = _turn_facets.get()
        written_facets = dataset_store.WrittenFacets(
            dataset_store.STORED_FACETS.of(conn) if turn_facets is not None else None
        )
        if turn_facets is not None:
            turn_facets.append(written_facets)
        new_runs = run_store.NewRuns()
        for wave in plan_waves(fresh, alias_rules, aliases, parents_created, identity_lists):
            rounds = Rounds(conn, WRITE_ORDER)
            written = await rounds.run(
                [
                    _write(
                        rounds,
                        fresh[i],
                        identity_lists[i],
                        aliases,
                        parents_created,
                        written_edges,
                        written_facets,
                        new_runs,
                    )
                    for i in wave
                ]
            )
            for i, event_changes in zip(wave, written, strict=True):
                changes[i] = event_changes
        # The runs this transaction created, each with all its events folded in (see NewRuns).
        await run_store.write_new_runs(conn, new_runs)
        _rewritten.wrote(fresh)
    await change_store.insert_changes(conn, [c for event_changes in changes for c in event_changes])
    return results


async def _write(
    db: Rounds,
    n: NormalizedEvent,
    identity_lists: IdentityLists,
    aliases: dict[Identity, Identity],
    parents_created: dict[tuple[str, str], dt.datetime],
    written_edges: edge_store.WrittenEdges,
    written_facets: dataset_store.WrittenFacets,
    new_runs: run_store.NewRuns,
) -> list[Change]:
    """The model rows of one event; returns the changes it made."""
    changes: list[Change] = []
    datasets = DatasetWriter(db, n, identity_lists, aliases, changes, written_facets)
    await datasets.write_datasets()
    versions = await datasets.write_schemas_and_versions()
    if n.kind in ("RUN", "JOB"):
        await JobWriter(db, n, datasets, changes, parents_created, written_edges, new_runs).write(
            versions
        )
    return changes
