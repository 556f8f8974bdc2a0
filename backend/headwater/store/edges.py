"""Lineage edges (dataset <-> job) and column lineage, with validity intervals."""

from __future__ import annotations

import datetime as dt
import hashlib
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from headwater.db.pool import json_text
from headwater.db.queries import QUERIES

if TYPE_CHECKING:
    import asyncpg


@dataclass(frozen=True)
class EdgeChange:
    src_node_id: int
    dst_node_id: int
    edge_type: str
    dataset_uuid: uuid.UUID

    @classmethod
    def of(cls, row: asyncpg.Record) -> EdgeChange:
        """The edge a statement opened or closed, from the columns it returns."""
        return cls(row["src_node_id"], row["dst_node_id"], row["edge_type"], row["dataset_uuid"])


# A tuple, not a frozen dataclass: made for every column edge of every event, and a frozen dataclass
# is about four times slower to make.
class ColumnEdgeRow(NamedTuple):
    output_dataset_uuid: uuid.UUID
    output_field: str
    input_dataset_uuid: uuid.UUID
    input_field: str
    transformation_type: str | None
    transformation_subtype: str | None
    description: str | None
    masking: bool | None


# An edge as an event reports it: (src node, dst node, dataset, READ|WRITE, derived).
EdgeRow = tuple[int, int, uuid.UUID, str, bool]


class WrittenEdges:
    """The open edges and column edge sets one ingest transaction has written, as it left them.

    A later event of the same transaction that reports them again (a run's COMPLETE after its START,
    in the same group) is compared with them here, and what the upsert would leave as it is is not
    sent: the upsert would only find it, lock it and change nothing. The comparisons restate, in
    Python, the upsert's conditions for changing a row (``upsert_edges`` in edges.sql); a test holds
    the two to the same answers. Nothing else changes these rows while the transaction runs (it holds
    them locked) except its own closing of a job's edges when a job version moves: ``forget_job``.
    """

    def __init__(self) -> None:
        # job -> (src node, dst node) -> (first_seen_at, last_seen_at, valid_from, last_run_uuid, derived)
        self._edges: dict[uuid.UUID, dict[tuple[int, int], tuple[Any, ...]]] = {}
        # job -> (output dataset, derived) -> (set hash, whole, latest_first_seen_at, last_seen_at,
        # last_run_uuid)
        self._column_sets: dict[uuid.UUID, dict[tuple[uuid.UUID, bool], tuple[Any, ...]]] = {}

    def changes_edge(
        self, job_uuid: uuid.UUID, e: EdgeRow, at: dt.datetime, run: uuid.UUID | None
    ) -> bool:
        """Whether upserting the edge would change it (or open it: not written before)."""
        state = self._edges.get(job_uuid, {}).get((e[0], e[1]))
        if state is None:
            return True
        first_seen, last_seen, valid_from, last_run, derived = state
        return bool(
            at < first_seen
            or at < valid_from
            or (derived and not e[4])
            or (at > last_seen and run != last_run)
        )

    def changes_column_set(
        self, job_uuid: uuid.UUID, s: ColumnEdgeSet, at: dt.datetime, run: uuid.UUID | None
    ) -> bool:
        """Whether upserting the column edge set would change it or any of its edges."""
        state = self._column_sets.get(job_uuid, {}).get((s.output_dataset_uuid, s.derived))
        if state is None:
            return True
        set_hash, whole, latest_first_seen, last_seen, last_run = state
        return bool(
            set_hash != s.set_hash
            or not whole
            or at < latest_first_seen
            or (at > last_seen and run != last_run)
        )

    def record(self, row: asyncpg.Record) -> None:
        """An edge or column edge set as ``upsert_edges`` returned it."""
        if row["kind"] == "column_set":
            self._column_sets.setdefault(row["job_uuid"], {})[
                (row["output_dataset_uuid"], row["derived"])
            ] = (
                row["set_hash"],
                row["whole"],
                row["latest_first_seen_at"],
                row["last_seen_at"],
                row["last_run_uuid"],
            )
        elif row["kind"] == "edge":
            self._edges.setdefault(row["job_uuid"], {})[(row["src_node_id"], row["dst_node_id"])] = (
                row["first_seen_at"],
                row["last_seen_at"],
                row["valid_from"],
                row["last_run_uuid"],
                row["derived"],
            )

    def forget_job(self, job_uuid: uuid.UUID) -> None:
        """The job's edges may have been closed: compare nothing with what was recorded of them."""
        self._edges.pop(job_uuid, None)
        self._column_sets.pop(job_uuid, None)


@dataclass(frozen=True)
class ColumnEdgeSet:
    """The column edges one event of a job reports into one output, producer-reported or derived:
    ``set_hash`` names them with everything stored of them, to tell a set reported again."""

    output_dataset_uuid: uuid.UUID
    derived: bool
    set_hash: int
    # (column edge, superseded)
    edges: list[tuple[ColumnEdgeRow, bool]]

    @classmethod
    def of(
        cls, output_dataset_uuid: uuid.UUID, derived: bool, edges: list[tuple[ColumnEdgeRow, bool]]
    ) -> ColumnEdgeSet:
        """The set of ``edges``; of two reported for one key, the first is kept."""
        unique: dict[tuple[Any, ...], tuple[ColumnEdgeRow, bool]] = {}
        for c, superseded in edges:
            key = (
                c.output_field,
                c.input_dataset_uuid,
                c.input_field,
                c.transformation_type or "",
                c.transformation_subtype or "",
            )
            unique.setdefault(key, (c, superseded))
        edges = list(unique.values())
        # The hash of repr(sorted({described edge}, key=repr)), the text of the list built from each
        # edge's repr made once (a set makes the same reprs: one per distinct edge). Made for every
        # event reporting column lineage, where repr twice per edge and sorting by a key function
        # took most of its time. The uuids repeat: each one's hex is made once.
        hexes: dict[uuid.UUID, str] = {}
        reprs = sorted(
            {
                repr(
                    (
                        c.output_field,
                        hexes.get(c.input_dataset_uuid)
                        or hexes.setdefault(c.input_dataset_uuid, c.input_dataset_uuid.hex),
                        c.input_field,
                        c.transformation_type,
                        c.transformation_subtype,
                        c.description,
                        c.masking,
                        superseded,
                    )
                )
                for c, superseded in edges
            }
        )
        text = "[" + ", ".join(reprs) + "]"
        digest = hashlib.blake2b(text.encode(), digest_size=8).digest()
        return cls(output_dataset_uuid, derived, int.from_bytes(digest, "big", signed=True), edges)


def column_edge_sets(edges: list[tuple[ColumnEdgeRow, bool, bool]]) -> list[ColumnEdgeSet]:
    """An event's column edges, each as (edge, derived, superseded), as sets per output and derived."""
    grouped: dict[tuple[uuid.UUID, bool], list[tuple[ColumnEdgeRow, bool]]] = {}
    for c, derived, superseded in edges:
        grouped.setdefault((c.output_dataset_uuid, derived), []).append((c, superseded))
    return [ColumnEdgeSet.of(out, derived, members) for (out, derived), members in grouped.items()]


@dataclass(frozen=True)
class EventEdges:
    """What one event of a job reports: the edges or column edges, and when and by which run."""

    job_uuid: uuid.UUID
    at: dt.datetime
    run_uuid: uuid.UUID | None
    edges: list[EdgeRow] = field(default_factory=list)
    # (column edge, derived, superseded)
    column_edges: list[tuple[ColumnEdgeRow, bool, bool]] = field(default_factory=list)
    # What the transaction wrote before: edges it would leave unchanged are not sent.
    written: WrittenEdges = field(default_factory=WrittenEdges)


# The functions below are batch operations (see ``headwater.ingest.rounds``): the requests of several
# events, one statement, one result per request.


@dataclass(frozen=True)
class ColumnEdgeOpened:
    output_dataset_uuid: uuid.UUID
    output_field: str
    input_dataset_uuid: uuid.UUID
    input_field: str
    derived: bool


@dataclass(frozen=True)
class EdgesOpened:
    """What an event's edges opened (edges it only refreshed are not listed)."""

    edges: list[EdgeChange] = field(default_factory=list)
    column_edges: list[ColumnEdgeOpened] = field(default_factory=list)


async def upsert_edges(conn: asyncpg.Connection, requests: list[EventEdges]) -> list[EdgesOpened]:
    """Open or refresh the edges and the column edges (output field <- input field) of each event's
    job; returns what each request opened (events of one round are of different jobs)."""
    edges = [
        {
            "src": e[0],
            "dst": e[1],
            "dataset_uuid": e[2],
            "edge_type": e[3],
            "job_uuid": r.job_uuid,
            "at": r.at,
            "run_uuid": r.run_uuid,
            "derived": e[4],
        }
        for r in requests
        for e in r.edges
        if r.written.changes_edge(r.job_uuid, e, r.at, r.run_uuid)
    ]
    sets = [
        (r, column_set)
        for r in requests
        for column_set in column_edge_sets(r.column_edges)
        if r.written.changes_column_set(r.job_uuid, column_set, r.at, r.run_uuid)
    ]
    # Thousands of column edges a round: one JSON document encodes far faster than many arrays.
    column_sets = [
        {
            "job": r.job_uuid,
            "out_ds": s.output_dataset_uuid,
            "derived": s.derived,
            "hash": s.set_hash,
            "at": r.at,
            "run_uuid": r.run_uuid,
            "edges": [
                {
                    "out_field": c.output_field,
                    "in_ds": c.input_dataset_uuid,
                    "in_field": c.input_field,
                    "ttype": c.transformation_type,
                    "tsub": c.transformation_subtype,
                    "descr": c.description,
                    "masking": c.masking,
                    "superseded": superseded,
                }
                for c, superseded in s.edges
            ],
        }
        for r, s in sets
    ]
    opened: dict[uuid.UUID, EdgesOpened] = {}
    if edges or column_sets:
        written = {r.job_uuid: r.written for r in requests}
        statement = QUERIES["upsert_edges"]
        for row in await conn.fetch(statement, json_text(edges), json_text(column_sets)):
            written[row["job_uuid"]].record(row)
            if not row["opened"]:
                continue
            job = opened.setdefault(row["job_uuid"], EdgesOpened())
            if row["kind"] == "column_edge":
                job.column_edges.append(
                    ColumnEdgeOpened(
                        row["output_dataset_uuid"],
                        row["output_field"],
                        row["input_dataset_uuid"],
                        row["input_field"],
                        row["derived"],
                    )
                )
            else:
                job.edges.append(EdgeChange.of(row))
    return [opened.get(r.job_uuid, EdgesOpened()) for r in requests]
