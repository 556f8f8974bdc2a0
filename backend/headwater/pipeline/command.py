"""`headwater spark backfill|export|heat`: argument parsing, the Spark session and the summaries."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import os
import sys
from typing import TYPE_CHECKING

from headwater.command_base import int_between, time_argument

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from pyspark.sql import SparkSession

    from headwater.pipeline.backfill import BackfillSummary
    from headwater.pipeline.export import ExportSummary
    from headwater.pipeline.heat import HeatSummary
    from headwater.pipeline.progress import Progress


def _setting(value: str) -> tuple[str, str]:
    key, sep, setting = value.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {value!r}")
    return key, setting


def _seconds(value: str) -> float:
    seconds = float(value)
    if not seconds >= 0.1:
        raise argparse.ArgumentTypeError(f"must be 0.1 or more, got {value}")
    return seconds


def build_parser() -> argparse.ArgumentParser:
    """The parser of `headwater spark ...`."""
    parser = argparse.ArgumentParser(prog="headwater spark", description=__doc__)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    common.add_argument(
        "--database-url",
        default=None,
        help="postgresql://... (default $HEADWATER_DATABASE_URL, else the embedded PostgreSQL)",
    )
    common.add_argument(
        "--conf",
        type=_setting,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Spark configuration, repeatable",
    )
    common.add_argument("--quiet", action="store_true", help="no progress display, only the summary")
    common.add_argument(
        "--progress-interval",
        type=_seconds,
        default=10.0,
        metavar="SECONDS",
        help="when stderr is not a terminal, a progress line this often (default 10)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    backfill = sub.add_parser("backfill", parents=[common], help="load archives of OpenLineage events")
    backfill.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="JSON-lines or JSON-array files (gzip or not), folders or globs; any Spark path",
    )
    backfill.add_argument(
        "--from-marquez",
        default=None,
        metavar="URL",
        help="instead of archives: the lineage_events of this Marquez database (postgresql://...)",
    )
    backfill.add_argument(
        "--since",
        type=time_argument,
        default=None,
        help="with --from-marquez: events at or after this time",
    )
    backfill.add_argument(
        "--until", type=time_argument, default=None, help="with --from-marquez: events before this time"
    )
    backfill.add_argument(
        "--stage",
        default=None,
        metavar="DIR",
        help="with --from-marquez: where its events are staged as gzip JSON lines for Spark to read "
        "(default a temporary folder, removed afterwards; on a cluster, a folder every node sees)",
    )
    backfill.add_argument(
        "--rejects",
        default=None,
        metavar="PATH",
        help="folder for invalid lines with file, line and reason "
        "(default ./headwater-rejects-<UTC time>, made only if needed)",
    )
    backfill.add_argument(
        "--alias-rules",
        default=None,
        metavar="FILE",
        help="alias rules file (default $HEADWATER_ALIAS_RULES_FILE, as the server)",
    )
    backfill.add_argument(
        "--batch-size",
        type=int_between(1),
        default=2000,
        help="events per ingest transaction (default 2000)",
    )
    backfill.add_argument(
        "--events-per-partition",
        type=int_between(1),
        default=20_000,
        help="events per ordered write task (default 20000)",
    )
    backfill.add_argument(
        "--dry-run",
        action="store_true",
        help="check and count only: report rejects and what would be written",
    )

    export = sub.add_parser(
        "export", parents=[common], help="export the lineage graph or the raw events"
    )
    export.add_argument(
        "--format",
        required=True,
        choices=["parquet", "ndjson"],
        help="parquet: nodes, edges and column edges tables; ndjson: raw OpenLineage events",
    )
    export.add_argument("out", metavar="OUT", help="output folder (any Spark path); must not exist")
    export.add_argument("--namespace", default=None, help="only this namespace")
    export.add_argument("--since", type=time_argument, default=None, help="from this time (inclusive)")
    export.add_argument("--until", type=time_argument, default=None, help="up to this time (exclusive)")
    export.add_argument(
        "--compression",
        default=None,
        help="codec: ndjson gzip (default) or none; parquet snappy (default), zstd, none",
    )

    heat = sub.add_parser(
        "heat", parents=[common], help="compute asset heat into datasets.heat and jobs.heat"
    )
    heat.add_argument("--damping", type=float, default=0.85, help="damping factor d (default 0.85)")
    heat.add_argument(
        "--max-iterations", type=int_between(1), default=30, help="iteration cap (default 30)"
    )
    heat.add_argument(
        "--tolerance",
        type=float,
        default=1e-6,
        help="stop when the L1 change of the scores is below this (default 1e-6)",
    )
    return parser


# The codecs Spark writes each export format with, checked before Spark starts.
_EXPORT_CODECS = {
    "ndjson": ("none", "gzip", "bzip2", "lz4", "snappy", "deflate"),
    "parquet": ("none", "uncompressed", "snappy", "gzip", "zstd", "lz4", "lz4_raw", "brotli", "lzo"),
}


def run_spark_command(argv: Sequence[str]) -> int:
    """Entry point of `headwater spark ...`; returns the process exit code.

    The database is checked (and for the commands that write, migrated) before the JVM starts: a
    wrong URL or a fresh database is answered in a second, not after Spark's start-up.
    """
    from headwater.command_base import CommandError, check_time_range
    from headwater.pipeline.sources import ArchiveNotFoundError, ArchiveUnreadableError

    parser = build_parser()
    args = parser.parse_args(list(argv))
    if args.command == "backfill" and bool(args.paths) == bool(args.from_marquez):
        parser.error("backfill takes archive PATHs or --from-marquez URL, one of the two")
    if args.command in ("backfill", "export"):
        check_time_range(args.since, args.until)
    if args.command == "export" and args.compression is not None:
        codecs = _EXPORT_CODECS[args.format]
        if args.compression not in codecs:
            raise CommandError(
                f"--compression {args.compression!r} is not a codec for {args.format}: "
                f"{', '.join(codecs)}",
                2,
            )
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise CommandError("pyspark is not installed; pip install 'headwater[spark]'", 2) from None
    from headwater.pipeline.progress import Progress
    from headwater.pipeline.session import build_session

    if args.command == "export" and _local_path_exists(args.out):
        raise CommandError(f"{args.out} already exists: export writes a new folder; choose another", 2)
    with _database(args) as database_url:
        with (
            Progress(enabled=not args.quiet, interval=args.progress_interval) as progress,
            _marquez_archives(args, progress),
        ):
            progress.set_phase("starting Spark")  # the JVM alone takes 10 to 20 s
            spark = build_session(args.master, f"headwater {args.command}", dict(args.conf))
            progress.attach(spark.sparkContext)
            try:
                result = _dispatch(spark, args, database_url, progress)
            except ArchiveNotFoundError as exc:
                raise CommandError(str(exc), 2) from None
            except ArchiveUnreadableError as exc:
                raise CommandError(str(exc)) from None
            finally:
                spark.stop()
        print(format_summary(result))
    return 0


@contextlib.contextmanager
def _marquez_archives(args: argparse.Namespace, progress: Progress) -> Iterator[None]:
    """With --from-marquez, the Marquez events staged as archives in args.paths for the block."""
    if args.command != "backfill" or not args.from_marquez:
        yield
        return
    import shutil
    import tempfile
    from pathlib import Path

    import asyncpg

    from headwater.command_base import CommandError
    from headwater.imports.marquez import SourceError, source_key
    from headwater.pipeline.marquez import stage_marquez_events

    folder = Path(args.stage) if args.stage else Path(tempfile.mkdtemp(prefix="headwater-marquez-"))
    try:
        try:
            args.paths = asyncio.run(
                stage_marquez_events(args.from_marquez, folder, args.since, args.until, progress)
            )
        except (SourceError, OSError, asyncpg.PostgresError) as exc:
            raise CommandError(
                f"cannot read Marquez's events from {source_key(args.from_marquez)}: {exc}"
            ) from None
        if not args.paths:
            raise CommandError(
                f"{source_key(args.from_marquez)} has no events in lineage_events to backfill"
            )
        yield
    finally:
        if not args.stage:
            shutil.rmtree(folder, ignore_errors=True)


def _local_path_exists(path: str) -> bool:
    """Whether a path on this machine exists (other file systems are Spark's to check)."""
    if path.startswith("file:"):
        path = path.removeprefix("file:").removeprefix("//")
    elif "://" in path:
        return False
    return os.path.lexists(path)


@contextlib.contextmanager
def _database(args: argparse.Namespace) -> Iterator[str | None]:
    """The database URL, checked and ready for the command; None for a dry run without one.

    As for `headwater serve`: --database-url, else HEADWATER_DATABASE_URL, else the embedded
    PostgreSQL of HEADWATER_DATA_DIR (joined while `serve` runs it, else started and stopped here).
    Backfill and heat write, so they migrate first; export and a dry run only read, so they need
    a migrated database. A dry run with no database at all checks the archives alone.
    """
    from headwater.command_base import apply_migrations, check_migrated, database, load_settings
    from headwater.embedded import has_cluster

    settings = load_settings()
    url = args.database_url or settings.database_url
    dry_run = args.command == "backfill" and args.dry_run
    if dry_run and not url and not has_cluster(settings.data_dir):
        print(
            "headwater: no database is set up: the dry run checks the archives only, "
            "and cannot tell which events are already stored",
            file=sys.stderr,
        )
        yield None
        return
    with database(url, settings.data_dir) as ready:
        if dry_run or args.command == "export":
            asyncio.run(check_migrated(ready))
        else:
            applied = asyncio.run(apply_migrations(ready))
            if applied:
                print(f"headwater: applied migrations: {', '.join(applied)}", file=sys.stderr)
        yield ready


def _dispatch(
    spark: SparkSession, args: argparse.Namespace, database_url: str | None, progress: Progress
) -> BackfillSummary | ExportSummary | HeatSummary:
    if args.command == "backfill":
        from headwater.pipeline.backfill import BackfillOptions, run_backfill

        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        options = BackfillOptions(
            paths=args.paths,
            database_url=database_url,
            rejects_path=args.rejects or f"headwater-rejects-{stamp}",
            alias_rules_file=args.alias_rules or os.environ.get("HEADWATER_ALIAS_RULES_FILE") or None,
            batch_size=args.batch_size,
            events_per_partition=args.events_per_partition,
            dry_run=args.dry_run,
        )
        return run_backfill(spark, options, progress)
    assert database_url is not None  # only a dry run of backfill may go without a database
    if args.command == "export":
        from headwater.pipeline.export import ExportOptions, run_export

        export = ExportOptions(
            out=args.out,
            format=args.format,
            database_url=database_url,
            namespace=args.namespace,
            since=args.since,
            until=args.until,
            compression=args.compression,
        )
        return run_export(spark, export, progress)
    from headwater.pipeline.heat import HeatOptions, run_heat

    heat = HeatOptions(
        database_url=database_url,
        damping=args.damping,
        max_iterations=args.max_iterations,
        tolerance=args.tolerance,
    )
    return run_heat(spark, heat, progress)


def _table(title: str, rows: list[tuple[str, str]]) -> str:
    width = max(len(k) for k, _ in rows)
    lines = [title, "-" * len(title)]
    lines += [f"{k.ljust(width)}  {v}" for k, v in rows]
    return "\n".join(lines)


def format_summary(result: BackfillSummary | ExportSummary | HeatSummary) -> str:
    """The closing summary of a command, as an aligned two-column table."""
    from headwater.pipeline.backfill import BackfillSummary
    from headwater.pipeline.export import ExportSummary

    if isinstance(result, BackfillSummary):
        s = result
        rows = [
            ("files read", f"{s.files:,} ({s.bytes:,} bytes)"),
            ("lines / array items", f"{s.rows:,} ({s.blank:,} blank, skipped)"),
            ("rejected", f"{s.rejected:,}" + (f" -> {s.rejects_path}" if s.rejects_path else "")),
        ]
        rows += [(f"  {count:,} x", reason[:100]) for reason, count in s.reject_reasons]
        rows += [
            ("valid events", f"{s.valid:,}"),
            ("duplicates in archives", f"{s.valid - s.unique:,}"),
            ("already stored", f"{s.already_stored:,}"),
            ("to write", f"{s.to_write:,}"),
        ]
        if s.written.created or s.written.duplicates:
            rate = (s.written.created + s.written.duplicates) / max(s.write_seconds, 1e-9)
            rows += [
                ("stored", f"{s.written.created:,} ({s.written.with_warnings:,} with facet warnings)"),
                ("stored meanwhile by others", f"{s.written.duplicates:,}"),
                ("write rate", f"{rate:,.0f} events/s"),
            ]
        rows.append(("elapsed", f"{s.seconds:,.1f} s"))
        return _table("backfill summary", rows)
    if isinstance(result, ExportSummary):
        rows = [(name, f"{count:,} rows") for name, count in result.tables.items()]
        rows += [("written to", result.out), ("elapsed", f"{result.seconds:,.1f} s")]
        return _table(f"export summary ({result.format})", rows)
    h = result
    rows = [
        ("nodes", f"{h.nodes:,} ({h.datasets:,} datasets, {h.jobs:,} jobs)"),
        ("current edges", f"{h.edges:,}"),
        ("iterations", f"{h.iterations} (L1 change {h.delta:.2e})"),
        ("rows changed", f"{h.changed:,}"),
        ("hottest", ", ".join(f"{k} {v:.2f}" for k, v in h.hottest) or "-"),
        ("elapsed", f"{h.seconds:,.1f} s"),
    ]
    return _table("heat summary", rows)
