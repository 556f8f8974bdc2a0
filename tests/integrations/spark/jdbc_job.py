"""The PySpark job of the JDBC test: run as a script, in its own process, lineage switched on from
outside (see lineage_job.py).

    python jdbc_job.py WORKDIR JDBC_URL JAR

It writes a table over JDBC, reads it back over JDBC into Parquet with one column computed, and
reads a query of that table over JDBC (the `query` option) into Parquet.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(workdir: Path, url: str, jar: str) -> None:
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[1]")
        .appName("Headwater JDBC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.jars", jar)
        .config("spark.driver.extraClassPath", jar)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.createDataFrame([(1, "ann"), (2, "bob")], "id int, name string").write.mode("overwrite").jdbc(
        url, "public.people"
    )
    people = spark.read.jdbc(url, "people")
    people.selectExpr("id", "upper(name) AS shout").write.mode("overwrite").parquet(
        str(workdir / "shouted")
    )
    ids = (
        spark.read.format("jdbc")
        .option("url", url)
        .option("query", "SELECT id, p.name AS who, upper(name) AS shout FROM people p")
        .load()
    )
    ids.write.mode("overwrite").parquet(str(workdir / "ids"))
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3])
