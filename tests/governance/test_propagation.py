"""Classifications along column lineage on real ingest: the pipeline of pipeline.py and the
OpenLineage reference events, applied synchronously (``apply_pending``) for exact answers."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import asyncpg
import pytest
from litestar.testing import AsyncTestClient

from headwater.app import create_app
from headwater.db.pool import register_codecs
from headwater.feed import log as change_log
from headwater.governance.policy import load_policy, parse_policy
from headwater.governance.propagation import apply_changes, apply_pending
from headwater.settings import Settings
from tests.corpus import corpus_file
from tests.governance import pipeline as p
from tests.governance.conftest import Governed
from tests.pg import migrated_database

pytestmark = pytest.mark.db


def hops(path: list[dict]) -> list[str]:
    return [f"{h['dataset'].rsplit(':', 1)[-1]}.{h['field']}" for h in path]


async def test_a_producer_pii_tag_follows_the_data_through_three_jobs_and_two_engines(
    governed: Governed,
):
    await governed.post(p.upstream())
    await governed.settle()

    assert "pii" in (await governed.labels(p.CUSTOMERS))["email"]
    assert (await governed.labels(p.STAGING))["email_norm"] == ["pii"]
    profiles = await governed.labels(p.PROFILES)
    assert profiles["contact_email"] == ["pii"]
    assert "email_hash" not in profiles  # masked by the producer
    contacts = await governed.labels(p.CONTACTS)
    assert contacts == {"email": ["pii"]}  # the hash stays clean downstream of the mask
    assert "emails" not in await governed.labels(p.COUNTS)  # COUNT removes identity
    assert "country" not in contacts

    doc = await governed.classification(p.CONTACTS)
    (email,) = doc["fields"]
    assert email["declared"] == []
    (inherited,) = email["inherited"]
    assert inherited["label"] == "pii"
    assert hops(inherited["path"]) == [
        "crm.public.customers.email",
        "staging/customers.email_norm",
        "analytics/customer_profiles.contact_email",
        "hive.marts.contacts.email",
    ]
    assert [h["job"] for h in inherited["path"]] == [
        None,
        "job:spark:etl.load_customers",
        "job:spark:etl.build_profiles",
        f"job:{p.TRINO}:marts.build_contacts",
    ]
    source = (await governed.classification(p.CUSTOMERS))["fields"]
    assert {"label": "pii", "sources": ["facet"], "onDataset": False} in next(
        f["declared"] for f in source if f["field"] == "email"
    )


async def test_a_pii_column_into_a_public_dataset_is_a_violation_until_the_next_version(
    governed: Governed,
):
    await governed.post(p.upstream())
    await governed.settle()
    await governed.post(p.export_newsletter(1))
    await governed.settle()

    doc = await governed.classification(p.NEWSLETTER)
    assert doc["level"] == "public"
    (violation,) = doc["violations"]
    assert (violation["rule"], violation["field"], violation["label"]) == (
        "no-pii-in-public",
        "recipient",
        "pii",
    )
    assert hops(violation["path"])[0] == "crm.public.customers.email"
    assert hops(violation["path"])[-1] == "hive.public.newsletter.recipient"
    logged = await governed.pool.fetch(
        "SELECT kind, node_id, details FROM change_log WHERE kind LIKE 'POLICY%' ORDER BY change_id"
    )
    assert [(r["kind"], r["node_id"]) for r in logged] == [
        ("POLICY_VIOLATION", f"dataset:{p.TRINO}:hive.public.newsletter")
    ]
    assert logged[0]["details"]["path"] == violation["path"]

    await governed.post(p.export_newsletter(2, minutes=40))
    await governed.settle()

    doc = await governed.classification(p.NEWSLETTER)
    assert doc["violations"] == []
    assert {f["field"]: f["labels"] for f in doc["fields"] if f["inherited"]} == {}
    response = await governed.client.get("/api/v1/governance/violations", params={"state": "cleared"})
    (cleared,) = response.json()["violations"]
    assert cleared["id"] == violation["id"]
    assert cleared["clearedCursor"] is not None
    kinds = await governed.pool.fetch(
        "SELECT kind FROM change_log WHERE kind LIKE 'POLICY%' ORDER BY change_id"
    )
    assert [r["kind"] for r in kinds] == ["POLICY_VIOLATION", "POLICY_VIOLATION_CLEARED"]


async def test_declaring_by_the_api_propagates_and_removing_it_retracts(governed: Governed):
    await governed.post(p.upstream())
    await governed.settle()
    response = await governed.client.put(
        "/api/v1/governance/classifications",
        json={"namespace": p.CRM, "name": "crm.public.customers", "level": "confidential"},
    )
    assert response.status_code == 200, response.text
    await governed.settle()
    # A dataset's level is every field's: country is confidential all the way down.
    assert "confidential" in (await governed.labels(p.CONTACTS))["country"]
    assert "confidential" in (await governed.labels(p.COUNTS))["country"]
    contacts = await governed.classification(p.CONTACTS)
    assert {f["field"]: f["level"] for f in contacts["fields"]}["country"] == "confidential"

    response = await governed.client.put(
        "/api/v1/governance/classifications", json={"namespace": p.CRM, "name": "crm.public.customers"}
    )
    assert response.status_code == 200
    await governed.settle()
    assert "country" not in await governed.labels(p.CONTACTS)
    changes = await governed.pool.fetch(
        "SELECT kind FROM change_log WHERE kind LIKE 'CLASSIFICATION%' ORDER BY change_id"
    )
    assert {r["kind"] for r in changes} == {"CLASSIFICATION_DECLARED", "CLASSIFICATION_CHANGED"}


async def test_bad_declarations_are_4xx_naming_the_problem(governed: Governed):
    await governed.post(p.load_customers())
    put = governed.client.put
    url = "/api/v1/governance/classifications"
    response = await put(
        url, json={"namespace": p.CRM, "name": "crm.public.customers", "level": "secret"}
    )
    assert response.status_code == 400
    assert "Unknown classification 'secret'" in response.json()["detail"]
    response = await put(url, json={"namespace": p.CRM, "name": "crm.public.customers", "level": "pii"})
    assert response.status_code == 400
    assert "is a tag, not a level" in response.json()["detail"]
    response = await put(url, json={"namespace": p.CRM, "name": "nope", "tags": ["pii"]})
    assert response.status_code == 404
    response = await put(
        url, json={"namespace": p.CRM, "name": "crm.public.customers", "field": "nope", "tags": ["pii"]}
    )
    assert response.status_code == 404
    assert "nope" in response.json()["detail"]
    response = await put(url, json={"namespace": p.CRM, "name": "crm.public.customers", "colour": "red"})
    assert response.status_code == 400
    response = await governed.client.get("/api/v1/governance/violations", params={"state": "shut"})
    assert response.status_code == 400


async def test_a_cycle_does_not_keep_a_label_alive(governed: Governed):
    """a.x -> b.y -> c.z -> b.y: when a.x stops being pii, the cycle b.y <-> c.z lets it go."""
    a, b, c = ("warehouse", "a"), ("warehouse", "b"), ("warehouse", "c")

    def job(
        name: str, src: tuple[str, str], src_field: str, dst: tuple[str, str], dst_field: str, t: int
    ):
        return p._run(
            p.SPARK_PRODUCER,
            "cycle",
            name,
            t,
            [p._dataset(src, [src_field])],
            [p._dataset(dst, [dst_field], {dst_field: [(src, src_field, "IDENTITY", None, False)]})],
            name,
        )

    await governed.post(
        job("ab", a, "x", b, "y", 0) + job("bc", b, "y", c, "z", 2) + job("cb", c, "z", b, "y", 4)
    )
    declare = {"namespace": "warehouse", "name": "a", "field": "x", "tags": ["pii"]}
    assert (
        await governed.client.put("/api/v1/governance/classifications", json=declare)
    ).status_code == 200
    await governed.settle()
    assert (await governed.labels(b))["y"] == ["pii"]
    assert (await governed.labels(c))["z"] == ["pii"]

    declare["tags"] = []
    assert (
        await governed.client.put("/api/v1/governance/classifications", json=declare)
    ).status_code == 200
    await governed.settle()
    assert await governed.labels(b) == {}
    assert await governed.labels(c) == {}


async def test_the_reference_hive_masking_event(governed: Governed):
    """OpenLineage's Hive masking fixture: sha1 columns are masked, the others carry the label."""
    event = json.loads(corpus_file("hive/cll-masking-complete.template.json").read_text())
    event.update(
        eventTime="2026-03-01T06:00:00Z",
        producer="https://github.com/OpenLineage/OpenLineage/tree/1.30.0/integration/hive",
        schemaURL=p.SCHEMA_URL,
    )
    event["run"]["runId"] = str(uuid.uuid4())
    event["run"]["facets"] = {}
    await governed.post([event])
    for field in ("a", "b"):
        declare = {
            "namespace": "hive://localhost:9083",
            "name": "test.t1",
            "field": field,
            "tags": ["pii"],
        }
        assert (
            await governed.client.put("/api/v1/governance/classifications", json=declare)
        ).status_code == 200
    await governed.settle()
    labels = await governed.labels(("hive://localhost:9083", "test.xxx"))
    # i, t copy or compute a; a sums b (an aggregation that is not a count); mt and ma are masked.
    assert labels == {"i": ["pii"], "t": ["pii"], "a": ["pii"]}


async def test_a_new_policy_recomputes_every_field_and_retires_the_rules_it_dropped(
    pg_server: str, policy_file: Path
):
    async with migrated_database(pg_server, "headwater_governance_policy") as url:
        settings = Settings(
            database_url=url, pool_min_size=1, pool_max_size=2, policies_file=policy_file, mcp=False
        )
        async with AsyncTestClient(app=create_app(settings)) as client:
            for event in p.upstream() + p.export_newsletter(1):
                assert (await client.post("/api/v1/lineage", json=event)).status_code == 201
        # The server (and its worker) stopped: what follows is the only writer.
        conn = await asyncpg.connect(url)
        try:
            await register_codecs(conn)
            first = load_policy(policy_file)
            await apply_pending(conn, first)
            assert (
                await conn.fetchval(
                    "SELECT count(*) FROM governance_violations WHERE cleared_at IS NULL"
                )
                == 1
            )

            # COUNT no longer masks, and the rules are gone.
            second = parse_policy({"masking": {"aggregations": []}})
            outcome = await apply_pending(conn, second)
            assert outcome.full
            assert outcome.violations_cleared == 1
            emails = await conn.fetchval(
                "SELECT path FROM governance_inherited i JOIN datasets d USING (dataset_uuid)"
                " WHERE d.name = 'hive.marts.country_counts' AND i.field_name = 'emails' AND i.label = 'pii'"
            )
            assert [h["field"] for h in json.loads(emails)] == [
                "email",
                "email_norm",
                "contact_email",
                "emails",
            ]
            assert (await apply_pending(conn, second)).changes_read == 0  # applied: nothing left
            kinds = await conn.fetch(
                "SELECT kind FROM change_log WHERE kind LIKE 'POLICY%' ORDER BY change_id"
            )
            assert [r["kind"] for r in kinds] == ["POLICY_VIOLATION", "POLICY_VIOLATION_CLEARED"]
        finally:
            await conn.close()


async def test_schema_field_tags_and_the_tag_api_declare_too(governed: Governed):
    events = p.load_customers()
    customers = events[1]["inputs"][0]["facets"]["schema"]["fields"]
    country = next(f for f in customers if f["name"] == "country")
    country["tags"] = [{"key": "classification", "value": "internal", "source": "CRM"}]
    await governed.post(events)
    tag = """mutation($tagged: Boolean!) {
      a: tagDataset(namespace: "postgres://crm:5432", name: "crm.public.customers", tag: "PII", field: "id")
        @include(if: $tagged) { __typename }
      b: untagDataset(namespace: "postgres://crm:5432", name: "crm.public.customers", tag: "PII", field: "id")
        @skip(if: $tagged) { __typename }
    }"""
    response = await governed.client.post("/graphql", json={"query": tag, "variables": {"tagged": True}})
    assert "errors" not in response.json(), response.json()
    await governed.settle()

    source = {f["field"]: f["declared"] for f in (await governed.classification(p.CUSTOMERS))["fields"]}
    assert source["country"] == [{"label": "internal", "sources": ["facet"], "onDataset": False}]
    assert source["id"] == [{"label": "pii", "sources": ["tag"], "onDataset": False}]
    staging = await governed.labels(p.STAGING)
    assert staging == {"id": ["pii"], "email_norm": ["pii"], "country": ["internal"]}

    response = await governed.client.post(
        "/graphql", json={"query": tag, "variables": {"tagged": False}}
    )
    assert "errors" not in response.json(), response.json()
    await governed.settle()
    assert "id" not in await governed.labels(p.STAGING)


async def test_appliers_take_turns_and_announce_each_violation_once(governed: Governed):
    """The server's worker and two more appliers at once: the progress row's lock serializes them."""
    await governed.post(p.upstream() + p.export_newsletter(1))
    conns = [await asyncpg.connect(governed.url) for _ in range(2)]
    try:
        for conn in conns:
            await register_codecs(conn)
        await asyncio.gather(*(apply_pending(conn, governed.policy) for conn in conns))
    finally:
        for conn in conns:
            await conn.close()
    await governed.settle()
    logged = await governed.pool.fetch("SELECT kind FROM change_log WHERE kind LIKE 'POLICY%'")
    assert [r["kind"] for r in logged] == ["POLICY_VIOLATION"]
    assert await governed.pool.fetchval("SELECT count(*) FROM governance_violations") == 1


async def test_an_applier_gives_way_to_a_transaction_that_locks_everything(governed: Governed):
    """A TRUNCATE (as the tests' clean-up does) or a migration locks table after table: the
    server's worker, holding the progress row, lets go rather than deadlock, and applies after."""
    await governed.post(p.load_customers())
    await governed.settle()
    blocker = await asyncpg.connect(governed.url)
    try:
        transaction = blocker.transaction()
        await transaction.start()
        # A table the worker reads (producer tags) and a declaration does not.
        await blocker.execute("LOCK TABLE dataset_field_tags IN ACCESS EXCLUSIVE MODE")
        declare = {
            "namespace": p.CRM,
            "name": "crm.public.customers",
            "field": "country",
            "tags": ["pii"],
        }
        response = await governed.client.put("/api/v1/governance/classifications", json=declare)
        assert response.status_code == 200
        # The worker takes the progress row and waits for the table; past the deadlock detector's
        # first look (1 s), this would be a deadlock whose victim is the blocker.
        await asyncio.sleep(1.3)
        await blocker.execute("LOCK TABLE governance_progress IN ACCESS EXCLUSIVE MODE")
        await transaction.commit()
    finally:
        await blocker.close()
    await governed.settle()
    assert (await governed.labels(p.STAGING))["country"] == ["pii"]


async def test_violations_page_newest_first(governed: Governed):
    await governed.post(p.upstream() + p.export_newsletter(1))
    declare = {"namespace": p.CRM, "name": "crm.public.customers", "field": "country", "tags": ["pii"]}
    assert (
        await governed.client.put("/api/v1/governance/classifications", json=declare)
    ).status_code == 200
    await governed.settle()
    url = "/api/v1/governance/violations"
    first = (await governed.client.get(url, params={"limit": 1})).json()
    second = (await governed.client.get(url, params={"limit": 1, "after": first["next"]})).json()
    both = first["violations"] + second["violations"]
    assert sorted(v["field"] for v in both) == ["country", "recipient"]
    assert int(both[0]["id"]) > int(both[1]["id"])
    third = (await governed.client.get(url, params={"limit": 1, "after": second["next"]})).json()
    assert third == {"violations": [], "next": None}
    other = (await governed.client.get(url, params={"namespace": p.CRM})).json()
    assert other["violations"] == []
    for bad in ({"limit": 0}, {"limit": 1001}, {"after": "x"}):
        assert (await governed.client.get(url, params=bad)).status_code == 400


async def test_lineage_costs_no_propagation_until_something_is_labelled(governed: Governed):
    await governed.post(p.build_profiles())
    async with governed.pool.acquire() as conn:
        # The changes applied again, in a transaction that leaves nothing behind.
        replay = conn.transaction()
        await replay.start()
        try:
            changes = await change_log.fetch_changes_between(conn, 0, 1 << 62, 1000)
            idle = await apply_changes(conn, governed.policy, changes)
        finally:
            await replay.rollback()
    assert idle.changes_read > 0
    assert idle.fields_recomputed == 0

    # The first label anywhere starts propagation, and it reaches lineage ingested before it.
    await governed.post(p.load_customers())
    await governed.settle()
    assert (await governed.labels(p.PROFILES))["contact_email"] == ["pii"]
