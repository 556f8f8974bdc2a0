"""`headwater retention --keep DAYS [--dry-run]`: one retention pass, or what it would remove."""

from __future__ import annotations

import argparse
import asyncio

from headwater.command_base import int_between
from headwater.operations.retention import TABLES, RetentionReport, run_retention
from headwater.settings import MAX_RETENTION_DAYS

# Rows a delete transaction may take: more would hold its locks for long.
MAX_BATCH_SIZE = 1_000_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--keep",
        type=int_between(1, MAX_RETENTION_DAYS),
        required=True,
        metavar="DAYS",
        help="days of history to keep; current versions and lineage are kept however old",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print what would be removed, per table, and remove nothing",
    )
    parser.add_argument(
        "--batch-size",
        type=int_between(1, MAX_BATCH_SIZE),
        default=5_000,
        help="rows per delete transaction (default 5000)",
    )


def run_retention_command(args: argparse.Namespace) -> int:
    from headwater.command_base import apply_migrations, database, load_settings

    settings = load_settings()
    with database(settings.database_url, settings.data_dir) as url:
        asyncio.run(apply_migrations(url))
        report = asyncio.run(_run(url, args.keep, args.dry_run, args.batch_size))
    print("\n".join(report_lines(report)))
    return 0


async def _run(url: str, keep: int, dry_run: bool, batch_size: int) -> RetentionReport:
    from headwater.command_base import connect

    # A connection of its own, without the server's statement timeout: collecting the candidates of
    # a large database is one long read (deletes are then bounded batches).
    conn = await connect(url)
    try:
        return await run_retention(conn, keep, dry_run=dry_run, batch_size=batch_size)
    finally:
        await conn.close()


def report_lines(report: RetentionReport) -> list[str]:
    """The report as printed: the horizon, then rows per table."""
    verb = "would remove" if report.dry_run else "removed"
    lines = [
        f"retention keeping {report.keep_days} days: history before {report.horizon.isoformat()}"
        + (" (dry run: nothing removed)" if report.dry_run else ""),
        f"{'table':<18} {'rows ' + verb:>22}",
    ]
    for table in TABLES:
        lines.append(f"{table:<18} {report.rows[table]:>22,}")
    if report.partitions:
        what = "partitions to drop" if report.dry_run else "partitions dropped"
        lines.append(f"raw_events {what}: {', '.join(report.partitions)}")
    if report.busy_partitions:
        lines.append("raw_events was busy, left for the next pass: " + ", ".join(report.busy_partitions))
    return lines
