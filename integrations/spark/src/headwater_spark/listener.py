"""Switching lineage on for a SparkSession: a py4j QueryExecutionListener plus the application run.

PySpark has no Python batch listener, so a Python object implementing the JVM interface
``org.apache.spark.sql.util.QueryExecutionListener`` is registered through py4j. Spark calls it on its
listener-bus thread after each action, asynchronously: the action has already returned to the user.
The callback extracts what the action read and wrote (one ``toJSON()`` plus a few targeted calls)
and queues it; a background thread builds and sends the events. Nothing here may raise into Spark.
"""

from __future__ import annotations

import atexit
import logging
import sys
import threading
import time
import traceback
from typing import Any

from headwater_spark.catalog_changes import CatalogChanges
from headwater_spark.config import LineageConfig, resolve_config
from headwater_spark.emitter import Emitter, Transport, http_transports, kafka_transport
from headwater_spark.events import AppInfo, EventFactory
from headwater_spark.extract import Extractor

log = logging.getLogger("headwater_spark")

FAILING_SERVER_WAIT = 2.0  # seconds spark.stop() waits for a server that is failing
EXIT_DRAIN_WAIT = 5.0  # seconds an exit without spark.stop() waits for Spark's pending callbacks

_lock = threading.RLock()
_active: dict[str, SparkLineage] = {}  # by application id
_hooks_installed = False
_uncaught: list[BaseException] = []


class _QueryExecutionListener:
    """The py4j proxy Spark calls; forwards to the SparkLineage that owns it."""

    def __init__(self, owner: SparkLineage) -> None:
        self._owner = owner

    def onSuccess(self, funcName: str, qe: Any, durationNs: Any) -> None:  # noqa: N802, N803
        self._owner._on_action(funcName, qe, None, durationNs)

    def onFailure(self, funcName: str, qe: Any, exception: Any) -> None:  # noqa: N802, N803
        self._owner._on_action(funcName, qe, exception, None)

    def toString(self) -> str:  # noqa: N802 - called by Spark when it logs the listener
        return "HeadwaterLineageListener"

    class Java:
        implements = ["org.apache.spark.sql.util.QueryExecutionListener"]


class SparkLineage:
    """Lineage for one Spark application: its run, its listener and its sender thread."""

    def __init__(
        self,
        spark: Any,
        config: LineageConfig,
        transport: Transport | None = None,
        grace: float = 2.0,
    ) -> None:
        self.config = config
        sc = spark.sparkContext
        jsc = sc._jsc
        conf = sc.getConf()
        self.application_id = str(sc.applicationId)
        self.app = AppInfo(
            app_name=str(sc.appName),
            spark_version=str(spark.version),
            start_time=int(sc.startTime) / 1000,
            master=str(sc.master),
            application_id=self.application_id,
            deploy_mode=conf.get("spark.submit.deployMode", "client"),
            driver_host=conf.get("spark.driver.host"),
            user_name=str(sc.sparkUser()),
            ui_web_url=sc.uiWebUrl,
            properties={"spark.master": str(sc.master), "spark.app.name": str(sc.appName)},
        )
        self.factory = EventFactory(
            self.app, config.namespace, config.app_name, config.parent, config.root_parent
        )
        if transport is None and config.transport == "kafka":
            # The producer retries by itself; there is no second, quicker transport.
            primary = fallback = kafka_transport(
                config.topic or "", config.kafka_properties, config.message_key
            )
        elif transport is None:
            primary, fallback = http_transports(
                config.url, config.endpoint, config.api_key, config.compression, config.timeout
            )
        else:
            primary, fallback = transport, transport
        self.emitter = Emitter(
            primary,
            self.factory.action_events,
            fallback_transport=fallback,
            queue_size=config.queue_size,
            grace=grace,
        )
        self.extractor = Extractor(sc._gateway, spark._jsparkSession, _metastore_uri(conf, jsc))
        self._listener = _QueryExecutionListener(self)
        self._spark = spark
        self._streaming: Any = None  # the StreamingQueryListener, once registered
        self._catalog_changes: CatalogChanges | None = None  # the catalog's listener, once registered
        self._jsession = spark._jsparkSession
        self._jcontext = jsc.sc()
        self._finished = False
        self._warned = 0

    # ---- lifecycle

    def start(self) -> None:
        from pyspark.java_gateway import ensure_callback_server_started

        ensure_callback_server_started(self.extractor._gateway)
        self._follow_catalog_changes()
        self._jsession.listenerManager().register(self._listener)
        self._follow_streaming_queries()
        self.emitter.submit(self.factory.app_start())
        log.info(
            "Lineage enabled for %s: job %s in namespace %s, sending to %s",
            self.application_id,
            self.factory.app_job,
            self.config.namespace,
            self.config.destination,
        )

    def _follow_catalog_changes(self) -> None:
        """Register the catalog's listener (``catalog_changes``), so that a DROP or CREATE that
        changed nothing is not reported; without it, every one is."""
        try:
            self._catalog_changes = CatalogChanges.register(self.extractor._jvm, self._jsession)
            self.extractor.catalog_changes = self._catalog_changes
        except Exception:
            log.warning(
                "Lineage: DROP TABLE IF EXISTS and CREATE TABLE IF NOT EXISTS will be reported "
                "whether or not they changed a table",
                exc_info=True,
            )

    def _follow_streaming_queries(self) -> None:
        """Register the streaming listener (``streaming``); batch lineage goes on without it."""
        try:
            from headwater_spark.micro_batches import MicroBatchSessions
            from headwater_spark.streaming import StreamingLineage

            micro_batches = MicroBatchSessions(self.extractor._jvm, self._jsession)
            self.extractor.micro_batches = micro_batches
            listener = StreamingLineage(
                self.factory,
                self.emitter,
                micro_batches=micro_batches,
                describe=self.extractor.streaming_query,
            )
            self._spark.streams.addListener(listener)
            self._streaming = listener
        except Exception:
            log.warning("Lineage: streaming queries will not be reported", exc_info=True)

    def finish(self, error: BaseException | None = None, timeout: float | None = None) -> bool:
        """Emit the application's COMPLETE (or FAIL) and send what is queued, waiting at most
        ``timeout`` seconds (default: the configured flush timeout)."""
        with _lock:
            if self._finished:
                return True
            self._finished = True
            _active.pop(self.application_id, None)
        self._unfollow_catalog_changes()
        final = []
        try:
            if self._streaming is not None:
                final += self._streaming.abort_running()
        except Exception:
            log.warning("Lineage: could not end the streaming queries' runs", exc_info=True)
        try:
            if error is None:
                final.append(self.factory.app_end(time.time()))
            else:
                stack = "".join(traceback.format_exception(type(error), error, error.__traceback__))
                final.append(
                    self.factory.app_end(time.time(), f"{type(error).__name__}: {error}", stack)
                )
        except Exception:
            log.warning("Lineage: could not build the application end event", exc_info=True)
        if timeout is None:
            # A server that is already failing gets a short wait: its events are likely lost anyway.
            timeout = (
                min(self.config.flush_timeout, FAILING_SERVER_WAIT)
                if self.emitter.server_failing
                else None
            )
        return self.emitter.close(self.config.flush_timeout if timeout is None else timeout, final)

    def _unfollow_catalog_changes(self) -> None:
        """The catalog outlives the application's lineage (its listener would call into Python)."""
        if self._catalog_changes is None:
            return
        try:
            self._catalog_changes.unregister()
        except Exception:
            log.debug("Lineage: could not unregister the catalog's listener", exc_info=True)

    def drain_spark_events(self, timeout: float) -> None:
        """Wait (bounded) until Spark's listener bus has delivered every pending callback: at exit
        without spark.stop(), the last actions are still on the bus."""
        try:
            if not self._jcontext.isStopped():
                self._jcontext.listenerBus().waitUntilEmpty(int(timeout * 1000))
        except Exception:
            log.debug("Lineage: Spark's listener bus did not drain", exc_info=True)

    def flush(self, timeout: float | None = None) -> bool:
        """Send what is queued so far; returns False if the wait timed out."""
        return self.emitter.flush(self.config.flush_timeout if timeout is None else timeout)

    def disable(self) -> None:
        """Stop listening (the application run is ended as COMPLETE)."""
        try:
            self._jsession.listenerManager().unregister(self._listener)
            if self._streaming is not None:
                self._spark.streams.removeListener(self._streaming)
        except Exception:
            log.debug("Lineage: could not unregister the listener", exc_info=True)
        self.finish()

    @property
    def stats(self) -> Any:
        return self.emitter.stats

    # ---- callbacks (Spark's listener-bus thread, through py4j)

    def _on_action(self, func_name: str, qe: Any, exc: Any, duration_ns: Any) -> None:
        if self._finished:
            return
        try:
            with self.emitter.busy():
                record = self.extractor.extract(func_name, qe, exc, duration_ns)
                if record is not None:
                    log.debug(
                        "Lineage: %s %s -> %s (%.0f ms)",
                        func_name,
                        record.command,
                        record.output.id.key if record.output else None,
                        record.extraction_ms,
                    )
                    self.emitter.submit(record)
        except Exception as error:
            self._warned += 1
            if self._warned <= 5 or self._warned % 100 == 0:
                log.warning(
                    "Lineage: could not extract lineage of %r: %s", func_name, error, exc_info=True
                )


def _metastore_uri(conf: Any, jsc: Any) -> str | None:
    if conf.get("spark.sql.catalogImplementation", "in-memory") != "hive":
        return None
    uri = conf.get("spark.sql.hive.metastore.uris") or conf.get("spark.hadoop.hive.metastore.uris")
    if not uri:
        try:
            uri = jsc.hadoopConfiguration().get("hive.metastore.uris")
        except Exception:
            uri = None
    return uri or None


# ---------------------------------------------------------------------------- public API


def enable_lineage(
    spark: Any,
    *,
    url: str | None = None,
    api_key: str | None = None,
    namespace: str | None = None,
    endpoint: str | None = None,
    app_name: str | None = None,
    compression: str | None = None,
    timeout: float | None = None,
    queue_size: int | None = None,
    flush_timeout: float | None = None,
    transport: Transport | None = None,
) -> SparkLineage | None:
    """Send OpenLineage events for everything ``spark`` reads and writes.

    Settings come from the arguments, else the Spark conf keys of the official listener
    (``spark.openlineage.transport.url``, ``spark.openlineage.transport.auth.apiKey``,
    ``spark.openlineage.namespace``), else ``OPENLINEAGE_URL`` / ``OPENLINEAGE_API_KEY`` /
    ``OPENLINEAGE_NAMESPACE``. Calling it again for the same application returns the same handle.
    Never raises: on any problem it logs a warning and returns None, and the job runs on.
    """
    try:
        with _lock:
            if getattr(spark, "_jsparkSession", None) is None:
                log.warning(
                    "Lineage: not a classic SparkSession with a local JVM (Spark Connect?); skipped"
                )
                return None
            app_id = str(spark.sparkContext.applicationId)
            existing = _active.get(app_id)
            if existing is not None:
                return existing
            conf = spark.sparkContext.getConf()
            if str(conf.get("spark.openlineage.disabled", "false")).lower() == "true":
                log.info("Lineage: spark.openlineage.disabled is true; not enabled")
                return None
            try:
                config = resolve_config(
                    lambda key: conf.get(key, None),
                    conf_items=dict(conf.getAll()),
                    url=url,
                    api_key=api_key,
                    namespace=namespace,
                    endpoint=endpoint,
                    app_name=app_name,
                    compression=compression,
                    timeout=timeout,
                    queue_size=queue_size,
                    flush_timeout=flush_timeout,
                )
            except ValueError as mistake:  # a setting the user can fix: one line, no traceback
                log.warning("Lineage: not enabled, %s; the job runs without it", mistake)
                return None
            lineage = SparkLineage(spark, config, transport)
            lineage.start()
            _active[app_id] = lineage
            _install_hooks()
            return lineage
    except Exception:
        log.warning("Lineage: could not enable lineage; the job runs without it", exc_info=True)
        return None


def active_lineage() -> list[SparkLineage]:
    with _lock:
        return list(_active.values())


def _install_hooks() -> None:
    """Once per process: end the application run at SparkContext.stop(), or at exit."""
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    from pyspark import SparkContext

    original_stop = SparkContext.stop

    def stop(self: Any, *args: Any, **kwargs: Any) -> Any:
        app_id = None
        try:
            app_id = str(self.applicationId) if getattr(self, "_jsc", None) is not None else None
        except Exception:
            app_id = None
        try:
            # Stopping drains Spark's listener bus first, so the last actions are still reported.
            return original_stop(self, *args, **kwargs)
        finally:
            with _lock:
                lineage = _active.get(app_id) if app_id else None
            if lineage is not None:
                try:
                    lineage.finish()
                except Exception:
                    log.warning("Lineage: could not finish the application run", exc_info=True)

    stop.__doc__ = original_stop.__doc__
    stop.__wrapped__ = original_stop  # type: ignore[attr-defined]
    SparkContext.stop = stop  # type: ignore[method-assign]

    previous_hook = sys.excepthook

    def excepthook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
        _uncaught.append(value)
        previous_hook(kind, value, tb)

    sys.excepthook = excepthook
    atexit.register(_at_exit)


def _at_exit() -> None:
    """The interpreter is exiting without spark.stop(): end the application run, send, bounded."""
    error = _uncaught[-1] if _uncaught else None
    for lineage in active_lineage():
        try:
            lineage.drain_spark_events(EXIT_DRAIN_WAIT)
            lineage.finish(error)
        except Exception:
            log.warning("Lineage: could not finish the application run at exit", exc_info=True)
