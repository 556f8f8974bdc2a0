"""SQL lineage: the fixture corpus case by case, errors with positions, dialect names, the CLI."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest
from sqlglot.errors import SqlglotError

from headwater.cli import main
from headwater.sql_lineage import ColumnLineage, SqlError, SqlLineage, dialect_name, extract_lineage
from headwater.sql_lineage.command import lineage_line
from tests.fixtures.sql.cases import Case, load_cases

CASES = load_cases()
HEADWATER = Path(sys.executable).parent / "headwater"


def _param(case: Case) -> object:
    marks = [pytest.mark.xfail(reason=case.xfail, strict=True)] if case.xfail else []
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_corpus_case(case: Case) -> None:
    result = extract_lineage(case.sql, case.dialect, case.schema)
    assert result.errors == []
    assert result.to_dict() == case.expected


def test_corpus_is_large_and_covers_the_dialects() -> None:
    dialects = {c.dialect for c in CASES}
    assert len(CASES) >= 300
    assert {
        "trino",
        "sparksql",
        "hive",
        "postgres",
        "snowflake",
        "bigquery",
        "tsql",
        "mysql",
    } <= dialects


# Errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "dialect", "message"),
    [
        (
            "SELECT a FROM t WHERE (",
            "postgres",
            "the statement ends too early, after '(' at line 1, column 23",
        ),
        ("selec oops", "postgres", "unrecognized statement 'selec' at line 1, column 1"),
        ("  DELET FROM t", "trino", "unrecognized statement 'DELET' at line 1, column 3"),
        ("SELECT a\nFROM t\nWHERE x = = 1", "postgres", "unexpected '=' at line 3, column 11"),
        (
            "SELECT a FROM WHERE x",
            None,
            "expected a table name but found 'WHERE' at line 1, column 15",
        ),
        ("SELECT (a b FROM t", None, "expected ')' but found 'FROM' at line 1, column 13"),
        (
            "SELECT a FROM t\nWHERE b IN (1, 2",
            None,
            "expected ')', but the statement ends after '2' at line 2, column 16",
        ),
        (
            "WITH x AS (SELECT 1)",
            None,
            "no statement after the WITH clause that ends with ')' at line 1, column 20",
        ),
        ("SELECT CAST(a AS) FROM t", None, "expected TYPE after CAST, near ')' at line 1, column 17"),
        ("SELECT 'oops", None, "no closing ' for the ' at line 1, column 8"),
    ],
)
def test_error_says_what_is_wrong_at_which_line_and_column(
    sql: str, dialect: str | None, message: str
) -> None:
    assert [str(e) for e in extract_lineage(sql, dialect).errors] == [message]


@pytest.mark.parametrize("sql", ["selec oops", "foo", "1", "a.b", "(1)", "\x00\x01"])
def test_expression_alone_is_not_a_statement(sql: str) -> None:
    # sqlglot parses these as expressions; no dialect runs them.
    (error,) = extract_lineage(sql, "postgres").errors
    assert error.message.startswith("unrecognized statement '")
    assert (error.line, error.col) == (1, 1)


def test_error_keeps_the_text_it_points_at() -> None:
    result = extract_lineage("SELECT a\nFROM t\nWHERE x = = 1", "postgres")
    assert result.errors == [SqlError(message="unexpected '='", line=3, col=11, highlight="=")]


def test_bad_statement_costs_only_itself() -> None:
    result = extract_lineage(
        "INSERT INTO a SELECT x FROM s;\nSELECT FROM WHERE;\nINSERT INTO b SELECT y FROM u", "trino"
    )
    assert result.to_dict() == {
        "inputs": ["s", "u"],
        "outputs": ["a", "b"],
        "columns": [{"output": "a.x", "inputs": ["s.x"]}, {"output": "b.y", "inputs": ["u.y"]}],
    }
    assert [(e.line, e.col) for e in result.errors] == [(2, 13)]


def test_unterminated_string_is_located_and_earlier_statements_kept() -> None:
    result = extract_lineage("INSERT INTO a SELECT x FROM s;\nSELECT 'oops FROM t", None)
    assert result.to_dict()["outputs"] == ["a"]
    assert [str(e) for e in result.errors] == ["no closing ' for the ' at line 2, column 8"]


def test_unsupported_writing_statement_is_an_error_not_silence() -> None:
    # sqlglot keeps UNLOAD as an opaque command; without its TO clause it cannot be rebuilt.
    result = extract_lineage("SELECT 1;\n  UNLOAD ('SELECT a FROM s')", "redshift")
    assert result.errors == [
        SqlError("unsupported form of UNLOAD statement", line=2, col=3, highlight="UNLOAD")
    ]


@pytest.mark.parametrize(
    ("sql", "dialect"),
    [
        ("ALTER TABLE sales EXCHANGE PARTITION p1", "oracle"),
        ("ALTER TABLE sales EXCHANGE PARTITION p1 WITH TABLE", "mysql"),
        ("ALTER TABLE dbo.s SWITCH PARTITION 2", "tsql"),
    ],
)
def test_partition_exchange_not_understood_is_an_error_not_silence(sql: str, dialect: str) -> None:
    result = extract_lineage(f"SELECT 1;\n{sql}", dialect)
    assert result.errors == [
        SqlError("unsupported form of ALTER statement", line=2, col=1, highlight="ALTER")
    ]


def test_insert_exec_warns_of_the_procedure_it_runs() -> None:
    result = extract_lineage("INSERT INTO dbo.t (a)\n  EXEC dbo.load_rows @day = 1", "tsql")
    assert result.errors == []
    assert result.to_dict()["outputs"] == ["dbo.t"]
    assert [str(w) for w in result.warnings] == [
        "call of dbo.load_rows: the lineage of what it runs is not derived at line 2, column 8"
    ]


def test_loop_record_of_another_loop_is_not_a_table() -> None:
    # Two loops bind the same record name to different queries: each body reads its own loop's.
    result = extract_lineage(
        """BEGIN
          FOR r IN (SELECT id FROM a) LOOP INSERT INTO x (k) VALUES (r.id); END LOOP;
          FOR r IN (SELECT code AS id FROM b) LOOP INSERT INTO y (k) VALUES (r.id); END LOOP;
        END;""",
        "oracle",
    )
    assert result.to_dict()["columns"] == [
        {"output": "x.k", "inputs": ["a.id"]},
        {"output": "y.k", "inputs": ["b.code"]},
    ]


@pytest.mark.parametrize(
    "sql",
    [
        "",
        ";;;",
        "-- only a comment",
        "SET x = 1",
        "USE db",
        "GRANT SELECT ON t TO u",
        "BEGIN; COMMIT;",
        "SHOW TABLES",
        "(SELECT 1)",
    ],
)
def test_statements_without_lineage_give_empty_results(sql: str) -> None:
    result = extract_lineage(sql, "snowflake")
    assert result == SqlLineage()


@pytest.mark.parametrize(
    ("sql", "dialect"),
    [
        (" ELSE other_label END FROM accounts", None),
        ("CREATE TEMP TABLE r AS SELECT * FROM ds.e WHERE ts > TIMESTAMP_SUB(CURRENT", "bigquery"),
    ],
)
def test_sql_that_trips_sqlglot_is_an_error_not_a_crash(sql: str, dialect: str | None) -> None:
    result = extract_lineage(sql, dialect)
    assert [e.line for e in result.errors] == [1]


_INTERNALS = ("<class", "Token", "sqlglot", "Required keyword", "None", "SENTINEL")


def test_truncated_statements_never_raise_nor_show_parser_internals() -> None:
    internal, leaks = [], []
    for case in CASES:
        sql = case.sql
        for cut in (len(sql) // 3, len(sql) // 2, 2 * len(sql) // 3):
            for part in (sql[:cut], sql[cut:]):
                result = extract_lineage(part, case.dialect)
                internal += [e for e in result.errors if e.message.startswith("cannot derive")]
                leaks += [str(e) for e in result.errors if any(w in str(e) for w in _INTERNALS)]
                assert all(e.line and e.col for e in result.errors)
    assert internal == []
    assert leaks == []


def test_error_converts_to_text_with_its_position() -> None:
    assert str(SqlError("unexpected 'x'", 2, 5, "x")) == "unexpected 'x' at line 2, column 5"
    assert str(SqlError("no SQL")) == "no SQL"


# Dialects ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("trino", "trino"),
        ("sparksql", "spark"),
        ("Spark SQL", "spark"),
        ("mariadb", "mysql"),
        ("postgresql", "postgres"),
        ("MSSQL", "tsql"),
        ("sql-server", "tsql"),
        ("ansi", None),
        ("generic", None),
        ("no-such-dialect", None),
        (None, None),
        ("", None),
    ],
)
def test_dialect_names_as_users_write_them(name: str | None, expected: str | None) -> None:
    assert dialect_name(name) == expected


def test_unknown_dialect_still_parses_generic_sql() -> None:
    result = extract_lineage("INSERT INTO t SELECT a FROM s", "no-such-dialect")
    assert result.to_dict()["columns"] == [{"output": "t.a", "inputs": ["s.a"]}]


# Column details ---------------------------------------------------------------------------


def test_transformation_types() -> None:
    result = extract_lineage(
        "INSERT INTO t (a, b, c, d) SELECT id, price * 2, SUM(amount), "
        "ROW_NUMBER() OVER (PARTITION BY region ORDER BY day) FROM s GROUP BY id, price",
        "postgres",
    )
    assert [(c.output, c.transformation) for c in result.columns] == [
        ("t.a", "IDENTITY"),
        ("t.b", "TRANSFORMATION"),
        ("t.c", "AGGREGATION"),
        ("t.d", "INDIRECT"),
    ]


def test_transformation_carries_through_intermediate_tables() -> None:
    result = extract_lineage(
        "CREATE TABLE tmp AS SELECT k, SUM(v) AS total FROM s GROUP BY k; INSERT INTO out SELECT k, total FROM tmp"
    )
    assert [(c.output, c.transformation) for c in result.columns] == [
        ("out.k", "IDENTITY"),
        ("out.total", "AGGREGATION"),
    ]


def test_schema_is_matched_by_the_qualification_the_sql_uses() -> None:
    schema = {"shop.public.orders": {"id": "int", "amount": "numeric"}}
    result = extract_lineage("INSERT INTO t SELECT * FROM public.orders", "postgres", schema)
    assert result.to_dict()["columns"] == [
        {"output": "t.amount", "inputs": ["public.orders.amount"]},
        {"output": "t.id", "inputs": ["public.orders.id"]},
    ]


def test_names_differing_only_in_case_are_one_table() -> None:
    result = extract_lineage(
        "CREATE TABLE Tmp AS SELECT a FROM S; INSERT INTO out SELECT a FROM tmp", "snowflake"
    )
    assert result.to_dict() == {
        "inputs": ["S"],
        "outputs": ["out"],
        "columns": [{"output": "out.a", "inputs": ["S.a"]}],
    }


def test_result_is_a_frozen_value() -> None:
    result = extract_lineage("INSERT INTO t SELECT a FROM s")
    assert result == SqlLineage(
        inputs=["s"],
        outputs=["t"],
        columns=[ColumnLineage(output="t.a", inputs=["s.a"], transformation="IDENTITY")],
    )
    with pytest.raises(FrozenInstanceError):
        result.inputs = []  # type: ignore[misc]


# Command line -----------------------------------------------------------------------------


def test_cli_prints_the_lineage_of_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "job.sql"
    script.write_text("INSERT INTO t (id) SELECT o.id FROM shop.orders o;\n", encoding="utf-8")
    assert main(["sql-lineage", "--dialect", "trino", str(script)]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "inputs": ["shop.orders"],
        "outputs": ["t"],
        "columns": [{"output": "t.id", "inputs": ["shop.orders.id"]}],
    }


def test_cli_schema_expands_star_and_places_bare_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "job.sql"
    script.write_text(
        "INSERT INTO wide SELECT o.*, name FROM orders o JOIN customers c ON o.customer_id = c.id",
        encoding="utf-8",
    )
    schema = tmp_path / "schema.json"
    schema.write_text(
        json.dumps(
            {"shop.orders": {"id": "int", "customer_id": None}, "shop.customers": ["id", "name"]}
        ),
        encoding="utf-8",
    )
    assert main(["sql-lineage", "--schema", str(schema), str(script)]) == 0
    assert json.loads(capsys.readouterr().out)["columns"] == [
        {"output": "wide.customer_id", "inputs": ["orders.customer_id"]},
        {"output": "wide.id", "inputs": ["orders.id"]},
        {"output": "wide.name", "inputs": ["customers.name"]},
    ]
    # Without it, the star stays a star and the bare column has no table.
    assert main(["sql-lineage", str(script)]) == 0
    assert json.loads(capsys.readouterr().out)["columns"] == [
        {"output": "wide.*", "inputs": ["orders.*"]},
        {"output": "wide.name", "inputs": ["name"]},
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1]", "expected a JSON object of tables"),
        ('{"t": 5}', "table 't': expected an object of column types or a list of column names"),
        ('{"t": {"a": 1}}', "table 't': expected an object of column types or a list of column names"),
        ("{", "Expecting property name enclosed in double quotes"),
    ],
)
def test_cli_schema_that_cannot_be_used_exits_two_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(content, encoding="utf-8")
    assert main(["sql-lineage", "--schema", str(schema), str(tmp_path / "unread.sql")]) == 2
    assert capsys.readouterr().err.startswith(f"headwater sql-lineage: --schema {schema}: {message}")


def test_cli_jsonl_line_carries_its_own_schema() -> None:
    lines = [
        {"id": 1, "sql": "INSERT INTO t SELECT * FROM s", "schema": {"s": ["a", "b"]}},
        {"id": 2, "sql": "INSERT INTO t SELECT * FROM s", "schema": [1]},
    ]
    completed = _sql_lineage("\n".join(json.dumps(line) for line in lines) + "\n", "--jsonl")
    first, second = (json.loads(line) for line in completed.stdout.splitlines())
    assert first["columns"] == [
        {"output": "t.a", "inputs": ["s.a"]},
        {"output": "t.b", "inputs": ["s.b"]},
    ]
    assert second["error"] == "Invalid schema: expected a JSON object of tables"


def test_cli_reports_bad_sql_on_stderr_and_exits_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "bad.sql"
    script.write_text("INSERT INTO t SELECT a FROM s;\nSELECT 1 +", encoding="utf-8")
    assert main(["sql-lineage", str(script)]) == 1
    captured = capsys.readouterr()
    # The statements that parse still give their lineage.
    assert json.loads(captured.out)["outputs"] == ["t"]
    assert captured.err == "error: the statement ends too early, after '+' at line 2, column 10\n"


def _sql_lineage(stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(HEADWATER), "sql-lineage", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT a FROM t WHERE (", "the statement ends too early, after '(' at line 1, column 23"),
        ("selec oops", "unrecognized statement 'selec' at line 1, column 1"),
    ],
)
def test_cli_invalid_sql_fails_with_a_message_and_nothing_else(sql: str, message: str) -> None:
    completed = _sql_lineage(sql + "\n", "--dialect", "postgres")
    assert completed.returncode == 1
    assert completed.stderr == f"error: {message}\n"


def test_cli_statements_sqlglot_keeps_as_commands_pass_quietly() -> None:
    completed = _sql_lineage("SHOW TABLES;\nVACUUM t;\nINSERT INTO t SELECT a FROM s;\n")
    assert completed.returncode == 0
    assert completed.stderr == ""
    assert json.loads(completed.stdout)["outputs"] == ["t"]


def test_cli_warns_of_an_unknown_dialect_and_reads_generic_sql(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "job.sql"
    script.write_text("INSERT INTO t SELECT a FROM s;\n", encoding="utf-8")
    assert main(["sql-lineage", "--dialect", "postgress", str(script)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["outputs"] == ["t"]
    assert captured.err.startswith("warning: unknown dialect 'postgress', read as generic SQL; known: ")
    assert "postgres, " in captured.err
    # Names OpenLineage producers use for a dialect are known too.
    assert main(["sql-lineage", "--dialect", "spark-sql", str(script)]) == 0
    assert capsys.readouterr().err == ""


def test_cli_missing_file_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sql-lineage", str(tmp_path / "missing.sql")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_cli_jsonl_answers_every_line_in_one_process() -> None:
    lines = [
        {"id": 1, "sql": "INSERT INTO t SELECT a FROM s", "dialect": "sparksql"},
        {"id": "two", "sql": "SELECT FROM WHERE"},
        {"id": 3, "sql": "selec oops", "dialect": "postgres"},
        {"id": 4, "sql": "SELECT * FROM x", "dialect": "mariadb"},
    ]
    stdin = "\n".join(json.dumps(line) for line in lines) + "\nnot json\n"
    completed = _sql_lineage(stdin, "--jsonl", "--dialect", "trino", "-")
    # Bad SQL is an answer, not a failure of the command: every line is answered.
    assert (completed.returncode, completed.stderr) == (0, "")
    results = [json.loads(line) for line in completed.stdout.splitlines()]
    assert results == [
        {
            "id": 1,
            "inputs": ["s"],
            "outputs": ["t"],
            "columns": [{"output": "t.a", "inputs": ["s.a"]}],
            "error": None,
        },
        {
            "id": "two",
            "inputs": [],
            "outputs": [],
            "columns": [],
            "error": "expected a table name but found 'WHERE' at line 1, column 13",
        },
        {
            "id": 3,
            "inputs": [],
            "outputs": [],
            "columns": [],
            "error": "unrecognized statement 'selec' at line 1, column 1",
        },
        {"id": 4, "inputs": ["x"], "outputs": [], "columns": [], "error": None},
        {
            "id": None,
            "inputs": [],
            "outputs": [],
            "columns": [],
            "error": "Invalid JSON line: Expecting value at column 1",
        },
    ]


def test_input_that_is_not_utf8_or_nests_too_deeply_is_named_without_a_traceback(
    tmp_path: Path,
) -> None:
    latin1 = tmp_path / "latin1.sql"
    latin1.write_bytes("INSERT INTO t SELECT 'caf\u00e9' FROM s".encode("latin-1"))
    completed = subprocess.run(
        [str(HEADWATER), "sql-lineage", str(latin1)], capture_output=True, text=True, timeout=60
    )
    assert completed.returncode == 2
    assert completed.stderr == f"headwater sql-lineage: {latin1} is not UTF-8 text: byte 25 is 0xe9\n"
    completed = subprocess.run(
        [str(HEADWATER), "sql-lineage", "--jsonl"],
        input=b'{"id": 1, "sql": "SELECT a FROM s"}\n\xff\n' + b"[" * 100_000 + b"\n",
        capture_output=True,
        timeout=60,
    )
    assert (completed.returncode, completed.stderr) == (0, b"")
    errors = [json.loads(line)["error"] for line in completed.stdout.splitlines()]
    assert errors == [
        None,
        "Line 2 is not UTF-8 text: byte 0 is 0xff",
        "Invalid JSON line: nested too deeply to decode",
    ]


def test_output_cut_short_by_its_reader_ends_quietly() -> None:
    reader = subprocess.Popen(["head", "-c", "1"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    assert reader.stdin is not None
    completed = subprocess.run(
        [str(HEADWATER), "sql-lineage"],
        input="\n".join(f"INSERT INTO t{i} SELECT a FROM s{i};" for i in range(3000)),
        stdout=reader.stdin,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
    )
    reader.stdin.close()
    reader.wait(timeout=10)
    assert completed.returncode == 141
    assert completed.stderr == ""


def test_jsonl_line_without_sql_is_answered_with_an_error() -> None:
    assert lineage_line('{"id": 7}', None) == {
        "id": 7,
        "inputs": [],
        "outputs": [],
        "columns": [],
        "error": 'Expected {"id", "sql"}',
    }


def test_jsonl_line_with_a_dialect_that_is_no_name_is_answered_with_an_error() -> None:
    # It ended the whole stream with a traceback.
    assert lineage_line('{"id": 8, "sql": "SELECT 1", "dialect": 7}', None) == {
        "id": 8,
        "inputs": [],
        "outputs": [],
        "columns": [],
        "error": "Invalid dialect: expected a name, got 7",
    }


# Procedures and blocks -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "dialect", "warning"),
    [
        (
            "CALL ds.refresh_all()",
            "bigquery",
            "call of ds.refresh_all: the lineage of what it runs is not derived at line 1, column 6",
        ),
        (
            "BEGIN\n  EXECUTE IMMEDIATE v_sql;\nEND;",
            "oracle",
            "dynamic SQL: the lineage of the SQL it runs is not derived at line 2, column 3",
        ),
        (
            "CREATE PROCEDURE p() RETURNS STRING LANGUAGE JAVASCRIPT AS $$ return 1; $$",
            "snowflake",
            "the body of this routine is in JAVASCRIPT: its lineage is not derived at line 1, column 1",
        ),
        (
            "INSERT INTO dbo.t (id)\nSELECT id FROM OPENQUERY(ERP, 'SELECT id FROM sales.orders')",
            "tsql",
            "OPENQUERY runs a query on another server: its lineage is not derived at line 1, column 1",
        ),
        (
            "EXEC ('SELECT id FROM sales.orders') AT ERP",
            "tsql",
            "SQL run on linked server ERP: its lineage is not derived at line 1, column 1",
        ),
        (
            "EXECUTE TASK mart.refresh_totals",
            "snowflake",
            "run of task mart.refresh_totals: the lineage of what it runs is not derived at line 1,"
            " column 14",
        ),
        (
            "SELECT * FROM TABLE(RESULT_SCAN(LAST_QUERY_ID()))",
            "snowflake",
            "RESULT_SCAN reads the result of an earlier query: its lineage is not derived at line 1,"
            " column 1",
        ),
        (
            "\\i load_orders.sql\nSELECT 1",
            "postgres",
            "a script run by the client: its lineage is not derived at line 1, column 1",
        ),
        (
            "CREATE TRIGGER t AFTER INSERT ON s FOR EACH ROW EXECUTE FUNCTION audit.log_row()",
            "postgres",
            "call of audit.log_row: the lineage of what it runs is not derived at line 1, column 66",
        ),
        (
            "CREATE PROCEDURE dbo.p AS\nEXEC dbo.load_orders @day = 1",
            "tsql",
            "call of dbo.load_orders: the lineage of what it runs is not derived at line 2, column 6",
        ),
    ],
)
def test_what_a_block_runs_but_sql_does_not_show_is_a_warning(
    sql: str, dialect: str, warning: str
) -> None:
    result = extract_lineage(sql, dialect)
    assert [str(w) for w in result.warnings] == [warning]
    assert result.errors == []


@pytest.mark.parametrize(
    ("sql", "dialect", "warning"),
    [
        (
            "REFRESH MATERIALIZED VIEW CONCURRENTLY rpt.mv_sales",
            "postgres",
            "refresh of materialized view rpt.mv_sales: its query is not in the SQL, so what it"
            " reads is not known at line 1, column 1",
        ),
        (
            "SELECT 1;\n  ALTER DYNAMIC TABLE mart.ltv REFRESH",
            "snowflake",
            "refresh of dynamic table mart.ltv: its query is not in the SQL, so what it reads is"
            " not known at line 2, column 3",
        ),
        (
            "BEGIN\n  DBMS_MVIEW.REFRESH('SALES_MV', 'C');\nEND;",
            "oracle",
            "refresh of materialized view SALES_MV: its query is not in the SQL, so what it reads"
            " is not known at line 2, column 3",
        ),
    ],
)
def test_a_refresh_of_a_view_the_script_did_not_create_warns(
    sql: str, dialect: str, warning: str
) -> None:
    result = extract_lineage(sql, dialect)
    assert [str(w) for w in result.warnings] == [warning]
    assert result.errors == []
    assert result.inputs == []


def test_a_refresh_of_a_view_the_script_created_runs_its_query_without_warning() -> None:
    sql = "CREATE MATERIALIZED VIEW mv AS SELECT a FROM t WITH NO DATA;\nREFRESH MATERIALIZED VIEW mv;"
    result = extract_lineage(sql, "postgres")
    assert (result.inputs, result.outputs, result.warnings) == (["t"], ["mv"], [])
    assert [(c.output, c.inputs) for c in result.columns] == [("mv.a", ["t.a"])]


def test_system_packages_are_no_warning() -> None:
    sql = "BEGIN\n  DBMS_OUTPUT.PUT_LINE('x');\n  INSERT INTO t SELECT a FROM s;\nEND;"
    result = extract_lineage(sql, "oracle")
    assert (result.inputs, result.outputs, result.warnings) == (["s"], ["t"], [])


# A quote never closed inside SQL given as a string (dynamic SQL, a procedure's body), which is
# read only once the string around it has been: an error where the quote is, as at the top level.
UNREADABLE_BODIES = [
    ("oracle", "EXECUTE IMMEDIATE 'SELECT \"a'", 'no closing " for the " at line 1, column 27'),
    ("spark", "EXECUTE IMMEDIATE 'SELECT \"a'", 'no closing " for the " at line 1, column 27'),
    ("snowflake", "EXECUTE IMMEDIATE 'SELECT \"a'", 'no closing " for the " at line 1, column 27'),
    ("bigquery", "EXECUTE IMMEDIATE 'SELECT `a'", "no closing ` for the ` at line 1, column 27"),
    (
        "tsql",
        "EXEC sp_executesql N'INSERT INTO o SELECT [a FROM t'",
        "no closing ] for the ] at line 1, column 43",
    ),
    (
        "postgres",
        'DO $$\nBEGIN\n  INSERT INTO o SELECT "a FROM t;\nEND $$',
        'no closing " for the " at line 3, column 24',
    ),
    (
        "oracle",
        "BEGIN\n  INSERT INTO s SELECT a FROM t;\n  EXECUTE IMMEDIATE 'INSERT INTO o SELECT \"a';\nEND;",
        'no closing " for the " at line 3, column 43',
    ),
]


@pytest.mark.parametrize(("dialect", "sql", "message"), UNREADABLE_BODIES)
def test_a_quote_never_closed_in_a_body_is_an_error_where_it_is(
    dialect: str, sql: str, message: str
) -> None:
    result = extract_lineage(sql, dialect)
    assert [str(e) for e in result.errors] == [message]
    # The statements around it still count.
    assert (result.inputs, result.outputs) == ((["t"], ["s"]) if "INTO s" in sql else ([], []))


def test_a_block_in_another_language_is_a_warning_not_sql() -> None:
    result = extract_lineage("DO $$\n# don't\n$$ LANGUAGE plpython3u", "postgres")
    assert [str(w) for w in result.warnings] == [
        "the body of this block is in plpython3u: its lineage is not derived at line 1, column 1"
    ]
    assert result.errors == []


def test_a_sqlglot_error_nothing_foresaw_is_an_error_not_an_exception(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unforeseen(*_: object) -> None:
        raise SqlglotError("unforeseen")

    monkeypatch.setattr("headwater.sql_lineage.parsing.split_statements", unforeseen)
    assert extract_lineage("INSERT INTO o SELECT a FROM t", "postgres") == SqlLineage(
        errors=[SqlError("the SQL cannot be read")]
    )


def test_cli_jsonl_answers_the_lines_after_an_unreadable_body() -> None:
    lines = [
        {"id": i, "sql": sql, "dialect": dialect}
        for i, (dialect, sql, _) in enumerate(UNREADABLE_BODIES)
    ]
    lines.append({"id": "last", "sql": "INSERT INTO o SELECT a FROM t"})
    answers = [lineage_line(json.dumps(line), None) for line in lines]
    assert [a["error"] for a in answers] == [message for _, _, message in UNREADABLE_BODIES] + [None]
    assert answers[-1]["outputs"] == ["o"]


def test_sqlglot_logs_no_warning_per_statement(caplog: pytest.LogCaptureFixture) -> None:
    # sqlglot keeps CREATE TASK as an opaque command and logged a warning for each: a script of
    # 6,500 of them wrote 720 KB to the server's log.
    with caplog.at_level(logging.DEBUG):
        result = extract_lineage("CREATE TASK k AS INSERT INTO o SELECT 1;" * 50, "snowflake")
    assert result.outputs == ["o"]
    assert [r.getMessage() for r in caplog.records if r.name.startswith("sqlglot")] == []


def test_invalid_sql_in_a_body_is_an_error_where_it_is() -> None:
    sql = "CREATE FUNCTION f() RETURNS void AS $$\nBEGIN\n  INSERT INTO t SELEC 1;\nEND;\n$$ LANGUAGE plpgsql"
    result = extract_lineage(sql, "postgres")
    assert [(e.line, e.highlight) for e in result.errors] == [(3, "SELEC")]


def test_cli_prints_warnings_and_succeeds() -> None:
    completed = _sql_lineage("CALL refresh_all();\nINSERT INTO t SELECT a FROM s;\n")
    assert completed.returncode == 0
    assert completed.stderr == (
        "warning: call of refresh_all: the lineage of what it runs is not derived at line 1, column 6\n"
    )


def test_scripts_read_in_threads_and_after_errors_give_the_answers_they_give_alone() -> None:
    # One tokenizer and one parser per dialect and thread serve every script: what one script
    # leaves in them (an error, a half-read statement) must not reach the next, nor another thread.
    cases = [c for c in CASES if not c.xfail][:120]
    alone = [extract_lineage(c.sql, c.dialect, c.schema) for c in cases]
    broken = ["SELECT 'oops", "INSERT INTO t SELEC 1", "UPDATE t SET", "selec oops"]
    interleaved = []
    for i, c in enumerate(cases):
        extract_lineage(broken[i % len(broken)], c.dialect)
        interleaved.append(extract_lineage(c.sql, c.dialect, c.schema))
    assert interleaved == alone
    with ThreadPoolExecutor(max_workers=4) as pool:
        threaded = list(pool.map(lambda c: extract_lineage(c.sql, c.dialect, c.schema), cases * 3))
    assert threaded == alone * 3


# Nesting that overflowed the 8 MB stack of a thread in sqlglot's compiled parser (SIGSEGV), each
# within the 256 KiB of SQL ingest parses: parentheses, subqueries, a chain of casts.
DEEP_SQL = {
    "parentheses": "INSERT INTO o SELECT * FROM " + "(" * 60_000 + "t" + ")" * 60_000,
    "subqueries": "INSERT INTO o " + "SELECT * FROM (" * 12_000 + "SELECT a FROM t" + ") x" * 12_000,
    "casts": "INSERT INTO o SELECT a" + "::int" * 45_000 + " FROM t",
}


@pytest.mark.parametrize("kind", DEEP_SQL)
def test_deeply_nested_sql_is_an_error_or_lineage_not_a_crash(kind: str) -> None:
    # In a process of its own: a crash would take the test run with it.
    program = (
        "import sys, threading\n"
        "from headwater.sql_lineage import extract_lineage\n"
        "from tests.unit.test_sql_lineage import DEEP_SQL\n"
        "def run():\n"
        f"    result = extract_lineage(DEEP_SQL[{kind!r}], 'spark')\n"
        "    print(len(result.errors), result.outputs)\n"
        # As ingest calls it: from a worker thread of the default stack size.
        "thread = threading.Thread(target=run)\n"
        "thread.start()\n"
        "thread.join()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    errors, outputs = done.stdout.split(" ", 1)
    assert int(errors) <= 1
    assert outputs.strip() in ("['o']", "[]")


# SQL whose lineage took time in the square of its size: a name of 60,000 parts was looked up in
# the schema by each of its suffixes (13.5 s here), and each of 20,000 tables in FROM copied the
# names of those before it (9.6 s). Both are read in well under a second now.
LONG_SQL = {
    "dotted name": "INSERT INTO shop.public.revenue SELECT a FROM " + ".".join(["t"] * 60_000),
    "wide FROM": "INSERT INTO shop.public.revenue SELECT * FROM "
    + ", ".join(f"t{i}" for i in range(20_000)),
}


@pytest.mark.parametrize("kind", LONG_SQL)
def test_long_sql_is_read_in_time_linear_in_its_size(kind: str) -> None:
    started = time.monotonic()
    result = extract_lineage(LONG_SQL[kind], "postgres")
    elapsed = time.monotonic() - started
    assert (result.outputs, result.errors) == (["shop.public.revenue"], [])
    assert elapsed < 4, f"{elapsed:.1f} s"


def test_a_schema_name_of_thousands_of_parts_takes_memory_linear_in_its_length() -> None:
    # Every suffix of it was kept: 30,000 parts took 850 MB, 10,000 (20 KB) about 100 MB.
    name = ".".join(["t"] * 10_000)
    tracemalloc.start()
    try:
        result = extract_lineage("SELECT a FROM t", None, {name: {"a": "int"}})
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.inputs == ["t"]
    assert peak < 10_000_000, f"{peak:,} bytes"


def test_a_name_is_matched_by_the_last_parts_of_a_longer_one_up_to_four() -> None:
    schema = {"db.shop.public.orders": {"id": "int"}}
    for name in ("orders", "shop.public.orders", "x.y.db.shop.public.orders"):
        assert _star_columns(name, schema) == ["o.id"]
    # A name of five parts is matched whole only.
    longer = {"x.srv.db.shop.public.orders": {"id": "int"}}
    assert _star_columns("srv.db.shop.public.orders", longer) == ["o.*"]
    assert _star_columns("x.srv.db.shop.public.orders", longer) == ["o.id"]


def _star_columns(table: str, schema: dict[str, dict[str, str]]) -> list[str]:
    return [
        c.output for c in extract_lineage(f"INSERT INTO o SELECT * FROM {table}", None, schema).columns
    ]


def test_a_union_of_thousands_of_branches_keeps_its_lineage() -> None:
    # A chain of set operations nests a level a branch: walked by recursion, 987 of them reached
    # Python's limit and the statement's lineage was lost.
    sql = "INSERT INTO o " + " UNION ALL ".join(f"SELECT a, b FROM t{i}" for i in range(3_000))
    result = extract_lineage(sql, "postgres")
    assert result.errors == []
    assert len(result.inputs) == 3_000
    assert [(c.output, len(c.inputs)) for c in result.columns] == [("o.a", 3_000), ("o.b", 3_000)]


def test_a_union_by_name_or_of_other_widths_lines_up_columns_by_name() -> None:
    sql = (
        "INSERT INTO o SELECT a, b FROM x UNION SELECT c FROM y "
        "UNION ALL BY NAME SELECT b, a FROM z UNION ALL SELECT d, e, f FROM w"
    )
    result = extract_lineage(sql, "duckdb")
    assert [(c.output, c.inputs) for c in result.columns] == [
        ("o.a", ["w.d", "x.a", "z.a"]),
        ("o.b", ["w.e", "x.b", "z.b"]),
        ("o.c", ["w.f", "y.c"]),
    ]
