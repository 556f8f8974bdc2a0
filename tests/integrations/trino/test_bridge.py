"""QueryCompletedEvent -> OpenLineage RunEvents: naming, runs, datasets, lineage, errors (no database)."""

from __future__ import annotations

import json
import uuid

import pytest

from headwater.ingest.aliases import PrefixRule, catalog_alias_rules, trino_namespace
from headwater.ingest.validate import validate_event
from headwater.integrations.trino import (
    BridgeOptions,
    InvalidTrinoEventError,
    convert,
    job_name,
    run_id_for,
    to_run_events,
)
from tests.corpus import SPEC
from tests.integrations.trino.events import TRINO, http_example, ol_examples, query_completed

QUERY_ID = "20250601_101500_00042_abcde"


def lineage_of(dataset):
    return {
        field: sorted((f["namespace"], f["name"], f["field"]) for f in entry["inputFields"])
        for field, entry in dataset["facets"]["columnLineage"]["fields"].items()
    }


def test_example_becomes_start_and_complete_named_like_the_openlineage_listener():
    start, complete = to_run_events(http_example())
    ol_start, ol_complete = ol_examples()
    assert [start["eventType"], complete["eventType"]] == ["START", "COMPLETE"]
    assert start["eventTime"] == ol_start["eventTime"] == "2025-06-01T10:15:00.123Z"
    assert complete["eventTime"] == ol_complete["eventTime"] == "2025-06-01T10:15:03.027Z"
    for ours, theirs in [(start, ol_start), (complete, ol_complete)]:
        assert ours["job"]["namespace"] == theirs["job"]["namespace"] == TRINO
        assert ours["job"]["name"] == theirs["job"]["name"] == QUERY_ID
        assert ours["job"]["facets"]["sql"]["query"] == theirs["job"]["facets"]["sql"]["query"]
        assert ours["job"]["facets"]["jobType"]["integration"] == "TRINO"
        for facet in ("trino_metadata", "trino_query_context", "processing_engine"):
            ol_facet = {k: v for k, v in theirs["run"]["facets"][facet].items() if not k.startswith("_")}
            assert ol_facet.items() <= ours["run"]["facets"][facet].items(), facet
    assert start["run"]["runId"] == complete["run"]["runId"]
    assert "inputs" not in start
    assert [(d["namespace"], d["name"]) for d in complete["inputs"]] == [
        (d["namespace"], d["name"]) for d in ol_complete["inputs"]
    ]
    assert [d["facets"]["schema"] for d in complete["inputs"]] == [
        {**d["facets"]["schema"], "_producer": complete["producer"]} for d in ol_complete["inputs"]
    ]
    (output,), (ol_output,) = complete["outputs"], ol_complete["outputs"]
    assert (output["namespace"], output["name"]) == (TRINO, "hive.sales.daily_revenue")
    assert output["facets"]["schema"]["fields"] == ol_output["facets"]["schema"]["fields"]
    assert lineage_of(output) == lineage_of(ol_output)
    assert output["facets"]["dataSource"]["uri"] == ol_output["facets"]["dataSource"]["uri"]
    assert output["outputFacets"]["outputStatistics"]["rowCount"] == 2406
    stats = complete["run"]["facets"]["trino_query_statistics"]
    assert stats["cpuTime"] == "1.532000000"
    assert stats["writtenRows"] == "2406"
    assert stats["complete"] == "true"
    assert "stageGcStatistics" not in stats
    assert complete["run"]["facets"]["nominalTime"]["nominalStartTime"] == "2025-06-01T10:15:00.123Z"


def test_events_pass_the_core_model():
    for i, event in enumerate(to_run_events(http_example())):
        validate_event(event, f"$[{i}]")


@pytest.mark.skipif(
    not (SPEC / "OpenLineage.json").exists(), reason="OpenLineage spec copy not available"
)
def test_events_and_their_facets_pass_strict_schema_validation():
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    resources = {}
    for path in SPEC.rglob("*.json"):
        if "tests" in path.parts or path.name == "registry.json":
            continue
        doc = json.loads(path.read_text())
        resources[doc["$id"]] = Resource.from_contents(doc)
    registry = Registry().with_resources(resources.items())

    def errors(value, ref):
        validator = Draft202012Validator(
            {"$ref": ref}, registry=registry, format_checker=Draft202012Validator.FORMAT_CHECKER
        )
        return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(value)]

    failed = query_completed(
        "INSERT INTO hive.sales.t SELECT a FROM hive.sales.s",
        inputs={"hive.sales.s": ["a"]},
        output="hive.sales.t",
        columns=[("a", "bigint", ["hive.sales.s.a"])],
        failure="Table hive.sales.t is read-only",
    )
    for event in [*to_run_events(http_example()), *to_run_events(failed)]:
        assert errors(event, "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent") == []
        facets = [*event["run"]["facets"].values(), *event["job"]["facets"].values()]
        for d in [*event.get("inputs", []), *event.get("outputs", [])]:
            facets += [*d["facets"].values(), *d.get("outputFacets", {}).values()]
        for facet in facets:
            url = facet["_schemaURL"]
            if "/spec/facets/" in url:
                assert errors(facet, url) == [], url


def test_retries_give_identical_events_and_the_same_run():
    assert to_run_events(http_example()) == to_run_events(http_example())
    run_id = uuid.UUID(to_run_events(http_example())[0]["run"]["runId"])
    assert run_id.version == 5


def test_the_run_id_depends_on_the_query_and_its_create_time_to_the_millisecond():
    base = convert(http_example()).run_id
    nanos = {**http_example(), "createTime": "1748772900.123000000"}
    iso = {**http_example(), "createTime": "2025-06-01T10:15:00.123Z"}
    millis = {**http_example(), "createTime": 1748772900123}
    assert convert(nanos).run_id == convert(iso).run_id == convert(millis).run_id == base
    assert convert({**http_example(), "createTime": 1748772900.124}).run_id != base
    other = http_example()
    other["metadata"]["queryId"] = "20250601_101500_00043_abcde"
    assert convert(other).run_id != base


def test_created_event_gives_the_start_of_the_same_run():
    completed = http_example()
    created = {k: completed[k] for k in ("metadata", "context", "createTime")}
    conversion = convert(created)
    assert conversion.kind == "QueryCreatedEvent"
    assert [e["eventType"] for e in conversion.events] == ["START"]
    assert conversion.run_id == convert(completed).run_id


def test_split_events_are_ignored():
    split = {"queryId": QUERY_ID, "stageId": "1", "taskId": "1.0.0", "statistics": None}
    conversion = convert({k: v for k, v in split.items() if k != "statistics"})
    assert conversion.kind == "SplitCompletedEvent"
    assert conversion.events == []


def test_failed_query_is_a_fail_with_the_message():
    event = query_completed(
        "INSERT INTO hive.sales.t SELECT a FROM hive.sales.s",
        inputs={"hive.sales.s": ["a"]},
        output="hive.sales.t",
        columns=[("a", "bigint", ["hive.sales.s.a"])],
        failure="Insert into table with a different schema",
    )
    _, fail = to_run_events(event)
    assert fail["eventType"] == "FAIL"
    assert (
        fail["run"]["facets"]["errorMessage"]["message"] == "Insert into table with a different schema"
    )
    assert fail["run"]["facets"]["trino_metadata"]["error_code"] == "GENERIC_USER_ERROR"
    assert [d["name"] for d in fail["inputs"]] == ["hive.sales.s"]
    assert [d["name"] for d in fail["outputs"]] == ["hive.sales.t"]
    assert "outputFacets" not in fail["outputs"][0]


def test_a_failure_without_a_message_is_still_a_fail():
    event = query_completed("DELETE FROM hive.sales.t", inputs={"hive.sales.t": []}, failure="x")
    event["failureInfo"]["failureMessage"] = None
    _, fail = to_run_events(event)
    assert fail["run"]["facets"]["errorMessage"]["message"] == "GENERIC_USER_ERROR"


def test_coordinator_from_configuration_event_uri_or_server_address():
    event = http_example()
    assert convert(event, BridgeOptions(trino_uri="https://trino.prod:8443/")).job_namespace == (
        "trino://trino.prod:8443"
    )
    assert (
        convert(event, BridgeOptions(trino_uri="trino.prod:8080")).job_namespace
        == "trino://trino.prod:8080"
    )
    del event["metadata"]["uri"]
    assert convert(event).job_namespace == "trino://10.0.4.2"
    event["context"]["serverAddress"] = None
    with pytest.raises(InvalidTrinoEventError) as exc:
        convert(event)
    assert exc.value.errors[0].path == "$.metadata.uri"
    assert (
        convert(event, BridgeOptions(trino_uri="http://trino:8080")).job_namespace
        == "trino://trino:8080"
    )


def test_job_namespace_and_name_format_like_the_listener_options():
    options = BridgeOptions(
        namespace="trino-prod", job_name_format="$QUERY_ID-$USER-$SOURCE-$CLIENT_IP-abc123"
    )
    start, complete = to_run_events(http_example(), options)
    assert start["job"] == {
        **start["job"],
        "namespace": "trino-prod",
        "name": f"{QUERY_ID}-alice-trino-cli-10.0.4.17-abc123",
    }
    assert {d["namespace"] for d in complete["inputs"] + complete["outputs"]} == {TRINO}


def test_job_name_template_giving_nothing_falls_back_to_the_query_id():
    from headwater.integrations.trino import QueryContext

    assert job_name("$SOURCE", "q1", QueryContext()) == "q1"
    assert job_name("nightly-$USER", "q1", QueryContext(user="etl")) == "nightly-etl"


def test_select_is_left_out_by_default_and_reported_when_asked():
    event = query_completed(
        "SELECT a FROM hive.sales.s", inputs={"hive.sales.s": ["a"]}, query_type="SELECT"
    )
    skipped = convert(event)
    assert skipped.events == []
    assert "SELECT" in (skipped.skipped or "")
    _, complete = to_run_events(event, BridgeOptions(query_types=None))
    assert [d["name"] for d in complete["inputs"]] == ["hive.sales.s"]
    assert complete["outputs"] == []


def test_query_without_a_type_is_left_out():
    event = query_completed("SELEC 1", inputs={}, failure="line 1:1: mismatched input 'SELEC'")
    event["context"]["queryType"] = None
    assert convert(event).events == []


def test_without_output_columns_no_column_lineage_is_claimed():
    event = query_completed(
        "INSERT INTO hive.sales.t SELECT a FROM hive.sales.s",
        inputs={"hive.sales.s": ["a"]},
        output="hive.sales.t",
    )
    _, complete = to_run_events(event)
    assert set(complete["outputs"][0]["facets"]) == {"dataSource"}
    no_sources = query_completed(
        "INSERT INTO hive.sales.t VALUES (1)",
        inputs={},
        output="hive.sales.t",
        columns=[("a", "bigint", [])],
    )
    _, complete = to_run_events(no_sources)
    assert set(complete["outputs"][0]["facets"]) == {"dataSource", "schema"}


def test_inputs_add_views_and_lineage_sources_but_not_the_target():
    event = query_completed(
        "INSERT INTO hive.mart.t SELECT v.a, s.b FROM hive.sales.v v JOIN hive.sales.s s ON v.k = s.k",
        inputs={"hive.sales.base": ["a", "k"], "hive.sales.s": ["b", "k"]},
        views={"hive.sales.v": ["a", "k"]},
        output="hive.mart.t",
        columns=[("a", "bigint", ["hive.sales.base.a"]), ("b", "bigint", ["hive.sales.other.b"])],
    )
    event["metadata"]["tables"].append(
        {"catalog": "hive", "schema": "mart", "table": "t", "columns": [], "directlyReferenced": True}
    )
    event["metadata"]["tables"][0]["directlyReferenced"] = False  # base table behind the view
    _, complete = to_run_events(event)
    assert [d["name"] for d in complete["inputs"]] == [
        "hive.sales.base",
        "hive.sales.s",
        "hive.sales.v",
        "hive.sales.other",
    ]
    assert complete["inputs"][3]["facets"]["schema"]["fields"] == [{"name": "b"}]


def test_delete_reads_and_writes_its_table():
    event = query_completed(
        "DELETE FROM hive.sales.t WHERE d < DATE '2020-01-01'",
        inputs={"hive.sales.t": ["d"]},
        output="hive.sales.t",
        columns=[],
        query_type="DELETE",
    )
    _, complete = to_run_events(event)
    assert [d["name"] for d in complete["inputs"]] == ["hive.sales.t"]
    assert [d["name"] for d in complete["outputs"]] == ["hive.sales.t"]


def test_ddl_without_datasets():
    event = query_completed("CREATE SCHEMA hive.new_schema", inputs={}, query_type="DATA_DEFINITION")
    _, complete = to_run_events(event)
    assert complete["eventType"] == "COMPLETE"
    assert complete["inputs"] == []
    assert complete["outputs"] == []


BAD = [
    ("a number", 7, "$", "Expected `object`, got `number`"),
    (
        "an OpenLineage event",
        lambda: ol_examples()[1],
        "$",
        "an OpenLineage event; post it to /api/v1/lineage",
    ),
    (
        "no metadata",
        {"endTime": 1.0, "createTime": 1.0},
        "$",
        "Object missing required field `metadata`",
    ),
    ("empty object", {}, "$", "Object missing required field `metadata`"),
]


@pytest.mark.parametrize(("raw", "path", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_not_a_trino_event(raw, path, message):
    with pytest.raises(InvalidTrinoEventError) as exc:
        convert(raw() if callable(raw) else raw)
    assert [(e.path, e.message) for e in exc.value.errors] == [(path, message)]


def test_errors_name_the_json_path():
    event = http_example()
    event["metadata"]["queryId"] = 42
    event["ioMetadata"]["output"]["columns"][1]["sourceColumns"][0]["table"] = None
    with pytest.raises(InvalidTrinoEventError) as exc:
        convert(event, prefix="$[3]")
    assert exc.value.errors[0].path == "$[3].metadata.queryId"
    event["metadata"]["queryId"] = QUERY_ID
    with pytest.raises(InvalidTrinoEventError) as exc:
        convert(event)
    assert exc.value.errors[0].path == "$.ioMetadata.output.columns[1].sourceColumns[0].table"
    event = http_example()
    event["endTime"] = "yesterday"
    with pytest.raises(InvalidTrinoEventError) as exc:
        convert(event)
    assert exc.value.errors[0].path == "$.endTime"


def test_unknown_and_missing_optional_fields_are_tolerated():
    event = http_example()
    event["someFutureField"] = {"x": 1}
    event["metadata"]["newThing"] = [1]
    for key in ("statistics", "context", "warnings", "executionStartTime"):
        del event[key]
    event["ioMetadata"]["inputs"][0]["columns"] = [{"column": "custkey"}, "orderdate"]
    _, complete = to_run_events(event, BridgeOptions(query_types=None))
    assert complete["inputs"][0]["facets"]["schema"]["fields"] == [
        {"name": "custkey"},
        {"name": "orderdate"},
        {"name": "totalprice"},
    ]
    assert "processing_engine" not in complete["run"]["facets"]


def test_namespace_of_a_coordinator_uri():
    assert trino_namespace("http://trino:8080") == "trino://trino:8080"
    assert trino_namespace("trino://trino:8080") == "trino://trino:8080"
    assert trino_namespace("https://user@trino.example.com:8443/ui") == "trino://trino.example.com:8443"
    assert trino_namespace("trino") == "trino://trino"
    with pytest.raises(ValueError, match="Not a Trino coordinator URI"):
        trino_namespace("http://")


def test_run_id_is_uuid5_of_query_and_milliseconds():
    import datetime as dt

    created = dt.datetime(2025, 6, 1, 10, 15, 0, 123456, tzinfo=dt.UTC)
    assert run_id_for("q", created) == run_id_for("q", created.replace(microsecond=123000))


def test_catalog_rules():
    rules = catalog_alias_rules(
        "http://trino:8080",
        {"hive": "hive://metastore", "pg": {"namespace": "postgres://db:5432", "namePrefix": "shop."}},
    )
    assert rules == [
        PrefixRule("trino://trino:8080", "hive.", "hive://metastore", ""),
        PrefixRule("trino://trino:8080", "pg.", "postgres://db:5432", "shop."),
    ]
    assert rules[0]("trino://trino:8080", "hive.sales.orders") == ("hive://metastore", "sales.orders")
    assert rules[1]("trino://trino:8080", "pg.public.orders") == (
        "postgres://db:5432",
        "shop.public.orders",
    )
    assert rules[0]("trino://other:8080", "hive.sales.orders") is None
    assert rules[0]("trino://trino:8080", "hivex.sales.orders") is None
    with pytest.raises(ValueError, match="must map to a namespace"):
        catalog_alias_rules("trino:8080", {"hive": 3})
