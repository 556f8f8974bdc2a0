"""Datasets: identities and aliases, facets, current fields and versions."""

from __future__ import annotations

import datetime as dt
import hashlib
import uuid
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import msgspec

from headwater.db.pool import database_key, json_text
from headwater.db.queries import QUERIES
from headwater.store.facets import delete_reported_facets

if TYPE_CHECKING:
    import asyncpg

_encoder = msgspec.json.Encoder()


@dataclass(frozen=True)
class DatasetRow:
    dataset_uuid: uuid.UUID
    node_id: int
    namespace: str
    name: str
    created: bool


def _schema(fields: list[dict[str, Any]]) -> list[tuple[Any, Any, Any]]:
    """What a schema is compared by: its fields' names, types and descriptions, in order."""
    return [(f["name"], f.get("type"), f.get("description")) for f in fields]


def fields_hash(fields: list[dict[str, Any]]) -> int:
    """A schema as stored beside it (datasets.fields_hash): 64 bits of BLAKE2b over ``_schema``."""
    body = _encoder.encode(_schema(fields))
    return int.from_bytes(hashlib.blake2b(body, digest_size=8).digest(), "big", signed=True)


EMPTY_FIELDS_HASH = fields_hash([])


@dataclass(frozen=True)
class DatasetState:
    dataset_uuid: uuid.UUID
    fields_at: dt.datetime | None
    current_version_at: dt.datetime | None
    current_version_uuid: uuid.UUID | None
    # The current schema; None where only its hash was read (an upsert reads the hash alone when
    # there is one: ``fetch_dataset_states`` reads the fields).
    fields: list[dict[str, Any]] | None
    fields_hash: int | None = None

    @property
    def has_fields(self) -> bool:
        if self.fields is not None:
            return bool(self.fields)
        return self.fields_hash != EMPTY_FIELDS_HASH

    def has_same_fields(self, fields: list[dict[str, Any]], digest: int) -> bool:
        """Whether the current schema lists these fields, types, descriptions, in this order
        (``digest``: their ``fields_hash``)."""
        if self.fields_hash is not None:
            return self.fields_hash == digest
        assert self.fields is not None
        return _schema(self.fields) == _schema(fields)


@dataclass(frozen=True)
class DatasetUpsert:
    namespace: str
    name: str
    source_name: str | None
    description: str | None
    facets: dict[str, Any]
    deleted_facets: list[str]
    # The fields_hash of the schema the event reports for the dataset, which a dataset created by the
    # upsert starts with (with the event's time, so that the new row is not rewritten to record
    # them); None when the event reports none.
    fields_hash: int | None = None
    # Facets left out as held by the row since an earlier transaction (WrittenFacets.unsent).
    held: HeldFacets | None = None

    def whole(self) -> DatasetUpsert:
        """The report with the facets it left out as held put back."""
        if self.held is None:
            return self
        return replace(self, facets={**self.facets, **self.held.omitted}, held=None)


@dataclass(frozen=True)
class HeldFacets:
    """Facets a report leaves out because an earlier committed transaction of this process left the
    dataset's row holding them, value for value: the row (its uuid) as of its count of facet writes
    then. The upsert merges the rest only if the row's facets were not written since; otherwise the
    report is stale and is sent again with ``omitted``."""

    dataset_uuid: uuid.UUID
    facets_writes: int
    omitted: dict[str, Any]


# Every function below is a batch operation (see ``headwater.ingest.rounds``): it takes the requests
# of several events, runs one statement for all of them and returns one result per request.


async def find_dataset_aliases(
    conn: asyncpg.Connection, requests: list[list[tuple[str, str]]]
) -> list[dict[tuple[str, str], tuple[str, str]]]:
    """For each request, map the identities that belong to a dataset to its canonical identity."""
    identities = sorted({i for request in requests for i in request})
    rows = await conn.fetch(
        QUERIES["find_dataset_aliases"], [i[0] for i in identities], [i[1] for i in identities]
    )
    found = {(r["namespace"], r["name"]): (r["dataset_namespace"], r["dataset_name"]) for r in rows}
    return [{i: found[i] for i in request if i in found} for request in requests]


async def fetch_dataset_identities(
    conn: asyncpg.Connection, requests: list[list[uuid.UUID]]
) -> list[dict[uuid.UUID, DatasetRow]]:
    """Canonical identity and node id of datasets by uuid."""
    rows = await conn.fetch(
        QUERIES["fetch_dataset_identities"], sorted({u for request in requests for u in request})
    )
    found = {
        r["dataset_uuid"]: DatasetRow(r["dataset_uuid"], r["node_id"], r["namespace"], r["name"], False)
        for r in rows
    }
    return [{u: found[u] for u in request if u in found} for request in requests]


@dataclass(frozen=True)
class DatasetUpserts:
    """The datasets of one event as of its time, and the data sources (name, uri) it reported."""

    items: list[DatasetUpsert]
    at: dt.datetime
    sources: list[tuple[str, str | None]]


@dataclass(frozen=True)
class UpsertedDataset:
    """A dataset as stored after an upsert: its identity, the state an event's schema and version
    writes are decided by, and the time of its facets (None: not read)."""

    row: DatasetRow
    state: DatasetState
    facets_at: dt.datetime | None = None
    # The row's count of facet writes as the upsert left it (None: not read), and whether the facets
    # the report left out as held (``DatasetUpsert.held``) were confirmed and merged as such.
    facets_writes: int | None = None
    held_confirmed: bool = False


# Per canonical identity: the row's uuid, its count of facet writes, and facet name -> value as JSON.
KnownFacets = dict[tuple[str, str], tuple[uuid.UUID, int, dict[str, bytes]]]


class StoredFacets:
    """The facet values this process's committed ingest transactions left in datasets' rows, per
    database and canonical identity, each with the row's uuid and count of facet writes then (see
    ``HeldFacets``). Only ever a shortcut: the upsert checks the count before relying on it."""

    # Identities remembered per database; past it, forgotten all at once and learned again.
    LIMIT = 100_000

    def __init__(self) -> None:
        self._by_database: dict[object, KnownFacets] = {}

    def of(self, conn: asyncpg.Connection) -> KnownFacets:
        return self._by_database.setdefault(database_key(conn), {})


STORED_FACETS = StoredFacets()


class WrittenFacets:
    """The facet values one ingest transaction knows its datasets hold, by canonical identity.

    A later event of the same transaction that reports a facet as held (a run's COMPLETE after its
    START, jobs reading one table) need not send it: the upsert would parse it, merge it into the
    stored facets and find nothing changed. What a dataset holds is learned from the upserts: an
    event no earlier than the facets it was merged into (facets_at) leaves every facet it reported
    as it reported it, changed or not; an earlier one changes none the transaction knows. Nothing
    else changes these rows while the transaction runs (it holds them locked) but its own deletion
    of ``_deleted`` facets, which ``learn`` is told of.

    What the process's earlier transactions left (``stored``, from ``StoredFacets``) is used the same
    way for a dataset this transaction has not written yet, but checked by the upsert against the
    row's count of facet writes (``HeldFacets``): another process may have written them since. Once
    the transaction has committed, ``publish`` hands what it knows to the next ones.
    """

    def __init__(self, stored: KnownFacets | None = None) -> None:
        # identity -> facet name -> its value as JSON (compared as JSON: in Python, true == 1)
        self._held: dict[tuple[str, str], dict[str, bytes]] = {}
        # identity -> the row's uuid and count of facet writes, as the transaction's upserts left them
        self._rows: dict[tuple[str, str], tuple[uuid.UUID, int]] = {}
        self._stored = stored

    def unsent(self, upsert: DatasetUpsert) -> DatasetUpsert:
        """The upsert without the facets the dataset is known to hold, value for value."""
        key = (upsert.namespace, upsert.name)
        held = self._held.get(key)
        row: tuple[uuid.UUID, int] | None = None
        if held is None and self._stored is not None and key in self._stored:
            dataset_uuid, writes, held = self._stored[key]
            row = (dataset_uuid, writes)
        if not held:
            return upsert
        omitted = {k: v for k, v in upsert.facets.items() if k in held and held[k] == _encoder.encode(v)}
        if not omitted:
            return upsert
        facets = {k: v for k, v in upsert.facets.items() if k not in omitted}
        token = HeldFacets(row[0], row[1], omitted) if row is not None else None
        return replace(upsert, facets=facets, held=token)

    def learn(
        self,
        reported: DatasetUpsert,
        at: dt.datetime,
        facets_at: dt.datetime | None,
        result: UpsertedDataset | None = None,
    ) -> None:
        """What an upsert of the facets ``reported`` at ``at`` left, the row's facets then dated
        ``facets_at`` (None: unknown, and nothing learned); ``result``, the row as the upsert left it,
        tells whether what earlier transactions left still holds, and is handed on by ``publish``."""
        key = (reported.namespace, reported.name)
        held = self._held.get(key)
        if held is None:
            held = self._held[key] = {}
            # What an earlier transaction left still holds if the upsert confirmed it, or found the
            # row's facets written as many times as then.
            known = self._stored.get(key) if self._stored is not None else None
            if (
                known is not None
                and result is not None
                and known[0] == result.row.dataset_uuid
                and (result.held_confirmed or known[1] == result.facets_writes)
            ):
                held.update(known[2])
        if facets_at is not None and facets_at <= at:
            held.update((k, _encoder.encode(v)) for k, v in reported.facets.items())
        for name in reported.deleted_facets:
            held.pop(name, None)
        if result is not None and result.facets_writes is not None and not reported.deleted_facets:
            self._rows[key] = (result.row.dataset_uuid, result.facets_writes)
        else:  # unknown, or its facets written again after the count was read
            self._rows.pop(key, None)

    def publish(self) -> None:
        """Once the transaction has committed: what it knows, for the process's next ones."""
        stored = self._stored
        if stored is None:
            return
        if len(stored) + len(self._rows) > StoredFacets.LIMIT:
            stored.clear()
        for key, (dataset_uuid, writes) in self._rows.items():
            held = self._held.get(key)
            if held:
                stored[key] = (dataset_uuid, writes, held)
            else:
                stored.pop(key, None)


async def upsert_datasets(
    conn: asyncpg.Connection, requests: list[DatasetUpserts]
) -> list[list[UpsertedDataset]]:
    """Create or touch datasets by canonical identity as of a time, registering their namespaces
    and data sources (of several uris for a source, the last reported wins); one row per item."""
    items = [(item, r.at) for r in requests for item in r.items]
    if not items:
        return [[] for _ in requests]
    sources = [s for r in requests for s in r.sources]
    by_key, stale = await _upsert_dataset_items(conn, items, sources)
    if stale:
        # Facets left out as held were written since: the same reports again, whole.
        whole = [(i.whole(), at) for i, at in items if (i.namespace, i.name) in stale]
        again, _ = await _upsert_dataset_items(conn, whole, [])
        by_key.update(again)
    await delete_reported_facets(
        conn,
        [("DATASET", i.namespace, i.name, i.deleted_facets, at) for i, at in items if i.deleted_facets],
    )
    return [[by_key[(i.namespace, i.name)] for i in r.items] for r in requests]


async def _upsert_dataset_items(
    conn: asyncpg.Connection,
    items: list[tuple[DatasetUpsert, dt.datetime]],
    sources: list[tuple[str, str | None]],
) -> tuple[dict[tuple[str, str], UpsertedDataset], set[tuple[str, str]]]:
    """One ``upsert_datasets`` statement: each item's dataset as the upsert left it, by identity,
    and the identities of the items not merged because the facets they left out as held were
    written since (stale)."""
    rows = await conn.fetch(
        QUERIES["upsert_datasets"],
        json_text(
            [
                {
                    "namespace": i.namespace,
                    "name": i.name,
                    "source_name": i.source_name,
                    "description": i.description,
                    "facets": i.facets,
                    "at": at,
                    "fields_hash": i.fields_hash,
                    "held_uuid": i.held.dataset_uuid if i.held else None,
                    "held_writes": i.held.facets_writes if i.held else None,
                }
                for i, at in items
            ]
        ),
        [s[0] for s in sources],
        [s[1] for s in sources],
        list(range(len(sources))),
    )
    held = {(i.namespace, i.name) for i, _ in items if i.held}
    stale = {(r["namespace"], r["name"]) for r in rows if r["stale"]}
    by_key = {
        (r["namespace"], r["name"]): UpsertedDataset(
            _dataset_row(r),
            _dataset_state(r),
            r["facets_at"],
            r["facets_writes"],
            held_confirmed=(r["namespace"], r["name"]) in held,
        )
        for r in rows
        if not r["stale"]
    }
    # A held report whose row is gone is stale too.
    stale |= held - by_key.keys()
    missing = sorted({(i.namespace, i.name) for i, _ in items} - by_key.keys() - stale)
    if missing:
        # Created by a concurrent transaction after the upsert's snapshot was taken.
        found = await conn.fetch(
            QUERIES["fetch_datasets_by_identity"], [m[0] for m in missing], [m[1] for m in missing]
        )
        states = {
            r["dataset_uuid"]: r
            for r in await conn.fetch(
                QUERIES["fetch_dataset_states"], [r["dataset_uuid"] for r in found]
            )
        }
        by_key.update(
            {(r["namespace"], r["name"]): _upserted(r, states[r["dataset_uuid"]]) for r in found}
        )
    return by_key, stale


def _upserted(
    row: asyncpg.Record, state: asyncpg.Record, facets_at: dt.datetime | None = None
) -> UpsertedDataset:
    return UpsertedDataset(_dataset_row(row), _dataset_state(state), facets_at)


def _dataset_state(r: asyncpg.Record) -> DatasetState:
    return DatasetState(
        r["dataset_uuid"],
        r["fields_at"],
        r["current_version_at"],
        r["current_version_uuid"],
        r["fields"],
        r["fields_hash"],
    )


def _dataset_row(r: asyncpg.Record) -> DatasetRow:
    return DatasetRow(r["dataset_uuid"], r["node_id"], r["namespace"], r["name"], r["created"])


async def insert_dataset_aliases(
    conn: asyncpg.Connection, requests: list[list[tuple[str, str, uuid.UUID, str]]]
) -> list[None]:
    """Record identities of datasets; an identity already taken keeps its dataset."""
    aliases = [a for request in requests for a in request]
    if aliases:
        await conn.execute(
            QUERIES["insert_dataset_aliases"],
            [a[0] for a in aliases],
            [a[1] for a in aliases],
            [a[2] for a in aliases],
            [a[3] for a in aliases],
        )
    return [None] * len(requests)


async def fetch_dataset_states(
    conn: asyncpg.Connection, requests: list[list[uuid.UUID]]
) -> list[dict[uuid.UUID, DatasetState]]:
    """Current fields and version times of datasets, to decide what an event changes."""
    rows = await conn.fetch(
        QUERIES["fetch_dataset_states"], sorted({u for request in requests for u in request})
    )
    found = {r["dataset_uuid"]: _dataset_state(r) for r in rows}
    return [{u: found[u] for u in request if u in found} for request in requests]


async def replace_dataset_fields(
    conn: asyncpg.Connection,
    requests: list[tuple[dict[uuid.UUID, list[dict[str, Any]]], dt.datetime]],
) -> list[None]:
    """Set the current schema of datasets to the given fields, as of a time."""
    items = [(u, f, at) for fields, at in requests for u, f in fields.items()]
    if items:
        await conn.execute(
            QUERIES["replace_dataset_fields"],
            [i[0] for i in items],
            [json_text(i[1]) for i in items],
            [i[2] for i in items],
            [fields_hash(i[1]) for i in items],
        )
    return [None] * len(requests)


@dataclass(frozen=True)
class VersionWrites:
    """The writes of one event: (dataset, schema or None, storage version), by a run at a time."""

    writes: list[tuple[uuid.UUID, list[dict[str, Any]] | None, str | None]]
    run_uuid: uuid.UUID | None
    at: dt.datetime


async def upsert_dataset_versions(
    conn: asyncpg.Connection, requests: list[VersionWrites]
) -> list[dict[uuid.UUID, tuple[uuid.UUID, bool]]]:
    """Version per (dataset, schema, storage version), made current where it is the latest write:
    dataset uuid -> (version uuid, created)."""
    items = [(w, r.run_uuid, r.at) for r in requests for w in r.writes]
    if not items:
        return [{} for _ in requests]
    rows = await conn.fetch(
        QUERIES["upsert_dataset_versions"],
        [w[0] for w, _, _ in items],
        [json_text(w[1]) for w, _, _ in items],
        [w[2] for w, _, _ in items],
        [run for _, run, _ in items],
        [at for _, _, at in items],
    )
    found = {r["dataset_uuid"]: (r["dataset_version_uuid"], r["created"]) for r in rows}
    same = [w for w, _, _ in items if w[0] not in found]
    if same:
        # Versions already stored as written (a new statement: a version another transaction
        # created meanwhile is visible to it).
        rows = await conn.fetch(
            QUERIES["fetch_dataset_versions"],
            [w[0] for w in same],
            [json_text(w[1]) for w in same],
            [w[2] for w in same],
        )
        found.update({r["dataset_uuid"]: (r["dataset_version_uuid"], False) for r in rows})
        written_at = {w[0]: at for w, _, at in items}
        await conn.execute(
            QUERIES["set_current_dataset_versions"],
            [r["dataset_uuid"] for r in rows],
            [r["dataset_version_uuid"] for r in rows],
            [written_at[r["dataset_uuid"]] for r in rows],
        )
    return [{w[0]: found[w[0]] for w in r.writes} for r in requests]
