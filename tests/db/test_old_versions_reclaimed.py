"""The old versions ingest's own updates leave in `runs` and `jobs` are reclaimed by its next
transaction, not left for VACUUM: a run's COMPLETE rewrites the row its START wrote, and its job's
row moves to it, and nothing else visits those pages again (ingest.service._RewrittenRows)."""

from __future__ import annotations

import os
import uuid
from typing import Any

import asyncpg
import pytest

from headwater.ingest.validate import validate_event
from tests.factories import PRODUCER, run_event
from tests.writes import ingest_events

pytestmark = pytest.mark.db

RUNS = 12


def facets(text: str) -> dict[str, Any]:
    """A facet of the size a Spark run's or job's carry (properties, plan, SQL)."""
    return {"notes": {"_producer": PRODUCER, "_schemaURL": f"{PRODUCER}/notes.json", "text": text}}


async def stored_versions(conn: asyncpg.Connection, table: str) -> int:
    """Row versions with storage in ``table``'s pages, live or not: what a prune has not reclaimed."""
    pages = await conn.fetchval(
        f"SELECT pg_relation_size('{table}') / current_setting('block_size')::int"
    )
    return await conn.fetchval(
        f"SELECT count(*) FROM generate_series(0, $1 - 1) AS page,"
        f" heap_page_items(get_raw_page('{table}', page::int)) WHERE lp_flags = 1",
        pages,
    )


async def test_a_completed_run_and_its_job_leave_no_old_version_once_the_next_write_ran(conn):
    await conn.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
    try:
        ids = [uuid.uuid4() for _ in range(RUNS)]
        jobs = [facets(os.urandom(500).hex()) for _ in range(RUNS)]
        starts = [
            run_event(
                f"job_{i}",
                "START",
                run_id=ids[i],
                time=i,
                run_facets=facets(os.urandom(600).hex()),
                job_facets=jobs[i],
            )
            for i in range(RUNS)
        ]
        completes = [
            run_event(
                f"job_{i}",
                "COMPLETE",
                run_id=ids[i],
                time=100 + i,
                outputs=[f"out_{i}"],
                run_facets=facets(os.urandom(750).hex()),
                job_facets=jobs[i],
            )
            for i in range(RUNS)
        ]
        await ingest_events(conn, [validate_event(e) for e in starts])
        await ingest_events(conn, [validate_event(e) for e in completes])
        # Rewritten by the COMPLETEs: each run and job has an old version in its page.
        assert await stored_versions(conn, "runs") == 2 * RUNS
        assert await stored_versions(conn, "jobs") > RUNS

        # The next write, of another job, visits them: only the live versions are left.
        await ingest_events(conn, [validate_event(run_event("elsewhere", "START", time=200))])
        assert await stored_versions(conn, "runs") == RUNS + 1
        assert await stored_versions(conn, "jobs") == RUNS + 1
    finally:
        await conn.execute("DROP EXTENSION pageinspect")
