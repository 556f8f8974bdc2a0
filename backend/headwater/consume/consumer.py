"""The consume loop: poll, write, commit; pause while the database is away; dead-letter poison.

Order of a poll: decode every message (poison ones are marked dead), write the live events in one
transaction (``writes``), record the dead letters, then commit each partition's offset past its
last message. Nothing is committed before its events are in PostgreSQL; a crash in between
re-delivers, and re-delivered events are duplicates.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import random
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.abc import ConsumerRebalanceListener
from aiokafka.errors import KafkaConnectionError, KafkaError

from headwater.api.metrics import (
    KAFKA_ASSIGNED,
    KAFKA_DEAD_LETTERS,
    KAFKA_EVENTS,
    KAFKA_EVENTS_PER_SECOND,
    KAFKA_LAG,
    KAFKA_MESSAGES,
    KAFKA_PAUSED,
    KAFKA_PAUSES,
)
from headwater.consume.messages import Format, PoisonMessageError, decode
from headwater.consume.writes import (
    DatabaseUnavailableError,
    Item,
    is_unavailable,
    store_dead_letters,
    write_items,
)

if TYPE_CHECKING:
    import asyncpg
    from aiokafka.structs import ConsumerRecord

    from headwater.consume.options import ConsumeOptions
    from headwater.ingest.normalize import AliasRule
    from headwater.integrations.trino import BridgeOptions

log = logging.getLogger("headwater.consume")

BACKOFF_FIRST_S = 0.5
BACKOFF_MAX_S = 30.0
# How often progress (events/s, lag) is logged while messages flow.
_REPORT_EVERY_S = 30.0
_RATE_WINDOW_S = 10.0


class _StoppingError(Exception):
    """A stop was asked for while a write was being retried: leave without committing it."""


class _Rebalance(ConsumerRebalanceListener):
    def __init__(self, owner: KafkaConsumer) -> None:
        self.owner = owner

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        if revoked:
            log.info("partitions revoked: %s", _names(revoked))
        for tp in revoked:
            self.owner.committed.pop(tp, None)
            if tp in self.owner.lag_shown:
                self.owner.lag_shown.discard(tp)
                KAFKA_LAG.remove(tp.topic, str(tp.partition))

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        consumer = self.owner.consumer
        KAFKA_ASSIGNED.set(len(consumer.assignment()))
        log.info(
            "assignment of group %s: %s",
            self.owner.options.group,
            _names(consumer.assignment()) or "none",
        )
        if self.owner.paused and assigned:
            # Partitions handed over while the database is away wait with the others.
            consumer.pause(*assigned)


def _names(tps: set[TopicPartition] | frozenset[TopicPartition]) -> str:
    return ", ".join(f"{tp.topic}[{tp.partition}]" for tp in sorted(tps))


class KafkaConsumer:
    """One member of the consumer group, writing into the database of ``pool``."""

    def __init__(
        self,
        options: ConsumeOptions,
        pool: asyncpg.Pool,
        *,
        rules: list[AliasRule],
        bridge: BridgeOptions | None,
        max_message_bytes: int,
    ) -> None:
        self.options = options
        self.pool = pool
        self.rules = rules
        self.bridge = bridge
        self.max_message_bytes = max_message_bytes
        self.formats: dict[str, Format] = {
            **{t: "openlineage" for t in options.topics},
            **{t: "trino" for t in options.trino_topics},
        }
        self.consumer = AIOKafkaConsumer(
            group_id=options.group,
            client_id=f"headwater-{options.group}",
            enable_auto_commit=False,
            # Lineage must not skip history: a new group reads each partition from its start.
            auto_offset_reset="earliest",
            max_poll_records=options.batch_size,
            session_timeout_ms=options.session_timeout_ms,
            heartbeat_interval_ms=options.session_timeout_ms // 3,
            # A topic that does not exist yet (created by its first producer) is picked up within this.
            metadata_max_age_ms=30_000,
            **options.client_options(),
        )
        self.committed: dict[TopicPartition, int] = {}
        self.lag_shown: set[TopicPartition] = set()
        self.paused = False
        self._written: deque[tuple[float, int]] = deque()
        self._last_report = time.monotonic()
        self._since_report = 0

    async def run(self, stop: asyncio.Event) -> None:
        """Consume until ``stop`` is set; the batch in hand is written and committed first if it can be."""
        await self._start(stop)
        if stop.is_set():
            return
        try:
            while not stop.is_set():
                batch = await self.consumer.getmany(timeout_ms=500)
                if batch:
                    try:
                        await self._handle(batch, stop)
                    except _StoppingError:
                        break
                await self._update_lag()
        finally:
            await self.consumer.stop()
            KAFKA_PAUSED.set(0)
            KAFKA_ASSIGNED.set(0)
            log.info("consumer stopped; left group %s", self.options.group)

    async def _start(self, stop: asyncio.Event) -> None:
        delay = BACKOFF_FIRST_S
        while not stop.is_set():
            try:
                await self.consumer.start()
                break
            except KafkaConnectionError as exc:
                log.warning(
                    "cannot reach Kafka at %s (%s); retrying in %.0f s",
                    _servers(self.options),
                    exc,
                    delay,
                )
                await _wait(stop, delay)
                delay = min(delay * 2, BACKOFF_MAX_S)
        else:
            return
        self.consumer.subscribe(self.options.all_topics, listener=_Rebalance(self))
        log.info(
            "consuming from %s: topics %s%s, group %s, batches of up to %d messages",
            _servers(self.options),
            ", ".join(self.options.topics) or "none",
            f", Trino topics {', '.join(self.options.trino_topics)}"
            if self.options.trino_topics
            else "",
            self.options.group,
            self.options.batch_size,
        )

    async def _handle(
        self, batch: dict[TopicPartition, list[ConsumerRecord[Any, Any]]], stop: asyncio.Event
    ) -> None:
        items = [self._item(m) for messages in batch.values() for m in messages]
        await self._write(items, stop)
        self._count(items)
        await self._commit({tp: messages[-1].offset + 1 for tp, messages in batch.items()})

    def _item(self, message: ConsumerRecord[Any, Any]) -> Item:
        fmt = self.formats.get(message.topic, "openlineage")
        item = Item(
            topic=message.topic,
            partition=message.partition,
            offset=message.offset,
            key=message.key,
            value=message.value,
            format=fmt,
            timestamp=dt.datetime.fromtimestamp(message.timestamp / 1000, dt.UTC)
            if message.timestamp is not None and message.timestamp >= 0
            else None,
        )
        try:
            decoded = decode(
                message.value,
                fmt,
                max_bytes=self.max_message_bytes,
                rules=self.rules,
                bridge=self.bridge,
            )
        except PoisonMessageError as exc:
            item.dead = str(exc)
            return item
        item.events = decoded.events
        return item

    async def _write(self, items: list[Item], stop: asyncio.Event) -> None:
        """Write until it succeeds: while the database is away, partitions are paused and polled idle."""
        delay = BACKOFF_FIRST_S
        while True:
            try:
                await write_items(self.pool, items, self.rules)
                if any(i.dead for i in items):
                    async with self.pool.acquire() as conn:
                        await store_dead_letters(conn, items, self.options.dead_letter_max_bytes)
                break
            except Exception as exc:
                if not isinstance(exc, DatabaseUnavailableError) and not is_unavailable(exc):
                    raise
                if stop.is_set():
                    raise _StoppingError from exc
                self._pause(exc)
                await self._idle(delay * (0.5 + random.random()), stop)  # noqa: S311 - jitter
                delay = min(delay * 2, BACKOFF_MAX_S)
        if self.paused:
            self.paused = False
            KAFKA_PAUSED.set(0)
            self.consumer.resume(*self.consumer.assignment())
            log.info("database available again: partitions resumed")

    def _pause(self, exc: BaseException) -> None:
        if self.paused:
            log.warning("database still unavailable: %s", exc)
            return
        self.paused = True
        KAFKA_PAUSES.inc()
        KAFKA_PAUSED.set(1)
        self.consumer.pause(*self.consumer.assignment())
        log.warning(
            "database unavailable (%s): partitions paused, nothing committed past what is written; retrying",
            exc,
        )

    async def _idle(self, seconds: float, stop: asyncio.Event) -> None:
        """Poll the paused consumer so that the group keeps it as a member while it waits."""
        deadline = time.monotonic() + seconds
        while not stop.is_set() and (left := deadline - time.monotonic()) > 0:
            records = await self.consumer.getmany(timeout_ms=int(min(left, 1.0) * 1000))
            for tp, messages in records.items():
                # A partition assigned between pause() and now: read it again once resumed.
                self.consumer.seek(tp, messages[0].offset)
                self.consumer.pause(tp)

    async def _commit(self, offsets: dict[TopicPartition, int]) -> None:
        owned = self.consumer.assignment()
        mine = {tp: o for tp, o in offsets.items() if tp in owned}
        if not mine:
            return
        try:
            await self.consumer.commit(mine)
        except KafkaError as exc:
            # The events are in PostgreSQL: whoever reads these messages again gets duplicates.
            log.warning("offsets not committed (%s); the messages will come again as duplicates", exc)
            return
        self.committed.update(mine)

    def _count(self, items: list[Item]) -> None:
        now = time.monotonic()
        written = 0
        dead = 0
        for item in items:
            if item.dead is not None:
                dead += 1
                KAFKA_MESSAGES.labels(item.topic, "dead_letter").inc()
                KAFKA_DEAD_LETTERS.labels(item.topic).inc()
                log.warning(
                    "dead letter %s[%d]@%d: %s", item.topic, item.partition, item.offset, item.dead
                )
                continue
            KAFKA_MESSAGES.labels(item.topic, "ingested" if item.events else "skipped").inc()
            for result in item.results:
                KAFKA_EVENTS.labels(item.topic, result.status).inc()
            written += len(item.results)
        self._written.append((now, written))
        while self._written and self._written[0][0] < now - _RATE_WINDOW_S:
            self._written.popleft()
        KAFKA_EVENTS_PER_SECOND.set(sum(n for _, n in self._written) / _RATE_WINDOW_S)
        self._since_report += written
        if now - self._last_report >= _REPORT_EVERY_S:
            rate = self._since_report / (now - self._last_report)
            log.info(
                "%d events written in the last %.0f s (%.0f events/s)",
                self._since_report,
                now - self._last_report,
                rate,
            )
            self._last_report, self._since_report = now, 0

    async def _update_lag(self) -> None:
        for tp in self.consumer.assignment():
            high = self.consumer.highwater(tp)
            if high is None:
                continue
            done = self.committed.get(tp)
            if done is None:
                done = await self.consumer.position(tp)
            KAFKA_LAG.labels(tp.topic, str(tp.partition)).set(max(high - done, 0))
            self.lag_shown.add(tp)


def _servers(options: ConsumeOptions) -> str:
    return ",".join(options.bootstrap_servers)


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except TimeoutError:
        return
