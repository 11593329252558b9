# SPDX-License-Identifier: Apache-2.0
"""The extension's own argument handling (recur_python.i): malformed tuples, buffers of the wrong
type or layout, read-only output buffers. Each must raise a clear exception and leave nothing
allocated, never crash."""
import gc
from pathlib import Path

import numpy as np
import pytest

import recur
from recur import _native as N

ROOT = Path(__file__).resolve().parents[3]
MODEL = ROOT / "examples" / "models" / "sentiment_keras3.keras"
IDS = np.array([[12, 13, 18, 11, 15, 16, 5, 2, 6, 6]], dtype=np.int32)


@pytest.fixture(scope="module")
def native_model():
    return N.Model.open(str(MODEL))


def run(model, inputs, outputs):
    return N.recur_py_run_named(model, inputs, outputs, None)


def test_named_run_writes_into_the_callers_array(native_model):
    out = np.zeros((1, 2), np.float32)
    dims = run(native_model, [(b"input_layer", 2, IDS, IDS.shape, None)], [(b"head", out)])
    assert dims == [(1, 2)]
    keras = np.loadtxt(ROOT / "examples" / "models" / "sentiment_keras3_keras.txt", dtype=np.float64)[0]
    assert np.abs(out[0] - keras).max() <= 1e-6


@pytest.mark.parametrize("inputs, exc, words", [
    ([(b"input_layer", 2, IDS)], TypeError, "argument"),                      # tuple too short
    ([("input_layer", 2, IDS, IDS.shape, None)], TypeError, "bytes"),          # name as str
    ([(b"input_layer", 2, IDS, [1, 10], None)], TypeError, "dims"),            # dims not a tuple
    ([(b"input_layer", 2, IDS, (1,) * 9, None)], TypeError, "RECUR_MAX_RANK"),  # rank over the max
    ([(b"input_layer", 2, IDS, (1, "10"), None)], TypeError, "integer"),
    ([(b"input_layer", 2, IDS.astype(np.float64), IDS.shape, None)], recur.InvalidArgumentError, "dtype"),
    ([(b"input_layer", 2, IDS[:, ::2], (1, 5), None)], recur.InvalidArgumentError, "C-contiguous"),
    ([(b"input_layer", 2, IDS, IDS.shape, np.ones((1, 10), np.float32))], recur.InvalidArgumentError, "mask"),
    ([(b"input_layer", 4, ["a"], (1, 1), None)], TypeError, "bytes"),           # texts must be bytes
    ([(b"input_layer", 2, IDS, (1, 11), None)], recur.ShapeError, "input_layer"),
    ([(b"input_layer", 2, IDS, (1, -10), None)], recur.RecurError, "input_layer"),
    ([(b"input_layer", 99, IDS, IDS.shape, None)], recur.InvalidArgumentError, "dtype"),
    (42, TypeError, "sequence"),
])
def test_malformed_inputs_raise(native_model, inputs, exc, words):
    out = np.zeros((1, 2), np.float32)
    before = out.copy()
    with pytest.raises(exc) as e:
        run(native_model, inputs, [(b"head", out)])
    assert words.lower() in str(e.value).lower()
    assert np.array_equal(out, before)  # nothing written on failure


@pytest.mark.parametrize("outputs, exc, words", [
    ([(b"head", np.zeros((1, 2), np.float64))], recur.InvalidArgumentError, "float32"),
    ([(b"head", np.zeros((1, 2), np.float32)[:, ::-1])], recur.InvalidArgumentError, "C-contiguous"),
    ([(b"head", bytes(8))], recur.InvalidArgumentError, "writable"),
    ([(b"head", np.zeros(1, np.float32))], recur.ShapeError, "head"),
    ([(b"nope", np.zeros((1, 2), np.float32))], recur.InvalidArgumentError, "nope"),
    ([("head", np.zeros((1, 2), np.float32))], TypeError, "bytes"),
])
def test_malformed_outputs_raise(native_model, outputs, exc, words):
    with pytest.raises(exc) as e:
        run(native_model, [(b"input_layer", 2, IDS, IDS.shape, None)], outputs)
    assert words.lower() in str(e.value).lower()


def test_read_only_output_array_is_refused(native_model):
    out = np.zeros((1, 2), np.float32)
    out.setflags(write=False)
    with pytest.raises(recur.InvalidArgumentError, match="writable"):
        run(native_model, [(b"input_layer", 2, IDS, IDS.shape, None)], [(b"head", out)])


def test_status_classes_carry_the_status_and_python_bases():
    with pytest.raises(recur.IOError) as e:
        N.Model.open(str(ROOT / "no-such-model.keras"))
    assert e.value.status == -7
    assert isinstance(e.value, OSError) and isinstance(e.value, recur.RecurError)
    assert "no-such-model.keras" in str(e.value)
    assert issubclass(recur.ShapeError, ValueError) and issubclass(recur.OutOfMemoryError, MemoryError)


def test_failed_calls_leave_no_handle_alive(native_model):
    gc.collect()
    before = recur.live_handles()
    for _ in range(50):
        with pytest.raises(recur.RecurError):
            N.Model.open_memory(b"not a model", "junk.keras")
        with pytest.raises(TypeError):
            run(native_model, [(b"input_layer", 2, IDS, [1], None)], [])
    gc.collect()
    assert recur.live_handles() == before


def test_handles_are_freed_when_the_objects_go():
    gc.collect()
    before = recur.live_handles()
    m = N.Model.open(str(MODEL))
    s = N.ModelState.create(m, 2)
    assert recur.live_handles()[2] == before[2] + 1 and recur.live_handles()[3] == before[3] + 1
    del m, s
    gc.collect()
    assert recur.live_handles() == before


def test_many_inputs_and_outputs_take_the_heap_path(native_model):
    """More than 8 inputs or outputs: the descriptors are allocated, and the library's own
    checks (here: repeated names) still answer."""
    x = (b"input_layer", 2, IDS, IDS.shape, None)
    outs = [(b"head", np.zeros((1, 2), np.float32)) for _ in range(9)]
    with pytest.raises(recur.InvalidArgumentError, match="head"):
        run(native_model, [x], outs)
    with pytest.raises(recur.InvalidArgumentError, match="input_layer"):
        run(native_model, [x] * 9, outs[:1])
    out = np.zeros((1, 2), np.float32)
    assert run(native_model, [x], [(b"head", out)]) == [(1, 2)]
