"""`headwater spark export`: the lineage graph as Parquet tables, or the raw events as NDJSON.

- ``parquet``: ``OUT/nodes`` (datasets and jobs, keyed by ``node_key`` = ``dataset:NS:NAME`` or
  ``job:NS:NAME`` as in the REST API), ``OUT/edges`` (dataset -> job reads and job -> dataset writes,
  each row one validity interval [valid_from, valid_to), valid_to null while current) and
  ``OUT/column_edges`` (output field <- input field, same intervals), for analysts' warehouses.
- ``ndjson``: every raw event as received (one JSON object per line, ordered by eventTime), which
  any OpenLineage server, or ``headwater spark backfill``, can ingest again.

PostgreSQL is read by the Spark tasks themselves, one id range each (``headwater.pipeline.db``).
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from headwater.pipeline import db
from headwater.pipeline.jobs import export as steps
from headwater.store.pipeline import as_utc

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

    from headwater.pipeline.progress import Progress


@dataclass(frozen=True)
class ExportOptions:
    out: str
    format: str
    database_url: str
    namespace: str | None = None
    since: dt.datetime | None = None
    until: dt.datetime | None = None
    compression: str | None = None


@dataclass
class ExportSummary:
    format: str
    out: str
    tables: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


def _schemas() -> dict[str, StructType]:
    from pyspark.sql import types as t

    ts, text, long = t.TimestampType(), t.StringType(), t.LongType()

    def struct(*fields: tuple[str, t.DataType]) -> t.StructType:
        return t.StructType([t.StructField(name, kind, True) for name, kind in fields])

    return {
        "events": struct(("raw_event_id", long), ("event_time", ts), ("payload", text)),
        "nodes": struct(
            ("node_id", long),
            ("node_key", text),
            ("node_type", text),
            ("namespace", text),
            ("name", text),
            ("description", text),
            ("source_name", text),
            ("job_type", text),
            ("created_at", ts),
            ("updated_at", ts),
            ("deleted_at", ts),
            ("heat", t.DoubleType()),
        ),
        "edges": struct(
            ("edge_id", long),
            ("edge_type", text),
            ("src_node_id", long),
            ("src_key", text),
            ("src_namespace", text),
            ("dst_node_id", long),
            ("dst_key", text),
            ("dst_namespace", text),
            ("manual", t.BooleanType()),
            ("first_seen_at", ts),
            ("last_seen_at", ts),
            ("valid_from", ts),
            ("valid_to", ts),
            ("last_run_id", text),
        ),
        "column_edges": struct(
            ("column_edge_id", long),
            ("output_key", text),
            ("output_namespace", text),
            ("output_field", text),
            ("input_key", text),
            ("input_namespace", text),
            ("input_field", text),
            ("job_key", text),
            ("transformation_type", text),
            ("transformation_subtype", text),
            ("description", text),
            ("masking", t.BooleanType()),
            ("derived", t.BooleanType()),
            ("first_seen_at", ts),
            ("last_seen_at", ts),
            ("valid_from", ts),
            ("valid_to", ts),
        ),
    }


def run_export(spark: SparkSession, options: ExportOptions, progress: Progress) -> ExportSummary:
    """Write the export to ``options.out``; returns the rows written per table."""
    started = time.monotonic()
    summary = ExportSummary(options.format, options.out)
    schemas = _schemas()
    url, since, until = options.database_url, as_utc(options.since), as_utc(options.until)
    if options.format == "ndjson":
        progress.set_phase("exporting raw events as NDJSON", options.out)
        events = db.read_table(
            spark,
            url,
            "fetch_raw_events_for_export",
            schemas["events"],
            params=(since, until, options.namespace),
        )
        codec = options.compression or "gzip"
        steps.events_in_replay_order(events).select("payload").write.option("compression", codec).text(
            options.out
        )
        summary.tables["events"] = spark.read.text(options.out).count()
    else:
        codec = options.compression or "snappy"
        nodes = db.read_table(spark, url, "fetch_lineage_nodes_for_export", schemas["nodes"])
        edges = db.read_table(spark, url, "fetch_lineage_edges_for_export", schemas["edges"])
        columns = db.read_table(spark, url, "fetch_column_edges_for_export", schemas["column_edges"])
        edges = steps.edges_in_window(edges, since, until, options.namespace)
        tables = {
            "nodes": steps.nodes_for_export(nodes, edges, options.namespace),
            "edges": edges,
            "column_edges": steps.column_edges_in_window(columns, since, until, options.namespace),
        }
        for name, frame in tables.items():
            progress.set_phase(f"exporting {name} as Parquet", f"{options.out}/{name}")
            path = f"{options.out.rstrip('/')}/{name}"
            frame.write.option("compression", codec).parquet(path)
            summary.tables[name] = spark.read.parquet(path).count()
    summary.seconds = time.monotonic() - started
    return summary
