"""The broker and `headwater consume` processes of the Kafka tests, and waiting on what they did."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg

from tests.server import REPO


@dataclass
class Broker:
    bootstrap: str
    proc: subprocess.Popen[bytes] | None

    def admin(self) -> Any:
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap})

    def create_topic(self, name: str, partitions: int) -> None:
        from confluent_kafka.admin import NewTopic

        admin = self.admin()  # kept until the answer: a destroyed client fails its futures
        futures = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
        for future in futures.values():
            future.result(timeout=10)

    def producer(self, **config: Any) -> Any:
        from confluent_kafka import Producer

        return Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True, **config})


@dataclass
class ConsumerProcess:
    proc: subprocess.Popen[bytes]
    log: Path

    @classmethod
    def start(
        cls, database_url: str, bootstrap: str, args: list[str], log: Path, extra_env: dict[str, str]
    ) -> ConsumerProcess:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HEADWATER_")}
        env.update(
            HEADWATER_DATABASE_URL=database_url,
            HEADWATER_POOL_MIN_SIZE="1",
            HEADWATER_POOL_MAX_SIZE="2",
            # A new group's first join waits half of it on Tansu, a killed member is dropped after it.
            HEADWATER_KAFKA_SESSION_TIMEOUT_MS="2000",
            **extra_env,
        )
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "headwater.cli",
                    "consume",
                    "--bootstrap-servers",
                    bootstrap,
                    *args,
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=REPO,
                start_new_session=True,
            )
        return cls(proc, log)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def kill(self) -> None:
        """kill -9: no chance to commit or leave the group."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self, timeout: float = 20) -> int:
        """SIGTERM, as `docker stop` does; returns the exit code."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
        return self.proc.wait(timeout=timeout)

    def check_running(self) -> None:
        if self.proc.poll() is not None:
            raise AssertionError(
                f"headwater consume exited with {self.proc.returncode}:\n{self.output()[-4000:]}"
            )


async def wait_for(
    check: Callable[[], Awaitable[bool]],
    timeout: float = 60,
    *,
    what: str = "condition",
    alive: list[ConsumerProcess] | None = None,
) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        for proc in alive or []:
            proc.check_running()
        if time.monotonic() > deadline:
            logs = "\n".join(p.output()[-3000:] for p in alive or [])
            raise AssertionError(f"timed out waiting for {what}\n{logs}")
        await asyncio.sleep(0.1)


async def fetchval(url: str, query: str, *args: Any) -> Any:
    conn = await asyncpg.connect(url)
    try:
        return await conn.fetchval(query, *args)
    finally:
        await conn.close()


async def count_events(url: str) -> int:
    return int(await fetchval(url, "SELECT count(*) FROM raw_events"))


def emit_all(transport: Any, events: list[Any]) -> None:
    for event in events:
        transport.emit(event)
    assert transport.wait_for_completion(20), "the producer did not deliver every event"


async def post_batches(url: str, bodies: list[bytes], size: int = 500) -> None:
    """The HTTP baseline: the same events through POST /api/v1/lineage/batch."""
    from litestar.testing import AsyncTestClient

    from headwater.app import create_app
    from headwater.settings import Settings

    settings = Settings(database_url=url, pool_min_size=1, pool_max_size=2)
    async with AsyncTestClient(app=create_app(settings)) as client:
        for at in range(0, len(bodies), size):
            body = b"[" + b",".join(bodies[at : at + size]) + b"]"
            response = await client.post(
                "/api/v1/lineage/batch", content=body, headers={"content-type": "application/json"}
            )
            assert response.status_code == 200, response.text
            assert response.json()["status"] == "success", response.text


async def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """What the group committed on each partition of a topic (-1: nothing yet)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    reader = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    await reader.start()
    try:
        return {p: (await reader.committed(TopicPartition(topic, p))) or -1 for p in range(partitions)}
    finally:
        await reader.stop()


def _unordered_details(entry: tuple[Any, ...]) -> tuple[Any, ...]:
    """A change with the lists in its details sorted: the column edges one write adds are a set,
    listed in whatever order the write found them (one event at a time or a batch at once)."""
    *head, details = entry
    if not isinstance(details, tuple):
        return entry
    values = []
    for key, text in details:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            values.append((key, text))
            continue
        values.append((key, repr(tuple(sorted(value, key=repr))) if isinstance(value, tuple) else text))
    return (*head, tuple(values))


def changes(snapshot: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The change log of a model snapshot, in write order, each change's lists as sets."""
    return [_unordered_details(e) for e in snapshot["change_log"]]


def same_model(left: dict[str, Any], right: dict[str, Any], *, ordered: bool = False) -> None:
    """Every table equal; the change log as a multiset (partitions interleave in any order) unless
    ``ordered``, each change's lists as sets."""
    for table in left:
        if table != "change_log":
            assert left[table] == right[table], table
    mine, theirs = changes(left), changes(right)
    if not ordered:
        mine, theirs = sorted(mine, key=repr), sorted(theirs, key=repr)
    assert mine == theirs, "change_log"


async def execute(url: str, sql: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()
