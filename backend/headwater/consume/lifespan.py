"""The Kafka consumer inside `headwater serve`, for setups too small for a process of its own.

Switched on by HEADWATER_KAFKA_BOOTSTRAP_SERVERS (the other HEADWATER_KAFKA_* settings as for
`headwater consume`). Each server process is one member of the group, on the server's own pool,
alias rules and ingest entry point; its figures are on the server's /metrics.
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from litestar import Litestar

    from headwater.settings import Settings

log = logging.getLogger("headwater.consume")


@asynccontextmanager
async def kafka_consumer(app: Litestar) -> AsyncIterator[None]:
    settings: Settings = app.state.settings
    if not settings.kafka_consume:
        yield
        return
    from headwater.api.rest.trino import bridge_options
    from headwater.consume.consumer import KafkaConsumer
    from headwater.consume.options import from_environment

    # `serve` checked these before starting its workers (consume.command.check_serve_options).
    options = from_environment()
    consumer = KafkaConsumer(
        options,
        app.state.pool,
        rules=app.state.alias_rules,
        bridge=bridge_options({}) if options.trino_topics else None,
        max_message_bytes=settings.max_body_bytes,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(consumer.run(stop))
    task.add_done_callback(_report)
    try:
        yield
    finally:
        stop.set()
        # Its error, if any, was logged when it ended.
        await asyncio.gather(task, return_exceptions=True)


def _report(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and (exc := task.exception()) is not None:
        # The HTTP side goes on; the messages not committed are read again by the next consumer.
        log.error(
            "the Kafka consumer stopped on an error; events over HTTP are still taken", exc_info=exc
        )
