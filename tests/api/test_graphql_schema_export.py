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


def test_ingest_operations_describe_their_body_and_their_errors():
    import json

    operations = json.loads((SCHEMAS / OPENAPI_FILE).read_text())["paths"]
    spec = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/"
    for path in ("/api/v1/lineage", "/api/v1/lineage/batch", "/api/v1/integrations/trino"):
        operation = operations[path]["post"]
        body = operation["requestBody"]
        assert body["required"] is True
        assert "application/json" in body["content"], path
        for status in ("400", "401", "403", "413", "415", "503"):
            assert "application/problem+json" in operation["responses"][status]["content"], (
                path,
                status,
            )
    batch = operations["/api/v1/lineage/batch"]["post"]["requestBody"]["content"]["application/json"]
    assert batch["schema"]["type"] == "array"
    assert {r["$ref"] for r in batch["schema"]["items"]["oneOf"]} == {
        spec + kind for kind in ("RunEvent", "DatasetEvent", "JobEvent")
    }
