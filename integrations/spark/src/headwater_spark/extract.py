"""Turns a QueryExecution (a py4j object) into an ActionRecord: one toJSON() plus targeted calls.

``qe.analyzed().toJSON()`` carries the plan structure and attribute ids, which is all column lineage
needs. It drops what is not a Scala product: output paths, file indexes, table locations. Those come
from a few py4j calls on the write command and on the leaf relations, chosen by class name.

Every call here can raise (py4j, unknown plan shapes); the listener catches and logs.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

from headwater_spark.catalog_changes import ALTER, CREATE, DROP, RENAME
from headwater_spark.jvm import scala_list
from headwater_spark.micro_batches import stream_sources
from headwater_spark.model import ActionRecord, DatasetInfo
from headwater_spark.naming import (
    DatasetId,
    dataset_from_location,
    jdbc_dataset,
    jdbc_query_datasets,
    path_suffix,
    table_dataset,
    table_symlink,
)
from headwater_spark.plan import (
    InputField,
    LineageGraph,
    Node,
    Relation,
    column_lineage,
    command_query,
    inline_plan,
    output,
    parse_column_names,
    parse_plan,
    relations,
    schema_field,
    subquery_holders,
    table_identifier,
)

if TYPE_CHECKING:
    from headwater_spark.catalog_changes import CatalogChanges
    from headwater_spark.micro_batches import MicroBatchSessions

log = logging.getLogger("headwater_spark")

# A write command's output (its identity, or all of it when the command knows more than its identity
# and the written query tells nothing: a renamed table), lifecycle state and JVM plan of the query.
# A writer returns None instead when the command changed nothing (DROP TABLE IF EXISTS of a table
# that did not exist, CREATE TABLE IF NOT EXISTS of one that did): the action is not reported.
Target = tuple[DatasetId | DatasetInfo | None, str | None, Any]

# Leaf relations read through the JVM leaf object (paths, table locations).
_JVM_RELATIONS = frozenset({"LogicalRelation", "HiveTableRelation", "DataSourceV2Relation"})
# More root paths than this are summarised by their common parent directory (globs, many files).
MAX_ROOT_PATHS = 10

# How the CSV and JSON readers call into Spark to read a header or infer a schema.
SCHEMA_INFERENCE_CALLS = frozenset({"head", "rdd"})
# Table locations an Extractor keeps for DROP TABLE (see Extractor._drop_table); the least recently
# looked up go first.
REMEMBERED_LOCATIONS = 10_000
SESSION_CATALOG = "spark_catalog"

_LIFECYCLE_BY_MODE = {"Overwrite": "OVERWRITE", "ErrorIfExists": "CREATE"}


@dataclass(frozen=True)
class Execution:
    """The execution a command ran in: its QueryExecution (py4j), and whether it failed."""

    qe: Any
    failed: bool


def _option(value: Any) -> Any:
    """A Scala Option from py4j -> its value or None."""
    if value is None:
        return None
    return value.get() if value.isDefined() else None


def _common_parent(paths: list[str]) -> str:
    split = [p.rstrip("/").split("/") for p in paths]
    prefix: list[str] = []
    for parts in zip(*split, strict=False):
        if all(p == parts[0] for p in parts):
            prefix.append(parts[0])
        else:
            break
    return "/".join(prefix) or paths[0]


class Extractor:
    def __init__(self, gateway: Any, jsession: Any, metastore_uri: str | None = None) -> None:
        self._gateway = gateway
        self._jvm = jvm = gateway.jvm
        self._jsession = jsession
        self._metastore_uri = metastore_uri
        self._converters = jvm.scala.jdk.javaapi.CollectionConverters
        self._catalog: Any = None
        # Set by the streaming listener: the streaming query a micro-batch read belongs to.
        self.micro_batches: MicroBatchSessions | None = None
        # Set by the listener: the tables each execution dropped or created. None: not known, and
        # every DROP and CREATE is taken to have changed its table.
        self.catalog_changes: CatalogChanges | None = None
        # Where each table this application looked up in the catalog lives, by (database, table):
        # a DROP TABLE is reported after it ran, when the catalog no longer knows the table.
        self._locations: dict[tuple[str | None, str], str] = {}

    # ---- helpers

    def _seq(self, seq: Any) -> list[Any]:
        return scala_list(self._jvm, seq)

    @property
    def catalog(self) -> Any:
        if self._catalog is None:
            self._catalog = self._jsession.sessionState().catalog()
        return self._catalog

    def _catalog_table(self, ident: Any) -> Any:
        """The catalog entry of a TableIdentifier (py4j), or None if the table does not exist."""
        try:
            if self.catalog.tableExists(ident):
                return self.catalog.getTableMetadata(ident)
        except Exception:  # noqa: S110 - best effort; the caller falls back
            pass
        return None

    def _table_dataset_from_jvm(self, table: Any) -> DatasetId:
        ident = table.identifier()
        location = table.location().toString()
        database, name = _option(ident.database()), ident.table()
        self._remember_location(database, name, location)
        return table_dataset(location, database, name, self._metastore_uri)

    def _remember_location(self, database: str | None, table: str, location: str) -> None:
        key = (database, table)
        self._locations.pop(key, None)  # re-inserted: the oldest entry is the least recent
        self._locations[key] = location
        if len(self._locations) > REMEMBERED_LOCATIONS:
            del self._locations[next(iter(self._locations))]

    def _table_ident_dataset(self, ident: Any) -> DatasetId | None:
        """A table by its identifier: the catalog entry, else the default location."""
        table = self._catalog_table(ident)
        if table is not None:
            return self._table_dataset_from_jvm(table)
        qualified = self.catalog.qualifyIdentifier(ident)
        location = self.catalog.defaultTablePath(qualified).toString()
        return table_dataset(
            location, _option(qualified.database()), qualified.table(), self._metastore_uri
        )

    def _created_table_dataset(self, table: Any) -> DatasetId | None:
        """The table a CREATE TABLE command made, from the command's own catalog entry when it
        gives a LOCATION: Spark calls the listener after the action, and by then a later action may
        have dropped the table from the catalog (CREATE … LOCATION then DROP TABLE)."""
        uri = _option(table.storage().locationUri())
        if uri is None:
            return self._table_ident_dataset(table.identifier())
        location = self._location(uri)
        qualified = self.catalog.qualifyIdentifier(table.identifier())
        database, name = _option(qualified.database()), qualified.table()
        self._remember_location(database, name, location)
        return table_dataset(location, database, name, self._metastore_uri)

    def _location(self, uri: Any) -> str:
        """A command's (or the catalog's) location URI as the catalog writes a table's location
        (file:/a/b, not file:///a/b): a Hadoop path of the URI."""
        return str(self._jvm.org.apache.hadoop.fs.Path(uri).toString())

    # ---- relations

    def _relation_dataset(self, leaf: Any, cls: str, formats: set[str] | None = None) -> list[DatasetId]:
        if cls == "LogicalRelation":
            relation = leaf.relation()
            is_files = relation.getClass().getSimpleName() == "HadoopFsRelation"
            if formats is not None:
                formats.add(str(relation.fileFormat().toString()) if is_files else "other")
            table = _option(leaf.catalogTable())
            if table is not None:
                return [self._table_dataset_from_jvm(table)]
            if is_files:
                paths = [p.toString() for p in self._seq(relation.location().rootPaths())]
                if len(paths) > MAX_ROOT_PATHS:
                    paths = [_common_parent(paths)]
                return [dataset_from_location(p) for p in paths]
            if relation.getClass().getSimpleName() == "JDBCRelation":
                return self._jdbc_datasets(relation)
            return []
        if formats is not None:
            formats.add("other")
        if cls == "HiveTableRelation":
            return [self._table_dataset_from_jvm(leaf.tableMeta())]
        if cls == "DataSourceV2Relation":
            return self._v2_dataset(leaf.table())
        return []

    @staticmethod
    def _jdbc_datasets(relation: Any) -> list[DatasetId]:
        """The table a JDBC relation reads, or the tables its query reads."""
        options = relation.jdbcOptions()
        url, source = str(options.url()), str(options.tableOrQuery())
        if source.lstrip().startswith("("):  # a query: (SELECT …) alias
            return jdbc_query_datasets(url, source)
        dataset = jdbc_dataset(url, source)
        return [dataset] if dataset is not None else []

    def _v2_dataset(self, table: Any) -> list[DatasetId]:
        from py4j.java_gateway import is_instance_of

        if is_instance_of(
            self._gateway, table, "org.apache.spark.sql.execution.datasources.v2.FileTable"
        ):
            paths = [str(p) for p in self._seq(table.paths())]
            if len(paths) > MAX_ROOT_PATHS:
                paths = [_common_parent(paths)]
            return [dataset_from_location(p) for p in paths]
        props = table.properties()
        location = props.get("location") if props is not None else None
        name = str(table.name())
        if location:
            parts = name.split(".")
            table_name = ".".join(parts[-2:]) if len(parts) >= 2 else name
            return [table_dataset(str(location), None, table_name, self._metastore_uri)]
        return []

    def _jvm_leaves(self, query_jvm: Any, query_json: Node) -> list[Any]:
        """The JVM plan's leaves, and those of the subquery plans inside its expressions."""
        leaves = self._seq(query_jvm.collectLeaves())
        for path in subquery_holders(query_json):
            node = query_jvm
            for i in path:
                node = node.children().apply(i)
            for sub in self._seq(node.subqueries()):
                leaves.extend(self._seq(sub.collectLeaves()))
        return leaves

    def _resolve_relations(
        self, rels: list[Relation], query_jvm: Any, formats: set[str], query_json: Node | None = None
    ) -> dict[int, list[DatasetId]]:
        """Datasets of the plan's relations, keyed by their first attribute id; collects the
        relations' file formats into ``formats`` ("other" for anything but files)."""
        wanted = {r.key for r in rels if r.key is not None and r.node.name in _JVM_RELATIONS}
        found: dict[int, list[DatasetId]] = {}
        if not wanted or query_jvm is None:
            return found
        for key, cls, leaf in self._keyed_leaves(query_jvm, query_json):
            if key not in wanted or key in found:
                continue
            try:
                found[key] = self._relation_dataset(leaf, cls, formats)
            except Exception:  # one odd relation must not cost the whole action its lineage
                log.debug("Lineage: could not name a %s", cls, exc_info=True)
                formats.add("other")
        # Relations not reachable as leaves (inside subquery expressions): catalog tables by name.
        for rel in rels:
            if rel.key is not None and rel.key not in found and rel.table is not None:
                dataset = self._table_by_name(rel.table[1], rel.table[2])
                if dataset is not None:
                    found[rel.key] = [dataset]
        return found

    def _keyed_leaves(self, query_jvm: Any, query_json: Node | None) -> list[tuple[int, str, Any]]:
        """(first attribute id, class name, leaf) of the JVM plan's relation leaves."""
        try:
            leaves = (
                self._jvm_leaves(query_jvm, query_json)
                if query_json is not None
                else self._seq(query_jvm.collectLeaves())
            )
        except Exception:
            log.debug("Lineage: could not reach subquery relations", exc_info=True)
            leaves = self._seq(query_jvm.collectLeaves())
        keyed = []
        for leaf in leaves:
            cls = leaf.getClass().getSimpleName()
            if cls in _JVM_RELATIONS:
                out = leaf.output()
                if not out.isEmpty():
                    keyed.append((int(out.head().exprId().id()), cls, leaf))
        return keyed

    def _table_by_name(self, database: str | None, table: str) -> DatasetId | None:
        name = f"{database}.{table}" if database else table
        ident = self._jsession.sessionState().sqlParser().parseTableIdentifier(name)
        return self._table_ident_dataset(ident)

    # ---- write commands: (output dataset, lifecycle state, JVM plan of the written query)

    def _insert_into_files(self, root: Node, cmd: Any, run: Execution) -> Target | None:
        mode = cmd.mode().toString()
        may_skip = mode == "Ignore" or bool(root.data.get("ifPartitionNotExists"))
        if may_skip and not run.failed and not _job_committed(run.qe):
            # mode("ignore") on a path that exists, or INSERT OVERWRITE … PARTITION (…) IF NOT EXISTS
            # of a partition that exists: Spark wrote nothing.
            return None
        path = cmd.outputPath().toString()
        ident = table_identifier(root.data.get("catalogTable"))
        if ident:
            dataset = table_dataset(path, ident[1], ident[2], self._metastore_uri)
        else:
            dataset = dataset_from_location(path)
        return dataset, _overwrite(mode == "Overwrite"), cmd.query()

    def _insert_into_directory(self, _root: Node, cmd: Any, _run: Execution) -> Target:
        """INSERT OVERWRITE [LOCAL] DIRECTORY '…' [USING format] SELECT …: the directory, a path."""
        uri = _option(cmd.storage().locationUri())
        if uri is None:
            return None, None, None
        location = self._location(uri)
        return dataset_from_location(location), _overwrite(bool(cmd.overwrite())), cmd.query()

    def _ctas(self, _root: Node, cmd: Any, run: Execution) -> Target | None:
        mode = cmd.mode().toString()
        if mode == "Ignore" and not self._created(run, cmd.table().identifier()):
            return None  # CREATE TABLE IF NOT EXISTS … AS SELECT of a table that exists: nothing ran
        lifecycle = "OVERWRITE" if mode == "Overwrite" else "CREATE"
        return self._created_table_dataset(cmd.table()), lifecycle, cmd.query()

    def _table_desc_command(self, _root: Node, cmd: Any, run: Execution) -> Target | None:
        mode = cmd.mode().toString()
        if mode == "Ignore" and not self._created(run, cmd.tableDesc().identifier()):
            return None  # saveAsTable in mode "ignore" or a Hive CTAS IF NOT EXISTS: the table was there
        lifecycle = _LIFECYCLE_BY_MODE.get(mode)
        return self._created_table_dataset(cmd.tableDesc()), lifecycle, cmd.query()

    def _insert_into_hive(self, _root: Node, cmd: Any, _run: Execution) -> Target:
        dataset = self._table_ident_dataset(cmd.table().identifier())
        return dataset, _overwrite(cmd.overwrite()), cmd.query()

    def _create_table(self, _root: Node, cmd: Any, run: Execution) -> Target | None:
        """CREATE TABLE: the table, if the command did create it (not with IF NOT EXISTS of a table
        that exists, nor when it failed because the table exists)."""
        if not self._created(run, cmd.table().identifier()):
            return None
        return self._created_table_dataset(cmd.table()), "CREATE", None

    def _created(self, run: Execution, ident: Any) -> bool:
        """Whether Spark created the table ``ident`` (py4j TableIdentifier) in this execution; True
        when the catalog's changes are not known."""
        if self.catalog_changes is None:
            return True
        qualified = self.catalog.qualifyIdentifier(ident)
        database, name = _option(qualified.database()), qualified.table()
        return self.catalog_changes.find(CREATE, int(run.qe.id()), database, name) is not None

    def _insert_into_data_source(self, _root: Node, cmd: Any, _run: Execution) -> Target:
        datasets = self._relation_dataset(cmd.logicalRelation(), "LogicalRelation")
        return (datasets[0] if datasets else None), _overwrite(cmd.overwrite()), cmd.query()

    def _save_into_data_source(self, _root: Node, cmd: Any, _run: Execution) -> Target:
        options = cmd.options()
        path, url, table = (_option(options.get(k)) for k in ("path", "url", "dbtable"))
        dataset: DatasetId | None
        if path:
            dataset = dataset_from_location(str(path))
        elif url and table:  # df.write.jdbc(url, table)
            dataset = jdbc_dataset(str(url), str(table))
        else:
            dataset = None
        return dataset, _overwrite(cmd.mode().toString() == "Overwrite"), cmd.query()

    def _v2_write(self, root: Node, cmd: Any, _run: Execution) -> Target:
        datasets = self._v2_dataset(cmd.table().table())
        lifecycle = _overwrite(root.name != "AppendData")
        return (datasets[0] if datasets else None), lifecycle, cmd.query()

    def _rename_table(self, _root: Node, cmd: Any, run: Execution) -> Target:
        """ALTER TABLE … RENAME TO …: the table under its new name (a view is no dataset), with its
        columns as the rename left them (there is no query) and its identity before, the TABLE
        symlink the old name had (the old name is gone from the catalog; a managed table's storage
        moved with it). A new name without a database stays in the old one's."""
        if cmd.isView():
            return None, None, None
        new, old = cmd.newName(), cmd.oldName()
        database = _option(new.database()) or _option(old.database())
        name = f"{database}.{new.table()}" if database else new.table()
        ident = self._jsession.sessionState().sqlParser().parseTableIdentifier(name)
        table, schema = self._table_as_left(ident, RENAME, run)
        if table is None:
            return self._table_ident_dataset(ident), "RENAME", None
        before = table_symlink(
            table.location().toString(), _option(old.database()), old.table(), self._metastore_uri
        )
        renamed = DatasetInfo(
            self._table_dataset_from_jvm(table),
            _schema_fields(schema),
            "RENAME",
            (before.namespace, before.name),
        )
        return renamed, "RENAME", None

    def _truncate_table(self, _root: Node, cmd: Any, run: Execution) -> Target:
        return self._changed_in_place(cmd.tableName(), "TRUNCATE", run)

    def _add_columns(self, _root: Node, cmd: Any, run: Execution) -> Target:
        return self._changed_in_place(cmd.table(), "ALTER", run)

    def _change_column(self, _root: Node, cmd: Any, run: Execution) -> Target:
        return self._changed_in_place(cmd.tableName(), "ALTER", run)

    def _changed_in_place(self, ident: Any, lifecycle: str, run: Execution) -> Target:
        """A command that changes a table in place (TRUNCATE TABLE; ALTER TABLE … ADD COLUMNS, ALTER
        COLUMN): the table with its columns as the command left them. There is no query."""
        table, schema = self._table_as_left(ident, ALTER, run)
        if table is None:  # dropped meanwhile: the listener runs after the action
            return self._table_ident_dataset(ident), lifecycle, None
        info = DatasetInfo(self._table_dataset_from_jvm(table), _schema_fields(schema), lifecycle)
        return info, lifecycle, None

    def _table_as_left(self, ident: Any, kind: str, run: Execution) -> tuple[Any, Any]:
        """The catalog entry and schema (py4j) of the table ``run``'s command renamed or altered
        (``kind``), as the command left it: the catalog's own event recorded them then. Spark calls
        the listener later, when the application's next commands may have changed the table again;
        the catalog as it is now is the fallback (a command that changed no catalog entry, as
        TRUNCATE, or catalog events not followed). (None, None) if the table is gone."""
        if self.catalog_changes is not None:
            qualified = self.catalog.qualifyIdentifier(ident)
            database, name = _option(qualified.database()), qualified.table()
            change = self.catalog_changes.find(kind, int(run.qe.id()), database, name)
            if change is not None and change.entry is not None:
                return change.entry, change.schema
        table = self._catalog_table(ident)
        return table, (None if table is None else table.schema())

    def _drop_table(self, _root: Node, cmd: Any, run: Execution) -> Target | None:
        """DROP TABLE: the table, with lifecycle DROP and no columns (a view is no dataset).

        Spark calls the listener once the table is gone from the catalog. The catalog's own events
        (``catalog_changes``) say whether the command dropped a table at all, and where the table
        was: DROP TABLE IF EXISTS of a table that did not exist dropped nothing and is not
        reported, nor is a view dropped with DROP TABLE. Without them, every DROP TABLE is
        reported, the table named where this application last found it, else where the catalog
        puts a table of that name (exact for a managed table; an external table not looked up
        before is named by that path, with its TABLE symlink, which Headwater resolves to the table
        it knows). Spark 4 plans the command as ``DropTable`` of a resolved identifier, earlier
        versions as ``DropTableCommand``; only tables of the session catalog are named (another
        catalog's storage is its own)."""
        if cmd.getClass().getSimpleName() == "DropTableCommand":
            if cmd.isView():
                return None, None, None
            ident = cmd.tableName()
        else:
            resolved = cmd.child()
            if str(resolved.catalog().name()) != SESSION_CATALOG:
                return None, None, None
            namespace = list(resolved.identifier().namespace())
            database = self._jvm.scala.Option.apply(namespace[-1] if namespace else None)
            ident = self._jvm.org.apache.spark.sql.catalyst.TableIdentifier.apply(
                resolved.identifier().name(), database
            )
        qualified = self.catalog.qualifyIdentifier(ident)
        database, name = _option(qualified.database()), qualified.table()
        location: str | None
        if self.catalog_changes is not None:
            dropped = self.catalog_changes.find(DROP, int(run.qe.id()), database, name)
            if dropped is None or dropped.view:
                return None
            location = self._location(dropped.location) if dropped.location else None
        else:
            location = self._locations.get((database, name))
        if location is None:
            location = self.catalog.defaultTablePath(qualified).toString()
        return table_dataset(location, database, name, self._metastore_uri), "DROP", None

    def _unresolved_insert(self, root: Node, _cmd: Any, _run: Execution) -> Target:
        """An INSERT that failed analysis: only the target table's name is known."""
        name = _unresolved_name(root.child_at("table") or inline_plan(root, "table"))
        if not name:
            return None, None, None
        ident = self._jsession.sessionState().sqlParser().parseTableIdentifier(name)
        return self._table_ident_dataset(ident), _overwrite(bool(root.data.get("overwrite"))), None

    _WRITERS: ClassVar[dict[str, Callable[[Extractor, Node, Any, Execution], Target | None]]] = {
        "InsertIntoHadoopFsRelationCommand": _insert_into_files,
        "CreateDataSourceTableAsSelectCommand": _ctas,
        "SaveAsV1TableCommand": _table_desc_command,
        "CreateHiveTableAsSelectCommand": _table_desc_command,
        "OptimizedCreateHiveTableAsSelectCommand": _table_desc_command,
        "InsertIntoHiveTable": _insert_into_hive,
        "CreateDataSourceTableCommand": _create_table,
        "CreateTableCommand": _create_table,
        "InsertIntoDataSourceCommand": _insert_into_data_source,
        "InsertIntoDataSourceDirCommand": _insert_into_directory,
        "InsertIntoHiveDirCommand": _insert_into_directory,
        "SaveIntoDataSourceCommand": _save_into_data_source,
        "AppendData": _v2_write,
        "OverwriteByExpression": _v2_write,
        "OverwritePartitionsDynamic": _v2_write,
        "ReplaceData": _v2_write,
        "InsertIntoStatement": _unresolved_insert,
        "AlterTableRenameCommand": _rename_table,
        "DropTableCommand": _drop_table,
        "DropTable": _drop_table,
        "TruncateTableCommand": _truncate_table,
        "AlterTableAddColumnsCommand": _add_columns,
        "AlterTableChangeColumnCommand": _change_column,
    }

    # ---- the record

    def extract(self, func_name: str, qe: Any, exc: Any, duration_ns: Any) -> ActionRecord | None:
        """What one action read and wrote, or None when it touched no dataset."""
        started = time.perf_counter()
        end_time = time.time()
        analysis_failed = exc is not None and func_name == "analyze"
        plan = qe.logical() if analysis_failed else qe.analyzed()
        root = parse_plan(plan.toJSON())

        writer = self._WRITERS.get(root.name)
        if writer is None:
            out, lifecycle, query_jvm = None, None, plan
        else:
            target = writer(self, root, plan, Execution(qe, exc is not None))
            if target is None:  # the command changed nothing
                return None
            out, lifecycle, query_jvm = target
        known = out if isinstance(out, DatasetInfo) else None
        out_dataset = out.id if isinstance(out, DatasetInfo) else out
        query_json = command_query(root) if out_dataset is not None else root
        rels = relations(query_json) if query_json is not None else []
        formats: set[str] = set()
        datasets = self._resolve_relations(rels, query_jvm, formats, query_json) if rels else {}
        self._name_micro_batches(qe, rels, datasets)
        if out_dataset is None and func_name in SCHEMA_INFERENCE_CALLS and formats == {"Text"}:
            # The CSV/JSON readers' own passes over the text of a file (header, inferSchema).
            return None
        inputs = _inputs(rels, datasets)
        if not inputs and out_dataset is None:
            return None

        record = ActionRecord(
            query_id="" if analysis_failed else str(qe.queryId()),
            func_name=func_name,
            command=root.name,
            node_name=self._node_name(qe, root.name, out_dataset is not None, analysis_failed),
            start_time=end_time,
            end_time=end_time,
            success=exc is None,
            sql=self._sql(qe, query_jvm),
            inputs=inputs,
            suffix=self._suffix(out_dataset),
        )
        if out_dataset is not None:
            record.output = known or DatasetInfo(
                out_dataset, self._output_fields(root, query_jvm), lifecycle
            )
            if query_json is not None:
                record.query_ids = tuple(a.expr_id for a in output(query_json))
                record.column_lineage = self._lineage(root, query_json, datasets)
        if exc is None:
            record.start_time = end_time - (int(duration_ns) / 1e9 if duration_ns else 0.0)
        else:
            record.start_time = min(self._planning_start(qe) or end_time, end_time)
            record.error_message = str(exc.toString())
            record.error_stack = self._stack_trace(exc)
        record.extraction_ms = (time.perf_counter() - started) * 1000
        return record

    def _name_micro_batches(
        self, qe: Any, rels: list[Relation], datasets: dict[int, list[DatasetId]]
    ) -> None:
        """A ``foreachBatch`` function's micro-batch (an RDD) reads its streaming query's sources."""
        batches = [
            r
            for r in rels
            if r.node.name == "LogicalRDD" and r.key is not None and r.key not in datasets
        ]
        if not batches or self.micro_batches is None:
            return
        try:
            sources = self.micro_batches.sources_of(qe.sparkSession())
        except Exception:
            log.debug("Lineage: could not find the streaming query of a micro-batch", exc_info=True)
            return
        if not sources:
            return
        read = [replace(d, through_query=True) for d in sources]
        for rel in batches:
            assert rel.key is not None
            datasets[rel.key] = read

    def streaming_query(
        self, stream: Any
    ) -> tuple[list[DatasetInfo], list[dict[str, Any]], dict[str, list[InputField]] | None]:
        """What a streaming query (its ``StreamExecution``) reads, each input with the columns it
        reads; the columns it writes; and their column lineage. From the query's plan, as for a
        batch write; its sources are named by their descriptions, as its progress reports give them."""
        plan = stream.logicalPlan()
        root = parse_plan(plan.toJSON())
        query = command_query(root) or root
        datasets = {key: [d] for key, d in stream_sources(self._jvm, plan).items()}
        # The written query: the sink's node wraps it (its one child).
        query_jvm = plan.children().head() if not plan.children().isEmpty() else plan
        fields = self._output_fields(root, query_jvm) or []
        return _inputs(relations(query), datasets), fields, self._lineage(root, query, datasets)

    def _stack_trace(self, exc: Any) -> str | None:
        try:
            return str(self._jvm.org.apache.spark.util.Utils.exceptionString(exc))
        except Exception:
            return None

    def _lineage(
        self, root: Node, query: Node, datasets: dict[int, list[DatasetId]]
    ) -> dict[str, Any] | None:
        def dataset_of(rel: Relation) -> Any:
            found = datasets.get(rel.key) if rel.key is not None else None
            if not found:
                return None
            direct = [d.key for d in found if not d.through_query]
            if direct:
                return direct
            # A query's columns are not its tables', but for those it copies as they are.
            copies = [(d.key, dict(d.columns)) for d in found if d.columns]
            if not copies:
                return None
            return lambda column: [
                (key, columns.get(column.lower()) or column)
                for key, columns in copies
                if column.lower() in columns or "*" in columns
            ]

        graph = LineageGraph.build(query, dataset_of)
        query_out = output(query)
        names = parse_column_names(root.data.get("outputColumnNames"))
        if names is None or len(names) != len(query_out):
            names = [a.name for a in query_out]
        return column_lineage(graph, [(names[i], a.expr_id) for i, a in enumerate(query_out)])

    def _output_fields(self, root: Node, query_jvm: Any) -> list[dict[str, Any]] | None:
        for key in ("catalogTable", "table", "tableDesc"):
            value = root.data.get(key)
            if isinstance(value, dict):
                schema = value.get("schema")
                if isinstance(schema, dict) and schema.get("fields"):
                    return [schema_field(f.get("name", ""), f.get("type")) for f in schema["fields"]]
        if query_jvm is None:
            return None
        schema = json.loads(query_jvm.schema().json())
        names = parse_column_names(root.data.get("outputColumnNames"))
        fields = schema.get("fields") or []
        if names is not None and len(names) == len(fields):
            return [schema_field(n, f.get("type")) for n, f in zip(names, fields, strict=True)]
        return [schema_field(f.get("name", ""), f.get("type")) for f in fields]

    @staticmethod
    def _suffix(dataset: DatasetId | None) -> str | None:
        if dataset is None:
            return None
        for link in dataset.symlinks:
            if link.type == "TABLE":
                return link.name.replace(".", "_")
        return path_suffix(dataset.name)

    @staticmethod
    def _node_name(qe: Any, command: str, is_write: bool, analysis_failed: bool) -> str | None:
        if is_write:
            # What the official integration shows when AQE does not wrap the write; stable either way.
            return (
                f"Execute {command}"
                if command.endswith("Command") or command.startswith("Insert")
                else command
            )
        if analysis_failed:
            return command
        node = qe.executedPlan()
        name = str(node.nodeName())
        if name.startswith("WholeStageCodegen"):
            name = str(node.child().nodeName())
        return name

    @staticmethod
    def _sql(qe: Any, query_jvm: Any) -> str | None:
        text = _option(qe.logical().origin().sqlText())
        if not text and query_jvm is not None:
            text = _option(query_jvm.origin().sqlText())
        return str(text) if text else None

    def _planning_start(self, qe: Any) -> float | None:
        """When planning began (a failed execution reports no duration)."""
        try:
            phases = self._converters.asJava(qe.tracker().phases())
            starts = [int(p.startTimeMs()) for p in phases.values()]
        except Exception:
            return None
        return min(starts) / 1000 if starts else None


def _schema_fields(schema: Any) -> list[dict[str, Any]]:
    """The schema fields of a catalog table's schema (py4j StructType)."""
    fields = json.loads(schema.json()).get("fields") or []
    return [schema_field(f.get("name", ""), f.get("type")) for f in fields]


def _job_committed(qe: Any) -> bool:
    """Whether a file write's job committed: Spark sets the command's jobCommitTime metric then, and
    a write that does nothing runs no job. True when the metric cannot be read."""
    try:
        metric = _option(qe.executedPlan().metrics().get("jobCommitTime"))
    except Exception:
        return True
    return metric is None or not bool(metric.isZero())


def _overwrite(flag: bool) -> str | None:
    return "OVERWRITE" if flag else None


def _inputs(rels: list[Relation], datasets: dict[int, list[DatasetId]]) -> list[DatasetInfo]:
    """Input datasets in plan order, each with the columns the relation reads."""
    inputs: dict[tuple[str, str], DatasetInfo] = {}
    for rel in rels:
        for ds in datasets.get(rel.key, []) if rel.key is not None else []:
            if ds.key not in inputs:
                fields = (
                    None
                    if ds.through_query
                    else [schema_field(a.name, a.data_type) for a in rel.attributes]
                )
                inputs[ds.key] = DatasetInfo(ds, fields)
    return list(inputs.values())


def _unresolved_name(table: Node | None) -> str | None:
    if table is None or table.name != "UnresolvedRelation":
        return None
    raw = table.data.get("multipartIdentifier")
    parts = parse_column_names(raw) if isinstance(raw, str) else raw
    if not parts:
        return None
    return ".".join(str(p) for p in parts[-2:])
