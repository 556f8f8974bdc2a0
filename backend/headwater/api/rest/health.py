"""Liveness and readiness."""

from __future__ import annotations

from typing import Any

import asyncpg
from litestar import Response, get
from litestar.datastructures import State


@get("/healthz", summary="The process is alive")
async def healthz() -> dict[str, str]:
    """Always ok while the process serves requests."""
    return {"status": "ok"}


@get("/readyz", summary="The database answers")
async def readyz(state: State) -> Response[dict[str, Any]]:
    """200 when a database round trip succeeds, else 503. Asked through connections of its own: a
    server whose pool is busy with reads still has its database, and is ready."""
    pool: asyncpg.Pool = state.control_pool
    try:
        async with pool.acquire(timeout=2) as conn:
            await conn.fetchval("SELECT 1")
    except Exception as exc:  # any failure means not ready
        return Response({"status": "unavailable", "reason": type(exc).__name__}, status_code=503)
    return Response({"status": "ok"}, status_code=200)
