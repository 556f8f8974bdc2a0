"""Table and column lineage derived from a job's SQL facet, anchored on the event's own datasets.

SQL names tables as the query wrote them (``orders``, ``public.orders``); OpenLineage names them
``namespace`` + fully qualified name (``postgres://db:5432`` + ``shop.public.orders``). A SQL name is
matched to a dataset of the event one of whose identities (its name, its symlinks) equals it or
ends with ``.<it>``; a name no dataset matches is qualified like its siblings (same leading parts)
in the event's only namespace. When the event has no dataset to anchor a namespace, nothing is
derived.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit

from headwater.ingest.normalize import (
    MAX_EVENT_COLUMN_EDGES,
    AliasRule,
    ColumnEdgeDef,
    DatasetDef,
    NormalizedEvent,
    identities_for,
)
from headwater.ingest.validate import MAX_EVENT_DATASETS, UNSTORABLE_TEXT, too_long
from headwater.lineage.node_ids import MAX_FIELD_NAME_BYTES, MAX_NAME_BYTES, MAX_NAMESPACE_BYTES
from headwater.sql_lineage import SqlLineage, extract_lineage
from headwater.sql_lineage.model import ColumnLineage

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


# SQL longer than this is not derived (a warning says so): parsing takes about 6 s per MB, and the
# derivation of one event must stay within seconds.
MAX_SQL_CHARS = 256 * 1024
# Only short SQL is cached: the same job's statement comes again with each of its runs, while a
# long script's lineage could hold much memory.
_CACHED_SQL_CHARS = 16 * 1024


# The columns of the event's datasets, by each name a dataset has: ((name, ((column, type), …)), …).
EventSchema = tuple[tuple[str, tuple[tuple[str, str], ...]], ...]


@lru_cache(maxsize=2048)
def _cached_lineage(sql: str, dialect: str | None, schema: EventSchema) -> SqlLineage:
    return _uncached_lineage(sql, dialect, schema)


def _uncached_lineage(sql: str, dialect: str | None, schema: EventSchema) -> SqlLineage:
    return extract_lineage(sql, dialect, {name: dict(columns) for name, columns in schema})


def _lineage(sql: str, dialect: str | None, schema: EventSchema) -> SqlLineage:
    if len(sql) <= _CACHED_SQL_CHARS:
        return _cached_lineage(sql, dialect, schema)
    return _uncached_lineage(sql, dialect, schema)


def event_schema(event: NormalizedEvent) -> EventSchema:
    """The columns the event reports for its datasets (their schema facets), under every name of
    each (its own and its symlinks'), so that the SQL's ``*`` expands to them and a column it names
    without its table is placed in the one table that has it. An output's columns win over an
    input's of the same name."""
    columns: dict[str, tuple[tuple[str, str], ...]] = {}
    for d in [*event.inputs, *event.outputs]:
        if not d.fields:
            continue
        fields = tuple((f.name, f.type or "") for f in d.fields)
        for _, name, _ in d.identities:
            columns[name] = fields
    return tuple(sorted(columns.items()))


def derive_from_sql(event: NormalizedEvent, rules: list[AliasRule]) -> list[str]:
    """Add SQL-derived datasets (marked derived) and column edges to the event; returns parse errors
    and what the SQL runs that was not followed (called procedures, dynamic SQL).

    The work is linear in the size of the SQL and the event, and SQL over ``MAX_SQL_CHARS`` is not
    parsed at all. What the SQL derives counts against what one event may make Headwater write,
    with what the event reports: past it, the rest is left out with a warning.
    """
    if not event.sql or (not event.inputs and not event.outputs):
        return []
    if len(event.sql) > MAX_SQL_CHARS:
        return [f"the SQL is {len(event.sql)} characters long; at most {MAX_SQL_CHARS} are parsed"]
    lineage = _lineage(event.sql, sql_dialect(event), event_schema(event))
    errors = [_escaped(str(e)) for e in [*lineage.errors, *lineage.warnings]]
    resolver = _Resolver(event, rules, _session_prefix(event))
    # Outputs first: past the datasets one event may name, the tables left out are inputs.
    for table in lineage.outputs:
        resolver.dataset(table, output=True)
    for table in lineage.inputs:
        resolver.dataset(table, output=False)
    reported = sum(len(d.column_edges) + len(d.derived_column_edges) for d in event.outputs)
    edges = _EdgeAllowance(max(0, MAX_EVENT_COLUMN_EDGES - reported))
    for column in lineage.columns:
        _add_column_edges(resolver, column, edges)
    return errors + _left_out(resolver, edges)


def _left_out(resolver: _Resolver, edges: _EdgeAllowance) -> list[str]:
    """Warnings for what the SQL gives that is not added to the event, and why."""
    warnings = []
    if resolver.unstorable:
        warnings.append(
            f"{len(resolver.unstorable)} names the SQL gives hold U+0000 or half of a UTF-16 "
            "surrogate pair, which PostgreSQL cannot store, and were left out: "
            + _first_few(resolver.unstorable)
        )
    if resolver.over_limit:
        warnings.append(
            f"{len(resolver.over_limit):,} of the tables the SQL names were left out, with their "
            f"column edges: one event names at most {MAX_EVENT_DATASETS:,} datasets"
        )
    if edges.left_out:
        warnings.append(
            f"{edges.left_out:,} column edges derived from the SQL were left out: one event makes "
            f"at most {MAX_EVENT_COLUMN_EDGES:,}"
        )
    if resolver.too_long:
        warnings.append(
            f"{resolver.too_long} table names are longer than a dataset name may be "
            f"({MAX_NAMESPACE_BYTES} bytes of namespace, {MAX_NAME_BYTES} of name)"
        )
    if resolver.unreadable_paths:
        warnings.append(
            f"{len(resolver.unreadable_paths)} file paths are not URIs and were left out: "
            + _first_few(resolver.unreadable_paths)
        )
    return warnings


def _escaped(message: str) -> str:
    """A message with what PostgreSQL cannot store (U+0000 in a name it quotes) escaped as Python
    writes it, ``\\x00``: the run's warnings keep the message, and the event was refused for it."""
    return UNSTORABLE_TEXT.sub(lambda found: ascii(found.group())[1:-1], message)


def _first_few(texts: set[str]) -> str:
    """The first three texts in order, each as a Python literal of at most 200 characters."""
    ordered = sorted(texts)
    return ", ".join(repr(t[:200]) for t in ordered[:3]) + (", ..." if len(ordered) > 3 else "")


@dataclass
class _EdgeAllowance:
    """The column edges the SQL may still add to the event, and how many it made past them."""

    left: int
    left_out: int = 0


def _add_column_edges(resolver: _Resolver, column: ColumnLineage, edges: _EdgeAllowance) -> None:
    out_table, _, out_field = column.output.rpartition(".")
    output = resolver.dataset(out_table, output=True) if out_table else None
    if output is None or not resolver.storable_field(out_field):
        return
    for source in column.inputs:
        in_table, _, in_field = source.rpartition(".")
        source_def = resolver.dataset(in_table, output=False) if in_table else None
        if source_def is None or in_field == "*" or not resolver.storable_field(in_field):
            continue
        if edges.left == 0:
            edges.left_out += 1
            continue
        edges.left -= 1
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


def _transformation(kind: str) -> str:
    return "INDIRECT" if kind == "INDIRECT" else "DIRECT"


def _last_part(name: str) -> str:
    return name.rpartition(".")[2]


def _session_prefix(event: NormalizedEvent) -> tuple[str, ...]:
    """The catalog and schema a Trino query's session was in (recorded by the Trino bridge in the
    run facet ``trino_query_context``): what its unqualified table names are in. Empty when the event
    does not say."""
    context = event.run_facets.get("trino_query_context")
    if not isinstance(context, dict):
        return ()
    catalog, schema = context.get("catalog"), context.get("schema")
    if not isinstance(catalog, str) or not catalog:
        return ()
    return (catalog, schema) if isinstance(schema, str) and schema else (catalog,)


class _Resolver:
    """Maps SQL table names to the event's datasets, adding derived ones where needed.

    A SQL name matches an identity equal to it or ending with ``.<it>``; both end with the SQL
    name's last part, so identities are indexed by their last part and each lookup reads only the
    identities sharing it.
    """

    def __init__(
        self, event: NormalizedEvent, rules: list[AliasRule], session: tuple[str, ...] = ()
    ) -> None:
        self.event = event
        self.rules = rules
        # The catalog and schema the SQL's session was in, when known: unqualified names are in it.
        self.session = session
        reported = [*event.inputs, *event.outputs]
        self.namespaces = sorted({d.namespace for d in reported})
        # Unknown names are qualified like the datasets the producer reported.
        self.siblings = [d.name.split(".") for d in reported]
        self.longest = max((len(s) for s in self.siblings), default=0)
        self.prefixes: dict[int, set[tuple[str, ...]]] = {}
        self.listed: dict[bool, dict[tuple[str, str], DatasetDef]] = {
            output: {
                (d.namespace, d.name): d for d in reversed(event.outputs if output else event.inputs)
            }
            for output in (True, False)
        }
        self.by_last_part: dict[str, list[tuple[str, DatasetDef]]] = {}
        for d in [*event.outputs, *event.inputs]:
            self._index(d)
        self.matches: dict[str, dict[str, DatasetDef | None]] = {}
        self.too_long = 0
        # Names PostgreSQL cannot store, and the datasets past those one event may name: left out.
        self.unstorable: set[str] = set()
        self.datasets_left = MAX_EVENT_DATASETS - len(reported)
        self.over_limit: set[tuple[str, str, bool]] = set()
        # file paths the SQL names that are not URIs (an unbalanced "[" or "]"), left out
        self.unreadable_paths: set[str] = set()

    def _index(self, d: DatasetDef) -> None:
        for _, nm, _ in d.identities:
            lowered = nm.lower()
            self.by_last_part.setdefault(_last_part(lowered), []).append((lowered, d))

    def _match(self, table: str) -> DatasetDef | None:
        # Any identity of a dataset may be the one the SQL uses: a Spark table written to a path is
        # named in its SQL by its TABLE symlink (``default.dept_totals``).
        wanted = table.lower()
        known = self.matches.setdefault(_last_part(wanted), {})
        if wanted not in known:
            unique = {
                (d.namespace, d.name): d
                for nm, d in self.by_last_part.get(_last_part(wanted), [])
                if nm == wanted or nm.endswith("." + wanted)
            }
            known[wanted] = next(iter(unique.values())) if len(unique) == 1 else None
        return known[wanted]

    def dataset(self, table: str, *, output: bool) -> DatasetDef | None:
        if table.startswith("path:"):
            try:
                parts = urlsplit(table[len("path:") :])
            except ValueError:
                self.unreadable_paths.add(table[len("path:") :])
                return None
            namespace = f"{parts.scheme}://{parts.netloc}" if parts.netloc else (parts.scheme or "file")
            return self._add(namespace, parts.path or table, output=output)
        named = table.split(".")
        if self.session and len(named) <= len(self.session):
            # The SQL's own rule: `t` is the session's catalog.schema.t, `s.t` its catalog.s.t, and
            # no other table of that name.
            table = ".".join([*self.session[: len(self.session) + 1 - len(named)], *named])
        found = self._match(table)
        if found is not None:
            return self._add(found.namespace, found.name, output=output)
        if len(self.namespaces) != 1:
            return None
        return self._add(self.namespaces[0], self._qualify(table), output=output)

    def _qualify(self, table: str) -> str:
        parts = table.split(".")
        longest = self.longest
        if len(parts) >= longest:
            return table
        if len(parts) not in self.prefixes:
            self.prefixes[len(parts)] = {
                tuple(s[: longest - len(parts)]) for s in self.siblings if len(s) == longest
            }
        prefixes = self.prefixes[len(parts)]
        if len(prefixes) != 1:
            return table
        return ".".join([*next(iter(prefixes)), *parts])

    def _add(self, namespace: str, name: str, *, output: bool) -> DatasetDef | None:
        listed = self.listed[output]
        if (namespace, name) in listed:
            return listed[(namespace, name)]
        unstorable = [n for n in (namespace, name) if UNSTORABLE_TEXT.search(n)]
        if unstorable:
            self.unstorable.update(unstorable)
            return None
        if too_long(namespace, MAX_NAMESPACE_BYTES) or too_long(name, MAX_NAME_BYTES):
            self.too_long += 1
            return None
        if self.datasets_left <= 0:
            self.over_limit.add((namespace, name, output))
            return None
        self.datasets_left -= 1
        d = DatasetDef(
            namespace=namespace,
            name=name,
            identities=identities_for(namespace, name, [], self.rules),
            facets={},
            deleted_facets=[],
            derived=True,
        )
        (self.event.outputs if output else self.event.inputs).append(d)
        listed[(namespace, name)] = d
        self._index(d)
        # A new identity may make a name ambiguous or let it match: forget what was found for it.
        for _, nm, _ in d.identities:
            self.matches.pop(_last_part(nm.lower()), None)
        return d

    def storable_field(self, name: str) -> bool:
        """Whether a column name the SQL gives can be stored as a field (else, if only for what
        PostgreSQL cannot hold, it is noted to be named in a warning)."""
        if not name or too_long(name, MAX_FIELD_NAME_BYTES):
            return False
        if UNSTORABLE_TEXT.search(name):
            self.unstorable.add(name)
            return False
        return True
