"""Sends events from a background thread, so the Spark job never waits on the lineage server.

Records and events go through a bounded queue (full: dropped with a warning, never blocking). The
worker groups nested executions (see ``model.Assembler``), turns records into events and posts them
one at a time. A failed post is retried with backoff by the HTTP transport; while the server keeps
failing, later events get a single attempt each so that a dead server cannot back the queue up.
One thread sends every event, so no answer may hold it for long: a request gets ``timeout`` seconds
as a whole, and a server's Retry-After is followed up to ``MAX_RETRY_AFTER``. An event the server
refuses (a 4xx other than 408 and 429) is not sent again, and says why in the log once per status.

Over Kafka, openlineage-python's KafkaTransport hands each event to the producer's own buffer (its
retries, up to librdkafka's message.timeout.ms); a flush or the close waits, bounded like over
HTTP, until the broker has acknowledged every event.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from headwater_spark.model import ActionRecord, Assembler

log = logging.getLogger("headwater_spark")

DEFAULT_RETRY: dict[str, Any] = {
    "total": 4,
    "connect": 4,
    "read": 4,
    "status": 4,
    "backoff_factor": 0.5,
    "status_forcelist": [429, 500, 502, 503, 504],
    "allowed_methods": ["POST"],
}
NO_RETRY: dict[str, Any] = {**DEFAULT_RETRY, "total": 0, "connect": 0, "read": 0, "status": 0}
# The longest Retry-After followed, in seconds. urllib3 follows up to 6 hours, four times an event,
# and while it sleeps no later event is sent; past this the server is just failing for now.
MAX_RETRY_AFTER = 10.0
# Answers that say "not now" rather than "not this event".
_TRY_LATER_STATUSES = frozenset({408, 429})


class Transport(Protocol):
    def emit(self, event: Any) -> Any: ...


class _AttemptDeadline:
    """Ends an HTTP attempt still going ``seconds`` after it began. The transport's own timeout
    bounds each wait for the next bytes, so a server answering a byte a second never times out and
    would hold the sender, and every event after, for as long as it likes."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def begin(self, connection: Any) -> None:
        timer = threading.Timer(self.seconds, self._cut, args=(connection,))
        timer.daemon = True
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = timer
        timer.start()

    def end(self) -> None:
        with self._lock:
            timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    def _cut(self, connection: Any) -> None:
        sock = getattr(connection, "sock", None)
        if sock is None:
            return
        # The plain socket's shutdown, also under TLS: the blocked read returns at once.
        with contextlib.suppress(OSError):
            socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _bounded_adapter(retry: dict[str, Any], deadline: _AttemptDeadline) -> Any:
    """A requests adapter whose attempts end at ``deadline`` and whose retries follow a server's
    Retry-After up to MAX_RETRY_AFTER seconds, and never for a 413 (the same body is too large
    again)."""
    from requests.adapters import HTTPAdapter
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
    from urllib3.exceptions import InvalidHeader
    from urllib3.util import Retry

    class BoundedRetry(Retry):
        RETRY_AFTER_STATUS_CODES = frozenset({429, 503})

        def parse_retry_after(self, retry_after: str) -> float:
            try:
                seconds = super().parse_retry_after(retry_after)
            except InvalidHeader:
                return 0.0  # not a number of seconds nor a date: the usual backoff instead
            return min(seconds, MAX_RETRY_AFTER)

    class TimedHTTPConnection(HTTPConnection):
        def request(self, *args: Any, **kwargs: Any) -> None:
            deadline.begin(self)
            super().request(*args, **kwargs)

    # The same request, ahead of TLS's in the order of classes: HTTPSConnection is an HTTPConnection.
    class TimedHTTPSConnection(TimedHTTPConnection, HTTPSConnection):
        pass

    class TimedHTTPConnectionPool(HTTPConnectionPool):
        ConnectionCls = TimedHTTPConnection

    class TimedHTTPSConnectionPool(HTTPSConnectionPool):
        ConnectionCls = TimedHTTPSConnection

    class BoundedAdapter(HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
            super().init_poolmanager(*args, **kwargs)
            self.poolmanager.pool_classes_by_scheme = {
                "http": TimedHTTPConnectionPool,
                "https": TimedHTTPSConnectionPool,
            }

    return BoundedAdapter(max_retries=BoundedRetry(**retry))


def http_transports(
    url: str,
    endpoint: str,
    api_key: str | None,
    compression: str | None,
    timeout: float,
) -> tuple[Transport, Transport]:
    """openlineage-python HTTP transports: one that retries with backoff, one that tries once.
    Each attempt gets ``timeout`` seconds in all."""
    from openlineage.client.transport.http import (
        ApiKeyTokenProvider,
        HttpCompression,
        HttpConfig,
        HttpTransport,
        TokenProvider,
    )

    class BoundedHttpTransport(HttpTransport):
        def __init__(self, config: HttpConfig, deadline: _AttemptDeadline) -> None:
            super().__init__(config)
            self._deadline = deadline

        def emit(self, event: Any) -> Any:
            try:
                return super().emit(event)
            finally:
                self._deadline.end()

    def make(retry: dict[str, Any]) -> Transport:
        deadline = _AttemptDeadline(timeout)
        config = HttpConfig(
            url=url,
            endpoint=endpoint,
            timeout=timeout,
            auth=ApiKeyTokenProvider({"apiKey": api_key}) if api_key else TokenProvider({}),
            compression=HttpCompression(compression) if compression else None,
            adapter=_bounded_adapter(retry, deadline),
        )
        return BoundedHttpTransport(config, deadline)

    return make(DEFAULT_RETRY), make(NO_RETRY)


def message_key(event: dict[str, Any]) -> str | None:
    """The key KafkaTransport gives an event object, for the events this package builds as dicts:
    the runs of a job, and of an application's actions (its root job), stay in one partition."""
    job = event.get("job") or {}
    if "run" not in event:
        dataset = event.get("dataset")
        if dataset:
            return f"dataset:{dataset.get('namespace')}/{dataset.get('name')}"
        return f"job:{job.get('namespace')}/{job.get('name')}" if job else None
    parent = ((event.get("run") or {}).get("facets") or {}).get("parent") or {}
    source = (parent.get("root") or {}).get("job") or parent.get("job") or job
    if not source.get("namespace") or not source.get("name"):
        source = job
    return f"run:{source.get('namespace')}/{source.get('name')}"


def kafka_transport(topic: str, properties: dict[str, str], key: str | None) -> Transport:
    """openlineage-python's KafkaTransport (confluent-kafka), keyed as for its own event objects."""
    from openlineage.client.transport.kafka import KafkaConfig, KafkaTransport

    class DictKafkaTransport(KafkaTransport):
        def _get_message_key(self, event: Any) -> str | None:
            return message_key(event) if isinstance(event, dict) else super()._get_message_key(event)

    # An event is acknowledged by every in-sync replica, not just the leader, unless told otherwise.
    config = KafkaConfig(config={"acks": "all", **properties}, topic=topic, messageKey=key, flush=False)
    return DictKafkaTransport(config)


@dataclass
class EmitterStats:
    sent: int = 0
    failed: int = 0
    refused: int = 0  # answered with a 4xx that says the event itself is wrong: not sent again
    dropped: int = 0
    actions: int = 0
    extraction_ms_total: float = 0.0
    extraction_ms_max: float = 0.0
    send_ms: list[float] = field(default_factory=list)


class _Flush:
    def __init__(self, deadline: float) -> None:
        self.done = threading.Event()
        self.deadline = deadline


class _Stop(_Flush):
    def __init__(self, deadline: float, final: list[dict[str, Any]]) -> None:
        super().__init__(deadline)
        self.final = final


class Emitter:
    def __init__(
        self,
        transport: Transport,
        to_events: Callable[[ActionRecord], list[dict[str, Any]]],
        *,
        fallback_transport: Transport | None = None,
        queue_size: int = 1000,
        grace: float = 2.0,
    ) -> None:
        self._transport = transport
        self._fallback = fallback_transport or transport
        self._to_events = to_events
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max(1, queue_size))
        self._assembler = Assembler(grace)
        self._busy = 0
        self._busy_lock = threading.Lock()
        self._last_activity = time.monotonic()
        self._server_failing = False
        self._closed = False
        self._last_drop_warning = 0.0
        self._refusals_logged: set[int] = set()
        self._nul_warned = False
        self.stats = EmitterStats()
        self._thread = threading.Thread(target=self._run, name="headwater-lineage-emitter", daemon=True)
        self._thread.start()

    @property
    def server_failing(self) -> bool:
        """Whether the last attempt to send failed (the server is down or refusing events)."""
        return self._server_failing

    # ---- producer side (listener threads)

    def busy(self) -> _Busy:
        """Context manager marking a listener callback in progress (holds back grouping deadlines)."""
        return _Busy(self)

    def submit(self, item: ActionRecord | dict[str, Any]) -> bool:
        """Queue a record or a ready event; never blocks. False if dropped."""
        if self._closed:
            return False
        try:
            self._queue.put_nowait(item)
            return True
        except queue.Full:
            self.stats.dropped += 1
            now = time.monotonic()
            if now - self._last_drop_warning > 10:
                self._last_drop_warning = now
                log.warning(
                    "Lineage queue is full (%d items); dropped %d event(s) so far",
                    self._queue.maxsize,
                    self.stats.dropped,
                )
            return False

    def flush(self, timeout: float) -> bool:
        """Send everything queued so far (including actions waiting to be grouped); bounded wait."""
        deadline = time.monotonic() + timeout
        marker = _Flush(deadline)
        if not self._put_control(marker, timeout):
            return False
        return marker.done.wait(max(0.0, deadline - time.monotonic()))

    def close(self, timeout: float, final_events: list[dict[str, Any]] | None = None) -> bool:
        """Send what is queued, then ``final_events``, then stop the worker; waits ``timeout``
        seconds at most. Returns False if the wait timed out (events were lost)."""
        if self._closed:
            return True
        deadline = time.monotonic() + timeout
        marker = _Stop(deadline, final_events or [])
        ok = self._put_control(marker, timeout) and marker.done.wait(
            max(0.0, deadline - time.monotonic())
        )
        self._closed = True
        if not ok:
            log.warning(
                "Lineage: gave up waiting for the server after %.1fs; about %d event(s) not sent",
                timeout,
                self._queue.qsize() + len(self._assembler.pending) * 2,
            )
        return ok

    def _put_control(self, marker: _Flush, timeout: float) -> bool:
        if not self._thread.is_alive():
            return False
        try:
            self._queue.put(marker, timeout=timeout)
            return True
        except queue.Full:
            return False

    # ---- worker

    def _quiet_since(self) -> float:
        with self._busy_lock:
            return time.monotonic() if self._busy else self._last_activity

    def _run(self) -> None:
        while True:
            try:
                if self._step():
                    return
            except Exception:  # never let the worker die
                log.warning("Lineage emitter error", exc_info=True)

    def _step(self) -> bool:
        deadline = self._assembler.next_deadline(self._quiet_since())
        timeout = None if deadline is None else max(0.0, min(deadline - time.monotonic(), 0.5))
        try:
            item = (
                self._queue.get(timeout=timeout)
                if timeout is None or timeout > 0
                else self._queue.get_nowait()
            )
        except queue.Empty:
            item = None
        for record in self._assembler.expired(time.monotonic(), self._quiet_since()):
            self._send_record(record)
        if item is None:
            return False
        if isinstance(item, ActionRecord):
            for record in self._assembler.add(item, time.monotonic()):
                self._send_record(record)
        elif isinstance(item, _Flush):
            for record in self._assembler.drain():
                self._send_record(record)
            if isinstance(item, _Stop):
                for event in item.final:
                    self._send(event)
            self._wait_for_delivery(item.deadline)
            item.done.set()
            return isinstance(item, _Stop)
        else:
            self._send(item)
        return False

    def _wait_for_delivery(self, deadline: float) -> None:
        """A transport that sends in the background (Kafka's producer) delivers what it holds."""
        wait = getattr(self._transport, "wait_for_completion", None)
        if wait is None:
            return
        # The transport's own -1 and 0 mean "no limit": the smallest positive wait instead.
        if not wait(max(deadline - time.monotonic(), 0.001)):
            self.stats.failed += 1
            self._server_failing = True
            log.warning("Lineage: the broker has not acknowledged every event in time")

    def _send_record(self, record: ActionRecord) -> None:
        self.stats.actions += 1
        self.stats.extraction_ms_total += record.extraction_ms
        self.stats.extraction_ms_max = max(self.stats.extraction_ms_max, record.extraction_ms)
        try:
            events = self._to_events(record)
        except Exception:
            log.warning("Lineage: could not build events for %s", record.command, exc_info=True)
            return
        for event in events:
            self._send(event)

    def _send(self, event: dict[str, Any]) -> None:
        transport = self._fallback if self._server_failing else self._transport
        if "\\u0000" in json.dumps(event):
            # Column names, SQL text and error messages may hold U+0000, which OpenLineage servers
            # storing JSON in PostgreSQL refuse with the whole event (Headwater answers 400).
            # The JSON text also matches a backslash written before "u0000": compare to be sure.
            cleaned = _without_nul(event)
            if cleaned != event and not self._nul_warned:
                self._nul_warned = True
                log.warning(
                    "Lineage: a name or text holds the character U+0000, which the server cannot "
                    "store; it is sent as U+FFFD"
                )
            event = cleaned
        started = time.perf_counter()
        try:
            transport.emit(event)
        except Exception as exc:
            status = _refusal_status(exc)
            if status is not None:
                # The server is up and said what is wrong with this event: later events keep their
                # retries, and the log says why once per status rather than once per event.
                self.stats.refused += 1
                if status not in self._refusals_logged:
                    self._refusals_logged.add(status)
                    log.warning(
                        "Lineage: the server refused an event (HTTP %d: %s); events it refuses "
                        "are not sent again, and are counted in stats.refused",
                        status,
                        _refusal_reason(exc),
                    )
                return
            self.stats.failed += 1
            if not self._server_failing:
                log.warning("Lineage: could not send event to the server: %s", exc)
            self._server_failing = True
            return
        self.stats.send_ms.append((time.perf_counter() - started) * 1000)
        if len(self.stats.send_ms) > 1000:
            del self.stats.send_ms[:500]
        if self._server_failing:
            log.info("Lineage: the server accepts events again")
        self._server_failing = False
        self.stats.sent += 1


def _without_nul(value: Any) -> Any:
    """``value`` with every U+0000 of its strings and keys replaced by U+FFFD."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_without_nul(key): _without_nul(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_nul(item) for item in value]
    return value


def _refusal_status(exc: Exception) -> int | None:
    """The status of an HTTP answer refusing the event itself, else None."""
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(status, int) and 400 <= status < 500 and status not in _TRY_LATER_STATUSES:
        return status
    return None


def _refusal_reason(exc: Exception) -> str:
    """What a refusal's body says: the problem's detail and first errors, else its text."""
    text = str(getattr(getattr(exc, "response", None), "text", "") or "")
    try:
        problem = json.loads(text)
    except ValueError:
        problem = None
    if isinstance(problem, dict):
        parts = [str(problem.get("detail") or problem.get("title") or "")]
        errors = problem.get("errors")
        if isinstance(errors, list):
            parts += [
                f"{error.get('path')}: {error.get('message')}"
                for error in errors[:3]
                if isinstance(error, dict)
            ]
        text = "; ".join(part for part in parts if part)
    text = " ".join(text.split())
    return (text[:500] + "…" if len(text) > 500 else text) or "no reason given"


class _Busy:
    def __init__(self, emitter: Emitter) -> None:
        self._emitter = emitter

    def __enter__(self) -> None:
        with self._emitter._busy_lock:
            self._emitter._busy += 1

    def __exit__(self, *exc: object) -> None:
        with self._emitter._busy_lock:
            self._emitter._busy -= 1
            self._emitter._last_activity = time.monotonic()
