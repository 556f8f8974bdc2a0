"""`headwater dead-letters list|replay|purge`: the messages `headwater consume` could not ingest.

Replay reads each selected message again as it was received, through the same decoding and ingest
as the consumer, once whatever stopped it is fixed (alias rules, a database constraint, a newer
Headwater). A message stored is removed from the table in the same transaction; one that fails
again stays, with the new reason.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from headwater.consume.messages import PoisonMessageError, decode
from headwater.consume.writes import describe, store
from headwater.db.failures import is_database_unavailable

if TYPE_CHECKING:
    import asyncpg

    from headwater.ingest.normalize import AliasRule
    from headwater.integrations.trino import BridgeOptions


@dataclass(frozen=True)
class Selection:
    """Which dead letters a command acts on; empty selects every one."""

    ids: tuple[int, ...] = ()
    topic: str | None = None
    before: dt.datetime | None = None

    def where(self) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        args: list[Any] = []
        if self.ids:
            args.append(list(self.ids))
            clauses.append(f"dead_letter_id = ANY(${len(args)}::bigint[])")
        if self.topic is not None:
            args.append(self.topic)
            clauses.append(f"topic = ${len(args)}")
        if self.before is not None:
            args.append(self.before)
            clauses.append(f"dead_at < ${len(args)}")
        return (" WHERE " + " AND ".join(clauses) if clauses else ""), args

    @property
    def everything(self) -> bool:
        return not self.ids and self.topic is None and self.before is None


async def list_dead_letters(
    conn: asyncpg.Connection, selection: Selection, limit: int
) -> list[dict[str, Any]]:
    where, args = selection.where()
    rows = await conn.fetch(
        f"""SELECT dead_letter_id, topic, "partition", "offset", message_key, payload_size,
                   octet_length(payload) AS kept, format, reason, message_time, dead_at
            FROM kafka_dead_letters{where} ORDER BY dead_letter_id LIMIT {int(limit)}""",
        *args,
    )
    return [
        {
            "id": r["dead_letter_id"],
            "topic": r["topic"],
            "partition": r["partition"],
            "offset": r["offset"],
            "key": None
            if r["message_key"] is None
            else bytes(r["message_key"]).decode("utf-8", "replace"),
            "size": r["payload_size"],
            "replayable": (r["kept"] or 0) == r["payload_size"],
            "format": r["format"],
            "reason": r["reason"],
            "messageTime": r["message_time"].isoformat() if r["message_time"] else None,
            "deadAt": r["dead_at"].isoformat(),
        }
        for r in rows
    ]


@dataclass
class ReplayOutcome:
    stored: int = 0
    events: int = 0
    failed: int = 0
    cut: int = 0


class ReplayInterruptedError(Exception):
    """The database became unavailable during a replay; what was stored so far stays stored."""


async def replay(
    conn: asyncpg.Connection,
    selection: Selection,
    *,
    rules: list[AliasRule],
    bridge: BridgeOptions | None,
    max_message_bytes: int,
) -> ReplayOutcome:
    """Ingest the selected dead letters again, each in its own transaction with its removal."""
    where, args = selection.where()
    rows = await conn.fetch(
        f"""SELECT dead_letter_id, payload, payload_size, format FROM kafka_dead_letters{where}
            ORDER BY topic, "partition", "offset\"""",
        *args,
    )
    outcome = ReplayOutcome()
    for row in rows:
        payload = None if row["payload"] is None else bytes(row["payload"])
        if payload is not None and len(payload) < row["payload_size"]:
            outcome.cut += 1
            continue
        try:
            events = decode(
                payload, row["format"], max_bytes=max_message_bytes, rules=rules, bridge=bridge
            ).events
        except PoisonMessageError as exc:
            await _fail(conn, row["dead_letter_id"], str(exc))
            outcome.failed += 1
            continue
        try:
            async with conn.transaction():
                if events:
                    await store(conn, events, rules)
                await conn.execute(
                    "DELETE FROM kafka_dead_letters WHERE dead_letter_id = $1", row["dead_letter_id"]
                )
        except Exception as exc:
            if is_database_unavailable(exc):
                raise ReplayInterruptedError(describe(exc)) from exc
            await _fail(conn, row["dead_letter_id"], f"write failed: {describe(exc)}")
            outcome.failed += 1
            continue
        outcome.stored += 1
        outcome.events += len(events)
    return outcome


async def _fail(conn: asyncpg.Connection, dead_letter_id: int, reason: str) -> None:
    await conn.execute(
        "UPDATE kafka_dead_letters SET reason = $2 WHERE dead_letter_id = $1", dead_letter_id, reason
    )


async def purge(conn: asyncpg.Connection, selection: Selection) -> int:
    where, args = selection.where()
    status = await conn.execute(f"DELETE FROM kafka_dead_letters{where}", *args)
    return int(status.split()[-1])


def to_json(rows: list[dict[str, Any]]) -> str:
    return msgspec.json.encode(rows).decode()
