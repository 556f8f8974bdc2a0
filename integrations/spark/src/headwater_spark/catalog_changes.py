"""Which tables a command dropped, created, renamed or altered, as the session catalog saw it happen.

Spark calls the batch listener after the command: by then a dropped table is gone from the catalog,
and a table that ``CREATE TABLE IF NOT EXISTS`` left alone looks just like one it created. Neither
the plan nor the catalog afterwards tells whether ``DROP TABLE IF EXISTS t`` dropped anything, nor
which columns a renamed or altered table had when the command ran: the application's next
``ALTER TABLE … ADD COLUMNS`` may already have run.

The session's external catalog does: it posts an event to its listeners, on the command's own
thread, just before it drops or creates a table (``DropTablePreEvent``, ``CreateTablePreEvent``).
Spark's ``SessionCatalog`` only gets there for a table that exists (a drop) or does not (a create),
so the event is the change itself. After a rename or an alteration it posts ``RenameTableEvent`` or
``AlterTableEvent``. ``CatalogChanges`` is such a listener (a py4j proxy); for each event it records
the table, the executions running at that moment (``SQLExecution``'s, by ``QueryExecution.id``),
for a drop where the table was and whether it was a view, and after a rename or an alteration the
table's catalog entry as the command left it. The batch listener then asks whether its command's
execution was among them.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("headwater_spark")

DROP = "DropTablePreEvent"
CREATE = "CreateTablePreEvent"
RENAME = "RenameTableEvent"
ALTER = "AlterTableEvent"
# Changes remembered for the batch listener, which reports each command shortly after it ran.
REMEMBERED_CHANGES = 1000


@dataclass(frozen=True)
class TableChange:
    kind: str  # DROP, CREATE, RENAME or ALTER
    database: str
    table: str  # a renamed table's new name
    executions: frozenset[int]  # QueryExecution.id of every execution running at the change
    location: str | None = None  # a dropped table's, as the catalog had it
    view: bool = False  # a dropped view
    # A renamed or altered table's catalog entry just after the change (py4j CatalogTable, an
    # immutable value: holding it keeps that moment's location), and its schema with CHAR and
    # VARCHAR read as STRING, as the session catalog shows them (py4j StructType).
    entry: Any = None
    schema: Any = None


class CatalogChanges:
    """An ``ExternalCatalogEventListener`` that records the tables Spark is about to drop or create,
    and those it has just renamed or altered.

    ``onEvent`` runs on the thread of the command that changes the catalog, which waits for it (and,
    for a drop, holds the ``SessionCatalog``'s lock): it only reads the event, the external catalog
    and the running executions, none of which takes that lock."""

    def __init__(self, jvm: Any, external_catalog: Any) -> None:
        self._catalog = external_catalog
        self._char_varchar = jvm.org.apache.spark.sql.catalyst.util.CharVarcharUtils
        sql_execution = getattr(getattr(jvm.org.apache.spark.sql.execution, "SQLExecution$"), "MODULE$")
        # The executions running now, by execution id (a ConcurrentHashMap of QueryExecutions).
        self._running = sql_execution.executionIdToQueryExecution()
        self._changes: deque[TableChange] = deque(maxlen=REMEMBERED_CHANGES)
        self._lock = threading.Lock()
        self._proxy: Any = None  # the Java proxy the catalog holds, once registered

    @classmethod
    def register(cls, jvm: Any, jsession: Any) -> CatalogChanges:
        """Listen to ``jsession``'s external catalog, creating it if the session has not yet (with
        Hive, that connects to the metastore; otherwise it creates the warehouse directory, as the
        session's first table statement would)."""
        catalog = jsession.sharedState().externalCatalog()
        changes = cls(jvm, catalog)
        changes._running.size()  # fails here, not in every event, if Spark has no such map
        # One Java proxy of this object, added and later removed as that same object: the catalog
        # finds the listener to remove by identity, and py4j makes a new proxy at each call.
        changes._proxy = jvm.java.util.Objects.requireNonNull(changes)
        catalog.addListener(changes._proxy)
        return changes

    def unregister(self) -> None:
        if self._proxy is not None:
            self._catalog.removeListener(self._proxy)
            self._proxy = None

    def onEvent(self, event: Any) -> None:  # noqa: N802 - the JVM interface's method
        try:
            self._record(event)
        except Exception:  # never into the command: it would only log it
            log.debug("Lineage: could not read a catalog event", exc_info=True)

    def _record(self, event: Any) -> None:
        from py4j.java_gateway import get_method

        kind = str(event.toString()).split("(", 1)[0]
        if kind not in (DROP, CREATE, RENAME, ALTER):
            return
        database = str(event.database())
        table = str(event.newName() if kind == RENAME else event.name())
        # The map's own values(), not py4j's Python view of them (a JVM call per key).
        executions = get_method(self._running, "values")().toArray()
        running = frozenset(int(executions[i].id()) for i in range(len(executions)))
        location, view, entry, schema = None, False, None, None
        if kind in (RENAME, ALTER):
            entry = self._catalog.getTable(database, table)
            schema = self._char_varchar.replaceCharVarcharWithStringInSchema(entry.schema())
        elif kind == DROP:
            try:
                dropped = self._catalog.getTable(database, table)
                view = str(dropped.tableType().name()) == "VIEW"
                location = None if view else str(dropped.location().toString())
            except Exception:  # the drop is recorded all the same, the table named by its name
                log.debug("Lineage: could not look up %s.%s as it was dropped", database, table)
        with self._lock:
            self._changes.append(
                TableChange(kind, database, table, running, location, view, entry, schema)
            )

    def find(self, kind: str, execution: int, database: str | None, table: str) -> TableChange | None:
        """The change of ``kind`` to the table made while ``execution`` ran, if any."""
        with self._lock:
            changes = list(self._changes)
        for change in reversed(changes):
            if (
                change.kind == kind
                and change.table == table
                and (database is None or change.database == database)
                and execution in change.executions
            ):
                return change
        return None

    def toString(self) -> str:  # noqa: N802 - called by Spark when it logs the listener
        return "HeadwaterCatalogChanges"

    def equals(self, other: Any) -> bool:
        """Java's: removing a listener compares the catalog's other listeners with this one."""
        return other is self

    class Java:
        implements = ["org.apache.spark.sql.catalyst.catalog.ExternalCatalogEventListener"]
