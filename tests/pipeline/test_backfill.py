"""headwater spark backfill and export: same model as online ingest, rejects, merges, round trips."""

from __future__ import annotations

import datetime as dt
import gzip
import json
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from litestar.testing import AsyncTestClient

from headwater.app import create_app
from headwater.pipeline.backfill import BackfillOptions, run_backfill
from headwater.pipeline.export import ExportOptions, run_export
from headwater.pipeline.sources import (
    ArchiveUnreadableError,
    find_archive_files,
    find_unreadable_archive,
)
from headwater.settings import Settings
from tests.client import post_all
from tests.factories import at, mixed_history, rid, run_event
from tests.snapshot import model_snapshot, without_generated_ids

pytestmark = [pytest.mark.spark, pytest.mark.db]


def write_archive(tmp: Path, events: list[dict[str, Any]], split: int) -> list[str]:
    """events[:split] as gzip JSON lines, the rest as one JSON array; returns the paths in order."""
    lines = tmp / "events-1.jsonl.gz"
    with gzip.open(lines, "wt") as f:
        f.writelines(json.dumps(e) + "\n" for e in events[:split])
    array = tmp / "events-2.json"
    array.write_text(json.dumps(events[split:], indent=2))
    return [str(lines), str(array)]


def in_ingest_order(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The order backfill writes in: eventTime, then position in the archive."""

    def key(pair: tuple[int, dict[str, Any]]) -> tuple[dt.datetime, int]:
        return dt.datetime.fromisoformat(pair[1]["eventTime"].replace("Z", "+00:00")), pair[0]

    return [e for _, e in sorted(enumerate(events), key=key)]


def backfill(
    spark: Any, progress: Any, url: str | None, paths: list[str], tmp: Path, **kwargs: Any
) -> Any:
    options = BackfillOptions(
        paths=paths,
        database_url=url,
        rejects_path=str(tmp / "rejects"),
        batch_size=4,
        events_per_partition=10,
        **kwargs,
    )
    return run_backfill(spark, options, progress)


LINEAGE_NODES = [
    "dataset:warehouse:orders",
    "job:pipelines:report",
    "dataset:hive://metastore:sales.raw_orders",
    "job:pipelines:app",
]


async def lineage_answers(client: Any) -> list[Any]:
    keep = {
        str(rid(n))
        for n in ("app", "load-1", "load-2", "report-1", "report-2", "report-3", "audit-1", "cleanup")
    }
    answers = []
    for node in LINEAGE_NODES:
        response = await client.get("/api/v1/lineage", params={"nodeId": node, "depth": 10})
        body = response.json()
        if response.status_code == 200:
            body["graph"] = sorted(body["graph"], key=lambda n: n["id"])
        answers.append((response.status_code, without_generated_ids(body, keep)))
    return answers


async def lineage_of(url: str) -> list[Any]:
    async with AsyncTestClient(
        app=create_app(Settings(database_url=url, pool_min_size=1, pool_max_size=2))
    ) as c:
        return await lineage_answers(c)


async def test_backfill_builds_the_same_model_as_online_ingest(
    spark, progress, client, database_url, make_database, tmp_path
):
    events = mixed_history()
    paths = write_archive(tmp_path, events, split=12)
    await post_all(client, in_ingest_order(events))
    async with make_database() as url:
        summary = backfill(spark, progress, url, paths, tmp_path)
        assert (summary.files, summary.valid, summary.unique, summary.rejected) == (
            2,
            len(events),
            len(events) - 1,
            0,
        )
        assert (summary.written.created, summary.already_stored) == (len(events) - 1, 0)
        online, bulk = await model_snapshot(database_url), await model_snapshot(url)
        assert {k: len(v) for k, v in bulk.items()} == {k: len(v) for k, v in online.items()}
        assert bulk == online
        assert await lineage_of(url) == await lineage_answers(client)


async def test_invalid_lines_are_rejected_with_their_reason_and_place(
    spark, progress, make_database, tmp_path
):
    good = run_event("load", outputs=["orders"])
    lines = [
        json.dumps(good),
        "{not json",
        "",
        json.dumps({**run_event("load"), "run": {"runId": 7}}),
        json.dumps(run_event(" ")),
        json.dumps([run_event("batch", outputs=["a"]), {"eventType": "START"}]),
        "[" * 100_000,  # deeper than the decoder goes
    ]
    # A name in Latin-1, not UTF-8: read as U+FFFD, it would be stored as another name.
    latin1 = json.dumps(run_event("café"), ensure_ascii=False).encode("latin-1")
    archive = tmp_path / "mixed.jsonl"
    archive.write_bytes(("\n".join(lines) + "\n").encode() + latin1 + b"\n")
    async with make_database() as url:
        summary = backfill(spark, progress, url, [str(archive)], tmp_path)
    assert (summary.rows, summary.blank, summary.rejected, summary.valid, summary.written.created) == (
        9,
        1,
        6,
        2,
        2,
    )
    rejects = [
        json.loads(line)
        for f in sorted((tmp_path / "rejects").glob("part-*.json"))
        for line in f.read_text().splitlines()
    ]
    source = archive.resolve().as_uri().replace("file:///", "file:/")
    assert [(r["source"], r["line"], r.get("item"), r["errors"][0]["path"]) for r in rejects] == [
        (source, 2, None, "$"),
        (source, 4, None, "$.run.runId"),
        (source, 5, None, "$.job.name"),
        (source, 6, 1, "$[1]"),
        (source, 7, None, "$"),
        (source, 8, None, "$"),
    ]
    assert rejects[0]["reason"].startswith("not valid JSON")
    assert (
        rejects[4]["reason"]
        == "not valid JSON: nested too deeply to decode (events may nest 256 levels)"
    )
    assert rejects[5]["reason"].startswith("not valid UTF-8: the line holds bytes that are not UTF-8")
    assert rejects[1]["reason"] == "Invalid RunEvent: Expected `str`, got `int` at $.run.runId"
    assert rejects[1]["text"] == lines[3]


async def test_a_truncated_gzip_archive_is_named_and_nothing_is_written(
    spark, progress, make_database, tmp_path
):
    paths = write_archive(tmp_path, [run_event("load", outputs=["orders"]) for _ in range(20)], split=20)
    whole = gzip.compress("".join(json.dumps(run_event("cut")) + "\n" for _ in range(200)).encode())
    cut = tmp_path / "events-3.jsonl.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    async with make_database() as url:
        with pytest.raises(ArchiveUnreadableError) as refused:
            backfill(spark, progress, url, [*paths, str(cut)], tmp_path)
        conn = await asyncpg.connect(url)
        try:
            assert await conn.fetchval("SELECT count(*) FROM raw_events") == 0
        finally:
            await conn.close()
    message = str(refused.value)
    assert message.startswith(
        f"{cut.resolve().as_uri().replace('file:///', 'file:/')} cannot be read to its end"
    )
    assert "Nothing was written" in message


def test_a_compressed_array_too_large_to_read_whole_is_named(spark, tmp_path):
    # After a read failed, the driver says which file it was: here an array past the limit, which
    # each task refuses to inflate further.
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b"[" + b" " * 300_000 + b"]"))
    files = find_archive_files(spark, [str(bomb)])
    error = find_unreadable_archive(spark, files, array_limit=100_000)
    assert files[0].is_array
    assert str(error).startswith(
        f"{bomb.resolve().as_uri().replace('file:///', 'file:/')} is a JSON array of more than "
        "100,000 bytes (decompressed), which is read whole"
    )
    assert find_unreadable_archive(spark, files, array_limit=400_000) is None


async def test_an_array_file_after_thousands_of_blanks_is_read_as_an_array(
    spark, progress, make_database, tmp_path
):
    # Indented by a tool that pads: read as JSON lines, its 80 lines were each rejected.
    events = [run_event(f"padded_{i}", outputs=[f"t{i}"]) for i in range(3)]
    archive = tmp_path / "padded.json"
    archive.write_text(" " * 5_000 + "\n" + json.dumps(events, indent=2))
    async with make_database() as url:
        summary = backfill(spark, progress, url, [str(archive)], tmp_path)
    assert (summary.valid, summary.rejected, summary.written.created) == (3, 0, 3)


async def test_backfill_merges_into_a_database_that_has_data(
    spark, progress, client, database_url, make_database, tmp_path
):
    events = in_ingest_order(mixed_history())
    await post_all(client, events)
    first, rest = events[:15], events[10:]  # overlapping: 5 events are in both
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    async with make_database() as url:
        backfill(spark, progress, url, write_archive(tmp_path / "a", first, split=15), tmp_path / "a")
        summary = backfill(
            spark, progress, url, write_archive(tmp_path / "b", rest, split=4), tmp_path / "b"
        )
        assert summary.already_stored == 5
        assert summary.written.created == len(set(map(json.dumps, rest))) - 5
        assert await model_snapshot(url) == await model_snapshot(database_url)


async def test_ndjson_export_replays_into_the_same_lineage(
    spark, progress, client, database_url, make_database, tmp_path
):
    await post_all(client, in_ingest_order(mixed_history()))
    out = tmp_path / "export"
    exported = run_export(
        spark, ExportOptions(out=str(out), format="ndjson", database_url=database_url), progress
    )
    assert exported.tables == {"events": len(mixed_history()) - 1}
    async with make_database() as url:
        summary = backfill(spark, progress, url, [str(out)], tmp_path)
        assert (summary.rejected, summary.written.created) == (0, len(mixed_history()) - 1)
        assert await model_snapshot(url) == await model_snapshot(database_url)
        assert await lineage_of(url) == await lineage_answers(client)


async def test_ndjson_export_filters_by_namespace_and_time(
    spark, progress, client, database_url, tmp_path
):
    await post_all(
        client,
        [
            run_event("a", namespace="one", outputs=["x"], time=1),
            run_event("b", namespace="two", inputs=["x"], time=2),
            run_event("c", namespace="two", time=3),
        ],
    )
    out = tmp_path / "export"
    options = ExportOptions(
        out=str(out),
        format="ndjson",
        database_url=database_url,
        namespace="warehouse",
        since=dt.datetime.fromisoformat(at(2).replace("Z", "+00:00")),
    )
    run_export(spark, options, progress)
    exported = [
        json.loads(line)
        for f in sorted(out.glob("part-*"))
        for line in gzip.decompress(f.read_bytes()).decode().splitlines()
    ]
    assert [e["job"]["name"] for e in exported] == ["b"]


async def test_parquet_export_has_nodes_edges_with_intervals_and_column_edges(
    spark, progress, client, database_url, tmp_path
):
    await post_all(client, in_ingest_order(mixed_history()))
    out = tmp_path / "graph"
    summary = run_export(
        spark, ExportOptions(out=str(out), format="parquet", database_url=database_url), progress
    )
    edges = {(r["src_key"], r["dst_key"]): r for r in spark.read.parquet(str(out / "edges")).collect()}
    closed = edges[("dataset:warehouse:customers", "job:pipelines:report")]
    assert closed["valid_to"] is not None
    assert closed["edge_type"] == "READ"
    assert edges[("dataset:warehouse:orders", "job:pipelines:report")]["valid_to"] is None
    nodes = {r["node_key"] for r in spark.read.parquet(str(out / "nodes")).collect()}
    assert {k for pair in edges for k in pair} <= nodes
    columns = {
        (r["output_key"], r["output_field"], r["input_key"], r["input_field"], r["valid_to"] is None)
        for r in spark.read.parquet(str(out / "column_edges")).collect()
    }
    assert ("dataset:warehouse:orders", "currency", "dataset:warehouse:rates", "code", True) in columns
    assert summary.tables["edges"] == len(edges)


async def test_backfill_from_marquez_builds_the_model_posting_builds(
    spark, progress, client, database_url, make_database, marquez, tmp_path
):
    from headwater.pipeline.marquez import stage_marquez_events
    from tests.marquez import fill_marquez, history
    from tests.marquez import in_ingest_order as in_marquez_order

    events = history()
    await fill_marquez(marquez, events, duplicates=2)
    await post_all(client, in_marquez_order(events))
    files = await stage_marquez_events(marquez, tmp_path / "stage", None, None, progress)
    assert [Path(f).name for f in files] == ["marquez-000000.jsonl.gz"]
    async with make_database() as url:
        summary = backfill(spark, progress, url, files, tmp_path)
        assert (summary.valid, summary.rejected) == (len(events) + 2, 0)
        assert await model_snapshot(url) == await model_snapshot(database_url)


def test_backfill_takes_archives_or_a_marquez_database(capsys):
    from headwater.pipeline.command import run_spark_command

    for argv in (["backfill"], ["backfill", "a.json", "--from-marquez", "postgresql://m/marquez"]):
        with pytest.raises(SystemExit) as exit_:
            run_spark_command(argv)
        assert exit_.value.code == 2
        assert "archive PATHs or --from-marquez URL" in capsys.readouterr().err
