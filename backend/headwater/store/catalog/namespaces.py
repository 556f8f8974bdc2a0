"""Namespaces: every one, or some by name."""

from __future__ import annotations

from typing import TYPE_CHECKING

from headwater.db.queries import QUERIES
from headwater.store.catalog.records import NamespaceRecord

if TYPE_CHECKING:
    import asyncpg


async def list_namespaces(conn: asyncpg.Connection) -> list[NamespaceRecord]:
    """Every namespace, by name."""
    rows = await conn.fetch(QUERIES["list_namespaces"])
    return [NamespaceRecord(r["name"], r["created_at"], r["updated_at"]) for r in rows]


async def fetch_namespaces_by_names(
    conn: asyncpg.Connection, names: list[str]
) -> dict[str, NamespaceRecord]:
    """Namespaces by name; unknown names are absent."""
    rows = await conn.fetch(QUERIES["fetch_namespaces_by_names"], names)
    return {r["name"]: NamespaceRecord(r["name"], r["created_at"], r["updated_at"]) for r in rows}
