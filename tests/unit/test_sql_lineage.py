"""SQL lineage: the fixture corpus case by case, errors with positions, dialect names, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import FrozenInstanceError
from pathlib import Path

import pytest

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


def test_parse_error_has_line_col_and_highlight() -> None:
    result = extract_lineage("SELECT a\nFROM t\nWHERE x = = 1", "postgres")
    assert result.errors == [
        SqlError(
            message="Required keyword: 'expression' missing for <class 'sqlglot.expressions.core.EQ'>",
            line=3,
            col=11,
            highlight="=",
        )
    ]


def test_bad_statement_costs_only_itself() -> None:
    result = extract_lineage(
        "INSERT INTO a SELECT x FROM s;\nSELECT FROM WHERE;\nINSERT INTO b SELECT y FROM u", "trino"
    )
    assert result.to_dict() == {
        "inputs": ["s", "u"],
        "outputs": ["a", "b"],
        "columns": [{"output": "a.x", "inputs": ["s.x"]}, {"output": "b.y", "inputs": ["u.y"]}],
    }
    assert [(e.line, e.col) for e in result.errors] == [(2, 17)]


def test_unterminated_string_is_located_and_earlier_statements_kept() -> None:
    result = extract_lineage("INSERT INTO a SELECT x FROM s;\nSELECT 'oops FROM t", None)
    assert result.to_dict()["outputs"] == ["a"]
    assert [(e.line, e.col) for e in result.errors] == [(2, 8)]
    assert result.errors[0].message.startswith("Cannot tokenize")


def test_unsupported_writing_statement_is_an_error_not_silence() -> None:
    # sqlglot keeps UNLOAD as an opaque command; without its TO clause it cannot be rebuilt.
    result = extract_lineage("SELECT 1;\n  UNLOAD ('SELECT a FROM s')", "redshift")
    assert result.errors == [
        SqlError("Unsupported syntax in UNLOAD statement", line=2, col=8, highlight="UNLOAD")
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
        "\x00\x01",
    ],
)
def test_statements_without_lineage_give_empty_results(sql: str) -> None:
    result = extract_lineage(sql, "snowflake")
    assert (result.inputs, result.outputs, result.columns) == ([], [], [])


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


def test_truncated_statements_never_raise() -> None:
    internal = []
    for case in CASES:
        sql = case.sql
        for cut in (len(sql) // 3, len(sql) // 2, 2 * len(sql) // 3):
            for part in (sql[:cut], sql[cut:]):
                result = extract_lineage(part, case.dialect)
                internal += [e for e in result.errors if e.message.startswith("Cannot extract")]
    assert internal == []


def test_error_converts_to_text_with_its_position() -> None:
    assert str(SqlError("Unexpected token", 2, 5, "x")) == "Line 2, Col 5: Unexpected token"
    assert str(SqlError("Cannot tokenize")) == "Cannot tokenize"


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


def test_cli_reports_bad_sql_on_stderr_and_exits_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "bad.sql"
    script.write_text("SELECT 1 +", encoding="utf-8")
    assert main(["sql-lineage", str(script)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"inputs": [], "outputs": [], "columns": []}
    assert "Line 1, Col 10" in captured.err


def test_cli_missing_file_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sql-lineage", str(tmp_path / "missing.sql")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_cli_jsonl_answers_every_line_in_one_process() -> None:
    lines = [
        {"id": 1, "sql": "INSERT INTO t SELECT a FROM s", "dialect": "sparksql"},
        {"id": "two", "sql": "SELECT FROM WHERE"},
        {"id": 3, "sql": "SELECT * FROM x", "dialect": "mariadb"},
    ]
    stdin = "\n".join(json.dumps(line) for line in lines) + "\nnot json\n"
    completed = subprocess.run(
        [str(HEADWATER), "sql-lineage", "--jsonl", "--dialect", "trino", "-"],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert completed.returncode == 0
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
            "error": "Line 1, Col 17: Expected table name but got WHERE",
        },
        {"id": 3, "inputs": ["x"], "outputs": [], "columns": [], "error": None},
        {
            "id": None,
            "inputs": [],
            "outputs": [],
            "columns": [],
            "error": "Invalid JSON line: Expecting value at column 1",
        },
    ]


def test_jsonl_line_without_sql_is_answered_with_an_error() -> None:
    assert lineage_line('{"id": 7}', None) == {
        "id": 7,
        "inputs": [],
        "outputs": [],
        "columns": [],
        "error": 'Expected {"id", "sql"}',
    }
