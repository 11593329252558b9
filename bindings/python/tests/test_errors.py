# SPDX-License-Identifier: Apache-2.0
"""Error paths of the Python model API: each raises recur's exception class for the C status,
with a message that names the argument and says what was expected."""
from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest

import recur

ROOT = Path(__file__).resolve().parents[3]
GRAPHS = ROOT / "tests" / "keras" / "graphs"
CLI = ROOT / "tests" / "cli" / "models"


@pytest.fixture
def multi_io():
    """inputs seq (None, 7, 4) and static (None, 5); outputs probs and value."""
    with recur.load_model(GRAPHS / "keras3" / "multi_io.keras") as m:
        yield m


@pytest.fixture
def seq_model():
    """One sequence input (None, 7, 4) with a Masking layer; streams."""
    with recur.load_model(GRAPHS / "keras3" / "masking_sequential.keras") as m:
        yield m


@pytest.fixture
def restore_limits():
    yield
    for name in recur.limits():
        recur.set_limit(name, 0)


def io_inputs():
    return [np.zeros((3, 7, 4), np.float32), np.zeros((3, 5), np.float32)]


def test_exception_hierarchy():
    assert issubclass(recur.IOError, OSError)
    assert issubclass(recur.ShapeError, ValueError) and issubclass(recur.InvalidArgumentError, ValueError)
    assert issubclass(recur.ParseError, ValueError) and issubclass(recur.OutOfMemoryError, MemoryError)
    for cls in (recur.InvalidArgumentError, recur.ShapeError, recur.UnsupportedError, recur.ParseError,
                recur.StateError, recur.OutOfMemoryError, recur.IOError, recur.LimitError, recur.CancelledError,
                recur.InternalError):
        assert issubclass(cls, recur.RecurError), cls


# ---- shapes ---------------------------------------------------------------------------------------

def test_bad_feature_size(multi_io):
    seq, st = io_inputs()
    with pytest.raises(recur.ShapeError, match=r"inputs\[0\] \('seq'\)\.dims: expected \(B, T, 4\).*got \(3, 7, 2\)") as e:
        multi_io.predict([seq[:, :, :2], st])
    assert e.value.status == -2


def test_bad_static_shape(multi_io):
    seq, _ = io_inputs()
    with pytest.raises(recur.ShapeError, match=r"inputs\[1\] \('static'\)\.dims: expected \(B, 5\).*got \(3, 1\)"):
        multi_io.predict([seq, np.zeros((3, 1), np.float32)])


def test_bad_rank(multi_io):
    _, st = io_inputs()
    with pytest.raises(recur.ShapeError, match=r"'seq'.*rank 3.*got \(3, 28\) \(rank 2\)"):
        multi_io.predict([np.zeros((3, 28), np.float32), st])


def test_batches_differ(multi_io):
    seq, st = io_inputs()
    with pytest.raises(recur.ShapeError, match="batch 3 differs from the batch 2 of input 'seq'"):
        multi_io.predict([seq[:2], st])


def test_stateful_model_fixed_batch():
    m = recur.load_model(GRAPHS / "keras3" / "stateful_sequential_gru.keras")
    with pytest.raises(recur.ShapeError, match="fixes the batch at 3 .*got 2"):
        m.predict(np.zeros((2, 4, 3), np.float32))


def test_stream_batch_and_lengths(multi_io):
    seq, st = io_inputs()
    s = multi_io.new_state(batch=3)
    with pytest.raises(recur.ShapeError, match="batch"):
        s.step([seq[:2, :1], st[:2]])
    s.step([seq[:, :2], st])  # the failed step left the stream usable


# ---- dtypes ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad,dtype", [
    (np.full((3, 7, 4), "a"), "<U1"),
    (np.zeros((3, 7, 4)).astype(object), "object"),
    (np.zeros((3, 7, 4), np.complex64), "complex64"),
], ids=["strings", "object", "complex"])
def test_numeric_input_refuses(multi_io, bad, dtype):
    _, st = io_inputs()
    with pytest.raises(recur.InvalidArgumentError) as e:
        multi_io.predict([bad, st])
    assert str(e.value).startswith("inputs['seq']: expected real numbers (float or integer), got an array of dtype %s" % dtype)
    assert "numpy.asarray(x, numpy.float32)" in str(e.value)
    assert e.value.status == -1


def test_ragged_list(seq_model):
    with pytest.raises(recur.InvalidArgumentError, match=r"inputs\['input_layer'\]: expected"):
        seq_model.predict([[[0.0] * 4] * 7, [[0.0] * 4] * 6])


def test_text_input_refuses_numbers():
    m = recur.load_model(GRAPHS / "text" / "keras3" / "string_lookup_gru.keras")
    assert m.inputs[0].dtype == "string"
    with pytest.raises(recur.InvalidArgumentError, match=r"inputs\['text'\]: expected text \(str or bytes\), got float"):
        m.predict(np.zeros((3, 5), np.float32))
    with pytest.raises(recur.InvalidArgumentError, match=r"inputs\['text'\]: expected text \(str or bytes\), got int"):
        m.predict(np.array([[1, 2, 3, 4, 5]], dtype=object))


def test_token_ids():
    m = recur.load_model(CLI / "keras2" / "tokens.keras")
    ids = np.load(CLI / "keras2" / "tokens_x.npy")
    bad = ids.copy()
    bad[0, 1] = 20
    with pytest.raises(recur.InvalidArgumentError, match=r"input 'ids': token id 20 at position 1 \(0, 1\) is out of range \[0, 20\) for Embedding 'embedding'"):
        m.predict(bad)
    with pytest.raises(recur.InvalidArgumentError, match=r"token id -3 .*out of range \[0, 20\)"):
        m.predict(-ids)
    with pytest.raises(recur.InvalidArgumentError, match=r"token id 3\.5 .*is not an integer in \[0, 20\)"):
        m.predict(ids.astype(np.float32) + 0.5)
    with pytest.raises(recur.InvalidArgumentError, match=r"inputs\['ids'\]: integer 18446744073709551615 does not fit int64"):
        m.predict(np.full((3, 6), 2**64 - 1, dtype=np.uint64))


# ---- names and list lengths -----------------------------------------------------------------------

def test_missing_input_name(multi_io):
    seq, _ = io_inputs()
    with pytest.raises(recur.InvalidArgumentError, match=r"^inputs: missing input\(s\) 'static'; the model's inputs are 'seq', 'static'$"):
        multi_io.predict({"seq": seq})


def test_unknown_input_name(multi_io):
    seq, st = io_inputs()
    with pytest.raises(recur.InvalidArgumentError, match=r"^inputs: unknown input name\(s\) 'zzz'; the model's inputs are 'seq', 'static'$"):
        multi_io.predict({"seq": seq, "static": st, "zzz": st})


def test_wrong_input_name(multi_io):
    seq, st = io_inputs()
    with pytest.raises(recur.InvalidArgumentError,
                       match=r"unknown input name\(s\) 'Static'; missing input\(s\) 'static'; the model's inputs are"):
        multi_io.predict({"seq": seq, "Static": st})


@pytest.mark.parametrize("n", [1, 3])
def test_wrong_list_length(multi_io, n):
    seq, st = io_inputs()
    with pytest.raises(recur.InvalidArgumentError,
                       match=r"inputs: expected 2 arrays, one per model input \('seq', 'static'\), got %d; pass a dict" % n):
        multi_io.predict([seq, st, st][:n])


def test_one_array_for_two_inputs(multi_io):
    seq, _ = io_inputs()
    with pytest.raises(recur.InvalidArgumentError, match=r"the model has 2 inputs \('seq', 'static'\): pass a list in that order or a dict"):
        multi_io.predict(seq)


def test_unknown_output_name(multi_io):
    with pytest.raises(recur.InvalidArgumentError, match=r"the model has no output 'nope' \(its outputs: 'probs', 'value'\)"):
        multi_io.predict(io_inputs(), outputs=["nope"])


# ---- masks ----------------------------------------------------------------------------------------

def test_mask_on_input_without_timesteps(multi_io):
    for mask in ({"static": np.ones((3, 5))}, [None, np.ones((3, 5))]):
        with pytest.raises(recur.InvalidArgumentError,
                           match=r"inputs\[1\] \('static'\)\.mask: the input has no timesteps axis, so it takes no mask"):
            multi_io.predict(io_inputs(), mask=mask)


def test_mask_wrong_length(multi_io):
    with pytest.raises(recur.ShapeError, match=r"inputs\[0\] \('seq'\)\.mask_length: expected B x T = 21 values .*got 12"):
        multi_io.predict(io_inputs(), mask={"seq": np.ones((3, 4))})


def test_mask_unknown_name_and_list_length(multi_io):
    with pytest.raises(recur.InvalidArgumentError, match=r"mask: unknown input name\(s\) 'nope'; the model's inputs are 'seq', 'static'"):
        multi_io.predict(io_inputs(), mask={"nope": np.ones((3, 7))})
    with pytest.raises(recur.InvalidArgumentError, match=r"mask: expected 2 masks \(None for an input without one\), got 1"):
        multi_io.predict(io_inputs(), mask=[np.ones((3, 7))])


def test_mask_not_booleans(seq_model):
    with pytest.raises(recur.InvalidArgumentError, match=r"mask: expected a \(batch, timesteps\) array of booleans, got an array of dtype <U1"):
        seq_model.predict(np.zeros((3, 7, 4), np.float32), mask=np.full((3, 7), "x"))


def test_mask_without_sequence_input():
    m = recur.load_model(GRAPHS / "text" / "keras3" / "string_lookup_gru.keras")
    with pytest.raises(recur.InvalidArgumentError, match="mask: the model has 0 sequence inputs"):
        m.predict(np.array([["a"] * 5], dtype=object), mask=np.ones((1, 5)))


# ---- closed model and stream ----------------------------------------------------------------------

def test_closed_model():
    m = recur.load_model(GRAPHS / "keras3" / "masking_sequential.keras")
    s = m.new_state(batch=3)
    m.close()
    assert m.closed and "(closed)" in repr(m)
    msg = r"^Model '.*masking_sequential\.keras' is closed: open it again with recur\.load_model$"
    for call in (lambda: m.predict(np.zeros((3, 7, 4), np.float32)), m.reset_states, m.get_states,
                 lambda: m.new_state(1), lambda: m.streamable, lambda: m.info):
        with pytest.raises(recur.StateError, match=msg) as e:
            call()
        assert e.value.status == -5
    s.step(np.zeros((3, 1, 4), np.float32))  # streams made before keep working
    m.close()  # twice is fine


def test_closed_stream(seq_model):
    s = seq_model.new_state(batch=3)
    s.close()
    assert s.closed and "(closed)" in repr(s)
    msg = r"^this stream of model '.*masking_sequential\.keras' is closed: make another with Model\.new_state$"
    with pytest.raises(recur.StateError, match=msg):
        s.step(np.zeros((3, 4), np.float32))
    with pytest.raises(recur.StateError, match=msg):
        s.reset()
    with seq_model.new_state(batch=3) as s2:
        s2.step(np.zeros((3, 4), np.float32))
    assert s2.closed


def test_new_state_bad_batch(seq_model):
    for b in (0, -1):
        with pytest.raises(recur.InvalidArgumentError, match="batch: expected a positive value, got %d" % b):
            seq_model.new_state(batch=b)


def test_model_that_does_not_stream():
    m = recur.load_model(CLI / "keras3" / "bigru.keras")
    assert "layer 'bi' (Bidirectional)" in m.streamable
    with pytest.raises(recur.UnsupportedError, match=r"the model cannot stream: layer 'bi' \(Bidirectional\)"):
        m.new_state(batch=1)


def test_states_errors():
    m = recur.load_model(GRAPHS / "keras3" / "stateful_sequential_gru.keras")
    with pytest.raises(recur.InvalidArgumentError, match=r"states: 'nope' is not a stateful layer of the model \(they are 'gru'\)"):
        m.set_states({"nope": np.zeros((1, 3, 4))})
    with pytest.raises(recur.ShapeError, match=r"states\['gru'\]: expected 1 states of shape \(3, 4\), got an array of shape \(11,\)"):
        m.set_states({"gru": np.zeros(11)})


# ---- opening ----------------------------------------------------------------------------------------

def test_missing_file(tmp_path):
    path = tmp_path / "nope.keras"
    with pytest.raises(recur.IOError, match=r"nope\.keras: cannot open the file: No such file or directory") as e:
        recur.load_model(path)
    assert e.value.status == -7
    with pytest.raises(OSError):  # recur.IOError is an OSError
        recur.load_model(str(path))


def test_corrupt_files(tmp_path):
    keras = tmp_path / "cut.keras"
    keras.write_bytes((GRAPHS / "keras3" / "multi_io.keras").read_bytes()[:500])
    with pytest.raises(recur.IOError, match=r"cut\.keras: not a readable zip archive"):
        recur.load_model(keras)
    h5 = tmp_path / "cut.h5"
    h5.write_bytes((GRAPHS / "keras3" / "multi_io.h5").read_bytes()[:3000])
    with pytest.raises(recur.IOError, match=r"cut\.h5: truncated HDF5 file \(the superblock says \d+ bytes, the file has 3000\)"):
        recur.load_model(h5)


def test_bytes_that_are_not_a_model():
    with pytest.raises(recur.IOError, match=r"^<bytes>: neither a \.keras \(zip\) nor an \.h5 \(HDF5\) file$"):
        recur.load_model(b"not a model at all")
    with pytest.raises(recur.IOError, match=r"^blob: neither"):
        recur.load_model(bytearray(b"\0" * 64), name="blob")


def test_text_mode_file_object(tmp_path):
    with pytest.raises(recur.InvalidArgumentError, match=r"source: the file object must be opened in binary mode \('rb'\)"):
        recur.load_model(io.StringIO("text"))
    p = tmp_path / "t.keras"
    p.write_bytes((GRAPHS / "keras3" / "multi_io.keras").read_bytes())
    with open(p) as f, pytest.raises(recur.InvalidArgumentError, match="binary mode"):
        recur.load_model(f)


def test_not_a_source():
    with pytest.raises(recur.InvalidArgumentError, match="source: expected a path, bytes or a binary file object, got int"):
        recur.load_model(12)


def test_bad_settings():
    path = GRAPHS / "keras3" / "masking_sequential.keras"
    with pytest.raises(recur.InvalidArgumentError, match=r'device: expected "cpu", "cuda", "cuda:N".* got "tpu"'):
        recur.load_model(path, device="tpu")
    with pytest.raises(recur.InvalidArgumentError, match=r'backend: expected "tensorflow" or "jax", got "theano"'):
        recur.load_model(path, keras_backend="theano")
    with pytest.raises(recur.InvalidArgumentError, match=r"num_threads: expected 0 \(one per core\) to 1024, got -3"):
        recur.load_model(path, num_threads=-3)
    with pytest.raises(recur.InvalidArgumentError, match='got "tpu"'):
        recur.device_available("tpu")
    assert recur.device_available("cpu")


# ---- limits ----------------------------------------------------------------------------------------

def test_unknown_limit_names(restore_limits):
    msg = (r"^limit: unknown limit 'nope'; the limits are units, batch, state_bytes, weight_bytes, file_bytes, tensor_bytes, "
           r"total_state_bytes, run_bytes, timesteps, init_work, run_work$")
    for call in (lambda: recur.get_limit("nope"), lambda: recur.set_limit("nope", 1), lambda: recur.default_limit("nope")):
        with pytest.raises(recur.InvalidArgumentError, match=msg):
            call()
    for bad in (-1, 1.5, "3"):
        with pytest.raises(recur.InvalidArgumentError, match=r"value: expected a non-negative integer, got"):
            recur.set_limit("units", bad)


def test_limits(restore_limits):
    path = GRAPHS / "keras3" / "masking_sequential.keras"
    assert recur.get_limit("units") == recur.default_limit("units")
    recur.set_limit("units", 2)
    assert recur.get_limit("units") == 2
    with pytest.raises(recur.LimitError, match=r"layer LSTM 'lstm': units \(LSTM\): 5 is over the units limit of 2") as e:
        recur.load_model(path)
    assert e.value.status == -8
    recur.set_limit("units", 0)  # 0 restores the default
    assert recur.get_limit("units") == recur.default_limit("units")
    recur.load_model(path)

    recur.set_limit("file_bytes", 100)
    with pytest.raises(recur.LimitError, match=r"masking_sequential\.keras: the model file: needs \d+ bytes, over the file_bytes limit of 100 bytes"):
        recur.load_model(path)
    with pytest.raises(recur.LimitError, match="over the file_bytes limit of 100 bytes"):
        recur.load_model(path.read_bytes())
    recur.set_limit("file_bytes", 0)

    m = recur.load_model(path)
    recur.set_limit("tensor_bytes", 64)
    with pytest.raises(recur.LimitError, match=r"inputs\[0\] \('input_layer'\): needs 336 bytes, over the tensor_bytes limit of 64 bytes"):
        m.predict(np.zeros((3, 7, 4), np.float32))
    recur.set_limit("tensor_bytes", 0)
    m.predict(np.zeros((3, 7, 4), np.float32))

    # The batch limit bounds a stream's batch (RECUR_LIMIT_BATCH: "a recur_model_state").
    recur.set_limit("batch", 2)
    m.new_state(batch=2).close()
    with pytest.raises(recur.LimitError, match=r"^batch \(model state\): 3 is over the batch limit of 2 "):
        m.new_state(batch=3)


# ---- cancellation ----------------------------------------------------------------------------------

def test_cancelled_options(seq_model):
    x = np.zeros((3, 7, 4), np.float32)
    want = seq_model.predict(x)
    o = recur.RunOptions()
    assert not o.cancelled
    o.cancel()
    assert o.cancelled
    msg = r"the run was cancelled \(recur_run_options_cancel\); nothing it would have changed has changed"
    with pytest.raises(recur.CancelledError, match=msg) as e:
        seq_model.predict(x, run_options=o)
    assert e.value.status == -9
    s = seq_model.new_state(batch=3)
    first = s.step(x[:, 0])
    with pytest.raises(recur.CancelledError, match=msg):
        s.step(x[:, 1], run_options=o)
    o.reset()
    assert not o.cancelled
    np.testing.assert_array_equal(seq_model.predict(x, run_options=o), want)
    # The cancelled step left the stream as it was: the next step is step 1.
    second = s.step(x[:, 1], run_options=o)
    with seq_model.new_state(batch=3) as ref:
        np.testing.assert_array_equal(ref.step(x[:, 0]), first)
        np.testing.assert_array_equal(ref.step(x[:, 1]), second)


def test_cancelled_stateful_keeps_states():
    m = recur.load_model(GRAPHS / "keras3" / "stateful_sequential_gru.keras")
    x = np.linspace(-1, 1, 3 * 4 * 3, dtype=np.float32).reshape(3, 4, 3)
    m.predict(x)
    before = m.get_states()
    o = recur.RunOptions()
    o.cancel()
    with pytest.raises(recur.CancelledError):
        m.predict(x, run_options=o)
    for a, b in zip(m.get_states()["gru"], before["gru"]):
        np.testing.assert_array_equal(a, b)


# ---- budgets over the whole (0.8) ------------------------------------------------------------------

def test_budget_limits(restore_limits, seq_model):
    assert recur.default_limit("total_state_bytes") == 256 << 20
    assert recur.default_limit("run_bytes") == 512 << 20
    assert recur.default_limit("timesteps") == 1 << 20
    assert recur.default_limit("init_work") == 1 << 31
    assert recur.default_limit("run_work") == 1 << 38
    x = np.zeros((3, 7, 4), np.float32)
    recur.set_limit("run_bytes", 256)  # the input alone is 336 bytes
    with pytest.raises(recur.LimitError, match=r"the run on inputs of shape \(3, 7, 4\): .* over the run_bytes limit of 256 bytes") as e:
        seq_model.predict(x)
    assert "recur_set_limit(RECUR_LIMIT_RUN_BYTES" in str(e.value)
    recur.set_limit("run_bytes", 0)
    seq_model.predict(x)
    recur.set_limit("total_state_bytes", 1024)
    with pytest.raises(recur.LimitError, match=r"over the total_state_bytes limit of 1024 bytes"):
        seq_model.new_state(batch=1000)


def test_timeout(seq_model):
    x = np.zeros((3, 7, 4), np.float32)
    o = recur.RunOptions()
    assert o.timeout == 0.0
    o.timeout = 1e-9
    assert o.timeout == 1e-9
    with pytest.raises(recur.LimitError, match=r"deadline passed after \d+ ms") as e:
        seq_model.predict(x, run_options=o)
    assert e.value.status == -8
    with seq_model.new_state(batch=3) as s:
        with pytest.raises(recur.LimitError, match=r"deadline passed"):
            s.step(x[:, 0], run_options=o)
    o.timeout = 3600
    seq_model.predict(x, run_options=o)
    for bad in (-1.0, float("inf"), float("nan")):
        with pytest.raises(recur.InvalidArgumentError, match="seconds"):
            o.timeout = bad


# ---- the log handler -------------------------------------------------------------------------------

def test_log_handler():
    got = []
    recur.set_log_handler(lambda level, msg: got.append((level, msg)), "debug")
    try:
        recur.load_model(GRAPHS / "keras3" / "masking_sequential.keras")
    finally:
        recur.set_log_handler(None)
    assert any("opened model" in msg and "masking_sequential.keras" in msg for _, msg in got), got
    assert all(isinstance(level, int) and isinstance(msg, str) for level, msg in got)
    n = len(got)
    recur.load_model(GRAPHS / "keras3" / "masking_sequential.keras")
    assert len(got) == n, "None turns logging off"


def test_log_handler_that_raises(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_value))

    def bad(level, msg):
        raise RuntimeError("boom")

    recur.set_log_handler(bad, "debug")
    try:
        m = recur.load_model(GRAPHS / "keras3" / "masking_sequential.keras")
        y = m.predict(np.zeros((3, 7, 4), np.float32))
    finally:
        recur.set_log_handler(None)
    assert y.shape == (3, 7, 3)
    assert seen and all(isinstance(e, RuntimeError) and str(e) == "boom" for e in seen)


def test_log_handler_bad_level():
    with pytest.raises(recur.InvalidArgumentError, match=r"level: expected one of debug, info, warning, error, got 'loud'"):
        recur.set_log_handler(print, "loud")


def test_predict_batch_size_slices_as_keras_does():
    """batch_size= (and verbose=, Keras's signature) run the rows in slices: each row equals a
    call on its own slice, and all of them Keras's numbers."""
    m = recur.load_model(ROOT / "examples" / "models" / "sentiment_keras3.keras")
    x = np.load(ROOT / "examples" / "models" / "sentiment_inputs.npy")
    keras = np.load(ROOT / "examples" / "models" / "sentiment_keras3_keras.npy")
    sliced = m.predict(x, batch_size=5, verbose=0)
    assert sliced.shape == keras.shape and np.abs(sliced - keras).max() <= 1e-6
    assert np.array_equal(sliced[5:10], m.predict(x[5:10]))
    assert np.array_equal(m.predict(x, batch_size=100), m.predict(x))
    for bad in (0, -1, 2.5, True, "8"):
        with pytest.raises(recur.InvalidArgumentError, match="batch_size"):
            m.predict(x, batch_size=bad)
