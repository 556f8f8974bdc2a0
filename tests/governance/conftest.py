"""A database and an app of their own for governance tests, with a policy file."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from litestar.testing import AsyncTestClient

from headwater.app import create_app
from headwater.db.pool import register_codecs
from headwater.governance.policy import Policy, load_policy
from headwater.governance.propagation import Outcome, apply_pending
from headwater.settings import Settings
from tests.pg import migrated_database

POLICY = """
levels = ["public", "internal", "confidential", "restricted"]
tags = ["pii"]

[masking]
aggregations = ["COUNT"]

[[rules]]
name = "no-pii-in-public"
tag = "pii"
in_datasets_at = "public"

[[rules]]
name = "nothing-above-internal-in-public"
max_level = "internal"
in_datasets_at = "public"
"""


@pytest.fixture
def policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "policies.toml"
    path.write_text(POLICY)
    return path


@dataclass
class Governed:
    """The app (with its governance worker) on its own database, and a pool to look with."""

    client: AsyncTestClient[Any]
    pool: asyncpg.Pool
    policy: Policy
    url: str

    async def post(self, events: list[dict[str, Any]]) -> None:
        for event in events:
            response = await self.client.post("/api/v1/lineage", json=event)
            assert response.status_code == 201, response.text

    async def settle(self) -> Outcome:
        """Apply whatever the worker has not applied yet, here and now."""
        async with self.pool.acquire() as conn:
            return await apply_pending(conn, self.policy)

    async def classification(self, dataset: tuple[str, str]) -> dict[str, Any]:
        response = await self.client.get(
            "/api/v1/governance/classifications", params={"namespace": dataset[0], "name": dataset[1]}
        )
        assert response.status_code == 200, response.text
        return response.json()

    async def labels(self, dataset: tuple[str, str]) -> dict[str, list[str]]:
        """field -> its labels (declared or inherited)."""
        return {f["field"]: f["labels"] for f in (await self.classification(dataset))["fields"]}


@pytest.fixture
async def governed(pg_server: str, policy_file: Path) -> AsyncIterator[Governed]:
    async with migrated_database(pg_server, "headwater_governance") as url:
        settings = Settings(
            database_url=url, pool_min_size=1, pool_max_size=4, policies_file=policy_file, mcp=False
        )
        pool = await asyncpg.create_pool(url, min_size=1, max_size=3, init=register_codecs)
        try:
            async with AsyncTestClient(app=create_app(settings)) as client:
                yield Governed(client, pool, load_policy(policy_file), url)
        finally:
            await pool.close()
