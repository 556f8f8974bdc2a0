"""Table and column lineage of SQL, on sqlglot, for every dialect producers send.

    >>> lineage = extract_lineage("INSERT INTO t (id) SELECT o.id FROM shop.orders o")
    >>> lineage.to_dict()
    {'inputs': ['shop.orders'], 'outputs': ['t'], 'columns': [{'output': 't.id', 'inputs': ['shop.orders.id']}]}
"""

from __future__ import annotations

from headwater.sql_lineage.dialects import dialect_name
from headwater.sql_lineage.model import ColumnLineage, SqlError, SqlLineage
from headwater.sql_lineage.script import extract_lineage

__all__ = ["ColumnLineage", "SqlError", "SqlLineage", "dialect_name", "extract_lineage"]
