"""What a query's FROM clause offers to its column references, and how a reference is resolved.

A column resolves to a set of refs, `(table, column)` pairs, with table "" when no table can be
told. The rule for unqualified columns, in order: a column of a USING join, from every side of
it; the one source known to have the column (from the schema, a CTE or derived table, or an
earlier statement); else, in dialects with lateral column aliases, a projection alias defined
before it in the same SELECT; else the only source whose columns are unknown (in an UPDATE, the
target when several are); else an enclosing query's sources (correlated subqueries); else the
column is reported bare. A column read through a `*` over several tables whose columns are not
known may come from any of them, and is reported from each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from sqlglot import exp

from headwater.sql_lineage.names import key

Ref = tuple[str, str]
STAR = "*"

# Indexes into model.TRANSFORMATIONS, so that combining two steps is max().
IDENTITY, TRANSFORMATION, AGGREGATION, INDIRECT = range(4)


class Field(NamedTuple):
    """One output column of a relation; name "*" stands for the columns of tables not known.

    A named tuple rather than a frozen dataclass: as immutable, and made several times faster,
    which counts for the thousands a script's columns make.
    """

    name: str
    refs: frozenset[Ref]
    kind: int = IDENTITY


def star_field(table: str) -> Field:
    """All columns of a table whose columns are not known."""
    return Field(STAR, frozenset({(table, STAR)}))


def through_star(star: Field, name: str) -> frozenset[Ref]:
    """The refs of column `name` taken from a relation that only passed `*` through."""
    return frozenset((table, name if column == STAR else column) for table, column in star.refs)


@dataclass(slots=True)
class Source:
    """A FROM item: a base table (`table`), a relation (`fields`), or a table function (`open`)."""

    table: str | None = None
    columns: list[str] | None = None
    fields: list[Field] | None = None
    open: Field | None = None
    _index: dict[str, Field] | None = None
    _column_keys: set[str] | None = None

    def field(self, name: str) -> Field | None:
        """The named output field of a relation source, if it has one by that name."""
        if self.fields is None:
            return None
        if self._index is None:
            self._index = {}
            for f in self.fields:
                self._index.setdefault(key(f.name), f)
        return self._index.get(key(name))

    def knows(self, name: str) -> bool:
        """Whether this source is known to have a column called `name`."""
        if self.field(name) is not None:
            return True
        if self.columns is None:
            return False
        if self._column_keys is None:
            self._column_keys = {key(c) for c in self.columns}
        return key(name) in self._column_keys

    def is_unknown(self) -> bool:
        """Whether this source may have columns nobody listed: a table without schema or a `*`."""
        if self.table is not None and self.columns is None:
            return True
        if self.fields is not None:
            return self.field(STAR) is not None
        return self.open is not None

    def resolve(self, name: str) -> tuple[frozenset[Ref], int]:
        """The refs and transformation of column `name` of this source."""
        found = self.field(name)
        if found is not None:
            return found.refs, found.kind
        if self.table is not None:
            return frozenset({(self.table, name)}), IDENTITY
        if self.fields is not None:
            stars = [f for f in self.fields if f.name == STAR]
            if stars:
                refs: frozenset[Ref] = frozenset().union(*(through_star(s, name) for s in stars))
                return refs, max(s.kind for s in stars)
        if self.open is not None:
            return self.open.refs, self.open.kind
        return frozenset(), IDENTITY

    def expand(self) -> list[Field]:
        """The fields a `*` over this source selects."""
        extra = list(self.fields or [])
        if self.table is not None:
            if self.columns is None:
                return [star_field(self.table), *extra]
            return [Field(c, frozenset({(self.table, c)})) for c in self.columns] + extra
        return extra


@dataclass(slots=True)
class Scope:
    """The sources and aliases visible in one SELECT, and the enclosing SELECT's scope."""

    parent: Scope | None = None
    sources: dict[str, Source] = field(default_factory=dict)
    full_names: dict[str, Source] = field(default_factory=dict)
    hidden: set[str] = field(default_factory=set)
    aliases: dict[str, Field] = field(default_factory=dict)
    using: dict[str, list[Source]] = field(default_factory=dict)
    windows: dict[str, exp.Window] = field(default_factory=dict)
    preferred: Source | None = None

    def add(self, alias: str, source: Source, full_name: str | None = None) -> None:
        """Make `source` visible under `alias` (and under its full table name)."""
        k = key(alias) if alias else f"#{len(self.sources)}"
        self.sources[k] = source
        if full_name:
            self.full_names.setdefault(key(full_name), source)

    def lookup(self, qualifier: str) -> Source | None:
        """The source a qualifier (alias, table name or dotted table name) names, inner scopes first."""
        k = key(qualifier)
        scope: Scope | None = self
        while scope is not None:
            found = scope.sources.get(k) or scope.full_names.get(k)
            if found is not None:
                return found
            scope = scope.parent
        return None

    def resolve_unqualified(self, name: str) -> tuple[frozenset[Ref], int]:
        """Resolve a column written without a table, by the rule in this module's docstring."""
        scope: Scope | None = self
        while scope is not None:
            found, ambiguous = scope._resolve_here(name)
            if found is not None:
                return found
            if ambiguous:
                break
            scope = scope.parent
        return frozenset({("", name)}), IDENTITY

    def _resolve_here(self, name: str) -> tuple[tuple[frozenset[Ref], int] | None, bool]:
        """Resolve in this scope alone; the flag says several sources may have the column."""
        k = key(name)
        shared = self.using.get(k)
        if shared:
            resolved = [source.resolve(name) for source in shared]
            refs: frozenset[Ref] = frozenset().union(*(r for r, _ in resolved))
            return (refs, max(kind for _, kind in resolved)), False
        unknown: list[Source] = []
        for source_key, source in self.sources.items():
            if source_key in self.hidden:
                continue
            if source.knows(name):
                return source.resolve(name), False
            if source.is_unknown():
                unknown.append(source)
        alias = self.aliases.get(k)
        if alias is not None:
            return (alias.refs, alias.kind), False
        if len(unknown) == 1:
            return unknown[0].resolve(name), False
        if self.preferred is not None and any(s is self.preferred for s in unknown):
            return self.preferred.resolve(name), False
        return None, bool(unknown)

    def star_sources(self) -> list[Source]:
        """Sources a bare `*` selects from, in FROM order."""
        return [s for k, s in self.sources.items() if k not in self.hidden]
