"""Column lineage from recorded Spark plan JSON (no JVM needed).

The fixtures come from ``record_plans.py``: the analyzed plan of one QueryExecutionListener callback
and the datasets the JVM resolved for its relations, keyed by their first attribute id.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from headwater_spark.plan import (
    LineageGraph,
    column_lineage,
    command_query,
    output,
    parse_column_names,
    parse_plan,
    relations,
    schema_field,
    subquery_holders,
)

pytestmark = pytest.mark.spark

FIXTURES = Path(__file__).parent / "fixtures" / "plans"
BASE = "/tmp/headwater-spark-fixtures"
EMP = f"{BASE}/emp.csv"
DEPT = f"{BASE}/dept"
TOTALS = f"{BASE}/warehouse/dept_totals"


def load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def lineage_of(name: str) -> dict[str, dict[str, list[str]]]:
    """{output column: {"<dataset path>.<column>": ["DIRECT:IDENTITY", ...]}} of a fixture."""
    fixture = load(name)
    root = parse_plan(fixture["plan"])
    query = command_query(root) or root
    resolved = {int(k): [tuple(d) for d in v] for k, v in fixture["relations"].items()}
    graph = LineageGraph.build(query, lambda rel: resolved.get(rel.key))
    outs = output(query)
    names = parse_column_names(root.data.get("outputColumnNames")) or [a.name for a in outs]
    result = column_lineage(graph, [(n, a.expr_id) for n, a in zip(names, outs, strict=True)])
    return {
        column: {
            f"{f.dataset[1]}.{f.field}": [
                f"{t.type}:{t.subtype}{':masked' if t.masking else ''}" for t in f.transformations
            ]
            for f in fields
        }
        for column, fields in result.items()
    }


JOINED_AGG = {
    "dept_name": {
        f"{DEPT}.dept_id": ["INDIRECT:JOIN"],
        f"{DEPT}.dept_name": ["DIRECT:IDENTITY", "INDIRECT:GROUP_BY"],
        f"{EMP}.dept_id": ["INDIRECT:JOIN"],
        f"{EMP}.salary": ["INDIRECT:FILTER"],
    },
    "total": {
        f"{DEPT}.dept_id": ["INDIRECT:JOIN"],
        f"{DEPT}.dept_name": ["INDIRECT:GROUP_BY"],
        f"{EMP}.dept_id": ["INDIRECT:JOIN"],
        f"{EMP}.salary": ["DIRECT:AGGREGATION", "INDIRECT:FILTER"],
    },
    "n": {
        f"{DEPT}.dept_id": ["INDIRECT:JOIN"],
        f"{DEPT}.dept_name": ["INDIRECT:GROUP_BY"],
        f"{EMP}.dept_id": ["INDIRECT:JOIN"],
        f"{EMP}.salary": ["INDIRECT:FILTER"],
    },
}


@pytest.mark.parametrize(
    "fixture",
    [
        "save_as_table-1-InsertIntoHadoopFsRelationCommand",
        "save_as_table-2-CreateDataSourceTableAsSelectCommand",
        "save_as_table-3-SaveAsV1TableCommand",
    ],
)
def test_join_filter_aggregate_through_each_nested_execution(fixture: str) -> None:
    # saveAsTable reports three callbacks (file source write, CTAS, SaveAsV1Table); each one's plan
    # (a child or an inline query) gives the same lineage.
    assert lineage_of(fixture) == JOINED_AGG


def test_ctas_with_join_function_and_lateral_view() -> None:
    join = {f"{DEPT}.dept_name": ["INDIRECT:JOIN"], f"{TOTALS}.dept_name": ["INDIRECT:JOIN"]}
    assert lineage_of("ctas-2-CreateDataSourceTableAsSelectCommand") == {
        "dept_id": {f"{DEPT}.dept_id": ["DIRECT:IDENTITY"], **join},
        "uname": {**join, f"{DEPT}.dept_name": ["DIRECT:TRANSFORMATION", "INDIRECT:JOIN"]},
        "total": {**join, f"{TOTALS}.total": ["DIRECT:IDENTITY"]},
        "flag": {
            f"{DEPT}.dept_id": ["DIRECT:TRANSFORMATION"],
            f"{TOTALS}.n": ["DIRECT:TRANSFORMATION"],
            **join,
        },
    }
    assert lineage_of("ctas-1-InsertIntoHadoopFsRelationCommand") == lineage_of(
        "ctas-2-CreateDataSourceTableAsSelectCommand"
    )


def test_insert_select_with_filter_and_sort() -> None:
    assert lineage_of("insert_select-1-InsertIntoHadoopFsRelationCommand") == {
        "dept_name": {
            f"{TOTALS}.dept_name": ["DIRECT:IDENTITY"],
            f"{TOTALS}.n": ["INDIRECT:FILTER"],
            f"{TOTALS}.total": ["INDIRECT:SORT"],
        },
        "total": {
            f"{TOTALS}.n": ["INDIRECT:FILTER"],
            f"{TOTALS}.total": ["DIRECT:TRANSFORMATION", "INDIRECT:SORT"],
        },
        "n": {
            f"{TOTALS}.n": ["DIRECT:IDENTITY", "INDIRECT:FILTER"],
            f"{TOTALS}.total": ["INDIRECT:SORT"],
        },
    }


def test_window_partition_and_order_keys_are_indirect_for_window_columns_only() -> None:
    window = {f"{EMP}.dept_id": ["INDIRECT:WINDOW"], f"{EMP}.id": ["INDIRECT:WINDOW"]}
    assert lineage_of("window-1-InsertIntoHadoopFsRelationCommand") == {
        "id": {f"{EMP}.id": ["DIRECT:IDENTITY"]},
        "name": {f"{EMP}.name": ["DIRECT:IDENTITY"]},
        "dept_id": {f"{EMP}.dept_id": ["DIRECT:IDENTITY"]},
        "salary": {f"{EMP}.salary": ["DIRECT:IDENTITY"]},
        "running": {**window, f"{EMP}.salary": ["DIRECT:AGGREGATION"]},
        "rank": window,
    }


def test_union_maps_positions_of_every_branch() -> None:
    assert lineage_of("union-1-InsertIntoHadoopFsRelationCommand") == {
        "key": {f"{DEPT}.dept_id": ["DIRECT:IDENTITY"], f"{EMP}.id": ["DIRECT:IDENTITY"]},
        "name": {f"{DEPT}.dept_name": ["DIRECT:IDENTITY"], f"{EMP}.name": ["DIRECT:IDENTITY"]},
    }


def test_case_when_condition_is_indirect_and_hashing_masks() -> None:
    # "one" is a literal: no input column, so it is left out.
    assert lineage_of("case_when_masking-1-InsertIntoHadoopFsRelationCommand") == {
        "band": {f"{EMP}.name": ["DIRECT:TRANSFORMATION"], f"{EMP}.salary": ["INDIRECT:CONDITIONAL"]},
        "name_hash": {f"{EMP}.name": ["DIRECT:TRANSFORMATION:masked"]},
    }


def test_rollup_through_expand() -> None:
    assert lineage_of("rollup-1-InsertIntoHadoopFsRelationCommand") == {
        "dept_id": {f"{EMP}.dept_id": ["DIRECT:IDENTITY", "INDIRECT:GROUP_BY"]},
        "top": {f"{EMP}.dept_id": ["INDIRECT:GROUP_BY"], f"{EMP}.salary": ["DIRECT:AGGREGATION"]},
        "n": {f"{EMP}.dept_id": ["INDIRECT:GROUP_BY"]},
    }


def test_scalar_and_in_subqueries() -> None:
    in_filter = {f"{DEPT}.dept_id": ["INDIRECT:FILTER"], f"{EMP}.dept_id": ["INDIRECT:FILTER"]}
    assert lineage_of("subquery-1-InsertIntoHadoopFsRelationCommand") == {
        "id": {**in_filter, f"{EMP}.id": ["DIRECT:IDENTITY"]},
        "best": {**in_filter, f"{TOTALS}.total": ["DIRECT:AGGREGATION"]},
    }
    fixture = load("subquery-1-InsertIntoHadoopFsRelationCommand")
    query = command_query(parse_plan(fixture["plan"]))
    assert query is not None
    # The relations inside the subquery expressions are found, and where their holder sits.
    found = [(r.in_subquery, r.table) for r in relations(query)]
    assert found == [(True, ("spark_catalog", "default", "dept_totals")), (True, None), (False, None)]
    assert subquery_holders(query) == [(), (0,)]


def test_failed_write_still_has_its_plan() -> None:
    fixture = load("failed_write-1-InsertIntoHadoopFsRelationCommand")
    assert fixture["failed"] is True
    assert lineage_of("failed_write-1-InsertIntoHadoopFsRelationCommand") == {
        "ok": {f"{EMP}.salary": ["INDIRECT:CONDITIONAL"]},
        "id": {f"{EMP}.id": ["DIRECT:IDENTITY"]},
    }


def test_analysis_failure_has_only_the_unresolved_plan() -> None:
    fixture = load("analysis_failure-1-InsertIntoStatement")
    root = parse_plan(fixture["plan"])
    assert root.name == "InsertIntoStatement"
    assert relations(root) == []


def test_read_only_action_relations_and_schema() -> None:
    fixture = load("collect-1-Project")
    root = parse_plan(fixture["plan"])
    rels = relations(root)
    assert [[tuple(d) for d in fixture["relations"][str(r.key)]] for r in rels] == [
        [("file", EMP)],
        [("file", DEPT)],
    ]
    assert [schema_field(a.name, a.data_type) for a in rels[0].attributes] == [
        {"name": "id", "type": "integer"},
        {"name": "name", "type": "string"},
        {"name": "dept_id", "type": "integer"},
        {"name": "salary", "type": "integer"},
    ]


def test_nested_schema_fields() -> None:
    struct = {
        "type": "struct",
        "fields": [
            {"name": "a", "type": "long"},
            {"name": "tags", "type": {"type": "array", "elementType": "string"}},
            {
                "name": "kv",
                "type": {
                    "type": "map",
                    "keyType": "string",
                    "valueType": {"type": "struct", "fields": [{"name": "x", "type": "double"}]},
                },
            },
        ],
    }
    assert schema_field("s", struct) == {
        "name": "s",
        "type": "struct",
        "fields": [
            {"name": "a", "type": "long"},
            {"name": "tags", "type": "array"},
            {"name": "kv", "type": "map", "fields": [{"name": "x", "type": "double"}]},
        ],
    }


def test_output_column_names_parsing() -> None:
    assert parse_column_names("[a, b, c]") == ["a", "b", "c"]
    assert parse_column_names("[]") == []
    assert parse_column_names(["x"]) == ["x"]
    assert parse_column_names(None) is None
