"""Run by the upgrade test with an earlier release's code first on the path: migrate a database with
that release's migrations, ingest the shared events with its ingest, and print what it answers.

Usage: python seed_release.py DATABASE_URL EVENT_FILE... ; prints one JSON object on stdout.
Only the earliest API is used (migrate, register_codecs, validate_event, ingest_events,
fetch_lineage), so that any release since the first can run it.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import asyncpg

from headwater.db.migrate import migrate
from headwater.db.pool import register_codecs
from headwater.errors import AppError
from headwater.ingest.service import ingest_events
from headwater.ingest.validate import validate_event
from headwater.lineage.graph import fetch_lineage


async def seed(url: str, files: list[str]) -> dict[str, Any]:
    conn = await asyncpg.connect(url)
    try:
        await register_codecs(conn)
        await migrate(conn)
        stored, refused = [], []
        for name in files:
            try:
                event = validate_event(json.loads(Path(name).read_text()))
                await ingest_events(conn, [event])
            except AppError:
                refused.append(name)
            else:
                stored.append(name)
        nodes = [
            r["id"]
            for r in await conn.fetch(
                "SELECT 'dataset:' || namespace || ':' || name AS id FROM datasets"
                " UNION ALL SELECT 'job:' || namespace || ':' || name FROM jobs ORDER BY 1"
            )
        ]
        lineage = {}
        for node in nodes:
            graph = await fetch_lineage(conn, [node], depth=20)
            lineage[node] = {
                "nodes": sorted(n.id for n in graph.nodes),
                "edges": sorted(list(e) for e in graph.edges),
            }
        return {"stored": stored, "refused": refused, "lineage": lineage}
    finally:
        await conn.close()


if __name__ == "__main__":
    print(json.dumps(asyncio.run(seed(sys.argv[1], sys.argv[2:]))))
