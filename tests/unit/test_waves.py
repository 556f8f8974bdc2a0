"""plan_waves: events that share no row are written together; those that do keep their order."""

from __future__ import annotations

import datetime as dt
from typing import Any

from headwater.ingest.normalize import NormalizedEvent, normalize_event
from headwater.ingest.validate import validate_event
from headwater.ingest.waves import plan_waves
from tests.factories import dataset, parent_facet, run_event


def normalized(*events: dict[str, Any]) -> list[NormalizedEvent]:
    return [normalize_event(validate_event(e)) for e in events]


def source(uri: str | None) -> dict[str, Any]:
    facet: dict[str, Any] = {
        "_producer": "p",
        "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/DatasourceDatasetFacet.json",
        "name": "warehouse",
    }
    if uri is not None:
        facet["uri"] = uri
    return facet


def test_events_of_unrelated_jobs_share_a_wave_and_a_run_keeps_its_order():
    events = normalized(
        run_event("a", "START", run_id="00000000-0000-0000-0000-00000000000a", outputs=["ta"]),
        run_event("b", "START", run_id="00000000-0000-0000-0000-00000000000b", outputs=["tb"]),
        run_event("a", "COMPLETE", run_id="00000000-0000-0000-0000-00000000000a", outputs=["ta"]),
        run_event("c", "COMPLETE", outputs=["tc"]),
    )
    assert plan_waves(events, [], {}) == [[0, 1, 3], [2]]


def test_a_dataset_read_by_one_job_and_written_by_another_orders_them():
    events = normalized(
        run_event("load", outputs=["orders"]),
        run_event("report", inputs=["orders"], outputs=["summary"]),
        run_event("other", outputs=["elsewhere"]),
    )
    assert plan_waves(events, [], {}) == [[0, 2], [1]]


def application_and_two_steps() -> list[NormalizedEvent]:
    """An application's run, then two SQL jobs of it (children naming it as their parent)."""
    parent = "00000000-0000-0000-0000-0000000000ff"
    return normalized(
        run_event("app", "START", run_id=parent),
        run_event("app.step", run_facets=parent_facet(parent, "app"), outputs=["t1"]),
        run_event("app.other_step", run_facets=parent_facet(parent, "app"), outputs=["t2"]),
    )


def test_a_child_run_waits_for_its_parent_job():
    assert plan_waves(application_and_two_steps(), [], {}) == [[0], [1], [2]]


def test_two_names_of_one_table_never_share_a_wave():
    path = dataset(
        "/warehouse/orders", namespace="hdfs://nn", symlinks=[("hive://ms", "sales.orders", "TABLE")]
    )
    events = normalized(
        run_event("spark", outputs=[path]),
        run_event("trino", inputs=[dataset("sales.orders", namespace="hive://ms")], outputs=["x"]),
    )
    assert plan_waves(events, [], {}) == [[0], [1]]
    # Known only from the aliases already stored: s3 path and table name are one dataset.
    events = normalized(
        run_event("spark", outputs=[dataset("/orders", namespace="s3://bucket")]),
        run_event("trino", inputs=[dataset("sales.orders", namespace="hive://ms")], outputs=["x"]),
    )
    assert plan_waves(events, [], {}) == [[0, 1]]
    stored = {("s3://bucket", "/orders"): ("hive://ms", "sales.orders")}
    assert plan_waves(events, [], stored) == [[0], [1]]


def test_a_source_changing_its_uri_goes_after_every_event_that_named_it():
    def writes(table: str, uri: str | None) -> dict[str, Any]:
        return run_event(f"job_{table}", outputs=[dataset(table, dataSource=source(uri))])

    events = normalized(
        writes("t1", "jdbc:a"),
        writes("t2", "jdbc:a"),
        writes("t3", None),
        writes("t4", "jdbc:b"),
        writes("t5", "jdbc:b"),
        writes("t6", "jdbc:a"),
    )
    assert plan_waves(events, [], {}) == [[0, 1, 2], [3, 4], [5]]


def test_children_of_a_stored_parent_they_do_not_change_share_a_wave():
    events = application_and_two_steps()
    stored_before = {("pipelines", "app"): events[0].event_time}
    assert plan_waves(events, [], {}, stored_before) == [[0, 1, 2]]
    # Stored, but created after the children's time: each makes it older, in order.
    stored_after = {("pipelines", "app"): events[0].event_time + dt.timedelta(days=1)}
    assert plan_waves(events, [], {}, stored_after) == [[0], [1], [2]]
