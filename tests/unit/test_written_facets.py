"""WrittenFacets: within one ingest transaction, facets a dataset is known to hold are not sent again,
and what it holds is learned only from upserts that leave a reported facet as reported."""

from __future__ import annotations

import datetime as dt

from headwater.store.datasets import DatasetUpsert, WrittenFacets

T = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
SCHEMA = {"fields": [{"name": "id", "type": "int"}]}
LINEAGE = {"fields": {"id": {"inputFields": []}}}


def upsert(facets: dict, deleted: list[str] | None = None) -> DatasetUpsert:
    return DatasetUpsert("warehouse", "orders", None, None, facets, deleted or [])


def test_facets_a_later_or_equal_report_left_are_not_sent_again():
    written = WrittenFacets()
    first = upsert({"schema": SCHEMA, "columnLineage": LINEAGE})
    assert written.unsent(first) is first  # nothing known yet
    # The row's facets dated at the report's time (it was rewritten, or already held them as of
    # an earlier time): every reported facet is held as reported.
    written.learn(first, T, T)
    again = upsert({"schema": SCHEMA, "columnLineage": LINEAGE, "symlinks": {"identifiers": []}})
    assert written.unsent(again).facets == {"symlinks": {"identifiers": []}}
    written.learn(upsert({"schema": SCHEMA}), T + dt.timedelta(minutes=1), T)
    assert written.unsent(upsert({"schema": SCHEMA})).facets == {}


def test_a_changed_value_is_sent():
    written = WrittenFacets()
    written.learn(upsert({"schema": SCHEMA}), T, T)
    wider = {"fields": [{"name": "id", "type": "int"}, {"name": "total", "type": "int"}]}
    assert written.unsent(upsert({"schema": wider})).facets == {"schema": wider}


def test_values_are_compared_as_json_not_as_python():
    written = WrittenFacets()
    written.learn(upsert({"flag": {"on": 1}}), T, T)
    # true == 1 in Python, not in JSON.
    assert written.unsent(upsert({"flag": {"on": True}})).facets == {"flag": {"on": True}}


def test_an_earlier_report_teaches_nothing_and_keeps_what_is_known():
    written = WrittenFacets()
    written.learn(upsert({"schema": SCHEMA}), T, T)
    # Reported at T - 1 h into facets dated T: the stored values won, whatever was reported.
    older = {"fields": []}
    written.learn(upsert({"schema": older, "columnLineage": LINEAGE}), T - dt.timedelta(hours=1), T)
    assert written.unsent(upsert({"schema": SCHEMA})).facets == {}
    assert written.unsent(upsert({"schema": older})).facets == {"schema": older}
    assert written.unsent(upsert({"columnLineage": LINEAGE})).facets == {"columnLineage": LINEAGE}


def test_unknown_facet_time_teaches_nothing():
    written = WrittenFacets()
    written.learn(upsert({"schema": SCHEMA}), T, None)
    assert written.unsent(upsert({"schema": SCHEMA})).facets == {"schema": SCHEMA}


def test_a_deleted_facet_is_no_longer_held():
    written = WrittenFacets()
    written.learn(upsert({"schema": SCHEMA, "columnLineage": LINEAGE}), T, T)
    written.learn(upsert({}, deleted=["columnLineage"]), T + dt.timedelta(minutes=1), T)
    assert written.unsent(upsert({"columnLineage": LINEAGE})).facets == {"columnLineage": LINEAGE}
    assert written.unsent(upsert({"schema": SCHEMA})).facets == {}


def test_datasets_are_told_apart():
    written = WrittenFacets()
    written.learn(upsert({"schema": SCHEMA}), T, T)
    other = DatasetUpsert("warehouse", "rates", None, None, {"schema": SCHEMA}, [])
    assert written.unsent(other) is other
