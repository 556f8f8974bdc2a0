"""`headwater spark backfill --from-marquez URL`: a Marquez history as archives for the backfill.

The driver reads Marquez's `lineage_events` in the order `headwater import marquez` replays them
(event_time, then as Marquez received them) through a server-side cursor, and writes them as gzip
JSON-lines files of ``EVENTS_PER_FILE`` events, numbered in that order. The backfill then orders by
(eventTime, position in the archive), which is the same order: its result is what the import, or
posting the events one by one, builds. Memory stays bounded (a page at a time); the files take about
a tenth of the events' JSON size on disk.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import TYPE_CHECKING

from headwater.imports.marquez import MarquezSource

if TYPE_CHECKING:
    import datetime as dt

    from headwater.pipeline.progress import Progress

EVENTS_PER_FILE = 100_000
PAGE = 5_000


async def stage_marquez_events(
    source_url: str,
    folder: Path,
    since: dt.datetime | None,
    until: dt.datetime | None,
    progress: Progress,
) -> list[str]:
    """Write the source's events into ``folder``; returns the files in replay order."""
    folder.mkdir(parents=True, exist_ok=True)
    source = await MarquezSource.connect(source_url)
    try:
        total = await source.count(since, until, None)
        progress.set_phase("reading Marquez's lineage_events", total=total, unit="events")
        files: list[str] = []
        written = 0
        out: gzip.GzipFile | None = None
        try:
            async for rows in source.pages(since, until, None, PAGE):
                for _, text in rows:
                    if written % EVENTS_PER_FILE == 0:
                        if out is not None:
                            out.close()
                        path = folder / f"marquez-{len(files):06d}.jsonl.gz"
                        files.append(str(path))
                        out = gzip.open(path, "wb", compresslevel=1)  # noqa: SIM115 (rolled over above)
                    assert out is not None
                    # jsonb's text form has no raw newlines (they are escaped in strings): one line each.
                    # A row without an event is the line null, which the backfill refuses and counts.
                    out.write((text or "null").encode() + b"\n")
                    written += 1
                progress.set_count(written)
        finally:
            if out is not None:
                out.close()
    finally:
        await source.close()
    return files
