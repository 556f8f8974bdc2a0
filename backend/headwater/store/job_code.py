"""The code of a job version: the SQL or source its first run reported, read from that run's raw
events (the job's facets keep only the latest code)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

import msgspec

from headwater.db.queries import QUERIES
from headwater.store.payloads import payload_texts

if TYPE_CHECKING:
    import asyncpg


@dataclass(frozen=True)
class RunCode:
    """A run's SQL (language: its dialect, else "SQL") or source code (language as reported)."""

    text: str
    language: str


async def fetch_code_of_runs(
    conn: asyncpg.Connection, runs: list[uuid.UUID]
) -> dict[uuid.UUID, RunCode]:
    """The code each run reported in its job facets (`sql`: the query and its dialect; `sourceCode`:
    the source and its language), from the run's latest stored event that carries one. A run whose
    raw events are gone (retention) or never carried code has none."""
    rows = await conn.fetch(QUERIES["fetch_code_of_runs"], runs)
    found: dict[uuid.UUID, RunCode] = {}
    for row, payload in zip(rows, await payload_texts(conn, rows), strict=True):
        if row["run_uuid"] not in found:
            code = _code_in(payload)
            if code is not None:
                found[row["run_uuid"]] = code
    return found


def _code_in(payload: str) -> RunCode | None:
    try:
        event = msgspec.json.decode(payload)
    except msgspec.DecodeError:
        return None
    facets = _get(_get(event, "job"), "facets")
    sql, source = _get(facets, "sql"), _get(facets, "sourceCode")
    query = _text(_get(sql, "query"))
    if query is not None:
        dialect = _text(_get(sql, "dialect"))
        return RunCode(query, "SQL" if dialect is None else dialect)
    code = _text(_get(source, "sourceCode"))
    if code is not None:
        language = _text(_get(source, "language"))
        return RunCode(code, "source" if language is None else language)
    return None


def _get(value: object, key: str) -> object:
    return value.get(key) if isinstance(value, dict) else None


def _text(value: object) -> str | None:
    """A JSON value as text, as PostgreSQL's ``#>>`` gives it: a string as it is, null as None."""
    if value is None or isinstance(value, str):
        return value
    return msgspec.json.encode(value).decode()
