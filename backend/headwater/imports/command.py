"""`headwater import marquez --from URL`: the command around imports.marquez."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import asyncpg

from headwater import event_loops
from headwater.command_base import (
    CommandError,
    alias_rules_or_error,
    check_time_range,
    int_between,
    time_argument,
)

if TYPE_CHECKING:
    from headwater.imports.marquez import ImportSummary


# Events a transaction may hold: a batch is read, prepared and held in memory whole.
MAX_BATCH_SIZE = 100_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sources = parser.add_subparsers(dest="source", required=True, metavar="SOURCE")
    marquez = sources.add_parser(
        "marquez", help="replay a Marquez database's lineage_events (resumable, idempotent)"
    )
    marquez.add_argument(
        "--from",
        dest="source_url",
        required=True,
        metavar="URL",
        help="postgresql:// URL of Marquez's database",
    )
    marquez.add_argument(
        "--since", type=time_argument, default=None, help="only events at or after this time"
    )
    marquez.add_argument(
        "--until", type=time_argument, default=None, help="only events before this time"
    )
    marquez.add_argument(
        "--restart",
        action="store_true",
        help="read everything again instead of resuming (nothing is stored twice)",
    )
    marquez.add_argument(
        "--batch-size",
        type=int_between(1, MAX_BATCH_SIZE),
        default=None,
        help="events per transaction (default 1,000)",
    )
    marquez.add_argument(
        "--rejects",
        type=Path,
        default=Path("marquez-refused.jsonl"),
        help="where refused events go, with their reasons (default marquez-refused.jsonl)",
    )
    marquez.add_argument(
        "--progress-interval",
        type=float,
        default=10.0,
        help="seconds between progress lines off a terminal",
    )
    marquez.add_argument("--quiet", action="store_true", help="no progress display, only the summary")


def run_import(args: argparse.Namespace) -> int:
    from headwater.command_base import apply_migrations, database, load_settings
    from headwater.ingest.service import rare_collections

    check_time_range(args.since, args.until)
    settings = load_settings()
    with database(settings.database_url, settings.data_dir) as url:
        asyncio.run(apply_migrations(url))
        # The process only imports from here on: what lived before is frozen out of the garbage
        # collector's passes (as serve does after its start-up), and it collects rarely meanwhile
        # (see rare_collections: 0.70 to 0.41 ms of the import's CPU per event).
        gc.freeze()
        with rare_collections():
            summary = event_loops.run(_import(args, url, settings.alias_rules_file))
    for line in summary.lines(args.rejects if summary.refused else None):
        print(f"headwater: {line}", file=sys.stderr)
    return 0


async def _import(args: argparse.Namespace, url: str, alias_rules_file: Path | None) -> ImportSummary:
    from headwater.command_base import connect
    from headwater.db.pool import register_codecs
    from headwater.imports.marquez import BATCH_SIZE, SourceError, import_marquez, source_key
    from headwater.pipeline.progress import Progress

    rules = alias_rules_or_error(alias_rules_file)
    await (await connect(args.source_url)).close()  # a clear error for an unreachable source first
    try:
        rejects_file = args.rejects.open("w", encoding="utf-8")
    except OSError as exc:
        raise CommandError(
            f"cannot write --rejects {args.rejects}: {exc.strerror}", exit_code=2
        ) from None
    target = await connect(url)
    try:
        await register_codecs(target)
        with (
            rejects_file as rejects,
            Progress(enabled=not args.quiet, interval=args.progress_interval) as progress,
        ):
            try:
                summary = await import_marquez(
                    args.source_url,
                    target,
                    alias_rules=rules,
                    since=args.since,
                    until=args.until,
                    batch_size=args.batch_size or BATCH_SIZE,
                    restart=args.restart,
                    rejects=rejects,
                    progress=progress,
                )
            except SourceError as exc:
                raise CommandError(f"cannot import from {source_key(args.source_url)}: {exc}") from None
            except (OSError, asyncpg.PostgresError) as exc:
                raise CommandError(f"the import stopped ({exc}); run it again to resume") from None
    finally:
        await target.close()
    if not summary.refused:
        with contextlib.suppress(OSError):
            args.rejects.unlink()
    return summary
