# SPDX-License-Identifier: Apache-2.0
"""recur.layers: every committed real-Keras layer fixture (tests/keras/fixtures, format in
tests/keras/README.md) through the Python layer API with the C++ parity test's tolerances, and the
API's error paths, streams and threads.

Run: PYTHONPATH=build/bindings/python python3 -m pytest bindings/python/tests/test_layers.py -q
"""
import json
import math
import threading
from pathlib import Path

import numpy as np
import pytest

import recur
from recur import _native as N
import recur.layers as rl

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "keras" / "fixtures"
KERAS_DIR = FIXTURES.parent


def skip(reason):
    print("skipped: " + reason)
    pytest.skip(reason)


# ---------------------------------------------------------------------------------------------
# Real-Keras fixtures
# ---------------------------------------------------------------------------------------------

def _load_fixtures():
    cases = []
    for path in sorted(FIXTURES.glob("keras*/*.json")):
        doc = json.loads(path.read_text())
        for c in doc["cases"]:
            cases.append((path.relative_to(FIXTURES).as_posix(), doc["dialect"], doc["versions"]["keras"], c,
                          doc.get("model_files", [])))
    return cases


CASES = _load_fixtures()
RESULTS = {}  # case id -> (worst abs error, tolerance, kind)


def tensor(t):
    return np.asarray(t["data"], dtype=np.float32).reshape(t["shape"])


def run_calls(layer, c):
    """Runs the case's calls; returns [(what, max abs error)]. Raises on a shape mismatch."""
    errors = []
    for k, call in enumerate(c["calls"]):
        rs = call.get("reset_states")
        if rs is not None:
            layer.reset_states([tensor(t) for t in rs] if rs else None)
        x = tensor(call["input"])
        init = [tensor(t) for t in call.get("initial_state") or []]
        training = call.get("training", False)
        if isinstance(layer, rl.Cell):
            out, new = layer(x, init, training=training)
            got = {"output": out, "state_h": new[0], "state_c": new[-1]}
        else:
            mask = None
            if call.get("mask") is not None:
                mask = tensor(call["mask"]) != 0
            y = layer(x, mask=mask, initial_state=init or None, training=training)
            if layer.return_state:
                assert isinstance(y, list) and len(y) == 1 + layer.num_states
                got = {"output": y[0], "state_h": y[1], "state_c": y[-1]}
            else:
                assert isinstance(y, np.ndarray)
                got = {"output": y}
        for o in call["outputs"]:
            want = tensor(o)
            g = got[o["name"]]
            assert g.dtype == np.float32
            assert g.shape == want.shape, "call %d %s: shape %s, Keras %s" % (k, o["name"], g.shape, want.shape)
            d = np.abs(g.astype(np.float64) - want.astype(np.float64))
            nan = np.isnan(g) != np.isnan(want)
            errors.append(("call%d.%s" % (k, o["name"]), math.inf if nan.any() else float(np.nanmax(d, initial=0.0))))
    return errors


def check_losses(layer, expected):
    assert layer.loss_names == [e["name"] for e in expected]
    values = layer.losses
    # Penalties are sums over whole tensors: relative to their size, as the C++ test.
    return [("loss:" + e["name"], abs(v - e["value"]) / max(1.0, abs(e["value"]))) for v, e in zip(values, expected)]


def check_constraints(layer, c):
    layer.set_weights([tensor(w) for w in c["weights"]])
    layer.apply_constraints()
    got = dict(zip(layer.weight_names, layer.get_weights()))
    errors = []
    for w in c["constrained_weights"]:
        want = tensor(w)
        g = got[w["name"]]
        err = float(np.abs(g - want).max(initial=0.0))
        zeros = (g == 0) & (want == 0)
        if (np.signbit(g[zeros]) != np.signbit(want[zeros])).any():
            err = math.inf  # Keras keeps -0.0 where it produced it
        errors.append(("constrained:" + w["name"], err))
    return errors


def _stats(w, gain=1.0):
    w = w.astype(np.float64)
    s = {"mean": w.mean(), "std": w.std(), "min": w.min(), "max": w.max(), "row": None, "col": None}
    if w.ndim == 2:
        r, c = w.shape
        if r <= c:
            s["row"] = np.abs(w @ w.T / gain ** 2 - np.eye(r)).max()
        if r >= c:
            s["col"] = np.abs(w.T @ w / gain ** 2 - np.eye(c)).max()
    return s


def _distribution_mismatch(s, n, k):
    """The C++ parity test's rule: constants exactly, means and stds within a few standard
    errors, the ranges of large bounded samples within 15%."""
    if k["std"] == 0.0:
        return "constant initializer values differ" if (s["min"] != k["min"] or s["max"] != k["max"]) else ""
    if abs(s["mean"] - k["mean"]) > 6.0 * k["std"] / math.sqrt(n) + 1e-6:
        return "mean differs"
    if abs(s["std"] / k["std"] - 1.0) > 4.0 / math.sqrt(n) + 0.01:
        return "standard deviation differs"
    slack, bounded = 0.15 * (k["max"] - k["min"]), k["max"] - k["min"] <= 6.0 * k["std"]
    if bounded and n >= 1000:
        if s["min"] < k["min"] - slack or s["max"] > k["max"] + slack:
            return "range exceeds Keras's"
        reach = 0.08 * (k["max"] - k["min"])
        if s["min"] > k["min"] + reach or s["max"] < k["max"] - reach:
            return "range falls short of Keras's"
    return ""


def check_initializers(layer, c):
    cfg = c["layer"]["config"]
    weights = dict(zip(layer.weight_names, layer.get_weights()))
    for e in c["initializer_stats"]:
        name = e["name"]
        w = weights[name]
        assert list(w.shape) == e["shape"]
        init = cfg.get("recurrent_initializer" if name == "recurrent_kernel" else name + "_initializer")
        gain = 1.0
        if isinstance(init, dict) and init.get("class_name") in ("Orthogonal", "OrthogonalInitializer"):
            gain = (init.get("config") or {}).get("gain", 1.0)
        s = _stats(w, gain)
        why = _distribution_mismatch(s, w.size, e)
        for b, kb in enumerate(e.get("blocks") or []):
            if why:
                break
            block = np.split(w.reshape(-1, w.shape[-1]), len(e["blocks"]), axis=1)[b]
            m = _distribution_mismatch(_stats(block.reshape(-1)), block.size, kb)
            why = "block %d: %s" % (b, m) if m else ""
        for key, mine in (("row_orthogonality", s["row"]), ("col_orthogonality", s["col"])):
            if e.get(key) is not None and e[key] < 1e-4 and not (mine is not None and mine < 1e-4):
                why = key + " not orthogonal"
        assert not why, "initializer %s: %s (recur mean %g std %g range [%g, %g]; Keras mean %g std %g range [%g, %g])" % (
            name, why, s["mean"], s["std"], s["min"], s["max"], e["mean"], e["std"], e["min"], e["max"])
    return [("init:" + e["name"], 0.0) for e in c["initializer_stats"]]


_MODELS = {}


def _open_model(rel):
    """The model file tests/keras/<rel>, opened once per session."""
    if rel not in _MODELS:
        try:
            _MODELS[rel] = N.Model.open(str(KERAS_DIR / rel))
        except N.UnsupportedError as e:
            _MODELS[rel] = e
    if isinstance(_MODELS[rel], Exception):
        skip("%s: recur was built without model-file support (%s)" % (rel, _MODELS[rel]))
    return _MODELS[rel]


def _case_id(entry):
    return "%s/%s" % (entry[0][:-5], entry[3]["name"])


@pytest.mark.parametrize("entry", CASES, ids=[_case_id(e) for e in CASES])
def test_keras_fixture(entry):
    file, dialect, version, c, file_models = entry
    tol = c.get("tolerance", 1e-5)
    if "model_files" in c:
        # Exists only as a model file (conversion.json): its layer comes from the file.
        rel = c["model_files"][0]
        if "expect_open_error" in c:
            with pytest.raises(N.IOError) as e:
                N.Model.open(str(KERAS_DIR / rel))
            assert c["expect_open_error"] in str(e.value)
            RESULTS[_case_id(entry)] = (0.0, tol, "open error")
            return
        model = _open_model(rel)
        layer = rl._from_native(model.get_layer(c["model_layer"]), c["model_layer"])
        classes = {model.layer(i)[0]: model.layer(i)[1] for i in range(model.get_info()["num_layers"])}
        assert type(layer).__name__ == classes[c["model_layer"]]
        kind = "model file"
    else:
        cls = getattr(rl, c["layer"]["class_name"], rl.RecurrentLayer)
        layer = cls.from_config(c["layer"], c["input_size"], dialect, version)
        assert type(layer).__name__ == c["layer"]["class_name"]
        if c.get("weights"):
            layer.set_weights([tensor(w) for w in c["weights"]])
        kind = "config"
    with layer:
        errors = []
        if c.get("calls"):
            errors += run_calls(layer, c)
        if "losses" in c:
            errors += check_losses(layer, c["losses"])
        if "constrained_weights" in c:
            errors += check_constraints(layer, c)
        if "initializer_stats" in c:
            errors += check_initializers(layer, c)
    assert errors, "the fixture has nothing to compare"
    worst = max(e for _, e in errors)
    RESULTS[_case_id(entry)] = (worst, tol, kind)
    bad = [(w, e) for w, e in errors if not e <= tol]
    assert not bad, "%s: errors over the tolerance %g: %s" % (_case_id(entry), tol, bad)


# Every case saved in a model file also runs through the layer the .keras and the .h5 file hold
# (recur._native.Model.get_layer wrapped by recur.layers), with the file's weights.
FILE_CASES = [(_e, _m) for _e in CASES if "model_layer" in _e[3] and "model_files" not in _e[3]
              and _e[3].get("calls") for _m in _e[4]]


@pytest.mark.parametrize("entry,model_file", FILE_CASES, ids=["%s@%s" % (_case_id(e), Path(m).suffix[1:])
                                                               for e, m in FILE_CASES])
def test_keras_fixture_via_model_file(entry, model_file):
    c = entry[3]
    model = _open_model(model_file)
    with rl._from_native(model.get_layer(c["model_layer"]), c["model_layer"]) as layer:
        assert layer.name == c["model_layer"]
        assert type(layer).__name__ == c["layer"]["class_name"]
        errors = run_calls(layer, c)
        with pytest.raises(TypeError, match="came from a model file"):
            __import__("pickle").dumps(layer)
    tol = c.get("tolerance", 1e-5)
    worst = max(e for _, e in errors)
    RESULTS["%s@%s" % (_case_id(entry), Path(model_file).suffix[1:])] = (worst, tol, Path(model_file).suffix + " file")
    assert all(e <= tol for _, e in errors), errors


def test_zz_parity_summary(capsys):
    """Prints the parity table's summary (every case must have run: none may be missing)."""
    ran = len(RESULTS)
    if ran == 0:
        skip("no fixture case ran in this session (run the whole file for the summary)")
    worst_id = max(RESULTS, key=lambda k: RESULTS[k][0])
    kinds = {}
    for _, _, kind in RESULTS.values():
        kinds[kind] = kinds.get(kind, 0) + 1
    default = {k: v for k, v in RESULTS.items() if v[1] == 1e-5}
    worst_default = max(default, key=lambda k: default[k][0]) if default else None
    with capsys.disabled():
        print("\nrecur.layers parity with real Keras: %d runs of %d fixture cases and %d model-file layers (%s); "
              "worst max abs error %.3e (%s, tolerance %g)"
              % (ran, len(CASES), len(FILE_CASES), ", ".join("%d %s" % (n, k) for k, n in sorted(kinds.items())),
                 RESULTS[worst_id][0], worst_id, RESULTS[worst_id][1]))
        if worst_default:
            print("worst among the %d runs at the default tolerance 1e-5: %.3e (%s)"
                  % (len(default), default[worst_default][0], worst_default))
    assert all(e <= tol for e, tol, _ in RESULTS.values())


# ---------------------------------------------------------------------------------------------
# Construction, configs and what a layer says about itself
# ---------------------------------------------------------------------------------------------

def rand(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-2, 2, shape).astype(np.float32)


def test_constructor_and_info():
    g = rl.GRU(4, input_size=3, return_sequences=True, return_state=True, seed=1, name="g")
    assert g.info == {"class_name": "GRU", "name": "g", "dialect": "keras3", "units": 4, "input_size": 3,
                      "num_states": 1, "num_weights": 3, "implementation": 2, "return_sequences": True,
                      "return_state": True, "go_backwards": False, "stateful": False, "time_major": False,
                      "batch_size": None, "reset_after": True}
    assert g.weights == [rl.WeightInfo("kernel", (3, 12)), rl.WeightInfo("recurrent_kernel", (4, 12)),
                         rl.WeightInfo("bias", (2, 12))]
    assert [w.shape for w in g.get_weights()] == [(3, 12), (4, 12), (2, 12)]
    assert rl.GRU(4, input_size=3, reset_after=False).weights[2].shape == (12,)
    assert rl.LSTM(2, input_size=5, use_bias=False).weight_names == ["kernel", "recurrent_kernel"]
    assert rl.LSTM(2, input_size=5).num_states == 2
    assert rl.CuDNNGRU(2, input_size=3).dialect == "keras2"
    assert rl.CuDNNLSTM(2, input_size=3).weights[2].shape == (16,)
    assert rl.SimpleRNNCell(3, input_size=2).state_size == 3
    assert rl.LSTMCell(3, input_size=2).state_size == [3, 3]
    s = rl.GRU(2, input_size=3, stateful=True, batch_size=4)
    assert s.stateful and s.batch_size == 4
    assert "GRU 'gru'" in repr(rl.GRU(2, input_size=3))
    assert rl.GRU(4, input_size=3, return_state=True).compute_output_shape((None, 7, 3)) == [(None, 4), (None, 4)]
    assert rl.LSTM(4, input_size=3, return_sequences=True).compute_output_shape((2, 7, 3)) == (2, 7, 4)


def test_seeded_layers_are_reproducible():
    a = rl.LSTM(3, input_size=2, seed=7).get_weights()
    b = rl.LSTM(3, input_size=2, seed=7).get_weights()
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_constructor_arguments_reach_the_layer():
    x = rand(2, 5, 3)
    base = rl.GRU(4, input_size=3, seed=3)
    w = base.get_weights()
    relu = rl.GRU(4, input_size=3, activation="relu")
    relu.set_weights(w)
    assert not np.allclose(relu(x), base(x))
    linear = rl.GRU(4, input_size=3, activation=None)  # Keras: None is linear
    linear.set_weights(w)
    assert not np.allclose(linear(x), base(x))
    ones = rl.LSTM(2, input_size=3, kernel_initializer="ones", recurrent_initializer={"class_name": "Zeros",
                                                                                       "config": {}})
    assert (ones.get_weight("kernel") == 1).all() and (ones.get_weight("recurrent_kernel") == 0).all()
    assert ones.get_weight("bias")[2:4].tolist() == [1, 1]  # unit_forget_bias
    back = rl.GRU(4, input_size=3, go_backwards=True)
    back.set_weights(w)
    assert np.allclose(back(x), base(x[:, ::-1]), atol=1e-6)


def test_from_config_forms():
    cfg = {"units": 3, "return_sequences": True, "name": "enc"}
    a = rl.LSTM.from_config(cfg, input_size=2)  # Keras's get_config() dict
    assert isinstance(a, rl.LSTM) and a.name == "enc" and a.return_sequences
    b = rl.RecurrentLayer.from_config({"class_name": "GRUCell", "config": {"units": 3}}, input_size=2)
    assert isinstance(b, rl.GRUCell)
    c = rl.deserialize({"class_name": "SimpleRNN", "config": {"units": 3}}, 2, "keras2", "2.15.0")
    assert isinstance(c, rl.SimpleRNN) and c.dialect == "keras2"
    d = rl.from_keras_json(json.dumps({"class_name": "LSTM", "config": {"units": 5,
                                                                         "batch_input_shape": [None, 4, 6]}}))
    assert isinstance(d, rl.LSTM) and d.input_size == 6 and d.dialect == "keras2"
    e = rl.GRU.from_config({"units": np.int64(2)}, input_size=np.int32(3), device="cpu", num_threads=2)
    assert e.units == 2 and e.num_threads == 2


def test_wrong_class_is_refused():
    with pytest.raises(N.InvalidArgumentError, match=r"GRU.from_config: the config is a LSTM, not a GRU"):
        rl.GRU.from_config({"class_name": "LSTM", "config": {"units": 3}}, input_size=2)
    with pytest.raises(N.InvalidArgumentError, match=r"LSTMCell.from_keras_json: the config is a LSTM"):
        rl.LSTMCell.from_keras_json('{"class_name": "LSTM", "config": {"units": 3}}', input_size=2)
    with pytest.raises(N.InvalidArgumentError, match="does not name its class"):
        rl.RecurrentLayer.from_config({"units": 3}, input_size=2)
    with pytest.raises(N.InvalidArgumentError, match="base class"):
        rl.RecurrentLayer(3, input_size=2)
    with pytest.raises(N.RecurError, match="Dense"):
        rl.deserialize({"class_name": "Dense", "config": {"units": 3}}, input_size=2)


@pytest.mark.parametrize("call,cls,pattern", [
    (lambda: rl.GRU(-1, input_size=3), N.InvalidArgumentError, "units"),
    (lambda: rl.GRU("4", input_size=3), N.InvalidArgumentError, r"units: expected an integer, got '4'"),
    (lambda: rl.GRU(2**40, input_size=3), N.InvalidArgumentError, "units: expected an integer in"),
    (lambda: rl.GRU(4, input_size=0), N.InvalidArgumentError, "input_size"),
    (lambda: rl.GRU(4, input_size=3, dropout=2.0), N.InvalidArgumentError, r"dropout: expected a rate in \[0, 1\]"),
    (lambda: rl.GRU(4, input_size=3, dropout=float("nan")), N.InvalidArgumentError, "dropout"),
    (lambda: rl.GRU(4, input_size=3, recurrent_dropout="x"), N.InvalidArgumentError, "recurrent_dropout"),
    (lambda: rl.GRU(4, input_size=3, activation=3), N.InvalidArgumentError, "activation: expected"),
    (lambda: rl.GRU(4, input_size=3, activation="nope"), N.InvalidArgumentError, "activation"),
    (lambda: rl.GRU(4, input_size=3, kernel_initializer=1.5), N.InvalidArgumentError, "kernel_initializer"),
    (lambda: rl.GRU(4, input_size=3, kernel_initializer="bogus"), N.InvalidArgumentError, "kernel_initializer"),
    (lambda: rl.GRU(4, input_size=3, kernel_regularizer={"class_name": "L7"}), N.RecurError, "kernel_regularizer"),
    (lambda: rl.GRU(4, input_size=3, seed=-5), N.InvalidArgumentError, "seed"),
    (lambda: rl.GRU(4, input_size=3, return_sequences="yes"), N.InvalidArgumentError, "return_sequences: expected True or False"),
    (lambda: rl.GRU(4, input_size=3, dialect="keras4"), N.InvalidArgumentError, r'dialect: expected "keras2" or "keras3"'),
    (lambda: rl.GRU(4, input_size=3, stateful=True), N.InvalidArgumentError, "batch_size"),
    (lambda: rl.GRU(4, input_size=3, time_major=True), N.UnsupportedError, "time_major"),
    (lambda: rl.CuDNNGRU(4, input_size=3, dialect="keras3"), N.UnsupportedError, "CuDNN"),
    (lambda: rl.CuDNNLSTM(4, input_size=3, dropout=0.5), N.InvalidArgumentError, "dropout"),
    (lambda: rl.SimpleRNN(4, input_size=3, recurrent_activation="relu"), N.InvalidArgumentError, "recurrent_activation"),
    (lambda: rl.LSTM(4, input_size=3, reset_after=False), N.InvalidArgumentError, "reset_after"),
    (lambda: rl.GRUCell(4, input_size=3, return_sequences=True), N.InvalidArgumentError, "return_sequences"),
    (lambda: rl.GRU(4, input_size=3, device="tpu"), N.InvalidArgumentError, "tpu"),
    (lambda: rl.GRU(4, input_size=3, num_threads=-1), N.InvalidArgumentError, "num_threads"),
    (lambda: rl.GRU(4, input_size=3, keras_backend="torch"), N.RecurError, "torch"),
    (lambda: rl.GRU.from_config("units=3"), N.InvalidArgumentError, "config: expected a dict"),
    (lambda: rl.GRU.from_config({"units": object()}, input_size=2), N.InvalidArgumentError, "cannot be written as JSON"),
    (lambda: rl.GRU.from_config({"units": 3, "unroll": "x"}, input_size=2), N.InvalidArgumentError, "unroll"),
    (lambda: rl.GRU.from_config({"units": 3}, input_size=2, dialect="k2"), N.InvalidArgumentError, "dialect"),
    (lambda: rl.GRU.from_keras_json('{"class_name": "GRU", ', input_size=2), N.ParseError, "JSON"),
    (lambda: rl.GRU.from_keras_json(42), N.InvalidArgumentError, "json_str"),
    (lambda: rl.GRU(70000, input_size=3), N.LimitError, "units limit"),
    (lambda: rl.GRU(4, input_size=2**31 - 1), N.LimitError, "weight_bytes limit"),
    (lambda: rl.GRU(4, input_size=3, stateful=True, batch_size=2**30), N.LimitError, "batch limit"),
    (lambda: rl.GRU(4, input_size=3).new_state(2**31 - 1), N.LimitError, "batch limit"),
])
def test_bad_arguments(call, cls, pattern):
    with pytest.raises(cls, match=pattern) as e:
        call()
    assert isinstance(e.value, N.RecurError) and e.value.status < 0


# ---------------------------------------------------------------------------------------------
# Weights
# ---------------------------------------------------------------------------------------------

def test_weights_round_trip():
    a = rl.LSTM(3, input_size=2, seed=1, return_sequences=True)
    b = rl.LSTM(3, input_size=2, seed=2, return_sequences=True)
    x = rand(2, 4, 2)
    assert not np.allclose(a(x), b(x))
    b.set_weights([w.astype(np.float64) for w in a.get_weights()])  # any float dtype
    assert np.array_equal(a(x), b(x))
    k = a.get_weight("kernel")
    b.set_weight("kernel", k * 2)
    assert np.array_equal(b.get_weight(0), k * 2)
    b.set_weight(1, a.get_weight("recurrent_kernel").tolist())


def test_wrong_weights():
    g = rl.GRU(4, input_size=3)
    w = g.get_weights()
    with pytest.raises(N.ShapeError, match=r"weights\[1\] \(recurrent_kernel\): expected shape \(4, 12\), got \(4, 11\)"):
        g.set_weights([w[0], w[1][:, :11], w[2]])
    with pytest.raises(N.ShapeError, match=r"weights\[2\] \(bias\): expected shape \(2, 12\), got \(24,\)"):
        g.set_weights([w[0], w[1], w[2].reshape(-1)])
    with pytest.raises(N.InvalidArgumentError, match=r"weights: expected 3 arrays \(kernel, recurrent_kernel, bias\), got 2"):
        g.set_weights(w[:2])
    with pytest.raises(N.InvalidArgumentError, match="weights: expected a list of arrays"):
        g.set_weights(w[0])
    with pytest.raises(N.InvalidArgumentError, match=r"weights\[0\]: expected real numbers"):
        g.set_weights([w[0].astype(str), w[1], w[2]])
    with pytest.raises(N.InvalidArgumentError, match="weight: expected one of kernel, recurrent_kernel, bias, got 'gamma'"):
        g.get_weight("gamma")
    with pytest.raises(N.InvalidArgumentError, match=r"weight: expected an index in \[0, 3\)"):
        g.set_weight(3, w[0])
    assert all(np.array_equal(a, b) for a, b in zip(w, g.get_weights()))  # nothing changed


# ---------------------------------------------------------------------------------------------
# Calls
# ---------------------------------------------------------------------------------------------

def test_call_forms():
    g = rl.LSTM(4, input_size=3, seed=1, return_sequences=True, return_state=True)
    x = rand(2, 5, 3)
    out, h, c = g(x)
    assert out.shape == (2, 5, 4) and h.shape == c.shape == (2, 4)
    assert np.array_equal(out[:, -1], h)
    # any real dtype converts; bool masks and 0/1 masks agree
    assert np.array_equal(g(x.astype(np.float64))[0], out)
    m = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    assert np.array_equal(g(x, mask=m)[0], g(x, mask=m.astype(bool))[0])
    assert np.array_equal(g(x, mask=m)[1][0], g(x[:1, :3])[1][0])
    init = [rand(2, 4, seed=5), rand(2, 4, seed=6)]
    assert not np.allclose(g(x, initial_state=init)[0], out)
    assert np.array_equal(g(x, initial_state=[np.zeros((2, 4))] * 2)[0], out)
    assert np.array_equal(g(x, training=None)[0], out)  # Keras's training=None: inference
    tm = rl.GRU(4, input_size=3, dialect="keras2", time_major=True, return_sequences=True, seed=1)
    bm = rl.GRU(4, input_size=3, dialect="keras2", return_sequences=True, seed=1)
    assert tm(x.transpose(1, 0, 2)).shape == (5, 2, 4)
    assert np.allclose(tm(x.transpose(1, 0, 2)).transpose(1, 0, 2), bm(x), atol=1e-6)
    s = rl.SimpleRNN(3, input_size=3, seed=1)
    assert np.array_equal(s(x, initial_state=np.zeros((2, 3))), s(x))  # a lone array for one state


@pytest.mark.parametrize("args,cls,pattern", [
    ((rand(2, 3),), N.ShapeError, r"x: expected a \(batch, timesteps, features\) array, got shape \(2, 3\)"),
    ((rand(2, 5, 4),), N.ShapeError, r"x: expected 3 features \(the last axis, input_size\), got shape \(2, 5, 4\)"),
    ((np.array([["a"]]),), N.InvalidArgumentError, "x: expected real numbers"),
    ((rand(2, 5, 3).astype(complex),), N.InvalidArgumentError, "x: expected real numbers"),
    (([[[1, 2, 3]], [[1, 2]]],), N.InvalidArgumentError, "x: expected an array of numbers"),
    ((rand(2, 5, 3), np.ones((2, 4))), N.ShapeError, r"mask: expected shape \(2, 5\)"),
    ((rand(2, 5, 3), "mask"), N.InvalidArgumentError, "mask"),
    ((rand(2, 5, 3), None, [rand(2, 4)]), N.InvalidArgumentError, r"initial_state: expected 2 arrays \[h, c\], got 1"),
    ((rand(2, 5, 3), None, rand(2, 4)), N.InvalidArgumentError, r"initial_state: expected a list of 2 arrays"),
    ((rand(2, 5, 3), None, [rand(2, 4), rand(3, 4)]), N.ShapeError, r"initial_state\[1\] \(c\): expected shape \(2, 4\)"),
    ((rand(2, 5, 3), None, None, "yes"), N.InvalidArgumentError, "training"),
    ((rand(0, 5, 3),), N.RecurError, "batch"),
])
def test_bad_calls(args, cls, pattern):
    with pytest.raises(cls, match=pattern):
        rl.LSTM(4, input_size=3)(*args)


def test_cudnn_refuses_masks():
    with pytest.raises(N.UnsupportedError, match="mask"):
        rl.CuDNNGRU(4, input_size=3)(rand(2, 5, 3), mask=np.ones((2, 5)))


def test_cells():
    cell = rl.LSTMCell(3, input_size=2, seed=4)
    x = rand(2, 2)
    out, (h, c) = cell(x)  # None: zero states
    o2, s2 = cell(x, cell.get_initial_state(2))
    assert np.array_equal(out, o2) and np.array_equal(h, out) and len(s2) == 2
    gru = rl.GRUCell(3, input_size=2, seed=4)
    o, new = gru(x, rand(2, 3))  # a lone array in, a lone array out (Keras's nest structure)
    assert isinstance(new, np.ndarray) and np.array_equal(o, new)
    o, new = gru(x, [rand(2, 3)])
    assert isinstance(new, list)
    # a cell step equals one timestep of the layer with the same weights
    layer = rl.GRU(3, input_size=2)
    layer.set_weights(gru.get_weights())
    h0 = rand(2, 3, seed=9)
    assert np.allclose(gru(x, [h0])[0], layer(x[:, None], initial_state=[h0]), atol=1e-6)
    with pytest.raises(N.ShapeError, match=r"inputs: expected a \(batch, 2\) array"):
        gru(rand(2, 3))
    with pytest.raises(N.ShapeError, match=r"states\[0\] \(h\): expected shape \(2, 3\)"):
        gru(x, [rand(3, 3)])
    with pytest.raises(N.InvalidArgumentError, match=r"states: expected 2 arrays \[h, c\], got 1"):
        cell(x, [rand(2, 3)])


def test_cell_dropout_masks():
    rate = 0.5
    cell = rl.GRUCell(3, input_size=4, dropout=rate, recurrent_dropout=0.25, seed=2)
    masks = cell.get_dropout_mask(5, training=True)
    assert len(masks) >= 1 and all(m.shape == (5, 4) for m in masks)
    assert set(np.unique(np.concatenate(masks))) <= {0.0, 1 / (1 - rate)}
    assert all(np.array_equal(a, b) for a, b in zip(masks, cell.get_dropout_mask(5, training=True)))  # cached
    rmasks = cell.get_recurrent_dropout_mask(5, training=True)
    assert all(m.shape == (5, 3) for m in rmasks)
    cell.reset_dropout_mask()
    cell.reset_recurrent_dropout_mask()
    assert rl.GRUCell(3, input_size=4).get_dropout_mask(5, True) == []
    x = rand(5, 4)
    a, _ = cell(x, [np.zeros((5, 3))], training=True)
    b, _ = cell(x, [np.zeros((5, 3))], training=False)
    assert not np.allclose(a, b)
    with pytest.raises(N.InvalidArgumentError, match="batch"):
        cell.get_dropout_mask(0)


def test_losses_and_constraints():
    g = rl.SimpleRNN(3, input_size=2, dialect="keras2", activity_regularizer="l2",
                     kernel_regularizer={"class_name": "L2", "config": {"l2": 0.1}}, kernel_constraint="non_neg",
                     seed=1)
    assert g.loss_names == ["kernel"]
    g(rand(2, 4, 2))
    assert g.loss_names == ["activity:output", "kernel"] and len(g.losses) == 2
    k = g.get_weight("kernel")
    assert abs(g.losses[1] - 0.1 * float((k.astype(np.float64) ** 2).sum())) < 1e-5
    g.apply_constraints()
    assert (g.get_weight("kernel") >= 0).all()


# ---------------------------------------------------------------------------------------------
# Stateful layers and streams
# ---------------------------------------------------------------------------------------------

def test_stateful_states():
    g = rl.LSTM(3, input_size=2, stateful=True, batch_size=2, seed=1, dialect="keras2")
    x = rand(2, 4, 2)
    assert [s.tolist() for s in g.states] == [[[0.0] * 3] * 2] * 2
    first = g(x)
    h, c = g.states
    assert np.array_equal(h, first)
    second = g(x)
    assert not np.allclose(first, second)
    g.reset_states()
    assert np.array_equal(g(x), first)
    g.reset_state()  # Keras 3's spelling
    assert np.array_equal(g(x), first)
    g.states = [h, c]
    assert np.array_equal(g(x), second)
    g.reset_states([h, c])  # Keras 2's reset_states(states)
    assert np.array_equal(g(x), second)
    with pytest.raises(N.ShapeError, match=r"states\[0\] \(h\): expected shape \(2, 3\)"):
        g.set_states([h[:1], c])
    with pytest.raises(N.ShapeError):
        g(rand(3, 4, 2))  # not the stateful batch
    plain = rl.GRU(3, input_size=2)
    with pytest.raises(N.StateError, match="not stateful"):
        plain.get_states()
    with pytest.raises(N.StateError):
        plain.reset_states()


@pytest.mark.parametrize("cls,kw", [
    (rl.GRU, {}), (rl.GRU, {"reset_after": False, "return_sequences": True}),
    (rl.LSTM, {"return_sequences": True}), (rl.LSTM, {"dialect": "keras2", "time_major": True,
                                                      "return_sequences": True}),
    (rl.SimpleRNN, {"return_sequences": True, "activation": "relu"}),
    (rl.CuDNNLSTM, {"return_sequences": True}),
    (rl.GRU, {"return_sequences": True, "zero_output_for_mask": True}),
])
def test_streaming_equals_whole_sequence(cls, kw):
    layer = cls(4, input_size=3, seed=11, **kw)
    tm = layer.time_major
    x = rand(3, 7, 3, seed=1)
    mask = np.ones((3, 7), bool)
    if cls is not rl.CuDNNLSTM:
        mask[0, 5:] = False  # right padding
        mask[1, 2] = False   # a hole
    masked = None if cls is rl.CuDNNLSTM else mask
    whole = layer(x.transpose(1, 0, 2) if tm else x, mask=None if masked is None or tm else masked)
    if tm:
        whole = whole.transpose(1, 0, 2) if layer.return_sequences else whole
        masked = None
    with layer.new_state(3) as s:
        assert s.shape == (layer.num_states, 3, 4)
        pieces = []
        for lo, hi in ((0, 1), (1, 4), (4, 7)):
            xs = x[:, lo:hi]
            ms = None if masked is None else masked[:, lo:hi]
            pieces.append(s.step(xs.transpose(1, 0, 2) if tm else xs, None if ms is None else ms))
        if layer.return_sequences:
            got = np.concatenate([p.transpose(1, 0, 2) if tm else p for p in pieces], axis=1)
        else:
            got = pieces[-1]
        assert np.allclose(got, whole, atol=1e-6), np.abs(got - whole).max()
        # one timestep at a time, (batch, features) per step
        s.reset()
        steps = [s.step(x[:, t], None if masked is None else masked[:, t]) for t in range(7)]
        assert all(p.shape == (3, 4) for p in steps)
        last = whole[:, -1] if layer.return_sequences else whole
        assert np.allclose(steps[-1], last, atol=1e-6)
        saved = s.get()
        s.set(saved)
        assert all(np.array_equal(a, b) for a, b in zip(saved, s.states))


def test_step_states_equals_separate_steps():
    layer = rl.LSTM(4, input_size=3, seed=2)
    states = [layer.new_state(b) for b in (1, 2, 3)]
    x = rand(6, 3, seed=3)
    ref = [layer.new_state(b) for b in (1, 2, 3)]
    for t in range(3):
        xt = rand(6, 3, seed=t)
        got = layer.step_states(states, xt)
        want = np.concatenate([r.step(xt[lo:hi]) for r, (lo, hi) in zip(ref, ((0, 1), (1, 3), (3, 6)))])
        assert np.allclose(got, want, atol=1e-6)
    with pytest.raises(N.InvalidArgumentError, match=r"states\[0\] and states\[1\] are the same state"):
        layer.step_states([states[0], states[0]], x[:2])
    with pytest.raises(N.ShapeError, match=r"x: expected shape \(6, 3\)"):
        layer.step_states(states, x[:5])
    with pytest.raises(N.InvalidArgumentError, match="states: expected a non-empty list"):
        layer.step_states([], x)
    other = rl.LSTM(5, input_size=3).new_state(1)
    with pytest.raises(N.RecurError):
        layer.step_states([other], x[:1])


def test_stream_errors():
    layer = rl.GRU(4, input_size=3)
    s = layer.new_state(2)
    with pytest.raises(N.ShapeError, match="x: expected a batch of 2"):
        s.step(rand(3, 5, 3))
    with pytest.raises(N.ShapeError, match=r"mask: expected shape \(2,\)"):
        s.step(rand(2, 3), mask=[1, 1, 1])
    with pytest.raises(N.ShapeError, match=r"mask: expected shape \(2, 5\)"):
        s.step(rand(2, 5, 3), mask=np.ones((2, 4)))
    with pytest.raises(N.ShapeError, match=r"states\[0\] \(h\): expected shape \(2, 4\)"):
        s.set([rand(1, 4)])
    with pytest.raises(N.InvalidArgumentError, match="batch"):
        layer.new_state(0)
    with pytest.raises(N.InvalidArgumentError, match="batch: expected an integer"):
        layer.new_state(2.5)


# ---------------------------------------------------------------------------------------------
# Closed objects, devices, threads
# ---------------------------------------------------------------------------------------------

def test_closed_objects():
    layer = rl.GRU(4, input_size=3, stateful=True, batch_size=2)
    s = layer.new_state(2)
    with layer:
        pass
    assert layer.closed and "(closed)" in repr(layer)
    layer.close()  # idempotent
    for use in (lambda: layer(rand(2, 5, 3)), layer.get_weights, lambda: layer.set_weights([]), layer.reset_states,
                lambda: layer.info, lambda: layer.units, lambda: layer.device, lambda: layer.new_state(1),
                lambda: setattr(layer, "num_threads", 2), lambda: layer.losses, lambda: s.step(rand(2, 3))):
        with pytest.raises(N.StateError, match=r"GRU 'gru' is closed"):
            use()
    s.reset()  # the state outlives its layer
    assert len(s.get()) == 1
    s.close()
    for use in (s.reset, s.get, lambda: s.set([rand(2, 4)]), lambda: s.device_info):
        with pytest.raises(N.StateError, match="LayerState of GRU 'gru' is closed"):
            use()
    cell = rl.LSTMCell(2, input_size=2)
    cell.close()
    with pytest.raises(N.StateError, match="LSTMCell 'lstm_cell' is closed"):
        cell(rand(1, 2))


def test_no_leaks():
    before = N.recur_binding_live_handles()
    with rl.LSTM(3, input_size=2) as layer, layer.new_state(2) as s:
        s.step(rand(2, 2))
        rl.GRUCell(2, input_size=2)  # dropped: freed with its last reference
    assert N.recur_binding_live_handles() == before


def test_devices_and_threads():
    g = rl.GRU(8, input_size=5, return_sequences=True, seed=3)
    assert g.device == "cpu" and g.device_info.backend == "cpu" and g.device_info.path == "cpu"
    assert g.num_threads == 1 and g.keras_backend == "tensorflow"
    x = rand(4, 9, 5)
    y1 = g(x)
    g.num_threads = 0
    assert g.num_threads == 0 and np.array_equal(g(x), y1)  # bitwise, whatever the thread count
    g.keras_backend = "jax"
    assert g.keras_backend == "jax"
    g.device = "auto"
    assert g.device == "auto" and isinstance(g.device_info.reason, str)
    assert np.allclose(g(x), y1, atol=1e-5)
    g.device = "cpu"
    with g.new_state(4) as s:
        assert s.device == "cpu" and s.device_info.path == "cpu"
        s.device = "cpu"
    with pytest.raises(N.StateError):
        g.call_device(0, 0, batch=1, timesteps=1)  # not on a GPU
    with pytest.raises(N.InvalidArgumentError, match="x: expected an object with __cuda_array_interface__"):
        g.call_device(x, 0)
    if N.recur_binding_device_count() == 0:
        with pytest.raises(N.UnsupportedError):
            g.device = "cuda"
        assert g.device == "cpu"


def test_threads_share_one_layer():
    layer = rl.LSTM(16, input_size=8, return_sequences=True, seed=5)
    inputs = [rand(3, 12, 8, seed=s) for s in range(8)]
    want = [layer(x) for x in inputs]
    got = [None] * len(inputs)
    errors = []

    def work(i):
        try:
            for _ in range(20):
                y = layer(inputs[i])
                if not np.array_equal(y, want[i]):
                    raise AssertionError("thread %d: different numbers" % i)
            got[i] = y
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert all(np.array_equal(a, b) for a, b in zip(got, want))


def test_threads_stream_separate_states():
    layer = rl.GRU(16, input_size=8, seed=6)
    seqs = [rand(2, 30, 8, seed=s) for s in range(6)]
    want = [layer(x) for x in seqs]
    got = [None] * len(seqs)
    errors = []

    def stream(i):
        try:
            with layer.new_state(2) as s:
                for t in range(30):
                    y = s.step(seqs[i][:, t])
            got[i] = y
        except Exception as e:
            errors.append(e)

    threads = [threading.Thread(target=stream, args=(i,)) for i in range(len(seqs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for a, b in zip(got, want):
        assert np.allclose(a, b, atol=1e-6)


def test_close_waits_for_calls_in_other_threads():
    layer = rl.LSTM(64, input_size=32, return_sequences=True)
    x = rand(8, 200, 32)
    outcomes = []

    def call():
        try:
            for _ in range(5):
                layer(x)
            outcomes.append("ran")
        except N.StateError as e:
            outcomes.append(str(e))

    threads = [threading.Thread(target=call) for _ in range(3)]
    for t in threads:
        t.start()
    layer.close()
    for t in threads:
        t.join()
    assert len(outcomes) == 3
    assert all(o == "ran" or "is closed" in o for o in outcomes)


def test_pickle_and_copy():
    import copy
    import pickle

    x = rand(2, 5, 3)
    for layer in (rl.LSTM(4, input_size=3, return_sequences=True, kernel_regularizer="l2", name="enc"),
                  rl.GRU.from_config({"units": 4, "reset_after": False, "name": "g"}, input_size=3,
                                     dialect="keras2"),
                  rl.SimpleRNNCell(4, input_size=3)):
        layer.num_threads = 2
        for clone in (pickle.loads(pickle.dumps(layer)), copy.deepcopy(layer)):
            assert type(clone) is type(layer) and clone.info == layer.info and clone.num_threads == 2
            assert all(np.array_equal(a, b) for a, b in zip(clone.get_weights(), layer.get_weights()))
            if isinstance(layer, rl.Cell):
                assert np.array_equal(clone(x[:, 0])[0], layer(x[:, 0])[0])
            else:
                assert np.array_equal(clone(x), layer(x))
    with pytest.raises(TypeError, match="LayerState cannot be pickled"):
        pickle.dumps(rl.GRU(2, input_size=3).new_state(1))
    layer = rl.GRU(2, input_size=3)
    layer.close()
    with pytest.raises(N.StateError):
        pickle.dumps(layer)


def test_streams_and_writers_interleave():
    """Streams (shared lock) and calls that change the layer (exclusive lock) from many threads:
    every stream still gets the numbers of a whole call, and nothing deadlocks."""
    layer = rl.LSTM(16, input_size=8, seed=8)
    weights = layer.get_weights()
    seqs = [rand(2, 40, 8, seed=s) for s in range(4)]
    want = [layer(x) for x in seqs]
    got = [None] * len(seqs)
    errors = []
    done = threading.Event()

    def stream(i):
        try:
            with layer.new_state(2) as s:
                for t in range(40):
                    y = s.step(seqs[i][:, t])
            got[i] = y
        except Exception as e:
            errors.append(e)

    def writer(k):
        try:
            while not done.is_set():
                layer.num_threads = k
                layer.set_weights(weights)  # the same weights: the numbers stay the same
                layer.device = "cpu"
                done.wait(0.001)  # pacing, so that the streams get their turns
        except Exception as e:
            errors.append(e)

    writers = [threading.Thread(target=writer, args=(k,)) for k in (1, 2)]
    streams = [threading.Thread(target=stream, args=(i,)) for i in range(len(seqs))]
    for t in writers + streams:
        t.start()
    for t in streams:
        t.join(120)
    done.set()
    for t in writers:
        t.join(120)
    assert not any(t.is_alive() for t in writers + streams), "a thread is stuck (deadlock)"
    assert not errors, errors
    for a, b in zip(got, want):
        assert np.allclose(a, b, atol=1e-6)


def test_import_forms():
    """`from recur import layers` and `recur.layers` both work in a fresh interpreter, also when
    the first use is Model.get_layer."""
    import os
    import subprocess
    import sys

    model = KERAS_DIR / "models" / "keras3" / "gru.keras"
    for code in ("from recur import layers; assert layers.GRU",
                 "import recur; assert recur.layers.LSTM",
                 "import recur; m = recur.load_model(%r); "
                 "name = [l['name'] for l in m.layers if l['recurrent']][0]; "
                 "assert m.get_layer(name).name == name" % str(model)):
        r = subprocess.run([sys.executable, "-c", code], env=dict(os.environ), capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, "%s\n%s" % (code, r.stderr[-2000:])


class _FakeCudaArray:
    """Just the __cuda_array_interface__ of a device buffer (never dereferenced: the layer is on
    the CPU, so the call is refused before any memory is touched)."""

    def __init__(self, shape, typestr="<f4", strides=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "strides": strides,
                                         "data": (4096, False), "version": 3}


def test_call_device_arguments():
    g = rl.GRU(4, input_size=3)
    with pytest.raises(N.InvalidArgumentError, match="x: expected float32 device memory, got typestr '<f8'"):
        g.call_device(_FakeCudaArray((2, 5, 3), "<f8"), _FakeCudaArray((2, 4)))
    with pytest.raises(N.InvalidArgumentError, match="x: expected C-contiguous device memory"):
        g.call_device(_FakeCudaArray((2, 5, 3), strides=(4, 8, 40)), _FakeCudaArray((2, 4)))
    with pytest.raises(N.ShapeError, match="x: expected 3 axes"):
        g.call_device(_FakeCudaArray((10, 3)), _FakeCudaArray((2, 4)))
    with pytest.raises(N.InvalidArgumentError, match="batch, timesteps: required"):
        g.call_device(4096, 8192)
    with pytest.raises(N.InvalidArgumentError, match="output: expected a CUDA array or a device address, got None"):
        g.call_device(_FakeCudaArray((2, 5, 3)), None)
    with pytest.raises(N.StateError):  # well-formed, but the layer is not on a GPU
        g.call_device(_FakeCudaArray((2, 5, 3)), _FakeCudaArray((2, 4)), final_state=_FakeCudaArray((2, 4)))


class _HostCudaArray:
    """A NumPy array presented through __cuda_array_interface__: on the GPU emulator device memory
    is host memory, so it stands in for a CuPy or PyTorch buffer."""

    def __init__(self, a):
        self.array = a
        self.__cuda_array_interface__ = {"shape": a.shape, "typestr": "<f4", "strides": None,
                                         "data": (a.ctypes.data, False), "version": 3}


def test_step_states_device_arguments():
    layer = rl.GRU(4, input_size=3)
    states = [layer.new_state(b) for b in (1, 2)]
    with pytest.raises(N.StateError, match="recur_layer_set_device"):  # well-formed, but not on a GPU
        layer.step_states_device(states, _FakeCudaArray((3, 3)), _FakeCudaArray((3, 4)))
    with pytest.raises(N.StateError, match="recur_layer_set_device"):  # raw device addresses
        layer.step_states_device(states, 4096, 8192, mask=[1, 0, 1])
    with pytest.raises(N.InvalidArgumentError, match="x: expected a CUDA array or a device address, got None"):
        layer.step_states_device(states, None, 8192)
    with pytest.raises(N.InvalidArgumentError, match="output: expected an object with __cuda_array_interface__"):
        layer.step_states_device(states, 4096, np.zeros((3, 4), np.float32))
    with pytest.raises(N.ShapeError, match=r"x: expected shape \(3, 3\)"):
        layer.step_states_device(states, _FakeCudaArray((2, 3)), _FakeCudaArray((3, 4)))
    with pytest.raises(N.ShapeError, match=r"output: expected shape \(3, 4\)"):
        layer.step_states_device(states, _FakeCudaArray((3, 3)), _FakeCudaArray((3, 5)))
    with pytest.raises(N.ShapeError, match=r"mask: expected shape \(3,\)"):
        layer.step_states_device(states, 4096, 8192, mask=[1, 0])
    with pytest.raises(N.InvalidArgumentError, match=r"states\[0\] and states\[1\] are the same state"):
        layer.step_states_device([states[0], states[0]], 4096, 8192)
    with pytest.raises(N.InvalidArgumentError, match="states: expected a non-empty list"):
        layer.step_states_device([], 4096, 8192)


def _why_no_device_memory(layer):
    """Empty when the layer is on the GPU emulator (host memory as device memory), else why not."""
    if N.recur_binding_device_count() == 0:
        return "no GPU (the GPU emulator runs this: RECUR_CUDA_PLUGIN=.../librecur_gpu_emulator.so)"
    layer.device = "cuda"
    name = layer.device_info.device_name
    if not name.startswith("recur GPU emulator"):
        return "device memory needs a CUDA library in the test; the GPU is %s" % name
    return ""


@pytest.mark.parametrize("cls", [rl.GRU, rl.LSTM])
def test_step_states_device_equals_step_states(cls):
    layer = cls(5, input_size=3, seed=7)
    why = _why_no_device_memory(layer)
    if why:
        print("numbers not checked: " + why)
        pytest.skip(why)
    batches = (1, 3, 2)
    rows = sum(batches)
    host = [layer.new_state(b) for b in batches]
    dev = [layer.new_state(b) for b in batches]
    with pytest.raises(N.InvalidArgumentError, match="d_input"):  # a zero address, past the binding's checks
        layer.step_states_device(dev, 0, 8192)
    for step in range(3):
        x = rand(rows, 3, seed=step)
        mask = np.array([(r + step) % 3 != 1 for r in range(rows)])
        want = layer.step_states(host, x, mask)
        out = np.full((rows, 5), np.nan, np.float32)
        if step % 2:  # raw addresses
            layer.step_states_device(dev, x.ctypes.data, out.ctypes.data, mask=mask)
        else:
            layer.step_states_device(dev, _HostCudaArray(x), _HostCudaArray(out), mask=mask)
        np.testing.assert_array_equal(out, want)
    for h, d in zip(host, dev):
        assert all(np.array_equal(a, b) for a, b in zip(h.states, d.states))

