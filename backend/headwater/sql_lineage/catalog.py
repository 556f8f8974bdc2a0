"""The catalog of columns known for each table while a script is read: those the script defines,
then the caller's schema, and the query each view or table was created from."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from headwater.sql_lineage.names import key

if TYPE_CHECKING:
    from headwater.sql_lineage.scope import Field

# Columns of tables as a caller gives them: {"db.orders": {"id": "int", …}}.
Schema = dict[str, dict[str, str]]

# A name and a longer one are one table when the shorter is the longer's last parts, up to this
# many: catalog.schema.table, and a server or a nested namespace before them. Matched by every
# suffix, a name of thousands of parts cost time and memory in the square of its length (a schema
# key of 30,000 parts: 3.8 s and 900 MB; a table of 60,000 parts in a query: 13.5 s).
_MATCHED_PARTS = 4


def read_schema(value: Any) -> Schema:
    """Tables' columns as given in JSON: ``{"table": {"column": "type", …}}`` (a type may be null)
    or ``{"table": ["column", …]}``; anything else is a ValueError saying where it is wrong."""
    if not isinstance(value, dict):
        raise ValueError("expected a JSON object of tables")
    schema: Schema = {}
    for table, columns in value.items():
        if isinstance(columns, list) and all(isinstance(c, str) for c in columns):
            schema[table] = dict.fromkeys(columns, "")
        elif isinstance(columns, dict) and all(
            isinstance(t, str) or t is None for t in columns.values()
        ):
            schema[table] = {c: t or "" for c, t in columns.items()}
        else:
            raise ValueError(
                f"table {table!r}: expected an object of column types or a list of column names"
            )
    return schema


class Catalog:
    """Columns known per table: those the script itself defines first, then the caller's schema."""

    def __init__(self, schema: Schema | None = None) -> None:
        self._defined: dict[str, list[str] | None] = {}
        self._schema: dict[str, list[str]] = {}
        # The dotted suffixes of a schema name (of up to _MATCHED_PARTS parts), so `orders` finds
        # `shop.public.orders` and `public.orders` finds it too, unless two tables share it.
        self._suffixes: dict[str, list[str] | None] = {}
        # The query of each view or table the script created from one, with the tables it
        # reads: a later REFRESH runs it again.
        self._queries: dict[str, tuple[dict[str, Field], dict[str, str]]] = {}
        for name, columns in (schema or {}).items():
            full = key(name)
            self._schema[full] = list(columns)
            parts = full.split(".")
            for i in range(max(1, len(parts) - _MATCHED_PARTS), len(parts)):
                suffix = ".".join(parts[i:])
                self._suffixes[suffix] = None if suffix in self._suffixes else self._schema[full]

    def columns(self, name: str) -> list[str] | None:
        """The ordered columns of a table, or None when neither the script nor the schema says."""
        k = key(name)
        if k in self._defined:
            return self._defined[k]
        found = self._schema.get(k)
        if found is not None:
            return found
        found = self._suffixes.get(k)
        if found is not None:
            return found
        parts = k.split(".")
        for i in range(max(1, len(parts) - _MATCHED_PARTS), len(parts)):
            found = self._schema.get(".".join(parts[i:]))
            if found is not None:
                return found
        return None

    def define(self, name: str, columns: list[str] | None) -> None:
        """Record the columns a statement gave a table (None: they are no longer known)."""
        self._defined[key(name)] = columns

    def remember_query(self, name: str, columns: dict[str, Field], reads: dict[str, str]) -> None:
        """Keep the lineage of the query a view or table was created from, for its refreshes."""
        self._queries[key(name)] = (dict(columns), dict(reads))

    def stored_query(self, name: str) -> tuple[dict[str, Field], dict[str, str]] | None:
        """The columns and tables of the query `name` was created from in this script, if it was."""
        return self._queries.get(key(name))
