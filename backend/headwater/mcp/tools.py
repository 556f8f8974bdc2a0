"""The MCP tools: read-only questions about lineage, answered from the store and the lineage walks.

Each tool answers what the REST or GraphQL API answers for the same question (the same walk, the
same records, the same JSON builders), in a smaller shape. Expected failures are tool errors whose
message says what to do next: an unknown node comes with the nearest names search finds.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import uuid
from collections import defaultdict, deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from headwater.api.read_turns import ReadTurns
from headwater.api.rest.catalog import datasets_json, jobs_json, runs_json
from headwater.api.rest.catalog.routing import MAX_OFFSET
from headwater.api.rest.lineage import parse_as_of
from headwater.errors import AppError, NodeNotFoundError, RunNotFoundError
from headwater.ingest.sql_facets import MAX_SQL_CHARS
from headwater.lineage.columns import fetch_column_lineage
from headwater.lineage.graph import Root, check_depth, fetch_lineage, resolve_root
from headwater.lineage.node_ids import FIELD_PREFIX, format_field_id, format_node_id
from headwater.mcp.answers import (
    ColumnEdge,
    DatasetAnswer,
    Finding,
    GraphNode,
    ImpactAnswer,
    ImpactedNode,
    ImpactGroup,
    JobAnswer,
    LineageAnswer,
    RootCauseAnswer,
    RunAnswer,
    RunPage,
    RunState,
    RunSummary,
    SearchAnswer,
    SearchResult,
    SqlLineageAnswer,
)
from headwater.sql_lineage import extract_lineage
from headwater.sql_lineage.catalog import read_schema
from headwater.store import catalog
from headwater.store.questions import fetch_suspect_changes, find_nodes

if TYPE_CHECKING:
    import asyncpg

    from headwater.lineage.documents import DocumentCache
    from headwater.settings import Settings

# A facet larger than this (as compact JSON) is replaced by its size and first characters: one SQL
# facet or a wide schema would otherwise fill a model's context on its own.
FACET_CHARS = 2_000
FACET_PREVIEW_CHARS = 300
DEFAULT_MAX_NODES = 100
SUGGESTIONS = 5
_RUN_STATES = {"FAIL": "RUN_FAILED", "ABORT": "RUN_FAILED"}


@dataclass(frozen=True)
class Reads:
    """What the tools read with: the pool, the settings (caps), the node document cache, and the
    turns lineage walks take (shared with REST and GraphQL under `serve`)."""

    pool: asyncpg.Pool
    settings: Settings
    cache: DocumentCache
    turns: ReadTurns


NodeId = Annotated[
    str,
    Field(
        description="A node id as search returns it: dataset:NAMESPACE:NAME, job:NAMESPACE:NAME or "
        "datasetField:NAMESPACE:DATASET:FIELD"
    ),
]
Limit = Annotated[int, Field(ge=1, le=100, description="Page size")]
Offset = Annotated[
    int,
    Field(ge=0, le=MAX_OFFSET, description="Items to skip (next_offset of the previous page)"),
]
MaxNodes = Annotated[
    int,
    Field(ge=1, description="Node cap of the walk (at most the server's HEADWATER_MAX_LINEAGE_NODES)"),
]
Depth = Annotated[
    int,
    Field(ge=0, description="Table level: jobs between the root and a node; column level: column hops"),
]


def _reads(ctx: Context) -> Reads:
    reads: Reads = ctx.request_context.lifespan_context  # type: ignore[assignment]
    return reads


def _answer(model: BaseModel, summary: str) -> CallToolResult:
    """A short summary for the reader, then the answer as JSON text and as structured content.

    Clients that pass only text content to the model still give it the whole answer.
    """
    data = model.model_dump(mode="json")
    text = json.dumps(data, separators=(",", ":"))
    return CallToolResult(
        content=[TextContent(type="text", text=summary), TextContent(type="text", text=text)],
        structured_content=data,
    )


def _iso(value: dt.datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _next(offset: int, shown: int, total: int) -> int | None:
    return offset + shown if offset + shown < total else None


def _cap(reads: Reads, asked: int) -> int:
    return min(asked, reads.settings.max_lineage_nodes)


def summarised_facets(facets: dict[str, Any]) -> dict[str, Any]:
    """Facets with each one larger than FACET_CHARS replaced by its size and first characters."""
    out: dict[str, Any] = {}
    for name, value in facets.items():
        text = json.dumps(value, separators=(",", ":"))
        if len(text) <= FACET_CHARS:
            out[name] = value
        else:
            out[name] = {
                "_summarised": f"{len(text)} characters of JSON; the REST API shows it whole",
                "_preview": text[:FACET_PREVIEW_CHARS],
            }
    return out


def _with_summarised_facets(document: dict[str, Any]) -> dict[str, Any]:
    return {**document, "facets": summarised_facets(document.get("facets") or {})}


async def _near_names(conn: asyncpg.Connection, node_id: str) -> list[str]:
    """Node ids whose names resemble the unknown one: its last name part, then that part's start."""
    name = node_id.rsplit(":", 1)[-1]
    last = name.replace("/", ".").rsplit(".", 1)[-1] or name
    for fragment in dict.fromkeys((last, last[: max(3, len(last) // 2)])):
        found, _ = await find_nodes(
            conn, fragment, kinds=["DATASET", "JOB", "COLUMN"], limit=SUGGESTIONS
        )
        if found:
            return [_found_id(f.kind, f.namespace, f.name, f.field) for f in found]
    return []


def _found_id(kind: str, namespace: str, name: str, field: str | None) -> str:
    if field is not None:
        return format_field_id(namespace, name, field)
    return format_node_id("DATASET" if kind == "DATASET" else "JOB", namespace, name)


class _Reading:
    """A connection for one tool call; expected failures become tool errors with next steps.

    ``node_id`` is the node the call asks about: when it is unknown, the error suggests near names.
    A call that ``walks`` lineage waits for its turn first (api/read_turns.py).
    """

    def __init__(self, reads: Reads, node_id: str | None = None, *, walks: bool = False) -> None:
        self.reads = reads
        self.node_id = node_id
        self.walks = walks
        self._held = contextlib.AsyncExitStack()
        self.conn: asyncpg.Connection

    async def __aenter__(self) -> asyncpg.Connection:
        async with contextlib.AsyncExitStack() as held:
            if self.walks:
                await held.enter_async_context(self.reads.turns.turn())
            self.conn = await held.enter_async_context(self.reads.pool.acquire())
            self._held = held.pop_all()
        return self.conn

    async def __aexit__(self, kind: Any, error: BaseException | None, tb: Any) -> None:
        try:
            if isinstance(error, NodeNotFoundError) and self.node_id is not None:
                near = await _near_names(self.conn, self.node_id)
                hint = (
                    f" Did you mean one of: {', '.join(near)}?"
                    if near
                    else " Use the search tool with a part of the name to find its node id."
                )
                raise ToolError(f"{error.message}{hint}") from error
            if isinstance(error, AppError):
                raise ToolError(error.message) from error
        finally:
            await self._held.__aexit__(kind, error, tb)


def _check_depth(reads: Reads, depth: int) -> int:
    try:
        return check_depth(depth, reads.settings.max_lineage_depth)
    except AppError as error:
        raise ToolError(error.message) from error


def _as_of(value: str | None) -> dt.datetime | None:
    try:
        return parse_as_of(value)
    except AppError as error:
        raise ToolError(error.message) from error


# -- search, get_dataset, get_job, get_run -------------------------------------------------------


async def search(
    ctx: Context,
    text: Annotated[str, Field(min_length=1, description="A part of the name, any case")],
    kinds: Annotated[
        list[Literal["DATASET", "JOB", "COLUMN"]],
        Field(min_length=1, description="What to look for (default: datasets, jobs and columns)"),
    ] = ["DATASET", "JOB", "COLUMN"],  # noqa: B006 (pydantic copies defaults)
    namespace: Annotated[str | None, Field(description="Only in this namespace")] = None,
    tag: Annotated[
        str | None, Field(description="Only tagged so (a column: its field or its dataset)")
    ] = None,
    limit: Limit = 20,
    offset: Offset = 0,
) -> Annotated[CallToolResult, SearchAnswer]:
    """Find datasets, jobs and columns by a part of their name, hottest (most depended on) first.

    Returns node ids to pass to the other tools.
    """
    async with _Reading(_reads(ctx)) as conn:
        found, total = await find_nodes(
            conn,
            text,
            kinds=list(dict.fromkeys(kinds)),
            namespace=namespace,
            tag=tag,
            limit=limit,
            offset=offset,
        )
    results = [
        SearchResult(
            kind=f.kind,
            node_id=_found_id(f.kind, f.namespace, f.name, f.field),
            namespace=f.namespace,
            name=f.name,
            field=f.field,
            field_type=f.field_type,
            heat=f.heat,
            updated_at=f.updated_at.isoformat(),
        )
        for f in found
    ]
    answer = SearchAnswer(
        total=total, offset=offset, next_offset=_next(offset, len(results), total), results=results
    )
    return _answer(answer, f"{total} match(es) for {text!r}; showing {len(results)} from {offset}.")


def _run_summary(run: dict[str, Any], job: str) -> RunSummary:
    return RunSummary(
        run_id=run["id"],
        job=job,
        state=run["state"],
        started_at=run["startedAt"],
        ended_at=run["endedAt"],
        duration_ms=run["durationMs"],
    )


async def _run_summaries(conn: asyncpg.Connection, runs: list[catalog.RunRecord]) -> list[RunSummary]:
    documents = await runs_json(conn, runs)
    jobs = await catalog.fetch_nodes_by_uuids(catalog.JOBS, conn, list({r.job_uuid for r in runs}))
    return [
        _run_summary(doc, format_node_id("JOB", jobs[r.job_uuid].namespace, jobs[r.job_uuid].name))
        for r, doc in zip(runs, documents, strict=True)
    ]


async def get_dataset(
    ctx: Context,
    node_id: NodeId,
    runs: Annotated[int, Field(ge=0, le=50, description="How many of the latest writing runs")] = 5,
) -> Annotated[CallToolResult, DatasetAnswer]:
    """A dataset now: its current version, schema (fields with types and tags), facets, tags, and
    the latest runs that wrote it with their states."""
    async with _Reading(_reads(ctx), node_id) as conn:
        root = await _resolve(conn, node_id, "DATASET")
        key = (root.namespace, root.name)
        record = (await catalog.fetch_nodes_by_keys(catalog.DATASETS, conn, [key]))[key]
        document = (await datasets_json(conn, [record]))[0]
        writers = await catalog.fetch_runs_writing_datasets(conn, [record.dataset_uuid], runs)
        recent = await _run_summaries(conn, writers[record.dataset_uuid])
    answer = DatasetAnswer(
        node_id=format_node_id("DATASET", root.namespace, root.name),
        dataset=_with_summarised_facets(document),
        recent_runs=recent,
    )
    states = ", ".join(f"{r.state} {r.ended_at or r.started_at}" for r in recent[:3]) or "no runs"
    return _answer(
        answer,
        f"Dataset {answer.node_id}: {len(document['fields'])} field(s), tags {document['tags']}; "
        f"latest writes: {states}.",
    )


async def _resolve(conn: asyncpg.Connection, node_id: str, kind: Literal["DATASET", "JOB"]) -> Root:
    """The dataset or job a node id names (aliases included); a tool error when it is the other kind."""
    root = await resolve_root(conn, node_id)
    if root.node_type != kind:
        tool = "get_dataset" if root.node_type == "DATASET" else "get_job"
        raise ToolError(f"'{node_id}' is a {root.node_type.lower()}, not a {kind.lower()}: use {tool}.")
    return root


async def get_job(
    ctx: Context,
    node_id: NodeId,
    runs_limit: Annotated[int, Field(ge=1, le=100, description="Runs per page")] = 10,
    runs_offset: Offset = 0,
) -> Annotated[CallToolResult, JobAnswer]:
    """A job now: its current version's inputs and outputs, facets (SQL and code summarised when
    large), tags, parent, latest run, and its runs newest first, a page at a time."""
    async with _Reading(_reads(ctx), node_id) as conn:
        root = await _resolve(conn, node_id, "JOB")
        key = (root.namespace, root.name)
        record = (await catalog.fetch_nodes_by_keys(catalog.JOBS, conn, [key]))[key]
        document = (await jobs_json(conn, [record]))[0]
        page = await catalog.page_job_runs(conn, record.job_uuid, limit=runs_limit, offset=runs_offset)
        total = await catalog.count_job_runs(conn, record.job_uuid)
        runs = await _run_summaries(conn, page)
    if document["latestRun"] is not None:
        document["latestRun"] = _with_summarised_facets(document["latestRun"])
    job_id = format_node_id("JOB", root.namespace, root.name)
    answer = JobAnswer(
        node_id=job_id,
        job=_with_summarised_facets(document),
        runs=RunPage(
            total=total,
            offset=runs_offset,
            next_offset=_next(runs_offset, len(runs), total),
            runs=runs,
        ),
    )
    latest = f"latest run {runs[0].state}" if runs and runs_offset == 0 else f"{total} run(s)"
    return _answer(
        answer,
        f"Job {job_id}: {len(document['inputs'])} input(s), {len(document['outputs'])} output(s), "
        f"{latest}.",
    )


async def get_run(
    ctx: Context,
    run_id: Annotated[
        str, Field(description="The run's id (a UUID), as get_job or get_dataset show it")
    ],
) -> Annotated[CallToolResult, RunAnswer]:
    """A run: its state and every state it went through, times, job version, the dataset versions
    it read and wrote, its facets and error message."""
    try:
        key = uuid.UUID(run_id)
    except ValueError:
        raise ToolError(
            f"'{run_id}' is not a run id: expected a UUID, as get_job and get_dataset list them."
        ) from None
    async with _Reading(_reads(ctx)) as conn:
        record = (await catalog.fetch_runs_by_uuids(conn, [key])).get(key)
        if record is None:
            raise RunNotFoundError(run_id)
        document = (await runs_json(conn, [record]))[0]
        jobs = await catalog.fetch_nodes_by_uuids(catalog.JOBS, conn, [record.job_uuid])
        job = jobs[record.job_uuid]
        states = (await catalog.fetch_run_states(conn, [key]))[key]
    answer = RunAnswer(
        run=_with_summarised_facets(document),
        job=format_node_id("JOB", job.namespace, job.name),
        states=[RunState(state=s.state, at=s.event_time.isoformat()) for s in states],
    )
    return _answer(
        answer,
        f"Run {document['id']} of {answer.job}: {document['state']}, "
        f"{len(document['inputDatasetVersions'])} input(s), "
        f"{len(document['outputDatasetVersions'])} output(s).",
    )


# -- lineage, impact_of_change, root_cause -------------------------------------------------------


def _cut_note(truncated: bool, cap: int) -> str | None:
    if not truncated:
        return None
    return (
        f"The walk stopped at max_nodes={cap}: every node nearer than the farthest one shown is "
        "included, farther ones may be missing. Lower the depth, or raise max_nodes."
    )


@dataclass(frozen=True)
class _Graph:
    """A table or column lineage answer reduced to ids, types, distances and edges."""

    root: str
    level: Literal["table", "column"]
    nodes: list[GraphNode]
    namespaces: dict[str, str]
    edges: list[tuple[str, str]]
    truncated: bool


async def _walk(
    reads: Reads,
    conn: asyncpg.Connection,
    node_id: str,
    *,
    direction: Literal["UPSTREAM", "DOWNSTREAM", "BOTH"],
    depth: int,
    max_nodes: int,
    level: Literal["table", "column"] = "table",
    as_of: dt.datetime | None = None,
) -> _Graph:
    """The walk GET /api/v1/lineage (table) or /api/v1/column-lineage (column) makes."""
    if node_id.startswith(FIELD_PREFIX + ":"):
        level = "column"
    if level == "column":
        columns = await fetch_column_lineage(
            conn, [node_id], depth=depth, direction=direction, as_of=as_of, max_nodes=max_nodes
        )
        return _Graph(
            node_id,
            "column",
            [GraphNode(id=n.id, type="DATASET_FIELD", distance=n.level) for n in columns.nodes],
            {n.id: n.namespace for n in columns.nodes},
            columns.edges,
            columns.truncated,
        )
    graph = await fetch_lineage(
        conn,
        [node_id],
        depth=depth,
        direction=direction,
        as_of=as_of,
        max_nodes=max_nodes,
        cache=reads.cache,
    )
    return _Graph(
        format_node_id(graph.roots[0].node_type, graph.roots[0].namespace, graph.roots[0].name),
        "table",
        [GraphNode(id=n.id, type=n.type, distance=n.hops) for n in graph.nodes],
        {n.id: n.namespace for n in graph.nodes},
        graph.edges,
        graph.truncated,
    )


async def lineage(
    ctx: Context,
    node_id: NodeId,
    direction: Annotated[
        Literal["UPSTREAM", "DOWNSTREAM", "BOTH"],
        Field(description="UPSTREAM: where it comes from; DOWNSTREAM: what it feeds; BOTH"),
    ] = "BOTH",
    depth: Depth = 5,
    level: Annotated[
        Literal["table", "column"],
        Field(description="table: datasets and jobs; column: fields (a datasetField id implies it)"),
    ] = "table",
    as_of: Annotated[
        str | None, Field(description="RFC 3339 time: the lineage as it was then (default: now)")
    ] = None,
    max_nodes: MaxNodes = DEFAULT_MAX_NODES,
) -> Annotated[CallToolResult, LineageAnswer]:
    """The lineage graph around a dataset, job or column: node ids with their distance from the
    root and the edges between them, the way data flows. Same walk as GET /api/v1/lineage and
    /api/v1/column-lineage."""
    reads = _reads(ctx)
    depth = _check_depth(reads, depth)
    when = _as_of(as_of)
    cap = _cap(reads, max_nodes)
    async with _Reading(reads, node_id, walks=True) as conn:
        graph = await _walk(
            reads,
            conn,
            node_id,
            level=level,
            direction=direction,
            depth=depth,
            as_of=when,
            max_nodes=cap,
        )
    answer = LineageAnswer(
        root=graph.root,
        level=graph.level,
        direction=direction,
        depth=depth,
        as_of=_iso(when),
        nodes=graph.nodes,
        edges=graph.edges,
        truncated=graph.truncated,
        note=_cut_note(graph.truncated, cap),
    )
    cut = " (cut by max_nodes)" if graph.truncated else ""
    return _answer(
        answer,
        f"{direction} {graph.level} lineage of {graph.root} to depth {depth}: "
        f"{len(graph.nodes)} node(s), {len(graph.edges)} edge(s){cut}.",
    )


def shortest_paths(root: str, edges: list[tuple[str, str]]) -> dict[str, list[str]]:
    """One shortest path from the root to every node it reaches along the edges; edges are taken
    in sorted order, so the path chosen is always the same."""
    following: dict[str, list[str]] = defaultdict(list)
    for origin, destination in sorted(edges):
        following[origin].append(destination)
    previous: dict[str, str | None] = {root: None}
    queue = deque([root])
    while queue:
        node = queue.popleft()
        for nxt in following[node]:
            if nxt not in previous:
                previous[nxt] = node
                queue.append(nxt)
    paths: dict[str, list[str]] = {}
    for node in previous:
        path: list[str] = []
        step: str | None = node
        while step is not None:
            path.append(step)
            step = previous[step]
        paths[node] = path[::-1]
    return paths


def _groups(nodes: list[GraphNode], namespaces: dict[str, str]) -> list[ImpactGroup]:
    counts: dict[tuple[int, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for n in nodes:
        counts[(n.distance, namespaces[n.id])][n.type] += 1
    return [
        ImpactGroup(
            distance=distance,
            namespace=namespace,
            datasets=c["DATASET"],
            jobs=c["JOB"],
            columns=c["DATASET_FIELD"],
        )
        for (distance, namespace), c in sorted(counts.items())
    ]


async def impact_of_change(
    ctx: Context,
    node_id: Annotated[
        str,
        Field(
            description="What would change: dataset:NAMESPACE:NAME (table level) or "
            "datasetField:NAMESPACE:DATASET:FIELD (column level)"
        ),
    ],
    depth: Depth = 10,
    max_nodes: MaxNodes = 1000,
    limit: Limit = 25,
    offset: Offset = 0,
) -> Annotated[CallToolResult, ImpactAnswer]:
    """What breaks if a dataset or column changes: everything downstream of it, counted by distance
    and namespace, and a page of the impacted nodes, nearest first, each with one path from the
    root that explains why it is impacted."""
    reads = _reads(ctx)
    depth = _check_depth(reads, depth)
    cap = _cap(reads, max_nodes)
    if node_id.startswith("job:"):
        raise ToolError(
            "impact_of_change starts from a dataset or a column; for a job, use lineage with "
            "direction DOWNSTREAM."
        )
    async with _Reading(reads, node_id, walks=True) as conn:
        graph = await _walk(reads, conn, node_id, direction="DOWNSTREAM", depth=depth, max_nodes=cap)
    paths = shortest_paths(graph.root, graph.edges)
    impacted = [n for n in graph.nodes if n.id != graph.root]
    total = len(impacted)
    page = impacted[offset : offset + limit]
    answer = ImpactAnswer(
        root=graph.root,
        level=graph.level,
        depth=depth,
        total=total,
        offset=offset,
        next_offset=_next(offset, len(page), total),
        groups=_groups(impacted, graph.namespaces),
        impacted=[
            ImpactedNode(
                id=n.id,
                type=n.type,
                namespace=graph.namespaces[n.id],
                distance=n.distance,
                path=paths.get(n.id, [graph.root, n.id]),
            )
            for n in page
        ],
        truncated=graph.truncated,
        note=_cut_note(graph.truncated, cap),
    )
    kinds: dict[str, int] = defaultdict(int)
    for n in impacted:
        kinds[n.type] += 1
    counted = ", ".join(f"{count} {kind.lower()}(s)" for kind, count in sorted(kinds.items()))
    return _answer(
        answer,
        f"Changing {graph.root} impacts {counted or 'nothing downstream'} within depth {depth}"
        f"{' (cut by max_nodes)' if graph.truncated else ''}; showing {len(page)} from {offset}.",
    )


async def root_cause(
    ctx: Context,
    node_id: Annotated[str, Field(description="The dataset that looks wrong: dataset:NAMESPACE:NAME")],
    since: Annotated[
        str | None,
        Field(description="RFC 3339 time: look at changes from then on (default: 7 days ago)"),
    ] = None,
    depth: Depth = 10,
    max_nodes: MaxNodes = 1000,
    limit: Limit = 20,
    offset: Offset = 0,
) -> Annotated[CallToolResult, RootCauseAnswer]:
    """Why a dataset may be wrong: upstream of it (and the dataset itself), the runs that failed or
    were aborted, the jobs whose version (inputs, outputs or code) changed, and the schema changes,
    since a time, newest first."""
    reads = _reads(ctx)
    depth = _check_depth(reads, depth)
    cap = _cap(reads, max_nodes)
    when = _as_of(since) or dt.datetime.now(dt.UTC) - dt.timedelta(days=7)
    if not node_id.startswith("dataset:"):
        raise ToolError("root_cause starts from a dataset: dataset:NAMESPACE:NAME (search finds it).")
    async with _Reading(reads, node_id, walks=True) as conn:
        graph = await _walk(reads, conn, node_id, direction="UPSTREAM", depth=depth, max_nodes=cap)
        distance = {n.id: n.distance for n in graph.nodes}
        changes, total = await fetch_suspect_changes(
            conn, list(distance), when, limit=limit, offset=offset
        )
    findings = [
        Finding(
            kind=_RUN_STATES.get(c.details.get("state"), c.kind)  # type: ignore[arg-type]
            if c.kind == "RUN_STATE_CHANGED"
            else c.kind,
            node_id=c.node_id,
            distance=distance[c.node_id],
            at=c.at.isoformat(),
            details=c.details,
        )
        for c in changes
    ]
    answer = RootCauseAnswer(
        root=graph.root,
        since=when.isoformat(),
        depth=depth,
        upstream_nodes=len(graph.nodes),
        total=total,
        offset=offset,
        next_offset=_next(offset, len(findings), total),
        findings=findings,
        truncated=graph.truncated,
        note=_cut_note(graph.truncated, cap),
    )
    return _answer(
        answer,
        f"{total} suspect change(s) upstream of {graph.root} since {when.isoformat()} "
        f"({len(graph.nodes)} node(s) examined); showing {len(findings)} from {offset}.",
    )


# -- sql_lineage ---------------------------------------------------------------------------------


async def sql_lineage(
    sql: Annotated[str, Field(min_length=1, description="One or more SQL statements")],
    dialect: Annotated[
        str | None,
        Field(description="trino, sparksql, postgres, bigquery, snowflake, … (default: generic SQL)"),
    ] = None,
    schema: Annotated[
        dict[str, dict[str, str | None] | list[str]] | None,
        Field(
            description='Columns of tables, {"db.orders": {"id": "int"}} or {"db.orders": ["id"]}: '
            "what `*` expands to and where a column named without its table is placed"
        ),
    ] = None,
) -> Annotated[CallToolResult, SqlLineageAnswer]:
    """The tables and columns SQL reads and writes, as `headwater sql-lineage` derives them; tables
    written and then read by the same script are traced through."""
    if len(sql) > MAX_SQL_CHARS:
        raise ToolError(f"The SQL is {len(sql)} characters long; at most {MAX_SQL_CHARS} are parsed.")
    try:
        columns = read_schema(schema or {})
    except ValueError as error:
        raise ToolError(f"Invalid schema: {error}.") from None
    # Parsing is CPU work that can take a while on long scripts: off the event loop.
    result = await asyncio.to_thread(extract_lineage, sql, dialect, columns)
    lineage_ = result.to_dict()
    answer = SqlLineageAnswer(
        dialect=dialect,
        inputs=lineage_["inputs"],
        outputs=lineage_["outputs"],
        columns=[ColumnEdge(**c) for c in lineage_["columns"]],
        errors=[str(e) for e in result.errors],
        warnings=[str(w) for w in result.warnings],
    )
    return _answer(
        answer,
        f"Reads {', '.join(answer.inputs) or 'nothing'}; writes {', '.join(answer.outputs) or 'nothing'}; "
        f"{len(answer.columns)} column edge(s)"
        + (f"; {len(answer.errors)} error(s): {answer.errors[0]}" if answer.errors else "")
        + (f"; {len(answer.warnings)} warning(s): {answer.warnings[0]}" if answer.warnings else "")
        + ".",
    )


TOOLS = (search, get_dataset, get_job, get_run, lineage, impact_of_change, root_cause, sql_lineage)
