"""The PySpark job of the streaming test: run as a script, in its own process, lineage switched on
from outside (see lineage_job.py).

    python streaming_job.py WORKDIR

A Structured Streaming query reads CSV files from a folder and writes Parquet, twice from one
checkpoint (a new file between the two runs); a query whose foreachBatch function writes each
micro-batch to Parquet; a query that fails in its first micro-batch; and a query left running when
the application stops.
Each run is a trigger(availableNow=True): it processes what is there and stops. The runs' ids
are printed as JSON lines.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main(workdir: Path) -> None:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

    spark = (
        SparkSession.builder.master("local[1]")
        .appName("Headwater Streaming")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    incoming = workdir / "incoming"
    incoming.mkdir()
    (incoming / "a.csv").write_text("id,name\n1,ann\n2,bob\n")
    events = spark.readStream.schema("id int, name string").option("header", True).csv(str(incoming))

    def to_parquet(frame: DataFrame, name: str) -> StreamingQuery:
        """A query named ``name`` writing ``frame`` into the folder of that name, all there is then
        stopping, with its checkpoint beside it."""
        return (
            frame.writeStream.format("parquet")
            .option("path", str(workdir / name))
            .option("checkpointLocation", str(workdir / f"{name}-checkpoint"))
            .queryName(name)
            .trigger(availableNow=True)
            .start()
        )

    for run in ("first_run", "second_run"):
        query = to_parquet(events.selectExpr("id", "upper(name) AS shout"), "shouted")
        query.awaitTermination()
        print(json.dumps({run: str(query.runId)}), flush=True)
        (incoming / "b.csv").write_text("id,name\n3,cy\n")

    def upsert(batch: DataFrame, batch_id: int) -> None:  # what foreachBatch is used for
        batch.selectExpr("id", "lower(name) AS whisper").write.mode("append").parquet(
            str(workdir / "whispered")
        )

    events.writeStream.foreachBatch(upsert).option(
        "checkpointLocation", str(workdir / "batch-checkpoint")
    ).trigger(availableNow=True).start().awaitTermination()

    failing = to_parquet(events.selectExpr("id DIV 0 AS broken"), "broken")
    try:
        failing.awaitTermination()
    except Exception as exc:
        print(json.dumps({"failed_on_purpose": type(exc).__name__}), flush=True)
    print(json.dumps({"failed_run": str(failing.runId)}), flush=True)

    # A query still running when the application stops.
    forever = (
        events.writeStream.format("parquet")
        .option("path", str(workdir / "kept"))
        .option("checkpointLocation", str(workdir / "kept-checkpoint"))
        .queryName("kept")
        .trigger(processingTime="1 second")
        .start()
    )
    deadline = time.monotonic() + 60
    while forever.lastProgress is None and time.monotonic() < deadline:
        time.sleep(0.2)
    print(json.dumps({"running_run": str(forever.runId)}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
