"""`headwater mcp`: the MCP server on stdin/stdout, for desktop assistants and IDEs.

The database is found as for `serve` (HEADWATER_DATABASE_URL, else the embedded PostgreSQL, joined
while `serve` runs it). Standard output carries the protocol only: what the command says goes to
standard error.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from headwater.api.read_turns import ReadTurns
from headwater.db.pool import create_pool
from headwater.lineage.documents import DocumentCache
from headwater.mcp.server import build_server
from headwater.mcp.tools import Reads

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from mcp.server.mcpserver import MCPServer

    from headwater.settings import Settings


def run_mcp(_: argparse.Namespace) -> int:
    from headwater.command_base import check_migrated, database, load_settings

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    settings = load_settings()
    with database(settings.database_url, settings.data_dir) as url:
        asyncio.run(check_migrated(url))
        asyncio.run(_serve(settings, url))
    return 0


async def _serve(settings: Settings, url: str) -> None:
    @asynccontextmanager
    async def reads(_: MCPServer[Reads]) -> AsyncIterator[Reads]:
        pool = await create_pool(settings, url)
        try:
            turns = ReadTurns(settings.lineage_reads_at_once, settings.pool_acquire_timeout_ms / 1000)
            yield Reads(pool, settings, DocumentCache(), turns)
        finally:
            await pool.close()

    await build_server(reads).run_stdio_async()
