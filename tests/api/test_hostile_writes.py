"""Tags and manual lineage against careless and hostile clients: names that only look valid, inputs
of megabytes quoted back, and two writes racing on the same rows."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from headwater.errors import MAX_DESCRIPTION_CHARS
from headwater.lineage.graph import resolve_root
from headwater.lineage.node_ids import MAX_NAME_BYTES
from headwater.store import manual_lineage
from tests.client import gql, post_all
from tests.factories import dataset, run_event

pytestmark = pytest.mark.db

TAG = """mutation($name: String!, $tag: String!, $field: String) {
  tagDataset(namespace: "warehouse", name: $name, tag: $tag, field: $field) {
    __typename ... on Dataset { tags { name } } ... on Problem { code message }
  }
}"""
UNTAG = """mutation($tag: String!) {
  untagDataset(namespace: "warehouse", name: "users", tag: $tag) {
    __typename ... on Dataset { tags { name } } ... on Problem { code message }
  }
}"""
FLOW = """mutation($origin: ID!, $destination: ID!) {
  addManualEdge(origin: $origin, destination: $destination) {
    __typename ... on ManualEdge { changed } ... on Problem { code message }
  }
}"""
# An error quotes what was sent cut to this many characters, whatever its length.
QUOTED = 100


async def test_a_tag_name_ending_in_a_newline_is_refused_not_a_second_tag(client):
    await post_all(client, [run_event("w", outputs=[dataset("users")])])
    tagged = (await gql(client, TAG, name="users", tag="pii\n"))["tagDataset"]
    assert tagged == {
        "__typename": "InvalidInputError",
        "code": "invalid_request",
        "message": "Invalid tag name 'pii\n': use 1 to 100 letters, digits or '_.:/-', starting with "
        "a letter or digit.",
    }
    put = await client.put("/api/v1/tags/pii%0A", json={"description": "personal"})
    assert put.status_code == 400, put.text
    assert put.json()["detail"].startswith("Invalid tag name 'pii\n'")
    assert (await client.get("/api/v1/tags")).json() == {"tags": []}


async def test_a_tag_stored_under_a_name_now_refused_can_still_be_removed(client, conn):
    await post_all(client, [run_event("w", outputs=[dataset("users")])])
    await gql(client, TAG, name="users", tag="pii")
    await conn.execute(
        "WITH t AS (INSERT INTO tags (name) VALUES (E'pii\\n') RETURNING tag_uuid) "
        "INSERT INTO dataset_tags (dataset_uuid, tag_uuid, tagged_at) "
        "SELECT d.dataset_uuid, t.tag_uuid, now() FROM datasets d, t"
    )
    removed = (await gql(client, UNTAG, tag="pii\n"))["untagDataset"]
    assert removed == {"__typename": "Dataset", "tags": [{"name": "pii"}]}
    never = (await gql(client, UNTAG, tag="not a tag!"))["untagDataset"]
    assert never["code"] == "invalid_request"


async def test_errors_quote_a_tag_or_field_of_megabytes_cut_short(client):
    await post_all(client, [run_event("w", outputs=[dataset("users", fields=["email"])])])
    tag = (await gql(client, TAG, name="users", tag="t" * 2_000_000))["tagDataset"]
    assert tag["code"] == "invalid_request"
    assert tag["message"].startswith(f"Invalid tag name '{'t' * QUOTED}…': use 1 to 100")
    field = (await gql(client, TAG, name="users", tag="pii", field="f" * 3_000_000))["tagDataset"]
    assert field == {
        "__typename": "NotFoundError",
        "code": "dataset_field_not_found",
        "message": f"Field '{'f' * QUOTED}…' of dataset 'warehouse'.'users' not found.",
    }


async def refs(conn, *node_ids):
    roots = [await resolve_root(conn, node_id) for node_id in node_ids]
    found = await manual_lineage.fetch_node_refs(conn, [r.node_id for r in roots])
    return [found[r.node_id] for r in roots]


async def until_blocked_or_done(pool, conn, task):
    """Once ``task`` (running on ``conn``) waits for a lock another transaction holds, or is done."""
    pid = conn.get_server_pid()
    async with pool.acquire() as watcher:
        for _ in range(500):
            if task.done() or await watcher.fetchval(
                "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $1", pid
            ):
                return
            await asyncio.sleep(0.01)
    raise AssertionError("the write neither finished nor waited for a lock")


@pytest.mark.parametrize("added_to", ["job:warehouse:manual/c", "dataset:warehouse:c"])
async def test_a_flow_removed_while_its_manual_job_gains_an_input_keeps_the_job(client, db, added_to):
    # b -> c added as a flow (through the manual job) or straight into the manual job, while the
    # flow a -> c is removed: the job was retired and its write into c closed under the new input.
    await post_all(client, [run_event(f"w{n}", outputs=[dataset(n)]) for n in ("a", "b", "c")])
    at = dt.datetime.now(dt.UTC)
    async with db.acquire() as remover, db.acquire() as adder:
        a, c = await refs(remover, "dataset:warehouse:a", "dataset:warehouse:c")
        await manual_lineage.add_manual_edge(remover, a, c, description=None, at=at)
        b, destination = await refs(adder, "dataset:warehouse:b", added_to)
        adding = adder.transaction()
        await adding.start()
        await manual_lineage.add_manual_edge(adder, b, destination, description=None, at=at)
        removal = asyncio.create_task(manual_lineage.remove_manual_edge(remover, a, c, at=at))
        await until_blocked_or_done(db, remover, removal)
        await adding.commit()
        removed = await removal
        assert removed.edges == [("dataset:warehouse:a", "job:warehouse:manual/c")]
    upstream = await gql(
        client,
        'query { lineage(nodeId: "dataset:warehouse:c", depth: 2, direction: UPSTREAM) '
        "{ ... on LineageGraph { edges { origin destination manual } } } }",
    )
    manual = [e for e in upstream["lineage"]["edges"] if e["manual"]]
    assert sorted((e["origin"], e["destination"]) for e in manual) == [
        ("dataset:warehouse:b", "job:warehouse:manual/c"),
        ("job:warehouse:manual/c", "dataset:warehouse:c"),
    ]


async def test_a_flow_into_a_dataset_named_too_long_for_its_manual_job_is_refused(client, conn):
    longest = "n" * (MAX_NAME_BYTES - len("manual/"))
    too_long = longest + "n"
    await post_all(client, [run_event("w", outputs=[dataset(too_long), dataset(longest), dataset("s")])])
    refused = (
        await gql(
            client, FLOW, origin="dataset:warehouse:s", destination=f"dataset:warehouse:{too_long}"
        )
    )["addManualEdge"]
    assert refused == {
        "__typename": "InvalidInputError",
        "code": "invalid_request",
        "message": f"Dataset 'warehouse'.'{'n' * QUOTED}…' has too long a name for a manual job "
        f"('manual/' and its name take {MAX_NAME_BYTES + 1:,} bytes in UTF-8, more than "
        f"{MAX_NAME_BYTES:,}): declare the flow through a job, dataset -> job -> dataset.",
    }
    assert await conn.fetchval("SELECT count(*) FROM jobs WHERE manual") == 0
    accepted = (
        await gql(client, FLOW, origin="dataset:warehouse:s", destination=f"dataset:warehouse:{longest}")
    )["addManualEdge"]
    assert accepted == {"__typename": "ManualEdge", "changed": True}


async def test_an_unknown_node_of_megabytes_is_quoted_cut_in_its_error(client):
    # A 3 MB name in deleteDataset, deleteJob or a node id was quoted whole: a 3 MB answer.
    name = "x" * 3_000_000
    deleted = await gql(
        client,
        'mutation($name: String!) { a: deleteDataset(namespace: "warehouse", name: $name) '
        '{ ... on Problem { code message } } b: deleteJob(namespace: "pipelines", name: $name) '
        "{ ... on Problem { code message } } }",
        name=name,
    )
    for key, code in (("a", "dataset_not_found"), ("b", "job_not_found")):
        assert deleted[key]["code"] == code
        assert len(deleted[key]["message"]) < 3 * QUOTED, deleted[key]["message"][:300]
        assert "x" * QUOTED + "…" in deleted[key]["message"]
    response = await client.get(f"/api/v1/namespaces/warehouse/datasets/{'y' * 1_000}")
    assert response.status_code == 404
    assert len(response.text) < 1_000


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"description": "us\\ud800ers"}', "\\ud800 at byte 19 of the body is half of a UTF-16"),
        (b'{"description": "us\xffers"}', "not valid UTF-8: byte 19 of the body (0xff)"),
        (b'{"description": "a"', "not valid JSON: Input data was truncated"),
    ],
)
async def test_a_write_body_that_is_no_json_is_refused_saying_where(client, body, reason):
    # The bodies Litestar decodes (tags, classifications) were "Input data was truncated" for a
    # lone surrogate escape, and named no byte for one that is not UTF-8.
    for path in ("/api/v1/tags/pii", "/api/v1/governance/classifications"):
        response = await client.put(path, content=body, headers={"content-type": "application/json"})
        assert response.status_code == 400, path
        problem = response.json()
        assert problem["title"] == "Invalid request"
        assert problem["code"] == "invalid_request"
        assert problem["detail"].startswith("The request body is not valid JSON: ")
        assert reason in problem["detail"], problem["detail"]
        assert problem["errors"][0]["path"] == "$"


async def test_a_tag_holding_a_slash_is_described_through_its_encoded_name(client):
    # Tag names may hold "/": PUT /api/v1/tags/team%2Ffinance was a bare 404, where tagging a
    # dataset with the same encoded name worked.
    put = await client.put("/api/v1/tags/team%2Ffinance", json={"description": "Finance's"})
    assert put.status_code == 200, put.text
    assert put.json() == {"name": "team/finance", "description": "Finance's"}
    assert (await client.get("/api/v1/tags")).json() == {
        "tags": [{"name": "team/finance", "description": "Finance's"}]
    }
    assert (await client.put("/api/v1/tags/team/finance", json={})).status_code == 404


async def test_a_description_longer_than_a_person_writes_is_refused(client):
    # A 60 MB tag description was stored, and every tag list after it was 60 MB.
    await post_all(client, [run_event("w", inputs=["crm"], outputs=[dataset("users")])])
    long = "d" * (MAX_DESCRIPTION_CHARS + 1)
    expected = f"{MAX_DESCRIPTION_CHARS + 1:,} characters; the most it may have is 10,000."
    put = await client.put("/api/v1/tags/pii", json={"description": long})
    assert put.status_code == 400
    assert put.json()["detail"] == f"The description of a tag is {expected}"
    for mutation, arguments, what in [
        ("tagDataset", 'namespace: "warehouse", name: "users", tag: "pii"', "a tag"),
        (
            "addManualEdge",
            'origin: "dataset:warehouse:crm", destination: "dataset:warehouse:users"',
            "a manual edge",
        ),
    ]:
        document = f"mutation($d: String) {{ {mutation}({arguments}, description: $d) {{ ... on Problem {{ code message }} }} }}"
        answered = (await gql(client, document, d=long))[mutation]
        assert answered == {
            "code": "invalid_request",
            "message": f"The description of {what} is {expected}",
        }
    assert (await client.get("/api/v1/tags")).json() == {"tags": []}
    fits = "d" * MAX_DESCRIPTION_CHARS
    assert (await client.put("/api/v1/tags/pii", json={"description": fits})).status_code == 200


async def test_a_tag_body_with_a_key_it_does_not_take_is_refused(client):
    # {"descrption": ...} answered 200 and changed nothing.
    typo = await client.put("/api/v1/tags/pii", json={"descrption": "personal"})
    assert typo.status_code == 400
    assert "unknown field `descrption`" in typo.json()["detail"]
    # What GET answers may be sent back as it is, its name the path's.
    sent_back = await client.put("/api/v1/tags/pii", json={"name": "pii", "description": "personal"})
    assert sent_back.json() == {"name": "pii", "description": "personal"}
    renamed = await client.put("/api/v1/tags/pii", json={"name": "pci", "description": "cards"})
    assert renamed.status_code == 400
    assert renamed.json()["detail"].startswith("The body names the tag 'pci' and the path 'pii'")
    assert (await client.get("/api/v1/tags")).json() == {
        "tags": [{"name": "pii", "description": "personal"}]
    }
