# SPDX-License-Identifier: Apache-2.0
"""Every committed Keras model fixture through the Python model API, against the outputs Keras
itself stored with it (never numbers made by recur):

* tests/keras/graphs/** (every suite, both dialects and Keras 3 on JAX, .keras and .h5): whole
  predict with named inputs of every dtype (floats, int ids, texts), stateful models call after
  call with their resets, get/set/reset_states, and streams fed a few timesteps at a time;
* tests/keras/models: each layer case of each model file, with its masks, initial states and
  stateful calls, taken from the model that recur.load_model opened; and the whole model through
  predict (masks by input name) where the file runs as one model;
* examples/models (the bundled sentiment model) and tests/cli/models (the CLI's model files).

Tolerances are those of the C++ tests: 1e-5 relative above 1 for graphs (graph_parity_test.cpp),
each case's own absolute tolerance for layer cases (parity_test.cpp), 1e-5 absolute for the
examples and the CLI's models."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import recur

ROOT = Path(__file__).resolve().parents[3]
KERAS = ROOT / "tests" / "keras"
GRAPHS = KERAS / "graphs"
TOL = 1e-5
DIALECTS = ("keras2", "keras3", "keras3_jax")

# Worst errors seen, printed at the end of the module.
WORST = {}


def record(kind, err, what):
    if err > WORST.get(kind, (-1.0, ""))[0]:
        WORST[kind] = (err, what)


@pytest.fixture(scope="module", autouse=True)
def _summary(request):
    yield
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    lines = ["recur vs Keras, %s: worst error %.3e at %s" % (kind, err, what) for kind, (err, what) in sorted(WORST.items())]
    if capture is None:
        print("\n".join(lines))
        return
    with capture.global_and_fixture_disabled():
        print("\n" + "\n".join(lines))


def rel_error(got, want):
    """max |got - want| / max(1, |want|), as graph_parity_test.cpp; inf on a shape mismatch or NaN."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return float("inf")
    if got.size == 0:
        return 0.0
    e = np.abs(got - want) / np.maximum(1.0, np.abs(want))
    return float("inf") if np.isnan(e).any() else float(e.max())


def abs_error(got, want):
    got = np.asarray(got, dtype=np.float64).reshape(-1)
    want = np.asarray(want, dtype=np.float64).reshape(-1)
    if got.shape != want.shape:
        return float("inf")
    if got.size == 0:
        return 0.0
    e = np.abs(got - want)
    return float("inf") if np.isnan(e).any() else float(e.max())


# ---- graph fixtures -----------------------------------------------------------------------------

def _graph_docs():
    folders = [("core", GRAPHS)] + [(p.name, p) for p in sorted(GRAPHS.iterdir()) if (p / "keras2.json").exists()]
    out = []
    for suite, folder in folders:
        for dialect in DIALECTS:
            f = folder / (dialect + ".json")
            if f.exists():
                out.append((suite, dialect, f))
    return out


def _graph_params():
    params = []
    for suite, dialect, f in _graph_docs():
        doc = json.loads(f.read_text())
        backend = doc.get("backend", "tensorflow")
        for c in doc["cases"]:
            for rel in c["files"]:
                ext = rel.rsplit(".", 1)[1]
                params.append(pytest.param((dialect, backend, rel, c), id="%s-%s-%s.%s" % (dialect, suite, c["name"], ext)))
    return params


GRAPH_CASES = _graph_params()
STATEFUL_GRAPH_CASES = [p for p in GRAPH_CASES if p.values[0][3].get("stateful")]


def open_graph(dialect, backend, rel):
    return recur.load_model(KERAS / rel, keras_backend="jax" if backend == "jax" else None)


def call_inputs(call):
    """The inputs of a fixture call as arrays of their dtype: float32, int32 ids, texts."""
    out = []
    for x in call["inputs"]:
        dtype = x.get("dtype", "float32")
        if dtype == "string":
            out.append(np.array(x["data"], dtype=object).reshape(x["shape"]))
        elif dtype == "int32":
            out.append(np.array(x["data"], dtype=np.int32).reshape(x["shape"]))
        else:
            out.append(np.array(x["data"], dtype=np.float32).reshape(x["shape"]))
    return out


def as_list(y):
    return y if isinstance(y, list) else [y]


def check_outputs(got, call, names, what, kind):
    want = call["outputs"]
    assert len(got) == len(want), "%s: %d outputs, Keras %d" % (what, len(got), len(want))
    for k, (g, w) in enumerate(zip(got, want)):
        wa = np.array(w["data"], dtype=np.float32).reshape(w["shape"])
        e = rel_error(g, wa)
        record(kind, e, "%s output %s" % (what, names[k]))
        assert g.shape == wa.shape, "%s output %s: shape %s, Keras %s" % (what, names[k], g.shape, wa.shape)
        assert e <= TOL, "%s output %s: error %.3e" % (what, names[k], e)


@pytest.mark.parametrize("case", GRAPH_CASES)
def test_graph_predict(case):
    """Whole predict, Keras's calls in order (stateful models carry states between them)."""
    dialect, backend, rel, c = case
    m = open_graph(dialect, backend, rel)
    assert m.info["runnable"] == 1, m.info["unsupported"]
    assert m.input_names == c["input_names"]
    assert m.output_names == c["output_names"]
    assert m.stateful == bool(c.get("stateful"))
    for i, call in enumerate(c["calls"]):
        if call.get("reset_states_before"):
            m.reset_states()
        xs = call_inputs(call)
        for spec, x, meta in zip(m.inputs, xs, call["inputs"]):
            # Text inputs are the model's string inputs, and only they.
            assert (spec.dtype == "string") == (meta.get("dtype") == "string"), (spec, meta.get("dtype"))
            assert len(spec.shape) == x.ndim or spec.dtype == "string", (spec, x.shape)
        by_name = dict(zip(c["input_names"], xs))
        y = as_list(m.predict(by_name))
        check_outputs(y, call, c["output_names"], "%s call %d" % (rel, i), "graphs, predict")
        if not m.stateful:
            # The same inputs as a list in input order (one array for one input) give the same numbers.
            again = as_list(m.predict(xs if len(xs) > 1 else xs[0]))
            for a, b in zip(y, again):
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("case", STATEFUL_GRAPH_CASES)
def test_graph_stateful_states(case):
    """get_states / set_states rewind a stateful model; reset_states starts it over."""
    dialect, backend, rel, c = case
    m = open_graph(dialect, backend, rel)
    layers = m.stateful_layers
    first, second = (call_inputs(k) for k in c["calls"][:2])
    if not layers:
        # reset_states still starts the model over.
        y1 = as_list(m.predict(first))
        m.predict(second)
        m.reset_states()
        for a, b in zip(as_list(m.predict(first)), y1):
            np.testing.assert_array_equal(a, b)
        pytest.skip("%s is stateful, but stateful_layers lists none of its layers (get/set_states do not reach them)" % rel)
    zero = m.get_states()
    for name, states in zero.items():
        ns, b, u = layers[name]
        assert len(states) == ns and all(s.shape == (b, u) and not s.any() for s in states), name
    y1 = as_list(m.predict(first))
    after1 = m.get_states()
    assert any(np.any(s) for v in after1.values() for s in v), "the states stay zero after a call"
    if c["calls"][1].get("reset_states_before"):
        m.reset_states()
        after1 = m.get_states()
    y2 = as_list(m.predict(second))
    check_outputs(y2, c["calls"][1], c["output_names"], rel + " call 1", "graphs, predict")
    m.set_states(after1)
    for name, v in m.get_states().items():
        for a, b in zip(v, after1[name]):
            np.testing.assert_array_equal(a, b)
    for a, b in zip(as_list(m.predict(second)), y2):
        np.testing.assert_array_equal(a, b)
    # One (states, batch, units) array per layer is taken as well as a list.
    m.set_states({k: np.stack(v) for k, v in after1.items()})
    for a, b in zip(as_list(m.predict(second)), y2):
        np.testing.assert_array_equal(a, b)
    m.reset_states()
    for a, b in zip(as_list(m.predict(first)), y1):
        np.testing.assert_array_equal(a, b)


def _steps(x, t0, n, whole):
    if whole:
        return x
    if n == 1:
        return x[:, t0]  # one step without its time axis
    return x[:, t0:t0 + n]


@pytest.mark.parametrize("case", GRAPH_CASES)
def test_graph_stream(case):
    """The same calls through a stream (new_state + step), 1, 2, then 3 timesteps at a time."""
    dialect, backend, rel, c = case
    m = open_graph(dialect, backend, rel)
    why = m.streamable
    if why is not None:
        with pytest.raises(recur.UnsupportedError) as e:
            m.new_state(batch=1)
        assert "layer '" in why and "layer '" in str(e.value), (why, str(e.value))
        pytest.skip("%s does not stream: %s" % (rel, why))
    seq = [s.sequence and s.dtype != "string" for s in m.inputs]
    calls = c["calls"]
    batch = calls[0]["inputs"][0]["shape"][0]
    with m.new_state(batch=batch) as st:
        assert st.batch == batch
        for ci, call in enumerate(calls):
            if call.get("reset_states_before"):
                st.reset()
            xs = call_inputs(call)
            T = 0
            for i, x in enumerate(xs):
                if seq[i]:
                    T = x.shape[1]
            if T == 0:
                pytest.skip("%s has no input with a timesteps axis to stream" % rel)
            want = [np.array(w["data"], dtype=np.float32).reshape(w["shape"]) for w in call["outputs"]]
            got = [None] * len(want)
            is_seq = [None] * len(want)
            t0, chunk = 0, 1
            while t0 < T:
                n = min(chunk, T - t0)
                step_in = {name: _steps(x, t0, n, not seq[i]) for i, (name, x) in enumerate(zip(c["input_names"], xs))}
                pieces = as_list(st.step(step_in))
                assert len(pieces) == len(want)
                for k, p in enumerate(pieces):
                    if is_seq[k] is None:  # decided on the first, one-step piece
                        is_seq[k] = p.ndim >= 3 and want[k].ndim >= 3 and p.shape[1] * T == want[k].shape[1]
                        got[k] = [] if is_seq[k] else None
                    if is_seq[k]:
                        got[k].append(p)
                    else:
                        got[k] = p  # a value of the whole sequence so far
                t0 += n
                chunk = min(chunk + 1, 3)
            for k in range(len(want)):
                g = np.concatenate(got[k], axis=1) if is_seq[k] else got[k]
                e = rel_error(g, want[k])
                record("graphs, streamed", e, "%s call %d output %s" % (rel, ci, c["output_names"][k]))
                assert e <= TOL, "%s call %d streamed output %s: error %.3e" % (rel, ci, c["output_names"][k], e)
    assert st.closed
    with pytest.raises(recur.StateError):
        st.step(step_in)


def test_graph_fixtures_found():
    assert len(GRAPH_CASES) > 500, "graph fixtures under %s" % GRAPHS
    assert {p.values[0][0] for p in GRAPH_CASES} == set(DIALECTS)
    assert any(p.values[0][2].endswith(".h5") for p in GRAPH_CASES)
    assert STATEFUL_GRAPH_CASES


# ---- tests/keras/models: layer cases in model files --------------------------------------------

def _layer_params():
    params, files = [], {}
    for f in sorted((KERAS / "fixtures").glob("*/*.json")):
        doc = json.loads(f.read_text())
        dialect = doc["dialect"]
        for c in doc["cases"]:
            rels = c.get("model_files") or (doc.get("model_files") if "model_layer" in c else None)
            if not rels:
                continue
            for rel in rels:
                ext = rel.rsplit(".", 1)[1]
                params.append(pytest.param((rel, c), id="%s-%s-%s.%s" % (dialect, f.stem, c["name"], ext)))
                if "model_layer" in c and "model_files" not in c:
                    files.setdefault(rel, []).append(c)
    return params, files


LAYER_CASES, MODEL_FILES = _layer_params()
_OPENED = {}


def opened(rel):
    """Each model file opened once (as the C++ test does); the error of a failed open is kept."""
    if rel not in _OPENED:
        try:
            _OPENED[rel] = recur.load_model(KERAS / rel)
        except recur.RecurError as e:
            _OPENED[rel] = e
    return _OPENED[rel]


def _t(t, dtype=np.float32):
    return np.array(t["data"], dtype=dtype).reshape(t["shape"])


@pytest.mark.parametrize("case", LAYER_CASES)
def test_model_file_layer(case):
    """The case's calls on the layer of the model that load_model opened, with the file's weights:
    masks, initial states, stateful calls with reset_states() and reset_states(values)."""
    rel, c = case
    m = opened(rel)
    if "expect_open_error" in c:
        assert isinstance(m, recur.IOError), "recur opened %s; Keras refuses it with %r" % (rel, c["expect_open_error"])
        assert c["expect_open_error"] in str(m)
        return
    if isinstance(m, Exception):
        raise m
    # The native layer of the model (recur.layers wraps the same object).
    layer = m._h().get_layer(c["model_layer"])
    info = layer.get_info()
    tol = c.get("tolerance", 1e-5)
    compared = 0
    for ci, call in enumerate(c["calls"]):
        rs = call.get("reset_states")
        if rs is not None:
            if not rs:
                layer.reset_states()
            else:
                layer.set_states(np.concatenate([_t(s).reshape(-1) for s in rs]), len(rs))
        x = _t(call["input"])
        B, T = (x.shape[1], x.shape[0]) if info["time_major"] else (x.shape[0], x.shape[1])
        mask = None if call.get("mask") is None else (_t(call["mask"]) != 0).astype(np.uint8)
        init = call.get("initial_state") or []
        init_a = np.concatenate([_t(s).reshape(-1) for s in init]) if init else None
        out = np.empty(layer.output_length(B, T), dtype=np.float32)
        final = np.empty(info["num_states"] * B * info["units"], dtype=np.float32)
        layer.forward(x, B, T, mask, init_a, len(init), int(bool(call.get("training"))), out, final)
        each = B * info["units"]
        for o in call["outputs"]:
            got = {"state_h": final[:each], "state_c": final[each:2 * each]}.get(o["name"], out)
            e = abs_error(got, o["data"])
            record("model files (layers), abs", e, "%s %s call %d %s" % (rel, c["name"], ci, o["name"]))
            assert e <= tol, "%s %s call %d %s: max abs error %.3e (tolerance %g)" % (rel, c["name"], ci, o["name"], e, tol)
            compared += 1
    assert compared, "the case has no outputs to compare"


def _whole_model_plan(rel):
    """(batch, cases) when the file runs as one model whose inputs share a batch, else a reason."""
    m = opened(rel)
    if isinstance(m, Exception):
        return None, "does not open: %s" % m
    if not m.info["runnable"]:
        return None, "does not run as one model: %s" % m.info["unsupported"]
    cases = MODEL_FILES[rel]
    if m.input_names != ["in_" + k["model_layer"] for k in cases]:
        return None, "its inputs are not one per case"
    fixed = [s.name for s in m.inputs if s.shape[0] is not None]
    if fixed:
        return None, "inputs %s have a fixed batch (stateful layers; their cases run as layers)" % ", ".join(fixed)
    return sorted({k["calls"][0]["input"]["shape"][0] for k in cases}), cases


@pytest.mark.parametrize("rel", sorted(MODEL_FILES), ids=lambda r: r.replace("models/", "").replace("/", "-"))
def test_model_file_predict(rel):
    """The whole model file through predict: every case's input by name, its mask by name; each
    case without an initial state (the file holds no initial-state inputs) against Keras."""
    batches, cases = _whole_model_plan(rel)
    if batches is None:
        pytest.skip("%s: %s" % (rel, cases))
    m = opened(rel)
    compared = 0
    for batch in batches:
        # One predict per batch size: the cases of that batch get their inputs and masks, the
        # others zeros of that batch (their outputs are not compared).
        x, masks = {}, {}
        for k, spec in zip(cases, m.inputs):
            call = k["calls"][0]
            if call["input"]["shape"][0] == batch:
                x[spec.name] = _t(call["input"])
                if call.get("mask"):
                    masks[spec.name] = _t(call["mask"]) != 0
            else:
                x[spec.name] = np.zeros((batch,) + tuple(call["input"]["shape"][1:]), dtype=np.float32)
        y = as_list(m.predict(x, mask=masks or None))
        assert len(y) == sum(len(k["calls"][0]["outputs"]) for k in cases)
        i = 0
        for k in cases:
            call = k["calls"][0]
            for o in call["outputs"]:
                got = y[i]
                i += 1
                if call.get("initial_state") or len(k["calls"]) != 1 or call["input"]["shape"][0] != batch:
                    continue
                e = abs_error(got, o["data"])
                record("model files (predict), abs", e, "%s %s %s" % (rel, k["name"], o["name"]))
                assert e <= k.get("tolerance", 1e-5), "%s %s %s: %.3e" % (rel, k["name"], o["name"], e)
                compared += 1
    if not compared:
        pytest.skip("%s: every case has an initial state, which the file's model does not take" % rel)


# ---- examples/models and tests/cli/models ------------------------------------------------------

EXAMPLES = ROOT / "examples" / "models"
SENTIMENT = sorted(p.name for p in EXAMPLES.glob("sentiment_keras*.*") if p.suffix in (".keras", ".h5"))


@pytest.mark.parametrize("name", SENTIMENT)
def test_example_sentiment(name):
    """The bundled model on the bundled token ids (integers, 0 = padding) against its _keras.txt."""
    dialect = name.split("_")[1].split(".")[0]
    ids = np.loadtxt(EXAMPLES / "sentiment_inputs.txt", dtype=np.int64)
    want = np.loadtxt(EXAMPLES / ("sentiment_%s_keras.txt" % dialect), dtype=np.float32)
    np.testing.assert_array_equal(ids, np.load(EXAMPLES / "sentiment_inputs.npy"))
    m = recur.load_model(EXAMPLES / name)
    assert m.inputs[0].token_ids
    for x in (ids, ids.astype(np.int32), ids.tolist()):
        y = m.predict(x)
        e = abs_error(y, want)
        record("examples, abs", e, name)
        assert y.shape == want.shape and e <= TOL, e
    if m.streamable is None:
        with m.new_state(batch=ids.shape[0]) as s:
            for t in range(ids.shape[1]):
                y = s.step(ids[:, t])
        e = abs_error(y, want)
        record("examples, abs", e, name + " streamed")
        assert e <= TOL, e
    else:
        print("%s does not stream: %s" % (name, m.streamable))


CLI = ROOT / "tests" / "cli" / "models"
CLI_MODELS = sorted(
    p.relative_to(CLI).as_posix() for p in CLI.glob("*/*") if p.suffix in (".keras", ".h5")
    and (p.with_name(p.stem + "_y.npy").exists() or p.with_name(p.stem + "_y.npz").exists()))


@pytest.mark.parametrize("rel", CLI_MODELS, ids=lambda r: r.replace("/", "-"))
def test_cli_model(rel):
    """The CLI's model files on their _x.npy, against Keras's _y.npy / _y.npz (whole and streamed)."""
    path = CLI / rel
    stem = path.with_name(path.stem)
    x = np.load(str(stem) + "_x.npy")
    ynpy = Path(str(stem) + "_y.npy")
    if ynpy.exists():
        want = [np.load(ynpy)]
    else:
        z = np.load(str(stem) + "_y.npz")
        want = [z[k] for k in sorted(z.files)]
    m = recur.load_model(path)
    y = as_list(m.predict(x))
    assert len(y) == len(want)
    for g, w in zip(y, want):
        e = abs_error(g, w)
        record("tests/cli/models, abs", e, rel)
        assert g.shape == w.shape and e <= TOL, (rel, e)
    why = m.streamable
    if why is not None:
        pytest.skip("%s does not stream: %s" % (rel, why))
    with m.new_state(batch=x.shape[0]) as s:
        pieces = [as_list(s.step(x[:, t:t + 1])) for t in range(x.shape[1])]
    for k, w in enumerate(want):
        seq = w.ndim >= 3 and w.shape[1] == x.shape[1] and pieces[0][k].shape[1] == 1
        g = np.concatenate([p[k] for p in pieces], axis=1) if seq else pieces[-1][k]
        e = abs_error(g, w)
        record("tests/cli/models, abs", e, rel + " streamed")
        assert e <= TOL, (rel, e)


LAYER_NPY = [(d, n, ext) for d in ("keras2", "keras3") for n, model in (("gru", "tokens"), ("lstm", "tokens"), ("biforward", "bigru"))
             for ext in ("keras", "h5")]


@pytest.mark.parametrize("dialect,name,ext", LAYER_NPY, ids=["%s-%s.%s" % p for p in LAYER_NPY])
def test_cli_model_layer(dialect, name, ext):
    """The layers the CLI files hold (tests/cli/models/*/layer_*): input, mask, initial state."""
    model = "bigru" if name == "biforward" else "tokens"
    layer_name = {"gru": "gru", "lstm": "lstm", "biforward": "bi/forward"}[name]
    d = CLI / dialect
    m = recur.load_model(d / ("%s.%s" % (model, ext)))
    layer = m._h().get_layer(layer_name)
    info = layer.get_info()
    x = np.load(d / ("layer_%s_x.npy" % name))
    mask = np.load(d / ("layer_%s_mask.npy" % name)).astype(np.uint8)
    h0p = d / ("layer_%s_h0.npy" % name)
    init = np.load(h0p).reshape(-1) if h0p.exists() else None
    want = np.load(d / ("layer_%s_y.npz" % name))
    B, T = x.shape[:2]
    out = np.empty(layer.output_length(B, T), dtype=np.float32)
    final = np.empty(info["num_states"] * B * info["units"], dtype=np.float32)
    layer.forward(np.ascontiguousarray(x, dtype=np.float32), B, T, mask, init, 0 if init is None else 1, 0, out, final)
    each = B * info["units"]
    got = {"output": out, "state_h": final[:each], "state_c": final[each:2 * each]}
    for k in want.files:
        e = abs_error(got[k], want[k])
        record("tests/cli/models, abs", e, "%s/%s.%s layer %s %s" % (dialect, model, ext, layer_name, k))
        assert e <= TOL, (k, e)


def test_predict_mask_argument():
    """A mask given to predict (binone has no Masking layer): all ones changes nothing, holes
    change both outputs; one array, a list or a dict by input name are the same."""
    m = recur.load_model(CLI / "keras3" / "binone.keras")
    x = np.load(CLI / "keras3" / "binone_x.npy")
    plain = m.predict(x)
    ones = np.ones(x.shape[:2], dtype=bool)
    for a, b in zip(m.predict(x, mask=ones), plain):
        np.testing.assert_array_equal(a, b)
    holes = ones.copy()
    holes[0, 2] = holes[2, 5] = False
    masked = m.predict(x, mask=holes)
    assert all(not np.array_equal(a, b) for a, b in zip(masked, plain))
    name = m.input_names[0]
    for other in (m.predict({name: x}, mask={name: holes}), m.predict(x, mask=holes.astype(np.float32)),
                  m.predict(x, mask=holes.astype(np.uint8).tolist())):
        for a, b in zip(other, masked):
            np.testing.assert_array_equal(a, b)


def test_repeated_output_names():
    """A Keras 3 layer's outputs share its name: predict returns them all, return_dict keys them
    "name:k", and outputs= selects one that way (the bare name is ambiguous)."""
    doc = json.loads((GRAPHS / "keras3.json").read_text())
    c = next(k for k in doc["cases"] if k["name"] == "return_state_outputs")
    m = recur.load_model(GRAPHS / "keras3" / "return_state_outputs.keras")
    assert m.output_names == c["output_names"] == ["gru", "gru", "lstm", "lstm", "lstm"]
    x = call_inputs(c["calls"][0])
    y = m.predict(x[0])
    check_outputs(y, c["calls"][0], c["output_names"], "return_state_outputs", "graphs, predict")
    d = m.predict(x[0], return_dict=True)
    assert list(d) == ["gru:0", "gru:1", "lstm:0", "lstm:1", "lstm:2"]
    for a, b in zip(d.values(), y):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(m.predict(x[0], outputs=["lstm:2"]), y[4])
    with pytest.raises(recur.InvalidArgumentError, match="'gru' names 2 outputs"):
        m.predict(x[0], outputs=["gru"])
    with m.new_state(batch=3) as s:
        assert list(s.step(x[0][:, :1], return_dict=True)) == ["gru:0", "gru:1", "lstm:0", "lstm:1", "lstm:2"]


def test_stream_mask_argument():
    """Masks given to Stream.step, one step at a time, give what predict gives with the whole mask
    (multi_io: a sequence input without a Masking layer and a static input given whole)."""
    m = recur.load_model(GRAPHS / "keras3" / "multi_io.keras")
    assert m.streamable is None
    rng = np.random.default_rng(1)
    x = {"seq": rng.uniform(-1, 1, (3, 7, 4)).astype(np.float32), "static": rng.uniform(-1, 1, (3, 5)).astype(np.float32)}
    holes = np.ones((3, 7), dtype=bool)
    holes[0, 2] = holes[1, 0] = False
    holes[2, 5:] = False
    whole = m.predict(x, mask={"seq": holes})
    assert all(not np.array_equal(a, b) for a, b in zip(whole, m.predict(x)))
    with m.new_state(batch=3) as s:
        for t in range(7):
            y = s.step({"seq": x["seq"][:, t], "static": x["static"]}, mask={"seq": holes[:, t:t + 1]})
    for a, b in zip(y, whole):
        assert rel_error(a, b) <= TOL


def test_step_streams_matches_steps_one_by_one():
    """Model.step_streams steps streams of different batches in one call with the numbers of
    stepping each alone (masks, a static input given whole, a causal Conv1D's history), and a
    call that fails leaves every stream as it was."""
    for rel in ("keras3/multi_io.keras", "conv_stream/keras3/tcn_lstm.keras"):
        m = recur.load_model(GRAPHS / rel)
        rng = np.random.default_rng(3)
        batches = (1, 3, 2)
        alone = [m.new_state(batch=b) for b in batches]
        together = [m.new_state(batch=b) for b in batches]
        for t in range(4):
            steps = 1 + t % 2
            xs = []
            for b in batches:
                xs.append({s.name: rng.uniform(-1, 1, (b, steps) + tuple(s.shape[2:]) if s.sequence else (b,) + tuple(s.shape[1:]))
                           .astype(np.float32) for s in m.inputs})
            masks = [{s.name: rng.uniform(0, 1, (x[s.name].shape[0], steps)) > 0.3 for s in m.inputs if s.sequence} for x in xs]
            want = [st.step(x, mask=mk, return_dict=True) for st, x, mk in zip(alone, xs, masks)]
            x_all = {n: np.concatenate([x[n] for x in xs]) for n in xs[0]}
            mask_all = {n: np.concatenate([mk[n] for mk in masks]) for n in masks[0]}
            if t == 2:
                bad = dict(x_all)
                first = m.inputs[0]
                shape = list(bad[first.name].shape)
                shape[0] -= 1
                bad[first.name] = np.zeros(shape, np.float32)
                with pytest.raises(recur.ShapeError, match="the rows of the 3 states"):
                    m.step_streams(together, bad, mask=mask_all)
            got = m.step_streams(together, x_all, mask=mask_all, return_dict=True)
            for name, y in got.items():
                assert np.max(np.abs(y - np.concatenate([w[name] for w in want]))) <= 1e-6, (rel, t, name)
    one = m.new_state(batch=2)
    with pytest.raises(recur.InvalidArgumentError, match="are the same state"):
        m.step_streams([one, one], np.zeros((4, 1, m.inputs[0].shape[2]), np.float32))
    with pytest.raises(recur.InvalidArgumentError, match=r"streams\[1\]: expected a recur.Stream"):
        m.step_streams([one, 5], np.zeros((2, 1, m.inputs[0].shape[2]), np.float32))
