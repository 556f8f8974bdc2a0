"""Score Headwater's SQL lineage and openlineage-sql side by side on the fixture corpus.

Prints a markdown table: the share of cases whose inputs and outputs match exactly (table level),
the share whose column edges match exactly (column level), and statements per second in one
process. Needs the [bench] extra for openlineage-sql, which prints a Rust panic
to stderr for some statements (scored as an empty result).

    .venv/bin/python tests/benchmarks/sql_lineage.py [--repeat 5] [--failures] [--blind] [--cpu-time]
        [--by-dialect] [--by-file]

`--by-dialect` and `--by-file` add Headwater's exact-match rates per dialect and per corpus file
(each file is one construct or dialect).

On a machine shared with other work, `--cpu-time` times the runs by this process' CPU time
instead of the wall clock, so that other processes' load does not count.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fixtures.sql.cases import BLIND_DIR, SQL_DIR, Case, load_cases

from headwater.sql_lineage import extract_lineage
from headwater.sql_lineage.parsing import parse_script

Result = dict[str, Any]


def headwater(case: Case) -> Result:
    """Headwater's lineage of one case, in the corpus' shape."""
    return extract_lineage(case.sql, case.dialect, case.schema).to_dict()


def openlineage_sql(case: Case) -> Result:
    """openlineage-sql's lineage of one case, in the corpus' shape, given every benefit of the doubt.

    Its column lineage names the query's columns, not the target's, and leaves their table
    unknown: those are credited to the statement's output table when there is exactly one.
    """
    from openlineage_sql import parse

    try:
        meta = parse([case.sql], dialect=case.dialect or "generic", default_schema=None)
    except BaseException as error:
        # openlineage-sql panics in Rust on some input, which pyo3 raises as a BaseException.
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        return {"inputs": [], "outputs": [], "columns": []}
    outputs = sorted({t.qualified_name for t in meta.out_tables})
    columns: dict[str, set[str]] = {}
    for edge in meta.column_lineage:
        origin = edge.descendant.origin
        table = origin.qualified_name if origin else (outputs[0] if len(outputs) == 1 else None)
        if table is None:
            continue
        sources = {f"{c.origin.qualified_name}.{c.name}" if c.origin else c.name for c in edge.lineage}
        columns.setdefault(f"{table}.{edge.descendant.name}", set()).update(sources)
    return {
        "inputs": sorted({t.qualified_name for t in meta.in_tables}),
        "outputs": outputs,
        "columns": [{"output": o, "inputs": sorted(i)} for o, i in sorted(columns.items()) if i],
    }


def _tables(result: Result) -> tuple[frozenset[str], frozenset[str]]:
    return frozenset(result["inputs"]), frozenset(result["outputs"])


def _columns(result: Result) -> frozenset[tuple[str, frozenset[str]]]:
    return frozenset((c["output"], frozenset(c["inputs"])) for c in result["columns"])


def score(
    tool: Callable[[Case], Result],
    cases: list[Case],
    repeat: int,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, Any]:
    """Exact-match rates at table and column level, and the best of `repeat` timed runs."""
    results = [tool(case) for case in cases]
    best = float("inf")
    for _ in range(repeat):
        start = clock()
        for case in cases:
            tool(case)
        best = min(best, clock() - start)
    tables = [_tables(r) == _tables(c.expected) for r, c in zip(results, cases, strict=True)]
    columns = [_columns(r) == _columns(c.expected) for r, c in zip(results, cases, strict=True)]
    return {
        "tables": sum(tables) / len(cases),
        "columns": sum(columns) / len(cases),
        "per_case": list(zip(cases, tables, columns, strict=True)),
        "seconds": best,
        "failures": [
            (c, r) for c, r, t, k in zip(cases, results, tables, columns, strict=True) if not (t and k)
        ],
    }


def main(argv: list[str] | None = None) -> int:
    """Run both tools over the corpus and print the comparison table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per tool; the best counts")
    parser.add_argument("--failures", action="store_true", help="list Headwater's mismatching cases")
    parser.add_argument(
        "--blind", action="store_true", help="score the blind cases (fixtures/sql/blind) instead"
    )
    parser.add_argument(
        "--cpu-time", action="store_true", help="time by this process' CPU time, not the wall clock"
    )
    parser.add_argument("--by-dialect", action="store_true", help="Headwater's rates per dialect")
    parser.add_argument("--by-file", action="store_true", help="Headwater's rates per corpus file")
    args = parser.parse_args(argv)
    clock = time.process_time if args.cpu_time else time.perf_counter
    logging.getLogger("sqlglot").setLevel(logging.ERROR)

    cases = load_cases(BLIND_DIR if args.blind else SQL_DIR)
    statements = sum(max(1, len(parse_script(c.sql, c.dialect).statements)) for c in cases)
    print(f"{len(cases)} cases, {statements} statements; {_sqlglot()}\n")
    print("| tool | table level (exact) | column level (exact) | statements/s |")
    print("| --- | ---: | ---: | ---: |")
    scores = {}
    for name, tool in (("Headwater", headwater), ("openlineage-sql", openlineage_sql)):
        scores[name] = s = score(tool, cases, args.repeat, clock)
        rate = statements / s["seconds"]
        print(f"| {name} | {s['tables']:.1%} | {s['columns']:.1%} | {rate:,.0f} |")
    if args.by_dialect:
        _print_groups("dialect", scores["Headwater"]["per_case"], lambda c: c.dialect or "generic")
    if args.by_file:
        _print_groups("file", scores["Headwater"]["per_case"], lambda c: c.id.rsplit(":", 1)[0])
    if args.failures:
        for case, result in scores["Headwater"]["failures"]:
            print(f"\n{case.id} ({case.dialect}){' xfail: ' + case.xfail if case.xfail else ''}")
            print(f"  expected {case.expected}\n  got      {result}")
    return 0


def _sqlglot() -> str:
    """The sqlglot the figures are for: its tokenizer and parser compiled (sqlglotc) or not."""
    import sqlglot
    from sqlglot.tokens import SQLGLOTC_INSTALLED

    build = "compiled by mypyc (sqlglotc)" if SQLGLOTC_INSTALLED else "pure Python"
    return f"sqlglot {sqlglot.__version__}, {build}"


def _print_groups(
    title: str, per_case: list[tuple[Case, bool, bool]], group: Callable[[Case], str]
) -> None:
    """Headwater's exact-match rates for each group of cases, largest group first."""
    groups: dict[str, list[tuple[bool, bool]]] = {}
    for case, table, column in per_case:
        groups.setdefault(group(case), []).append((table, column))
    print(f"\n| {title} | cases | table level (exact) | column level (exact) |")
    print("| --- | ---: | ---: | ---: |")
    for name, results in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0])):
        tables = sum(t for t, _ in results) / len(results)
        columns = sum(c for _, c in results) / len(results)
        print(f"| {name} | {len(results)} | {tables:.1%} | {columns:.1%} |")


if __name__ == "__main__":
    sys.exit(main())
