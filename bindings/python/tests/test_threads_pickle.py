# SPDX-License-Identifier: Apache-2.0
"""Models across threads and processes: concurrent predict on one model, one stream per thread,
the GIL released while recur computes, pickling (also into 'spawn' workers), and models opened
from bytes or a binary file object."""
from __future__ import annotations

import io
import json
import multiprocessing
import pickle
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import recur

ROOT = Path(__file__).resolve().parents[3]
GRAPHS = ROOT / "tests" / "keras" / "graphs"
MODEL = GRAPHS / "keras3" / "branches_concat.keras"  # Masking -> GRU and LSTM -> Concatenate -> TimeDistributed(Dense)
THREADS = 6


def inputs(seed, batch=5, steps=9, features=None):
    m = recur.load_model(MODEL)
    f = features or m.inputs[0].shape[-1]
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (batch, steps, f)).astype(np.float32)
    x[seed % batch, -2:] = 0.0  # a masked tail (Masking(0.0))
    return x


def test_concurrent_predict_equals_serial():
    m = recur.load_model(MODEL)
    assert not m.stateful
    xs = [inputs(i) for i in range(3 * THREADS)]
    serial = [m.predict(x) for x in xs]
    barrier = threading.Barrier(THREADS)

    def run(i):
        barrier.wait()
        return [m.predict(xs[j]) for j in range(i, len(xs), THREADS)], i

    with ThreadPoolExecutor(THREADS) as pool:
        for outs, i in pool.map(run, range(THREADS)):
            for y, j in zip(outs, range(i, len(xs), THREADS)):
                np.testing.assert_array_equal(y, serial[j])


def test_concurrent_predict_keras_numbers():
    """Threads on one model reproduce Keras's stored outputs for the fixture's inputs."""
    doc = json.loads((GRAPHS / "keras3.json").read_text())
    c = next(k for k in doc["cases"] if k["name"] == "branches_concat")
    call = c["calls"][0]
    x = np.array(call["inputs"][0]["data"], np.float32).reshape(call["inputs"][0]["shape"])
    want = np.array(call["outputs"][0]["data"], np.float32).reshape(call["outputs"][0]["shape"])
    m = recur.load_model(MODEL)
    with ThreadPoolExecutor(THREADS) as pool:
        ys = list(pool.map(lambda _: m.predict(x), range(4 * THREADS)))
    for y in ys:
        assert np.max(np.abs(y - want) / np.maximum(1, np.abs(want))) <= 1e-5
        np.testing.assert_array_equal(y, ys[0])


def test_streams_per_thread():
    """Each thread steps its own stream of one model; each gives what one thread alone gives."""
    m = recur.load_model(MODEL)
    assert m.streamable is None
    xs = [inputs(100 + i, batch=2, steps=7) for i in range(THREADS)]

    def stream(x):
        with m.new_state(batch=x.shape[0]) as s:
            return np.concatenate([s.step(x[:, t]) for t in range(x.shape[1])], axis=1)

    serial = [stream(x) for x in xs]
    for x, y in zip(xs, serial):  # and streamed equals whole
        assert np.max(np.abs(y - m.predict(x))) <= 1e-5
    with ThreadPoolExecutor(THREADS) as pool:
        for y, want in zip(pool.map(stream, xs), serial):
            np.testing.assert_array_equal(y, want)


def test_stateful_model_calls_one_at_a_time():
    """Concurrent predicts on a stateful model run one at a time: with the same input each time,
    the final states are those of as many calls in a row."""
    path = GRAPHS / "keras3" / "stateful_sequential_gru.keras"
    x = inputs(7, batch=3, steps=4, features=3)
    serial = recur.load_model(path)
    for _ in range(THREADS):
        serial.predict(x)
    m = recur.load_model(path)
    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(lambda _: m.predict(x), range(THREADS)))
    got, want = m.get_states(), serial.get_states()
    assert list(got) == list(want)
    for k in want:
        for a, b in zip(got[k], want[k]):
            assert np.max(np.abs(a - b)) <= 1e-5


def test_gil_released_during_predict():
    """While one thread is inside a long predict, another Python thread runs. The switch interval
    is made huge, so the worker never hands over the GIL on its own: the main thread can only count
    while the worker waits inside recur with the GIL released."""
    m = recur.load_model(GRAPHS / "keras3" / "masking_sequential.keras")
    x = np.random.default_rng(0).uniform(-1, 1, (32, 20000, 4)).astype(np.float32)
    count = [0]
    seen = {}
    started = threading.Event()
    done = threading.Event()

    def worker():
        started.set()
        before = count[0]
        try:
            seen["y"] = m.predict(x)
        finally:
            seen["progress"] = count[0] - before
            done.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    try:
        t = threading.Thread(target=worker)
        t.start()
        started.wait()
        while not done.is_set():
            count[0] += 1
            time.sleep(0)  # lets the worker have the GIL back when recur returns
        t.join()
    finally:
        sys.setswitchinterval(old)
    assert seen["y"].shape == (32, 20000, 3)
    assert seen["progress"] > 0, "no Python thread ran while predict computed: the GIL was held"


# ---- pickling and opening from memory ---------------------------------------------------------------

def _predict(args):
    model, x = args
    return model.predict(x), model.keras_backend


def test_pickle_roundtrip():
    m = recur.load_model(MODEL, num_threads=2)
    x = inputs(3)
    m2 = pickle.loads(pickle.dumps(m))
    assert m2 is not m and m2.num_threads == 2
    assert m2.input_names == m.input_names and m2.output_names == m.output_names
    np.testing.assert_array_equal(m2.predict(x), m.predict(x))
    m.close()
    with pytest.raises(recur.StateError, match="is closed"):
        pickle.dumps(m)


def test_pickle_keeps_the_backend():
    """keras3_jax numbers (masked steps before the first valid one) survive pickling."""
    doc = json.loads((GRAPHS / "keras3_jax.json").read_text())
    c = next(k for k in doc["cases"] if k["name"] == "masked_initial_state")
    call = c["calls"][0]
    xs = {n: np.array(t["data"], np.float32).reshape(t["shape"]) for n, t in zip(c["input_names"], call["inputs"])}
    m = pickle.loads(pickle.dumps(recur.load_model(GRAPHS / "keras3_jax" / "masked_initial_state.keras", keras_backend="jax")))
    assert m.keras_backend == "jax"
    for y, w in zip(m.predict(xs), call["outputs"]):
        want = np.array(w["data"], np.float32).reshape(w["shape"])
        assert np.max(np.abs(y - want) / np.maximum(1, np.abs(want))) <= 1e-5


def test_spawn_pool():
    m = recur.load_model(MODEL)
    xs = [inputs(i) for i in range(4)]
    want = [m.predict(x) for x in xs]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        got = pool.map(_predict, [(m, x) for x in xs])
    for (y, backend), w in zip(got, want):
        assert backend == "tensorflow"
        np.testing.assert_array_equal(y, w)


def test_open_from_bytes_and_file_objects():
    x = inputs(5)
    want = recur.load_model(MODEL).predict(x)
    data = MODEL.read_bytes()
    with open(MODEL, "rb") as f:
        from_file = recur.load_model(f)
    for m in (recur.load_model(data), recur.load_model(bytearray(data)), recur.load_model(memoryview(data)),
              recur.load_model(io.BytesIO(data)), from_file, recur.load_model(str(MODEL))):
        np.testing.assert_array_equal(m.predict(x), want)
        np.testing.assert_array_equal(pickle.loads(pickle.dumps(m)).predict(x), want)
    assert "<bytes>" in repr(recur.load_model(data))
    assert "mine" in repr(recur.load_model(data, name="mine"))
    assert str(MODEL) in repr(from_file)
    h5 = MODEL.with_suffix(".h5")
    with open(h5, "rb") as f:
        np.testing.assert_array_equal(recur.load_model(f).predict(x), recur.load_model(h5).predict(x))
