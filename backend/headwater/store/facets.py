"""Facets an event marks `"_deleted": true`, removed from the datasets and jobs that hold them."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Literal

from headwater.db.pool import json_text
from headwater.db.queries import QUERIES

if TYPE_CHECKING:
    import asyncpg

# (DATASET or JOB, namespace, name, facet names, the event's time)
FacetDeletion = tuple[Literal["DATASET", "JOB"], str, str, list[str], dt.datetime]


async def delete_reported_facets(conn: asyncpg.Connection, deletions: list[FacetDeletion]) -> None:
    """Remove the facets, unless the node's stored facets are later than the event. Run after the
    upsert that merged the rest of the events (rare: most events delete nothing)."""
    if deletions:
        await conn.execute(
            QUERIES["delete_node_facets"],
            [d[0] for d in deletions],
            [d[1] for d in deletions],
            [d[2] for d in deletions],
            [json_text(d[3]) for d in deletions],
            [d[4] for d in deletions],
        )
