"""DataLoaders: a lineage graph with its details costs the same number of SQL statements for 20 nodes
as for 200, counted with asyncpg's query logger on every connection the operation uses."""

from __future__ import annotations

from contextlib import asynccontextmanager

import pytest
from litestar.datastructures import State

from headwater.api.graphql.context import Context
from headwater.api.graphql.loaders import Loaders
from headwater.api.graphql.schema import schema
from headwater.api.read_turns import ReadTurns
from headwater.db.queries import QUERIES
from tests.factories import dataset, run_event

pytestmark = pytest.mark.db


OUR_QUERIES = set(QUERIES.values())


class CountingPool:
    """A pool that counts the statements of ours run on the connections it hands out (asyncpg's
    own type introspection, run once per connection, is not counted)."""

    def __init__(self, pool):
        self.pool = pool
        self.statements: list[str] = []

    def _log(self, record):
        if record.query in OUR_QUERIES:
            self.statements.append(record.query)

    @asynccontextmanager
    async def acquire(self):
        async with self.pool.acquire() as conn:
            conn.add_query_logger(self._log)
            try:
                yield conn
            finally:
                conn.remove_query_logger(self._log)


# maxNodes keeps the estimated cost (every nested list guessed at 10 items) within the budget.
GRAPH = """query($id: ID!) {
  lineage(nodeId: $id, depth: 1, direction: DOWNSTREAM, maxNodes: 100) {
    ... on LineageGraph {
      truncated
      edges { origin destination manual }
      nodes {
        id type hops
        inEdges { manual }
        dataset { name facets deleted fields { name type tags { name } } tags { name }
                  currentVersion { version createdByRun { id state } } runs(limit: 2) { id } }
        job { name tags { name } parent { id } latestRun { id state job { id } }
              currentVersion { version inputs { id } outputs { id } } }
      }
    }
  }
}"""


async def fan_out(client, width):
    """One source read by `width` jobs, each writing its own dataset: 2 * width + 1 nodes."""
    events = [
        run_event(
            f"job{i}",
            inputs=["source"],
            outputs=[dataset(f"out{i}", fields=[("id", "int"), ("value", "text")])],
        )
        for i in range(width)
    ]
    response = await client.post("/api/v1/lineage", json=events)
    assert response.status_code == 201, response.text


async def statements_for(pool, settings, query, **variables):
    counting = CountingPool(pool)
    turns = ReadTurns(settings.lineage_reads_at_once, 5)
    state = State({"pool": counting, "settings": settings, "read_turns": turns})
    context = Context(state=state, loaders=Loaders(counting))
    result = await schema.execute(query, variable_values=variables, context_value=context)
    assert result.errors is None, result.errors
    return result.data, counting.statements


async def test_lineage_cost_does_not_grow_with_the_graph(client, db, settings):
    await fan_out(client, 10)
    small, small_statements = await statements_for(db, settings, GRAPH, id="dataset:warehouse:source")
    assert len(small["lineage"]["nodes"]) == 21
    await client.post(
        "/graphql",
        json={
            "query": 'mutation { tagDataset(namespace: "warehouse", name: "out3", '
            'tag: "pii", field: "id") { __typename } }'
        },
    )

    await fan_out(client, 49)  # jobs 0..48: 99 nodes
    large, large_statements = await statements_for(db, settings, GRAPH, id="dataset:warehouse:source")
    nodes = large["lineage"]["nodes"]
    assert len(nodes) == 99
    assert len(large_statements) == len(small_statements)
    assert len(large_statements) <= 20
    out3 = next(n for n in nodes if n["id"] == "dataset:warehouse:out3")
    assert out3["dataset"]["fields"][0] == {"name": "id", "type": "int", "tags": [{"name": "pii"}]}
    job = next(n for n in nodes if n["id"] == "job:pipelines:job7")
    assert job["job"]["latestRun"]["state"] == "COMPLETE"
    assert job["job"]["currentVersion"]["outputs"] == [{"id": "dataset:warehouse:out7"}]


async def test_catalog_page_cost_does_not_grow_with_the_page(client, db, settings):
    await fan_out(client, 60)
    query = """query($n: Int!) { datasets(first: $n) { nodes { name fields { name tags { name } } tags { name }
                 runs(limit: 1) { job { name tags { name } } } } } }"""
    few, few_statements = await statements_for(db, settings, query, n=5)
    many, many_statements = await statements_for(db, settings, query, n=60)
    assert len(few["datasets"]["nodes"]) == 5
    assert len(many["datasets"]["nodes"]) == 60
    assert len(many_statements) == len(few_statements)
