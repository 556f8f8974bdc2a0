"""Column-level lineage: follow dataset fields through any number of jobs over column_lineage.

A node is a dataset field, ``datasetField:NS:DATASET:FIELD``; an edge goes from an input field to
an output field computed from it (origin = input, destination = output, the way data flows). A
``dataset:NS:NAME`` root stands for all its fields (its schema and any field named in column
lineage). Depth counts column hops, one per job: depth 1 upstream of a field is the fields it is
computed from. DOWNSTREAM follows data forwards, UPSTREAM backwards, BOTH is the union of the two.

Edges reported by producers (the columnLineage facet) and edges derived by Headwater from a job's
SQL are both followed; when both exist for the same (input field, output field) pair, the producer's
transformations are shown. Edges marked superseded (the less trusted source's edges into an output,
e.g. a producer naming fields the output does not have) are kept for comparison, never followed.

Point in time: as for table lineage, ``as_of=T`` follows the column edges valid at T
(``valid_from <= T < coalesce(valid_to, infinity)``) instead of the open ones.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

import msgspec

from headwater.db.queries import QUERIES
from headwater.errors import NodeNotFoundError
from headwater.lineage.graph import DEFAULT_MAX_NODES, Direction
from headwater.lineage.horizon import check_horizon
from headwater.lineage.node_ids import format_field_id, parse_field_id, parse_node_id

if TYPE_CHECKING:
    import asyncpg

# Nodes are built as msgspec structs whose data, input fields and edges are Marquez's shape (camelCase
# on the wire): a wide table through many jobs is thousands of nodes, and building them only once is
# most of the Python time of an answer. They hold no reference cycles, so the garbage collector need
# not track them (gc=False): thousands of tracked objects per request make full collections frequent.


class Transformation(msgspec.Struct, frozen=True, gc=False):
    type: str | None
    subtype: str | None
    description: str | None
    masking: bool | None


class InputField(msgspec.Struct, rename="camel", gc=False):
    """An input of a field, with the transformations from it (the first also as type/description)."""

    namespace: str
    dataset: str
    dataset_version: uuid.UUID | None
    field: str
    transformation_description: str | None
    transformation_type: str | None
    transformations: list[Transformation]

    @property
    def id(self) -> str:
        return format_field_id(self.namespace, self.dataset, self.field)


class FieldData(msgspec.Struct, rename="camel", gc=False):
    """A field node's data; its transformation type/description are set when its inputs agree."""

    namespace: str
    dataset: str
    dataset_version: uuid.UUID | None
    field: str
    field_type: str | None
    transformation_description: str | None
    transformation_type: str | None
    input_fields: list[InputField]


class Edge(msgspec.Struct, gc=False):
    origin: str
    destination: str


class ColumnNode(msgspec.Struct, gc=False):
    """A field of the answer: its id, column hops from the nearest root, data and edges."""

    id: str
    level: int
    data: FieldData
    in_edges: list[Edge]
    out_edges: list[Edge]

    @property
    def namespace(self) -> str:
        return self.data.namespace

    @property
    def dataset(self) -> str:
        return self.data.dataset

    @property
    def field(self) -> str:
        return self.data.field

    @property
    def field_type(self) -> str | None:
        return self.data.field_type

    @property
    def dataset_version(self) -> uuid.UUID | None:
        return self.data.dataset_version

    @property
    def input_fields(self) -> list[InputField]:
        return self.data.input_fields


@dataclass
class ColumnGraph:
    """The fields reached (ordered by level, then id) and whether the node cap cut the walk."""

    nodes: list[ColumnNode]
    truncated: bool = False

    @property
    def edges(self) -> list[tuple[str, str]]:
        """Every (input field, output field) edge, sorted."""
        return sorted((e.origin, e.destination) for n in self.nodes for e in n.out_edges)


FieldKey = tuple[str, str]  # (dataset uuid as text, field)


async def resolve_column_roots(
    conn: asyncpg.Connection, node_ids: list[str], as_of: dt.datetime | None = None
) -> list[tuple[uuid.UUID, str]]:
    """The (dataset uuid, field) pairs named by datasetField or dataset ids; 404 for an unknown one."""
    fields: list[tuple[uuid.UUID, str]] = []
    whole: list[uuid.UUID] = []
    for i, node_id in enumerate(node_ids):
        if node_id.startswith("dataset:"):
            parsed_dataset = parse_node_id(node_id)
            rows = await conn.fetch(
                QUERIES["resolve_dataset_ids"],
                [i] * len(parsed_dataset.candidates),
                [c[0] for c in parsed_dataset.candidates],
                [c[1] for c in parsed_dataset.candidates],
            )
            if not rows:
                raise NodeNotFoundError(node_id)
            whole.append(max(rows, key=lambda r: len(r["asked_namespace"]))["dataset_uuid"])
            continue
        parsed = parse_field_id(node_id)
        rows = await conn.fetch(
            QUERIES["resolve_dataset_fields"],
            [i] * len(parsed.candidates),
            [c[0] for c in parsed.candidates],
            [c[1] for c in parsed.candidates],
            [c[2] for c in parsed.candidates],
        )
        known = [r for r in rows if r["known"]]
        if not known:
            raise NodeNotFoundError(node_id)
        best = max(known, key=lambda r: (len(r["asked_namespace"]), len(r["name"])))
        fields.append((best["dataset_uuid"], best["field"]))
    if whole:
        rows = await conn.fetch(QUERIES["fetch_dataset_columns"], whole, as_of)
        fields.extend(sorted((r["dataset_uuid"], r["field"]) for r in rows))
    return list(dict.fromkeys(fields))


async def fetch_column_lineage(
    conn: asyncpg.Connection,
    node_ids: list[str],
    *,
    depth: int,
    direction: Direction = "BOTH",
    as_of: dt.datetime | None = None,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> ColumnGraph:
    """The column lineage graph around fields (or every field of datasets), current or as of a time."""
    await check_horizon(conn, as_of)
    roots = await resolve_column_roots(conn, node_ids, as_of)
    if not roots:
        return ColumnGraph([])
    # A dataset stands for all its fields, which may be thousands: more than the cap, they are cut
    # to the fields that have lineage (else the first ones), and to half the cap, so that the
    # answer holds what they connect to and stays as small as the caller asked.
    cut = len(roots) > max_nodes
    if cut:
        connected = {
            (r["dataset_uuid"], r["field"])
            for r in await conn.fetch(
                QUERIES["fetch_connected_column_fields"],
                [str(r[0]) for r in roots],
                [r[1] for r in roots],
                as_of,
            )
        }
        with_lineage = [r for r in roots if (str(r[0]), r[1]) in connected]
        roots = (with_lineage or roots)[: max(1, max_nodes // 2)]
    cap = max(max_nodes, len(roots))
    walk = await conn.fetchrow(
        QUERIES["walk_column_lineage"],
        [r[0] for r in roots],
        [r[1] for r in roots],
        depth,
        direction in ("DOWNSTREAM", "BOTH"),
        direction in ("UPSTREAM", "BOTH"),
        as_of,
        cap,
    )
    assert walk is not None
    keys = zip(walk["datasets"] or [], walk["fields"] or [], strict=True)
    levels = dict(zip(keys, walk["levels"] or [], strict=True))
    datasets = await conn.fetch(
        QUERIES["fetch_column_datasets"], list({key[0] for key in levels}), as_of
    )
    nodes = build_nodes(levels, datasets)
    ordered = sorted(nodes.items(), key=lambda item: (item[1].level, item[1].id))
    truncated = walk["truncated"] or cut
    if len(ordered) > cap:  # the two walks together: keep the nearest fields
        ordered = ordered[:cap]
        nodes = dict(ordered)
        truncated = True
    edges = await conn.fetch(
        QUERIES["fetch_column_lineage_edges"],
        [key[0] for key in nodes],
        [key[1] for key in nodes],
        as_of,
    )
    link(nodes, preferred(edges, nodes))
    return ColumnGraph([node for _, node in ordered], truncated)


def build_nodes(
    levels: dict[FieldKey, int], datasets: list[asyncpg.Record]
) -> dict[FieldKey, ColumnNode]:
    """One node per reached field, without edges yet."""
    fields_of: dict[str, list[str]] = defaultdict(list)
    for ds_uuid, field_name in levels:
        fields_of[ds_uuid].append(field_name)
    nodes: dict[FieldKey, ColumnNode] = {}
    for ds_uuid, namespace, name, version, field_names, field_types in datasets:
        types = dict(zip(field_names, field_types, strict=True))
        prefix = format_field_id(namespace, name, "")
        for field_name in fields_of[ds_uuid]:
            data = FieldData(namespace, name, version, field_name, types.get(field_name), None, None, [])
            nodes[(ds_uuid, field_name)] = ColumnNode(
                prefix + field_name, levels[(ds_uuid, field_name)], data, [], []
            )
    return nodes


def preferred(
    rows: list[asyncpg.Record], nodes: dict[FieldKey, ColumnNode]
) -> dict[tuple[FieldKey, FieldKey], list[Transformation]]:
    """Transformations per (input, output) pair among the nodes, from the pair's preferred source."""
    best: dict[tuple[FieldKey, FieldKey], tuple[int, list[Transformation]]] = {}
    for (
        in_ds,
        in_field,
        out_ds,
        out_field,
        t_type,
        t_subtype,
        description,
        masking,
        derived,
    ) in rows:
        source = (in_ds, in_field)
        if source not in nodes:  # an input beyond the answer
            continue
        pair = (source, (out_ds, out_field))
        rank = 1 if derived else 0  # producer-reported over derived
        step = Transformation(t_type, t_subtype, description, masking)
        found = best.get(pair)
        if found is None or rank < found[0]:
            best[pair] = (rank, [step])
        elif rank == found[0] and step not in found[1]:
            found[1].append(step)
            found[1].sort(key=_step_order)
    return {pair: steps for pair, (_, steps) in best.items()}


def _step_order(step: Transformation) -> tuple[str, str, str]:
    return step.type or "", step.subtype or "", step.description or ""


def link(
    nodes: dict[FieldKey, ColumnNode], pairs: dict[tuple[FieldKey, FieldKey], list[Transformation]]
) -> None:
    """Add edges and input fields to the nodes, every list sorted by node id."""
    for (source_key, target_key), steps in pairs.items():
        source, target = nodes[source_key], nodes[target_key]
        edge = Edge(source.id, target.id)
        source.out_edges.append(edge)
        target.in_edges.append(edge)
        s = source.data
        first = steps[0]
        target.data.input_fields.append(
            InputField(
                s.namespace, s.dataset, s.dataset_version, s.field, first.description, first.type, steps
            )
        )
    for node in nodes.values():
        if len(node.out_edges) > 1:
            node.out_edges.sort(key=lambda e: e.destination)
        inputs = node.data.input_fields
        if not inputs:
            continue
        if len(inputs) > 1:
            order = sorted(range(len(inputs)), key=lambda i: node.in_edges[i].origin)
            node.in_edges = [node.in_edges[i] for i in order]
            node.data.input_fields = inputs = [inputs[i] for i in order]
        types = {i.transformation_type for i in inputs}
        descriptions = {i.transformation_description for i in inputs}
        node.data.transformation_type = types.pop() if len(types) == 1 else None
        node.data.transformation_description = descriptions.pop() if len(descriptions) == 1 else None
