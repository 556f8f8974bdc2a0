"""Node ids split into the (namespace, name) or (namespace, dataset, field) pairs the store may hold:
only splits whose parts fit the lengths ingest stores, so that a URL full of colons costs little."""

from __future__ import annotations

import time

import pytest

from headwater.errors import InvalidNodeIdError
from headwater.lineage.node_ids import (
    MAX_FIELD_ID_SPLITS,
    MAX_NAME_BYTES,
    MAX_NAMESPACE_BYTES,
    parse_field_id,
    parse_node_id,
)


def test_every_split_of_a_node_id_is_a_candidate():
    parsed = parse_node_id("dataset:postgres://db:5432:shop.public.orders")
    assert parsed.node_type == "DATASET"
    assert parsed.candidates == [
        ("postgres", "//db:5432:shop.public.orders"),
        ("postgres://db", "5432:shop.public.orders"),
        ("postgres://db:5432", "shop.public.orders"),
    ]
    assert parse_field_id("datasetField:ns:a:b:c").candidates == [
        ("ns", "a", "b:c"),
        ("ns", "a:b", "c"),
        ("ns:a", "b", "c"),
    ]


def test_only_splits_whose_parts_fit_what_ingest_stores_are_tried():
    namespace, name = "n" * MAX_NAMESPACE_BYTES, "m" * MAX_NAME_BYTES
    assert parse_node_id(f"job:{namespace}:{name}").candidates == [(namespace, name)]
    # The second colon would make the namespace too long.
    assert parse_node_id(f"job:{namespace}:a:{name[2:]}").candidates == [(namespace, f"a:{name[2:]}")]
    # One byte more in the namespace, or in the name, and nothing stored can have the id.
    for too_long in (f"job:{namespace}x:y", f"job:x:{name}y"):
        with pytest.raises(InvalidNodeIdError) as refused:
            parse_node_id(too_long)
        assert "(a namespace is at most 1,024 bytes in UTF-8 and a name 1,536)" in refused.value.message


def test_limits_count_utf8_bytes_not_characters():
    wide = "é" * 600  # 600 characters, 1,200 bytes: too long for a namespace, not for a name
    assert parse_node_id(f"job:x:{wide}").candidates == [("x", wide)]
    assert parse_node_id(f"job:a:{wide}:y").candidates == [("a", f"{wide}:y")]
    with pytest.raises(InvalidNodeIdError):
        parse_node_id(f"job:{wide}:x:y")


def test_an_id_longer_than_any_node_is_refused_at_once_quoting_only_its_start():
    started = time.perf_counter()
    with pytest.raises(InvalidNodeIdError) as refused:
        parse_node_id("job:" + "a:" * 16_000 + "b")
    assert time.perf_counter() - started < 0.05
    assert refused.value.message == (
        "Invalid node id 'job:" + ("a:" * 100)[:196] + "…' (32,005 characters): it is 32,005 "
        "characters long, longer than any node's (a namespace is at most 1,024 bytes in UTF-8 and a "
        "name 1,536)."
    )


def test_a_field_id_of_many_colons_is_refused_past_a_number_of_splits():
    # 39 colons: 741 splits (one per pair of colons), each looked up; 100 colons would be 4,950.
    assert len(parse_field_id("datasetField:" + "a:" * 39 + "b").candidates) == 741
    started = time.perf_counter()
    with pytest.raises(InvalidNodeIdError) as refused:
        parse_field_id("datasetField:" + "a:" * 800 + "b")
    assert time.perf_counter() - started < 0.05
    assert (
        f"splits into a namespace, a dataset and a field in more than {MAX_FIELD_ID_SPLITS:,} ways"
        in refused.value.message
    )
