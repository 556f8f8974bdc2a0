"""Two clients declaring a classification on the same field at the same moment: the later
declaration replaces the earlier, as one after the other would."""

from __future__ import annotations

import asyncio
import datetime as dt

import pytest

from headwater.governance import classifications
from headwater.governance.policy import Policy
from tests.api.test_hostile_writes import until_blocked_or_done
from tests.client import post_all
from tests.factories import dataset, run_event

pytestmark = pytest.mark.db


async def test_concurrent_declarations_on_a_field_replace_each_other(client, db):
    await post_all(client, [run_event("w", outputs=[dataset("users", fields=["email"])])])
    policy, at = Policy(), dt.datetime.now(dt.UTC)
    async with db.acquire() as first, db.acquire() as second:
        declaring = first.transaction()
        await declaring.start()
        await classifications.declare(
            first, policy, "warehouse", "users", "email", level="internal", tags=[], at=at
        )
        later = asyncio.create_task(
            classifications.declare(
                second, policy, "warehouse", "users", "email", level="confidential", tags=["pii"], at=at
            )
        )
        await until_blocked_or_done(db, second, later)
        await declaring.commit()
        await later
        declared = await second.fetch(
            "SELECT label FROM governance_declarations WHERE source = 'api' ORDER BY label"
        )
    assert [r["label"] for r in declared] == ["confidential", "pii"]


async def test_an_unknown_classification_of_megabytes_is_quoted_cut_short(client):
    await post_all(client, [run_event("w", outputs=[dataset("users", fields=["email"])])])
    response = await client.put(
        "/api/v1/governance/classifications",
        json={"namespace": "warehouse", "name": "users", "tags": ["q" * 3_000_000]},
    )
    assert response.status_code == 400, response.text
    assert response.json()["detail"] == (
        f"Unknown classification '{'q' * 100}…': levels are public, internal, confidential, "
        "restricted; tags are pii (HEADWATER_POLICIES)."
    )
    padded_level = " " * 3_000_000 + "internal"
    response = await client.put(
        "/api/v1/governance/classifications",
        json={"namespace": "warehouse", "name": "users", "tags": [padded_level]},
    )
    assert response.json()["detail"] == "'internal' is a level: set it as the level, not as a tag."
