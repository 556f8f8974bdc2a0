"""The airflow.cfg snippet shipped in integrations/airflow reads as the provider reads it."""

from __future__ import annotations

import configparser
import json

from tests.integrations.airflow.conftest import REPO, SHOP_SCHEMA

SNIPPET = REPO / "integrations" / "airflow" / "airflow-openlineage.cfg"


def test_snippet_configures_the_http_transport_for_headwater() -> None:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(SNIPPET.read_text())
    transport = json.loads(parser["openlineage"]["transport"])
    assert transport == {
        "type": "http",
        "url": "http://localhost:5000",
        "endpoint": "api/v1/lineage",
        "auth": {"type": "api_key", "apiKey": "change-me"},
        "compression": "gzip",
    }
    assert parser["openlineage"]["namespace"] == "airflow-prod"


def test_readme_creates_the_tables_the_end_to_end_test_uses() -> None:
    readme = (REPO / "integrations" / "airflow" / "README.md").read_text()
    ddl = readme.split("<<'SQL'\n", 1)[1].split("\nSQL\n", 1)[0]
    assert ddl.strip() == SHOP_SCHEMA.strip()
