"""`headwater export-schemas`: write the published contracts, GraphQL SDL and OpenAPI, to commit.

A test regenerates both and fails when the committed files differ, so every change to the API
shows up in review as a diff of ``schemas/``.
"""

from __future__ import annotations

import json
from pathlib import Path

GRAPHQL_FILE = Path("graphql") / "schema.graphql"
OPENAPI_FILE = Path("openapi") / "openapi.json"


def graphql_sdl() -> str:
    """The GraphQL schema in SDL."""
    from headwater.api.graphql.schema import schema

    return schema.as_str() + "\n"


def openapi_json() -> str:
    """The OpenAPI document of the REST API, with sorted keys for stable diffs."""
    from headwater.app import create_app
    from headwater.settings import Settings

    # The document is built from the routes alone: no database is opened.
    app = create_app(Settings(database_url="postgresql://localhost/unused"))
    return (
        json.dumps(app.openapi_schema.to_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    )


def export_schemas(out: str | Path = "schemas") -> int:
    """Write ``<out>/graphql/schema.graphql`` and ``<out>/openapi/openapi.json``; returns 0."""
    root = Path(out)
    for relative, text in ((GRAPHQL_FILE, graphql_sdl()), (OPENAPI_FILE, openapi_json())):
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    return 0
