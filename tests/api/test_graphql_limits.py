"""What one GraphQL request over HTTP may ask, and how what it may not is refused: walks, counts and
searches priced at what they read, lists as long as they really are, fields and numbers a document
may hold, introspection, request bodies, cursors and operation names."""

from __future__ import annotations

import base64
import re
import time
from pathlib import Path

import pytest
from graphql import OperationDefinitionNode, get_introspection_query, parse

from tests.client import execute, gql, post_all
from tests.factories import dataset, job_run, run_event

pytestmark = pytest.mark.db

CONSOLE = Path(__file__).resolve().parents[2] / "backend" / "web" / "console" / "src"
LIMIT_CODES = {"query_too_complex", "too_many_fields", "too_many_aliases", "query_too_deep"}


def aliased(count: int, field: str) -> str:
    return "{ " + " ".join(f"a{i}: {field}" for i in range(count)) + " }"


def error_code(body: dict) -> str:
    [error] = body["errors"]
    return error["extensions"]["code"]


WALKS = [
    'lineage(nodeId: "dataset:warehouse:orders", depth: 100) { ... on LineageGraph { truncated } }',
    'columnLineage(nodeId: "dataset:warehouse:orders", depth: 100) '
    "{ ... on ColumnLineageGraph { truncated } }",
    'search(query: "orders") { totalCount }',
    'find(query: "orders") { totalCount }',
    "datasets { totalCount }",
]


@pytest.mark.parametrize("field", WALKS)
async def test_thirty_walks_counts_or_searches_are_refused_by_what_they_read(client, field):
    # Each asks for nothing but a flag or a count, but reads a graph or a table to answer it:
    # thirty lineage walks took 5-7 s and every database connection.
    await post_all(client, job_run("load", inputs=["orders"], outputs=["totals"]))
    started = time.perf_counter()
    body = await execute(client, aliased(30, field))
    assert time.perf_counter() - started < 1
    assert body["data"] is None
    assert error_code(body) == "query_too_complex"
    assert "a smaller lineage maxNodes" in body["errors"][0]["message"]


async def test_a_walk_costs_its_node_cap_so_small_walks_fit_many_to_an_operation(client):
    await post_all(client, job_run("load", inputs=["orders"], outputs=["totals"]))
    walk = 'lineage(nodeId: "dataset:warehouse:orders", depth: 100) { __typename }'
    small = walk.replace("depth: 100", "depth: 100, maxNodes: 50")
    data = await gql(client, aliased(30, small))
    assert data["a29"] == {"__typename": "LineageGraph"}
    # Two walks at the server's cap (10,000 nodes) fit the budget, three do not.
    assert "errors" not in await execute(client, aliased(2, walk))
    assert error_code(await execute(client, aliased(3, walk))) == "query_too_complex"


async def test_suspect_changes_cost_the_node_ids_they_are_asked_about(client):
    query = "query($ids: [ID!]!) " + aliased(
        30, 'suspectChanges(nodeIds: $ids, since: "2020-01-01T00:00:00Z") { totalCount }'
    )
    body = await execute(client, query, ids=[f"dataset:warehouse:t{i}" for i in range(10_000)])
    assert error_code(body) == "query_too_complex"


WIDE = 'dataset(namespace: "warehouse", name: "wide") { fields { name type description tags { name } } }'


async def test_a_list_longer_than_guessed_is_charged_as_it_is_answered(client):
    # The estimate guesses a list without a page size at 10 items; a schema may hold 100,000
    # fields (4.2 s and 6.8 MB for one, 14 GB for thirty aliases of it). Each item past the guess
    # is charged as it is answered, and the operation refused once it passes the budget.
    wide = dataset("wide", fields=[f"c{i}" for i in range(25_000)])
    await post_all(client, [run_event("make_wide", outputs=[wide])])
    body = await execute(client, "{ " + WIDE + " }")
    assert body["data"] is None
    assert error_code(body) == "query_too_complex"
    assert re.search(r"once `dataset\.fields` holds 19,9\d\d items", body["errors"][0]["message"])

    # Thirty aliases answered whole would take over 30 s here; refused, under a second on a quiet
    # machine (2.2 s seen with the machine's two cores both busy).
    started = time.perf_counter()
    body = await execute(client, aliased(30, WIDE))
    assert time.perf_counter() - started < 5
    assert error_code(body) == "query_too_complex"


async def test_a_list_shorter_than_guessed_or_null_leaves_room_for_the_rest(client):
    # The operation is charged what it really answers: GraphiQL's schema query guesses each list
    # at 10 items, and passes only because the lists that are short, empty or null give back
    # what they were costed.
    query = get_introspection_query(
        descriptions=True,
        specified_by_url=True,
        directive_is_repeatable=True,
        schema_description=True,
        input_value_deprecation=True,
    )
    data = await gql(client, query)
    assert len(data["__schema"]["types"]) > 50


async def test_namespaces_are_charged_for_each_of_their_counts(client):
    # 3,000 namespaces with two counts each took 4.6 s: twelve thousand statements.
    outputs = [dataset("t", namespace=f"ns{i:02}") for i in range(20)]
    await post_all(client, [run_event("fanout", outputs=outputs)])
    body = await execute(
        client,
        "{ namespaces { name datasets(first: 1) { totalCount } jobs(first: 1) { totalCount } } }",
    )
    assert error_code(body) == "query_too_complex"
    assert "once `namespaces` holds 13 items" in body["errors"][0]["message"]
    assert len((await gql(client, "{ namespaces { name } tags { name } }"))["namespaces"]) == 21


async def test_namespaces_list_their_sizes_in_one_pass_whatever_their_number(client):
    # What the refused query above wanted: each namespace with its size. datasetCount and jobCount
    # are counted for every namespace of the answer at once, so 21 namespaces cost no more than 1.
    outputs = [dataset(f"t{j}", namespace=f"ns{i:02}") for i in range(20) for j in range(i % 3 + 1)]
    await post_all(client, [run_event("fanout", outputs=outputs)])
    await gql(client, 'mutation { deleteDataset(namespace: "ns02", name: "t0") { __typename } }')
    data = await gql(client, "{ namespaces { name datasetCount jobCount } }")
    sizes = {n["name"]: (n["datasetCount"], n["jobCount"]) for n in data["namespaces"]}
    expected = {f"ns{i:02}": (i % 3 + 1, 0) for i in range(20)}
    expected["ns02"] = (2, 0)  # a deleted dataset is not counted, as totalCount does not count it
    expected["pipelines"] = (0, 1)
    assert sizes == expected
    for name in ("ns02", "ns05", "pipelines"):
        one = await gql(
            client,
            "query($ns: String!) { namespace(name: $ns) { datasetCount jobCount "
            "datasets(first: 1) { totalCount } jobs(first: 1) { totalCount } } }",
            ns=name,
        )
        ns = one["namespace"]
        assert (ns["datasetCount"], ns["jobCount"]) == expected[name]
        assert (ns["datasets"]["totalCount"], ns["jobs"]["totalCount"]) == expected[name]


async def test_variable_defaults_count_as_page_sizes(client):
    nested = "datasets(first: $f) { nodes { id fields { name } versions(limit: $l) { id } } }"
    for query, variables in [
        (f"query($f: Int! = 500, $l: Int! = 100) {{ {nested} }}", {}),
        (f"query($f: Int!, $l: Int!) {{ {nested} }}", {"f": 500, "l": 100}),
        (f"query($f: Int! = 5, $l: Int! = 5) {{ {nested} }}", {"f": 500, "l": 100}),
    ]:
        body = await execute(client, query, **variables)
        assert error_code(body) == "query_too_complex", (query, variables)
    assert "errors" not in await execute(client, f"query($f: Int! = 50, $l: Int! = 5) {{ {nested} }}")


async def test_a_document_of_more_fields_than_any_query_has_is_refused_before_validation(client):
    # Validation compares same-named fields two by two: these 2,100 fields held the event loop
    # 1.2 s for a bare "Validation aborted.".
    document = "{ " + " jobs { nodes { id } }" * 700 + " }"
    started = time.perf_counter()
    body = await execute(client, document)
    assert time.perf_counter() - started < 0.5
    assert error_code(body) == "too_many_fields"
    assert body["errors"][0]["message"].startswith(
        "The document holds 2,100 fields; the maximum is 300."
    )
    assert "errors" not in await execute(client, "{ " + " jobs { nodes { id } }" * 100 + " }")


async def test_introspection_is_counted(client):
    # Thirty aliases of the schema query answered 3.5 MB and held the event loop for a second.
    operation, fragments = get_introspection_query(descriptions=True).split("fragment FullType", 1)
    selection = operation[operation.index("__schema") + len("__schema") : operation.rindex("}")]
    document = (
        aliased(30, "__schema { ...Schema }")
        + f" fragment Schema on __Schema {selection} fragment FullType{fragments}"
    )
    body = await execute(client, document)
    assert error_code(body) == "query_too_complex"


@pytest.mark.parametrize(
    ("body", "kind"),
    [
        (b"null", "null"),
        (b"true", "a boolean"),
        (b"1", "a number"),
        (b"1.5", "a number"),
        (b'"x"', "a string"),
        (b"[]", "an array"),
    ],
)
async def test_a_body_that_is_no_json_object_is_a_400(client, body, kind):
    response = await client.post("/graphql", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["code"] == "invalid_request"
    assert problem["detail"] == f"A GraphQL request body must be a JSON object, not {kind}."


@pytest.mark.parametrize(
    ("content", "content_type", "detail"),
    [
        (b"{}", "application/json", "No GraphQL query found in the request"),
        (b'{"query": "{ tags { name } }"}', "text/plain", "Unsupported content type"),
        (b'{"query": "{ tags { name } }", "variables": "x"}', "application/json", "`variables`"),
        (b'{"query": "{ tags { name } }", "operationName": "B"}', "application/json", '"B"'),
    ],
)
async def test_a_request_graphql_cannot_read_is_a_problem_with_a_code(
    client, content, content_type, detail
):
    response = await client.post("/graphql", content=content, headers={"content-type": content_type})
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["code"] == "invalid_request"
    assert detail in response.json()["detail"]


@pytest.mark.parametrize(
    "argument",
    [
        "depth: " + "9" * 5_000,
        "depth: " + "9" * 4_000,
        "asOf: " + "9" * 5_000,
        "asOf: 1" + "0" * 200 + ".5",
    ],
)
async def test_a_number_literal_longer_than_any_argument_takes_is_refused(client, argument):
    body = await execute(client, f'{{ lineage(nodeId: "dataset:a:b", {argument}) {{ __typename }} }}')
    [error] = body["errors"]
    assert error["extensions"]["code"] == "graphql_validation_failed", error
    assert re.fullmatch(
        r"The number on line 1 is [\d,]+ characters long; no argument takes one of more than 100\.",
        error["message"],
    )


# Cursors as JSON text: escapes make strings no name can be, and numbers no heat is.
MADE_UP_CURSORS = [
    ("NAME", r'["warehouse", "orders\u0000"]'),
    ("NAME", r'["warehouse\ud800", "orders"]'),
    ("HEAT", '["HEAT", NaN, "warehouse", "orders"]'),
    ("HEAT", '["HEAT", -Infinity, "warehouse", "orders"]'),
    ("HEAT", '["HEAT", 1e999, "warehouse", "orders"]'),
]


@pytest.mark.parametrize(("order", "keyset"), MADE_UP_CURSORS)
async def test_a_made_up_cursor_no_name_or_heat_can_hold_is_an_invalid_cursor(client, order, keyset):
    await post_all(client, job_run("load", inputs=["orders"], outputs=["totals"]))
    body = await execute(
        client,
        "query($a: String, $o: CatalogOrder!) "
        "{ datasets(first: 1, after: $a, orderBy: $o) { nodes { name } } }",
        a=base64.urlsafe_b64encode(keyset.encode()).decode(),
        o=order,
    )
    assert error_code(body) == "invalid_cursor", body


async def test_a_document_of_several_operations_must_name_the_one_to_run(client):
    document = "query A { tags { name } } query B { namespaces { name } }"
    body = await execute(client, document)
    assert body["data"] is None
    [error] = body["errors"]
    assert error["extensions"]["code"] == "invalid_request"
    assert error["message"] == (
        "The document holds 2 operations (A, B): name the one to run in `operationName`."
    )
    response = await client.post("/graphql", json={"query": document, "operationName": "B"})
    assert response.json() == {"data": {"namespaces": []}}


async def test_arguments_are_named_as_the_schema_names_them_and_no_kinds_find_nothing(client):
    body = await execute(client, "{ policyViolations(first: 0) { id } }")
    [error] = body["errors"]
    assert error["message"] == "`first` must be between 1 and 1000, got 0."

    await post_all(client, job_run("load_orders", inputs=["raw_orders"], outputs=["orders"]))
    data = await gql(client, '{ find(query: "orders", kinds: []) { totalCount hits { nodeId } } }')
    assert data["find"] == {"totalCount": 0, "hits": []}
    data = await gql(client, '{ find(query: "orders") { totalCount } }')
    assert data["find"]["totalCount"] == 3


def console_queries() -> list[tuple[str, str]]:
    """The console's queries as its sources spell them (those built at run time left out)."""
    found = []
    for source in sorted(CONSOLE.glob("*.js*")):
        for name, query in re.findall(r"const (\w+) = `((?:query|\{)[^`]*)`", source.read_text()):
            if "${" not in query:
                found.append((f"{source.name}:{name}", query))
    return found


def console_values(query: str) -> dict[str, object]:
    """Values of a console query's variables as large as the console sends."""
    max_nodes = int(re.search(r"const MAX_NODES = (\d+)", (CONSOLE / "lineage.jsx").read_text())[1])
    values = {
        "ns": "warehouse",
        "name": "orders",
        "node": "dataset:warehouse:orders",
        "depth": 20,
        "direction": "BOTH",
        "max": max_nodes,
        "owners": True,
        "q": "orders",
        "ids": [f"dataset:warehouse:t{i}" for i in range(max_nodes)],
        "since": "2020-01-01T00:00:00Z",
        "id": "dataset:warehouse:orders",
    }
    [operation] = [d for d in parse(query).definitions if isinstance(d, OperationDefinitionNode)]
    return {
        d.variable.name.value: values.get(d.variable.name.value)
        for d in operation.variable_definitions or ()
    }


async def test_the_consoles_queries_fit_the_limits(client):
    # A dataset wider than the lists' guess, with versions and runs, and what points at it.
    orders = dataset("orders", fields=[f"c{i}" for i in range(60)])
    for minute in range(3):
        await post_all(
            client, job_run("load_orders", inputs=["raw_orders"], outputs=[orders], start=minute)
        )
    queries = console_queries()
    assert len(queries) >= 8
    for where, query in queries:
        body = await execute(client, query, **console_values(query))
        codes = {e["extensions"]["code"] for e in body.get("errors", [])}
        assert not codes & LIMIT_CODES, (where, body["errors"])


async def test_a_wide_dataset_with_its_fields_tags_is_answered(client):
    # Each field's tags were charged at the guess of 10 as the fields were listed, before the
    # empty ones were credited: a dataset of 883 fields with their tags, as the console asks for
    # it, was refused. Lists under the items past a guess now charge what they hold.
    columns = [f"c{i}" for i in range(5_000)]
    await post_all(client, [run_event("w", outputs=[dataset("wide", fields=columns)])])
    await gql(
        client,
        'mutation { tagDataset(namespace: "warehouse", name: "wide", tag: "pii", field: "c4999") { __typename } }',
    )
    query = (
        '{ dataset(namespace: "warehouse", name: "wide") '
        "{ fields { name type tags { name } } tags { name } } }"
    )
    fields = (await gql(client, query))["dataset"]["fields"]
    assert len(fields) == 5_000
    assert fields[-1] == {"name": "c4999", "type": "string", "tags": [{"name": "pii"}]}
    # What a list holds is still charged: 10,000 items' worth past the budget is refused.
    body = await execute(client, aliased(5, query.removeprefix("{ ").removesuffix(" }")))
    assert error_code(body) == "query_too_complex"
