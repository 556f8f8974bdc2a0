"""Measure what lineage costs a PySpark job: per-write time, spark.stop() time, listener-side costs.

Runs the same small job (join + project -> Parquet, N writes, local[2]) in separate processes:
lineage off, on with a reachable receiver, and on with an unreachable server.

    python integrations/spark/scripts/overhead.py [N]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

JOB = r"""
import json, sys, time
from pathlib import Path
from pyspark.sql import SparkSession, functions as F
work, n, mode = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
spark = (SparkSession.builder.master("local[2]").appName("overhead")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "2").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
handle = None
if mode != "off":
    from headwater_spark import enable_lineage
    handle = enable_lineage(spark)
emp = spark.range(0, 20000).select(
    F.col("id"), (F.col("id") % 50).alias("dept"), (F.rand(1) * 100).alias("pay"))
dept = spark.range(0, 50).select(
    F.col("id").alias("dept"), F.concat(F.lit("d"), F.col("id")).alias("name"))
emp.write.mode("overwrite").parquet(str(work / "emp"))
dept.write.mode("overwrite").parquet(str(work / "dept"))
e, d = spark.read.parquet(str(work / "emp")), spark.read.parquet(str(work / "dept"))
times = []
for i in range(n):
    t = time.perf_counter()
    e.join(d, "dept").select("id", F.upper("name").alias("uname"), (F.col("pay") * 2).alias("pay2")) \
        .write.mode("overwrite").parquet(str(work / f"out{i % 3}"))
    times.append(time.perf_counter() - t)
t = time.perf_counter()
spark.stop()
stop = time.perf_counter() - t
out = {"mode": mode, "writes_s": times, "stop_s": stop}
if handle is not None:
    s = handle.stats
    out.update(actions=s.actions, sent=s.sent, failed=s.failed, dropped=s.dropped,
               extraction_ms_mean=s.extraction_ms_total / max(1, s.actions),
               extraction_ms_max=s.extraction_ms_max, send_ms=s.send_ms)
print("RESULT " + json.dumps(out))
"""


def receiver() -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(201)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def run(mode: str, n: int, url: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as work:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENLINEAGE_", "HEADWATER_"))}
        env["OPENLINEAGE_URL"] = url
        proc = subprocess.run(
            [sys.executable, "-c", JOB, work, str(n), mode],
            capture_output=True,
            text=True,
            cwd=work,
            env=env,
            timeout=1200,
            check=False,
        )
    if proc.returncode != 0:
        raise RuntimeError(f"{mode} run failed:\n{proc.stderr[-3000:]}")
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    server = receiver()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    for mode, target in (("off", url), ("on", url), ("unreachable", "http://127.0.0.1:9"), ("off", url)):
        r = run(mode, n, target)
        warm = r["writes_s"][3:]  # the first writes warm the JVM up
        line = (
            f"{mode:12s} median write {statistics.median(warm) * 1000:6.0f} ms"
            f"  total {sum(r['writes_s']):6.2f} s  spark.stop() {r['stop_s']:5.2f} s"
        )
        if "actions" in r:
            sends = sorted(r["send_ms"])
            line += (
                f"  | actions {r['actions']}, sent {r['sent']}, failed {r['failed']},"
                f" dropped {r['dropped']},"
                f" extraction mean {r['extraction_ms_mean']:.0f} ms max {r['extraction_ms_max']:.0f} ms"
            )
            if sends:
                line += f", send median {sends[len(sends) // 2]:.1f} ms"
        print(line, flush=True)
    server.shutdown()


if __name__ == "__main__":
    main()
