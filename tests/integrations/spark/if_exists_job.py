"""The PySpark job of the IF EXISTS test: run as a script, in its own process, lineage switched on
from outside (see lineage_job.py).

    python if_exists_job.py WORKDIR

Statements that may change nothing, each once where it does nothing and (for most) once where it
does something: DROP TABLE / DROP VIEW IF EXISTS, CREATE TABLE IF NOT EXISTS (with and without AS
SELECT), a DROP TABLE and a CREATE TABLE that fail, saveAsTable and a file write in mode "ignore",
and INSERT OVERWRITE … PARTITION (…) IF NOT EXISTS.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(workdir: Path) -> None:
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[1]")
        .appName("Headwater If Exists")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.warehouse.dir", str(workdir / "warehouse"))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")

    def fails(statement: str) -> None:
        try:
            spark.sql(statement)
        except Exception as exc:
            print(json.dumps({"failed": statement, "error": type(exc).__name__}), flush=True)
        else:
            raise AssertionError(f"{statement} should have failed")

    # Nothing there: nothing dropped.
    spark.sql("DROP TABLE IF EXISTS never_existed")
    spark.sql("DROP VIEW IF EXISTS never_a_view")
    fails("DROP TABLE never_existed")

    # A table created once, then left alone by the statements that would create it again.
    spark.sql("CREATE TABLE people (id int, name string) USING parquet")
    spark.sql("CREATE TABLE IF NOT EXISTS people (other double) USING parquet")
    spark.sql("CREATE TABLE IF NOT EXISTS people USING parquet AS SELECT 1.5 AS other")
    fails("CREATE TABLE people (other double) USING parquet")
    spark.sql("INSERT INTO people VALUES (1, 'ann'), (2, 'bob')")
    people = spark.table("people")
    people.selectExpr("id * 10 AS id", "upper(name) AS name").write.mode("ignore").saveAsTable("people")
    # IF NOT EXISTS of a table that does not exist: created.
    spark.sql("CREATE TABLE IF NOT EXISTS names USING parquet AS SELECT name FROM people")

    # Spark 4 drops a view with DROP TABLE IF EXISTS; a view is no dataset.
    spark.sql("CREATE VIEW people_view AS SELECT id FROM people")
    spark.sql("DROP TABLE IF EXISTS people_view")
    spark.sql("DROP VIEW IF EXISTS people_view")

    # A path written in mode "ignore": the first write only.
    people.write.mode("ignore").parquet(str(workdir / "out" / "kept"))
    people.select("id").write.mode("ignore").parquet(str(workdir / "out" / "kept"))

    # A partition written IF NOT EXISTS: the first write only.
    spark.sql("CREATE TABLE parts (id int, day string) USING parquet PARTITIONED BY (day)")
    for factor in (1, 2):
        spark.sql(
            "INSERT OVERWRITE TABLE parts PARTITION (day = 'mon') IF NOT EXISTS "
            f"SELECT id * {factor} FROM people"
        )

    # Tables that do exist, dropped with IF EXISTS. The external one was created in another session
    # of the application, which has no lineage of its own: this session never looked it up, and
    # only the catalog knows where it was.
    spark.sql("DROP TABLE IF EXISTS names")
    spark.newSession().sql(
        f"CREATE TABLE elsewhere (id int) USING parquet LOCATION '{workdir / 'out' / 'elsewhere'}'"
    )
    spark.sql("DROP TABLE IF EXISTS elsewhere")
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
