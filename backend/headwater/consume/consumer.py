"""The consume loop: poll, write, commit; pause on backpressure or while the database is away.

Two tasks share the work. The poller decodes each poll's messages in a thread (poison ones are marked
dead) and queues them as a batch, so that the next batch is validated and normalized while the
writer writes the one before; the writer takes the queued batches in order, up to ``batch_size``
messages at a time, writes their live events in one transaction (``writes``), records their dead
letters, then commits each partition's offset past its last message. Nothing is committed before
its events are in PostgreSQL; a crash in between re-delivers, and re-delivered events are duplicates.

The bytes queued and not yet committed are bounded (``max_in_flight_bytes``): past the bound the
poller pauses every partition and goes on polling (so that the group keeps it as a member) until the
writer has taken half of them. A slow or frozen database bounds memory, whatever the backlog.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import random
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.abc import ConsumerRebalanceListener
from aiokafka.errors import KafkaConnectionError, KafkaError

from headwater.api.metrics import (
    KAFKA_ASSIGNED,
    KAFKA_BROKER_UP,
    KAFKA_DEAD_LETTERS,
    KAFKA_EVENTS,
    KAFKA_EVENTS_PER_SECOND,
    KAFKA_IN_FLIGHT,
    KAFKA_LAG,
    KAFKA_MESSAGES,
    KAFKA_PAUSED,
    KAFKA_PAUSES,
)
from headwater.consume.messages import Format, PoisonMessageError, decode
from headwater.consume.writes import (
    DatabaseUnavailableError,
    Item,
    store_dead_letters,
    write_items,
)
from headwater.db.failures import is_database_unavailable

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
# aiokafka's default.
_FETCH_MAX_BYTES = 50 * 1024 * 1024
_FETCH_MAX_WAIT_MS = 100
# After this long without messages the consumer asks the brokers for metadata, to tell an idle topic
# from brokers that are gone (aiokafka reconnects by itself, quietly).
_PROBE_AFTER_S = 5.0
_AIOKAFKA_LOGGERS = (
    "aiokafka",
    "aiokafka.cluster",
    "aiokafka.conn",
    "aiokafka.consumer.consumer",
    "aiokafka.consumer.fetcher",
    "aiokafka.consumer.group_coordinator",
)


class _QuietWhileBrokerDown(logging.Filter):
    """Drop aiokafka's errors while the brokers are known to be gone: it logs each reconnection
    attempt (ten a second), and the consumer's own warning already says what is wrong. Its first
    error has the brokers probed at the next idle poll, so that the warning comes at once."""

    def __init__(self, owner: KafkaConsumer) -> None:
        super().__init__()
        self.owner = owner

    def filter(self, record: logging.LogRecord) -> bool:
        if self.owner.broker_down:
            return False
        if record.levelno >= logging.ERROR:
            self.owner.probe_soon()
        return True


class _StoppingError(Exception):
    """A stop was asked for while a write was being retried: leave without committing it."""


@dataclass
class _Batch:
    """One poll's messages, waiting for their write, and the offsets to commit after it."""

    items: list[Item]
    offsets: dict[TopicPartition, int]
    size: int


class _Rebalance(ConsumerRebalanceListener):
    def __init__(self, owner: KafkaConsumer) -> None:
        self.owner = owner

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        if revoked:
            log.info("partitions revoked: %s", _names(revoked))
        await self.owner.give_up(revoked)

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        consumer = self.owner.consumer
        KAFKA_ASSIGNED.set(len(consumer.assignment()))
        log.info(
            "assignment of group %s: %s",
            self.owner.options.group,
            _names(consumer.assignment()) or "none",
        )
        if self.owner.paused and assigned:
            # Partitions handed over while paused wait with the others.
            consumer.pause(*assigned)
        await self.owner.read_committed(assigned)


def _size(item: Item) -> int:
    """What a message counts for against the in-flight bound."""
    return len(item.value or b"") + len(item.key or b"")


def _message_size(message: ConsumerRecord[Any, Any]) -> int:
    """The same, of a message not yet decoded."""
    return len(message.value or b"") + len(message.key or b"")


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
            # The client buffers a fetch answer of up to this many bytes on top of what is in flight
            # (a broker may fill it from a single partition): bounded by the same setting.
            fetch_max_bytes=min(_FETCH_MAX_BYTES, options.max_in_flight_bytes),
            # How long a broker may hold a fetch that finds nothing new. Kafka answers as soon as a
            # message arrives, but some brokers speaking its protocol hold every fetch this long
            # (Tansu: 205 ms median from produce to poll at aiokafka's 500 ms, 28 ms at 50 ms); at
            # 100 ms an idle consumer asks 10 times a second.
            fetch_max_wait_ms=_FETCH_MAX_WAIT_MS,
            **options.client_options(),
        )
        self.committed: dict[TopicPartition, int] = {}
        self.lag_shown: set[TopicPartition] = set()
        self.queue: deque[_Batch] = deque()
        self.queued = asyncio.Condition()
        self.in_flight = 0
        # The writer is between batches (set) or in the middle of one (clear).
        self.writer_idle = asyncio.Event()
        self.writer_idle.set()
        # One thread, not the loop's default pool: each thread that allocates gets an arena of its
        # own from the C allocator, and the decoded events freed by the writer would leave several
        # of them partly used (measured: a third more memory while catching up on a backlog).
        self.decoder = ThreadPoolExecutor(1, thread_name_prefix="headwater-decode")
        self.database_down = False
        self.throttled = False
        self.paused = False
        self.broker_down = False
        self._heard_from_broker = time.monotonic()
        self._written: deque[tuple[float, int]] = deque()
        self._last_report = time.monotonic()
        self._since_report = 0

    async def run(self, stop: asyncio.Event) -> None:
        """Consume until ``stop`` is set; the batch being written is written and committed first if it can be."""
        quiet = _QuietWhileBrokerDown(self)
        # Filters apply to the logger a record is logged on, not to its parents: one per logger.
        noisy = [logging.getLogger(n) for n in _AIOKAFKA_LOGGERS]
        for logger in noisy:
            logger.addFilter(quiet)
        try:
            await self._consume(stop)
        finally:
            for logger in noisy:
                logger.removeFilter(quiet)

    async def _consume(self, stop: asyncio.Event) -> None:
        await self._start(stop)
        if stop.is_set():
            # Stopped while no broker answered: a start that failed leaves its client to close.
            await self.consumer.stop()
            self.decoder.shutdown()
            return
        writer = asyncio.create_task(self._write_loop(stop))
        try:
            while not stop.is_set() and not writer.done():
                records = await self.consumer.getmany(timeout_ms=500)
                if records:
                    self._heard_from_broker = time.monotonic()
                    self._broker_back()
                    await self._enqueue(records)
                elif time.monotonic() - self._heard_from_broker >= _PROBE_AFTER_S:
                    await self._probe_brokers()
                if not self.broker_down:
                    await self._update_lag()
        finally:
            async with self.queued:
                self.queued.notify_all()
            # The writer's own errors (a defect: not the database's) end the command.
            await writer
            await self.consumer.stop()
            self.decoder.shutdown()
            KAFKA_PAUSED.set(0)
            KAFKA_ASSIGNED.set(0)
            KAFKA_IN_FLIGHT.set(0)
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
        KAFKA_BROKER_UP.set(1)
        log.info(
            "consuming from %s: topics %s%s, group %s, batches of up to %d messages, "
            "up to %d bytes in flight",
            _servers(self.options),
            ", ".join(self.options.topics) or "none",
            f", Trino topics {', '.join(self.options.trino_topics)}"
            if self.options.trino_topics
            else "",
            self.options.group,
            self.options.batch_size,
            self.options.max_in_flight_bytes,
        )

    async def _enqueue(self, records: dict[TopicPartition, list[ConsumerRecord[Any, Any]]]) -> None:
        size = sum(_message_size(m) for messages in records.values() for m in messages)
        # Counted against the bound while it is decoded, so that a slow database pauses the poller
        # before the next poll rather than after it.
        self.in_flight += size
        try:
            # In a thread: validation and normalization take about as long as the write of the batch
            # before, which goes on meanwhile (their GIL-holding parts interleave; PostgreSQL's own
            # work and the network waits overlap fully).
            loop = asyncio.get_running_loop()
            items = await loop.run_in_executor(self.decoder, self._items, records)
        except BaseException:
            self.in_flight -= size
            raise
        # Partitions revoked while their messages were decoded: the next owner reads them.
        owned = self.consumer.assignment()
        kept = [i for i in items if TopicPartition(i.topic, i.partition) in owned]
        batch = _Batch(
            items=kept,
            offsets={tp: messages[-1].offset + 1 for tp, messages in records.items() if tp in owned},
            size=sum(_size(i) for i in kept),
        )
        async with self.queued:
            self.in_flight -= size - batch.size
            if batch.items or batch.offsets:
                self.queue.append(batch)
            self.queued.notify_all()
        self._regulate()

    def _items(self, records: dict[TopicPartition, list[ConsumerRecord[Any, Any]]]) -> list[Item]:
        items = []
        for messages in records.values():
            for message in messages:
                items.append(self._item(message))
                # Hand the GIL to the event loop between messages: the write in progress waits for
                # it after each of its statements, and would otherwise wait out the interpreter's
                # switch interval (5 ms) a few hundred times per batch.
                time.sleep(0)
        return items

    def _next_write(self) -> _Batch:
        """The queued batches to write in one transaction: in order, up to ``batch_size`` messages
        (at least one batch). Polls that came in while the previous write ran share the next one."""
        batch = self.queue.popleft()
        while self.queue and len(batch.items) + len(self.queue[0].items) <= self.options.batch_size:
            following = self.queue.popleft()
            batch = _Batch(
                items=batch.items + following.items,
                offsets={**batch.offsets, **following.offsets},
                size=batch.size + following.size,
            )
        return batch

    async def _write_loop(self, stop: asyncio.Event) -> None:
        while True:
            async with self.queued:
                await self.queued.wait_for(lambda: bool(self.queue) or stop.is_set())
                if stop.is_set():
                    return
                batch = self._next_write()
                self.writer_idle.clear()
            try:
                await self._write(batch.items, stop)
                self._count(batch.items)
                await self._commit(batch.offsets)
            except _StoppingError:
                return
            finally:
                self.in_flight -= batch.size
                self.writer_idle.set()
                self._regulate()

    async def give_up(self, revoked: set[TopicPartition]) -> None:
        """Before partitions go to another member: drop what is queued of them, commit what is written."""
        async with self.queued:
            for batch in self.queue:
                kept = [i for i in batch.items if TopicPartition(i.topic, i.partition) not in revoked]
                dropped = sum(_size(i) for i in batch.items) - sum(_size(i) for i in kept)
                batch.items = kept
                batch.offsets = {tp: o for tp, o in batch.offsets.items() if tp not in revoked}
                batch.size -= dropped
                self.in_flight -= dropped
            while self.queue and not self.queue[0].items and not self.queue[0].offsets:
                self.queue.popleft()
        # The batch being written commits its offsets while the partitions are still this member's;
        # if the database keeps it longer, the next owner reads its messages again (duplicates).
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.writer_idle.wait(), self.options.session_timeout_ms / 1000 / 2)
        for tp in revoked:
            self.committed.pop(tp, None)
            if tp in self.lag_shown:
                self.lag_shown.discard(tp)
                KAFKA_LAG.remove(tp.topic, str(tp.partition))
        self._regulate()

    def probe_soon(self) -> None:
        self._heard_from_broker = time.monotonic() - _PROBE_AFTER_S

    async def _probe_brokers(self) -> None:
        """Say in the log when the brokers are lost and when they are back; aiokafka reconnects,
        rejoins the group and resumes from the committed offsets (the earliest if they are gone)."""
        try:
            await asyncio.wait_for(self.consumer.topics(), _PROBE_AFTER_S)
        except (KafkaError, TimeoutError) as exc:
            if not self.broker_down:
                self.broker_down = True
                KAFKA_BROKER_UP.set(0)
                log.warning(
                    "lost Kafka at %s (%s): reconnecting; nothing is committed until it is back",
                    _servers(self.options),
                    exc or type(exc).__name__,
                )
            # Whether it failed or timed out, ask again after the same interval, not at every poll.
            self._heard_from_broker = time.monotonic()
            return
        self._heard_from_broker = time.monotonic()
        self._broker_back()

    def _broker_back(self) -> None:
        if self.broker_down:
            self.broker_down = False
            KAFKA_BROKER_UP.set(1)
            log.info("Kafka at %s reachable again: consuming", _servers(self.options))

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
        """Write until it succeeds: while the database is away, partitions stay paused."""
        delay = BACKOFF_FIRST_S
        while True:
            try:
                await write_items(self.pool, items, self.rules)
                if any(i.dead for i in items):
                    async with self.pool.acquire() as conn:
                        await store_dead_letters(conn, items, self.options.dead_letter_max_bytes)
                break
            except Exception as exc:
                if not isinstance(exc, DatabaseUnavailableError) and not is_database_unavailable(exc):
                    raise
                if stop.is_set():
                    raise _StoppingError from exc
                if self.database_down:
                    log.warning("database still unavailable: %s", exc)
                else:
                    self.database_down = True
                    KAFKA_PAUSES.labels("database").inc()
                    log.warning(
                        "database unavailable (%s): partitions paused, nothing committed past what "
                        "is written; retrying",
                        exc,
                    )
                    self._regulate()
                await _wait(stop, delay * (0.5 + random.random()))  # noqa: S311 - jitter
                delay = min(delay * 2, BACKOFF_MAX_S)
        if self.database_down:
            self.database_down = False
            log.info("database available again: partitions resumed")
            self._regulate()

    def _regulate(self) -> None:
        """Pause every partition while the database is away or too much waits for its write."""
        limit = self.options.max_in_flight_bytes
        KAFKA_IN_FLIGHT.set(self.in_flight)
        # Resume at half the bound, not just under it, so that a slow database does not make the
        # consumer pause and resume at every batch.
        full = self.in_flight >= limit or (self.throttled and self.in_flight > limit // 2)
        if full != self.throttled:
            self.throttled = full
            if full:
                KAFKA_PAUSES.labels("backpressure").inc()
                log.info(
                    "backpressure: %d bytes polled and not yet written; partitions paused",
                    self.in_flight,
                )
            else:
                log.info("backpressure over: %d bytes in flight; partitions resumed", self.in_flight)
        wanted = self.throttled or self.database_down
        if wanted == self.paused:
            return
        self.paused = wanted
        KAFKA_PAUSED.set(int(wanted))
        assigned = self.consumer.assignment()
        if wanted:
            self.consumer.pause(*assigned)
        else:
            self.consumer.resume(*assigned)

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
        # The lag shown drops as soon as the offsets are committed, not at the next poll.
        await self._update_lag()

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

    async def read_committed(self, assigned: set[TopicPartition]) -> None:
        """Where the group stands on newly assigned partitions, for the lag until this member commits
        (a partition the group never committed on is read from its start)."""
        try:
            for tp in assigned:
                done = await self.consumer.committed(tp)
                if done is None:
                    done = (await self.consumer.beginning_offsets([tp]))[tp]
                self.committed.setdefault(tp, done)
        except KafkaError as exc:
            log.warning(
                "committed offsets not read (%s): the lag is shown once this member commits", exc
            )

    async def _update_lag(self) -> None:
        for tp in self.consumer.assignment():
            high = self.consumer.highwater(tp)
            done = self.committed.get(tp)
            if high is None or done is None:
                continue
            KAFKA_LAG.labels(tp.topic, str(tp.partition)).set(max(high - done, 0))
            self.lag_shown.add(tp)


def _servers(options: ConsumeOptions) -> str:
    return ",".join(options.bootstrap_servers)


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    try:
        await asyncio.wait_for(stop.wait(), seconds)
    except TimeoutError:
        return
