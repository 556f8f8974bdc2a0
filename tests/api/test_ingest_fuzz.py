"""Property-based fuzzing of the ingest endpoints against a real `headwater serve`: RunEvent-shaped
bodies with arbitrary strings, times, runIds, facets and nesting never get a 5xx."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.server import HeadwaterServer, server_of_its_own

pytestmark = pytest.mark.db

# Any text, NUL and non-BMP characters included; sometimes longer than a name may be.
text = st.one_of(
    st.text(max_size=20),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=8),
    st.sampled_from(["", " ", "\u0000", "a\u0000b", "run_id", "é" * 1_000, "x" * 2_000]),
)
json_scalar = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), text)
json_value = st.recursive(
    json_scalar,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(text, inner, max_size=4)),
    max_leaves=20,
)
times = st.one_of(
    st.datetimes(timezones=st.timezones()).map(lambda t: t.isoformat()),
    st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(1, 1, 2)).map(
        lambda t: t.isoformat() + "+14:00"
    ),
    st.datetimes(min_value=dt.datetime(9999, 12, 30)).map(lambda t: t.isoformat() + "-14:00"),
    text,
)
run_ids = st.one_of(st.uuids().map(str), text, st.integers())
facet_names = st.sampled_from(
    ["schema", "parent", "nominalTime", "sql", "columnLineage", "symlinks", "dataSource", "custom"]
)
facets = st.dictionaries(facet_names | text, json_value, max_size=3)
schema_facet = st.builds(
    lambda names: {"fields": [{"name": n, "type": "string"} for n in names]}, st.lists(text, max_size=3)
)
parent_facet = st.builds(
    lambda run, ns, name: {"run": {"runId": run}, "job": {"namespace": ns, "name": name}},
    run_ids,
    text,
    text,
)
dataset = st.fixed_dictionaries(
    {"namespace": text, "name": text},
    optional={
        "facets": st.one_of(facets, st.fixed_dictionaries({"schema": schema_facet})),
        "inputFacets": facets,
    },
)
run_event = st.fixed_dictionaries(
    {
        "eventType": st.sampled_from(["START", "RUNNING", "COMPLETE", "FAIL", "ABORT", "OTHER", "?"]),
        "eventTime": times,
        "producer": text,
        "run": st.fixed_dictionaries(
            {"runId": run_ids},
            optional={"facets": st.one_of(facets, st.fixed_dictionaries({"parent": parent_facet}))},
        ),
        "job": st.fixed_dictionaries(
            {"namespace": text, "name": text},
            optional={
                "facets": st.one_of(facets, st.fixed_dictionaries({"sql": st.builds(dict, query=text)}))
            },
        ),
    },
    optional={"inputs": st.lists(dataset, max_size=3), "outputs": st.lists(dataset, max_size=3)},
)
bodies = st.one_of(run_event, st.lists(st.one_of(run_event, json_value), max_size=4), json_value)


server = server_of_its_own("headwater_fuzz")


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(body=bodies, batch=st.booleans())
def test_no_body_gets_a_5xx(server: HeadwaterServer, body: Any, batch: bool) -> None:
    path = "/api/v1/lineage/batch" if batch else "/api/v1/lineage"
    response = httpx.post(
        server.url + path,
        content=json.dumps(body).encode("utf-8", "surrogatepass"),
        headers={"Authorization": f"Bearer {server.api_key}", "Content-Type": "application/json"},
        timeout=30,
    )
    assert response.status_code < 500, (body, response.text)
