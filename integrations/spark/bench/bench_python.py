# SPDX-License-Identifier: Apache-2.0
"""Rows per second of recur.spark's SparkScorer over a Parquet file (bench.sh makes it): written to
Spark's "noop" sink once to warm up (workers started, model opened), then timed. Not a test.

    spark-venv/bin/python bench_python.py MASTER PARQUET MODEL [BATCH] [REPEATS]"""
import os
import sys
import time

from pyspark.sql import SparkSession

from recur.spark import SparkScorer

master, parquet, model = sys.argv[1:4]
batch = int(sys.argv[4]) if len(sys.argv) > 4 else 256
repeats = int(sys.argv[5]) if len(sys.argv) > 5 else 3
os.environ["PYSPARK_PYTHON"] = sys.executable
spark = SparkSession.builder.master(master).appName("recur-spark python bench") \
    .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false").getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
df = spark.read.parquet(parquet)
rows = df.count()
scorer = SparkScorer(model, key_cols=["id"], batch_size=batch)
scorer.score(df).write.format("noop").mode("overwrite").save()
best = float("inf")
for _ in range(repeats):
    t0 = time.perf_counter()
    scorer.score(df).write.format("noop").mode("overwrite").save()
    best = min(best, time.perf_counter() - t0)
print("python %s batch %d: %d rows in %.3f s (best of %d): %.0f rows/s" % (master, batch, rows, best, repeats,
                                                                          rows / best))
spark.stop()
