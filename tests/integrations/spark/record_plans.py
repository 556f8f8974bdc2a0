"""Record analyzed Spark plans as JSON fixtures for the column lineage unit tests.

Not a test: run it by hand when the fixtures need refreshing (PySpark and a JVM required):

    .venv/bin/python tests/integrations/spark/record_plans.py

Each fixture holds the ``qe.analyzed().toJSON()`` (``qe.logical()`` after an analysis failure) of one
QueryExecutionListener callback, plus the datasets the JVM resolved for the plan's relations (keyed
by their first attribute id), which the JSON alone does not carry.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

BASE = Path("/tmp/headwater-spark-fixtures")
OUT = Path(__file__).parent / "fixtures" / "plans"


def main() -> None:
    from headwater_spark.extract import Extractor
    from headwater_spark.plan import command_query, parse_plan, relations
    from pyspark import SparkContext
    from pyspark.java_gateway import ensure_callback_server_started
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F  # noqa: N812
    from pyspark.sql.window import Window

    shutil.rmtree(BASE, ignore_errors=True)
    BASE.mkdir(parents=True)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("record plans")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.warehouse.dir", str(BASE / "warehouse"))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    extractor = Extractor(SparkContext._gateway, spark._jsparkSession)
    current: dict[str, Any] = {"case": None, "seq": 0}
    recorded: list[str] = []

    class Recorder:
        def onSuccess(self, func_name: str, qe: Any, _duration: Any) -> None:  # noqa: N802
            self.record(func_name, qe, None)

        def onFailure(self, func_name: str, qe: Any, exc: Any) -> None:  # noqa: N802
            self.record(func_name, qe, exc)

        def record(self, func_name: str, qe: Any, exc: Any) -> None:
            if current["case"] is None:
                return
            analysis_failed = exc is not None and func_name == "analyze"
            plan = qe.logical() if analysis_failed else qe.analyzed()
            flat = json.loads(plan.toJSON())
            root = parse_plan(flat)
            query = command_query(root) or root
            query_jvm = plan if query is root else plan.query()
            resolved = {}
            if not analysis_failed:
                formats: set[str] = set()
                found = extractor._resolve_relations(relations(query), query_jvm, formats, query)
                resolved = {str(k): [list(d.key) for d in v] for k, v in found.items()}
            current["seq"] += 1
            name = f"{current['case']}-{current['seq']}-{root.name}"
            fixture = {
                "case": current["case"],
                "funcName": func_name,
                "failed": exc is not None,
                "relations": resolved,
                "plan": flat,
            }
            (OUT / f"{name}.json").write_text(json.dumps(fixture, indent=1, sort_keys=True) + "\n")
            recorded.append(name)

        class Java:
            implements = ["org.apache.spark.sql.util.QueryExecutionListener"]

    ensure_callback_server_started(SparkContext._gateway)
    recorder = Recorder()
    spark._jsparkSession.listenerManager().register(recorder)

    csv = BASE / "emp.csv"
    csv.write_text("id,name,dept_id,salary\n1,ann,10,100\n2,bob,20,200\n3,cid,10,300\n")
    spark.createDataFrame([(10, "eng"), (20, "ops")], "dept_id int, dept_name string").write.parquet(
        str(BASE / "dept")
    )
    emp = spark.read.option("header", True).option("inferSchema", True).csv(str(csv))
    dept = spark.read.parquet(str(BASE / "dept"))
    emp.createOrReplaceTempView("emp")
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()
    OUT.mkdir(parents=True, exist_ok=True)

    def case(name: str, action: Any) -> None:
        current["case"], current["seq"] = name, 0
        try:
            action()
        except Exception as exc:  # the failing cases fail on purpose
            print(f"{name}: {type(exc).__name__}", file=sys.stderr)
        spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()
        time.sleep(0.2)
        current["case"] = None

    joined = emp.join(dept, "dept_id").where(F.col("salary") > 50)
    totals = joined.groupBy("dept_name").agg(F.sum("salary").alias("total"), F.count("*").alias("n"))
    case("save_as_table", lambda: totals.write.mode("overwrite").saveAsTable("dept_totals"))
    case(
        "ctas",
        lambda: spark.sql(
            "CREATE TABLE dept_flags USING parquet AS "
            "SELECT d.dept_id, upper(d.dept_name) AS uname, t.total, f.flag "
            f"FROM parquet.`{BASE / 'dept'}` d JOIN dept_totals t ON d.dept_name = t.dept_name "
            "LATERAL VIEW explode(array(d.dept_id, t.n)) f AS flag"
        ),
    )
    case(
        "insert_select",
        lambda: spark.sql(
            "INSERT INTO dept_totals SELECT dept_name, total * 2, n FROM dept_totals WHERE n > 1 ORDER BY total"
        ),
    )
    window = Window.partitionBy("dept_id").orderBy("id")
    case(
        "window",
        lambda: (
            emp.withColumn("running", F.sum("salary").over(window))
            .withColumn("rank", F.row_number().over(window))
            .write.mode("overwrite")
            .parquet(str(BASE / "window"))
        ),
    )
    case(
        "union",
        lambda: (
            emp.select(F.col("id").alias("key"), "name")
            .union(dept.select("dept_id", "dept_name"))
            .write.mode("overwrite")
            .json(str(BASE / "union"))
        ),
    )
    case(
        "case_when_masking",
        lambda: (
            emp.select(
                F.when(F.col("salary") > 150, F.col("name")).otherwise(F.lit("low")).alias("band"),
                F.sha2(F.col("name"), 256).alias("name_hash"),
                F.lit(1).alias("one"),
            )
            .write.mode("overwrite")
            .parquet(str(BASE / "case"))
        ),
    )
    case(
        "rollup",
        lambda: (
            emp.rollup("dept_id")
            .agg(F.max("salary").alias("top"), F.count("*").alias("n"))
            .write.mode("overwrite")
            .parquet(str(BASE / "rollup"))
        ),
    )
    case(
        "subquery",
        lambda: (
            spark.sql(
                "SELECT e.id, (SELECT max(total) FROM dept_totals) AS best FROM emp AS e "
                f"WHERE e.dept_id IN (SELECT dept_id FROM parquet.`{BASE / 'dept'}`)"
            )
            .write.mode("overwrite")
            .parquet(str(BASE / "subquery"))
        ),
    )
    case(
        "failed_write",
        lambda: (
            emp.select(F.assert_true(F.col("salary") < 0).alias("ok"), "id")
            .write.mode("overwrite")
            .parquet(str(BASE / "failed"))
        ),
    )
    case("analysis_failure", lambda: spark.sql("INSERT INTO dept_totals SELECT nope FROM dept_totals"))
    case("collect", lambda: joined.select("name", "dept_name").collect())
    spark.stop()
    print("\n".join(recorded))


if __name__ == "__main__":
    main()
