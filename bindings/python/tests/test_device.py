# SPDX-License-Identifier: Apache-2.0
"""The package on a GPU: the bundled model and a few whole-model fixtures with device="cuda"
against Keras's numbers (the same tolerance as on the CPU), and device="auto", which runs on the
GPU when one can run and on the CPU otherwise.

Without a usable GPU the "cuda" tests skip, saying why (no plugin, driver or GPU). The plugin is
found beside librecur.so.0 or at RECUR_CUDA_PLUGIN (scripts/gpu-check.sh sets it to the build
tree's librecur_cuda.so)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import recur
from test_models import EXAMPLES, GRAPHS, KERAS, SENTIMENT, TOL, abs_error, as_list, call_inputs, rel_error


def _why_no_gpu():
    """Empty when "cuda" can run here, else the library's reason."""
    if recur.device_count() > 0 and recur.device_available("cuda"):
        return ""
    try:
        recur.load_model(EXAMPLES / SENTIMENT[0], device="cuda")
    except recur.RecurError as e:
        return str(e)
    return "recur.device_count() is %d" % recur.device_count()


WHY_NO_GPU = _why_no_gpu()
needs_gpu = pytest.mark.skipif(bool(WHY_NO_GPU), reason="no usable GPU: %s" % WHY_NO_GPU)

# Recurrent models of the core suite (cuDNN and kernel routes, masks, states, bidirectional) in each
# dialect, as .keras and .h5.
GRAPH_NAMES = ("masking_sequential", "seq2seq_gru", "bidirectional_return_state", "simple_rnn",
               "stateful_functional_lstm_gru", "masked_initial_state", "cudnn_bidirectional_lstm")


def _graph_params():
    params = []
    for dialect in ("keras2", "keras3", "keras3_jax"):
        doc = json.loads((GRAPHS / (dialect + ".json")).read_text())
        for c in doc["cases"]:
            if c["name"] in GRAPH_NAMES:
                for rel in c["files"]:
                    params.append(pytest.param((doc.get("backend", "tensorflow"), rel, c),
                                               id="%s-%s.%s" % (dialect, c["name"], rel.rsplit(".", 1)[1])))
    return params


def test_reason_is_printed():
    print("GPUs recur can use: %d%s" % (recur.device_count(), "; cuda: " + WHY_NO_GPU if WHY_NO_GPU else ""))
    assert recur.device_count() >= 0


@needs_gpu
@pytest.mark.parametrize("name", SENTIMENT)
def test_sentiment_on_cuda(name):
    dialect = name.split("_")[1].split(".")[0]
    ids = np.loadtxt(EXAMPLES / "sentiment_inputs.txt", dtype=np.int64)
    want = np.loadtxt(EXAMPLES / ("sentiment_%s_keras.txt" % dialect), dtype=np.float32)
    m = recur.load_model(EXAMPLES / name, device="cuda")
    assert m.device == "cuda" and m.device_info()["backend"].startswith("cuda"), m.device_info()
    y = m.predict(ids)
    e = abs_error(y, want)
    print("%s on %s: max abs error %.3e" % (name, m.device_info()["device_name"], e))
    assert y.shape == want.shape and e <= TOL, e
    if m.streamable is None:
        with m.new_state(batch=ids.shape[0]) as s:
            for t in range(ids.shape[1]):
                y = s.step(ids[:, t])
        e = abs_error(y, want)
        assert e <= TOL, "streamed: %.3e" % e


@needs_gpu
@pytest.mark.parametrize("case", _graph_params())
def test_graph_on_cuda(case):
    backend, rel, c = case
    m = recur.load_model(KERAS / rel, device="cuda", keras_backend="jax" if backend == "jax" else None)
    for i, call in enumerate(c["calls"]):
        if call.get("reset_states_before"):
            m.reset_states()
        y = as_list(m.predict(dict(zip(c["input_names"], call_inputs(call)))))
        assert len(y) == len(call["outputs"])
        for k, (g, w) in enumerate(zip(y, call["outputs"])):
            e = rel_error(g, np.array(w["data"], dtype=np.float32).reshape(w["shape"]))
            assert e <= TOL, "%s call %d output %s: error %.3e" % (rel, i, c["output_names"][k], e)


def test_auto_runs_where_it_can():
    name = SENTIMENT[0]
    ids = np.loadtxt(EXAMPLES / "sentiment_inputs.txt", dtype=np.int64)
    want = np.loadtxt(EXAMPLES / ("sentiment_%s_keras.txt" % name.split("_")[1].split(".")[0]), dtype=np.float32)
    on_cpu = recur.load_model(EXAMPLES / name).predict(ids)
    m = recur.load_model(EXAMPLES / name, device="auto")
    info = m.device_info()
    assert m.device == "auto"
    if WHY_NO_GPU:
        # The CPU, saying why, with the CPU's numbers bit for bit.
        assert info["backend"] == "cpu" and info["reason"], info
        np.testing.assert_array_equal(m.predict(ids), on_cpu)
    else:
        assert info["backend"].startswith("cuda"), info
    assert abs_error(m.predict(ids), want) <= TOL
