"""UPDATE, DELETE and MERGE: rows changed in place, so the target is written and maybe read.

The target is an input only when its columns feed the new values (`SET total = total + 1`);
columns and tables used only to pick the rows (WHERE, ON, a joined table's keys) feed no column.
T-SQL and MySQL may name the target by the alias of a table in their FROM clause.
"""

from __future__ import annotations

from sqlglot import exp

from headwater.sql_lineage.names import key, table_name
from headwater.sql_lineage.queries import Ctes, QueryEvaluator
from headwater.sql_lineage.scope import STAR, Field, Ref, Scope, Source
from headwater.sql_lineage.writes import Write, assign


def update_writes(node: exp.Update, ev: QueryEvaluator) -> list[Write]:
    """UPDATE t SET … [FROM …] [WHERE …], with MySQL's joined targets and T-SQL's aliases."""
    ctes = ev.with_ctes(node, {}, None)
    scope = Scope()
    target = node.this
    name = table_name(target) if isinstance(target, exp.Table) else None
    if name is None:
        return []
    name = _through_cte(target, name, ctes)
    ev.add_source(scope, target, ctes, read=False)
    from_ = node.args.get("from_")
    if isinstance(from_, exp.From):
        ev.add_source(scope, from_.this, ctes)
    for join in node.args.get("joins") or []:
        ev.add_source(scope, join.this, ctes)
    name = _target_by_alias(target, name, scope, ev)
    scope.preferred = scope.sources.get(key(target.alias_or_name))
    columns = _assignments(node.expressions, scope, ctes, ev, None)
    where = node.args.get("where")
    if isinstance(where, exp.Expr):
        ev.expression(where, scope, ctes)
    _read_target_if_used(name, columns, ev)
    return [Write(name, columns)]


def delete_writes(node: exp.Delete, ev: QueryEvaluator) -> list[Write]:
    """DELETE FROM t [USING …] [WHERE …], and the multi-table DELETE t FROM t JOIN … form."""
    ctes = ev.with_ctes(node, {}, None)
    scope = Scope()
    if isinstance(node.this, exp.Table):
        ev.add_source(scope, node.this, ctes, read=False)
    targets = [t for t in node.args.get("tables") or [] if isinstance(t, exp.Table)]
    if not targets and isinstance(node.this, exp.Table):
        targets = [node.this]
    names = []
    for target in targets:
        name = table_name(target)
        if name is not None:
            name = _through_cte(target, name, ctes)
            names.append(_target_by_alias(target, name, scope, ev))
    if isinstance(node.this, exp.Table) and targets and targets[0] is not node.this:
        this_name = table_name(node.this)
        if this_name and key(this_name) not in {key(n) for n in names}:
            ev.read(this_name)
    for using in node.args.get("using") or []:
        ev.add_source(scope, using, ctes)
    where = node.args.get("where")
    if isinstance(where, exp.Expr):
        ev.expression(where, scope, ctes)
    return [Write(n) for n in names]


def merge_writes(node: exp.Merge, ev: QueryEvaluator) -> list[Write]:
    """MERGE INTO t USING s ON … WHEN [NOT] MATCHED THEN UPDATE / INSERT / DELETE."""
    ctes = ev.with_ctes(node, {}, None)
    scope = Scope()
    target = node.this
    name = table_name(target) if isinstance(target, exp.Table) else None
    if name is None:
        return []
    scope.preferred = ev.add_source(scope, target, ctes, read=False)
    using = node.args.get("using")
    source = ev.add_source(scope, using, ctes) if isinstance(using, exp.Expr) else None
    # WHEN NOT MATCHED THEN INSERT has no target row: its values can only be the source's.
    insert_scope = Scope(sources={k: s for k, s in scope.sources.items() if s is source})
    on = node.args.get("on")
    if isinstance(on, exp.Expr):
        ev.expression(on, scope, ctes)
    columns: dict[str, Field] = {}
    whens = node.args.get("whens")
    for when in whens.expressions if isinstance(whens, exp.Whens) else []:
        condition = when.args.get("condition")
        if isinstance(condition, exp.Expr):
            ev.expression(condition, scope, ctes)
        then = when.args.get("then")
        if isinstance(then, exp.Update):
            written = _assignments(then.expressions, scope, ctes, ev, source)
        elif isinstance(then, exp.Insert):
            written = _merge_insert(then, insert_scope, ctes, ev, source)
        else:
            continue
        for f in written.values():
            assign(columns, f.name, f)
    _read_target_if_used(name, columns, ev)
    return [Write(name, columns)]


def _assignments(
    assignments: list[exp.Expr], scope: Scope, ctes: Ctes, ev: QueryEvaluator, source: Source | None
) -> dict[str, Field]:
    """SET a = x, (b, c) = (y, z), (d, e) = (SELECT …), and Databricks' SET * from the source."""
    columns: dict[str, Field] = {}
    for assignment in assignments:
        if isinstance(assignment, exp.Star):
            for f in source.expand() if source else []:
                assign(columns, f.name, f)
            continue
        if not isinstance(assignment, exp.EQ):
            continue
        column, value = assignment.this, assignment.expression
        if isinstance(column, exp.Column):
            assign(columns, column.name, Field(column.name, *ev.expression(value, scope, ctes)))
        elif isinstance(column, exp.Tuple):
            if isinstance(value, exp.Tuple):
                values = [Field("", *ev.expression(v, scope, ctes)) for v in value.expressions]
            else:
                values = ev.query(value, ctes, scope)
            for name, f in zip(column.expressions, values, strict=False):
                assign(columns, name.name, f)
    return columns


def _merge_insert(
    insert: exp.Insert, scope: Scope, ctes: Ctes, ev: QueryEvaluator, source: Source | None
) -> dict[str, Field]:
    columns: dict[str, Field] = {}
    values = insert.expression
    if isinstance(values, exp.Values) and values.expressions:
        values = values.expressions[0]
    items = values.expressions if isinstance(values, exp.Tuple) else []
    if not isinstance(insert.this, exp.Tuple) and not items:
        # INSERT * (Databricks), INSERT ROW (BigQuery): every source column, by name.
        for f in source.expand() if source else []:
            assign(columns, f.name, f)
        return columns
    # INSERT VALUES (s.a, …) without a column list (PostgreSQL): named as an INSERT … SELECT's
    # columns are when the target's are not listed, after the values.
    names = (
        [c.name for c in insert.this.expressions]
        if isinstance(insert.this, exp.Tuple)
        else [v.output_name or f"_col_{i}" for i, v in enumerate(items)]
    )
    for name, value in zip(names, items, strict=False):
        assign(columns, name, Field(name, *ev.expression(value, scope, ctes)))
    return columns


def _through_cte(target: exp.Table, name: str, ctes: Ctes) -> str:
    """T-SQL's `WITH c AS (SELECT … FROM t) UPDATE c …` / `DELETE FROM c`: the rows changed are t's,
    the one table the CTE's columns come from."""
    fields = ctes.get(key(target.name)) if not target.args.get("db") else None
    if not fields:
        return name
    tables = {table for f in fields for table, _ in f.refs if table}
    return tables.pop() if len(tables) == 1 else name


def _target_by_alias(target: exp.Table, name: str, scope: Scope, ev: QueryEvaluator) -> str:
    """The table a DML target names: T-SQL and MySQL write the alias of a table in FROM."""
    if not target.args.get("db"):
        found = scope.sources.get(key(target.alias_or_name))
        if found is not None and found.table is not None:
            name = found.table
    # The FROM clause may list the target itself: those are the rows written, not a read.
    ev.reads.pop(key(name), None)
    return name


def _read_target_if_used(name: str, columns: dict[str, Field], ev: QueryEvaluator) -> None:
    target = key(name)
    if any(key(table) == target for f in columns.values() for table, _ in f.refs):
        ev.read(name)


# T-SQL's OUTPUT names the rows as they were and as they are after the change.
_OLD_ROWS, _NEW_ROWS = "deleted", "inserted"


def returned_fields(node: exp.Expr, writes: list[Write], ev: QueryEvaluator) -> list[Field]:
    """The rows an INSERT, UPDATE, DELETE or MERGE returns (RETURNING, T-SQL's OUTPUT).

    A DELETE returns the rows it removed, and `deleted.c` the rows as they were: the target's
    columns, read. Otherwise a column returned is the value written to it, or the target's own
    when the statement did not write it.
    """
    returning = node.args.get("returning")
    if not isinstance(returning, exp.Returning) or not writes:
        return []
    write = writes[0]
    removed = isinstance(node, exp.Delete)
    fields: list[Field] = []
    for i, item in enumerate(returning.expressions):
        if isinstance(item, exp.Star) or (
            isinstance(item, exp.Column) and isinstance(item.this, exp.Star)
        ):
            if write.columns and not removed:
                fields.extend(write.columns.values())
            else:
                ev.read(write.table)
                fields.append(Field(STAR, frozenset({(write.table, STAR)})))
            continue
        refs: set[Ref] = set()
        for column in [item] if isinstance(item, exp.Column) else item.find_all(exp.Column):
            if column.name.startswith("$"):
                continue  # T-SQL's $action: what the MERGE did to the row
            written = write.columns.get(key(column.name))
            if removed or key(column.table) == _OLD_ROWS or written is None:
                ev.read(write.table)
                refs.add((write.table, column.name))
            else:
                refs.update(written.refs)
        fields.append(Field(item.alias_or_name or f"_col_{i}", frozenset(refs)))
    return fields


def returned_into(node: exp.Expr) -> tuple[str, list[str] | None] | None:
    """The table T-SQL's `OUTPUT … INTO t [(columns)]` writes the returned rows to."""
    returning = node.args.get("returning")
    into = returning.args.get("into") if isinstance(returning, exp.Returning) else None
    columns = None
    if isinstance(into, exp.Schema):
        columns = [c.name for c in into.expressions]
        into = into.this
    if isinstance(into, exp.Identifier):
        into = exp.Table(this=into)
    name = table_name(into) if isinstance(into, exp.Table) else None
    if name is None or name.startswith("@"):
        return None  # a table variable
    return name, columns
