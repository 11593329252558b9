#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Whole-model (graph) fixtures for recur's model runner, built and run with REAL Keras.

Usage (from the repository root; the venvs come from tests/keras/setup_venvs.sh):

    tests/keras/.venv-keras2/bin/python     tests/keras/generate_graphs.py --dialect keras2
    tests/keras/.venv-keras3/bin/python     tests/keras/generate_graphs.py --dialect keras3
    tests/keras/.venv-keras3-jax/bin/python tests/keras/generate_graphs.py --dialect keras3_jax

keras2 = `tf_keras` on TensorFlow, keras3 = `keras` 3 on TensorFlow, keras3_jax = `keras` 3 on
JAX (KERAS_BACKEND=jax). Each case is a Keras functional or Sequential model made of layers that
recur runs (several inputs and outputs, masks, nested models, initial states, stateful streaming).
Its weights are drawn from numpy.random.default_rng(crc32(case name)), uniform(-0.5, 0.5)
(BatchNormalization moving_variance uniform(0.5, 1.5)); its inputs from the generator seeded with
crc32(case name + "/inputs"). keras3 and keras3_jax therefore get the same weights and inputs,
so their differences are the backends'.

Cases come in suites: "core" (in this file) and one per module graph_suites/<suite>.py (a family
of layers); `--suite NAME` (repeatable) regenerates only those. Writes, per dialect:
  graphs/<dialect>/<case>.keras and <case>.h5    model.save() of each core case (a format that
                                                 cannot save a case is skipped and said in it)
  graphs/<dialect>.json                          the core cases: inputs and Keras's predictions
  graphs/<suite>/<dialect>/..., graphs/<suite>/<dialect>.json   the same for another suite
Every saved file is loaded back with Keras and predicted again; the numbers must be the same.
A file Keras saved but cannot load back itself (Keras 3's legacy .h5 of a graph whose masks are
op nodes) is kept and named in the case's "keras_load_errors". See graphs/README.md.
"""
import argparse
import json
import os
import platform
import sys
import zlib

DIALECTS = ("keras2", "keras3", "keras3_jax")


def _dialect_from_argv():
    for i, a in enumerate(sys.argv):
        if a == "--dialect" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
        if a.startswith("--dialect="):
            return a.split("=", 1)[1]
    return None


# Must be set before TensorFlow, JAX or Keras is imported.
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["PYTHONHASHSEED"] = "0"
if _dialect_from_argv() == "keras3_jax":
    os.environ["KERAS_BACKEND"] = "jax"
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ["XLA_FLAGS"] = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
elif _dialect_from_argv() == "keras3":
    os.environ["KERAS_BACKEND"] = "tensorflow"

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
B = 3  # batch size of every case


# ---- output helpers ---------------------------------------------------------------------------
def dump_doc(path, doc):
    """One case per line, like generate.py / generate_models.py."""
    head = {k: v for k, v in doc.items() if k != "cases"}
    text = json.dumps(head, separators=(",", ":"))[:-1] + ',"cases":[\n'
    text += ",\n".join(json.dumps(c, separators=(",", ":"), allow_nan=False) for c in doc["cases"])
    text += "\n]}\n"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def float_tensor(a):
    """float32 values as the shortest decimals that read back (as double, then float32) exactly."""
    a = np.asarray(a).astype(np.float32)
    if not np.all(np.isfinite(a)):
        raise ValueError("non-finite value")
    data = []
    for v in a.ravel():
        f = float(str(v))
        assert np.float32(f) == v
        data.append(f)
    return {"shape": list(a.shape), "dtype": "float32", "data": data}


def input_tensor(a):
    if a.dtype == object:  # strings (a string Input), kept as UTF-8 text
        return {"shape": list(a.shape), "dtype": "string",
                "data": [v.decode() if isinstance(v, bytes) else str(v) for v in a.ravel()]}
    if np.issubdtype(a.dtype, np.integer):
        return {"shape": list(a.shape), "dtype": "int32", "data": [int(v) for v in a.ravel()]}
    return float_tensor(a)


def output_tensor(a):
    t = float_tensor(a)
    del t["dtype"]
    return t


# ---- input data -------------------------------------------------------------------------------
def mask_rows(T, pattern="default"):
    """(B=3, T) validity patterns, 1 = valid step. T >= 5."""
    m = np.ones((B, T), np.int32)
    if pattern == "default":
        m[0, T - 2:] = 0      # padded tail
        m[0, T // 2 - 1] = 0  # and a hole
        m[1, :2] = 0          # padded head
        m[1, T - 2] = 0       # and a hole
        m[2, :] = 0           # fully masked row
    elif pattern == "no_full_row":  # for masked averages (a fully masked row divides 0 by 0)
        m[0, T - 2:] = 0
        m[0, T // 2 - 1] = 0
        m[1, :2] = 0
        m[1, T - 2] = 0
        m[2, :T - 1] = 0      # one valid step, the last
    elif pattern == "leading":  # masked steps before the first valid one in every row
        m[0, 0] = 0
        m[0, 3] = 0
        m[1, :3] = 0
        m[1, T - 1] = 0
        m[2, :] = 0
    else:
        raise ValueError(pattern)
    return m


class Data:
    def __init__(self, rng):
        self.rng = rng

    def seq(self, *shape, lo=-1.0, hi=1.0):
        a = self.rng.uniform(lo, hi, shape)
        return np.round(a, 3).astype(np.float32)

    def masked(self, T, F, mask_value=0.0, pattern="default"):
        """(B, T, F) with the masked steps (every feature) equal to mask_value."""
        x = self.seq(B, T, F)
        m = mask_rows(T, pattern)
        x[m == 0] = np.float32(mask_value)
        return x

    def ids(self, T, vocab, pattern="default"):
        x = self.rng.integers(1, vocab, (B, T)).astype(np.int32)
        x[mask_rows(T, pattern) == 0] = 0
        return x


class Skip(Exception):
    """A case this dialect cannot express."""


# ---- the cases --------------------------------------------------------------------------------
CASES = []
# Cases are grouped in suites: "core" (this file; graphs/<dialect>.json and graphs/<dialect>/) and
# one per module graph_suites/<suite>.py (graphs/<suite>/<dialect>.json and graphs/<suite>/<dialect>/),
# so that a family of layers is regenerated alone (--suite) and its files stay apart.
_SUITE = "core"


def case(name, description, dialects=DIALECTS):
    def deco(fn):
        CASES.append((name, description, tuple(dialects), fn, _SUITE))
        return fn
    return deco


def load_suites():
    """Imports graph_suites/*.py; each registers its cases with `case` from this module."""
    global _SUITE
    import importlib.util

    sys.modules.setdefault("generate_graphs", sys.modules[__name__])
    folder = os.path.join(HERE, "graph_suites")
    for fname in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        if not fname.endswith(".py") or fname.startswith("_"):
            continue
        _SUITE = fname[:-3]
        spec = importlib.util.spec_from_file_location(f"graph_suites.{_SUITE}", os.path.join(folder, fname))
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    _SUITE = "core"


def suites():
    return sorted({c[4] for c in CASES})


def suite_paths(suite, dialect):
    """(folder of the model files, path of the JSON) of a suite, relative to HERE."""
    if suite == "core":
        return os.path.join("graphs", dialect), os.path.join("graphs", f"{dialect}.json")
    return os.path.join("graphs", suite, dialect), os.path.join("graphs", suite, f"{dialect}.json")


# Each builder gets (g, d): g holds K (the keras module), L (its layers) and dialect; d draws the
# inputs. It returns {"model", "inputs"} (one call) or {"model", "calls": [(reset_before,
# [inputs])]} for stateful models ("skip_formats": {ext: why} leaves a format out). Layer names are
# Keras's defaults unless given (the session is cleared before each case, so they are the same on
# every run).


@case("masking_sequential", "Sequential(Input(7, 4), Masking(0.0), LSTM(5, return_sequences=True), "
      "Dense(3)); masked steps: padded tail + hole, padded head + hole, a fully masked row")
def _(g, d):
    L = g.L
    m = g.K.Sequential([g.K.Input(shape=(7, 4)), L.Masking(mask_value=0.0),
                        L.LSTM(5, return_sequences=True), L.Dense(3)])
    return {"model": m, "inputs": [d.masked(7, 4)]}


# Keras 2 only: Keras 3 accepts input_shape= too but saves the same config as masking_sequential.
@case("masking_sequential_input_shape", "Keras 2 style Sequential: Masking(0.0, input_shape=(None, 4)) "
      "-> LSTM(5, return_sequences=True) -> Dense(3), variable length in the config",
      dialects=("keras2",))
def _(g, d):
    L = g.L
    with g.warnings_ignored():
        first = L.Masking(mask_value=0.0, input_shape=(None, 4))
    m = g.K.Sequential([first, L.LSTM(5, return_sequences=True), L.Dense(3)])
    return {"model": m, "inputs": [d.masked(7, 4)]}


@case("masking_functional", "Input(7, 3) -> Masking(mask_value=-1.0) -> LSTM(4) -> Dense(2)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    y = L.Dense(2)(L.LSTM(4)(L.Masking(mask_value=-1.0)(x)))
    return {"model": g.K.Model(x, y), "inputs": [d.masked(7, 3, mask_value=-1.0)]}


@case("branches_concat", "Input(7, 4) -> Masking -> GRU(4, rs) and LSTM(3, rs) on the same tensor "
      "-> Concatenate -> TimeDistributed(Dense(2)): a merge of two masked branches")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 4), name="x")
    m = L.Masking()(x)
    y = L.Concatenate()([L.GRU(4, return_sequences=True)(m), L.LSTM(3, return_sequences=True)(m)])
    y = L.TimeDistributed(L.Dense(2))(y)
    return {"model": g.K.Model(x, y), "inputs": [d.masked(7, 4)]}


@case("residual_add_layernorm", "Input(6, 3) -> Dense(5) -> GRU(5, rs) -> Add([dense, gru]) -> "
      "LayerNormalization -> Dense(2)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    h = L.Dense(5)(x)
    r = L.GRU(5, return_sequences=True)(h)
    y = L.Dense(2)(L.LayerNormalization()(L.Add()([h, r])))
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 6, 3)]}


@case("merges_masked", "Input(7, 3) -> Masking -> GRU(4, rs) a and GRU(4, rs) b -> Subtract, "
      "Multiply, Average, Maximum, Minimum, Add([a, b]), each a model output")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    m = L.Masking()(x)
    a = L.GRU(4, return_sequences=True)(m)
    b = L.GRU(4, return_sequences=True)(m)
    outs = [L.Subtract()([a, b]), L.Multiply()([a, b]), L.Average()([a, b]),
            L.Maximum()([a, b]), L.Minimum()([a, b]), L.Add()([a, b])]
    return {"model": g.K.Model(x, outs), "inputs": [d.masked(7, 3)]}


@case("merges_mixed_masks", "inputs a (7, 4) with Masking and b (7, 3) without -> GRU(4, rs) each "
      "-> Add -> LSTM(3): Add's mask is the masked branch's (unmasked inputs do not count)")
def _(g, d):
    L = g.L
    a = g.K.Input(shape=(7, 4), name="a")
    b = g.K.Input(shape=(7, 3), name="b")
    ga = L.GRU(4, return_sequences=True)(L.Masking()(a))
    gb = L.GRU(4, return_sequences=True)(b)
    y = L.LSTM(3)(L.Add()([ga, gb]))
    return {"model": g.K.Model([a, b], y), "inputs": [d.masked(7, 4), d.seq(B, 7, 3)]}


@case("encoder_decoder_repeat", "Input(7, 3) -> Masking -> LSTM(5) -> RepeatVector(5) -> "
      "GRU(4, rs) -> TimeDistributed(Dense(2)); RepeatVector drops the mask")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    e = L.LSTM(5)(L.Masking()(x))
    y = L.TimeDistributed(L.Dense(2))(L.GRU(4, return_sequences=True)(L.RepeatVector(5)(e)))
    return {"model": g.K.Model(x, y), "inputs": [d.masked(7, 3)]}


@case("seq2seq_initial_state", "encoder Input(7, 3) -> LSTM(5, return_state=True) -> [h, c]; "
      "decoder Input(5, 2) -> Masking -> LSTM(5, rs, initial_state=[h, c]) -> Dense(3). Keras 2 "
      "passes the decoder's mask to the LSTM; Keras 3 does not (Layer.__call__ fills in `mask` "
      "only for a call with one tensor argument), and its saved graph has no mask for it")
def _(g, d):
    L = g.L
    enc = g.K.Input(shape=(7, 3), name="encoder_in")
    dec = g.K.Input(shape=(5, 2), name="decoder_in")
    _, h, c = L.LSTM(5, return_state=True)(enc)
    y = L.LSTM(5, return_sequences=True)(L.Masking()(dec), initial_state=[h, c])
    y = L.Dense(3)(y)
    return {"model": g.K.Model([enc, dec], y), "inputs": [d.seq(B, 7, 3), d.masked(5, 2)]}


@case("seq2seq_gru", "encoder Input(7, 3) -> Masking -> GRU(4, return_state=True) -> h; decoder "
      "Input(5, 2) -> Masking -> GRU(4, rs, initial_state=h) -> Dense(3). The encoder GRU gets its "
      "mask; the decoder GRU gets it in Keras 2 only (as in seq2seq_initial_state)")
def _(g, d):
    L = g.L
    enc = g.K.Input(shape=(7, 3), name="encoder_in")
    dec = g.K.Input(shape=(5, 2), name="decoder_in")
    _, h = L.GRU(4, return_state=True)(L.Masking()(enc))
    y = L.GRU(4, return_sequences=True)(L.Masking()(dec), initial_state=h)
    y = L.Dense(3)(y)
    return {"model": g.K.Model([enc, dec], y), "inputs": [d.masked(7, 3), d.masked(5, 2)]}


@case("multi_io", "inputs seq (7, 4) and static (5,) -> GRU(4) on seq, Dense(3) on static -> "
      "Concatenate -> Dense(3, softmax) and Dense(2) as two outputs")
def _(g, d):
    L = g.L
    seq = g.K.Input(shape=(7, 4), name="seq")
    static = g.K.Input(shape=(5,), name="static")
    h = L.Concatenate()([L.GRU(4)(seq), L.Dense(3, activation="relu")(static)])
    outs = [L.Dense(3, activation="softmax", name="probs")(h), L.Dense(2, name="value")(h)]
    return {"model": g.K.Model([seq, static], outs), "inputs": [d.seq(B, 7, 4), d.seq(B, 5)]}


@case("return_state_outputs", "Input(7, 3) -> Masking -> GRU(4, return_state=True) -> [y, h]; "
      "Input -> LSTM(3, return_sequences=True, return_state=True) -> [y, h, c] (unmasked); model "
      "outputs [gru y, gru h, lstm y, lstm h, lstm c]: several outputs of one layer")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    y, h = L.GRU(4, return_state=True)(L.Masking()(x))
    ly, lh, lc = L.LSTM(3, return_sequences=True, return_state=True)(x)
    return {"model": g.K.Model(x, [y, h, ly, lh, lc]), "inputs": [d.masked(7, 3)]}


@case("nested_sequential", "Input(7, 3) -> Masking -> Sequential([GRU(4, rs), Dense(3)]) used as a "
      "layer -> LSTM(3) -> Dense(2)")
def _(g, d):
    L = g.L
    inner = g.K.Sequential([g.K.Input(shape=(7, 3)), L.GRU(4, return_sequences=True), L.Dense(3)],
                           name="inner")
    x = g.K.Input(shape=(7, 3), name="x")
    y = L.Dense(2)(L.LSTM(3)(inner(L.Masking()(x))))
    return {"model": g.K.Model(x, y), "inputs": [d.masked(7, 3)]}


@case("nested_functional", "an inner functional Model (Input(7, 3) -> Masking -> GRU(4, rs)) used "
      "as a layer inside an outer model: Input -> inner -> LSTM(3) -> Dense(2)")
def _(g, d):
    L = g.L
    xi = g.K.Input(shape=(7, 3), name="inner_in")
    inner = g.K.Model(xi, L.GRU(4, return_sequences=True)(L.Masking()(xi)), name="inner")
    x = g.K.Input(shape=(7, 3), name="x")
    y = L.Dense(2)(L.LSTM(3)(inner(x)))
    return {"model": g.K.Model(x, y), "inputs": [d.masked(7, 3)]}


@case("bidirectional_return_state", "Input(7, 3) -> Masking -> Bidirectional(LSTM(3, rs, "
      "return_state=True)) -> [y, h_f, c_f, h_b, c_b]; Input -> Bidirectional(GRU(4, "
      "return_state=True), merge_mode='sum') (unmasked) -> [y, h_f, h_b]; 8 model outputs")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    a = L.Bidirectional(L.LSTM(3, return_sequences=True, return_state=True))(L.Masking()(x))
    b = L.Bidirectional(L.GRU(4, return_state=True), merge_mode="sum")(x)
    return {"model": g.K.Model(x, list(a) + list(b)), "inputs": [d.masked(7, 3)]}


@case("bidirectional_backward_layer", "Input(7, 3) -> Masking -> Bidirectional(GRU(4, rs), "
      "backward_layer=GRU(6, rs, go_backwards=True)) -> Dense(2): halves of different sizes")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    bi = L.Bidirectional(L.GRU(4, return_sequences=True),
                         backward_layer=L.GRU(6, return_sequences=True, go_backwards=True))
    h = bi(L.Masking()(x))
    if h.shape[-1] != 10:
        # Keras 3.15 infers the output shape from the forward layer alone ((None, 7, 8) here), so
        # the Dense after it is built for 8 features and the model cannot run on the real 10.
        raise Skip(f"Bidirectional with a backward_layer of another size: Keras infers the "
                   f"output shape {tuple(h.shape)} instead of (None, 7, 10)")
    y = L.Dense(2)(h)
    return {"model": g.K.Model(x, y), "inputs": [d.masked(7, 3)]}


@case("bidirectional_backward_layer_config", "Input(7, 3) -> Masking -> Bidirectional(GRU(4, rs), "
      "backward_layer=GRU(4, rs, go_backwards=True, reset_after=False, activation='relu'), "
      "merge_mode='mul') -> Dense(2): halves with different options")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    bi = L.Bidirectional(L.GRU(4, return_sequences=True),
                         backward_layer=L.GRU(4, return_sequences=True, go_backwards=True,
                                              reset_after=False, activation="relu"),
                         merge_mode="mul")
    y = L.Dense(2)(bi(L.Masking()(x)))
    return {"model": g.K.Model(x, y), "inputs": [d.masked(7, 3)]}


def conv_case(name, T, convs, description):
    @case(name, f"Input({T}, 4) -> " + " -> ".join(
        f"Conv1D({', '.join(f'{k}={v!r}' for k, v in kw.items())})" for kw in convs)
        + " -> GRU(4) -> Dense(2). " + description)
    def _(g, d):
        L = g.L
        x = g.K.Input(shape=(T, 4), name="x")
        h = x
        for kw in convs:
            h = L.Conv1D(**kw)(h)
        return {"model": g.K.Model(x, L.Dense(2)(L.GRU(4)(h))), "inputs": [d.seq(B, T, 4)]}


conv_case("conv1d_padding", 9, [
    dict(filters=5, kernel_size=3, activation="relu"),
    dict(filters=4, kernel_size=3, padding="same", strides=2, use_bias=False),
    dict(filters=3, kernel_size=3, padding="causal", dilation_rate=2),
], "Lengths 9 -> 7 -> 4 -> 4: same padding with strides 2 on an odd length pads unevenly")
conv_case("conv1d_strides_groups", 16, [
    dict(filters=4, kernel_size=2, strides=2),
    dict(filters=4, kernel_size=3, padding="same", dilation_rate=2, activation="tanh"),
    dict(filters=6, kernel_size=3, padding="same", groups=2),
    dict(filters=3, kernel_size=3, padding="causal", strides=2, use_bias=False),
], "Lengths 16 -> 8 -> 8 -> 8 -> 4; groups=2 splits 4 channels into 2 groups of 2, 3 filters "
   "each")


@case("pooling", "Input(7, 3) -> Masking -> GRU(4, rs) -> GlobalAveragePooling1D and "
      "GlobalMaxPooling1D (masked); Input -> GRU(3, rs) (no mask) -> GlobalAveragePooling1D and "
      "GlobalMaxPooling1D; four outputs. No fully masked row: Keras's masked average divides 0 by "
      "0 there")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    h = L.GRU(4, return_sequences=True)(L.Masking()(x))
    u = L.GRU(3, return_sequences=True)(x)
    outs = [L.GlobalAveragePooling1D()(h), L.GlobalMaxPooling1D()(h),
            L.GlobalAveragePooling1D()(u), L.GlobalMaxPooling1D()(u)]
    return {"model": g.K.Model(x, outs), "inputs": [d.masked(7, 3, pattern="no_full_row")]}


@case("reshape_permute_flatten", "Input x (6, 3) -> GRU(4, rs) -> Permute((2, 1)) -> "
      "Reshape((-1, 3)) -> Flatten -> Dense(2); Input v (24,) -> Reshape((6, 4)) -> LSTM(3, rs) -> "
      "Reshape((9, 2)) -> GRU(3) -> Dense(2): a Reshape into a sequence; two outputs")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    h = L.Permute((2, 1))(L.GRU(4, return_sequences=True)(x))
    y1 = L.Dense(2)(L.Flatten()(L.Reshape((-1, 3))(h)))
    v = g.K.Input(shape=(24,), name="v")
    h = L.LSTM(3, return_sequences=True)(L.Reshape((6, 4))(v))
    y2 = L.Dense(2)(L.GRU(3)(L.Reshape((9, 2))(h)))
    return {"model": g.K.Model([x, v], [y1, y2]), "inputs": [d.seq(B, 6, 3), d.seq(B, 24)]}


@case("norms_batchnorm", "Input(7, 4) -> Masking -> BatchNormalization() -> LSTM(5, rs) -> "
      "BatchNormalization(center=False, scale=False, epsilon=0.01) -> BatchNormalization(axis=-1, "
      "center=False) -> BatchNormalization(scale=False) -> Dense(2); inference with random moving "
      "statistics; BatchNormalization passes the mask on")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 4), name="x")
    h = L.LSTM(5, return_sequences=True)(L.BatchNormalization()(L.Masking()(x)))
    h = L.BatchNormalization(center=False, scale=False, epsilon=0.01)(h)
    h = L.BatchNormalization(axis=-1, center=False)(h)
    y = L.Dense(2)(L.BatchNormalization(scale=False)(h))
    return {"model": g.K.Model(x, y), "inputs": [d.masked(7, 4)]}


@case("norms_layernorm", "Input(7, 4) -> Masking -> LayerNormalization(epsilon=1e-3) -> LSTM(5, "
      "rs) -> LayerNormalization(center=False, epsilon=0.1) -> LayerNormalization(scale=False) -> "
      "LayerNormalization(center=False, scale=False) -> Dense(2)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 4), name="x")
    h = L.LSTM(5, return_sequences=True)(L.LayerNormalization(epsilon=1e-3)(L.Masking()(x)))
    h = L.LayerNormalization(center=False, epsilon=0.1)(h)
    h = L.LayerNormalization(scale=False)(h)
    h = L.LayerNormalization(center=False, scale=False)(h)
    return {"model": g.K.Model(x, L.Dense(2)(h)), "inputs": [d.masked(7, 4)]}


@case("spatial_dropout_float64", "Input(7, 4) -> SpatialDropout1D(0.3) -> Dropout(0.2) -> "
      "LSTM(4, dtype='float64') -> Dense(2); dropouts are identities in inference")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 4), name="x")
    h = L.Dropout(0.2)(L.SpatialDropout1D(0.3)(x))
    y = L.Dense(2)(L.LSTM(4, dtype="float64")(h))
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 7, 4)]}


@case("simple_rnn", "Input(7, 3) -> Masking -> SimpleRNN(4, rs) -> SimpleRNN(3, "
      "activation='relu') -> Dense(2); and Masking -> Bidirectional(SimpleRNN(3, rs)) -> "
      "TimeDistributed(Dense(2)); two outputs")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    m = L.Masking()(x)
    h = L.SimpleRNN(3, activation="relu")(L.SimpleRNN(4, return_sequences=True)(m))
    b = L.Bidirectional(L.SimpleRNN(3, return_sequences=True))(m)
    outs = [L.Dense(2)(h), L.TimeDistributed(L.Dense(2))(b)]
    return {"model": g.K.Model(x, outs), "inputs": [d.masked(7, 3)]}


@case("time_distributed_dense", "Input(7, 3) -> Masking -> TimeDistributed(Dense(4, tanh)) -> "
      "GRU(3) -> Dense(2); TimeDistributed passes the mask on")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    h = L.TimeDistributed(L.Dense(4, activation="tanh"))(L.Masking()(x))
    return {"model": g.K.Model(x, L.Dense(2)(L.GRU(3)(h))), "inputs": [d.masked(7, 3)]}


@case("time_distributed_4d", "Input(4, 6, 3) (B, N, T, F) -> TimeDistributed(GRU(4)) -> "
      "(B, N, 4) -> LSTM(3) -> Dense(2); and Input -> TimeDistributed(Conv1D(4, 3)) -> "
      "(B, 4, 4, 4) -> Reshape((4, 16)) -> GRU(3) -> Dense(2); two outputs")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(4, 6, 3), name="x")
    y1 = L.Dense(2)(L.LSTM(3)(L.TimeDistributed(L.GRU(4))(x)))
    h = L.Reshape((4, 16))(L.TimeDistributed(L.Conv1D(4, 3))(x))
    y2 = L.Dense(2)(L.GRU(3)(h))
    return {"model": g.K.Model(x, [y1, y2]), "inputs": [d.seq(B, 4, 6, 3)]}


@case("embedding_masked_merge", "Input(7,) int32 ids -> Embedding(12, 4, mask_zero=True) -> "
      "GRU(4, rs) and LSTM(4, rs) -> Add -> GlobalAveragePooling1D -> Dense(2); 0 = padding; no "
      "fully padded row (the masked average would divide 0 by 0)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7,), dtype="int32", name="ids")
    e = L.Embedding(12, 4, mask_zero=True)(x)
    h = L.Add()([L.GRU(4, return_sequences=True)(e), L.LSTM(4, return_sequences=True)(e)])
    y = L.Dense(2)(L.GlobalAveragePooling1D()(h))
    return {"model": g.K.Model(x, y), "inputs": [d.ids(7, 12, pattern="no_full_row")]}


@case("embedding_masked_full_row", "Input(None,) int32 ids -> Embedding(10, 3, mask_zero=True) -> "
      "LSTM(4, rs) -> GRU(3) -> Dense(2, softmax); one row all padding")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(None,), dtype="int32", name="ids")
    h = L.LSTM(4, return_sequences=True)(L.Embedding(10, 3, mask_zero=True)(x))
    y = L.Dense(2, activation="softmax")(L.GRU(3)(h))
    return {"model": g.K.Model(x, y), "inputs": [d.ids(6, 10)]}


def stateful_calls(d, F, lengths=(4, 3, 5, 4, 2)):
    """3 calls, reset_states, 2 calls."""
    return [(i == 3, [d.seq(B, T, F)]) for i, T in enumerate(lengths)]


@case("stateful_sequential_gru", "Sequential(Input(batch_shape=(3, None, 3)), GRU(4, stateful, rs), "
      "Dense(2)); 3 calls, reset_states, 2 calls")
def _(g, d):
    L = g.L
    m = g.K.Sequential([g.K.Input(batch_shape=(B, None, 3)),
                        L.GRU(4, stateful=True, return_sequences=True), L.Dense(2)])
    return {"model": m, "calls": stateful_calls(d, 3)}


# Keras 2 only: Keras 3 refuses batch_input_shape= as a layer argument.
@case("stateful_sequential_batch_input_shape", "Keras 2 style Sequential: GRU(4, stateful, rs, "
      "batch_input_shape=(3, None, 3)) -> Dense(2); 3 calls, reset_states, 2 calls",
      dialects=("keras2",))
def _(g, d):
    L = g.L
    m = g.K.Sequential([L.GRU(4, stateful=True, return_sequences=True, batch_input_shape=(B, None, 3)),
                        L.Dense(2)])
    return {"model": m, "calls": stateful_calls(d, 3)}


@case("stateful_functional_lstm_gru", "Input(batch_shape=(3, None, 3)) -> LSTM(4, stateful, rs) -> "
      "GRU(3, stateful, rs) -> Dense(2); 3 calls, reset_states, 2 calls")
def _(g, d):
    L = g.L
    x = g.K.Input(batch_shape=(B, None, 3), name="x")
    h = L.LSTM(4, stateful=True, return_sequences=True)(x)
    h = L.GRU(3, stateful=True, return_sequences=True)(h)
    return {"model": g.K.Model(x, L.Dense(2)(h)), "calls": stateful_calls(d, 3)}


ACTIVATIONS = ["relu", "sigmoid", "tanh", "softmax", "elu", "selu", "softplus", "softsign",
               "swish", "gelu", "hard_sigmoid", "exponential", "linear"]
DENSE_ACTIVATIONS = ["relu", "softmax", "hard_sigmoid", "gelu"]


@case("activations_layers", "Input(6, 3) -> GRU(4, rs) -> Dense(3) -> one Activation(a) per a in "
      + ", ".join(ACTIVATIONS) + "; and GRU -> Dense(3, activation=a) for a in "
      + ", ".join(DENSE_ACTIVATIONS) + "; every branch a model output (hard_sigmoid differs "
      "between Keras 2 and 3)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    h = L.GRU(4, return_sequences=True)(x)
    pre = L.Dense(3, name="pre")(h)
    outs = [L.Activation(a, name=f"act_{a}")(pre) for a in ACTIVATIONS]
    outs += [L.Dense(3, activation=a, name=f"dense_{a}")(h) for a in DENSE_ACTIVATIONS]
    return {"model": g.K.Model(x, outs), "inputs": [d.seq(B, 6, 3, lo=-2.0, hi=2.0)]}


@case("masked_initial_state", "inputs x (7, 3), h0 (4,), c0 (4,) -> Masking -> GRU(4, rs, "
      "initial_state=h0), LSTM(4, rs, initial_state=[h0, c0]) and GRU(4, rs, unroll=True, "
      "initial_state=h0), three outputs. Every row starts with masked steps (one row is fully "
      "masked) and the states are non-zero: shows what a backend outputs at masked steps before "
      "the first valid one. Keras 3 is given the mask explicitly (mask=, the Masking output's "
      "mask): it does not pass a mask on by itself to a layer called with initial_state")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    h0 = g.K.Input(shape=(4,), name="h0")
    c0 = g.K.Input(shape=(4,), name="c0")
    m = L.Masking()(x)
    kw = {}
    if g.dialect != "keras2":
        # Keras 3's Layer.__call__ fills in `mask` only when the call has a single tensor
        # argument; with initial_state= the Masking mask would be dropped (see seq2seq_*).
        kw["mask"] = getattr(m, "_keras_mask", None)
        assert kw["mask"] is not None
    outs = [L.GRU(4, return_sequences=True)(m, initial_state=h0, **kw),
            L.LSTM(4, return_sequences=True)(m, initial_state=[h0, c0], **kw),
            L.GRU(4, return_sequences=True, unroll=True)(m, initial_state=h0, **kw)]
    data = [d.masked(7, 3, pattern="leading"), d.seq(B, 4), d.seq(B, 4)]
    return {"model": g.K.Model([x, h0, c0], outs), "inputs": data}


# Keras 2 only: CuDNNGRU / CuDNNLSTM (tf_keras.src.layers.rnn.cudnn_*) are gone from Keras 3.
def cudnn_case(name, kind):
    native = {"CuDNNGRU": "GRU", "CuDNNLSTM": "LSTM"}[kind]

    @case(name, f"Input(7, 3) -> Bidirectional({kind}(4, return_sequences=True)) -> Dense(2), saved "
          f"with {kind}'s config and weights; {kind} runs on GPUs only, so the outputs are those of "
          f"the same model with the native {native}"
          f"{'(reset_after=True, recurrent_activation=sigmoid)' if native == 'GRU' else ''} "
          "and the weights Keras's h5 loader converts the CuDNN ones to (no mask: CuDNN layers "
          "refuse masks)", dialects=("keras2",))
    def _(g, d):
        from tf_keras.src.layers.rnn.cudnn_gru import CuDNNGRU
        from tf_keras.src.layers.rnn.cudnn_lstm import CuDNNLSTM
        from tf_keras.src.saving.legacy import hdf5_format

        L = g.L
        cls = {"CuDNNGRU": CuDNNGRU, "CuDNNLSTM": CuDNNLSTM}[kind]
        nat_kw = dict(return_sequences=True, activation="tanh", recurrent_activation="sigmoid")
        if native == "GRU":
            nat_kw["reset_after"] = True

        def build(layer):
            x = g.K.Input(shape=(7, 3), name="x")
            y = L.Dense(2, name="dense")(L.Bidirectional(layer, name="bidirectional")(x))
            return g.K.Model(x, y)

        cudnn_model = build(cls(4, return_sequences=True, name=kind.lower()))
        native_model = build(getattr(L, native)(4, name=kind.lower(), **nat_kw))
        # Random weights in the CuDNN layout; Keras's converter gives the native ones.
        g.randomize(cudnn_model)
        bi_c, bi_n = cudnn_model.get_layer("bidirectional"), native_model.get_layer("bidirectional")
        bi_n.set_weights(hdf5_format.preprocess_weights_for_loading(bi_n, bi_c.get_weights()))
        native_model.get_layer("dense").set_weights(cudnn_model.get_layer("dense").get_weights())
        return {"model": cudnn_model, "predict_model": native_model, "weights_set": True,
                "custom_objects": {kind: cls}, "inputs": [d.seq(B, 7, 3)]}


cudnn_case("cudnn_bidirectional_gru", "CuDNNGRU")
cudnn_case("cudnn_bidirectional_lstm", "CuDNNLSTM")


# ---- running and saving -----------------------------------------------------------------------
class Graphs:
    def __init__(self, dialect):
        self.dialect = dialect
        if dialect == "keras3_jax":
            import jax
            import keras as K

            assert K.backend.backend() == "jax", K.backend.backend()
            self.backend = "jax"
            self.versions = {"jax": jax.__version__, "keras": K.__version__}
        else:
            sys.path.insert(0, HERE)
            from generate import configure_tensorflow

            tf = configure_tensorflow(dialect)
            if dialect == "keras2":
                import importlib.metadata as md

                import tf_keras as K

                self.versions = {"tensorflow": tf.__version__, "keras": md.version("tf-keras")}
            else:
                import keras as K

                assert K.backend.backend() == "tensorflow", K.backend.backend()
                self.versions = {"tensorflow": tf.__version__, "keras": K.__version__}
            self.backend = "tensorflow"
        self.K = K
        self.L = K.layers
        self.weight_rng = None

    # helpers used by builders
    def warnings_ignored(self):
        import warnings

        return warnings.catch_warnings(action="ignore")

    def randomize(self, model):
        """Every weight uniform(-0.5, 0.5); moving variances uniform(0.5, 1.5)."""
        rng = self.weight_rng
        for v in model.weights:
            name = getattr(v, "path", None) or v.name
            shape = tuple(int(s) for s in v.shape)
            dtype = np.dtype(getattr(v.dtype, "name", v.dtype))
            if "moving_variance" in name:
                val = rng.uniform(0.5, 1.5, shape)
            else:
                val = rng.uniform(-0.5, 0.5, shape)
            v.assign(val.astype(dtype))

    def rnn_layers(self, model):
        out = []

        def walk(layer):
            for sub in getattr(layer, "layers", []) or []:
                walk(sub)
            if getattr(layer, "stateful", False) and hasattr(layer, "reset_states"):
                out.append(layer)

        walk(model)
        return out

    def reset_states(self, model):
        for layer in self.rnn_layers(model):
            layer.reset_states()

    def run_calls(self, model, calls, direct=False):
        """model.predict of each call; direct=True: model(x, training=False) instead."""
        results = []
        for reset, xs in calls:
            if reset:
                self.reset_states(model)
            # Strings (object arrays) go in as tf string tensors: Keras takes no numpy objects.
            xs = [self.tf_strings(x) if getattr(x, "dtype", None) == object else x for x in xs]
            x = xs if len(xs) > 1 else xs[0]
            if direct:
                ys = model(x, training=False)
            else:
                ys = model.predict(x, batch_size=B, verbose=0)
            ys = list(ys) if isinstance(ys, (list, tuple)) else [ys]
            results.append([np.asarray(y).astype(np.float32) for y in ys])
        return results

    def tf_strings(self, x):
        import tensorflow as tf

        return tf.constant(x)

    def load(self, path, custom):
        K = self.K
        if self.dialect == "keras2" and custom and path.endswith(".keras"):
            # tf_keras 2.21 looks classes of a .keras file up by registered_name, which CuDNN
            # layers save as null, so it cannot load them even with custom_objects.
            from tf_keras.src.saving import serialization_lib as sl

            orig = sl._retrieve_class_or_fn

            def find(name, *a, **kw):
                return custom[name] if name in custom else orig(name, *a, **kw)

            sl._retrieve_class_or_fn = find
            try:
                return K.models.load_model(path, compile=False)
            finally:
                sl._retrieve_class_or_fn = orig
        if custom:
            return K.models.load_model(path, custom_objects=custom, compile=False)
        return K.models.load_model(path, compile=False)

    def output_names(self, model):
        """model.output_names; a Keras 3 Sequential has none, so that of the functional model
        it builds and runs (model._functional) is used."""
        if hasattr(model, "output_names"):
            return list(model.output_names)
        return list(model._functional.output_names)

    def input_names(self, model):
        # _keras_history is (layer or operation, node_index, tensor_index) in both dialects.
        return [t._keras_history[0].name for t in model.inputs]

    def build(self, name, description, fn, out_dir):
        K = self.K
        K.backend.clear_session()
        K.utils.set_random_seed(zlib.crc32(name.encode()) & 0x7FFFFFFF)
        self.weight_rng = np.random.default_rng(zlib.crc32(name.encode()))
        d = Data(np.random.default_rng(zlib.crc32((name + "/inputs").encode())))
        built = fn(self, d)
        model = built["model"]
        if not built.get("weights_set"):
            self.randomize(model)
        predict_model = built.get("predict_model", model)
        custom = built.get("custom_objects")
        stateful = bool(self.rnn_layers(model))
        calls = built.get("calls") or [(False, built["inputs"])]
        assert stateful == ("calls" in built), name
        # Stateful models are called directly: Keras 3's JAX predict() does not carry the states
        # from one call to the next (it runs a stateless copy of the model; the states are not
        # among the variables it hands back), while direct calls do in every dialect.
        self.reset_states(predict_model)
        results = self.run_calls(predict_model, calls, direct=stateful)
        if stateful:
            self.reset_states(predict_model)
            by_predict = self.run_calls(predict_model, calls)
            same = all(np.array_equal(a, b) for ca, cb in zip(results, by_predict)
                       for a, b in zip(ca, cb))
            print(f"  {name}: predict() {'carries' if same else 'does NOT carry'} the states "
                  "like direct calls")

        files, skipped, load_errors = [], {}, {}
        for ext in ("keras", "h5"):
            path = os.path.join(out_dir, f"{name}.{ext}")
            if os.path.exists(path):
                os.remove(path)
            # A builder may leave out a format Keras itself gets wrong (it saves it, but the file
            # it loads back predicts something else), saying why.
            if ext in built.get("skip_formats", {}):
                skipped[ext] = built["skip_formats"][ext]
                continue
            try:
                with self.warnings_ignored():
                    model.save(path)
            except Exception as e:  # noqa: BLE001
                if os.path.exists(path):
                    os.remove(path)
                skipped[ext] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
                continue
            files.append(os.path.relpath(path, HERE))
            try:
                loaded = self.load(path, custom)
            except Exception as e:  # noqa: BLE001
                # Keras saved a file it cannot read back (Keras 3's legacy .h5 loader knows no
                # ops such as the NotEqual/Any nodes that compute Masking's mask). The file is
                # kept: it is what Keras wrote, and the predictions are the saved model's.
                load_errors[ext] = f"{type(e).__name__}: {str(e).splitlines()[0].split('. ')[0][:300]}"
                print(f"  {name}: Keras cannot load back its {ext}: {load_errors[ext]}")
                continue
            try:
                if predict_model is not model:
                    self.check_cudnn_reload(loaded, model, predict_model)
                    again = results
                else:
                    self.reset_states(loaded)
                    again = self.run_calls(loaded, calls, direct=stateful)
                if self.output_names(loaded) != self.output_names(model):
                    print(f"  {name}: {ext} loads back with output_names "
                          f"{self.output_names(loaded)} (saved: {self.output_names(model)})")
            except Exception as e:  # noqa: BLE001
                raise RuntimeError(f"{name}: {path} loaded back fails: "
                                   f"{type(e).__name__}: {e}") from e
            worst = 0.0
            for ca, cb in zip(results, again):
                for a, b in zip(ca, cb):
                    assert a.shape == b.shape, (name, path)
                    worst = max(worst, float(np.max(np.abs(a - b))) if a.size else 0.0)
            if worst > 1e-6:
                raise RuntimeError(f"{name}: {path} loaded back predicts differently ({worst})")
            self.reload_diff = max(self.reload_diff, worst)

        c = {"name": name, "description": description, "files": files}
        if skipped:
            c["skipped_files"] = skipped
        if load_errors:
            c["keras_load_errors"] = load_errors
        c["input_names"] = self.input_names(model)
        c["output_names"] = self.output_names(model)
        c["stateful"] = stateful
        c["calls"] = [{"reset_states_before": bool(reset),
                       "inputs": [input_tensor(np.asarray(x)) for x in xs],
                       "outputs": [output_tensor(y) for y in ys]}
                      for (reset, xs), ys in zip(calls, results)]
        return c

    def check_cudnn_reload(self, loaded, model, native_model):
        """The CuDNN model cannot run on CPU: its reloaded weights must be the saved ones."""
        got, want = loaded.get_weights(), model.get_weights()
        assert len(got) == len(want)
        for a, b in zip(got, want):
            assert a.shape == b.shape and np.array_equal(a, b)
        assert [type(x).__name__ for x in loaded.layers] == [type(x).__name__ for x in model.layers]

    def run(self, suite):
        rel_dir, rel_json = suite_paths(suite, self.dialect)
        out_dir = os.path.join(HERE, rel_dir)
        os.makedirs(out_dir, exist_ok=True)
        for old in os.listdir(out_dir):
            if old.endswith((".keras", ".h5")):
                os.remove(os.path.join(out_dir, old))
        self.reload_diff = 0.0
        cases, left_out = [], []
        for name, description, dialects, fn, in_suite in CASES:
            if in_suite != suite:
                continue
            if self.dialect not in dialects:
                left_out.append((name, "not in this dialect"))
                continue
            try:
                c = self.build(name, description, fn, out_dir)
            except Skip as e:
                left_out.append((name, str(e)))
                continue
            cases.append(c)
            sizes = sum(os.path.getsize(os.path.join(HERE, f)) for f in c["files"])
            extra = f"  skipped {c['skipped_files']}" if "skipped_files" in c else ""
            print(f"{name}: {len(c['calls'])} call(s), outputs {c['output_names']}, "
                  f"{sizes / 1024:.1f} KiB{extra}")
        doc = {"dialect": self.dialect, "backend": self.backend,
               "keras_version": self.versions["keras"],
               "versions": dict(python=platform.python_version(), numpy=np.__version__,
                                **self.versions),
               "generator": "tests/keras/generate_graphs.py", "cases": cases}
        path = os.path.join(HERE, rel_json)
        dump_doc(path, doc)
        total = sum(os.path.getsize(os.path.join(out_dir, f)) for f in os.listdir(out_dir))
        print(f"{self.dialect} {suite}: {len(cases)} cases, model files {total / 1024:.1f} KiB, "
              f"{os.path.relpath(path, HERE)} {os.path.getsize(path) / 1024:.1f} KiB; "
              f"loaded back: max difference {self.reload_diff:.3g}")
        for name, why in left_out:
            print(f"  left out {name}: {why}")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dialect", required=True, choices=DIALECTS)
    ap.add_argument("--suite", action="append",
                    help="regenerate only this suite (repeatable): core, or a module of graph_suites/")
    args = ap.parse_args()
    load_suites()
    for s in args.suite or []:
        if s not in suites():
            ap.error(f"no suite {s!r}; there are: {', '.join(suites())}")
    g = Graphs(args.dialect)
    for s in args.suite or suites():
        g.run(s)


if __name__ == "__main__":
    sys.exit(main())
