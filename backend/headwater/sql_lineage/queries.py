"""Column lineage of a query: each output column with the table columns its value comes from.

The AST is walked once, without sqlglot's qualify step or its per-column `lineage()`: every
relation (CTE, derived table, set operation) is evaluated to a list of `Field`s, and a column
reference is looked up in the scope of the SELECT it belongs to. A column's inputs are all the
columns in its projection expression, CASE conditions and window keys included, traced through
CTEs and subqueries; columns used only to filter, join, group or sort are not inputs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from headwater.sql_lineage.names import key, table_name
from headwater.sql_lineage.scope import (
    AGGREGATION,
    IDENTITY,
    INDIRECT,
    STAR,
    TRANSFORMATION,
    Field,
    Ref,
    Scope,
    Source,
)

if TYPE_CHECKING:
    from headwater.sql_lineage.names import Catalog

Ctes = dict[str, list[Field]]

# Arguments that steer a value without being part of it: CASE conditions, window keys, filters.
_INDIRECT_ARGS = {
    (exp.If, "this"),
    (exp.Case, "this"),
    (exp.Window, "partition_by"),
    (exp.Window, "order"),
    (exp.Filter, "expression"),
}
_MEMBERSHIP = (exp.In, exp.Exists, exp.Any, exp.All)
_NO_LINEAGE_CLAUSES = ("expressions", "from_", "joins", "laterals", "with_", "into")


class QueryEvaluator:
    """Evaluates queries to fields, and records every base table they read."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.reads: dict[str, str] = {}

    def read(self, name: str) -> None:
        """Record that the statement reads table `name`."""
        self.reads.setdefault(key(name), name)

    # Relations ---------------------------------------------------------------------------

    def query(self, node: exp.Expr, ctes: Ctes, outer: Scope | None = None) -> list[Field]:
        """The output fields of a query expression (SELECT, set operation, VALUES, TABLE t)."""
        if isinstance(node, exp.Subquery):
            ctes = self.with_ctes(node, ctes, outer)
            return self.query(node.this, ctes, outer)
        if isinstance(node, exp.Select):
            return self._select(node, ctes, outer)
        if isinstance(node, exp.SetOperation):
            ctes = self.with_ctes(node, ctes, outer)
            left = self.query(node.this, ctes, outer)
            right = self.query(node.expression, ctes, outer)
            return _merge(left, right, by_name=bool(node.args.get("by_name")))
        if isinstance(node, exp.Values):
            return _values_fields(node)
        if isinstance(node, exp.Table):
            scope = Scope(parent=outer)
            self.add_source(scope, node, ctes)
            return [f for source in scope.star_sources() for f in source.expand()]
        self.expression(node, Scope(parent=outer), ctes)
        return []

    def with_ctes(self, node: exp.Expr, ctes: Ctes, outer: Scope | None) -> Ctes:
        """The CTEs visible inside `node`: the enclosing ones plus those of its WITH clause."""
        with_ = node.args.get("with_")
        if not with_:
            return ctes
        ctes = dict(ctes)
        for cte in with_.expressions:
            name = key(cte.alias)
            columns = cte.alias_column_names
            body = cte.this
            if with_.args.get("recursive") and isinstance(body, exp.SetOperation):
                # The recursive part reads the CTE itself: give it the anchor's lineage first.
                ctes[name] = _rename(self.query(body.this, ctes, outer), columns)
            ctes[name] = _rename(self.query(body, ctes, outer), columns)
        return ctes

    def _select(self, select: exp.Select, ctes: Ctes, outer: Scope | None) -> list[Field]:
        ctes = self.with_ctes(select, ctes, outer)
        scope = Scope(parent=outer)
        from_ = select.args.get("from_")
        if from_:
            self.add_source(scope, from_.this, ctes)
        for join in select.args.get("joins") or []:
            self._join(scope, join, ctes)
        for lateral in select.args.get("laterals") or []:
            self.add_source(scope, lateral, ctes)

        for window in select.args.get("windows") or []:
            scope.windows[key(window.name)] = window

        fields: list[Field] = []
        for index, projection in enumerate(select.expressions):
            if _is_star(projection):
                fields.extend(self._star(projection, scope, ctes))
                continue
            refs, kind = self.expression(projection, scope, ctes)
            name = projection.output_name or f"_col_{index}"
            field = Field(name, refs, kind)
            fields.append(field)
            scope.aliases.setdefault(key(name), field)

        # Filters, grouping and ordering feed no column, but their subqueries read tables.
        for arg, value in select.args.items():
            if arg not in _NO_LINEAGE_CLAUSES and isinstance(value, exp.Expr):
                self.expression(value, scope, ctes)
        return fields

    def _join(self, scope: Scope, join: exp.Join, ctes: Ctes) -> None:
        before = set(scope.sources)
        self.add_source(scope, join.this, ctes)
        added = [k for k in scope.sources if k not in before]
        if join.is_semi_or_anti_join:
            scope.hidden.update(added)
        for column in join.args.get("using") or []:
            # USING (id): an unqualified `id` is the left side's (the right one when outer).
            name = key(column.name)
            for k, source in scope.sources.items():
                if k not in added and (source.knows(column.name) or source.is_unknown()):
                    scope.using.setdefault(name, source)
                    break
        on = join.args.get("on")
        if on is not None:
            self.expression(on, scope, ctes)

    # Sources -----------------------------------------------------------------------------

    def add_source(self, scope: Scope, node: exp.Expr, ctes: Ctes, *, read: bool = True) -> Source:
        """Make a FROM item visible in `scope`; base tables are recorded as read unless told."""
        if isinstance(node, exp.Final):
            node = node.this
        alias = node.alias if isinstance(node.args.get("alias"), exp.TableAlias) else ""
        source: Source
        if isinstance(node, exp.Table):
            source = self._table_source(scope, node, ctes, read=read)
            name = table_name(node)
            scope.add(_pivot_alias(node) or alias or node.name, source, name)
            for join in node.args.get("joins") or []:
                self._join(scope, join, ctes)
            return source
        if isinstance(node, exp.Subquery) and not isinstance(node.this, exp.Query):
            # (a JOIN b ON …): parentheses around joins, not a relation of its own.
            self.add_source(scope, node.this, ctes, read=read)
            for join in node.args.get("joins") or []:
                self._join(scope, join, ctes)
            return scope.sources[next(reversed(scope.sources))]
        if isinstance(node, exp.Subquery):
            fields = self.query(node.this, self.with_ctes(node, ctes, scope), scope)
            source = Source(fields=_rename(fields, node.alias_column_names))
        elif isinstance(node, exp.Values):
            source = Source(fields=_values_fields(node))
        elif isinstance(node, (exp.Unnest, exp.Lateral)):
            source = self._function_source(scope, node, ctes)
        else:
            refs, _ = self.expression(node, scope, ctes)
            source = Source(open=Field(STAR, refs, TRANSFORMATION))
        scope.add(alias, source)
        for join in node.args.get("joins") or []:
            self._join(scope, join, ctes)
        return source

    def _table_source(self, scope: Scope, table: exp.Table, ctes: Ctes, *, read: bool) -> Source:
        name = table_name(table)
        if name is None:
            # A table function such as generate_series(…) or FLATTEN(input => t.arr).
            refs, _ = self.expression(table.this, scope, ctes)
            return Source(open=Field(STAR, refs, TRANSFORMATION), fields=_alias_fields(table, refs))
        if not table.args.get("db") and key(table.name) in ctes:
            fields = _rename(ctes[key(table.name)], table.alias_column_names)
            return Source(fields=fields)
        if read:
            self.read(name)
        source = Source(table=name, columns=self.catalog.columns(name))
        if table.alias_column_names and source.columns is None:
            source.columns = [c for c in table.alias_column_names]
        for pivot in table.args.get("pivots") or []:
            source.fields = (source.fields or []) + _pivot_fields(pivot, name)
        return source

    def _function_source(self, scope: Scope, node: exp.Unnest | exp.Lateral, ctes: Ctes) -> Source:
        """UNNEST(arr) AS x(c), LATERAL VIEW explode(arr) x AS c, LATERAL (subquery)."""
        inner = node.this if isinstance(node, exp.Lateral) else None
        if isinstance(inner, (exp.Subquery, exp.Query)):
            fields = self.query(inner, ctes, scope)
            return Source(fields=_rename(fields, node.alias_column_names))
        arguments = node.expressions if isinstance(node, exp.Unnest) else [node.this]
        per_argument = [self.expression(arg, scope, ctes)[0] for arg in arguments]
        refs: frozenset[Ref] = frozenset().union(*per_argument)
        names = list(node.alias_column_names)
        fields = [
            Field(name, per_argument[i] if len(per_argument) == len(names) else refs, TRANSFORMATION)
            for i, name in enumerate(names)
        ]
        offset = node.args.get("offset") if isinstance(node, exp.Unnest) else None
        if isinstance(offset, exp.Expr):
            fields.append(Field(offset.name, frozenset(), TRANSFORMATION))
        if fields:
            return Source(fields=fields)
        return Source(open=Field(STAR, refs, TRANSFORMATION))

    # Expressions -------------------------------------------------------------------------

    def expression(self, node: exp.Expr, scope: Scope, ctes: Ctes) -> tuple[frozenset[Ref], int]:
        """The refs an expression's value is computed from, and how (a TRANSFORMATIONS index)."""
        inner = node
        while isinstance(inner, (exp.Alias, exp.Paren)):
            inner = inner.this
        if isinstance(inner, exp.Column) and not isinstance(inner.this, exp.Star):
            return self.column(inner, scope)

        value = _Value()
        stack: list[tuple[exp.Expr, bool]] = [(inner, False)]
        while stack:
            current, indirect = stack.pop()
            if isinstance(current, exp.Column):
                if not isinstance(current.this, exp.Star):
                    value.add(*self.column(current, scope), indirect=indirect)
            elif isinstance(current, (exp.Query, exp.Subquery)):
                fields = self.query(current, ctes, scope)
                # x IN (SELECT y …) tests membership: y does not flow into the value.
                if not isinstance(current.parent, _MEMBERSHIP):
                    for f in fields:
                        value.add(f.refs, f.kind, indirect=indirect)
            else:
                value.aggregate = value.aggregate or isinstance(current, exp.AggFunc)
                stack.extend(_children(current, indirect, scope))
        return value.result()

    def column(self, column: exp.Column, scope: Scope) -> tuple[frozenset[Ref], int]:
        """Resolve one column reference in `scope`."""
        name = column.name
        qualifier = column.table
        if not qualifier:
            return scope.resolve_unqualified(name)
        parts = [p.name for p in column.parts[:-1]]
        source = scope.lookup(".".join(parts))
        if source is not None:
            return source.resolve(name)
        source = scope.lookup(qualifier)
        if source is not None:
            return source.resolve(name)
        if len(parts) >= 2:
            # o.address.city: field `city` of struct column `address` of source `o`.
            owner = scope.lookup(parts[-2])
            if owner is not None:
                return owner.resolve(qualifier)
        refs, kind = scope.resolve_unqualified(qualifier)
        if refs and all(table for table, _ in refs):
            # address.city with no source called `address`: a struct column of the FROM table.
            return refs, max(kind, TRANSFORMATION)
        return frozenset({(".".join(parts), name)}), IDENTITY

    def _star(self, projection: exp.Expr, scope: Scope, ctes: Ctes) -> list[Field]:
        star = projection if isinstance(projection, exp.Star) else projection.this
        if isinstance(projection, exp.Column) and projection.table:
            source = scope.lookup(".".join(p.name for p in projection.parts[:-1]))
            fields = source.expand() if source is not None else []
        else:
            fields = [f for source in scope.star_sources() for f in source.expand()]
        if not isinstance(star, exp.Star):
            return fields
        excluded = {key(c.output_name) for c in star.args.get("except_") or []}
        replaced = {}
        for alias in star.args.get("replace") or []:
            refs, kind = self.expression(alias, scope, ctes)
            replaced[key(alias.output_name)] = Field(alias.output_name, refs, kind)
        return [replaced.get(key(f.name), f) for f in fields if key(f.name) not in excluded]


class _Value:
    """The refs collected from one expression, and whether any reach its value directly."""

    __slots__ = ("aggregate", "direct", "kind", "refs")

    def __init__(self) -> None:
        self.refs: set[Ref] = set()
        self.kind = IDENTITY
        self.direct = False
        self.aggregate = False

    def add(self, refs: frozenset[Ref], kind: int, *, indirect: bool) -> None:
        self.refs.update(refs)
        if refs and not indirect:
            self.direct = True
            self.kind = max(self.kind, kind)

    def result(self) -> tuple[frozenset[Ref], int]:
        if not self.direct:
            return frozenset(self.refs), INDIRECT
        return frozenset(self.refs), max(self.kind, AGGREGATION if self.aggregate else TRANSFORMATION)


def _children(node: exp.Expr, indirect: bool, scope: Scope) -> list[tuple[exp.Expr, bool]]:
    """The sub-expressions of `node`, each marked when it only steers the value."""
    children: list[tuple[exp.Expr, bool]] = []
    if isinstance(node, exp.Window) and node.args.get("alias"):
        # OVER w: the keys of WINDOW w AS (…) steer this value too.
        named = scope.windows.get(key(node.args["alias"].name))
        if named is not None:
            children.append((named, True))
    for arg, value in node.args.items():
        if value is None or isinstance(value, (str, bool)):
            continue
        steer = indirect or (type(node), arg) in _INDIRECT_ARGS
        if isinstance(value, list):
            children.extend((v, steer) for v in value if isinstance(v, exp.Expr))
        elif isinstance(value, exp.Expr):
            children.append((value, steer))
    return children


def _is_star(projection: exp.Expr) -> bool:
    return isinstance(projection, exp.Star) or (
        isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)
    )


def _rename(fields: list[Field], names: list[str]) -> list[Field]:
    """Apply a column list (`AS x(a, b)`, `WITH x(a, b)`) to a relation, by position."""
    if not names:
        return fields
    renamed = []
    for i, f in enumerate(fields):
        if f.name == STAR or i >= len(names):
            renamed.extend(fields[i:])
            break
        renamed.append(Field(names[i], f.refs, f.kind))
    return renamed


def _merge(left: list[Field], right: list[Field], *, by_name: bool) -> list[Field]:
    """The fields of a UNION / INTERSECT / EXCEPT: by position, or by name when told or needed."""
    if not by_name and len(left) == len(right):
        return [
            Field(a.name, a.refs | b.refs, max(a.kind, b.kind)) for a, b in zip(left, right, strict=True)
        ]
    others = {key(f.name): f for f in right}
    merged = []
    for f in left:
        other = others.pop(key(f.name), None)
        merged.append(
            f if other is None else Field(f.name, f.refs | other.refs, max(f.kind, other.kind))
        )
    merged.extend(others.values())
    return merged


def _values_fields(values: exp.Values) -> list[Field]:
    names = values.alias_column_names
    rows = values.expressions
    width = len(rows[0].expressions) if rows and isinstance(rows[0], exp.Tuple) else 1
    return [Field(names[i] if i < len(names) else f"_col_{i}", frozenset()) for i in range(width)]


def _alias_fields(table: exp.Table, refs: frozenset[Ref]) -> list[Field] | None:
    names = table.alias_column_names
    if not names and table.alias:
        # generate_series(1, 10) AS g: the alias names the single column too.
        names = [table.alias]
    return [Field(n, refs, TRANSFORMATION) for n in names] or None


def _pivot_alias(table: exp.Table) -> str:
    pivots = table.args.get("pivots") or []
    return pivots[-1].alias if pivots and pivots[-1].alias else ""


def _pivot_fields(pivot: exp.Pivot, table: str) -> list[Field]:
    """Columns a PIVOT or UNPIVOT adds, each computed from the columns it folds."""
    values = frozenset((table, c.name) for e in pivot.expressions for c in e.find_all(exp.Column))
    fields: list[Field] = []
    for in_ in pivot.args.get("fields") or []:
        keys = frozenset((table, c.name) for c in in_.this.find_all(exp.Column))
        if pivot.args.get("unpivot"):
            folded = frozenset((table, c.output_name) for c in in_.expressions)
            fields.extend(
                Field(e.output_name or e.name, folded, TRANSFORMATION) for e in pivot.expressions
            )
            fields.append(Field(in_.this.output_name or in_.this.name, frozenset(), TRANSFORMATION))
            continue
        for value in in_.expressions:
            name = value.alias_or_name if isinstance(value, exp.PivotAlias) else value.name
            fields.append(Field(name, values | keys, AGGREGATION))
    return fields
