# SPDX-License-Identifier: Apache-2.0
"""Reduced precision weights: recur.load_model(..., precision=...), Model.precision and the
recur.layers layers' precision, against Keras's numbers (float32 exactly as without the option;
bf16 and int8 within the bound docs/precision.md explains) and their errors."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import recur
from test_models import EXAMPLES, TOL, abs_error

MODEL = EXAMPLES / "sentiment_keras3.keras"
# The bundled model's outputs are probabilities: bf16 and int8 weights move them by well under 0.01.
REDUCED_BOUND = 0.01


def _inputs():
    ids = np.loadtxt(EXAMPLES / "sentiment_inputs.txt", dtype=np.int64)
    want = np.loadtxt(EXAMPLES / "sentiment_keras3_keras.txt", dtype=np.float32)
    return ids, want


def test_load_model_precision_against_keras():
    ids, want = _inputs()
    plain = recur.load_model(MODEL).predict(ids)
    assert abs_error(plain, want) <= TOL
    m = recur.load_model(MODEL, precision="float32")
    assert m.precision == "float32"
    np.testing.assert_array_equal(m.predict(ids), plain)
    for p in ("bf16", "int8"):
        m = recur.load_model(MODEL, precision=p)
        assert m.precision == p
        e = abs_error(m.predict(ids), want)
        assert 0 < e < REDUCED_BOUND, (p, e)
    m.precision = "float32"
    np.testing.assert_array_equal(m.predict(ids), plain)


def test_model_precision_errors_and_pickle():
    m = recur.load_model(MODEL)
    with pytest.raises(recur.InvalidArgumentError, match='"bf16" or "int8"'):
        m.precision = "fp16"
    with pytest.raises(recur.InvalidArgumentError, match="precision"):
        m.precision = 8
    assert m.precision == "float32"
    m.precision = "int8"
    again = pickle.loads(pickle.dumps(m))
    assert again.precision == "int8"
    ids, _ = _inputs()
    np.testing.assert_array_equal(again.predict(ids), m.predict(ids))


def test_layer_precision():
    x = np.sin(np.arange(2 * 6 * 5, dtype=np.float32)).reshape(2, 6, 5)
    for cls in (recur.layers.GRU, recur.layers.LSTM, recur.layers.SimpleRNN):
        layer = cls(7, input_size=5, return_sequences=True, seed=3)
        assert layer.precision == "float32"
        f32 = layer(x)
        for p in ("bf16", "int8"):
            layer.precision = p
            assert layer.precision == p
            d = float(np.max(np.abs(layer(x) - f32)))
            assert 0 < d < 0.05, (cls.__name__, p, d)
        layer.precision = "float32"
        np.testing.assert_array_equal(layer(x), f32)
        with pytest.raises(recur.InvalidArgumentError, match="unknown precision"):
            layer.precision = "int4"
    made = recur.layers.GRU(4, input_size=3, seed=1, precision="int8")
    assert made.precision == "int8"
    assert pickle.loads(pickle.dumps(made)).precision == "int8"
