# SPDX-License-Identifier: Apache-2.0
"""recur.spark without Spark: the module imports with neither pyspark nor pyarrow (it imports them
when used), refuses bad arguments, and a scorer pickles without its model or the model's bytes
once broadcast. The Spark runs themselves are integrations/spark's spark_python tests."""
from __future__ import annotations

import pickle
import subprocess
import sys

import pytest

import recur.spark
from recur.spark import SparkScorer


def test_imports_without_pyspark_or_pyarrow():
    code = ("import sys; sys.modules['pyspark'] = None; sys.modules['pyarrow'] = None; "
            "import recur.spark; print(recur.spark.SparkScorer.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "SparkScorer"


@pytest.mark.parametrize("kw, message", [
    ({}, "exactly one of path, spark_file or data"),
    ({"path": "m.keras", "data": b"x"}, "exactly one of path, spark_file or data"),
    ({"path": "m.keras", "padding": "pad"}, "padding must be 'mask' or 'group'"),
    ({"path": "m.keras", "bad_rows": "ignore"}, "bad_rows must be 'fail' or 'skip'"),
    ({"path": "m.keras", "batch_size": 0}, "batch_size must be a positive integer"),
    ({"path": "m.keras", "batch_size": True}, "batch_size must be a positive integer"),
])
def test_bad_arguments(kw, message):
    with pytest.raises(ValueError, match=message):
        SparkScorer(**kw)


def test_pickles_without_a_model():
    s = SparkScorer(data=b"model bytes", name="m.keras", key_cols=["id"])
    s._broadcast = "a broadcast"  # as score() leaves it: workers read the broadcast, not the bytes
    t = pickle.loads(pickle.dumps(s))
    assert t._data is None and t._broadcast == "a broadcast" and t.key_cols == ["id"] and t.name == "m.keras"


def test_models_are_cached_per_process(tmp_path):
    missing = SparkScorer(str(tmp_path / "none.keras"))
    with pytest.raises(FileNotFoundError, match="does not exist on the driver"):
        missing._model("the driver")
    assert recur.spark._cache() is recur.spark._cache()
