"""The MCP tools, driven with the SDK's own client over streamable HTTP and stdio, answer exactly
what the REST and GraphQL APIs answer for the same question, in pages and under node caps."""

from __future__ import annotations

import itertools
from collections import defaultdict, deque
from typing import Any

import httpx
import pytest

from headwater.sql_lineage import extract_lineage
from tests.client import gql
from tests.factories import rid
from tests.mcp.conftest import Sessions, call

pytestmark = [pytest.mark.db, pytest.mark.slow]

ORDERS = "dataset:warehouse:orders"
REPORT = "job:pipelines:report"
TOOLS = {
    "search",
    "get_dataset",
    "get_job",
    "get_run",
    "lineage",
    "impact_of_change",
    "root_cause",
    "sql_lineage",
}


async def rest_lineage(rest: httpx.AsyncClient, path: str, **params: Any) -> dict[str, Any]:
    response = await rest.get(path, params=params)
    assert response.status_code == 200, response.text
    return response.json()


def edges_of(graph: list[dict[str, Any]]) -> list[list[str]]:
    return sorted([e["origin"], e["destination"]] for n in graph for e in n["outEdges"])


def distances(root: str, edges: list[list[str]]) -> dict[str, int]:
    following = defaultdict(list)
    for origin, destination in edges:
        following[origin].append(destination)
    seen = {root: 0}
    queue = deque([root])
    while queue:
        node = queue.popleft()
        for nxt in following[node]:
            if nxt not in seen:
                seen[nxt] = seen[node] + 1
                queue.append(nxt)
    return seen


async def test_every_tool_is_listed_read_only_with_its_schemas(sessions: Sessions) -> None:
    async with sessions() as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description
        assert tool.output_schema is not None
        assert tool.output_schema["type"] == "object"
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint
    lineage = tools["lineage"].input_schema
    assert lineage["required"] == ["node_id"]
    assert set(lineage["properties"]["direction"]["enum"]) == {"UPSTREAM", "DOWNSTREAM", "BOTH"}


@pytest.mark.parametrize("direction", ["UPSTREAM", "DOWNSTREAM", "BOTH"])
async def test_table_lineage_is_the_rest_graph(
    sessions: Sessions, rest: httpx.AsyncClient, direction: str
) -> None:
    expected = await rest_lineage(rest, "/api/v1/lineage", nodeId=ORDERS, depth=3, direction=direction)
    async with sessions() as session:
        answer = await call(session, "lineage", node_id=ORDERS, depth=3, direction=direction)
    assert [(n["id"], n["type"]) for n in answer["nodes"]] == [
        (n["id"], n["type"]) for n in expected["graph"]
    ]
    assert answer["edges"] == edges_of(expected["graph"])
    assert answer["truncated"] is expected["truncated"] is False
    assert answer["note"] is None


async def test_column_lineage_is_the_rest_column_graph(
    sessions: Sessions, rest: httpx.AsyncClient
) -> None:
    field = "datasetField:warehouse:orders:id"
    expected = await rest_lineage(rest, "/api/v1/column-lineage", nodeId=field, depth=5)
    async with sessions() as session:
        answer = await call(session, "lineage", node_id=field, depth=5)
        whole = await call(session, "lineage", node_id=ORDERS, level="column", depth=5)
    assert answer["level"] == "column"
    assert [n["id"] for n in answer["nodes"]] == [n["id"] for n in expected["graph"]]
    assert answer["edges"] == edges_of(expected["graph"])
    assert any(e[1] == field for e in answer["edges"])
    by_dataset = await rest_lineage(rest, "/api/v1/column-lineage", nodeId=ORDERS, depth=5)
    assert [n["id"] for n in whole["nodes"]] == [n["id"] for n in by_dataset["graph"]]


async def test_lineage_as_of_a_past_time_is_the_rest_graph_then(
    sessions: Sessions, rest: httpx.AsyncClient
) -> None:
    # Between the report's first and second runs it still read customers.
    then = "2026-01-01T12:05:00Z"
    expected = await rest_lineage(
        rest, "/api/v1/lineage", nodeId=REPORT, depth=1, direction="UPSTREAM", asOf=then
    )
    async with sessions() as session:
        answer = await call(
            session, "lineage", node_id=REPORT, depth=1, direction="UPSTREAM", as_of=then
        )
    assert answer["edges"] == edges_of(expected["graph"])
    assert "dataset:warehouse:customers" in {n["id"] for n in answer["nodes"]}


async def test_the_node_cap_cuts_the_walk_as_rest_does_and_says_so(
    sessions: Sessions, rest: httpx.AsyncClient
) -> None:
    expected = await rest_lineage(rest, "/api/v1/lineage", nodeId=ORDERS, depth=5, maxNodes=3)
    async with sessions() as session:
        answer = await call(session, "lineage", node_id=ORDERS, depth=5, max_nodes=3)
    assert [n["id"] for n in answer["nodes"]] == [n["id"] for n in expected["graph"]]
    assert answer["truncated"] is expected["truncated"] is True
    assert "max_nodes=3" in answer["note"]


async def test_impact_of_a_dataset_is_everything_downstream_with_a_shortest_path_each(
    sessions: Sessions, rest: httpx.AsyncClient
) -> None:
    expected = await rest_lineage(
        rest, "/api/v1/lineage", nodeId=ORDERS, depth=10, direction="DOWNSTREAM"
    )
    edges = edges_of(expected["graph"])
    hops = distances(ORDERS, edges)
    async with sessions() as session:
        first = await call(session, "impact_of_change", node_id=ORDERS, limit=3)
        rest_of_it = await call(
            session, "impact_of_change", node_id=ORDERS, limit=100, offset=first["next_offset"]
        )
    impacted = first["impacted"] + rest_of_it["impacted"]
    assert first["total"] == len(expected["graph"]) - 1 == len(impacted)
    assert rest_of_it["next_offset"] is None
    assert {n["id"] for n in impacted} == {n["id"] for n in expected["graph"]} - {ORDERS}
    assert {"dataset:warehouse:daily", "job:pipelines:cleanup"} <= {n["id"] for n in impacted}
    for node in impacted:
        path = node["path"]
        assert path[0] == ORDERS
        assert path[-1] == node["id"]
        assert len(path) - 1 == hops[node["id"]] == node["distance"]
        assert all([a, b] in edges for a, b in itertools.pairwise(path))
    assert sum(g["datasets"] + g["jobs"] for g in first["groups"]) == first["total"]


async def test_impact_of_a_column_follows_column_lineage(
    sessions: Sessions, rest: httpx.AsyncClient
) -> None:
    field = "datasetField:warehouse:orders:currency"
    root = "datasetField:warehouse:rates:code"
    expected = await rest_lineage(
        rest, "/api/v1/column-lineage", nodeId=root, depth=10, direction="DOWNSTREAM"
    )
    async with sessions() as session:
        answer = await call(session, "impact_of_change", node_id=root)
    assert answer["level"] == "column"
    assert [n["id"] for n in answer["impacted"]] == [
        n["id"] for n in expected["graph"] if n["id"] != root
    ]
    assert field in {n["id"] for n in answer["impacted"]}
    assert answer["groups"][0]["columns"] >= 1


async def test_root_cause_finds_the_failure_the_job_change_and_the_schema_change(
    sessions: Sessions, rest: httpx.AsyncClient
) -> None:
    async with sessions() as session:
        answer = await call(
            session, "root_cause", node_id="dataset:warehouse:daily", since="2026-01-01T00:00:00Z"
        )
        later = await call(
            session, "root_cause", node_id="dataset:warehouse:daily", since="2026-01-01T12:10:30Z"
        )
    kinds = {(f["kind"], f["node_id"]) for f in answer["findings"]}
    assert ("RUN_FAILED", REPORT) in kinds
    assert ("JOB_VERSION_CHANGED", REPORT) in kinds
    assert ("JOB_VERSION_CHANGED", "job:pipelines:app.load_orders") in kinds
    assert ("SCHEMA_CHANGED", ORDERS) in kinds
    failed = next(f for f in answer["findings"] if f["kind"] == "RUN_FAILED")
    assert failed["details"]["runId"] == str(rid("report-3"))
    times = [f["at"] for f in answer["findings"]]
    assert times == sorted(times, reverse=True)
    # The same failure over REST: the job's runs.
    runs = (await rest.get("/api/v1/namespaces/pipelines/jobs/report/runs")).json()["runs"]
    assert [r["id"] for r in runs if r["state"] == "FAILED"] == [failed["details"]["runId"]]
    # Upstream nodes are the REST upstream walk's.
    upstream = await rest_lineage(
        rest, "/api/v1/lineage", nodeId="dataset:warehouse:daily", depth=10, direction="UPSTREAM"
    )
    assert answer["upstream_nodes"] == len(upstream["graph"])
    assert all(f["at"] >= "2026-01-01T12:10:30" for f in later["findings"])
    assert later["total"] < answer["total"]


async def test_search_is_rest_search_by_heat_and_finds_columns_and_tags(
    sessions: Sessions, rest: httpx.AsyncClient
) -> None:
    expected = (
        await rest.get("/api/v1/search", params={"q": "order", "sort": "HEAT", "limit": 100})
    ).json()
    async with sessions() as session:
        tables = await call(session, "search", text="order", kinds=["DATASET", "JOB"], limit=100)
        page = await call(session, "search", text="order", kinds=["DATASET", "JOB"], limit=2, offset=1)
        columns = await call(session, "search", text="currency", kinds=["COLUMN"])
        await gql(
            rest,
            'mutation { tagDataset(namespace: "warehouse", name: "orders", tag: "finance") '
            "{ __typename } }",
        )
        tagged = await call(session, "search", text="o", tag="finance", kinds=["DATASET"])
    assert tables["total"] == expected["totalCount"]
    assert [r["node_id"] for r in tables["results"]] == [r["nodeId"] for r in expected["results"]]
    assert [r["node_id"] for r in page["results"]] == [r["nodeId"] for r in expected["results"][1:3]]
    assert page["next_offset"] == (3 if expected["totalCount"] > 3 else None)
    assert "datasetField:warehouse:orders:currency" in [r["node_id"] for r in columns["results"]]
    assert [r["node_id"] for r in tagged["results"]] == [ORDERS]


async def test_get_dataset_job_and_run_are_the_rest_documents(
    sessions: Sessions, rest: httpx.AsyncClient
) -> None:
    dataset = (await rest.get("/api/v1/namespaces/warehouse/datasets/orders")).json()
    job = (await rest.get("/api/v1/namespaces/pipelines/jobs/report")).json()
    runs = (await rest.get("/api/v1/namespaces/pipelines/jobs/report/runs")).json()
    run = (await rest.get(f"/api/v1/jobs/runs/{rid('report-3')}")).json()
    writers = (await rest.get("/api/v1/namespaces/pipelines/jobs/app.load_orders/runs")).json()
    async with sessions() as session:
        got_dataset = await call(session, "get_dataset", node_id=ORDERS)
        got_job = await call(session, "get_job", node_id=REPORT, runs_limit=2)
        got_run = await call(session, "get_run", run_id=str(rid("report-3")))
    assert got_dataset["dataset"] == dataset
    assert [r["run_id"] for r in got_dataset["recent_runs"]] == [
        r["id"] for r in writers["runs"] if r["outputDatasetVersions"]
    ][:5]
    assert got_job["job"] == job
    assert got_job["runs"]["total"] == runs["totalCount"] == 3
    assert [(r["run_id"], r["state"]) for r in got_job["runs"]["runs"]] == [
        (r["id"], r["state"]) for r in runs["runs"][:2]
    ]
    assert got_job["runs"]["next_offset"] == 2
    assert got_run["run"] == run
    assert [s["state"] for s in got_run["states"]] == ["START", "FAIL"]


async def test_sql_lineage_is_what_headwater_sql_lineage_prints(sessions: Sessions) -> None:
    sql = (
        "INSERT INTO totals (customer_id, total) SELECT c.id, SUM(o.amount) FROM orders o "
        "JOIN customers c ON o.customer_id = c.id GROUP BY c.id"
    )
    async with sessions() as session:
        answer = await call(session, "sql_lineage", sql=sql, dialect="postgres")
        broken = await call(session, "sql_lineage", sql="selec 1")
        called = await call(session, "sql_lineage", sql="CALL refresh_totals()", dialect="postgres")
    assert {k: answer[k] for k in ("inputs", "outputs", "columns")} == extract_lineage(
        sql, "postgres"
    ).to_dict()
    assert broken["errors"] == ["unrecognized statement 'selec' at line 1, column 1"]
    # What the SQL does but lineage does not follow is said, as `headwater sql-lineage` says it.
    assert called["warnings"] == [
        str(w) for w in extract_lineage("CALL refresh_totals()", "postgres").warnings
    ]
    assert called["warnings"]


async def test_sql_lineage_with_a_schema_expands_star(sessions: Sessions) -> None:
    sql = "INSERT INTO t SELECT * FROM s"
    async with sessions() as session:
        answer = await call(session, "sql_lineage", sql=sql, schema={"s": {"a": "int", "b": None}})
        without = await call(session, "sql_lineage", sql=sql)
        invalid = await session.call_tool("sql_lineage", {"sql": sql, "schema": ["s"]})
    assert [(c["output"], c["inputs"]) for c in answer["columns"]] == [
        ("t.a", ["s.a"]),
        ("t.b", ["s.b"]),
    ]
    assert [(c["output"], c["inputs"]) for c in without["columns"]] == [("t.*", ["s.*"])]
    assert invalid.is_error


async def test_an_unknown_node_is_an_error_that_suggests_near_names(sessions: Sessions) -> None:
    async with sessions() as session:
        result = await session.call_tool("lineage", {"node_id": "dataset:warehouse:order"})
        typo = await session.call_tool("impact_of_change", {"node_id": "dataset:warehouse:dialy"})
        wrong_kind = await session.call_tool("get_dataset", {"node_id": REPORT})
        malformed = await session.call_tool("lineage", {"node_id": "orders"})
        too_deep = await session.call_tool("lineage", {"node_id": ORDERS, "depth": 1000})
    assert result.is_error
    assert "Did you mean" in result.content[0].text
    assert ORDERS in result.content[0].text
    for failed, says in [
        (typo, "search"),
        (wrong_kind, "use get_job"),
        (malformed, "dataset:NAMESPACE:NAME"),
        (too_deep, "maximum 100"),
    ]:
        assert failed.is_error
        assert says in failed.content[0].text


async def test_an_argument_holding_nul_is_an_error_that_names_it(sessions: Sessions) -> None:
    async with sessions() as session:
        answers = {
            (tool, argument): await session.call_tool(tool, {argument: value})
            for tool, argument, value in [
                ("get_dataset", "node_id", "dataset:warehouse\x00:orders"),
                ("lineage", "node_id", "dataset:warehouse:orders\x00"),
                ("root_cause", "node_id", "dataset:\x00:x"),
                ("get_run", "run_id", "\x00"),
                ("search", "text", "ord\x00"),
            ]
        }
    for (_, argument), answer in answers.items():
        assert answer.is_error
        assert answer.content[0].text.endswith(
            f"{argument} holds U+0000 (NUL), which no text stored here can contain."
        )


async def test_an_offset_beyond_what_json_holds_exactly_is_an_error_that_names_the_bound(
    sessions: Sessions,
) -> None:
    async with sessions() as session:
        answers = [
            await session.call_tool("search", {"text": "orders", "offset": 2**63}),
            await session.call_tool(
                "impact_of_change", {"node_id": "dataset:warehouse:orders", "offset": 2**53}
            ),
            await session.call_tool("get_job", {"node_id": "job:etl:load_orders", "runs_offset": 2**60}),
        ]
    for answer in answers:
        assert answer.is_error
        assert "less than or equal to 9007199254740991" in answer.content[0].text, answer.content
