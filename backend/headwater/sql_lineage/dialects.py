"""Dialect names as users and OpenLineage producers write them, mapped to sqlglot dialects."""

from __future__ import annotations

import re
from functools import lru_cache

from sqlglot.dialects.dialect import Dialect, Dialects

# Spellings seen in producers' job facets and in the wild. Keys are normalized by
# `_normalize`: lower case without spaces, dashes, underscores or dots.
_ALIASES: dict[str, str | None] = {
    "ansi": None,
    "generic": None,
    "sql": None,
    "standard": None,
    "default": None,
    "none": None,
    "sparksql": "spark",
    "spark3": "spark",
    "pyspark": "spark",
    "databrickssql": "databricks",
    "dbsql": "databricks",
    "hiveql": "hive",
    "impala": "hive",
    "postgresql": "postgres",
    "pg": "postgres",
    "psql": "postgres",
    "greenplum": "postgres",
    "cockroachdb": "postgres",
    "timescaledb": "postgres",
    "alloydb": "postgres",
    "aurorapostgresql": "postgres",
    "vertica": "postgres",
    "netezza": "postgres",
    "mariadb": "mysql",
    "auroramysql": "mysql",
    "tidb": "mysql",
    "memsql": "singlestore",
    "bq": "bigquery",
    "googlesql": "bigquery",
    "standardsql": "bigquery",
    "mssql": "tsql",
    "sqlserver": "tsql",
    "microsoftsqlserver": "tsql",
    "azuresql": "tsql",
    "synapse": "tsql",
    "azuresynapse": "tsql",
    "plsql": "oracle",
    "motherduck": "duckdb",
    "starburst": "trino",
    "prestodb": "presto",
    "awsathena": "athena",
    "sqlite3": "sqlite",
}

# Not SQL: a DAX or PRQL "dialect" would only turn SQL into nonsense errors.
_EXCLUDED = {"dax", "prql"}
_KNOWN = {d.value for d in Dialects if d.value and d.value not in _EXCLUDED}


def _normalize(name: str) -> str:
    return re.sub(r"[\s\-_.]", "", name.lower())


def dialect_name(name: str | None) -> str | None:
    """The sqlglot dialect for a user-facing name; None (generic SQL) when unknown."""
    if not name:
        return None
    key = _normalize(name)
    if key in _KNOWN:
        return key
    return _ALIASES.get(key)


@lru_cache(maxsize=64)
def get_dialect(name: str | None) -> Dialect:
    """A cached sqlglot Dialect instance for a user-facing name (generic when unknown)."""
    return Dialect.get_or_raise(dialect_name(name))
