"""Lineage of one statement: the tables it reads, the tables it writes and each written column.

INSERT maps the query's columns to the target by position: to the INSERT column list when there
is one, else to the target's known columns (schema or an earlier CREATE), else by the query's
own column names (`_col_<i>` for an unnamed expression). UPDATE and MERGE targets are read too
when the new values use their columns. Files, stages and directories are named `path:<uri>` and
carry no column lineage.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot import exp

from headwater.sql_lineage.names import Catalog, key, path_name, qualify_like, table_name
from headwater.sql_lineage.queries import Ctes, QueryEvaluator
from headwater.sql_lineage.scope import STAR, Field, Scope, Source, star_field


@dataclass(slots=True)
class Write:
    """A table a statement writes, with its written columns keyed by lower-cased name."""

    table: str
    columns: dict[str, Field] = field(default_factory=dict)
    creates: bool = False


@dataclass(slots=True)
class StatementLineage:
    """The tables one statement reads (by key) and the writes it makes."""

    reads: dict[str, str] = field(default_factory=dict)
    writes: list[Write] = field(default_factory=list)


def statement_lineage(statement: exp.Expr, catalog: Catalog) -> StatementLineage:
    """Lineage of one parsed statement; `catalog` learns the columns of tables it creates."""
    evaluator = QueryEvaluator(catalog)
    handler = _HANDLERS.get(type(statement))
    writes: list[Write] = []
    if handler is not None:
        writes = handler(statement, evaluator)
    elif isinstance(statement, (exp.Query, exp.Values)):
        writes = _select(statement, evaluator)
    return StatementLineage(reads=evaluator.reads, writes=writes)


def map_columns(fields: list[Field], targets: list[str] | None) -> dict[str, Field]:
    """Name the query's fields after the target columns, by position; by their own names if none."""
    mapped: dict[str, Field] = {}
    if targets is None or any(f.name == STAR for f in fields[: len(targets)]):
        pairs = [(f.name, f) for f in fields]
    else:
        pairs = list(zip(targets, fields, strict=False))
    for name, f in pairs:
        previous = mapped.get(key(name))
        if previous is not None:
            f = Field(previous.name, previous.refs | f.refs, max(previous.kind, f.kind))
        mapped[key(name)] = Field(name, f.refs, f.kind)
    return mapped


def _known_names(mapped: dict[str, Field]) -> list[str] | None:
    if STAR in mapped:
        return None
    return [f.name for f in mapped.values()]


def _select(node: exp.Expr, ev: QueryEvaluator) -> list[Write]:
    fields = ev.query(node, {})
    into = node.args.get("into")
    if not isinstance(into, exp.Into) or not isinstance(into.this, exp.Table):
        return []
    name = table_name(into.this)
    if name is None:
        return []
    mapped = map_columns(fields, None)
    ev.catalog.define(name, _known_names(mapped))
    return [Write(name, mapped, creates=True)]


def _target(node: exp.Expr) -> tuple[exp.Expr, list[str] | None]:
    """A write target and its column list: `t (a, b)` is a Schema around the table."""
    if isinstance(node, exp.Schema):
        names = [c.name for c in node.expressions if isinstance(c, (exp.Identifier, exp.ColumnDef, exp.Column))]
        return node.this, names or None
    return node, None


def _insert(
    node: exp.Insert, ev: QueryEvaluator, outer: Scope | None = None, ctes: Ctes | None = None
) -> list[Write]:
    target, columns = _target(node.this)
    ctes = ev.with_ctes(node, ctes or {}, outer)
    query = node.expression or node.args.get("source")
    fields = ev.query(query, ctes, outer) if isinstance(query, exp.Expr) else []
    conflict = node.args.get("conflict")
    if isinstance(conflict, exp.Expr):
        ev.expression(conflict, Scope(parent=outer), ctes)
    return _insert_write(target, columns, fields, ev, by_name=bool(node.args.get("by_name")))


def _insert_write(
    target: exp.Expr, columns: list[str] | None, fields: list[Field], ev: QueryEvaluator, *, by_name: bool
) -> list[Write]:
    if isinstance(target, exp.Directory):
        return [Write(path_name(target.this.name))]
    name = table_name(target) if isinstance(target, exp.Table) else None
    if name is None:
        return []
    if by_name:
        return [Write(name, map_columns(fields, None))]
    if columns is None:
        known = ev.catalog.columns(name)
        if known is not None:
            static = _static_partitions(target)
            columns = [c for c in known if key(c) not in static]
    return [Write(name, map_columns(fields, columns))]


def _static_partitions(table: exp.Table) -> set[str]:
    """Hive's PARTITION (dt = '…'): columns given a constant, absent from the SELECT."""
    partition = table.args.get("partition")
    if not isinstance(partition, exp.Partition):
        return set()
    return {key(e.this.name) for e in partition.expressions if isinstance(e, exp.EQ)}


def _create(node: exp.Create, ev: QueryEvaluator) -> list[Write]:
    kind = str(node.args.get("kind") or "").upper()
    if "TABLE" not in kind and "VIEW" not in kind:
        return []
    target, columns = _target(node.this)
    if not isinstance(target, exp.Table):
        return []
    name = table_name(target)
    if name is None:
        return []
    query = node.expression
    clone = node.args.get("clone")
    like = node.find(exp.LikeProperty)
    if isinstance(query, exp.Expr) and isinstance(query, (exp.Query, exp.Values)):
        mapped = map_columns(ev.query(query, ev.with_ctes(node, {}, None)), columns)
    elif isinstance(clone, exp.Clone) and isinstance(clone.this, exp.Table):
        mapped = map_columns(_copy_of(clone.this, ev), columns)
    else:
        if isinstance(like, exp.LikeProperty) and isinstance(like.this, exp.Table):
            source = table_name(like.this)
            columns = columns or (ev.catalog.columns(source) if source else None)
        ev.catalog.define(name, columns)
        return [Write(name, creates=True)]
    ev.catalog.define(name, _known_names(mapped))
    return [Write(name, mapped, creates=True)]


def _copy_of(table: exp.Table, ev: QueryEvaluator) -> list[Field]:
    """Every column of `table`, unchanged: CLONE, RENAME and the like."""
    name = table_name(table)
    if name is None:
        return []
    ev.read(name)
    columns = ev.catalog.columns(name)
    if columns is None:
        return [star_field(name)]
    return [Field(c, frozenset({(name, c)})) for c in columns]


def _cache(node: exp.Cache, ev: QueryEvaluator) -> list[Write]:
    name = table_name(node.this) if isinstance(node.this, exp.Table) else None
    query = node.expression
    if name is None or not isinstance(query, exp.Expr):
        return []
    mapped = map_columns(ev.query(query, {}), None)
    ev.catalog.define(name, _known_names(mapped))
    return [Write(name, mapped, creates=True)]


def _update(node: exp.Update, ev: QueryEvaluator) -> list[Write]:
    ctes = ev.with_ctes(node, {}, None)
    scope = Scope()
    target = node.this
    name = table_name(target) if isinstance(target, exp.Table) else None
    if name is None:
        return []
    ev.add_source(scope, target, ctes, read=False)
    from_ = node.args.get("from_")
    if isinstance(from_, exp.From):
        ev.add_source(scope, from_.this, ctes)
    for join in node.args.get("joins") or []:
        ev.add_source(scope, join.this, ctes)
    name = _target_by_alias(target, name, scope, ev)
    scope.preferred = scope.sources.get(key(target.alias_or_name))
    columns: dict[str, Field] = {}
    for assignment in node.expressions:
        if not isinstance(assignment, exp.EQ):
            continue
        target_column, value = assignment.this, assignment.expression
        if isinstance(target_column, exp.Column):
            refs, kind = ev.expression(value, scope, ctes)
            columns[key(target_column.name)] = Field(target_column.name, refs, kind)
        elif isinstance(target_column, exp.Tuple):
            # SET (a, b) = (x, y) or = (SELECT x, y …): pair them by position.
            if isinstance(value, exp.Tuple):
                values = [Field("", *ev.expression(v, scope, ctes)) for v in value.expressions]
            else:
                values = ev.query(value, ctes, scope)
            for column, f in zip(target_column.expressions, values, strict=False):
                columns[key(column.name)] = Field(column.name, f.refs, f.kind)
    where = node.args.get("where")
    if isinstance(where, exp.Expr):
        ev.expression(where, scope, ctes)
    _read_target_if_used(name, columns, ev)
    return [Write(name, columns)]


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


def _delete(node: exp.Delete, ev: QueryEvaluator) -> list[Write]:
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


def _merge(node: exp.Merge, ev: QueryEvaluator) -> list[Write]:
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

    def assign(column: str, f: Field) -> None:
        previous = columns.get(key(column))
        if previous is not None:
            f = Field(previous.name, previous.refs | f.refs, max(previous.kind, f.kind))
        columns[key(column)] = Field(column, f.refs, f.kind)

    whens = node.args.get("whens")
    for when in whens.expressions if isinstance(whens, exp.Whens) else []:
        condition = when.args.get("condition")
        if isinstance(condition, exp.Expr):
            ev.expression(condition, scope, ctes)
        then = when.args.get("then")
        if isinstance(then, exp.Update):
            for assignment in then.expressions:
                if isinstance(assignment, exp.Star):
                    for f in source.expand() if source else []:
                        assign(f.name, f)
                elif isinstance(assignment, exp.EQ) and isinstance(assignment.this, exp.Column):
                    refs, kind = ev.expression(assignment.expression, scope, ctes)
                    assign(assignment.this.name, Field(assignment.this.name, refs, kind))
        elif isinstance(then, exp.Insert):
            names = then.this.expressions if isinstance(then.this, exp.Tuple) else None
            values = then.expression
            if names is None:
                # INSERT * (Databricks), INSERT ROW (BigQuery): every source column, by name.
                for f in source.expand() if source else []:
                    assign(f.name, f)
                continue
            if isinstance(values, exp.Values) and values.expressions:
                values = values.expressions[0]
            items = values.expressions if isinstance(values, exp.Tuple) else []
            for column, value in zip(names, items, strict=False):
                refs, kind = ev.expression(value, insert_scope, ctes)
                assign(column.name, Field(column.name, refs, kind))
    _read_target_if_used(name, columns, ev)
    return [Write(name, columns)]


def _copy(node: exp.Copy, ev: QueryEvaluator) -> list[Write]:
    # COPY INTO dest FROM src / COPY t FROM 'file' (kind true); COPY t|(query) TO 'file' (false).
    this = node.this
    this = this.this if isinstance(this, exp.Schema) else this
    files = node.args.get("files") or []
    destinations, origins = ([this], files) if node.args.get("kind") else (files, [this])
    for origin in origins:
        if isinstance(origin, (exp.Query, exp.Subquery)):
            ev.query(origin, {})
        elif isinstance(origin, exp.Literal):
            ev.read(path_name(origin.name))
        elif isinstance(origin, exp.Table):
            origin_name = table_name(origin)
            if origin_name:
                ev.read(origin_name)
    writes = []
    for destination in destinations:
        if isinstance(destination, exp.Literal):
            writes.append(Write(path_name(destination.name)))
        elif isinstance(destination, exp.Table):
            destination_name = table_name(destination)
            if destination_name:
                writes.append(Write(destination_name))
    return writes


def _alter(node: exp.Alter, ev: QueryEvaluator) -> list[Write]:
    old = node.this
    for action in node.args.get("actions") or []:
        if isinstance(action, exp.AlterRename) and isinstance(old, exp.Table) and isinstance(action.this, exp.Table):
            new = qualify_like(action.this, old)
            old_name = table_name(old)
            if new is None or old_name is None:
                return []
            mapped = map_columns(_copy_of(old, ev), None)
            ev.catalog.define(new, ev.catalog.columns(old_name))
            ev.catalog.define(old_name, None)
            return [Write(new, mapped, creates=True)]
    return []


def _load(node: exp.LoadData, ev: QueryEvaluator) -> list[Write]:
    inpath = node.args.get("inpath")
    if isinstance(inpath, exp.Literal):
        ev.read(path_name(inpath.name))
    files = node.args.get("files")
    if isinstance(files, exp.Expr):
        for literal in files.find_all(exp.Literal):
            parent = literal.parent
            while parent is not None and not isinstance(parent, exp.Property):
                parent = parent.parent
            if parent is not None and parent.name.lower() == "uris":
                ev.read(path_name(literal.name))
    name = table_name(node.this) if isinstance(node.this, exp.Table) else None
    return [Write(name)] if name else []


def _export(node: exp.Export, ev: QueryEvaluator) -> list[Write]:
    if isinstance(node.this, exp.Expr):
        ev.query(node.this, {})
    options = node.args.get("options")
    for prop in options.expressions if isinstance(options, exp.Properties) else []:
        if isinstance(prop, exp.Property) and prop.name.lower() == "uri":
            return [Write(path_name(prop.args["value"].name))]
    return []


def _multitable(node: exp.MultitableInserts, ev: QueryEvaluator) -> list[Write]:
    """Hive's FROM s INSERT … SELECT … INSERT …, Oracle's INSERT ALL INTO … VALUES … SELECT …."""
    scope = Scope()
    source = node.args.get("source")
    if isinstance(source, exp.Table):
        ev.add_source(scope, source, {})
    elif isinstance(source, exp.Expr):
        scope.add("", Source(fields=ev.query(source, {})))
    writes: list[Write] = []
    for insert in node.expressions:
        if isinstance(insert, exp.ConditionalInsert):
            insert = insert.this
        if not isinstance(insert, exp.Insert):
            continue
        values = insert.expression
        if isinstance(values, exp.Values) and values.expressions:
            # INTO t (a) VALUES (x): x names a column of the shared SELECT.
            fields = [
                Field(value.output_name or f"_col_{i}", *ev.expression(value, scope, {}))
                for i, value in enumerate(values.expressions[0].expressions)
            ]
            target, columns = _target(insert.this)
            writes.extend(_insert_write(target, columns, fields, ev, by_name=False))
        else:
            writes.extend(_insert(insert, ev, outer=scope))
    return writes


_HANDLERS: dict[type[exp.Expr], Callable[..., list[Write]]] = {
    exp.Insert: _insert,
    exp.Create: _create,
    exp.Cache: _cache,
    exp.Update: _update,
    exp.Delete: _delete,
    exp.Merge: _merge,
    exp.Copy: _copy,
    exp.Alter: _alter,
    exp.LoadData: _load,
    exp.Export: _export,
    exp.MultitableInserts: _multitable,
}
