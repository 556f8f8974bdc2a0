"""The sender against servers that misbehave, settings that cannot work, and names a server cannot
store: the job is never held, and what can be delivered is.

The network faults are played by a small server of the test's own (no JVM); what depends on Spark
or on Headwater runs a real session in this process and a real ``headwater serve``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from headwater_spark import emitter as emitter_module
from headwater_spark.config import resolve_config
from headwater_spark.emitter import Emitter, http_transports
from headwater_spark.events import AppInfo, EventFactory

from tests.integrations.spark.conftest import spark_missing
from tests.server import HeadwaterServer

pytestmark = pytest.mark.spark

Answer = Callable[[socket.socket], None]


def answer(status: int, *headers: tuple[str, str], body: bytes = b"") -> Answer:
    def send(conn: socket.socket) -> None:
        head = "".join(f"{name}: {value}\r\n" for name, value in headers)
        conn.sendall(
            f"HTTP/1.1 {status} Status\r\n{head}Content-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n".encode()
            + body
        )

    return send


def a_byte_a_second(conn: socket.socket) -> None:
    for byte in b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n":
        conn.sendall(bytes([byte]))
        time.sleep(1)


class MisbehavingServer:
    """Reads each request whole, then answers it with the next of ``answers`` (the last one
    repeats), on a connection of its own."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.requests = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            length = next(
                (
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                0,
            )
            while len(body) < length:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                body += chunk
            self.requests += 1
            reply = self.answers[min(self.requests, len(self.answers)) - 1]
            with contextlib.suppress(OSError):  # the client gave up on us
                reply(conn)

    def close(self) -> None:
        self.listener.close()


def factory() -> EventFactory:
    return EventFactory(AppInfo("faults", "4.3.0", 1_700_000_000.0), "tests")


def send_one(server: MisbehavingServer, timeout: float = 5.0) -> tuple[Emitter, bool, float]:
    """Send one event to ``server``; the emitter, whether close() saw it through, and how long."""
    primary, fallback = http_transports(server.url, "api/v1/lineage", None, "gzip", timeout)
    f = factory()
    emitter = Emitter(primary, f.action_events, fallback_transport=fallback, grace=0.1)
    started = time.monotonic()
    emitter.submit(f.app_start())
    delivered = emitter.close(8.0)
    return emitter, delivered, time.monotonic() - started


@pytest.fixture
def short_retry_after(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(emitter_module, "MAX_RETRY_AFTER", 0.5)


@pytest.mark.parametrize("retry_after", ["999999999", "Wed, 21 Oct 2099 07:28:00 GMT"])
@pytest.mark.usefixtures("short_retry_after")
def test_a_retry_after_of_days_is_followed_for_seconds_at_most(retry_after: str) -> None:
    # urllib3 follows a Retry-After for up to 6 hours: the only sender thread slept, and every
    # later event waited behind it or was dropped.
    server = MisbehavingServer(answer(503, ("Retry-After", retry_after)), answer(201))
    try:
        emitter, delivered, took = send_one(server)
    finally:
        server.close()
    assert delivered
    assert (emitter.stats.sent, server.requests) == (1, 2)
    assert took < 4


def test_an_unreadable_retry_after_is_retried_with_backoff() -> None:
    # "-1" is neither seconds nor a date: urllib3 raised, and the event was failed at once.
    server = MisbehavingServer(answer(503, ("Retry-After", "-1")), answer(201))
    try:
        emitter, delivered, _ = send_one(server)
    finally:
        server.close()
    assert delivered
    assert (emitter.stats.sent, emitter.stats.failed, server.requests) == (1, 0, 2)


def test_a_server_answering_a_byte_a_second_is_cut_at_the_timeout() -> None:
    # The timeout bounded each wait for a byte, never the answer: one such answer held the sender.
    server = MisbehavingServer(a_byte_a_second, answer(201))
    try:
        emitter, delivered, took = send_one(server, timeout=1.0)
    finally:
        server.close()
    assert delivered
    assert (emitter.stats.sent, server.requests) == (1, 2)
    assert took < 4


def test_a_refused_event_is_not_retried_and_its_reason_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A 413 with Retry-After was sent again (urllib3 retries 413 when told when); a refusal was
    # logged without the server's reason, and made later events lose their retries.
    problem = b'{"title": "Too large", "detail": "the body holds more than 10000 events"}'
    server = MisbehavingServer(answer(413, ("Retry-After", "1"), body=problem))
    primary, fallback = http_transports(server.url, "api/v1/lineage", None, "gzip", 5.0)
    f = factory()
    emitter = Emitter(primary, f.action_events, fallback_transport=fallback, grace=0.1)
    try:
        with caplog.at_level(logging.WARNING, logger="headwater_spark"):
            for _ in range(3):
                emitter.submit(f.app_start())
            assert emitter.close(5.0)
    finally:
        server.close()
    assert server.requests == 3
    assert (emitter.stats.refused, emitter.stats.failed, emitter.stats.sent) == (3, 0, 0)
    assert not emitter.server_failing
    refusals = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(refusals) == 1
    assert "HTTP 413: the body holds more than 10000 events" in refusals[0]


# ---------------------------------------------------------------------------- settings


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"url": "localhost:5000"}, "needs http:// or https:// and a host"),
        ({"url": "http://headwater:99999"}, "is not valid: Port out of range"),
        ({"api_key": "line\nbreak"}, "line break"),
        ({"timeout": 0}, "timeout must be more than 0"),
        ({"timeout": -1}, "timeout must be more than 0"),
        ({"queue_size": 0}, "queue size must be at least 1"),
        ({"flush_timeout": -1}, "flush timeout must be at least 0"),
    ],
)
def test_a_setting_that_cannot_work_is_refused_at_start(setting: dict[str, Any], message: str) -> None:
    # Each was accepted, and every event then failed to send (or close() raised) with no word
    # about which setting was wrong.
    with pytest.raises(ValueError, match=message):
        resolve_config({}.get, {}, **setting)


def test_settings_from_the_spark_conf_are_checked_by_their_key() -> None:
    conf = {"spark.openlineage.transport.timeoutInMillis": "5s"}
    with pytest.raises(ValueError, match="timeoutInMillis must be a number, not '5s'"):
        resolve_config(conf.get, {})
    conf = {"spark.openlineage.transport.type": "kafak"}
    with pytest.raises(ValueError, match="'kafak' is not supported"):
        resolve_config(conf.get, {})


def test_a_key_read_from_a_file_loses_its_line_break() -> None:
    assert resolve_config({}.get, {"OPENLINEAGE_API_KEY": "secret\n"}).api_key == "secret"


# ---------------------------------------------------------------------------- with Spark


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    reason = spark_missing()
    if reason:
        pytest.skip(reason)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[1]")
        .appName("delivery faults")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .getOrCreate()
    )
    yield session
    session.stop()


@pytest.mark.slow
def test_a_setting_mistake_is_one_line_in_the_log_and_the_job_runs_on(
    spark: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from headwater_spark import enable_lineage

    with caplog.at_level(logging.WARNING, logger="headwater_spark"):
        assert enable_lineage(spark, url="localhost:5000") is None
    (record,) = caplog.records
    assert record.exc_info is None  # no traceback for a mistake the user can fix
    assert "localhost:5000" in record.getMessage()
    assert "needs http:// or https://" in record.getMessage()
    assert spark.range(3).count() == 3


@pytest.fixture(scope="module")
def headwater_up(headwater: HeadwaterServer | None) -> HeadwaterServer:
    if headwater is None:
        pytest.skip("no PostgreSQL here for a Headwater server")
    return headwater


@pytest.mark.slow
@pytest.mark.db
def test_a_column_name_with_nul_reaches_headwater(
    spark: Any, headwater_up: HeadwaterServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Spark takes U+0000 in a column name; Headwater refuses it anywhere in an event (400), so the
    # action's START and COMPLETE were both lost.
    from headwater_spark import enable_lineage
    from pyspark.sql.functions import col

    lineage = enable_lineage(
        spark, url=headwater_up.url, api_key=headwater_up.api_key, namespace="delivery_faults"
    )
    assert lineage is not None
    try:
        with caplog.at_level(logging.WARNING, logger="headwater_spark"):
            spark.range(2).select(col("id").alias("a\x00b")).write.parquet(str(tmp_path / "out"))
            spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(60_000)
            assert lineage.flush(30)
        assert (lineage.stats.refused, lineage.stats.failed) == (0, 0)
        assert lineage.stats.sent == 3  # the application's START, the write's START and COMPLETE
        assert any("U+0000" in r.getMessage() for r in caplog.records)
    finally:
        lineage.disable()
