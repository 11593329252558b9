# SPDX-License-Identifier: Apache-2.0
"""recur.spark against Keras: every row of tests/fixtures/sequences.parquet scored on local[2]
through mapInArrow equals Keras's output for that row alone (expected.parquet), padded and masked
or grouped by length; and the errors users meet. One SparkSession for the whole run.

    spark-venv/bin/python test_spark_python.py FIXTURES_DIR          (PYTHONPATH: the recur package)
    spark-venv/bin/python test_spark_python.py FIXTURES_DIR --native-missing
Exits 77 (skipped) when pyspark, pyarrow or recur cannot be imported, saying why."""
import os
import sys
import tempfile
import unittest

FIXTURES = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else ""
NATIVE_MISSING = "--native-missing" in sys.argv
TOL = 1e-5

try:
    import numpy as np
    import pyarrow  # noqa: F401
    from pyspark.sql import SparkSession, types as T
except ImportError as e:
    print("SKIPPED: %s lacks %s: run integrations/spark/deps.sh BUILD_DIR (it makes BUILD_DIR/spark-venv)"
          % (sys.executable, e.name))
    sys.exit(77)
try:
    from recur.spark import SparkScorer
except ImportError as e:
    print("SKIPPED: cannot import recur.spark (%s): build the Python binding (make recur_python_package)" % e)
    sys.exit(77)

spark = None
expected = {}


def setUpModule():
    global spark, sequences
    # The workers run this very Python (the venv with pyarrow), not the python3 on PATH.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    b = SparkSession.builder.master("local[2]").appName("recur-spark python tests") \
        .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "2") \
        .config("spark.driver.extraJavaOptions", "-Dlog4j2.configurationFile=" +
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "log4j2.properties"))
    if NATIVE_MISSING:
        # The workers' Python finds, before the real one, a recur package whose import fails as a
        # missing librecur.so.0 does; the driver keeps the real one (it plans the output).
        fake = tempfile.mkdtemp()
        os.makedirs(os.path.join(fake, "recur"))
        with open(os.path.join(fake, "recur", "__init__.py"), "w") as f:
            f.write("raise ImportError('librecur.so.0: cannot open shared object file: No such file or directory')\n")
        wrapper = os.path.join(fake, "python")
        with open(wrapper, "w") as f:
            f.write('#!/bin/sh\nPYTHONPATH="%s:$PYTHONPATH" exec "%s" "$@"\n' % (fake, sys.executable))
        os.chmod(wrapper, 0o755)
        os.environ["PYSPARK_PYTHON"] = wrapper
    spark = b.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if NATIVE_MISSING:
        return
    sequences = spark.read.parquet(os.path.join(FIXTURES, "sequences.parquet")).repartition(4).cache()
    for r in spark.read.parquet(os.path.join(FIXTURES, "expected.parquet")).collect():
        expected[r["id"]] = r.asDict()
    assert len(expected) == 240


def tearDownModule():
    if spark is not None:
        spark.stop()


def model(name):
    return os.path.join(FIXTURES, name)


def bad_table():
    step = [0.5, -0.25, 1.0, 0.75]
    schema = T.StructType([T.StructField("id", T.LongType(), False),
                           T.StructField("seq", T.ArrayType(T.ArrayType(T.DoubleType())), True)])
    return spark.createDataFrame([(1, [step, step]), (7, [step, [1.0, 2.0, 3.0]]), (8, None), (9, []),
                                  (10, [[1.0, None, 3.0, 4.0]]), (11, [step])], schema).coalesce(1)


def message(e):
    s = []
    while e is not None:
        s.append(str(e))
        e = e.__cause__ or e.__context__
    return "\n".join(s)


@unittest.skipIf(NATIVE_MISSING, "the run with a broken recur on the workers")
class Scoring(unittest.TestCase):
    def compare(self, scored, col, want):
        rows = scored.collect()
        self.assertEqual(len(rows), 240, "every row scored once")
        worst = 0.0
        for r in rows:
            ref = expected[r["id"]][want]
            self.assertEqual(len(r[col]), len(ref), "row id=%d %s length" % (r["id"], col))
            worst = max(worst, float(np.max(np.abs(np.asarray(r[col]) - np.asarray(ref)))))
        print("  %s vs Keras %s: 240 rows, worst |diff| %.3g" % (col, want, worst))
        self.assertLessEqual(worst, TOL)

    def test_keras3_masking_gru_padded_and_masked(self):
        scored = SparkScorer(model("gru_masking_keras3.keras"), key_cols=["id"], batch_size=16).score(sequences)
        self.assertEqual(scored.columns, ["id", "score", "gru"])
        self.compare(scored, "score", "k3_score")
        self.compare(scored, "gru", "k3_gru")

    def test_keras3_grouped_by_length(self):
        scored = SparkScorer(model("gru_masking_keras3.keras"), padding="group", batch_size=64).score(sequences)
        self.compare(scored, "score", "k3_score")
        self.compare(scored, "gru", "k3_gru")

    def test_keras2_lstm_without_masking_from_bytes(self):
        with open(model("lstm_keras2.h5"), "rb") as f:
            data = f.read()
        scored = SparkScorer(data=data, name="lstm_keras2.h5", key_cols=["id"], batch_size=32).score(sequences)
        self.compare(scored, "prob", "k2_prob")

    def test_keras2_from_spark_files_flat_column(self):
        spark.sparkContext.addFile(model("lstm_keras2.h5"))
        flat = sequences.selectExpr("id", "flatten(seq) AS values")
        scored = SparkScorer(spark_file="lstm_keras2.h5", sequence_col="values", output_prefix="y_").score(flat)
        self.compare(scored, "y_prob", "k2_prob")

    def test_token_ids_through_embedding_mask_zero(self):
        for padding in ("mask", "group"):
            scored = SparkScorer(model("embedding_gru_keras3.keras"), sequence_col="tokens", key_cols=["id"],
                                 batch_size=50, padding=padding).score(sequences)
            self.compare(scored, "tok_score", "k3_tok")

    def test_bad_row_fails_naming_its_key(self):
        with self.assertRaises(Exception) as c:
            SparkScorer(model("lstm_keras2.h5")).score(bad_table()).collect()
        m = message(c.exception)
        self.assertIn("row id=7", m)
        self.assertIn("step 1 has 3 features; the model's input 'seq_in' takes 4", m)

    def test_bad_rows_skipped(self):
        s = SparkScorer(model("lstm_keras2.h5"), bad_rows="skip")
        rows = s.score(bad_table()).collect()
        self.assertEqual(sorted(r["id"] for r in rows), [1, 11])
        self.assertEqual(s.skipped.value, 4)
        alone = SparkScorer(model("lstm_keras2.h5")).score(bad_table().where("id IN (1, 11)")).collect()
        self.assertEqual([r["prob"] for r in alone], [r["prob"] for r in rows])

    def test_null_and_empty_rows_named(self):
        for key, why in ((8, "the sequence is null"), (9, "the sequence is empty"), (10, "step 0, feature 1 is null")):
            with self.assertRaises(Exception) as c:
                SparkScorer(model("lstm_keras2.h5")).score(bad_table().where("id = %d" % key)).collect()
            m = message(c.exception)
            self.assertIn("row id=%d" % key, m)
            self.assertIn(why, m)

    def test_missing_model_file(self):
        with self.assertRaises(FileNotFoundError) as c:
            SparkScorer("/nonexistent/model.keras").score(sequences)
        self.assertIn("/nonexistent/model.keras does not exist", str(c.exception))
        self.assertIn("--files", str(c.exception))

    def test_spark_file_not_shipped(self):
        with self.assertRaises(FileNotFoundError) as c:
            SparkScorer(spark_file="never_added.keras").score(sequences)
        self.assertIn("'never_added.keras' was not shipped", str(c.exception))

    def test_columns_that_hold_no_sequences(self):
        with self.assertRaises(ValueError) as c:
            SparkScorer(model("lstm_keras2.h5"), sequence_col="id").score(sequences)
        self.assertIn("column 'id' is bigint", str(c.exception))
        with self.assertRaises(ValueError) as c:
            SparkScorer(model("lstm_keras2.h5"), sequence_col="nope").score(sequences)
        self.assertIn("no sequence column 'nope'", str(c.exception))

    def test_corrupt_model_bytes(self):
        with self.assertRaises(RuntimeError) as c:
            SparkScorer(data=b"\x01\x02\x03\x04", name="junk.keras").score(sequences)
        self.assertIn("cannot open the model junk.keras", str(c.exception))

    def test_task_gpu_without_gpu_resources(self):
        with self.assertRaises(Exception) as c:
            SparkScorer(model("lstm_keras2.h5"), device="cuda:task").score(bad_table().where("id = 1")).collect()
        m = message(c.exception)
        self.assertIn('device "cuda:task" needs a GPU assigned to each task', m)
        self.assertIn("spark.task.resource.gpu.amount", m)

    def test_stateful_model_refused(self):
        with self.assertRaises(ValueError) as c:
            SparkScorer(model("stateful_gru_keras3.keras")).score(sequences)
        self.assertIn("is stateful", str(c.exception))

    def test_bad_arguments(self):
        for kw in ({"padding": "pad"}, {"bad_rows": "ignore"}, {"batch_size": 0}):
            with self.assertRaises(ValueError):
                SparkScorer(model("lstm_keras2.h5"), **kw)
        with self.assertRaises(ValueError):
            SparkScorer()


@unittest.skipIf(not NATIVE_MISSING, "run with --native-missing")
class NativeMissing(unittest.TestCase):
    def test_worker_without_recur(self):
        # The driver loads recur (it plans the output); the workers cannot.
        with self.assertRaises(Exception) as c:
            SparkScorer(model("lstm_keras2.h5")).score(bad_table().where("id = 1")).collect()
        m = message(c.exception)
        self.assertIn("recur.spark: the recur package cannot be loaded on the Spark worker", m)
        self.assertIn("librecur.so.0: cannot open shared object file", m)
        self.assertIn("--archives", m)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
