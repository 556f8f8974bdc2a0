"""Operations on relations, lists of `Field`s: renaming, set operations, VALUES, PIVOT, and
the accumulation of one expression's refs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sqlglot import exp

from headwater.sql_lineage.names import key
from headwater.sql_lineage.scope import (
    AGGREGATION,
    IDENTITY,
    INDIRECT,
    STAR,
    TRANSFORMATION,
    Field,
    Ref,
    Scope,
    through_star,
)

# Arguments that steer a value without being part of it: CASE conditions, window keys, filters.
_INDIRECT_ARGS = {
    (exp.If, "this"),
    (exp.Case, "this"),
    (exp.Window, "partition_by"),
    (exp.Window, "order"),
    (exp.Filter, "expression"),
}


class Value:
    """The refs collected from one expression, and whether any reach its value directly."""

    __slots__ = ("aggregate", "direct", "kind", "refs")

    def __init__(self) -> None:
        self.refs: set[Ref] = set()
        self.kind = IDENTITY
        self.direct = False
        self.aggregate = False

    def add(self, refs: frozenset[Ref], kind: int, *, indirect: bool) -> None:
        """Collect the refs of one column or subquery found in the expression."""
        self.refs.update(refs)
        if refs and not indirect:
            self.direct = True
            self.kind = max(self.kind, kind)

    def result(self) -> tuple[frozenset[Ref], int]:
        """The refs, and the transformation: INDIRECT when none reaches the value directly."""
        if not self.direct:
            return frozenset(self.refs), INDIRECT
        return frozenset(self.refs), max(self.kind, AGGREGATION if self.aggregate else TRANSFORMATION)


def children(node: exp.Expr, indirect: bool, scope: Scope) -> list[tuple[exp.Expr, bool]]:
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


def is_star(projection: exp.Expr) -> bool:
    """Whether a projection is `*` or `t.*`."""
    return isinstance(projection, exp.Star) or (
        isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)
    )


def rename(fields: list[Field], names: list[str]) -> list[Field]:
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


def merge(left: list[Field], right: list[Field], *, by_name: bool) -> list[Field]:
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


def merge_chain(first: list[Field], branches: Iterable[tuple[list[Field], bool]]) -> list[Field]:
    """The fields of set operations chained on their left (`a UNION b UNION c …`): `merge` with
    each branch in turn (by name when its flag says so), the refs of each column gathered in one
    set rather than copied at every branch, which for thousands of branches took seconds."""
    names = [f.name for f in first]
    refs = [set(f.refs) for f in first]
    kinds = [f.kind for f in first]
    for right, by_name in branches:
        if by_name or len(right) != len(names):
            merged = merge(_fields(names, refs, kinds), right, by_name=True)
            names = [f.name for f in merged]
            refs = [set(f.refs) for f in merged]
            kinds = [f.kind for f in merged]
            continue
        for i, f in enumerate(right):
            refs[i].update(f.refs)
            kinds[i] = max(kinds[i], f.kind)
    return _fields(names, refs, kinds)


def _fields(names: list[str], refs: list[set[Ref]], kinds: list[int]) -> list[Field]:
    return [Field(n, frozenset(r), k) for n, r, k in zip(names, refs, kinds, strict=True)]


def values_fields(values: exp.Values) -> list[Field]:
    """The columns of a VALUES list: named by its alias, else `_col_<i>`; constants all."""
    names = values.alias_column_names
    rows = values.expressions
    width = len(rows[0].expressions) if rows and isinstance(rows[0], exp.Tuple) else 1
    return [Field(names[i] if i < len(names) else f"_col_{i}", frozenset()) for i in range(width)]


def alias_fields(table: exp.Table, refs: frozenset[Ref]) -> list[Field] | None:
    """The columns a table function's alias names, each computed from the function's arguments."""
    names = table.alias_column_names
    if not names and table.alias:
        # generate_series(1, 10) AS g: the alias names the single column too.
        names = [table.alias]
    return [Field(n, refs, TRANSFORMATION) for n in names] or None


def pivot_alias(table: exp.Table) -> str:
    """The alias of a table's last PIVOT, which replaces the table's own name."""
    pivots = table.args.get("pivots") or []
    return pivots[-1].alias if pivots and pivots[-1].alias else ""


def pivot_fields(pivot: exp.Pivot, table: str) -> list[Field]:
    """Columns a PIVOT or UNPIVOT of table `table` adds, each computed from the columns it folds."""
    return _pivoted(pivot, lambda name: frozenset({(table, name)}))


def pivot_relation(pivot: exp.Pivot, fields: list[Field]) -> list[Field]:
    """A derived table's columns after a PIVOT or UNPIVOT: those it does not fold, then its own."""
    by_name = {key(f.name): f for f in fields}
    stars = [f for f in fields if f.name == STAR]

    def refs(name: str) -> frozenset[Ref]:
        found = by_name.get(key(name))
        if found is not None:
            return found.refs
        return frozenset().union(*(through_star(s, name) for s in stars))

    folded = {key(c.name) for c in pivot.find_all(exp.Column)}
    if pivot.args.get("unpivot"):
        folded |= {key(c.output_name) for f in pivot.args.get("fields") or [] for c in f.expressions}
    kept = [f for f in fields if key(f.name) not in folded]
    return kept + _pivoted(pivot, refs)


def _pivoted(pivot: exp.Pivot, refs: Callable[[str], frozenset[Ref]]) -> list[Field]:
    values = frozenset().union(
        *(refs(c.name) for e in pivot.expressions for c in e.find_all(exp.Column))
    )
    # The names the dialect gives the new columns (Snowflake's keep the quotes: 'JAN').
    named = [c.name for c in pivot.args.get("columns") or []]
    fields: list[Field] = []
    for in_ in pivot.args.get("fields") or []:
        keys = frozenset().union(*(refs(c.name) for c in in_.this.find_all(exp.Column)))
        if pivot.args.get("unpivot"):
            folded = frozenset().union(*(refs(c.output_name) for c in in_.expressions))
            fields.extend(
                Field(e.output_name or e.name, folded, TRANSFORMATION) for e in pivot.expressions
            )
            fields.append(Field(in_.this.output_name or in_.this.name, frozenset(), TRANSFORMATION))
            continue
        for value in in_.expressions:
            name = value.alias_or_name if isinstance(value, exp.PivotAlias) else value.name
            fields.append(Field(name, values | keys, AGGREGATION))
    if named and len(named) == len(fields) and not pivot.args.get("unpivot"):
        fields = [Field(n, f.refs, f.kind) for n, f in zip(named, fields, strict=True)]
    return fields
