"""The `headwater` command: serve, migrate, sql-lineage, export-schemas, spark, consume, dead-letters,
import, keys, mcp, retention, governance."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from headwater.command_base import CommandError, handle_stops

if TYPE_CHECKING:
    from collections.abc import Sequence


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="headwater", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser("serve", help="run the HTTP/GraphQL server (migrates first)")
    serve.add_argument("--host", default=None, help="interface to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port to listen on (default 5000)")
    serve.add_argument("--workers", type=int, default=1, help="server processes (default 1)")

    sub.add_parser("migrate", help="apply database migrations and exit")

    sub.add_parser("mcp", help="serve the read-only MCP tools on stdin/stdout (for assistants)")

    sql = sub.add_parser("sql-lineage", help="print table and column lineage of SQL")
    sql.add_argument("--dialect", default=None, help="SQL dialect, e.g. trino, sparksql, postgres")
    sql.add_argument(
        "--jsonl", action="store_true", help='read lines {"id","sql","dialect"}, write one result each'
    )
    sql.add_argument(
        "--schema",
        metavar="FILE",
        help='JSON {"table": {"column": "type", …} or ["column", …]}: the columns `*` expands to and '
        "unqualified columns are placed by",
    )
    sql.add_argument("file", nargs="?", default="-", help="file with SQL, or - for stdin (default)")

    export = sub.add_parser("export-schemas", help="write schemas/graphql and schemas/openapi")
    export.add_argument("--out", default="schemas", help="output folder (default schemas)")

    spark = sub.add_parser("spark", help="bulk jobs on Spark: backfill, export, heat (needs [spark])")
    spark.add_argument("spark_args", nargs=argparse.REMAINDER, help="arguments of the Spark command")

    from headwater.access.command import add_arguments as add_keys_arguments
    from headwater.consume.options import add_arguments, add_dead_letter_arguments
    from headwater.governance.command import add_arguments as add_governance_arguments
    from headwater.imports.command import add_arguments as add_import_arguments
    from headwater.operations.command import add_arguments as add_retention_arguments

    add_keys_arguments(sub.add_parser("keys", help="create, list or revoke API keys with scopes"))

    add_import_arguments(sub.add_parser("import", help="import another server's history (marquez)"))

    add_governance_arguments(
        sub.add_parser("governance", help="apply classifications and policy checks now; check a policy")
    )

    add_arguments(sub.add_parser("consume", help="ingest events from Kafka topics (needs [kafka])"))
    add_dead_letter_arguments(
        sub.add_parser(
            "dead-letters", help="list, replay or purge Kafka messages that were not ingested"
        )
    )
    add_retention_arguments(
        sub.add_parser("retention", help="remove history older than --keep DAYS (current is kept)")
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `headwater` console script."""
    args = _build_parser().parse_args(argv)
    # `kill` (SIGTERM) must end a command as Ctrl-C does: by default it ends the process on the
    # spot, and an embedded PostgreSQL the command started would be left running.
    handle_stops()
    try:
        return _run(args)
    except CommandError as exc:
        print(f"headwater: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("headwater: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of the output went away (`headwater sql-lineage big.sql | head`): stop as other
        # commands do, without a traceback, and without Python's own complaint when it flushes
        # stdout on the way out.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _run(args: argparse.Namespace) -> int:  # noqa: C901 (one branch per command)
    if args.command == "serve":
        from headwater.server import serve

        return serve(host=args.host, port=args.port, workers=args.workers)
    if args.command == "migrate":
        from headwater.server import run_migrations

        return run_migrations()
    if args.command == "mcp":
        from headwater.mcp.command import run_mcp

        return run_mcp(args)
    if args.command == "sql-lineage":
        from headwater.sql_lineage.command import run_sql_lineage

        return run_sql_lineage(
            file=args.file, dialect=args.dialect, jsonl=args.jsonl, schema_file=args.schema
        )
    if args.command == "export-schemas":
        from headwater.export_schemas import export_schemas

        return export_schemas(args.out)
    if args.command == "spark":
        from headwater.pipeline.command import run_spark_command

        return run_spark_command(args.spark_args)
    if args.command == "consume":
        from headwater.consume.command import run_consume

        return run_consume(args)
    if args.command == "keys":
        from headwater.access.command import run_keys

        return run_keys(args)
    if args.command == "governance":
        from headwater.governance.command import run_governance

        return run_governance(args)
    if args.command == "import":
        from headwater.imports.command import run_import

        return run_import(args)
    if args.command == "dead-letters":
        from headwater.consume.command import run_dead_letters

        return run_dead_letters(args)
    if args.command == "retention":
        from headwater.operations.command import run_retention_command

        return run_retention_command(args)
    raise AssertionError(args.command)  # argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
