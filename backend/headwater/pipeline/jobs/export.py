"""Export steps: which events, nodes and edges an export holds, in which order. Pure DataFrame steps.

Filters: ``namespace`` keeps edges with either end in the namespace (and column edges with either
dataset in it); ``since``/``until`` keep edges whose validity interval [valid_from, valid_to)
overlaps [since, until). The nodes exported are the namespace's nodes (every node without a
namespace filter) plus every end of an exported edge, so no edge dangles.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


def events_in_replay_order(events: DataFrame) -> DataFrame:
    """Raw events by eventTime, then by arrival: the order to post them to another server."""
    return events.orderBy("event_time", "raw_event_id")


def _overlaps(since: dt.datetime | None, until: dt.datetime | None) -> Column:
    from pyspark.sql import functions as F  # noqa: N812

    condition = F.lit(True)
    if until is not None:
        condition &= F.col("valid_from") < F.lit(until)
    if since is not None:
        condition &= F.col("valid_to").isNull() | (F.col("valid_to") > F.lit(since))
    return condition


def edges_in_window(
    edges: DataFrame, since: dt.datetime | None, until: dt.datetime | None, namespace: str | None
) -> DataFrame:
    """Lineage edges valid at some time in [since, until) with an end in ``namespace``."""
    from pyspark.sql import functions as F  # noqa: N812

    condition = _overlaps(since, until)
    if namespace is not None:
        condition &= (F.col("src_namespace") == namespace) | (F.col("dst_namespace") == namespace)
    return edges.where(condition)


def column_edges_in_window(
    columns: DataFrame, since: dt.datetime | None, until: dt.datetime | None, namespace: str | None
) -> DataFrame:
    """Column edges valid at some time in [since, until) with a dataset in ``namespace``."""
    from pyspark.sql import functions as F  # noqa: N812

    condition = _overlaps(since, until)
    if namespace is not None:
        condition &= (F.col("output_namespace") == namespace) | (F.col("input_namespace") == namespace)
    return columns.where(condition)


def nodes_for_export(nodes: DataFrame, edges: DataFrame, namespace: str | None) -> DataFrame:
    """The namespace's nodes (all nodes without a filter) and every end of the exported edges."""
    from pyspark.sql import functions as F  # noqa: N812

    if namespace is None:
        return nodes
    ends = edges.select(F.col("src_node_id").alias("node_id")).union(
        edges.select(F.col("dst_node_id").alias("node_id"))
    )
    wanted = nodes.where(F.col("namespace") == namespace).select("node_id").union(ends).distinct()
    return nodes.join(wanted, on="node_id", how="left_semi")
