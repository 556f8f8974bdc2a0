"""Tags and manual lineage against careless and hostile clients: names that only look valid, inputs
of megabytes quoted back, and two writes racing on the same rows."""

from __future__ import annotations

import pytest

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
