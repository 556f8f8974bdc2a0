"""`headwater consume` and `headwater dead-letters`, on the database every command resolves the same way."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
import sys
from typing import TYPE_CHECKING, Any

from headwater import event_loops
from headwater.command_base import (
    CommandError,
    alias_rules_or_error,
    apply_migrations,
    check_migrated,
    connect,
    database,
    load_settings,
)
from headwater.db.pool import create_pool, register_codecs
from headwater.ingest.service import rare_collections

if TYPE_CHECKING:
    import argparse

    from headwater.consume.options import ConsumeOptions
    from headwater.ingest.normalize import AliasRule
    from headwater.integrations.trino import BridgeOptions
    from headwater.settings import Settings

log = logging.getLogger("headwater.consume")


def _bridge() -> BridgeOptions:
    """Trino naming from HEADWATER_TRINO_*, as POST /api/v1/integrations/trino without parameters."""
    from headwater.api.rest.trino import bridge_options
    from headwater.errors import AppError

    try:
        return bridge_options({})
    except AppError as exc:
        raise CommandError(exc.message) from None


def check_serve_options() -> None:
    """`serve` with HEADWATER_KAFKA_BOOTSTRAP_SERVERS: stop before starting workers if the consumer
    they would run is misconfigured."""
    try:
        import aiokafka  # noqa: F401
    except ImportError:
        raise CommandError(
            "HEADWATER_KAFKA_BOOTSTRAP_SERVERS is set, and consuming from Kafka needs aiokafka: "
            "pip install 'headwater[kafka]'"
        ) from None
    from headwater.consume.options import OptionError, from_environment

    try:
        options = from_environment()
    except OptionError as exc:
        raise CommandError(f"serve with HEADWATER_KAFKA_BOOTSTRAP_SERVERS set: {exc}") from None
    if options.trino_topics:
        _bridge()


def run_consume(args: argparse.Namespace) -> int:
    """`headwater consume`: migrate like `serve`, then consume until interrupted."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        import aiokafka  # noqa: F401
    except ImportError:
        raise CommandError("headwater consume needs aiokafka: pip install 'headwater[kafka]'") from None
    from headwater.consume.options import OptionError, resolve

    try:
        options = resolve(args)
    except OptionError as exc:
        raise CommandError(str(exc), exit_code=2) from None
    settings = load_settings()
    rules = alias_rules_or_error(settings.alias_rules_file)
    bridge = _bridge() if options.trino_topics else None
    with database(settings.database_url, settings.data_dir) as url:
        applied = asyncio.run(apply_migrations(url))
        if applied:
            log.info("applied migrations: %s", ", ".join(applied))
        # The process only consumes from here on: what lived before is frozen out of the garbage
        # collector's passes, and it collects rarely meanwhile, as serve and the import do (see
        # rare_collections). Measured with the Kafka benchmark, one consumer, 5,000 events: 0.95 to
        # 0.56 ms of the consumer's CPU per event, 1,220 to 1,687 events/s.
        gc.freeze()
        with rare_collections():
            event_loops.run(_consume(options, settings, url, rules, bridge))
    return 0


async def _consume(
    options: ConsumeOptions,
    settings: Settings,
    url: str,
    rules: list[AliasRule],
    bridge: BridgeOptions | None,
) -> None:
    from headwater.consume.consumer import KafkaConsumer

    if options.metrics_port:
        from prometheus_client import start_http_server

        try:
            start_http_server(options.metrics_port)
        except OSError as exc:
            raise CommandError(
                f"cannot serve metrics on port {options.metrics_port}: {exc.strerror}"
            ) from None
        log.info("metrics on http://0.0.0.0:%d/metrics", options.metrics_port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    # SIGTERM (docker stop, kill) and Ctrl-C finish the batch in hand, commit it and leave the group,
    # so that the group rebalances at once instead of after the session timeout.
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in previous:
        loop.add_signal_handler(sig, stop.set)
    pool = await create_pool(settings, url)
    try:
        consumer = KafkaConsumer(
            options, pool, rules=rules, bridge=bridge, max_message_bytes=settings.max_body_bytes
        )
        await consumer.run(stop)
    finally:
        await pool.close()
        for sig, handler in previous.items():
            loop.remove_signal_handler(sig)
            signal.signal(sig, handler)


def run_dead_letters(args: argparse.Namespace) -> int:
    """`headwater dead-letters list|replay|purge`."""
    from headwater.consume.dead_letters import Selection

    selection = Selection(
        ids=tuple(args.ids or ()), topic=args.topic, before=getattr(args, "before", None)
    )
    if args.action == "purge" and selection.everything and not args.all:
        raise CommandError(
            "purge needs --id, --topic or --before, or --all to remove every dead letter", exit_code=2
        )
    if args.action == "purge" and args.all and not selection.everything:
        raise CommandError(
            "purge takes --all, or a selection (--id, --topic, --before), not both", exit_code=2
        )
    settings = load_settings()
    with database(settings.database_url, settings.data_dir) as url:
        asyncio.run(check_migrated(url))
        return asyncio.run(_dead_letters(args, selection, settings, url))


async def _dead_letters(args: argparse.Namespace, selection: Any, settings: Settings, url: str) -> int:
    from headwater.consume import dead_letters

    conn = await connect(url)
    await register_codecs(conn)
    try:
        if args.action == "list":
            rows = await dead_letters.list_dead_letters(conn, selection, args.limit)
            if args.json:
                print(dead_letters.to_json(rows))
            else:
                _print_table(rows)
            return 0
        if args.action == "purge":
            removed = await dead_letters.purge(conn, selection)
            print(f"headwater: {removed} dead letter(s) removed")
            return 0
        try:
            outcome = await dead_letters.replay(
                conn,
                selection,
                rules=alias_rules_or_error(settings.alias_rules_file),
                bridge=_bridge(),
                max_message_bytes=settings.max_body_bytes,
            )
        except dead_letters.ReplayInterruptedError as exc:
            raise CommandError(f"the database became unavailable during the replay: {exc}") from None
        print(
            f"headwater: {outcome.stored} dead letter(s) replayed ({outcome.events} event(s)), "
            f"{outcome.failed} failed again (still listed, with the new reason)"
            + (f", {outcome.cut} cut at the size limit (cannot be replayed)" if outcome.cut else "")
        )
        return 0 if not outcome.failed else 1
    finally:
        with contextlib.suppress(Exception):
            await conn.close()


def _print_table(rows: list[dict[str, Any]]) -> None:
    if not rows:
        print("no dead letters")
        return
    out = sys.stdout
    for r in rows:
        where = f"{r['topic']}[{r['partition']}]@{r['offset']}"
        flag = "" if r["replayable"] else " (cut, not replayable)"
        out.write(
            f"{r['id']}\t{r['deadAt']}\t{where}\t{r['format']}\t{r['size']} bytes{flag}\t{r['reason']}\n"
        )
