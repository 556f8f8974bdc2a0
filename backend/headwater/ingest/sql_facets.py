"""Table and column lineage derived from a job's SQL facet, anchored on the event's own datasets.

SQL names tables as the query wrote them (``orders``, ``public.orders``); OpenLineage names them
``namespace`` + fully qualified name (``postgres://db:5432`` + ``shop.public.orders``). A SQL name is
matched to a dataset of the event one of whose identities (its name, its symlinks) equals it or
ends with ``.<it>``; a name no dataset matches is qualified like its siblings (same leading parts)
in the event's only namespace. When the event has no dataset to anchor a namespace, nothing is
derived.
"""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import urlsplit

from headwater.ingest.normalize import (
    AliasRule,
    ColumnEdgeDef,
    DatasetDef,
    NormalizedEvent,
    identities_for,
)
from headwater.sql_lineage import SqlLineage, extract_lineage

_SCHEME_DIALECTS = {
    "postgres": "postgres",
    "postgresql": "postgres",
    "mysql": "mysql",
    "mariadb": "mysql",
    "snowflake": "snowflake",
    "bigquery": "bigquery",
    "redshift": "redshift",
    "trino": "trino",
    "presto": "presto",
    "awsathena": "athena",
    "athena": "athena",
    "mssql": "tsql",
    "sqlserver": "tsql",
    "oracle": "oracle",
    "duckdb": "duckdb",
    "teradata": "teradata",
    "hive": "hive",
    "spark": "spark",
    "databricks": "databricks",
    "sqlite": "sqlite",
    "clickhouse": "clickhouse",
}
_PRODUCER_DIALECTS = (
    ("trino", "trino"),
    ("spark", "spark"),
    ("databricks", "databricks"),
    ("hive", "hive"),
)


def sql_dialect(event: NormalizedEvent) -> str | None:
    """The SQL dialect: the sql facet's, else the producer's engine, else the datasets' database."""
    if event.sql_dialect:
        return event.sql_dialect
    producer = event.producer.lower()
    for marker, dialect in _PRODUCER_DIALECTS:
        if marker in producer:
            return dialect
    for d in [*event.outputs, *event.inputs]:
        scheme = d.namespace.split("://", 1)[0].lower() if "://" in d.namespace else ""
        if scheme in _SCHEME_DIALECTS:
            return _SCHEME_DIALECTS[scheme]
    return None


@lru_cache(maxsize=2048)
def _lineage(sql: str, dialect: str | None) -> SqlLineage:
    return extract_lineage(sql, dialect)


def derive_from_sql(event: NormalizedEvent, rules: list[AliasRule]) -> list[str]:
    """Add SQL-derived datasets (marked derived) and column edges to the event; returns parse errors."""
    if not event.sql or (not event.inputs and not event.outputs):
        return []
    lineage = _lineage(event.sql, sql_dialect(event))
    errors = [str(e) for e in lineage.errors]
    resolver = _Resolver(event, rules)
    for table in lineage.inputs:
        resolver.dataset(table, output=False)
    for table in lineage.outputs:
        resolver.dataset(table, output=True)
    for column in lineage.columns:
        out_table, _, out_field = column.output.rpartition(".")
        output = resolver.dataset(out_table, output=True) if out_table else None
        if output is None or not out_field:
            continue
        for source in column.inputs:
            in_table, _, in_field = source.rpartition(".")
            source_def = resolver.dataset(in_table, output=False) if in_table else None
            if source_def is None or not in_field or in_field == "*":
                continue
            output.derived_column_edges.append(
                ColumnEdgeDef(
                    out_field,
                    source_def.namespace,
                    source_def.name,
                    in_field,
                    _transformation(column.transformation),
                    None,
                    None,
                    None,
                )
            )
    return errors


def _transformation(kind: str) -> str:
    return "INDIRECT" if kind == "INDIRECT" else "DIRECT"


class _Resolver:
    """Maps SQL table names to the event's datasets, adding derived ones where needed."""

    def __init__(self, event: NormalizedEvent, rules: list[AliasRule]) -> None:
        self.event = event
        self.rules = rules
        self.namespaces = sorted({d.namespace for d in [*event.inputs, *event.outputs]})

    def _match(self, table: str) -> DatasetDef | None:
        # Any identity of a dataset may be the one the SQL uses: a Spark table written to a path is
        # named in its SQL by its TABLE symlink (``default.dept_totals``).
        wanted = table.lower()
        found = [
            d
            for d in [*self.event.outputs, *self.event.inputs]
            if any(
                nm.lower() == wanted or nm.lower().endswith("." + wanted) for _, nm, _ in d.identities
            )
        ]
        unique = {(d.namespace, d.name): d for d in found}
        return next(iter(unique.values())) if len(unique) == 1 else None

    def dataset(self, table: str, *, output: bool) -> DatasetDef | None:
        if table.startswith("path:"):
            parts = urlsplit(table[len("path:") :])
            namespace = f"{parts.scheme}://{parts.netloc}" if parts.netloc else (parts.scheme or "file")
            return self._add(namespace, parts.path or table, output=output)
        found = self._match(table)
        listing = self.event.outputs if output else self.event.inputs
        if found is not None:
            if not any(d is found for d in listing) and not any(
                (d.namespace, d.name) == (found.namespace, found.name) for d in listing
            ):
                return self._add(found.namespace, found.name, output=output)
            return next(d for d in listing if (d.namespace, d.name) == (found.namespace, found.name))
        if len(self.namespaces) != 1:
            return None
        return self._add(self.namespaces[0], self._qualify(table), output=output)

    def _qualify(self, table: str) -> str:
        parts = table.split(".")
        siblings = [d.name.split(".") for d in [*self.event.inputs, *self.event.outputs]]
        longest = max((len(s) for s in siblings), default=0)
        if len(parts) >= longest:
            return table
        prefixes = {tuple(s[: longest - len(parts)]) for s in siblings if len(s) == longest}
        if len(prefixes) != 1:
            return table
        return ".".join([*next(iter(prefixes)), *parts])

    def _add(self, namespace: str, name: str, *, output: bool) -> DatasetDef:
        listing = self.event.outputs if output else self.event.inputs
        for d in listing:
            if (d.namespace, d.name) == (namespace, name):
                return d
        d = DatasetDef(
            namespace=namespace,
            name=name,
            identities=identities_for(namespace, name, [], self.rules),
            facets={},
            deleted_facets=[],
            derived=True,
        )
        listing.append(d)
        return d
