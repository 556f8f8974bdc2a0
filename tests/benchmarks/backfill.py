"""Backfill benchmark: `headwater spark backfill` against online ingest (POST over HTTP), same machine.

Generates N Spark-shaped events (an application run with child actions, each START/RUNNING/COMPLETE
with schema, symlinks, dataSource and column lineage facets and a parent run facet) into one gzip
NDJSON archive, backfills it into an empty database with ``headwater spark backfill`` (a
subprocess), and posts a sample of the same events one by one to ``headwater serve`` (another
subprocess, over HTTP, on another empty database), then the sample of events that follow the
archive's into the backfilled database, since online ingest may slow as the store grows. Peak
memory is sampled every 0.2 s: the command's driver (Python), its JVM (driver and executors, as
local mode runs them in one JVM) and its Python workers.

Run: ``python tests/benchmarks/backfill.py [--events 1000000] [--online-sample 2000] [--master local[*]]
[--archive PATH]`` (``--archive`` keeps the generated archive, for another run with as many events).
Needs PostgreSQL at $HEADWATER_BENCH_SERVER_URL (default postgresql://postgres@127.0.0.1:5432/postgres);
creates and drops headwater_bench_backfill and headwater_bench_online.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import gzip
import itertools
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.benchmarks.databases import SERVER_URL, fresh_database
from tests.server import free_port

PRODUCER = "https://github.com/OpenLineage/OpenLineage/tree/1.23.0/integration/spark"
RUN_EVENT = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
T0 = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
TABLES = 20_000
APPS = 2_000
ACTIONS = 3
COLUMNS = 6


def _facet(schema: str, **fields: Any) -> dict[str, Any]:
    return {
        "_producer": PRODUCER,
        "_schemaURL": f"https://openlineage.io/spec/facets/{schema}",
        **fields,
    }


def _table(i: int, columns: list[str]) -> dict[str, Any]:
    db = f"db{i % 20}"
    return {
        "namespace": "hdfs://namenode:8020",
        "name": f"/warehouse/{db}/t{i}",
        "facets": {
            "dataSource": _facet(
                "1-0-1/DatasourceDatasetFacet.json",
                name="hdfs://namenode:8020",
                uri="hdfs://namenode:8020",
            ),
            "schema": _facet(
                "1-1-1/SchemaDatasetFacet.json", fields=[{"name": c, "type": "string"} for c in columns]
            ),
            "symlinks": _facet(
                "1-0-1/SymlinksDatasetFacet.json",
                identifiers=[
                    {"namespace": "hive://metastore:9083", "name": f"{db}.t{i}", "type": "TABLE"}
                ],
            ),
        },
    }


def spark_events(n: int, seed: int = 7) -> Iterator[dict[str, Any]]:
    """N events of Spark applications run daily, in eventTime order; each action is a child run."""
    rng = random.Random(seed)
    columns = [f"c{j}" for j in range(COLUMNS)]
    count, day = 0, 0
    while True:
        for a in range(APPS):
            app, app_run = f"app_{a}", str(uuid.UUID(int=rng.getrandbits(128), version=4))
            start = T0 + dt.timedelta(days=day, seconds=a * 40)
            shape = random.Random(a)  # an application does the same actions every day

            def event(
                job: str,
                kind: str,
                run: str,
                at: dt.datetime,
                inputs: list[Any],
                outputs: list[Any],
                child: bool,
                app: str = app,
                app_run: str = app_run,
            ) -> dict[str, Any]:
                run_facets: dict[str, Any] = {
                    "spark_properties": _facet(
                        "1-0-0/SparkPropertiesFacet.json",
                        properties={"spark.master": "yarn", "spark.app.name": app},
                    ),
                    "processing_engine": _facet(
                        "1-1-1/ProcessingEngineRunFacet.json",
                        version="3.5.1",
                        name="spark",
                        openlineageAdapterVersion="1.23.0",
                    ),
                }
                if child:
                    run_facets["parent"] = _facet(
                        "1-0-1/ParentRunFacet.json",
                        run={"runId": app_run},
                        job={"namespace": "spark", "name": app},
                    )
                return {
                    "eventTime": at.isoformat().replace("+00:00", "Z"),
                    "producer": PRODUCER,
                    "schemaURL": RUN_EVENT,
                    "eventType": kind,
                    "run": {"runId": run, "facets": run_facets},
                    "job": {
                        "namespace": "spark",
                        "name": job,
                        "facets": {
                            "jobType": _facet(
                                "2-0-3/JobTypeJobFacet.json",
                                processingType="BATCH",
                                integration="SPARK",
                                jobType="SQL_JOB" if child else "APPLICATION",
                            )
                        },
                    },
                    "inputs": inputs,
                    "outputs": outputs,
                }

            batch = [event(app, "START", app_run, start, [], [], child=False)]
            for k in range(ACTIONS):
                out = shape.randrange(TABLES)
                ins = [shape.randrange(TABLES) for _ in range(2)]
                target = _table(out, columns)
                target["facets"]["columnLineage"] = _facet(
                    "1-2-0/ColumnLineageDatasetFacet.json",
                    fields={
                        c: {
                            "inputFields": [
                                {
                                    "namespace": "hdfs://namenode:8020",
                                    "name": f"/warehouse/db{i % 20}/t{i}",
                                    "field": c,
                                    "transformations": [{"type": "DIRECT", "subtype": "IDENTITY"}],
                                }
                                for i in ins
                            ]
                        }
                        for c in columns
                    },
                )
                job = f"{app}.execute_insert_into_hadoop_fs_relation_command.db{out % 20}_t{out}"
                run = str(uuid.UUID(int=rng.getrandbits(128), version=4))
                at = start + dt.timedelta(seconds=1 + 10 * k)
                sources = [_table(i, columns) for i in ins]
                for offset, kind in ((0, "START"), (3, "RUNNING"), (6, "COMPLETE")):
                    batch.append(
                        event(job, kind, run, at + dt.timedelta(seconds=offset), sources, [target], True)
                    )
            batch.append(
                event(app, "COMPLETE", app_run, start + dt.timedelta(seconds=35), [], [], child=False)
            )
            for e in batch:
                if count == n:
                    return
                yield e
                count += 1
        day += 1


def write_archive(path: Path, n: int, start: int = 0) -> int:
    """Stream events ``start`` to ``n`` of the stream into a gzip NDJSON file; returns its size."""
    with gzip.open(path, "wt", compresslevel=3) as f:
        for e in itertools.islice(spark_events(n), start, None):
            f.write(json.dumps(e, separators=(",", ":")) + "\n")
    return path.stat().st_size


async def drop_database(name: str) -> None:
    admin = await asyncpg.connect(SERVER_URL)
    await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    await admin.close()


class MemorySampler:
    """Peak RSS of a process tree, split into the driver, the JVM and the Python workers."""

    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self.peak = {"driver (python)": 0, "jvm (driver + executors)": 0, "python workers": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> MemorySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            try:
                driver = self.root.memory_info().rss
                jvm = workers = 0
                for child in self.root.children(recursive=True):
                    try:
                        rss = child.memory_info().rss
                        if "java" in child.name():
                            jvm += rss
                        else:
                            workers += rss
                    except psutil.Error:
                        continue
            except psutil.Error:
                return
            for key, value in zip(self.peak, (driver, jvm, workers), strict=True):
                self.peak[key] = max(self.peak[key], value)


def run_backfill(archive: Path, url: str, master: str, tmp: Path) -> tuple[float, str, dict[str, int]]:
    command = [
        sys.executable,
        "-m",
        "headwater.cli",
        "spark",
        "backfill",
        "--master",
        master,
        "--database-url",
        url,
        "--rejects",
        str(tmp / "rejects"),
        "--quiet",
        str(archive),
    ]
    started = time.monotonic()
    errors = tmp / "backfill.stderr"
    with errors.open("w") as stderr:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr, text=True)
    with MemorySampler(proc.pid) as memory:
        out, _ = proc.communicate()
    if proc.returncode != 0:
        tail = errors.read_text()[-4000:]
        raise SystemExit(f"backfill failed ({proc.returncode}):\n{out}\n{tail}")
    return time.monotonic() - started, out, memory.peak


async def run_online(archive: Path, url: str, sample: int) -> tuple[int, float]:
    """Post the first ``sample`` events one by one to a real server; returns (events, seconds)."""
    port = free_port()
    env = {**os.environ, "HEADWATER_DATABASE_URL": url}
    server = subprocess.Popen(
        [sys.executable, "-m", "headwater.cli", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            for _ in range(150):
                try:
                    if (await client.get("/healthz")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                await asyncio.sleep(0.2)
            posted, started = 0, time.monotonic()
            with gzip.open(archive, "rt") as f:
                for line in f:
                    if posted == sample:
                        break
                    response = await client.post(
                        "/api/v1/lineage", content=line, headers={"content-type": "application/json"}
                    )
                    assert response.status_code == 201, response.text
                    posted += 1
            return posted, time.monotonic() - started
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--online-sample", type=int, default=2_000)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--keep", action="store_true", help="keep the databases")
    parser.add_argument(
        "--archive", type=Path, help="where the generated archive is kept; reused if it is there"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="headwater-bench-") as tmp_name:
        tmp = Path(tmp_name)
        archive = args.archive or tmp / "events.jsonl.gz"
        if archive.exists():
            print(f"reusing {archive} ({archive.stat().st_size / 2**20:,.1f} MiB gzip)", flush=True)
        else:
            started = time.monotonic()
            size = write_archive(archive, args.events)
            print(
                f"generated {args.events:,} events ({size / 2**20:,.1f} MiB gzip) in {time.monotonic() - started:,.0f} s",
                flush=True,
            )
        bulk_url = asyncio.run(fresh_database("headwater_bench_backfill"))
        seconds, output, peak = run_backfill(archive, bulk_url, args.master, tmp)
        written = int(re.search(r"^stored\s+([\d,]+)", output, re.MULTILINE).group(1).replace(",", ""))  # type: ignore[union-attr]
        print(output, flush=True)
        online_url = asyncio.run(fresh_database("headwater_bench_online"))
        posted, online_seconds = asyncio.run(run_online(archive, online_url, args.online_sample))
        # Online ingest may slow as the store grows: also post the events that follow the archive's
        # into the database the backfill filled. (Generating them replays the archive's stream.)
        following = tmp / "following.jsonl.gz"
        write_archive(following, args.events + args.online_sample, start=args.events)
        posted_late, late_seconds = asyncio.run(run_online(following, bulk_url, args.online_sample))
        if not args.keep:
            asyncio.run(drop_database("headwater_bench_backfill"))
            asyncio.run(drop_database("headwater_bench_online"))
    bulk_rate, online_rate = written / seconds, posted / online_seconds
    late_rate = posted_late / late_seconds
    rows = [
        ("events", f"{args.events:,}"),
        (
            "backfill (headwater spark backfill, end to end)",
            f"{seconds:,.1f} s, {bulk_rate:,.0f} events/s",
        ),
        (
            "online (POST one by one, into an empty database)",
            f"{posted:,} in {online_seconds:,.1f} s, {online_rate:,.0f} events/s",
        ),
        (
            f"online (POST one by one, into the database holding the {written:,})",
            f"{posted_late:,} in {late_seconds:,.1f} s, {late_rate:,.0f} events/s",
        ),
        ("online at the empty-database rate, all events", f"{args.events / online_rate:,.0f} s"),
        ("backfill / online (empty database)", f"{bulk_rate / online_rate:,.2f}x"),
        (f"backfill / online (at {written:,} stored)", f"{bulk_rate / late_rate:,.2f}x"),
    ]
    rows += [(f"peak RSS {k}", f"{v / 2**20:,.0f} MiB") for k, v in peak.items()]
    width = max(len(k) for k, _ in rows)
    print("\n".join(f"| {k.ljust(width)} | {v} |" for k, v in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
