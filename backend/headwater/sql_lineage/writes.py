"""What a statement writes: the table, and each written column with the refs it comes from."""

from __future__ import annotations

from dataclasses import dataclass, field

from headwater.sql_lineage.names import key
from headwater.sql_lineage.scope import STAR, Field, Ref


@dataclass(slots=True)
class Write:
    """A table a statement writes, with its written columns keyed by lower-cased name."""

    table: str
    columns: dict[str, Field] = field(default_factory=dict)
    creates: bool = False


def assign(columns: dict[str, Field], name: str, value: Field) -> None:
    """Record that column `name` is written from `value`, adding to what was already written."""
    previous = columns.get(key(name))
    if previous is not None:
        columns[key(name)] = Field(
            previous.name, previous.refs | value.refs, max(previous.kind, value.kind)
        )
    else:
        columns[key(name)] = Field(name, value.refs, value.kind)


def map_columns(fields: list[Field], targets: list[str] | None) -> dict[str, Field]:
    """Name the query's fields after the target columns, by position; by their own names if none.

    A `*` over a table whose columns are not known cannot be lined up with a column list, so
    then the fields keep their own names and the star its `*`.
    """
    if targets is None or any(f.name == STAR for f in fields[: len(targets)]):
        pairs = [(f.name, f) for f in fields]
    else:
        pairs = list(zip(targets, fields, strict=False))
    # Fields of one name (the stars of a FROM of thousands of tables) are gathered first and
    # made one field once: `assign` for each would copy the refs gathered so far every time.
    names: dict[str, str] = {}
    refs: dict[str, set[Ref]] = {}
    kinds: dict[str, int] = {}
    for name, f in pairs:
        k = key(name)
        names.setdefault(k, name)
        refs.setdefault(k, set()).update(f.refs)
        kinds[k] = max(kinds.get(k, f.kind), f.kind)
    return {k: Field(name, frozenset(refs[k]), kinds[k]) for k, name in names.items()}


def known_names(mapped: dict[str, Field]) -> list[str] | None:
    """The column names a written relation is known to have; None when a `*` hides some."""
    if STAR in mapped:
        return None
    return [f.name for f in mapped.values()]
