"""The result types of SQL lineage: tables read and written, column edges, errors and warnings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

IDENTITY = "IDENTITY"
TRANSFORMATION = "TRANSFORMATION"
AGGREGATION = "AGGREGATION"
INDIRECT = "INDIRECT"

# Weakest link first: a column copied through an aggregate is an aggregate, and one that only
# steers a value (a CASE condition, a window key) stays indirect whatever else happens to it.
TRANSFORMATIONS = (IDENTITY, TRANSFORMATION, AGGREGATION, INDIRECT)


@dataclass(frozen=True, slots=True)
class SqlError:
    """What is wrong with a statement, located at the 1-based line and column where `highlight` starts.

    The message names the offending text; its text form adds the position:
    `unrecognized statement 'selec' at line 1, column 1`.
    """

    message: str
    line: int | None = None
    col: int | None = None
    highlight: str | None = None

    def __str__(self) -> str:
        if self.line is None:
            return self.message
        return f"{self.message} at line {self.line}, column {self.col}"


def located(message: str, sql: str, offset: int, text: str) -> SqlError:
    """An error about `text`, which starts at `offset` of `sql`, at its line and column there."""
    line = sql.count("\n", 0, offset) + 1
    col = offset - sql.rfind("\n", 0, offset)
    return SqlError(message=message, line=line, col=col, highlight=text or None)


@dataclass(frozen=True, slots=True)
class ColumnLineage:
    """One written column and the source columns its value is computed from."""

    output: str
    inputs: list[str]
    transformation: str = IDENTITY


@dataclass(frozen=True, slots=True)
class SqlLineage:
    """Tables a SQL script reads and writes, and where each written column comes from."""

    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    columns: list[ColumnLineage] = field(default_factory=list)
    errors: list[SqlError] = field(default_factory=list)
    # Parts that were not followed, so the lineage may be incomplete (a called procedure).
    warnings: list[SqlError] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of `headwater sql-lineage`: inputs, outputs and column edges."""
        return {
            "inputs": list(self.inputs),
            "outputs": list(self.outputs),
            "columns": [{"output": c.output, "inputs": list(c.inputs)} for c in self.columns],
        }
