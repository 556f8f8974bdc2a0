"""Lineage of one statement: the tables it reads, the tables it writes and each written column.

INSERT maps the query's columns to the target by position: to the INSERT column list when there
is one, else to the target's known columns (schema or an earlier CREATE), else by the query's
own column names (`_col_<i>` for an unnamed expression). CREATE, SELECT INTO, RENAME and SWAP tell
the catalog the columns of the table they make, for the statements after them. Statements that move
a whole table's rows (CLONE, SWAP, a partition exchange) write every column of the table moved in.
A CREATE from a query keeps that query's lineage in the catalog, which a later REFRESH of the view
writes again; tables and views over files (external tables, locations) read those files. DML that
returns rows (RETURNING in a WITH clause, T-SQL's OUTPUT … INTO) writes them where they go.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from sqlglot import exp

from headwater.sql_lineage.catalog import Catalog
from headwater.sql_lineage.dml import (
    delete_writes,
    merge_writes,
    returned_fields,
    returned_into,
    update_writes,
)
from headwater.sql_lineage.names import key, path_name, qualify_like, table_name
from headwater.sql_lineage.queries import Ctes, QueryEvaluator
from headwater.sql_lineage.rewrites import REFRESHED
from headwater.sql_lineage.scope import Field, Scope, Source, star_field
from headwater.sql_lineage.transfers import copy_writes, export_writes, load_writes, stage_writes
from headwater.sql_lineage.writes import Write, known_names, map_columns

E = TypeVar("E", bound=exp.Expr)


@dataclass(slots=True)
class StatementLineage:
    """The tables one statement reads (by key), the writes it makes, the records it binds."""

    reads: dict[str, str] = field(default_factory=dict)
    writes: list[Write] = field(default_factory=list)
    # A loop's query: the columns of each record variable the loop reads its rows through.
    records: dict[str, dict[str, Field]] = field(default_factory=dict)
    # What the statement does that the SQL does not show, for a warning at the statement.
    warnings: list[str] = field(default_factory=list)


def statement_lineage(
    statement: exp.Expr,
    catalog: Catalog,
    records: frozenset[str] = frozenset(),
    binds: Collection[str] = (),
    *,
    lateral_aliases: bool = False,
    variables: frozenset[str] = frozenset(),
) -> StatementLineage:
    """Lineage of one parsed statement; `catalog` learns the columns of tables it creates.

    `records` are the script's loop record variables (lower-cased), `binds` those whose rows
    this statement's query gives; `lateral_aliases` whether a select item may name an earlier
    item's alias; `variables` the script's declared variables (lower-cased).
    """
    evaluator = QueryEvaluator(catalog, records, lateral_aliases=lateral_aliases)
    evaluator.variables = variables
    evaluator.modifying = lambda node: _modifying(node, evaluator)
    handler = _HANDLERS.get(type(statement))
    lineage = StatementLineage(reads=evaluator.reads)
    if isinstance(statement, exp.LockingStatement) and isinstance(statement.expression, exp.Expr):
        # Teradata's LOCKING … FOR ACCESS SELECT …: the statement's lineage.
        statement = statement.expression
        handler = _HANDLERS.get(type(statement))
    if isinstance(statement, exp.Refresh):
        lineage.writes = _refresh(statement, evaluator, lineage.warnings)
    elif isinstance(statement, _MODIFYING):
        lineage.writes = handler(statement, evaluator) if handler else []
        lineage.writes.extend(_output_into(statement, lineage.writes, evaluator))
    elif isinstance(statement, (exp.Query, exp.Values)):
        fields = evaluator.query(statement, {})
        lineage.writes = _select(statement, fields, evaluator)
        lineage.records = {name: map_columns(fields, None) for name in binds}
    elif handler is not None:
        lineage.writes = handler(statement, evaluator)
    # Data-modifying statements inside WITH (PostgreSQL) write too.
    lineage.writes.extend(evaluator.side_writes)
    lineage.warnings.extend(evaluator.warnings)
    return lineage


_MODIFYING = (exp.Insert, exp.Update, exp.Delete, exp.Merge)


def _modifying(node: exp.Expr, ev: QueryEvaluator) -> list[Field]:
    """A data-modifying statement inside WITH: its writes count, and its RETURNING rows are the
    CTE's."""
    handler = _HANDLERS.get(type(node))
    writes = handler(node, ev) if handler else []
    ev.side_writes.extend(writes)
    return returned_fields(node, writes, ev)


def _output_into(node: exp.Expr, writes: list[Write], ev: QueryEvaluator) -> list[Write]:
    """T-SQL's `OUTPUT inserted.a, deleted.b INTO log (a, b)`: the changed rows written to log."""
    into = returned_into(node)
    if into is None:
        return []
    name, columns = into
    return [Write(name, map_columns(returned_fields(node, writes, ev), columns))]


# Vertica moves partitions with functions called in a SELECT: (source, min key, max key, target).
_PARTITION_FUNCTIONS = {
    "SWAP_PARTITIONS_BETWEEN_TABLES",
    "MOVE_PARTITIONS_TO_TABLE",
    "COPY_PARTITIONS_TO_TABLE",
}


def _select(node: exp.Expr, fields: list[Field], ev: QueryEvaluator) -> list[Write]:
    if isinstance(node, exp.Select):
        moves = [w for e in node.expressions for w in _partition_function(e.unalias(), ev)]
        if moves:
            return moves
    first = node
    while isinstance(first, exp.SetOperation):
        # SELECT … INTO t FROM a UNION SELECT … FROM b: the INTO sits in the first SELECT.
        first = first.this
    into = first.args.get("into")
    if not isinstance(into, exp.Into) or not isinstance(into.this, exp.Table):
        return []
    name = table_name(into.this)
    if name is None:
        return []
    mapped = map_columns(fields, None)
    ev.catalog.define(name, known_names(mapped))
    return [Write(name, mapped, creates=True)]


def _partition_function(node: exp.Expr, ev: QueryEvaluator) -> list[Write]:
    """SWAP_PARTITIONS_BETWEEN_TABLES('stage', '2024', '2024', 'sales') and its kin."""
    if not isinstance(node, exp.Anonymous) or node.name.upper() not in _PARTITION_FUNCTIONS:
        return []
    args = node.expressions
    if len(args) < 4 or not all(isinstance(a, exp.Literal) and a.is_string for a in (args[0], args[3])):
        return []
    source, target = exp.to_table(args[0].name), exp.to_table(args[3].name)
    name = table_name(target)
    return [Write(name, map_columns(_copy_of(source, ev), None))] if name else []


def _target(node: exp.Expr) -> tuple[exp.Expr, list[str] | None]:
    """A write target and its column list: `t (a, b)` is a Schema around the table."""
    if isinstance(node, exp.Schema):
        names = [
            c.name
            for c in node.expressions
            if isinstance(c, (exp.Identifier, exp.ColumnDef, exp.Column))
        ]
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
    target: exp.Expr,
    columns: list[str] | None,
    fields: list[Field],
    ev: QueryEvaluator,
    *,
    by_name: bool,
) -> list[Write]:
    if isinstance(target, exp.Directory):
        return [Write(path_name(target.this.name))]
    if isinstance(target, exp.Func):
        # ClickHouse's INSERT INTO FUNCTION s3('…', …): the rows go to the files it names.
        files = table_name(exp.Table(this=target.copy()))
        return [Write(files)] if files else []
    if not isinstance(target, exp.Table):
        return []
    name = table_name(target)
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
    if kind == "DICTIONARY":
        return _dictionary(node, ev)
    if "TABLE" not in kind and "VIEW" not in kind:
        return []
    target, columns = _target(node.this)
    if not isinstance(target, exp.Table):
        return []
    name = table_name(target)
    if name is None:
        return []
    query = node.expression
    if isinstance(query, exp.Expr) and isinstance(query, (exp.Query, exp.Values)):
        mapped = map_columns(ev.query(query, ev.with_ctes(node, {}, None)), columns)
        ev.catalog.remember_query(name, mapped, ev.reads)
        into = _clause(node, exp.ToTableProperty)
        if isinstance(into, exp.ToTableProperty) and isinstance(into.this, exp.Table):
            # ClickHouse's CREATE MATERIALIZED VIEW v TO t AS …: each insert into the query's
            # tables runs the query and inserts its rows into t, by column name; v holds none.
            target_name = table_name(into.this)
            return [Write(target_name, mapped)] if target_name else []
    else:
        copied = _created_from(node, ev)
        if copied is None:
            _like(node, name, columns, ev)
            return [Write(name, creates=True)]
        mapped = map_columns(copied, columns)
    ev.catalog.define(name, known_names(mapped))
    if any(p.args.get("no") for p in _clauses(node, exp.WithDataProperty)):
        # … WITH NO DATA (PostgreSQL, Teradata): the query gives the columns but no rows, so its
        # tables are inputs, as for LIKE, and no column carries data.
        return [Write(name, creates=True)]
    return [Write(name, mapped, creates=True)]


def _clauses(node: exp.Create, kind: type[E]) -> Iterator[E]:
    """The `kind` nodes of a CREATE outside its query, which holds no DDL: the query can be most
    of the statement, and need not be walked again."""
    for arg, value in node.args.items():
        if arg == "expression" and isinstance(value, exp.Query):
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, exp.Expr):
                yield from item.find_all(kind)


def _clause(node: exp.Create, kind: type[E]) -> E | None:
    """The first `kind` node of a CREATE outside its query."""
    return next(_clauses(node, kind), None)


def _dictionary(node: exp.Create, ev: QueryEvaluator) -> list[Write]:
    """ClickHouse's `CREATE DICTIONARY d (cols) … SOURCE(CLICKHOUSE(TABLE 't' DB 'db'))` (or
    MYSQL, POSTGRESQL …): d holds the source table's rows, each column from its namesake."""
    target, columns = _target(node.this)
    name = table_name(target) if isinstance(target, exp.Table) else None
    source = next((p for p in node.find_all(exp.DictProperty) if p.name.upper() == "SOURCE"), None)
    if name is None or source is None:
        return []
    settings = {
        s.name.upper(): s.args["value"].name
        for s in source.args.get("settings") or []
        if isinstance(s.args.get("value"), exp.Literal)
    }
    table = settings.get("TABLE")
    if table is None:
        ev.warnings.append(f"the source of dictionary {name} is not a table: its lineage is not derived")
        return [Write(name, creates=True)]
    origin = f"{settings['DB']}.{table}" if settings.get("DB") else table
    ev.read(origin)
    fields = [Field(c, frozenset({(origin, c)})) for c in columns] if columns else [star_field(origin)]
    return [Write(name, map_columns(fields, None), creates=True)]


def _created_from(node: exp.Create, ev: QueryEvaluator) -> list[Field] | None:
    """The columns a CREATE without a query copies from a table or names in files; None if none."""
    clone = node.args.get("clone")
    if isinstance(clone, exp.Clone) and isinstance(clone.this, exp.Table):
        return _copy_of(clone.this, ev)
    if isinstance(node.expression, exp.Table):
        # Teradata's CREATE TABLE t AS s WITH [NO] DATA copies s.
        return _copy_of(node.expression, ev)
    locations = _file_locations(node)
    for location in locations:
        ev.read(location)
    _, columns = _target(node.this)
    if locations and columns:
        return [Field(c, frozenset((location, c) for location in locations)) for c in columns]
    return [star_field(location) for location in locations] or None


def _like(node: exp.Create, name: str, columns: list[str] | None, ev: QueryEvaluator) -> None:
    """A table made without rows: CREATE TABLE t (columns), or LIKE s, which reads s's definition
    (s is an input, but no column carries data)."""
    like = node.find(exp.LikeProperty)
    if isinstance(like, exp.LikeProperty) and isinstance(like.this, exp.Table):
        source = table_name(like.this)
        if source:
            ev.read(source)
        columns = columns or (ev.catalog.columns(source) if source else None)
    ev.catalog.define(name, columns)


def _file_locations(node: exp.Create) -> list[str]:
    """The files a table or view without a query is a name for: an external table's LOCATION
    (Hive, Athena, Redshift Spectrum, Snowflake's WITH LOCATION = @stage), BigQuery's OPTIONS
    (uris = […]), Spark's USING format OPTIONS (path '…'). Its rows are theirs."""
    properties = node.args.get("properties")
    if not isinstance(properties, exp.Properties):
        return []
    paths: list[str] = []
    for prop in properties.expressions:
        if isinstance(prop, exp.LocationProperty) and isinstance(prop.this, (exp.Literal, exp.Var)):
            paths.append(prop.this.name)
        elif isinstance(prop, exp.Property) and prop.name.lower() == "uris":
            paths.extend(v.name for v in prop.find_all(exp.Literal) if v.is_string)
        elif isinstance(prop, exp.OptionsProperty) and node.find(exp.FileFormatProperty):
            for option in prop.expressions:
                value = option.args.get("value") if isinstance(option, exp.Property) else None
                if option.name.lower() == "path" and isinstance(value, exp.Literal):
                    paths.append(value.name)
    return [path_name(p) for p in paths]


def _refresh(node: exp.Refresh, ev: QueryEvaluator, warnings: list[str]) -> list[Write]:
    """REFRESH MATERIALIZED VIEW v (and dynamic, streaming tables): v gets its query's rows again.

    The query is known only when the script created v; otherwise v is written from sources the
    SQL does not show, which a warning says.
    """
    kind = str(node.args.get("kind") or "").upper()
    name = table_name(node.this) if isinstance(node.this, exp.Table) else None
    if name is None or kind not in REFRESHED:
        return []
    stored = ev.catalog.stored_query(name)
    if stored is None:
        warnings.append(
            f"refresh of {kind.lower()} {name}: its query is not in the SQL, so what it reads "
            "is not known"
        )
        return [Write(name)]
    columns, reads = stored
    for table in reads.values():
        ev.read(table)
    return [Write(name, dict(columns), creates=True)]


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
    ev.catalog.define(name, known_names(mapped))
    return [Write(name, mapped, creates=True)]


def _alter(node: exp.Alter, ev: QueryEvaluator) -> list[Write]:
    old = node.this
    for action in node.args.get("actions") or []:
        if isinstance(action, exp.Delete) and isinstance(old, exp.Table):
            # ClickHouse's mutation ALTER TABLE t DELETE WHERE …: rows of t removed.
            name = table_name(old)
            return [Write(name)] if name else []
        location = action.args.get("location") if isinstance(action, exp.AlterSet) else None
        if isinstance(location, exp.Literal) and isinstance(old, exp.Table):
            # ALTER TABLE t SET LOCATION 'path' (Hive, Spark): t's rows are now the files there.
            name = table_name(old)
            files = _copy_of(exp.Table(this=location.copy()), ev)
            return [Write(name, map_columns(files, None), creates=True)] if name else []
        if isinstance(action, exp.SwapTable) and isinstance(action.this, exp.Table):
            return _swap(old, action.this, ev)
        source = action.args.get("source") if isinstance(action, exp.ReplacePartition) else None
        if isinstance(source, exp.Table) and isinstance(old, exp.Table):
            # A partition of the table gets the source's rows: its other rows stay.
            name = table_name(old)
            return [Write(name, map_columns(_copy_of(source, ev), None))] if name else []
        if (
            isinstance(action, exp.AlterRename)
            and isinstance(old, exp.Table)
            and isinstance(action.this, exp.Table)
        ):
            new = qualify_like(action.this, old)
            old_name = table_name(old)
            if new is None or old_name is None:
                return []
            mapped = map_columns(_copy_of(old, ev), None)
            ev.catalog.define(new, ev.catalog.columns(old_name))
            ev.catalog.define(old_name, None)
            return [Write(new, mapped, creates=True)]
    return []


def _swap(table: exp.Expr, other: exp.Table, ev: QueryEvaluator) -> list[Write]:
    """ALTER TABLE t SWAP WITH s: t now holds what s held (and s what t held, which is no lineage)."""
    name = table_name(table) if isinstance(table, exp.Table) else None
    other_name = table_name(other)
    if name is None or other_name is None:
        return []
    mapped = map_columns(_copy_of(other, ev), None)
    columns, other_columns = ev.catalog.columns(name), ev.catalog.columns(other_name)
    ev.catalog.define(name, other_columns)
    ev.catalog.define(other_name, columns)
    return [Write(name, mapped, creates=True)]


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
    exp.Update: update_writes,
    exp.Delete: delete_writes,
    exp.Merge: merge_writes,
    exp.Copy: copy_writes,
    exp.Alter: _alter,
    exp.LoadData: load_writes,
    exp.Export: export_writes,
    exp.MultitableInserts: _multitable,
    exp.Put: stage_writes,
    exp.Get: stage_writes,
}
