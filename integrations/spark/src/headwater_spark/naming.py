"""Dataset and job names as the OpenLineage naming spec and the official Spark integration write them."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

import sqlglot
from sqlglot import exp

# Schemes whose dataset name is the object key (no leading slash), as in s3://bucket + key.
_OBJECT_STORES = {"s3", "gs", "wasbs", "wasb", "abfss", "abfs", "oss", "cos", "r2"}
_SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3"}


@dataclass(frozen=True)
class Symlink:
    namespace: str
    name: str
    type: str = "TABLE"


@dataclass(frozen=True)
class DatasetId:
    """A dataset identity, with the other names it is known by (a table name for a storage path)."""

    namespace: str
    name: str
    symlinks: tuple[Symlink, ...] = field(default=())
    # Read through a query (over JDBC, or a streaming query's micro-batch): the relation's columns
    # are the query's, not this dataset's…
    through_query: bool = field(default=False, compare=False)
    # …except those the query copies as they are: (query column in lower case, this dataset's
    # column), ("*", "*") for all of them.
    columns: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    @property
    def key(self) -> tuple[str, str]:
        return (self.namespace, self.name)


def dataset_from_location(location: str) -> DatasetId:
    """Namespace and name of a storage location (``file:/a/b``, ``hdfs://nn:8020/a``, ``s3a://b/k``).

    Local files: namespace ``file``, name the absolute path. Other file systems: namespace
    ``scheme://authority``, name the path (object stores: the key without a leading slash).
    """
    loc = location.strip()
    if loc.startswith("/"):
        return DatasetId("file", _strip_trailing_slash(loc))
    parts = urlsplit(loc)
    scheme = (parts.scheme or "file").lower()
    scheme = _SCHEME_ALIASES.get(scheme, scheme)
    path = _strip_trailing_slash(parts.path or "/")
    if not parts.netloc:
        return DatasetId(scheme, path)
    if scheme in _OBJECT_STORES:
        return DatasetId(f"{scheme}://{parts.netloc}", path.lstrip("/") or "/")
    return DatasetId(f"{scheme}://{parts.netloc}", path)


# JDBC subprotocols whose databases the naming spec names: (namespace scheme, default port, default
# schema, None where a table name has no schema level). Other producers always write the port
# (Airflow's postgres://host:5432), so a URL without one gets the database's default.
_JDBC_DATABASES: dict[str, tuple[str, int, str | None]] = {
    "postgresql": ("postgres", 5432, "public"),
    "redshift": ("redshift", 5439, "public"),
    "mysql": ("mysql", 3306, None),
    "mariadb": ("mysql", 3306, None),
    "sqlserver": ("mssql", 1433, "dbo"),
}


def jdbc_dataset(url: str, table: str) -> DatasetId | None:
    """A table read or written over JDBC, named as the naming spec names the database's tables:
    ``jdbc:postgresql://host/shop`` + ``orders`` -> ``postgres://host:5432`` + ``shop.public.orders``.

    The database comes from the URL (its path; SQL Server's ``databaseName`` property) unless the
    name has three parts (``database.schema.table``); the schema from the table name, else the
    database's default one. Identifiers are unquoted; PostgreSQL's unquoted ones folded to lower
    case, as PostgreSQL does. None for a query (``(SELECT …) q``) or
    a URL that is not ``jdbc:<subprotocol>://host…``.
    """
    if not url.lower().startswith("jdbc:") or not table.strip() or table.lstrip().startswith("("):
        return None
    rest = url[len("jdbc:") :]
    subprotocol, sep, locator = rest.partition("://")
    if not sep:
        return None
    subprotocol = subprotocol.lower()
    address, _, properties = locator.partition(";")  # SQL Server: host:port;databaseName=shop
    parts = urlsplit(f"//{address}")
    host = parts.hostname
    if not host:
        return None
    scheme, default_port, default_schema = _JDBC_DATABASES.get(subprotocol, (subprotocol, 0, None))
    port = parts.port or default_port
    namespace = f"{scheme}://{host}:{port}" if port else f"{scheme}://{host}"
    database = parts.path.strip("/") or _jdbc_property(properties, "databasename")
    names = _identifiers(table, fold=subprotocol == "postgresql")
    if default_schema is not None and len(names) == 1:
        names.insert(0, default_schema)
    if database and len(names) < 3:  # database.schema.table names its own database
        names.insert(0, database)
    return DatasetId(namespace, ".".join(names))


# sqlglot's dialect for the SQL a JDBC subprotocol's database speaks; others are read as generic SQL.
_JDBC_DIALECTS = {
    "postgresql": "postgres",
    "redshift": "redshift",
    "mysql": "mysql",
    "mariadb": "mysql",
    "sqlserver": "tsql",
    "oracle": "oracle",
    "snowflake": "snowflake",
    "teradata": "teradata",
    "sqlite": "sqlite",
    "trino": "trino",
    "presto": "presto",
    "clickhouse": "clickhouse",
    "databricks": "databricks",
}


def jdbc_query_datasets(url: str, query: str) -> list[DatasetId]:
    """The tables a query read over JDBC reads (``(SELECT … FROM a JOIN b …) q``, or the ``query``
    option, which Spark wraps the same way), each named as ``jdbc_dataset`` names a table; its own
    CTEs are not tables. Empty when the query cannot be parsed in its database's dialect.

    Each carries, in ``columns``, the query's output columns that copy one of its columns as they are
    (``SELECT id, o.name AS customer FROM orders o``; ``*`` over a single table copies them all):
    those have column lineage through the query; computed ones do not."""
    subprotocol = (
        url[len("jdbc:") :].partition(":")[0].lower() if url.lower().startswith("jdbc:") else ""
    )
    dialect = _JDBC_DIALECTS.get(subprotocol)
    try:
        tree = sqlglot.parse_one(f"SELECT * FROM {query}", read=dialect)
    except sqlglot.errors.SqlglotError:
        return []
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}

    def dataset_of(table: exp.Table) -> DatasetId | None:
        parts = [p for p in table.parts if isinstance(p, exp.Identifier)]
        if not parts or len(parts) != len(table.parts):  # a table function, a variable
            return None
        if len(parts) == 1 and parts[0].name.lower() in ctes:
            return None
        return jdbc_dataset(url, ".".join(p.sql(dialect=dialect) for p in parts))

    found: dict[tuple[str, str], DatasetId] = {}
    for table in tree.find_all(exp.Table, bfs=False):  # in the order the query names them
        dataset = dataset_of(table)
        if dataset is not None:
            found.setdefault(dataset.key, replace(dataset, through_query=True))
    copies = _copied_columns(tree, dataset_of, fold=subprotocol == "postgresql")
    return [replace(d, columns=tuple(sorted(copies.get(key, {}).items()))) for key, d in found.items()]


def _copied_columns(
    tree: Any, dataset_of: Callable[[exp.Table], DatasetId | None], *, fold: bool
) -> dict[tuple[str, str], dict[str, str]]:
    """Per table (its dataset key): the query's output column (lower case) -> the table's column it
    copies, ``*`` -> ``*`` when it copies every column. Read from the query's own SELECT (the one
    Spark wraps in ``SELECT * FROM (…) alias``); a union, a subquery in FROM or a column of no one
    table copies nothing."""
    subquery = _from(tree)
    select = subquery.this if isinstance(subquery, exp.Subquery) else None
    if not isinstance(select, exp.Select):
        return {}
    first = _from(select)
    sources = [first] if first is not None else []
    sources += [join.this for join in select.args.get("joins") or []]
    tables: dict[str, tuple[str, str]] = {}  # name or alias (lower case) -> dataset key
    for source in sources:
        dataset = dataset_of(source) if isinstance(source, exp.Table) else None
        if dataset is not None:
            tables[source.alias_or_name.lower()] = dataset.key
    only = next(iter(tables.values())) if len(tables) == len(sources) == 1 else None

    def name(identifier: exp.Identifier) -> str:
        return identifier.name.lower() if fold and not identifier.quoted else identifier.name

    copies: dict[tuple[str, str], dict[str, str]] = {}
    for projection in select.expressions:
        column = projection.this if isinstance(projection, exp.Alias) else projection
        if isinstance(column, exp.Star) and only is not None:
            copies.setdefault(only, {})["*"] = "*"
            continue
        if not isinstance(column, exp.Column) or not isinstance(column.this, exp.Identifier):
            continue
        table = tables.get(column.table.lower()) if column.table else only
        if table is not None:
            copies.setdefault(table, {})[projection.alias_or_name.lower()] = name(column.this)
    return copies


def _from(select: Any) -> Any:
    """What a SELECT's FROM names (sqlglot calls the argument ``from_`` since version 28)."""
    clause = select.args.get("from_") or select.args.get("from")
    return clause.this if clause is not None else None


def _jdbc_property(properties: str, wanted: str) -> str | None:
    for item in properties.split(";"):
        name, _, value = item.partition("=")
        if name.strip().lower() == wanted and value.strip():
            return value.strip()
    return None


def _identifiers(table: str, *, fold: bool) -> list[str]:
    """The dot-separated parts of a table name; quotes (", `, []) removed, unquoted parts lower-cased
    when ``fold``."""
    parts = []
    for raw in re.findall(r'"(?:[^"]|"")*"|`[^`]*`|\[[^\]]*\]|[^.]+', table.strip()):
        if raw[0] in '"`[':
            parts.append(raw[1:-1].replace('""', '"'))
        else:
            parts.append(raw.strip().lower() if fold else raw.strip())
    return parts


def _strip_trailing_slash(path: str) -> str:
    return path.rstrip("/") or "/"


def table_name(database: str | None, table: str) -> str:
    """``db.table`` (the official integration leaves the catalog name out)."""
    return f"{database}.{table}" if database else table


def table_symlink(location: str, database: str | None, table: str, metastore_uri: str | None) -> Symlink:
    """The TABLE symlink of a catalog table stored at ``location``.

    With a Hive metastore: ``hive://host:port`` + ``db.table``. Without one (Spark's built-in catalog),
    the official integration uses the table location's parent (the warehouse) as namespace.
    """
    name = table_name(database, table)
    if metastore_uri:
        return Symlink(hive_namespace(metastore_uri), name)
    parent = location.rstrip("/").rsplit("/", 1)[0]
    return Symlink(parent, name)


def hive_namespace(metastore_uri: str) -> str:
    """``thrift://host:9083`` (first of a list) -> ``hive://host:9083``."""
    first = metastore_uri.split(",")[0].strip()
    parts = urlsplit(first if "://" in first else f"thrift://{first}")
    host = parts.hostname or "localhost"
    return f"hive://{host}:{parts.port}" if parts.port else f"hive://{host}"


def table_dataset(
    location: str, database: str | None, table: str, metastore_uri: str | None = None
) -> DatasetId:
    """A catalog table: named by its storage location, with a TABLE symlink to its table name."""
    base = dataset_from_location(location)
    return DatasetId(
        base.namespace, base.name, (table_symlink(location, database, table, metastore_uri),)
    )


_TRIM_START = re.compile(r"^[^\w]+", re.ASCII)
_TRIM_END = re.compile(r"[^\w]+$", re.ASCII)
_LOWER_UPPER = re.compile(r"([a-z])([A-Z])")
_WORD_START = re.compile(r"(?<!^)([A-Z])([a-z])")
_DIGIT_END = re.compile(r"(\d)(?=\D)")
_NON_ALNUM = re.compile(r"[^a-zA-Z0-9]+")


def normalize_name(name: str) -> str:
    """snake_case exactly as the official integration's NameNormalizer writes job names:
    ``Execute InsertIntoX`` -> ``execute_insert_into_x``, ``Some job (Like from James)`` ->
    ``some_job_like_from_james``, ``OLT-58`` -> ``olt_58``, ``E2E`` -> ``e2_e``."""
    text = _TRIM_END.sub("", _TRIM_START.sub("", name))
    text = "".join(
        c for c in unicodedata.normalize("NFKD", text) if not unicodedata.category(c).startswith("M")
    )
    text = _LOWER_UPPER.sub(r"\1 \2", text)
    text = _WORD_START.sub(r" \1\2", text)
    text = _DIGIT_END.sub(r"\1 ", text)
    return _NON_ALNUM.sub("_", text.lower())


_FILE_STREAM_SOURCE = re.compile(r"FileStreamSource\[(?P<path>.+)\]", re.DOTALL)
_FILE_STREAM_SINK = re.compile(r"FileSink\[(?P<path>.+)\]", re.DOTALL)


def stream_source_dataset(description: str) -> DatasetId | None:
    """The dataset a streaming query's source names in its description (``FileStreamSource[path]``:
    files, or a table stored as files), or None (Kafka, rate, socket…)."""
    found = _FILE_STREAM_SOURCE.fullmatch(description.strip())
    return dataset_from_location(found["path"]) if found else None


def stream_sink_dataset(description: str) -> DatasetId | None:
    """The dataset a streaming query's sink names in its description (``FileSink[path]``), or None
    (foreachBatch, memory, console…)."""
    found = _FILE_STREAM_SINK.fullmatch(description.strip())
    return dataset_from_location(found["path"]) if found else None


def path_suffix(path: str) -> str:
    """Job name suffix of a path output: its last two segments, ``/a/b/c`` -> ``b_c``."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2:
        return f"{parts[-2]}_{parts[-1]}"
    return parts[-1] if parts else path


def job_name(app: str, node: str | None, suffix: str | None) -> str:
    """``<app>.<node>.<suffix>``; dots inside the suffix become underscores."""
    name = app
    if node:
        name += "." + normalize_name(node)
    if suffix:
        name += "." + suffix.replace(".", "_")
    return name
