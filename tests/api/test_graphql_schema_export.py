"""The committed contracts in schemas/ are what `headwater export-schemas` writes today."""

from __future__ import annotations

from pathlib import Path

from headwater.export_schemas import GRAPHQL_FILE, OPENAPI_FILE, export_schemas

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
HINT = "the API changed: run `headwater export-schemas` and commit schemas/"


def test_graphql_schema_has_not_drifted(tmp_path):
    assert export_schemas(tmp_path) == 0
    assert (tmp_path / GRAPHQL_FILE).read_text() == (SCHEMAS / GRAPHQL_FILE).read_text(), HINT


def test_openapi_has_not_drifted(tmp_path):
    export_schemas(tmp_path)
    assert (tmp_path / OPENAPI_FILE).read_text() == (SCHEMAS / OPENAPI_FILE).read_text(), HINT
