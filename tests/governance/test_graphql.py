"""Governance in GraphQL: the classification query, violations, the policy, and the mutation,
which needs the `write` scope once keys exist."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.access.keys import new_key
from headwater.store.api_keys import insert_api_key
from tests.governance import pipeline as p
from tests.governance.conftest import Governed

pytestmark = pytest.mark.db

CLASSIFICATION = """query($namespace: String!, $name: String!) {
  datasetClassification(namespace: $namespace, name: $name) {
    level labels appliedCursor
    fields { field level labels declared { label sources onDataset } inherited { label path } }
    violations { rule field label path openedCursor clearedAt }
  }
}"""

SET = """mutation($namespace: String!, $name: String!, $field: String, $level: String, $tags: [String!]) {
  setClassification(namespace: $namespace, name: $name, field: $field, level: $level, tags: $tags) {
    __typename
    ... on DatasetClassification { level labels }
    ... on Problem { code message }
  }
}"""


async def graphql(
    governed: Governed, query: str, key: str | None = None, **variables: Any
) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    response = await governed.client.post(
        "/graphql", json={"query": query, "variables": variables}, headers=headers
    )
    assert response.status_code == 200, response.text
    return response.json()


async def make_key(governed: Governed, *scopes: str) -> str:
    key_id, key, secret_hash = new_key()
    async with governed.pool.acquire() as conn:
        await insert_api_key(conn, key_id, "-".join(scopes), secret_hash, list(scopes))
    return key


async def test_classification_violations_and_policy_in_graphql(governed: Governed):
    writer = await make_key(governed, "ingest", "read", "write")
    reader = await make_key(governed, "read")
    for event in p.upstream() + p.export_newsletter(1):
        response = await governed.client.post(
            "/api/v1/lineage", json=event, headers={"Authorization": f"Bearer {writer}"}
        )
        assert response.status_code == 201
    await governed.settle()

    newsletter = {"namespace": p.TRINO, "name": "hive.public.newsletter"}
    data = (await graphql(governed, CLASSIFICATION, reader, **newsletter))["data"][
        "datasetClassification"
    ]
    assert data["level"] == "public"
    recipient = next(f for f in data["fields"] if f["field"] == "recipient")
    assert recipient["labels"] == ["pii", "public"]  # public: its dataset's, declared on the dataset
    assert recipient["inherited"][0]["path"][-1]["field"] == "recipient"
    assert [(v["rule"], v["field"]) for v in data["violations"]] == [("no-pii-in-public", "recipient")]
    unknown = await graphql(governed, CLASSIFICATION, reader, namespace=p.TRINO, name="nope")
    assert unknown["data"]["datasetClassification"] is None

    listed = await graphql(
        governed, '{ policyViolations(state: "all") { rule namespace name field } }', reader
    )
    assert listed["data"]["policyViolations"] == [
        {
            "rule": "no-pii-in-public",
            "namespace": p.TRINO,
            "name": "hive.public.newsletter",
            "field": "recipient",
        }
    ]
    policy = await graphql(
        governed, "{ governancePolicy { levels tags maskingAggregations rules } }", reader
    )
    assert policy["data"]["governancePolicy"]["levels"] == [
        "public",
        "internal",
        "confidential",
        "restricted",
    ]
    assert policy["data"]["governancePolicy"]["rules"][0]["name"] == "no-pii-in-public"

    crm = {"namespace": p.CRM, "name": "crm.public.customers"}
    refused = await graphql(governed, SET, reader, **crm, field="country", tags=["pii"])
    assert refused["errors"][0]["extensions"]["code"] == "forbidden"
    done = await graphql(governed, SET, writer, **crm, field="country", tags=["pii"])
    assert done["data"]["setClassification"]["__typename"] == "DatasetClassification"
    bad = await graphql(governed, SET, writer, **crm, level="secret")
    assert bad["data"]["setClassification"]["__typename"] == "InvalidInputError"
    assert "secret" in bad["data"]["setClassification"]["message"]
    missing = await graphql(governed, SET, writer, namespace=p.CRM, name="nope", level="public")
    assert missing["data"]["setClassification"]["__typename"] == "NotFoundError"
    await governed.settle()
    # country now carries pii too, all the way into the public newsletter: a second violation.
    data = (await graphql(governed, CLASSIFICATION, reader, **newsletter))["data"][
        "datasetClassification"
    ]
    assert sorted(v["field"] for v in data["violations"]) == ["country", "recipient"]

    response = await governed.client.put(
        "/api/v1/governance/classifications",
        json={**crm, "field": "country"},
        headers={"Authorization": f"Bearer {reader}"},
    )
    assert response.status_code == 403
