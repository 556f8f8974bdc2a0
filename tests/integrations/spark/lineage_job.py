"""The PySpark job of the end-to-end test: run as a script, in its own process.

It does not call ``enable_lineage``: lineage is switched on from outside with
``HEADWATER_SPARK_LINEAGE=1`` (the package's .pth hook) and configured through ``OPENLINEAGE_*``.

    python lineage_job.py WORKDIR
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


class HoldListenerBus:
    """A QueryExecutionListener (a py4j proxy; lineage started the callback server) that holds
    Spark's listener bus for ``seconds`` when it is told of the first action after it is
    registered."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def onSuccess(self, _name: str, _qe: object, _duration_ns: int) -> None:  # noqa: N802 - Java's
        if self.seconds:
            seconds, self.seconds = self.seconds, 0.0
            time.sleep(seconds)

    def onFailure(self, _name: str, _qe: object, _error: object) -> None:  # noqa: N802 - Java's
        pass

    class Java:
        implements = ["org.apache.spark.sql.util.QueryExecutionListener"]


def main(workdir: Path) -> None:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F  # noqa: N812

    (workdir / "in").mkdir(parents=True, exist_ok=True)
    emp_csv = workdir / "in" / "emp.csv"
    emp_csv.write_text("id,name,dept_id,salary\n1,ann,10,100\n2,bob,20,200\n3,cid,10,300\n4,dee,30,50\n")

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("Headwater E2E")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.warehouse.dir", str(workdir / "warehouse"))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    from headwater_spark.listener import active_lineage

    lineage = active_lineage()
    print(json.dumps({"autoload": bool(lineage)}), flush=True)

    # An in-memory DataFrame written as Parquet: an output with no input.
    spark.createDataFrame(
        [(10, "eng"), (20, "ops"), (30, "hr")], "dept_id int, dept_name string"
    ).write.mode("overwrite").parquet(str(workdir / "in" / "dept"))

    emp = spark.read.option("header", True).option("inferSchema", True).csv(str(emp_csv))
    dept = spark.read.parquet(str(workdir / "in" / "dept"))
    totals = (
        emp.join(dept, "dept_id")
        .where(F.col("salary") > 60)
        .groupBy("dept_name")
        .agg(F.sum("salary").alias("total"), F.count("*").alias("n"))
    )
    timings = {}
    started = time.perf_counter()
    totals.write.mode("overwrite").saveAsTable("dept_totals")
    timings["save_as_table_s"] = time.perf_counter() - started

    spark.sql("INSERT INTO dept_totals SELECT dept_name, total * 2, n FROM dept_totals WHERE n > 1")
    spark.sql(
        "CREATE TABLE top_depts USING parquet AS "
        f"SELECT t.dept_name, d.dept_id, upper(t.dept_name) AS code, t.total "
        f"FROM dept_totals t JOIN parquet.`{workdir / 'in' / 'dept'}` d ON t.dept_name = d.dept_name "
        "WHERE t.total > 100"
    )
    try:  # fails on purpose, at run time, inside the write
        emp.select("id", F.assert_true(F.col("salary") < 0).alias("checked")).write.mode(
            "overwrite"
        ).parquet(str(workdir / "out" / "never"))
    except Exception as exc:
        print(json.dumps({"failed_on_purpose": type(exc).__name__}), flush=True)
    try:  # fails on purpose, in analysis: nothing runs
        spark.sql("INSERT INTO dept_totals SELECT nope FROM dept_totals")
    except Exception as exc:
        print(json.dumps({"analysis_failure": type(exc).__name__}), flush=True)
    # Spark reports actions on its listener bus, after they ran; on a busy driver the next ones have
    # run by then. The bus is held back after this read, so that the rename and the ALTER are both
    # reported once both ran: each must still say what the table was when it ran.
    hold = HoldListenerBus(seconds=3.0)
    spark._jsparkSession.listenerManager().register(hold)
    rows = spark.table("top_depts").collect()
    print(json.dumps({"top_depts": sorted(r.dept_name for r in rows)}), flush=True)
    spark.sql("ALTER TABLE top_depts RENAME TO top_departments")
    spark.sql("ALTER TABLE top_departments ADD COLUMNS (note string)")
    spark.sql("TRUNCATE TABLE top_departments")
    # An external table, then dropped: its files stay where its LOCATION put them.
    spark.sql(
        f"CREATE TABLE dept_copy USING parquet LOCATION '{workdir / 'out' / 'dept_copy'}' AS "
        "SELECT dept_name, total FROM dept_totals"
    )
    spark.sql("DROP TABLE dept_copy")
    spark.sql(
        f"INSERT OVERWRITE DIRECTORY '{workdir / 'out' / 'export'}' USING parquet "
        "SELECT dept_name, total FROM dept_totals"
    )

    started = time.perf_counter()
    spark.stop()
    timings["stop_s"] = time.perf_counter() - started
    if lineage:
        stats = lineage[0].stats
        timings.update(
            actions=stats.actions,
            sent=stats.sent,
            failed=stats.failed,
            dropped=stats.dropped,
            extraction_ms_total=round(stats.extraction_ms_total, 1),
            extraction_ms_max=round(stats.extraction_ms_max, 1),
            send_ms_median=round(sorted(stats.send_ms)[len(stats.send_ms) // 2], 1)
            if stats.send_ms
            else None,
        )
    print(json.dumps({"timings": timings}), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
