"""Table and column lineage of SQL, on sqlglot, for every dialect producers send.

Example:
    >>> extract_lineage("INSERT INTO t (id) SELECT o.id FROM orders o").to_dict()
    {'inputs': ['orders'], 'outputs': ['t'], 'columns': [{'output': 't.id', 'inputs': ['orders.id']}]}
"""

from __future__ import annotations

from headwater.sql_lineage.dialects import dialect_name
from headwater.sql_lineage.model import ColumnLineage, SqlError, SqlLineage
from headwater.sql_lineage.script import extract_lineage

__all__ = ["ColumnLineage", "SqlError", "SqlLineage", "dialect_name", "extract_lineage"]
