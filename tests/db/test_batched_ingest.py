"""A batch of events, written a wave at a time, builds exactly what writing them one by one builds."""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

import asyncpg
import pytest

from headwater.db.pool import PLAN_SETTINGS, register_codecs
from headwater.ingest.normalize import normalize_event
from headwater.ingest.validate import validate_event
from headwater.ingest.waves import plan_waves
from tests.corpus import EVENTS
from tests.factories import dataset, mixed_history, parent_facet, run_event
from tests.snapshot import model_snapshot
from tests.writes import ingest_events

pytestmark = pytest.mark.db


def applications(apps: int, tables: int, seed: int = 3) -> list[dict[str, Any]]:
    """Spark-like applications: each action a child run that reads two shared tables, writes one."""
    rng = random.Random(seed)
    events: list[dict[str, Any]] = []
    for a in range(apps):
        app_run = uuid.UUID(int=rng.getrandbits(128))
        minute = a * 0.5
        events.append(run_event(f"app{a}", "START", run_id=app_run, time=minute))
        for step in range(2):
            out, ins = rng.randrange(tables), [rng.randrange(tables) for _ in range(2)]
            target = dataset(
                f"t{out}",
                fields=["id", "v"],
                column_lineage={c: [("warehouse", f"t{i}", c) for i in ins] for c in ("id", "v")},
                symlinks=[("hive://ms", f"db.t{out}", "TABLE")],
            )
            run = uuid.UUID(int=rng.getrandbits(128))
            for offset, kind in enumerate(("START", "RUNNING", "COMPLETE")):
                events.append(
                    run_event(
                        f"app{a}.step{step}",
                        kind,
                        run_id=run,
                        time=minute + 0.1 * step + 0.01 * offset,
                        inputs=[dataset(f"t{i}", fields=["id", "v"]) for i in ins],
                        outputs=[target],
                        run_facets=parent_facet(app_run, f"app{a}"),
                    )
                )
        events.append(run_event(f"app{a}", "COMPLETE", run_id=app_run, time=minute + 0.4))
    return events


def reopened_edges() -> list[dict[str, Any]]:
    """A run reports its edges again after another run of its job closed some of them: its COMPLETE
    opens them anew, though its START wrote them earlier in the same batch."""

    def run(run_id: uuid.UUID, kind: str, minute: int, inputs: list[str]) -> dict[str, Any]:
        target = dataset(
            "totals", fields=["id"], column_lineage={"id": [("warehouse", i, "id") for i in inputs]}
        )
        return run_event(
            "load",
            kind,
            run_id=run_id,
            time=minute,
            inputs=[dataset(i, fields=["id"]) for i in inputs],
            outputs=[target],
        )

    first, second, other = uuid.UUID(int=1), uuid.UUID(int=2), uuid.UUID(int=3)
    return [
        run_event("copy", "START", run_id=other, time=1, inputs=[dataset("c")], outputs=[dataset("d")]),
        run_event(
            "copy", "COMPLETE", run_id=other, time=2, inputs=[dataset("c")], outputs=[dataset("d")]
        ),
        run(first, "START", 1, ["a", "b"]),
        run(second, "START", 2, ["a"]),
        run(second, "COMPLETE", 3, ["a"]),
        run(first, "COMPLETE", 4, ["a", "b"]),
    ]


def renames() -> list[dict[str, Any]]:
    """Tables loaded, renamed (one twice, one onto itself: an external table keeps its path),
    read under their new names; each job's events side by side with the others'."""

    def table(name: str, symlink: str | None = None, before: str | None = None) -> dict[str, Any]:
        facets: dict[str, Any] = {}
        if before is not None:
            facets["lifecycleStateChange"] = {
                "lifecycleStateChange": "RENAME",
                "previousIdentifier": {"namespace": "warehouse", "name": before},
            }
        links = [("warehouse", symlink, "TABLE")] if symlink else None
        return dataset(name, fields=["id", "v"], symlinks=links, **facets)

    events = []
    for n in range(4):
        events += [
            run_event(f"load{n}", "START", run_id=uuid.UUID(int=n + 1), time=n, inputs=["raw"]),
            run_event(
                f"load{n}",
                "COMPLETE",
                run_id=uuid.UUID(int=n + 1),
                time=n + 1,
                inputs=["raw"],
                outputs=[table(f"t{n}", symlink=f"db.t{n}" if n == 3 else None)],
            ),
            run_event(f"rename{n}", time=n + 2, outputs=[table(f"t{n}_new", before=f"t{n}")]),
            run_event(f"read{n}", time=n + 3, inputs=[f"t{n}_new"], outputs=[f"out{n}"]),
        ]
    events.append(run_event("rename_again", time=9, outputs=[table("t0_newer", before="t0_new")]))
    # Under its path, with a new table name: the same stored dataset as before.
    events.append(run_event("rename_ext", time=9, outputs=[table("t3", "db.t3_b", before="db.t3")]))
    return events


def reference_events() -> list[dict[str, Any]]:
    """The complete events of the OpenLineage corpus, when it is there."""
    if not EVENTS.is_dir():
        return []
    suffixes = (".invalid.json", ".lenient.json", ".template.json", ".example.json")
    paths = sorted(p for p in EVENTS.rglob("*.json") if not p.name.endswith(suffixes))
    return [json.loads(p.read_text()) for p in paths]


async def ingest(url: str, events: list[dict[str, Any]], batch: int) -> None:
    conn = await asyncpg.connect(url)
    await register_codecs(conn)
    try:
        valid = [validate_event(e) for e in events]
        for start in range(0, len(valid), batch):
            await ingest_events(conn, valid[start : start + batch])
    finally:
        await conn.close()


@pytest.mark.parametrize(
    "scenario",
    [
        "mixed history",
        "applications",
        "applications, shuffled",
        "edges reopened",
        "renames",
        "reference corpus",
    ],
)
async def test_one_batch_builds_what_one_event_at_a_time_builds(make_database, scenario):
    if scenario == "mixed history":
        events = mixed_history()
    elif scenario == "edges reopened":
        events = reopened_edges()
    elif scenario == "renames":
        events = renames()
    elif scenario == "reference corpus":
        events = reference_events()
        if not events:
            pytest.skip("OpenLineage event corpus not found")
    else:
        events = applications(apps=12, tables=10)
        if scenario.endswith("shuffled"):  # arrival order is not eventTime order
            random.Random(5).shuffle(events)
    waves = plan_waves([normalize_event(validate_event(e)) for e in events], [], {})
    assert len(waves) < len(events)  # the batch is really written in waves
    async with make_database() as serial, make_database() as batched:
        await ingest(serial, events, batch=1)
        await ingest(batched, events, batch=len(events))
        one_by_one, at_once = await model_snapshot(serial), await model_snapshot(batched)
    assert {k: len(v) for k, v in at_once.items()} == {k: len(v) for k, v in one_by_one.items()}
    assert at_once == one_by_one


async def test_run_state_changes_name_the_state_before(conn, database_url):
    events = applications(apps=2, tables=4)
    await ingest(database_url, events, batch=len(events))
    states = await conn.fetch(
        "SELECT details->>'previousState' AS before, details->>'state' AS after FROM change_log"
        " WHERE kind = 'RUN_STATE_CHANGED' AND node_id = 'job:pipelines:app0.step0' ORDER BY change_id"
    )
    assert [(r["before"], r["after"]) for r in states] == [
        (None, "START"),
        ("START", "RUNNING"),
        ("RUNNING", "COMPLETE"),
    ]


# The references that ingest keeps by construction (migration 0060 dropped their foreign keys).
REFERENCES = [
    ("runs", "job_uuid", "jobs", "job_uuid"),
    ("runs", "job_version_uuid", "job_versions", "job_version_uuid"),
    ("run_states", "run_uuid", "runs", "run_uuid"),
    ("run_datasets", "run_uuid", "runs", "run_uuid"),
    ("run_datasets", "dataset_uuid", "datasets", "dataset_uuid"),
    ("run_datasets", "dataset_version_uuid", "dataset_versions", "dataset_version_uuid"),
    ("dataset_fields", "dataset_uuid", "datasets", "dataset_uuid"),
    ("lineage_edges", "job_uuid", "jobs", "job_uuid"),
    ("lineage_edges", "dataset_uuid", "datasets", "dataset_uuid"),
    ("column_lineage", "output_dataset_uuid", "datasets", "dataset_uuid"),
    ("column_lineage", "input_dataset_uuid", "datasets", "dataset_uuid"),
    ("column_lineage", "job_uuid", "jobs", "job_uuid"),
]


async def test_every_reference_of_merged_rows_points_at_a_stored_row(conn, database_url):
    events = mixed_history() + applications(apps=4, tables=6) + reference_events()
    await ingest(database_url, events, batch=50)
    for table, column, parent, key in REFERENCES:
        assert await conn.fetchval(f"SELECT count({column}) FROM {table}") > 0, (table, column)
        dangling = await conn.fetchval(
            f"SELECT count(*) FROM {table} t WHERE t.{column} IS NOT NULL"
            f" AND NOT EXISTS (SELECT 1 FROM {parent} p WHERE p.{key} = t.{column})"
        )
        assert dangling == 0, f"{table}.{column}: {dangling} rows point at no {parent} row"


async def test_ingest_plans_generically_only_inside_its_transaction(database_url):
    # Reads on a server connection keep a custom plan per execution (PLAN_SETTINGS); ingest's own
    # transactions let PostgreSQL switch a statement to its generic plan (after five executions).
    conn = await asyncpg.connect(database_url, server_settings=PLAN_SETTINGS)
    await register_codecs(conn)
    try:
        valid = [validate_event(e) for e in applications(apps=8, tables=4)]
        for start in range(0, len(valid), 4):
            await ingest_events(conn, valid[start : start + 4])
        # A statement without parameters has only its generic plan, whatever the setting.
        generic = await conn.fetchval(
            "SELECT count(*) FROM pg_prepared_statements"
            " WHERE generic_plans > 0 AND cardinality(parameter_types) > 0"
        )
        assert generic > 0
        assert await conn.fetchval("SHOW plan_cache_mode") == "force_custom_plan"
    finally:
        await conn.close()
