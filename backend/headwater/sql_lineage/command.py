"""`headwater sql-lineage`: print the lineage of a SQL file, or of many statements as JSON lines."""

from __future__ import annotations

import json
import logging
import sys
from typing import IO, Any

from headwater.sql_lineage.catalog import Schema, read_schema
from headwater.sql_lineage.dialects import dialect_name, known_dialects
from headwater.sql_lineage.script import extract_lineage


def run_sql_lineage(file: str, dialect: str | None, jsonl: bool, schema_file: str | None = None) -> int:
    """Print the lineage of `file` (- for stdin) as JSON; with `jsonl`, one result per input line.
    `schema_file` gives tables' columns (see ``read_schema``); a JSON line's own "schema" wins.

    The exit status is 1 when a statement of the file is not valid SQL or has no lineage Headwater
    can derive (the lineage of the others is printed all the same), 2 when the file or the schema
    cannot be read. With `jsonl`, errors are answers: each line says its own and the status stays 0.
    """
    # sqlglot logs a warning for every statement it keeps as an opaque command (SET, GRANT …);
    # on a terminal that would bury the results.
    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    if dialect and dialect_name(dialect) is None:
        # Events name dialects freely and an unknown one is read as generic SQL; a person who
        # mistyped one is told.
        print(
            f"warning: unknown dialect {dialect!r}, read as generic SQL; known: "
            + ", ".join(known_dialects()),
            file=sys.stderr,
        )
    schema: Schema = {}
    if schema_file is not None:
        try:
            with open(schema_file, "rb") as text:
                schema = read_schema(json.loads(text.read()))
        except OSError as error:
            print(f"headwater sql-lineage: cannot read {schema_file}: {error.strerror}", file=sys.stderr)
            return 2
        except (ValueError, RecursionError) as error:
            reason = "nested too deeply" if isinstance(error, RecursionError) else str(error)
            print(f"headwater sql-lineage: --schema {schema_file}: {reason}", file=sys.stderr)
            return 2
    try:
        source = sys.stdin.buffer if file == "-" else open(file, "rb")  # noqa: SIM115
    except OSError as error:
        print(f"headwater sql-lineage: cannot read {file}: {error.strerror}", file=sys.stderr)
        return 2
    with source:
        if jsonl:
            _run_lines(source, dialect, schema, sys.stdout)
            return 0
        content = source.read()
    try:
        sql = content.decode()
    except UnicodeDecodeError as error:
        print(
            f"headwater sql-lineage: {file} is not UTF-8 text: byte {error.start} is "
            f"0x{content[error.start]:02x}",
            file=sys.stderr,
        )
        return 2
    return _run_file(sql, dialect, schema)


def _run_file(sql: str, dialect: str | None, schema: Schema) -> int:
    result = extract_lineage(sql, dialect, schema)
    print(json.dumps(result.to_dict(), indent=2))
    for error in result.errors:
        print(f"error: {error}", file=sys.stderr)
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    return 1 if result.errors else 0


def _run_lines(lines: IO[bytes], dialect: str | None, schema: Schema, out: IO[str]) -> None:
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            line = raw.decode()
        except UnicodeDecodeError as error:
            answer = _failed(
                None, f"Line {number} is not UTF-8 text: byte {error.start} is 0x{raw[error.start]:02x}"
            )
        else:
            answer = lineage_line(line, dialect, schema)
        out.write(json.dumps(answer) + "\n")
        out.flush()


def lineage_line(line: str, dialect: str | None, schema: Schema | None = None) -> dict[str, Any]:
    """The result line for one input line `{"id", "sql", "dialect", "schema"}`; never raises.

    A `"warning"` is added when part of the SQL was not followed (a called procedure).
    """
    try:
        request = json.loads(line)
    except json.JSONDecodeError as error:
        return _failed(None, f"Invalid JSON line: {error.msg} at column {error.colno}")
    except RecursionError:
        return _failed(None, "Invalid JSON line: nested too deeply to decode")
    if not isinstance(request, dict) or not isinstance(request.get("sql"), str):
        return _failed(
            request.get("id") if isinstance(request, dict) else None, 'Expected {"id", "sql"}'
        )
    if "schema" in request:
        try:
            schema = read_schema(request["schema"])
        except ValueError as error:
            return _failed(request.get("id"), f"Invalid schema: {error}")
    line_dialect = request.get("dialect")
    if line_dialect is not None and not isinstance(line_dialect, str):
        return _failed(
            request.get("id"), f"Invalid dialect: expected a name, got {json.dumps(line_dialect)}"
        )
    result = extract_lineage(request["sql"], line_dialect or dialect, schema)
    message = "; ".join(str(e) for e in result.errors) or None
    answer = {"id": request.get("id"), **result.to_dict(), "error": message}
    if result.warnings:
        answer["warning"] = "; ".join(str(w) for w in result.warnings)
    return answer


def _failed(request_id: Any, message: str) -> dict[str, Any]:
    return {"id": request_id, "inputs": [], "outputs": [], "columns": [], "error": message}
