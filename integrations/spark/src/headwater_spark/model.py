"""What one Spark action did, and how nested executions of one action are put back together."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from headwater_spark.naming import DatasetId
from headwater_spark.plan import InputField


@dataclass
class DatasetInfo:
    id: DatasetId
    fields: list[dict[str, Any]] | None = None
    lifecycle: str | None = None
    # (namespace, name) the dataset had before a RENAME.
    previous: tuple[str, str] | None = None


@dataclass
class ActionRecord:
    """One QueryExecutionListener callback, reduced to plain values (no JVM objects)."""

    query_id: str
    func_name: str
    command: str  # class of the analyzed plan's root, e.g. InsertIntoHadoopFsRelationCommand
    node_name: (
        str | None
    )  # what the job is named after, e.g. "Execute InsertIntoHadoopFsRelationCommand"
    start_time: float  # epoch seconds
    end_time: float
    success: bool = True
    error_message: str | None = None
    error_stack: str | None = None
    sql: str | None = None
    inputs: list[DatasetInfo] = field(default_factory=list)
    output: DatasetInfo | None = None
    column_lineage: dict[str, list[InputField]] | None = None
    suffix: str | None = None  # job name suffix: db_table or the path's last two segments
    # Attribute ids of the written query's output: equal for a command and the executions it nests.
    query_ids: tuple[int, ...] | None = None
    extraction_ms: float = 0.0


# Commands that run another write as a nested execution and report the same output afterwards
# (innermost first): CTAS runs a "file source write"; saveAsTable runs a CTAS or an insert; INSERT
# OVERWRITE DIRECTORY runs a file source write.
ABSORBING_COMMANDS = frozenset(
    {
        "CreateDataSourceTableAsSelectCommand",
        "InsertIntoDataSourceDirCommand",
        "InsertIntoHiveDirCommand",
        "SaveAsV1TableCommand",
        "CreateHiveTableAsSelectCommand",
        "OptimizedCreateHiveTableAsSelectCommand",
        "CreateTableAsSelect",
        "ReplaceTableAsSelect",
    }
)
# Commands that only wrap another command: the merged action is named after what they wrap.
WRAPPER_COMMANDS = frozenset({"SaveAsV1TableCommand"})
# Commands never nested in another execution: no need to wait for an outer one.
OUTERMOST_COMMANDS = frozenset({"SaveAsV1TableCommand"})


def _merge_inputs(first: list[DatasetInfo], second: list[DatasetInfo]) -> list[DatasetInfo]:
    merged: dict[tuple[str, str], DatasetInfo] = {}
    for info in [*first, *second]:
        known = merged.get(info.id.key)
        if known is None:
            merged[info.id.key] = info
        elif known.fields is None and info.fields is not None:
            merged[info.id.key] = replace(known, fields=info.fields)
    return list(merged.values())


def merge_nested(outer: ActionRecord, inner: ActionRecord) -> ActionRecord:
    """One action out of an outer command and the nested execution that wrote its data."""
    named_after = inner if outer.command in WRAPPER_COMMANDS else outer
    output = outer.output or inner.output
    if outer.output is not None and inner.output is not None:
        output = DatasetInfo(
            id=outer.output.id
            if outer.output.id.symlinks or not inner.output.id.symlinks
            else inner.output.id,
            fields=outer.output.fields or inner.output.fields,
            lifecycle=outer.output.lifecycle or inner.output.lifecycle,
            previous=outer.output.previous or inner.output.previous,
        )
    return ActionRecord(
        query_id=outer.query_id,
        func_name=outer.func_name,
        command=named_after.command,
        node_name=named_after.node_name,
        start_time=min(outer.start_time, inner.start_time),
        end_time=max(outer.end_time, inner.end_time),
        success=outer.success and inner.success,
        error_message=inner.error_message or outer.error_message,
        error_stack=inner.error_stack or outer.error_stack,
        sql=outer.sql or inner.sql,
        inputs=_merge_inputs(inner.inputs, outer.inputs),
        output=output,
        column_lineage=inner.column_lineage or outer.column_lineage,
        suffix=outer.suffix or inner.suffix,
        query_ids=outer.query_ids,
        extraction_ms=outer.extraction_ms + inner.extraction_ms,
    )


def is_nested_in(inner: ActionRecord, outer: ActionRecord) -> bool:
    """Whether ``inner`` is an execution that ``outer`` ran: same output, same query attributes.

    A CTAS hands its analyzed query down to the write it runs, so both report the same output
    attribute ids; an unrelated later write to the same table has a query of its own.
    """
    return (
        outer.command in ABSORBING_COMMANDS
        and outer.output is not None
        and inner.output is not None
        and outer.output.id.key == inner.output.id.key
        and outer.query_ids is not None
        and outer.query_ids == inner.query_ids
    )


class Assembler:
    """Groups nested executions of one action (they arrive innermost first) into one record.

    A write waits until the outer command that ran it absorbs it, or until ``grace`` seconds pass
    with no callback in progress. Records leave in the order their actions arrived: a read that
    follows a waiting write waits with it.
    """

    def __init__(self, grace: float = 2.0) -> None:
        self.grace = grace
        # [record, arrival time, ready to send]
        self.pending: list[list[Any]] = []

    def add(self, record: ActionRecord, now: float) -> list[ActionRecord]:
        outermost = record.command in OUTERMOST_COMMANDS  # merging may rename the record
        slot: int | None = None
        if record.command in ABSORBING_COMMANDS and record.output is not None:
            keep: list[list[Any]] = []
            for entry in self.pending:
                if is_nested_in(entry[0], record):
                    record = merge_nested(record, entry[0])
                    if slot is None:
                        slot = len(keep)
                        keep.append(entry)
                else:
                    keep.append(entry)
            self.pending = keep
        ready = record.output is None or outermost
        if slot is None:
            self.pending.append([record, now, ready])
        else:  # the merged action keeps the place of its first execution
            self.pending[slot] = [record, self.pending[slot][1], ready]
        return self._pop_ready()

    def _pop_ready(self) -> list[ActionRecord]:
        out: list[ActionRecord] = []
        while self.pending and self.pending[0][2]:
            out.append(self.pending.pop(0)[0])
        return out

    def next_deadline(self, quiet_since: float) -> float | None:
        waiting: list[float] = [since for _, since, ready in self.pending if not ready]
        if not waiting:
            return None
        return max(min(waiting), quiet_since) + self.grace

    def expired(self, now: float, quiet_since: float) -> list[ActionRecord]:
        for entry in self.pending:
            if not entry[2] and max(entry[1], quiet_since) + self.grace <= now:
                entry[2] = True
        return self._pop_ready()

    def drain(self) -> list[ActionRecord]:
        ready = [entry[0] for entry in self.pending]
        self.pending = []
        return ready
