"""Column lineage of a query: each output column with the table columns its value comes from.

The AST is walked once, without sqlglot's qualify step or its per-column `lineage()`: every
relation (CTE, derived table, set operation) is evaluated to a list of `Field`s, and a column
reference is looked up in the scope of the SELECT it belongs to. A column's inputs are all the
columns in its projection expression, CASE conditions and window keys included, traced through
CTEs and subqueries; columns used only to filter, join, group or sort are not inputs. COUNT(*)
depends on the rows it counts: `t.*` for a table, the columns of a derived table.
"""

from __future__ import annotations

from itertools import islice
from typing import TYPE_CHECKING, cast

from sqlglot import exp

from headwater.sql_lineage.fields import (
    Value,
    alias_fields,
    children,
    is_star,
    merge_chain,
    pivot_alias,
    pivot_fields,
    pivot_relation,
    rename,
    values_fields,
)
from headwater.sql_lineage.names import file_list, key, table_name
from headwater.sql_lineage.scope import (
    IDENTITY,
    STAR,
    TRANSFORMATION,
    Field,
    Ref,
    Scope,
    Source,
    star_field,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from headwater.sql_lineage.catalog import Catalog
    from headwater.sql_lineage.writes import Write

Ctes = dict[str, list[Field]]

_MEMBERSHIP = (exp.In, exp.Exists, exp.Any, exp.All)
_MODIFYING = (exp.Insert, exp.Update, exp.Delete, exp.Merge)
# Table functions whose rows come from what the SQL does not show.
_REMOTE = "runs a query on another server"
_UNFOLLOWED = {
    "OPENQUERY": _REMOTE,  # T-SQL's linked servers
    "OPENDATASOURCE": _REMOTE,
    "OPENROWSET": _REMOTE,
    "EXTERNAL_QUERY": _REMOTE,  # BigQuery's federated queries
    "DBLINK": _REMOTE,  # PostgreSQL's dblink extension
    "RESULT_SCAN": "reads the result of an earlier query",  # Snowflake
}
_NO_LINEAGE_CLAUSES = ("expressions", "from_", "joins", "laterals", "with_", "into")


class QueryEvaluator:
    """Evaluates queries to fields, and records every base table they read."""

    def __init__(
        self,
        catalog: Catalog,
        records: frozenset[str] = frozenset(),
        *,
        lateral_aliases: bool = False,
    ) -> None:
        self.catalog = catalog
        # Whether a select item may name an earlier item's alias (Snowflake, Databricks …).
        self.lateral_aliases = lateral_aliases
        self.reads: dict[str, str] = {}
        # Loop record variables of the script (lower-cased): `r.id` names a column of a loop's
        # query, which the script resolves, not a struct field or a table.
        self.records = records
        # A data-modifying statement in a WITH clause: its writes go to `side_writes`, and
        # `modifying` gives the rows it returns.
        self.modifying: Callable[[exp.Expr], list[Field]] | None = None
        self.side_writes: list[Write] = []
        # What the statement reads that the SQL does not show (a remote query).
        self.warnings: list[str] = []
        # The script's declared variables and parameters (lower-cased): a bare name that is one
        # of them is the variable, unless a source is known to have such a column.
        self.variables: frozenset[str] = frozenset()

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
            return self._set_operation(node, ctes, outer)
        if isinstance(node, exp.Values):
            return self._values(node, ctes, outer)
        if isinstance(node, exp.Table):
            scope = Scope(parent=outer)
            self.add_source(scope, node, ctes)
            return [f for source in scope.star_sources() for f in source.expand()]
        self.expression(node, Scope(parent=outer), ctes)
        return []

    def _set_operation(self, node: exp.SetOperation, ctes: Ctes, outer: Scope | None) -> list[Field]:
        """UNION, INTERSECT, EXCEPT. A chain of them nests on its left, a level for each branch:
        it is walked down that side in a loop, as recursion would stop at Python's limit (the
        lineage of an INSERT of a UNION ALL of 987 branches was lost)."""
        levels: list[tuple[exp.SetOperation, Ctes]] = []
        current: exp.Expr = node
        while isinstance(current, exp.SetOperation):
            ctes = self.with_ctes(current, ctes, outer)
            levels.append((current, ctes))
            current = current.this
        first = self.query(current, ctes, outer)
        branches = (
            (self.query(operation.expression, own_ctes, outer), bool(operation.args.get("by_name")))
            for operation, own_ctes in reversed(levels)
        )
        return merge_chain(first, branches)

    def _values(self, values: exp.Values, ctes: Ctes, outer: Scope | None) -> list[Field]:
        """A VALUES list's columns: constants, but a scalar subquery in a row reads its table."""
        fields = values_fields(values)
        scope = Scope(parent=outer)
        for row in values.expressions:
            items = row.expressions if isinstance(row, exp.Tuple) else [row]
            for i, item in enumerate(items[: len(fields)]):
                if isinstance(item, exp.Literal):
                    continue
                refs, kind = self.expression(item, scope, ctes)
                # A bare name in a row is a keyword or a variable (sysdate, @d), not a column.
                refs = frozenset(r for r in refs if r[0])
                if refs:
                    f = fields[i]
                    fields[i] = Field(f.name, f.refs | refs, max(f.kind, kind))
        return fields

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
            if isinstance(body, _MODIFYING) and self.modifying is not None:
                ctes[name] = rename(self.modifying(body), columns)
                continue
            if with_.args.get("recursive") and isinstance(body, exp.SetOperation):
                # The recursive part reads the CTE itself: give it the anchor's lineage first.
                ctes[name] = rename(self.query(body.this, ctes, outer), columns)
            ctes[name] = rename(self.query(body, ctes, outer), columns)
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
            if is_star(projection):
                fields.extend(self._star(projection, scope, ctes))
                continue
            refs, kind = self.expression(projection, scope, ctes)
            name = projection.output_name or f"_col_{index}"
            field = Field(name, refs, kind)
            fields.append(field)
            if self.lateral_aliases:
                scope.aliases.setdefault(key(name), field)

        # Filters, grouping and ordering feed no column, but their subqueries read tables.
        for arg, value in select.args.items():
            if arg not in _NO_LINEAGE_CLAUSES and isinstance(value, exp.Expr):
                self.expression(value, scope, ctes)
        return fields

    def _join(self, scope: Scope, join: exp.Join, ctes: Ctes) -> None:
        before = len(scope.sources)
        self.add_source(scope, join.this, ctes)
        # The sources the join added are the last ones (a source is never removed): taken from
        # the end, so that a FROM of thousands of joins is not read again for each of them.
        added = list(islice(reversed(scope.sources), len(scope.sources) - before))[::-1]
        if join.is_semi_or_anti_join:
            scope.hidden.update(added)
        for column in join.args.get("using") or []:
            # USING (id): an unqualified `id` is the value of both sides (either may be NULL in
            # an outer join), the first earlier source that may have it and the joined one.
            name = key(column.name)
            sides = scope.using.setdefault(name, [])
            if not sides:
                left = next(
                    (s for k, s in scope.sources.items() if k not in added and _may_have(s, name)),
                    None,
                )
                sides.extend([left] if left is not None else [])
            sides.extend(scope.sources[k] for k in added if _may_have(scope.sources[k], name))
        on = join.args.get("on")
        if on is not None:
            self.expression(on, scope, ctes)

    # Sources -----------------------------------------------------------------------------

    def add_source(self, scope: Scope, node: exp.Expr, ctes: Ctes, *, read: bool = True) -> Source:
        """Make a FROM item visible in `scope`; base tables are recorded as read unless told."""
        node = _unwrapped(node)
        alias = node.alias if isinstance(node.args.get("alias"), exp.TableAlias) else ""
        source: Source
        if isinstance(node, exp.Table):
            name = table_name(node)
            source = self._table_source(scope, node, name, ctes, read=read)
            scope.add(pivot_alias(node) or alias or node.name, source, name)
            for join in node.args.get("joins") or []:
                self._join(scope, join, ctes)
            return source
        if isinstance(node, exp.Subquery) and (
            not isinstance(node.this, exp.Query) or isinstance(node.this, exp.Subquery)
        ):
            # (a JOIN b ON …), ((a JOIN b ON …) JOIN c ON …): parentheses around joins at any
            # depth, not a relation of their own.
            self.add_source(scope, node.this, ctes, read=read)
            for join in node.args.get("joins") or []:
                self._join(scope, join, ctes)
            return scope.sources[next(reversed(scope.sources))]
        source = self._relation_source(scope, node, ctes)
        scope.add(alias, source)
        for join in node.args.get("joins") or []:
            self._join(scope, join, ctes)
        return source

    def _files(self, table: exp.Table) -> Source | None:
        """DuckDB's read_csv(['a.csv', 'b.csv']): every file's rows; None for one file or none."""
        files = file_list(table.this) if isinstance(table.this, exp.Func) else []
        if len(files) < 2:
            return None
        for f in files:
            self.read(f)
        return Source(fields=[star_field(f) for f in files])

    def _relation_source(self, scope: Scope, node: exp.Expr, ctes: Ctes) -> Source:
        """A FROM item that is no table: a derived table, VALUES, UNNEST, a table function."""
        if isinstance(node, exp.Subquery):
            fields = self.query(node.this, self.with_ctes(node, ctes, scope), scope)
            for pivot in node.args.get("pivots") or []:
                fields = pivot_relation(pivot, fields)
            return Source(fields=rename(fields, node.alias_column_names))
        if isinstance(node, exp.Values):
            return Source(fields=self._values(node, ctes, scope.parent))
        if isinstance(node, (exp.Unnest, exp.Lateral)):
            return self._function_source(scope, node, ctes)
        if self._unfollowed(node.this if isinstance(node, exp.TableFromRows) else node):
            return Source(open=Field(STAR, frozenset()))
        refs, _ = self.expression(node, scope, ctes)
        return Source(open=Field(STAR, refs, TRANSFORMATION))

    def _table_source(
        self, scope: Scope, table: exp.Table, name: str | None, ctes: Ctes, *, read: bool
    ) -> Source:
        """The source a table or table function in FROM is; `name` is its `table_name`."""
        files = self._files(table)
        if files is not None:
            return files
        if name is None:
            relations = self._relation_arguments(table.this, scope, ctes)
            if relations:
                return Source(fields=relations)
            if self._unfollowed(table.this):
                return Source(open=Field(STAR, frozenset()))
            # A table function such as generate_series(…) or FLATTEN(input => t.arr).
            refs, _ = self.expression(table.this, scope, ctes)
            return Source(open=Field(STAR, refs, TRANSFORMATION), fields=alias_fields(table, refs))
        if not table.args.get("db") and key(table.name) in ctes:
            fields = rename(ctes[key(table.name)], table.alias_column_names)
            return Source(fields=fields)
        if read:
            self.read(name)
        source = Source(table=name, columns=self.catalog.columns(name))
        renamed = table.alias_column_names
        if renamed and source.columns is not None:
            # FROM t AS x(a, b) renames t's columns by position.
            source = Source(fields=rename(source.expand(), renamed))
        elif renamed:
            source.columns = list(renamed)
        for pivot in table.args.get("pivots") or []:
            source.fields = (source.fields or []) + pivot_fields(pivot, name)
        return source

    def _unfollowed(self, func: exp.Expr | None) -> bool:
        """Whether a table function reads rows the SQL does not show (a warning says which)."""
        name = func.name.upper() if isinstance(func, exp.Anonymous) else ""
        reason = _UNFOLLOWED.get(name)
        if reason is None:
            return False
        self.warnings.append(f"{name} {reason}: its lineage is not derived")
        return True

    def _relation_arguments(self, func: exp.Expr, scope: Scope, ctes: Ctes) -> list[Field]:
        """The columns of the tables and queries a table function takes whole, as BigQuery's
        ML.PREDICT(MODEL m, TABLE t | (query)) does: the query's named columns, then the rest
        from any of them (a prediction's columns come from the model)."""
        named: list[Field] = []
        stars: list[Field] = []
        if (
            _table_argument(func) is None
            and isinstance(func, exp.Anonymous)
            and func.expressions
            and func.name.upper() == "TABLE"
        ):
            # Trino's TABLE(f(input => TABLE(t), …)): the polymorphic function inside.
            func = func.expressions[0]
        for argument in func.iter_expressions():
            argument = _table_argument(argument) or argument
            if isinstance(argument, exp.Table) and isinstance(argument.this, exp.Identifier):
                inner = Scope(parent=scope)
                fields = self.add_source(inner, argument, ctes).expand()
            elif isinstance(argument, (exp.Subquery, exp.Query)):
                fields = self.query(argument, ctes, scope)
            else:
                continue
            named.extend(f for f in fields if f.name != STAR)
            stars.extend(f for f in fields if f.name == STAR)
        if named or stars:
            # A model read through its columns: what it predicts is a column of the model.
            return named + stars
        return []

    def _function_source(self, scope: Scope, node: exp.Unnest | exp.Lateral, ctes: Ctes) -> Source:
        """UNNEST(arr) AS x(c), LATERAL VIEW explode(arr) x AS c, LATERAL (subquery)."""
        inner = node.this if isinstance(node, exp.Lateral) else None
        if isinstance(inner, (exp.Subquery, exp.Query)):
            fields = self.query(inner, ctes, scope)
            return Source(fields=rename(fields, node.alias_column_names))
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

        value = Value()
        stack: list[tuple[exp.Expr, bool]] = [(inner, False)]
        while stack:
            current, indirect = stack.pop()
            if isinstance(current, exp.Column) or _positional(current):
                reference = self._reference(current, scope)
                if reference is not None:
                    value.add(*reference, indirect=indirect)
            elif _counts_rows(current):
                value.add(self._rows(scope), IDENTITY, indirect=indirect)
                value.aggregate = True
            elif isinstance(current, (exp.Query, exp.Subquery)):
                fields = self.query(current, ctes, scope)
                # x IN (SELECT y …) tests membership: y does not flow into the value.
                if not isinstance(current.parent, _MEMBERSHIP):
                    for f in fields:
                        value.add(f.refs, f.kind, indirect=indirect)
            else:
                value.aggregate = value.aggregate or isinstance(current, exp.AggFunc)
                stack.extend(children(current, indirect, scope))
        return value.result()

    def _reference(self, node: exp.Expr, scope: Scope) -> tuple[frozenset[Ref], int] | None:
        """A column reference's refs: `t.c`, `c`, Snowflake's `$1`; None for `t.*`."""
        if isinstance(node, exp.Column):
            return None if isinstance(node.this, exp.Star) else self.column(node, scope)
        position = _positional(node)
        return scope.resolve_unqualified(position) if position else None

    @staticmethod
    def _rows(scope: Scope) -> frozenset[Ref]:
        """What COUNT(*) depends on: each table it counts the rows of (`t.*`), or the columns of
        a derived table or function it counts."""
        refs: set[Ref] = set()
        for source in scope.star_sources():
            if source.table is not None:
                refs.add((source.table, STAR))
                continue
            for f in source.fields or []:
                refs.update(f.refs)
            if source.open is not None:
                refs.update(source.open.refs)
        return frozenset(refs)

    def column(self, column: exp.Column, scope: Scope) -> tuple[frozenset[Ref], int]:
        """Resolve one column reference in `scope`."""
        name = _positional(column.this) or column.name
        qualifier = column.table
        if not qualifier:
            if key(name) in self.variables and not _known(scope, name):
                return frozenset(), IDENTITY
            return scope.resolve_unqualified(name)
        parts = [p.name for p in column.parts[:-1]]
        source = scope.lookup(".".join(parts))
        if source is not None:
            return source.resolve(name)
        source = scope.lookup(qualifier)
        if source is not None:
            return source.resolve(name)
        if len(parts) == 1 and key(qualifier) in self.records:
            return frozenset({(qualifier, name)}), IDENTITY
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


def _table_argument(node: exp.Expr) -> exp.Expr | None:
    """A table or query passed whole to a table function: `input => TABLE(t)` (Trino),
    `TABLE t` (BigQuery), `TABLE(SELECT …)`; None for any other argument."""
    if isinstance(node, exp.Kwarg) and isinstance(node.expression, exp.Expr):
        node = node.expression
    if not (
        isinstance(node, exp.Anonymous) and node.name.upper() == "TABLE" and len(node.expressions) == 1
    ):
        return None
    inner = node.expressions[0]
    if isinstance(inner, exp.Column):
        return exp.to_table(".".join(part.name for part in inner.parts))
    return inner if isinstance(inner, (exp.Subquery, exp.Query)) else None


def _known(scope: Scope, name: str) -> bool:
    """Whether a source in `scope` or around it is known to have a column called `name`."""
    current: Scope | None = scope
    while current is not None:
        if any(source.knows(name) for source in current.sources.values()):
            return True
        current = current.parent
    return False


def _unwrapped(node: exp.Expr) -> exp.Expr:
    """The relation a FROM item reads: ClickHouse's `t FINAL`, Databricks' `STREAM t`, `STREAM(t)`
    and `STREAM read_files(…)` (the rows of t as they arrive) are t."""
    if isinstance(node, exp.Final):
        return cast(exp.Expr, node.this)
    if isinstance(node, exp.Stream):
        inner = node.this
        alias = node.args.get("alias")
        if isinstance(inner, exp.Subquery) and isinstance(inner.this, exp.Table):
            alias = alias or inner.args.get("alias")
            inner = inner.this
        if isinstance(inner, exp.Expr):
            if alias and not inner.args.get("alias"):
                inner.set("alias", alias)
            return inner
    return node


def _counts_rows(node: exp.Expr) -> bool:
    """COUNT(*)'s star, or ClickHouse's count() which counts rows as COUNT(*) does."""
    return (isinstance(node, exp.Star) and isinstance(node.parent, exp.Count)) or (
        isinstance(node, exp.Count) and node.this is None
    )


def _positional(node: exp.Expr | None) -> str | None:
    """Snowflake's `$1`, the first column of a staged file, as a column name."""
    if (
        isinstance(node, exp.Parameter)
        and isinstance(node.this, exp.Literal)
        and not node.this.is_string
    ):
        return f"${node.this.name}"
    return None


def _may_have(source: Source, column: str) -> bool:
    return source.knows(column) or source.is_unknown()
