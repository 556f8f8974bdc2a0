"""What the console's browser tests and screenshots show: the OpenLineage reference events, read
from the shared corpus (never copied here), and a small pipeline of our own whose job drops an input
in its second version, so that the as-of slider has a past to replay."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from typing import Any

import httpx

from tests.corpus import EVENTS
from tests.factories import PRODUCER, SCHEMA_URL, dataset

# Complete events only: templates are partial, invalid ones are meant to be refused, and the
# lenient ones lack a time zone.
REFERENCE_DIRS = ("spark", "airflow", "python-client", "trino", "fluentd")
NAMESPACE = "console_demo"
REPORT_SQL = "INSERT INTO bi.revenue_report SELECT sum(revenue) AS revenue FROM mart.revenue"


def reference_events() -> list[dict[str, Any]]:
    """Every complete reference event, in file-name order (each sequence's order)."""
    events = []
    for folder in REFERENCE_DIRS:
        for path in sorted((EVENTS / folder).glob("*.json")):
            if (
                path.name.count(".") > 1
            ):  # *.template.json, *.invalid.json, *.lenient.json, *.example.json
                continue
            events.append(json.loads(path.read_text()))
    return events


def post_events(url: str, events: list[dict[str, Any]], api_key: str = "") -> None:
    headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
    response = httpx.post(f"{url}/api/v1/lineage/batch", json=events, headers=headers, timeout=60)
    assert response.status_code in {200, 201, 207}, response.text


def run(
    job: str,
    when: dt.datetime,
    inputs: list[dict[str, Any]],
    outputs: list[dict[str, Any]],
    *,
    state: str = "COMPLETE",
    sql: str | None = None,
    error: str | None = None,
    namespace: str = NAMESPACE,
) -> list[dict[str, Any]]:
    """START and then COMPLETE (or FAIL) of one run of ``job`` (in the demo namespace unless told)."""
    run_id = str(uuid.uuid4())
    job_facets: dict[str, Any] = {}
    if sql:
        job_facets["sql"] = {"_producer": PRODUCER, "_schemaURL": SCHEMA_URL, "query": sql}
    run_facets: dict[str, Any] = {}
    if error:
        run_facets["errorMessage"] = {
            "_producer": PRODUCER,
            "_schemaURL": SCHEMA_URL,
            "message": error,
            "programmingLanguage": "SQL",
        }

    def event(kind: str, at: dt.datetime, facets: dict[str, Any]) -> dict[str, Any]:
        return {
            "eventType": kind,
            "eventTime": at.isoformat(),
            "producer": PRODUCER,
            "schemaURL": SCHEMA_URL,
            "run": {"runId": run_id, "facets": facets},
            "job": {"namespace": namespace, "name": job, "facets": job_facets},
            "inputs": inputs,
            "outputs": outputs,
        }

    return [event("START", when, {}), event(state, when + dt.timedelta(seconds=40), run_facets)]


def table(name: str, *fields: tuple[str, str], owner: str | None = None) -> dict[str, Any]:
    facets: dict[str, Any] = {}
    if owner:
        facets["ownership"] = {
            "_producer": PRODUCER,
            "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/OwnershipDatasetFacet.json",
            "owners": [{"name": owner, "type": "MAINTAINER"}],
        }
    return dataset(name, namespace=NAMESPACE, fields=list(fields) or None, **facets)


def demo_pipeline(now: dt.datetime) -> tuple[list[dict[str, Any]], dt.datetime]:
    """orders + customers -> build_revenue -> revenue -> build_report -> report ->
    refresh_dashboard (failing), then (an hour later) build_revenue's second version stops reading
    customers. Returns the events and a moment
    between the two versions."""
    first = now - dt.timedelta(hours=3)
    second = now - dt.timedelta(hours=1)
    orders = table(
        "shop.orders", ("order_id", "bigint"), ("customer_id", "bigint"), ("total", "decimal")
    )
    customers = table("shop.customers", ("customer_id", "bigint"), ("email", "varchar"))
    revenue = table(
        "mart.revenue",
        ("customer_id", "bigint"),
        ("email", "varchar"),
        ("revenue", "decimal"),
        owner="team:finance",
    )
    revenue_v2 = table(
        "mart.revenue", ("customer_id", "bigint"), ("revenue", "decimal"), owner="team:finance"
    )
    report = table("bi.revenue_report", ("revenue", "decimal"), owner="team:bi")
    events = [
        *run(
            "build_revenue",
            first,
            [orders, customers],
            [revenue],
            sql="INSERT INTO mart.revenue\nSELECT o.customer_id, c.email, sum(o.total) AS revenue\n"
            "FROM shop.orders o\nJOIN shop.customers c USING (customer_id)\nGROUP BY 1, 2",
        ),
        *run("build_report", first + dt.timedelta(minutes=5), [revenue], [report], sql=REPORT_SQL),
        *run(
            "build_report",
            second - dt.timedelta(minutes=10),
            [revenue],
            [report],
            state="FAIL",
            sql=REPORT_SQL,
            error="division by zero",
        ),
        *run(
            "build_revenue",
            second,
            [orders],
            [revenue_v2],
            sql="INSERT INTO mart.revenue\nSELECT customer_id, sum(total) AS revenue\n"
            "FROM shop.orders\nGROUP BY 1",
        ),
        *run("build_report", second + dt.timedelta(minutes=5), [revenue], [report], sql=REPORT_SQL),
        # A reader of the report whose latest run failed.
        *run(
            "refresh_dashboard",
            second + dt.timedelta(minutes=10),
            [report],
            [],
            state="FAIL",
            error="dashboard service unreachable",
        ),
    ]
    return events, first + dt.timedelta(hours=1)


# Names as whoever sends events may write them, with Unicode's bidirectional controls: an override
# (U+202E) would show "sales\u202etxt.exe" as "salesexe.txt", an isolate that is never closed
# (U+2067) and marks (U+200F, U+061C) reorder what follows them. And one owner written in Hebrew, a
# right-to-left script, which must not move the text around it either.
BIDI_NAMESPACE = "lake\u2067eu"
BIDI_DATASET = "sales\u202etxt.exe"
BIDI_JOB = "dedupe\u200fsales"
BIDI_FIELD = "net\u202damount"
BIDI_TYPE = "dec\u200fimal"
BIDI_ARCHIVE = "archive\u061cdaily"
BIDI_OWNER = "team:\u202eops"
HEBREW_OWNER = "\u05e6\u05d5\u05d5\u05ea"


def bidi_pipeline(now: dt.datetime) -> list[dict[str, Any]]:
    """A job that reads and writes the same dataset (a cycle of two nodes in the graph), deriving a
    column of it from itself (a column that is its own origin), and copies it to an archive; its
    second run fails with an error naming the archive."""
    column = (BIDI_NAMESPACE, BIDI_DATASET, BIDI_FIELD)
    sales = dataset(
        BIDI_DATASET,
        namespace=BIDI_NAMESPACE,
        fields=[(BIDI_FIELD, BIDI_TYPE)],
        column_lineage={BIDI_FIELD: [column]},
    )
    archive = dataset(
        BIDI_ARCHIVE,
        namespace=BIDI_NAMESPACE,
        fields=[(BIDI_FIELD, BIDI_TYPE)],
        column_lineage={BIDI_FIELD: [column]},
        ownership={
            "_producer": PRODUCER,
            "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/OwnershipDatasetFacet.json",
            "owners": [{"name": BIDI_OWNER}, {"name": HEBREW_OWNER}],
        },
    )
    return [
        *run(BIDI_JOB, now, [sales], [sales, archive], namespace=BIDI_NAMESPACE),
        *run(
            BIDI_JOB,
            now + dt.timedelta(minutes=1),
            [sales],
            [sales, archive],
            state="FAIL",
            error=f"cannot write {BIDI_ARCHIVE}: disk full",
            namespace=BIDI_NAMESPACE,
        ),
    ]
