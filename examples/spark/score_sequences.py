# SPDX-License-Identifier: Apache-2.0
"""Scores a Parquet table of sequences with a Keras model on Spark (recur.spark; docs/spark.md).

    spark-submit --files model.keras score_sequences.py model.keras sequences.parquet [scores.parquet]
    python score_sequences.py MODEL PARQUET [OUT]        (local[2], with pyspark and recur installed)
"""
import os
import sys

from pyspark import SparkConf
from pyspark.sql import SparkSession

from recur.spark import SparkScorer


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: score_sequences.py MODEL PARQUET [OUT]")
    model, parquet = sys.argv[1], sys.argv[2]
    b = SparkSession.builder.appName("recur.spark example").config("spark.ui.showConsoleProgress", "false")
    if not SparkConf().contains("spark.master"):  # spark-submit sets the master
        b = b.master("local[2]")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers run this Python
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")

    # The model travels with the job (as spark-submit --files does); each worker process opens it once.
    name = os.path.basename(model)
    if not any(f.endswith("/" + name) for f in spark.sparkContext.listFiles):
        spark.sparkContext.addFile(model)
    scorer = SparkScorer(spark_file=name, sequence_col="seq", key_cols=["id"],
                         batch_size=256,      # rows per model call
                         bad_rows="skip")     # bad rows are left out (and counted) rather than failing the job
    scores = scorer.score(spark.read.parquet(parquet))  # id, score, gru: array<float> each
    if len(sys.argv) > 3:
        scores.write.mode("overwrite").parquet(sys.argv[3])
        n = spark.read.parquet(sys.argv[3]).count()
    else:
        scores.show(3, truncate=80)
        n = scores.count()
    print("example finished: %d rows scored, %d skipped" % (n, scorer.skipped.value))
    spark.stop()


if __name__ == "__main__":
    main()
