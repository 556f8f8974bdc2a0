"""The SparkSession the commands run on: quiet, UTC, and executors on this very Python."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def build_session(master: str, app_name: str, conf: dict[str, str] | None = None) -> SparkSession:
    """Start (or join) a session on ``master``; executors run the interpreter running this command."""
    from pyspark.sql import SparkSession

    # Executors must import headwater: run them on this interpreter unless told otherwise. The
    # driver reads PYSPARK_PYTHON when the context starts (spark.pyspark.python is spark-submit's).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.log.structuredLogging.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
    )
    if master.startswith("local"):
        # Few, larger shuffle partitions on one machine: 200 tiny tasks per shuffle cost more.
        builder = builder.config("spark.sql.shuffle.partitions", "8")
        # Executors live in the driver's JVM: Spark's 1 GiB default is too little for the sorts of
        # a large backfill (it spills, but its buffers alone can exhaust 1 GiB).
        builder = builder.config("spark.driver.memory", "3g")
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
