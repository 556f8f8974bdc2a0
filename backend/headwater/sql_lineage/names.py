"""Table names as the SQL writes them.

Names keep the spelling and qualification of the SQL (`cat.sch.tbl` if written so, no default
schema added); files and stages read or written directly are named `path:<uri>`. Two spellings
of one name are the same table when they match ignoring case.
"""

from __future__ import annotations

from sqlglot import exp

# Spark's `parquet.`s3://bucket/path`` reads files directly; the prefix names the format.
_FILE_FORMATS = {
    "parquet",
    "csv",
    "json",
    "orc",
    "avro",
    "delta",
    "text",
    "binaryfile",
    "iceberg",
    "hudi",
}


def key(name: str) -> str:
    """The identity of a table or column name: spellings that differ only in case are one."""
    return name.casefold()


def path_name(uri: str) -> str:
    """The name of a file, directory or stage read or written by location rather than by table."""
    return f"path:{uri}"


def _looks_like_path(text: str) -> bool:
    return "/" in text or "://" in text or text.startswith("@")


def table_name(table: exp.Table) -> str | None:
    """The name of a table as the SQL qualifies it, `path:<uri>` for files; None for table functions."""
    this = table.this
    if isinstance(this, exp.Identifier):
        db = table.args.get("db")
        if this.quoted and _looks_like_path(this.name) and (not db or db.name.lower() in _FILE_FORMATS):
            return path_name(this.name)
        return ".".join([_part_name(part) for part in table.parts])
    if isinstance(this, exp.Literal) and this.is_string:
        return path_name(this.name)
    if isinstance(this, exp.Var):
        return (
            path_name(this.name) if this.name.startswith("@") else ".".join(p.name for p in table.parts)
        )
    if isinstance(this, exp.Func):
        uri = _file_argument(this)
        return path_name(uri) if uri else _remote_table(this)
    if isinstance(this, exp.Dot):
        return ".".join(part.name for part in table.parts)
    return None


def file_list(func: exp.Func) -> list[str]:
    """The files a file-reading table function is given as a list: read_csv(['a', 'b'])."""
    if _file_argument(func) is None:
        return []
    first = next(func.iter_expressions(), None)
    if not isinstance(first, exp.Array):
        return []
    return [path_name(v.name) for v in first.expressions if isinstance(v, exp.Literal) and v.is_string]


# ClickHouse's table functions that read a table of other servers: (address, db, table) or
# (address, db.table), the same table as local tables of that name hold.
_REMOTE_TABLES = {"remote", "remotesecure", "cluster", "clusterallreplicas"}


def _remote_table(func: exp.Func) -> str | None:
    """The table ClickHouse's remote('host', 'db', 'table') or cluster('c', db.table) reads."""
    if not isinstance(func, exp.Anonymous) or func.name.lower() not in _REMOTE_TABLES:
        return None
    args = func.expressions[1:]
    if len(args) >= 2 and all(isinstance(a, exp.Literal) and a.is_string for a in args[:2]):
        return f"{args[0].name}.{args[1].name}"
    if args and isinstance(args[0], (exp.Column, exp.Dot)):
        return ".".join(part.name for part in args[0].parts)
    if args and isinstance(args[0], exp.Literal) and args[0].is_string:
        return args[0].name
    return None


def _part_name(part: exp.Expr) -> str:
    """A name part as written: T-SQL's temporary tables keep their `#` (`##` for global ones), so
    that `#orders` is not taken for the table `orders`."""
    if part.args.get("global_"):
        return f"##{part.name}"
    if part.args.get("temporary"):
        return f"#{part.name}"
    return part.name


def _file_argument(func: exp.Func) -> str | None:
    """The location read by a file-reading table function such as DuckDB's read_parquet('s3://…')."""
    name = (func.sql_name() if not isinstance(func, exp.Anonymous) else func.name).lower()
    if name == "openrowset" and len(func.expressions) != 1:
        return None  # OPENROWSET('provider', 'connection', 'query'): a remote query
    if not name.startswith("read") and name not in {
        "openrowset",
        "parquet_scan",
        "csv_scan",
        "s3",
        "hdfs",
        "file",
        "url",
    }:
        return None
    for arg in func.iter_expressions():
        for literal in [arg] if isinstance(arg, exp.Literal) else arg.find_all(exp.Literal):
            if literal.is_string:
                return literal.name
    return None


def qualify_like(new: exp.Table, old: exp.Table) -> str | None:
    """A renamed table's name: an unqualified new name stays in the old one's schema (PostgreSQL)."""
    name = table_name(new)
    if name is None or new.args.get("db") or not old.args.get("db"):
        return name
    old_name = table_name(old)
    if old_name is None:
        return name
    return f"{old_name.rsplit('.', 1)[0]}.{name}"
