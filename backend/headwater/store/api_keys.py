"""API keys and their scopes, stored as the SHA-256 of their secret (see access/keys.py)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from headwater.db.queries import QUERIES

if TYPE_CHECKING:
    import asyncpg


@dataclass(frozen=True)
class ApiKeyRecord:
    key_id: str
    name: str
    scopes: tuple[str, ...]
    created_at: dt.datetime
    revoked_at: dt.datetime | None


def _record(r: Any) -> ApiKeyRecord:
    return ApiKeyRecord(r["key_id"], r["name"], tuple(r["scopes"]), r["created_at"], r["revoked_at"])


async def insert_api_key(
    conn: asyncpg.Connection, key_id: str, name: str, secret_hash: bytes, scopes: list[str]
) -> ApiKeyRecord:
    return _record(await conn.fetchrow(QUERIES["insert_api_key"], key_id, name, secret_hash, scopes))


async def list_api_keys(conn: asyncpg.Connection) -> list[ApiKeyRecord]:
    return [_record(r) for r in await conn.fetch(QUERIES["list_api_keys"])]


async def revoke_api_key(conn: asyncpg.Connection, key_id: str) -> ApiKeyRecord | None:
    row = await conn.fetchrow(QUERIES["revoke_api_key"], key_id)
    return None if row is None else _record(row)


async def fetch_active_api_key(
    conn: asyncpg.Connection, key_id: str
) -> tuple[frozenset[str], bytes] | None:
    """(scopes, secret hash) of a key that is not revoked."""
    row = await conn.fetchrow(QUERIES["fetch_active_api_key"], key_id)
    return None if row is None else (frozenset(row["scopes"]), bytes(row["secret_hash"]))


async def count_active_api_keys(conn: asyncpg.Connection) -> int:
    return int(await conn.fetchval(QUERIES["count_active_api_keys"]))
