"""Point-in-time questions stop at the retention horizon: before it, history was removed.

A walk as of a time before the horizon would follow what retention left (current lineage, however
old, and nothing closed) and answer a graph that never was: it is refused, naming the horizon.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from headwater.db.queries import QUERIES
from headwater.errors import BeforeRetentionHorizonError

if TYPE_CHECKING:
    import datetime as dt

    import asyncpg


async def check_horizon(conn: asyncpg.Connection, as_of: dt.datetime | None) -> None:
    """Raise BeforeRetentionHorizonError when ``as_of`` is before the latest retention horizon."""
    if as_of is None:
        return
    horizon: dt.datetime | None = await conn.fetchval(QUERIES["fetch_retention_horizon"])
    if horizon is not None and as_of < horizon:
        raise BeforeRetentionHorizonError(as_of.isoformat(), horizon.isoformat())
