"""Loads the named SQL blocks of ``queries/*.sql`` once.

A block starts with ``-- name: <query_name>``; the comment lines after it describe what it returns.
Query names are unique across all files, so ``QUERIES["upsert_datasets"]`` is unambiguous.
"""

from __future__ import annotations

import re
from pathlib import Path

QUERIES_DIR = Path(__file__).parent / "queries"
_NAME = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*$", re.MULTILINE)


def load_queries(directory: Path = QUERIES_DIR) -> dict[str, str]:
    """Return every named query in ``directory`` keyed by name; duplicate names are an error."""
    queries: dict[str, str] = {}
    for path in sorted(directory.glob("*.sql")):
        text = path.read_text()
        matches = list(_NAME.finditer(text))
        for i, match in enumerate(matches):
            end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
            body = text[match.end() : end].strip()
            name = match.group(1)
            if name in queries:
                raise ValueError(f"SQL query {name!r} is defined twice (second time in {path.name})")
            queries[name] = body
    return queries


QUERIES = load_queries()
