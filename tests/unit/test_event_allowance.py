"""What one event may make Headwater write: its datasets, schema fields and column edges."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from headwater.errors import InvalidEventError
from headwater.ingest.facets import ColumnLineageFacet
from headwater.ingest.normalize import (
    MAX_EVENT_COLUMN_EDGES,
    MAX_EVENT_FIELDS,
    column_edge_count,
    column_edges,
    normalize_event,
)
from headwater.ingest.service import MAX_WARNINGS, prepare_events
from headwater.ingest.validate import MAX_EVENT_DATASETS, validate_event
from tests.factories import run_event


def schema(*names: str) -> dict[str, Any]:
    return {"fields": [{"name": n, "type": "string"} for n in names]}


def dataset(name: str, **facets: Any) -> dict[str, Any]:
    return {"namespace": "warehouse", "name": name, "facets": facets}


def source(name: str, field: str, *types: str) -> dict[str, Any]:
    return {
        "namespace": "warehouse",
        "name": name,
        "field": field,
        "transformations": [{"type": t} for t in types],
    }


def event(inputs: list[Any], outputs: list[Any]) -> dict[str, Any]:
    e = run_event("load")
    e["inputs"], e["outputs"] = inputs, outputs
    return e


def test_an_event_naming_too_many_datasets_is_refused_saying_how_many():
    inputs = [dataset(f"in{i}") for i in range(MAX_EVENT_DATASETS)]
    validate_event(event(inputs, []))  # at the limit: taken
    with pytest.raises(InvalidEventError) as refused:
        validate_event(event(inputs, [dataset("one more")]))
    [error] = refused.value.errors
    assert error.path == "$"
    assert error.message == (
        f"names {MAX_EVENT_DATASETS:,} inputs and 1 outputs; one event may name at most "
        f"{MAX_EVENT_DATASETS:,} datasets (send the rest in more events of the same run)"
    )


def test_dataset_level_inputs_count_once_for_each_field_they_apply_to():
    lineage = {
        "fields": {
            "a": {"inputFields": [source("s", "x", "DIRECT", "INDIRECT"), source("s", "y")]},
            "b": {"inputFields": [source("s", "x", "DIRECT")]},
        },
        "dataset": [source("s", "f1", "INDIRECT"), source("s", "f2", "INDIRECT")],
    }
    output = dataset("out", schema=schema("a", "b"), columnLineage=lineage)
    n = normalize_event(validate_event(event([dataset("s")], [output])))
    [out] = n.outputs
    # a: x twice (two transformations) and y; b: x; then f1 and f2 for each of a and b.
    assert len(out.column_edges) == 3 + 1 + 2 * 2
    facet = msgspec.convert(lineage, ColumnLineageFacet)
    assert column_edge_count(facet, out.fields) == len(column_edges(facet, out.fields)) == 8


def test_a_column_lineage_facet_that_would_make_too_many_edges_is_ignored_with_a_warning():
    # 300 fields from 300 dataset-level inputs: a 49 KB event, 90,000 column edges.
    names = [f"c{i}" for i in range(300)]
    lineage = {"fields": {}, "dataset": [source("s", f"s{k}", "INDIRECT") for k in range(300)]}
    output = dataset("out", schema=schema(*names), columnLineage=lineage)
    n = normalize_event(validate_event(event([dataset("s")], [output])))
    [out] = n.outputs
    assert out.column_edges == []
    assert [f.name for f in out.fields or []] == names  # the schema stays
    [warning] = n.warnings
    assert warning.path == "$.outputs[0].facets.columnLineage"
    assert warning.message == (
        f"facet ignored: it makes 90,000 column edges (its dataset-level inputs apply to each of "
        f"its fields), more than the {MAX_EVENT_COLUMN_EDGES:,} left of the "
        f"{MAX_EVENT_COLUMN_EDGES:,} one event may make"
    )
    # The table-level lineage is there.
    assert [(d.namespace, d.name) for d in n.inputs] == [("warehouse", "s")]


def test_the_share_is_the_events_not_each_facets():
    half = MAX_EVENT_COLUMN_EDGES // 2 + 1
    lineage = {"fields": {"a": {"inputFields": [source("s", f"x{i}") for i in range(half)]}}}
    first = dataset("first", schema=schema("a"), columnLineage=lineage)
    second = dataset("second", schema=schema("a"), columnLineage=lineage)
    wide = [f"c{i}" for i in range(MAX_EVENT_FIELDS // 2 + 1)]
    n = normalize_event(
        validate_event(
            event(
                [
                    dataset("s"),
                    dataset("wide1", schema=schema(*wide)),
                    dataset("wide2", schema=schema(*wide)),
                ],
                [first, second],
            )
        )
    )
    assert len(n.outputs[0].column_edges) == half
    assert n.outputs[1].column_edges == []
    assert n.inputs[1].fields is not None
    assert n.inputs[2].fields is None
    assert [w.path for w in n.warnings] == [
        "$.inputs[2].facets.schema",
        "$.outputs[1].facets.columnLineage",
    ]
    assert n.warnings[0].message == (
        f"facet ignored: its {len(wide):,} fields are more than the "
        f"{MAX_EVENT_FIELDS - len(wide):,} left of the {MAX_EVENT_FIELDS:,} one event's schemas may hold"
    )


def test_warnings_past_a_hundred_are_counted_in_the_last():
    # 150 schemas past the event's share: one warning each.
    wide = [f"c{i}" for i in range(MAX_EVENT_FIELDS)]
    inputs = [dataset("wide", schema=schema(*wide))]
    inputs += [dataset(f"t{i}", schema=schema("a")) for i in range(150)]
    [prepared] = prepare_events([validate_event(event(inputs, []))], [])
    warnings = prepared.normalized.warnings
    assert len(warnings) == MAX_WARNINGS
    assert [w.path for w in warnings[:2]] == ["$.inputs[1].facets.schema", "$.inputs[2].facets.schema"]
    assert (warnings[-1].path, warnings[-1].message) == ("$", "51 more warnings not listed")
