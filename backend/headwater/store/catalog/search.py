"""Search: datasets and jobs whose name contains a text."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from headwater.db.queries import QUERIES
from headwater.store.catalog.records import NodeKind, SearchHit
from headwater.store.catalog.rows import like_fragment

if TYPE_CHECKING:
    import asyncpg

# RELEVANCE: exact names, then prefixes, then shorter names; NAME; UPDATE_AT: newest first (Marquez's
# spelling); HEAT: hottest first, never computed last.
SearchSort = Literal["RELEVANCE", "NAME", "UPDATE_AT", "HEAT"]


async def search_nodes(
    conn: asyncpg.Connection,
    text: str,
    *,
    namespace: str | None = None,
    kind: NodeKind | None = None,
    sort: SearchSort = "RELEVANCE",
    limit: int = 20,
) -> list[SearchHit]:
    """Datasets and jobs whose name contains ``text``, best matches first unless sorted otherwise."""
    rows = await conn.fetch(
        QUERIES["search_nodes"], like_fragment(text), namespace, limit, text, kind, sort
    )
    return [SearchHit(r["kind"], r["namespace"], r["name"], r["updated_at"], r["heat"]) for r in rows]


async def count_search_nodes(
    conn: asyncpg.Connection, text: str, *, namespace: str | None = None, kind: NodeKind | None = None
) -> int:
    """How many datasets and jobs search_nodes would find without a limit."""
    return int(await conn.fetchval(QUERIES["count_search_nodes"], like_fragment(text), namespace, kind))
