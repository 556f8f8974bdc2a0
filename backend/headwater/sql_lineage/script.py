"""Lineage of a whole script: statements chained through the tables they hand to each other.

A table written by one statement and read by a later one is intermediate: it is neither an input
nor an output, and the columns read from it are replaced by the columns they were written from.
A table read before it is first written is an input; one not read after its last write is an
output, so a table read and written by the same statement is both. Only a statement that writes
makes a table intermediate by reading it: a table a script loads and then counts, or selects
from to show, is still an output. A column read from an
intermediate table that no statement wrote keeps its own name if the table existed before the
script, and has no source if the script created it (it was loaded from a file, say).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from sqlglot.errors import SqlglotError

from headwater.sql_lineage.catalog import Catalog, Schema
from headwater.sql_lineage.dialects import has_lateral_aliases
from headwater.sql_lineage.model import TRANSFORMATIONS, ColumnLineage, SqlError, SqlLineage
from headwater.sql_lineage.names import key
from headwater.sql_lineage.parsing import parse_script
from headwater.sql_lineage.scope import STAR, Field, Ref, through_star
from headwater.sql_lineage.statements import StatementLineage, statement_lineage

# sqlglot compiled by mypyc (sqlglot[c]) recurses in C on nested SQL without counting it against
# Python's recursion limit: 20,000 nested parentheses (40 KB) or 40,000 casts `a::int::int…` (200
# KB) overflowed a thread's 8 MB stack, and the process died (SIGSEGV) with whatever it was doing.
# Lineage is therefore derived on threads of their own with a stack that holds the deepest SQL
# taken (MAX_SQL_CHARS in ingest, the same in the other callers); only what a parse touches of it
# is ever allocated.
_STACK_BYTES = 256 * 1024 * 1024
_THREAD_NAME = "sql-lineage"
_threads = ThreadPoolExecutor(max_workers=os.cpu_count() or 2, thread_name_prefix=_THREAD_NAME)
_starting = threading.Lock()


def extract_lineage(sql: str, dialect: str | None = None, schema: Schema | None = None) -> SqlLineage:
    """Table and column lineage of a SQL statement or script (see ``_extract_lineage``), derived on
    a thread whose stack holds the most deeply nested SQL."""
    if threading.current_thread().name.startswith(_THREAD_NAME):
        return _extract_lineage(sql, dialect, schema)
    # threading.stack_size applies to the threads started after it: the pool starts its threads
    # in submit, under this lock, so that no call sees another's size.
    with _starting:
        before = threading.stack_size(_STACK_BYTES)
        try:
            derived = _threads.submit(_extract_lineage, sql, dialect, schema)
        finally:
            threading.stack_size(before)
    return derived.result()


def _extract_lineage(sql: str, dialect: str | None = None, schema: Schema | None = None) -> SqlLineage:
    """Table and column lineage of a SQL statement or script.

    Args:
        sql: one statement or a script of statements separated by semicolons.
        dialect: the SQL dialect as users name it (trino, sparksql, postgres, …); unknown
            names and None parse as generic SQL.
        schema: columns of tables, `{"db.orders": {"id": "int", …}}`, keyed as the SQL
            qualifies the tables; used to expand `*` and place unqualified columns.

    Returns:
        Inputs and outputs as the SQL names them, one entry per written column with the
        source columns it is computed from, an error for each statement that did not parse,
        and a warning for each part not followed (a called procedure, dynamic SQL).
    """
    try:
        parsed = parse_script(sql, dialect)
    except SqlglotError:
        # Every error of sqlglot's that parsing foresees is located where it is; one it does not
        # is still an error of the SQL, never an exception for the caller: ingest would lose the
        # event, a command its other statements.
        return SqlLineage(errors=[SqlError("the SQL cannot be read")])
    catalog = Catalog(schema)
    chain = _Chain()
    errors = list(parsed.errors)
    warnings = list(parsed.warnings)
    records = frozenset(key(name) for names in parsed.records.values() for name in names)
    lateral = has_lateral_aliases(dialect)
    for index, statement in enumerate(parsed.statements):
        try:
            binds = parsed.records.get(index, ())
            lineage = statement_lineage(
                statement,
                catalog,
                records,
                binds,
                lateral_aliases=lateral,
                variables=parsed.variables.get(index, frozenset()),
            )
        except Exception:
            errors.append(parsed.lineage_failure(index))
            continue
        chain.add(index, lineage)
        warnings.extend(parsed.statement_warning(index, message) for message in lineage.warnings)
    return chain.result(errors, warnings)


@dataclass(slots=True)
class _Chain:
    names: dict[str, str] = field(default_factory=dict)
    first_read: dict[str, int] = field(default_factory=dict)
    last_read: dict[str, int] = field(default_factory=dict)
    first_write: dict[str, int] = field(default_factory=dict)
    last_write: dict[str, int] = field(default_factory=dict)
    lineage: dict[str, dict[str, Field]] = field(default_factory=dict)
    created: set[str] = field(default_factory=set)
    # Loop record variables: the columns of the query each one reads rows through.
    records: dict[str, dict[str, Field]] = field(default_factory=dict)

    def add(self, index: int, statement: StatementLineage) -> None:
        for k, name in statement.reads.items():
            self.names.setdefault(k, name)
            self.first_read.setdefault(k, index)
            if statement.writes:
                self.last_read[k] = index
        # Resolve every write against the tables earlier statements wrote, before this
        # statement's own writes change them.
        reads = statement.reads
        resolved = [
            (write, {ck: self._through_earlier(f, reads) for ck, f in write.columns.items()})
            for write in statement.writes
        ]
        for name, columns in statement.records.items():
            self.records[key(name)] = {ck: self._through_earlier(f, reads) for ck, f in columns.items()}
        for write, columns in resolved:
            k = key(write.table)
            self.names.setdefault(k, write.table)
            self.first_write.setdefault(k, index)
            self.last_write[k] = index
            known = self.lineage.get(k)
            if write.creates:
                self.created.add(k)
            if write.creates or known is None:
                self.lineage[k] = columns
                continue
            for ck, f in columns.items():
                previous = known.get(ck)
                known[ck] = f if previous is None else _union(previous, f)

    def _through_earlier(self, f: Field, reads: dict[str, str]) -> Field:
        refs: set[Ref] = set()
        kind = f.kind
        for table, column in f.refs:
            k = key(table)
            # `r.id` is a loop record's column unless the statement reads a table called r.
            record = self.records.get(k) if k not in reads else None
            written = record if record is not None else self.lineage.get(k) if table else None
            if written is None:
                refs.add((table, column))
                continue
            if column == STAR:
                for each in written.values():
                    refs.update(each.refs)
                    kind = max(kind, each.kind)
                source = None
            else:
                source = written.get(key(column)) or written.get(STAR)
            if source is not None:
                refs.update(through_star(source, column) if source.name == STAR else source.refs)
                kind = max(kind, source.kind)
            elif k not in self.created and (column != STAR or not written):
                # A table that existed before the script keeps the columns no statement wrote;
                # one the script created holds only what it put there (files, constants).
                refs.add((table, column))
        return Field(f.name, frozenset(refs), kind)

    def result(self, errors: list[SqlError], warnings: list[SqlError]) -> SqlLineage:
        inputs = [
            self.names[k]
            for k, first in self.first_read.items()
            if k not in self.first_write or first <= self.first_write[k]
        ]
        outputs = [
            k
            for k, last in self.last_write.items()
            if k not in self.last_read or self.last_read[k] <= last
        ]
        columns = []
        for k in outputs:
            for f in self.lineage.get(k, {}).values():
                if f.refs:
                    columns.append(
                        ColumnLineage(
                            output=f"{self.names[k]}.{f.name}",
                            inputs=_render(f.refs),
                            transformation=TRANSFORMATIONS[f.kind],
                        )
                    )
        columns.sort(key=lambda c: c.output)
        return SqlLineage(
            inputs=sorted(inputs),
            outputs=sorted(self.names[k] for k in outputs),
            columns=columns,
            errors=list(errors),
            warnings=list(warnings),
        )


def _union(a: Field, b: Field) -> Field:
    return Field(a.name, a.refs | b.refs, max(a.kind, b.kind))


def _render(refs: frozenset[Ref]) -> list[str]:
    seen: dict[str, str] = {}
    for table, column in refs:
        text = f"{table}.{column}" if table else column
        seen.setdefault(text.casefold(), text)
    return sorted(seen.values())
