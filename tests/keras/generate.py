#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Generate reference fixtures for the recur C++ library with REAL Keras.

Usage (from the repository root):

    tests/keras/.venv-keras2/bin/python tests/keras/generate.py --dialect keras2
    tests/keras/.venv-keras3/bin/python tests/keras/generate.py --dialect keras3

`--groups simple_rnn,...` writes only those fixture files and leaves the others as they are
(each case's data depends only on its own name, so the files written are the same either way).

keras2 = the `tf_keras` package (Keras 2 / tf.keras), keras3 = the `keras` package on the
TensorFlow backend. Everything runs on CPU in float32, in inference mode (training=False), with
weights and inputs drawn from numpy generators seeded from the case name, so reruns produce
byte-identical files. See README.md in this folder for the fixture format.

Every case is also recomputed with an independent float64 numpy model of the Keras equations
(keras_semantics.md sections 1-4); the max deviation is printed, and a case whose Keras float32
result is further than 2e-6 from the float64 model gets a looser, documented tolerance. A
deviation over 1e-3 means the model and Keras disagree and aborts the run.
"""
import argparse
import json
import math
import os
import platform
import sys
import zlib

# Must be set before TensorFlow is imported.
os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["PYTHONHASHSEED"] = "0"

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TOL = 1e-5

# Activation names tried for `activation` (the ones a dialect refuses are skipped and reported).
ACTIVATION_CANDIDATES = [
    "tanh", "sigmoid", "hard_sigmoid", "relu", "linear", "softsign", "softplus", "elu", "selu",
    "exponential", "swish", "silu", "gelu", "mish", "relu6", "leaky_relu", "hard_silu",
    "hard_swish", "log_sigmoid", "celu", "softmax", "log_softmax", "sparse_plus", "squareplus",
    "tanh_shrink", "hard_tanh", "soft_shrink", "hard_shrink", "sparse_sigmoid", "sparsemax",
    "threshold", "glu",
]
# Activations that are not bounded (or grow fast): use small weights and short sequences.
UNBOUNDED = {
    "relu", "linear", "softplus", "elu", "selu", "exponential", "swish", "silu", "gelu", "mish",
    "leaky_relu", "hard_silu", "hard_swish", "log_sigmoid", "celu", "log_softmax", "sparse_plus",
    "squareplus", "tanh_shrink", "soft_shrink", "hard_shrink", "relu6",
}
RECURRENT_ACTIVATIONS = ["sigmoid", "hard_sigmoid", "tanh", "linear", "softsign", "relu", "softplus"]

MASKS = {
    # (B=4, T=6) patterns, 1 = valid
    "right": [[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0], [1, 1, 0, 0, 0, 0], [1, 1, 1, 1, 1, 0]],
    "left": [[1, 1, 1, 1, 1, 1], [0, 0, 1, 1, 1, 1], [0, 0, 0, 0, 1, 1], [0, 1, 1, 1, 1, 1]],
    "holes": [[1, 0, 1, 1, 0, 1], [1, 1, 0, 0, 1, 1], [0, 1, 0, 1, 0, 1], [1, 1, 1, 1, 1, 1]],
    "fullrow": [[1, 1, 1, 1, 0, 0], [0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1], [0, 1, 1, 0, 1, 1]],
    "mixed": [[1, 1, 1, 1, 0, 0], [0, 0, 1, 1, 1, 1], [1, 0, 1, 0, 1, 1], [0, 0, 0, 0, 0, 0]],
}


# --------------------------------------------------------------------------------------------
# Formatting helpers
# --------------------------------------------------------------------------------------------
def f32_list(a):
    """Flat row-major list of floats; each is the shortest decimal that round-trips float32."""
    a = np.asarray(a, dtype=np.float32).ravel()
    if not np.all(np.isfinite(a)):
        raise ValueError("non-finite value in fixture data")
    out = []
    for v in a:
        f = float(str(v))  # numpy prints the shortest repr that round-trips float32
        if np.float32(f) != v:  # parse as double then round to float, like strtod + cast
            raise AssertionError(f"float32 round trip failed for {v!r}")
        out.append(f)
    return out


def tensor(a):
    a = np.asarray(a, dtype=np.float32)
    return {"shape": list(a.shape), "data": f32_list(a)}


def mask_tensor(m):
    m = np.asarray(m, dtype=np.int64)
    return {"shape": list(m.shape), "data": [int(v) for v in m.ravel()]}


def jsonable(o):
    if isinstance(o, dict):
        return {str(k): jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [jsonable(v) for v in o]
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, (np.bool_,)):
        return bool(o)
    if o is None or isinstance(o, (str, int, float, bool)):
        return o
    raise TypeError(f"not JSON serializable: {type(o)} {o!r}")


# --------------------------------------------------------------------------------------------
# Deterministic data
# --------------------------------------------------------------------------------------------
def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode("utf-8")))


def q(a, decimals):
    """Round to a few decimals so the JSON stays small; values are then exact float32 inputs."""
    return np.round(np.asarray(a, dtype=np.float64), decimals).astype(np.float32)


# --------------------------------------------------------------------------------------------
# float64 numpy model of the Keras equations (independent check, never written to fixtures)
# --------------------------------------------------------------------------------------------
class Ref:
    def __init__(self, gen):
        self.gen = gen
        self.pre_sigma = []  # recurrent-activation arguments seen, for breakpoint coverage

    def act(self, name, x):
        return self.gen.act64(name, x)

    def gru_step(self, cfg, w, x, states, collect=True):
        h = states[0]
        u = cfg["units"]
        K, U = w["kernel"].astype(np.float64), w["recurrent_kernel"].astype(np.float64)
        b = w.get("bias")
        ra = cfg["reset_after"]
        sig = lambda v: self.act(cfg["recurrent_activation"], v)  # noqa: E731
        phi = lambda v: self.act(cfg["activation"], v)  # noqa: E731
        if b is None:
            bi = br = np.zeros(3 * u)
        elif ra:
            bi, br = b[0].astype(np.float64), b[1].astype(np.float64)
        else:
            bi, br = b.astype(np.float64), np.zeros(3 * u)
        mx = x @ K + bi
        if ra:
            mh = h @ U + br
            az, ar = mx[:, :u] + mh[:, :u], mx[:, u:2 * u] + mh[:, u:2 * u]
            z, r = sig(az), sig(ar)
            hh = phi(mx[:, 2 * u:] + r * mh[:, 2 * u:])
        else:
            az = mx[:, :u] + h @ U[:, :u]
            ar = mx[:, u:2 * u] + h @ U[:, u:2 * u]
            z, r = sig(az), sig(ar)
            hh = phi(mx[:, 2 * u:] + (r * h) @ U[:, 2 * u:])
        if collect:
            self.pre_sigma.append(np.concatenate([az.ravel(), ar.ravel()]))
        hn = z * h + (1 - z) * hh
        return hn, [hn]

    def lstm_step(self, cfg, w, x, states, collect=True):
        h, c = states
        u = cfg["units"]
        K, U = w["kernel"].astype(np.float64), w["recurrent_kernel"].astype(np.float64)
        b = w.get("bias")
        zz = x @ K + h @ U
        if b is not None:
            zz = zz + b.astype(np.float64)
        sig = lambda v: self.act(cfg["recurrent_activation"], v)  # noqa: E731
        phi = lambda v: self.act(cfg["activation"], v)  # noqa: E731
        gi, gf, gc, go = (zz[:, k * u:(k + 1) * u] for k in range(4))
        if collect:
            self.pre_sigma.append(np.concatenate([gi.ravel(), gf.ravel(), go.ravel()]))
        i, f, g, o = sig(gi), sig(gf), phi(gc), sig(go)
        cn = f * c + i * g
        hn = o * phi(cn)
        return hn, [hn, cn]

    def simple_rnn_step(self, cfg, w, x, states, collect=True):
        h = states[0]
        K, U = w["kernel"].astype(np.float64), w["recurrent_kernel"].astype(np.float64)
        b = w.get("bias")
        pre = x @ K
        if b is not None:
            pre = pre + b.astype(np.float64)
        hn = self.act(cfg["activation"], pre + h @ U)
        return hn, [hn]

    def step_fn(self, kind):
        if kind in ("SimpleRNN", "SimpleRNNCell"):
            return self.simple_rnn_step
        return self.gru_step if kind in ("GRU", "GRUCell") else self.lstm_step

    def run_layer(self, kind, cfg, w, x, states, mask):
        """Generic RNN loop (K2 backend.rnn / K3 TF rnn). x (B,T,F) batch-major float64."""
        step = self.step_fn(kind)
        init_states = states
        B, T, _ = x.shape
        u = cfg["units"]
        order = range(T - 1, -1, -1) if cfg.get("go_backwards") else range(T)
        prev = np.zeros((B, u))
        outs = []
        for t in order:
            out, new = step(cfg, w, x[:, t], states)
            if mask is not None:
                m = mask[:, t].astype(bool)[:, None]
                new = [np.where(m, n, s) for n, s in zip(new, states)]
                alt = np.zeros_like(out) if cfg.get("zero_output_for_mask") else prev
                out = np.where(m, out, alt)
            states = new
            prev = out
            outs.append(out)
        seq = np.stack(outs, axis=1)
        last = outs[-1]
        if cfg.get("unroll") and mask is not None and cfg.get("zero_output_for_mask"):
            # keras_semantics.md §12.15 (backend.rnn unroll branch, K2 and K3 TF): the outputs
            # were computed with the carry rule, then the stacked sequence is zeroed with the
            # UNREVERSED mask; last_output with the last processed (reversed) mask step.
            carried = self.run_layer(kind, dict(cfg, zero_output_for_mask=False, unroll=False),
                                     w, x, init_states, mask)[0]
            seq = np.where(mask.astype(bool)[:, :, None], carried, 0.0)
        return seq, last, states


def cudnn_to_native_numpy(kind, weights):
    """Independent implementation of keras_semantics.md §3.4 (CuDNN -> native)."""
    n = 3 if kind == "CuDNNGRU" else 4
    Kc, Uc, b = weights
    F = Kc.shape[0]
    u = Uc.shape[0]
    Kn = np.hstack([np.ascontiguousarray(k).reshape(u, F).T for k in np.hsplit(Kc, n)])
    Un = np.hstack([k.T for k in np.hsplit(Uc, n)])
    if n == 3:
        bn = b.reshape(2, 3 * u)
    else:
        bn = b[: 4 * u] + b[4 * u:]
    return [Kn, Un, bn]


# --------------------------------------------------------------------------------------------
# Generator
# --------------------------------------------------------------------------------------------
def configure_tensorflow(dialect):
    """Imports TensorFlow for `dialect`, CPU only, one thread, deterministic, no TF32."""
    if dialect == "keras3":
        os.environ["KERAS_BACKEND"] = "tensorflow"
    import tensorflow as tf

    tf.config.set_visible_devices([], "GPU")
    tf.config.experimental.enable_tensor_float_32_execution(False)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.config.experimental.enable_op_determinism()
    return tf


def gates_of(kind):
    """Column blocks of the kernels: GRU 3, LSTM 4, SimpleRNN 1."""
    if kind.startswith("SimpleRNN"):
        return 1
    return 3 if "GRU" in kind else 4


CELL_KINDS = ("GRUCell", "LSTMCell", "SimpleRNNCell")


class Generator:
    def __init__(self, dialect, groups=None):
        self.dialect = dialect
        self.groups = groups  # None: every fixture file; else only these
        self.tf = tf = configure_tensorflow(dialect)
        if dialect == "keras2":
            import tf_keras as K
            import importlib.metadata as md

            self.K = K
            keras_version = md.version("tf-keras")
        else:
            import keras as K

            self.K = K
            assert K.backend.backend() == "tensorflow", K.backend.backend()
            keras_version = K.__version__
        self.versions = {
            "python": platform.python_version(),
            "tensorflow": tf.__version__,
            "keras": keras_version,
            "numpy": np.__version__,
            "backend": "tensorflow",
        }
        self.cases = {}  # file -> [case]
        self.names = set()
        self.skipped_activations = {}
        self.check = []  # (name, maxdiff, tol)
        self.hs_coverage = []
        self._act_cache = {}
        self.refused_cases = {}  # case name -> Keras error (not written)
        self.loss_check = []  # (layer, loss name, rel diff)
        self.constraint_check = []  # (layer, weight, class, maxdiff, sign mismatches, -0.0s)

    # ---- activations ----------------------------------------------------------------------
    def act64(self, name, x):
        fn = self._act_cache.get(name)
        if fn is None:
            fn = self.K.activations.get(name)
            self._act_cache[name] = fn
        y = fn(self.tf.constant(np.asarray(x, dtype=np.float64)))
        return np.asarray(y, dtype=np.float64)

    def activation_accepted(self, name):
        try:
            fn = self.K.activations.get(name)
            if fn is None:
                raise ValueError("get() returned None")
            y = fn(self.tf.constant(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)))
            if tuple(y.shape) != (3, 4):
                raise ValueError(f"changes the shape: (3, 4) -> {tuple(y.shape)}")
            return True
        except Exception as e:  # noqa: BLE001
            self.skipped_activations[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
            return False

    # ---- layer construction -----------------------------------------------------------------
    def layer_class(self, kind):
        K = self.K
        if kind in ("CuDNNGRU", "CuDNNLSTM"):
            assert self.dialect == "keras2"
            from tf_keras.src.layers.rnn.cudnn_gru import CuDNNGRU
            from tf_keras.src.layers.rnn.cudnn_lstm import CuDNNLSTM

            return {"CuDNNGRU": CuDNNGRU, "CuDNNLSTM": CuDNNLSTM}[kind]
        return getattr(K.layers, kind)

    def make_weights(self, kind, units, F, rng, scale, decimals, use_bias, cfg):
        n = gates_of(kind)
        ks = scale * 3.75 / math.sqrt(F)  # x ~ U(-2,2): input pre-activations std ~ 2.5*scale
        rs = scale * 2.0 / math.sqrt(units)
        kernel = q(rng.uniform(-ks, ks, (F, n * units)), decimals)
        rec = q(rng.uniform(-rs, rs, (units, n * units)), decimals)
        out = [("kernel", kernel), ("recurrent_kernel", rec)]
        if use_bias:
            if kind in ("CuDNNGRU", "CuDNNLSTM"):
                bshape = (2 * n * units,)
            elif kind in ("GRU", "GRUCell") and cfg.get("reset_after", True):
                bshape = (2, n * units)
            else:
                bshape = (n * units,)
            out.append(("bias", q(rng.uniform(-scale, scale, bshape), decimals)))
        return out

    def build_layer(self, kind, kw, name, build_shape, stateful, cls=None):
        cls = cls or self.layer_class(kind)
        kw = dict(kw)
        kw["name"] = name
        if stateful and self.dialect == "keras2":
            kw["batch_input_shape"] = tuple(build_shape)
        layer = cls(**kw)
        if stateful and self.dialect == "keras3":
            layer(self.K.Input(batch_shape=tuple(build_shape)))
        else:
            layer.build(tuple(build_shape))
        return layer

    def set_weights(self, layer, weights):
        vars_ = layer.trainable_weights or layer.weights  # trainable=False cases
        assert len(vars_) == len(weights), ([v.name for v in vars_], [n for n, _ in weights])
        for v, (wname, arr) in zip(vars_, weights):
            assert wname in v.name, (v.name, wname)
            assert tuple(v.shape) == arr.shape, (v.name, v.shape, arr.shape)
        layer.set_weights([a for _, a in weights])
        got = layer.get_weights()
        assert len(got) == len(weights)
        for g, (_, a) in zip(got, weights):
            assert np.array_equal(g, a)

    # ---- case runner ------------------------------------------------------------------------
    def add(self, file, name, kind, kw, *, B=3, T=5, F=4, scale=1.0, xscale=1.0, decimals=3,
            init_state=False, mask=None, calls=None, note=None, tolerance=None,
            losses=False, constraints=False, weight_fn=None, layer_cls=None):
        """Build and run one case.

        calls: None for one plain call, or a list of dicts with optional keys
        reset ("none" | "zeros" | "random"), init_state (bool), mask (pattern name).
        """
        assert name not in self.names, name
        self.names.add(name)
        if self.groups is not None and file not in self.groups:
            return None
        K, tf = self.K, self.tf
        rng = rng_for(f"{self.dialect}/{name}")
        kw = dict(kw)
        is_cell = kind in CELL_KINDS
        is_cudnn = kind.startswith("CuDNN")
        # keras_semantics.md §3.5 / §12.14: base_cudnn_rnn.py does reverse(inputs, 1) for
        # go_backwards, which with time_major=True is the BATCH axis; time runs forward.
        batch_reverse = is_cudnn and bool(kw.get("time_major")) and bool(kw.get("go_backwards"))
        units = kw["units"]
        n_states = 2 if "LSTM" in kind else 1
        time_major = bool(kw.get("time_major", False))
        stateful = bool(kw.get("stateful", False))
        use_bias = kw.get("use_bias", True)
        if is_cell:
            build_shape = (B, F)
        else:
            build_shape = (T, B, F) if time_major else (B, T, F)
        layer = self.build_layer(kind, kw, name, build_shape, stateful, cls=layer_cls)
        wkw = kw
        if layer_cls is not None and "reset_after" in layer.get_config():
            wkw = dict(kw, reset_after=layer.get_config()["reset_after"])
        weights = self.make_weights(kind, units, F, rng, scale, decimals, use_bias, wkw)
        if weight_fn is not None:
            weights = [(n_, weight_fn(n_, a)) for n_, a in weights]
        self.set_weights(layer, weights)
        constrained = self.constrained_weights(layer, weights) if constraints else None
        config = layer.get_config()

        # Reference layer for CuDNN: the native layer with Keras' own h5 converter applied.
        run_layer = layer
        ref_weights = weights
        if is_cudnn:
            from tf_keras.src.saving.legacy import hdf5_format

            native_kind = kind[len("CuDNN"):]
            nkw = {k: v for k, v in kw.items() if k != "unit_forget_bias"}
            if batch_reverse:
                nkw["go_backwards"] = False
            if native_kind == "GRU":
                nkw.update(reset_after=True, activation="tanh", recurrent_activation="sigmoid")
            else:
                nkw.update(activation="tanh", recurrent_activation="sigmoid")
            run_layer = self.build_layer(native_kind, nkw, name + "_native", build_shape, stateful)
            conv = hdf5_format.preprocess_weights_for_loading(
                run_layer, [a for _, a in weights], original_keras_version="2.21.0",
                original_backend="tensorflow")
            mine = cudnn_to_native_numpy(kind, [a for _, a in weights])
            for a, b in zip(conv, mine):
                assert a.shape == b.shape and np.array_equal(a, b), "converter mismatch"
            run_layer.set_weights(conv)
            ref_weights = list(zip(["kernel", "recurrent_kernel", "bias"], conv))
            note = ((note + " ") if note else "") + (
                f"Reference produced on CPU by converting the {kind}-layout weights with tf_keras "
                f"hdf5_format.preprocess_weights_for_loading (_convert_rnn_weights) into "
                f"{native_kind}({'reset_after=True, ' if native_kind == 'GRU' else ''}"
                f"activation='tanh', recurrent_activation='sigmoid') with identical flags and "
                f"running that layer (CuDNN layers cannot run without a GPU).")
        elif self.dialect == "keras2" and not is_cell:
            fused = getattr(layer, "_could_use_gpu_kernel", None)
            if fused is not None:
                path = ("fused standard_gru/standard_lstm path (_could_use_gpu_kernel=True) on CPU"
                        if fused else "generic backend.rnn loop over the cell")
                note = ((note + " ") if note else "") + f"Keras path: {path}."

        # ---- calls ----
        if calls is None:
            calls = [{"reset": "none", "init_state": init_state, "mask": mask}]
        ref = Ref(self)
        ref_cfg = dict(run_layer.get_config()) if not is_cell else dict(config)
        ref_cfg.setdefault("reset_after", True)
        ref_w = {k: v for k, v in ref_weights}
        ref_kind = kind.replace("CuDNN", "")
        stored = [np.zeros((B, units)) for _ in range(n_states)]
        out_calls = []
        maxdiff = 0.0
        for ci, c in enumerate(calls):
            crng = rng_for(f"{self.dialect}/{name}/call{ci}")
            x = q(crng.uniform(-2.0 * xscale, 2.0 * xscale, build_shape), decimals)
            init = []
            if c.get("init_state"):
                lo = [1.0, 2.0]
                init = [q(crng.uniform(-lo[k], lo[k], (B, units)), decimals)
                        for k in range(n_states)]
            reset = c.get("reset", "none")
            reset_field = None
            if reset == "zeros":
                run_layer.reset_states()
                reset_field = []
                stored = [np.zeros((B, units)) for _ in range(n_states)]
            elif reset == "random":
                assert self.dialect == "keras2"
                vals = [q(crng.uniform(-1, 1, (B, units)), decimals) for _ in range(n_states)]
                run_layer.reset_states(vals)
                reset_field = [tensor(v) for v in vals]
                stored = [v.astype(np.float64) for v in vals]
            m = None
            if c.get("mask") is not None:
                m = np.asarray(MASKS[c["mask"]], dtype=np.int64)
                assert m.shape == (B, T), (m.shape, B, T)

            # --- Keras ---
            if is_cell:
                st = [tf.constant(s) for s in init] if init else [
                    tf.zeros((B, units)) for _ in range(n_states)]
                if not init:
                    init = [np.zeros((B, units), np.float32) for _ in range(n_states)]
                out, new_states = layer(tf.constant(x), st, training=False)
                results = [out] + list(new_states)
            else:
                kwargs = {"training": False}
                if m is not None:
                    kwargs["mask"] = tf.constant(m.astype(bool))
                if init:
                    kwargs["initial_state"] = [tf.constant(s) for s in init]
                xin = x[:, ::-1].copy() if batch_reverse else x
                res = run_layer(tf.constant(xin), **kwargs)
                results = list(res) if isinstance(res, (list, tuple)) else [res]
            results = [np.asarray(r, dtype=np.float32) for r in results]
            names = ["output", "state_h", "state_c"][: len(results)]

            # --- float64 model ---
            x64 = x.astype(np.float64)
            if is_cell:
                st = [s.astype(np.float64) for s in init]
                hn, ns = ref.step_fn(ref_kind)(ref_cfg, ref_w, x64, st)
                expect = [hn] + ns
            else:
                xb = np.transpose(x64, (1, 0, 2)) if time_major else x64
                if batch_reverse:
                    xb = xb[::-1]
                if init:
                    if stateful and self.dialect == "keras2" and any(np.any(s != 0) for s in stored):
                        st = stored  # K2 quirk: non-zero stored states win over initial_state
                    else:
                        st = [s.astype(np.float64) for s in init]
                else:
                    st = stored if stateful else [np.zeros((B, units)) for _ in range(n_states)]
                rc = dict(ref_cfg, go_backwards=False) if batch_reverse else ref_cfg
                seq, last, fin = ref.run_layer(ref_kind, rc, ref_w, xb, st, m)
                if stateful:
                    stored = fin
                if ref_cfg.get("return_sequences"):
                    o = np.transpose(seq, (1, 0, 2)) if time_major else seq
                else:
                    o = last
                expect = [o] + (fin if ref_cfg.get("return_state") else [])
            assert len(expect) == len(results), (name, len(expect), len(results))
            for e, r in zip(expect, results):
                assert e.shape == r.shape, (name, e.shape, r.shape)
                maxdiff = max(maxdiff, float(np.max(np.abs(e - r))) if r.size else 0.0)

            out_calls.append({
                "reset_states": reset_field,
                "input": tensor(x),
                "mask": mask_tensor(m) if m is not None else None,
                "initial_state": [tensor(s) for s in init],
                "training": False,
                "outputs": [dict(name=nm, **tensor(r)) for nm, r in zip(names, results)],
            })

        if maxdiff > 1e-3:
            if os.environ.get("GEN_DEBUG"):
                print("DEBUG", name, maxdiff, [np.abs(r).max() for r in results])
            else:
                raise AssertionError(f"{name}: Keras and the float64 model disagree by {maxdiff}")
        case = {
            "name": name,
            "layer": jsonable(self.K.layers.serialize(layer)),
            "input_size": F,
            "weights": [{"name": n_, "shape": list(a.shape), "data": f32_list(a)}
                        for n_, a in weights],
        }
        tol = DEFAULT_TOL if tolerance is None else tolerance[0]
        reason = None if tolerance is None else tolerance[1]
        if maxdiff > 2e-6 and tolerance is None:
            mag = max(float(np.max(np.abs(o["data"]))) if o["data"] else 0.0
                      for cl in out_calls for o in cl["outputs"])
            tol = float(f"{max(DEFAULT_TOL, 5 * maxdiff):.0e}")
            if tol < 5 * maxdiff:
                tol = float(f"{tol * 2:.0e}")
            reason = (f"Keras float32 result differs from an exact float64 evaluation of the same "
                      f"equations by up to {maxdiff:.2e} (outputs up to {mag:.3g} in magnitude)")
        case["tolerance"] = tol
        if reason:
            case["tolerance_reason"] = reason
        if note:
            case["note"] = note
        case["calls"] = out_calls
        if losses:
            assert not is_cudnn
            case["losses"] = self.layer_losses(layer, weights, names, results)
        if constraints:
            case["constrained_weights"] = constrained
        self.cases.setdefault(file, []).append(case)
        self.check.append((file, name, maxdiff, tol))
        if "hard_sigmoid" == config.get("recurrent_activation") and ref.pre_sigma:
            p = np.concatenate(ref.pre_sigma)
            bp = 2.5 if self.dialect == "keras2" else 3.0
            self.hs_coverage.append((name, float(p.min()), float(p.max()),
                                     float(np.mean(p < -bp)), float(np.mean(p > bp))))
        return case

    # ---- regularizers / constraints / initializers ------------------------------------------
    def _regularizer_of(self, layer, wname):
        cell = getattr(layer, "cell", layer)
        attr = {"kernel": "kernel_regularizer", "recurrent_kernel": "recurrent_regularizer",
                "bias": "bias_regularizer"}[wname]
        return getattr(cell, attr, None)

    @staticmethod
    def np_regularizer(reg, x):
        """float64 evaluation of keras_semantics.md §11.1 (independent check)."""
        x = np.asarray(x, dtype=np.float64)
        cls = type(reg).__name__
        cfg = reg.get_config()
        if cls in ("L1", "L2", "L1L2"):
            l1 = float(np.float32(cfg.get("l1", 0.0)))
            l2 = float(np.float32(cfg.get("l2", 0.0)))
            return l1 * np.abs(x).sum() + l2 * np.square(x).sum()
        if cls == "OrthogonalRegularizer":
            rows = cfg["mode"] == "rows"
            v = x / np.maximum(np.linalg.norm(x, axis=1 if rows else 0, keepdims=True), 1e-12)
            p = v @ v.T if rows else v.T @ v
            n = p.shape[0]
            p = p * (1.0 - np.eye(n))
            return float(np.float32(cfg["factor"])) * 0.5 * np.abs(p).sum() / (n * (n - 1) / 2)
        raise AssertionError(f"no float64 model for regularizer {cls}")

    def layer_losses(self, layer, weights, out_names, results):
        """`layer.losses` after the last call, named by construction (see README)."""
        got = [float(np.float32(v)) for v in layer.losses]
        expect = []
        act = getattr(layer, "activity_regularizer", None)
        if act is not None:
            for nm, r in zip(out_names, results):
                expect.append(("activity:" + nm, self.np_regularizer(act, r) / max(r.shape[0], 1)))
        frozen_counts = self.dialect == "keras2" or layer.trainable
        for wname, arr in weights:
            reg = self._regularizer_of(layer, wname)
            if reg is not None and frozen_counts:
                expect.append((wname, self.np_regularizer(reg, arr)))
        assert len(got) == len(expect), (layer.name, got, [e[0] for e in expect])
        out = []
        for v, (nm, e) in zip(got, expect):
            rel = abs(v - e) / max(abs(e), 1e-6)
            self.loss_check.append((layer.name, nm, rel))
            if rel > 1e-4:
                raise AssertionError(f"{layer.name}: loss {nm} keras {v} vs float64 model {e}")
            out.append({"name": nm, "value": float(str(np.float32(v)))})
        return out

    def np_constraint(self, c, w):
        """float32 evaluation of keras_semantics.md §11.3 (independent check)."""
        cls = type(c).__name__
        cfg = c.get_config()
        w = np.asarray(w, dtype=np.float32)
        eps = np.float32(1e-7)
        if cls == "NonNeg":
            return (w * (w >= 0).astype(np.float32) if self.dialect == "keras2"
                    else np.maximum(w, np.float32(0)))
        axis = cfg.get("axis", 0)
        axis = tuple(axis) if isinstance(axis, (list, tuple)) else axis
        n = np.sqrt(np.sum(np.square(w), axis=axis, keepdims=True))
        if cls == "MaxNorm":
            return w * (np.clip(n, 0, np.float32(cfg["max_value"])) / (eps + n))
        if cls == "UnitNorm":
            return w / (eps + n)
        if cls == "MinMaxNorm":
            r = np.float32(cfg["rate"])
            d = r * np.clip(n, np.float32(cfg["min_value"]), np.float32(cfg["max_value"])) + \
                (np.float32(1) - r) * n
            return w * (d / (eps + n))
        raise AssertionError(f"no model for constraint {cls}")

    def constrained_weights(self, layer, weights):
        tf = self.tf
        vars_ = layer.trainable_weights if layer.trainable else layer.weights
        out = []
        for v, (wname, arr) in zip(vars_, weights):
            c = getattr(v, "constraint", None)
            if c is None:
                new = arr
            else:
                new = np.asarray(c(tf.convert_to_tensor(v)), dtype=np.float32)
                mine = self.np_constraint(c, arr)
                d = float(np.max(np.abs(mine.astype(np.float64) - new)))
                zs = new == 0
                sign_mismatch = int(np.sum(np.signbit(new[zs]) != np.signbit(mine[zs])))
                self.constraint_check.append((layer.name, wname, type(c).__name__, d,
                                              sign_mismatch, int(np.sum(np.signbit(new[zs])))))
                if d > 1e-5:
                    raise AssertionError(f"{layer.name}/{wname}: constraint model differs by {d}")
            out.append({"name": wname, "shape": list(new.shape), "data": f32_list(new)})
        return out

    def add_init(self, file, name, kind, kw, *, F, B=2, T=3, note=None):
        """Initializer-statistics case: build only, no calls, no weights."""
        assert name not in self.names, name
        self.names.add(name)
        if self.groups is not None and file not in self.groups:
            return None
        is_cell = kind in CELL_KINDS
        build_shape = (B, F) if is_cell else (B, T, F)
        layer = self.build_layer(kind, kw, name, build_shape, False)
        cell = layer if hasattr(layer, "kernel_initializer") else layer.cell
        n_blocks = gates_of(kind)
        stats = []
        vars_ = layer.weights
        for v in vars_:
            wname = [k for k in ("recurrent_kernel", "kernel", "bias") if k in v.name][0]
            a = np.asarray(v.numpy(), dtype=np.float64)
            init = getattr(cell, {"kernel": "kernel_initializer",
                                  "recurrent_kernel": "recurrent_initializer",
                                  "bias": "bias_initializer"}[wname])
            gain = float(init.get_config().get("gain", 1.0)) \
                if type(init).__name__.startswith("Orthogonal") else 1.0
            st = {"name": wname, "shape": list(a.shape), "n": int(a.size),
                  "mean": float(a.mean()), "std": float(a.std()),
                  "min": float(a.min()), "max": float(a.max()),
                  "row_orthogonality": None, "col_orthogonality": None}
            if a.ndim == 2:
                r, c = a.shape
                g2 = gain * gain
                if r <= c:
                    st["row_orthogonality"] = float(np.max(np.abs(a @ a.T / g2 - np.eye(r))))
                if r >= c:
                    st["col_orthogonality"] = float(np.max(np.abs(a.T @ a / g2 - np.eye(c))))
            nb = n_blocks * (2 if kind.startswith("CuDNN") and wname == "bias" else 1)
            blocks = np.split(a.reshape(-1, a.shape[-1]), nb, axis=-1)
            st["blocks"] = [{"n": int(b.size), "mean": float(b.mean()), "std": float(b.std()),
                             "min": float(b.min()), "max": float(b.max())} for b in blocks]
            stats.append(st)
        case = {"name": name, "layer": jsonable(self.K.layers.serialize(layer)),
                "input_size": F}
        if note:
            case["note"] = note
        case["initializer_stats"] = stats
        case["calls"] = []
        self.cases.setdefault(file, []).append(case)
        return case

    # ---- writing ----------------------------------------------------------------------------
    def write(self, outdir):
        os.makedirs(outdir, exist_ok=True)
        for old in os.listdir(outdir):
            if old.endswith(".json") and (self.groups is None or old[:-5] in self.groups):
                os.remove(os.path.join(outdir, old))
        for file, cases in sorted(self.cases.items()):
            head = {"format": 1, "dialect": self.dialect, "versions": self.versions,
                    "generator": "tests/keras/generate.py"}
            text = json.dumps(head, separators=(",", ":"))[:-1] + ',"cases":[\n'
            text += ",\n".join(json.dumps(c, separators=(",", ":"), allow_nan=False)
                               for c in cases)
            text += "\n]}\n"
            with open(os.path.join(outdir, file + ".json"), "w", encoding="utf-8") as fh:
                fh.write(text)


# --------------------------------------------------------------------------------------------
# Case matrix
# --------------------------------------------------------------------------------------------
def gru_kw(units, **kw):
    d = {"units": units}
    d.update(kw)
    return d


def build_cases(g):
    k2 = g.dialect == "keras2"
    impls = (1, 2) if k2 else (None,)

    def impl_kw(impl):
        return {} if impl is None else {"implementation": impl}

    # ---------------- GRU ----------------
    for ra in (True, False):
        rn = "ra" if ra else "rb"  # reset after / reset before
        for impl in impls:
            for ub in (True, False):
                nm = f"gru_{rn}" + (f"_impl{impl}" if impl else "") + ("_bias" if ub else "_nobias")
                g.add("gru", nm, "GRU", gru_kw(4, reset_after=ra, use_bias=ub,
                                                return_sequences=True, return_state=True,
                                                **impl_kw(impl)), B=3, T=6, F=5)
        for rs in (False, True):
            for rst in (False, True):
                nm = f"gru_{rn}_seq{int(rs)}_state{int(rst)}"
                g.add("gru", nm, "GRU", gru_kw(5, reset_after=ra, return_sequences=rs,
                                                return_state=rst), B=2, T=7, F=3)
        g.add("gru", f"gru_{rn}_go_backwards_seq", "GRU",
              gru_kw(4, reset_after=ra, go_backwards=True, return_sequences=True,
                     return_state=True), B=3, T=6, F=2)
        g.add("gru", f"gru_{rn}_go_backwards_last", "GRU",
              gru_kw(4, reset_after=ra, go_backwards=True), B=2, T=5, F=3)
        g.add("gru", f"gru_{rn}_initial_state", "GRU",
              gru_kw(6, reset_after=ra, return_sequences=True, return_state=True),
              B=3, T=5, F=4, init_state=True)
        g.add("gru", f"gru_{rn}_initial_state_go_backwards", "GRU",
              gru_kw(3, reset_after=ra, go_backwards=True, return_sequences=True,
                     return_state=True), B=2, T=4, F=5, init_state=True)
        g.add("gru", f"gru_{rn}_units1", "GRU",
              gru_kw(1, reset_after=ra, return_sequences=True, return_state=True), B=2, T=6, F=3)
        g.add("gru", f"gru_{rn}_b1_t1", "GRU",
              gru_kw(3, reset_after=ra, return_sequences=True, return_state=True), B=1, T=1, F=4)
        g.add("gru", f"gru_{rn}_f_eq_units", "GRU",
              gru_kw(4, reset_after=ra, return_sequences=True), B=2, T=5, F=4)
        g.add("gru", f"gru_{rn}_unroll", "GRU",
              gru_kw(3, reset_after=ra, unroll=True, return_sequences=True, return_state=True),
              B=2, T=5, F=4, init_state=True)
        g.add("gru", f"gru_{rn}_batch16", "GRU",
              gru_kw(16, reset_after=ra, return_sequences=True, return_state=True),
              B=16, T=4, F=10)
        g.add("gru", f"gru_{rn}_hard_sigmoid", "GRU",
              gru_kw(4, reset_after=ra, recurrent_activation="hard_sigmoid",
                     return_sequences=True, return_state=True), B=3, T=6, F=5, scale=1.3)
        if k2:
            g.add("gru", f"gru_{rn}_time_major", "GRU",
                  gru_kw(4, reset_after=ra, time_major=True, return_sequences=True,
                         return_state=True), B=3, T=5, F=2)
            g.add("gru", f"gru_{rn}_time_major_go_backwards", "GRU",
                  gru_kw(3, reset_after=ra, time_major=True, go_backwards=True,
                         return_sequences=True, return_state=True), B=2, T=4, F=3,
                  init_state=True)
    if k2:
        v1 = dict(activation="tanh", recurrent_activation="hard_sigmoid", reset_after=False,
                  implementation=1)
        note = "tf.compat.v1.keras.layers.GRU defaults set explicitly on tf_keras GRU."
        g.add("gru", "gru_v1_defaults", "GRU", gru_kw(5, **v1, return_sequences=True,
                                                       return_state=True),
              B=3, T=6, F=4, note=note)
        g.add("gru", "gru_v1_defaults_initial_state_backwards", "GRU",
              gru_kw(3, **v1, go_backwards=True, return_sequences=True, return_state=True),
              B=2, T=5, F=6, init_state=True, note=note)
        g.add("gru", "gru_v1_defaults_last", "GRU", gru_kw(4, **v1), B=4, T=8, F=3, note=note)
    g.add("gru", "gru_ra_units64_t50", "GRU",
          gru_kw(64, return_sequences=True, return_state=True), B=2, T=50, F=16)
    g.add("gru", "gru_rb_units32_t20", "GRU",
          gru_kw(32, reset_after=False, return_sequences=True, return_state=True),
          B=2, T=20, F=12)
    g.add("gru", "gru_ra_long_t200", "GRU",
          gru_kw(8, return_sequences=True, return_state=True), B=2, T=200, F=3)

    # ---------------- LSTM ----------------
    for impl in impls:
        for ub in (True, False):
            nm = "lstm" + (f"_impl{impl}" if impl else "") + ("_bias" if ub else "_nobias")
            g.add("lstm", nm, "LSTM", gru_kw(4, use_bias=ub, return_sequences=True,
                                              return_state=True, **impl_kw(impl)),
                  B=3, T=6, F=5)
    g.add("lstm", "lstm_no_unit_forget_bias", "LSTM",
          gru_kw(3, unit_forget_bias=False, return_sequences=True, return_state=True),
          B=2, T=5, F=4)
    for rs in (False, True):
        for rst in (False, True):
            g.add("lstm", f"lstm_seq{int(rs)}_state{int(rst)}", "LSTM",
                  gru_kw(5, return_sequences=rs, return_state=rst), B=2, T=7, F=3)
    g.add("lstm", "lstm_go_backwards_seq", "LSTM",
          gru_kw(4, go_backwards=True, return_sequences=True, return_state=True), B=3, T=6, F=2)
    g.add("lstm", "lstm_go_backwards_last", "LSTM", gru_kw(4, go_backwards=True), B=2, T=5, F=3)
    g.add("lstm", "lstm_initial_state", "LSTM",
          gru_kw(6, return_sequences=True, return_state=True), B=3, T=5, F=4, init_state=True)
    g.add("lstm", "lstm_initial_state_go_backwards", "LSTM",
          gru_kw(3, go_backwards=True, return_sequences=True, return_state=True),
          B=2, T=4, F=5, init_state=True)
    g.add("lstm", "lstm_units1", "LSTM", gru_kw(1, return_sequences=True, return_state=True),
          B=2, T=6, F=3)
    g.add("lstm", "lstm_b1_t1", "LSTM", gru_kw(3, return_sequences=True, return_state=True),
          B=1, T=1, F=4)
    g.add("lstm", "lstm_f_eq_units", "LSTM", gru_kw(4, return_sequences=True), B=2, T=5, F=4)
    g.add("lstm", "lstm_unroll", "LSTM",
          gru_kw(3, unroll=True, return_sequences=True, return_state=True), B=2, T=5, F=4,
          init_state=True)
    g.add("lstm", "lstm_batch16", "LSTM", gru_kw(16, return_sequences=True, return_state=True),
          B=16, T=4, F=10)
    g.add("lstm", "lstm_hard_sigmoid", "LSTM",
          gru_kw(4, recurrent_activation="hard_sigmoid", return_sequences=True,
                 return_state=True), B=3, T=6, F=5, scale=1.3)
    if k2:
        g.add("lstm", "lstm_time_major", "LSTM",
              gru_kw(4, time_major=True, return_sequences=True, return_state=True),
              B=3, T=5, F=2)
        g.add("lstm", "lstm_time_major_go_backwards", "LSTM",
              gru_kw(3, time_major=True, go_backwards=True, return_sequences=True,
                     return_state=True), B=2, T=4, F=3, init_state=True)
        v1 = dict(activation="tanh", recurrent_activation="hard_sigmoid", implementation=1)
        note = "tf.compat.v1.keras.layers.LSTM defaults set explicitly on tf_keras LSTM."
        g.add("lstm", "lstm_v1_defaults", "LSTM",
              gru_kw(5, **v1, return_sequences=True, return_state=True), B=3, T=6, F=4,
              note=note)
        g.add("lstm", "lstm_v1_defaults_initial_state_backwards", "LSTM",
              gru_kw(3, **v1, go_backwards=True, return_sequences=True, return_state=True),
              B=2, T=5, F=6, init_state=True, note=note)
    g.add("lstm", "lstm_units64_t50", "LSTM",
          gru_kw(64, return_sequences=True, return_state=True), B=2, T=50, F=16)
    g.add("lstm", "lstm_long_t200", "LSTM", gru_kw(8, return_sequences=True, return_state=True),
          B=2, T=200, F=3)

    # ---------------- large (units 256, 2-decimal weights to keep the file small) -----------
    # One units-256 GRU per dialect (K2 reset_after=True, K3 reset_after=False) in large.json,
    # and an LSTM with 128 units (in lstm.json, to keep large.json under 1.5 MB).
    ra256 = k2
    g.add("large", f"gru_{'ra' if ra256 else 'rb'}_units256", "GRU",
          gru_kw(256, reset_after=ra256, return_sequences=True, return_state=True),
          B=1, T=3, F=8, decimals=2)
    g.add("lstm", "lstm_units128", "LSTM", gru_kw(128, return_sequences=True,
                                                   return_state=True),
          B=2, T=3, F=8, decimals=2)

    # ---------------- CuDNN (K2 only) ----------------
    if k2:
        for kind in ("CuDNNGRU", "CuDNNLSTM"):
            p = kind.lower()
            g.add("cudnn", f"{p}_default", kind, {"units": 4}, B=3, T=6, F=5)
            g.add("cudnn", f"{p}_seq_state", kind,
                  {"units": 4, "return_sequences": True, "return_state": True}, B=3, T=6, F=5)
            g.add("cudnn", f"{p}_state_only", kind, {"units": 5, "return_state": True},
                  B=2, T=4, F=3)
            g.add("cudnn", f"{p}_go_backwards", kind,
                  {"units": 3, "go_backwards": True, "return_sequences": True,
                   "return_state": True}, B=2, T=5, F=6)
            g.add("cudnn", f"{p}_initial_state", kind,
                  {"units": 4, "return_sequences": True, "return_state": True},
                  B=3, T=5, F=2, init_state=True)
            g.add("cudnn", f"{p}_initial_state_go_backwards", kind,
                  {"units": 3, "go_backwards": True, "return_state": True},
                  B=2, T=4, F=5, init_state=True)
            g.add("cudnn", f"{p}_units1", kind,
                  {"units": 1, "return_sequences": True, "return_state": True}, B=2, T=5, F=3)
            g.add("cudnn", f"{p}_b1_t1", kind,
                  {"units": 3, "return_sequences": True, "return_state": True}, B=1, T=1, F=4)
            g.add("cudnn", f"{p}_time_major", kind,
                  {"units": 4, "time_major": True, "return_sequences": True,
                   "return_state": True}, B=2, T=5, F=3)
            g.add("cudnn", f"{p}_units32_t20", kind,
                  {"units": 32, "return_sequences": True, "return_state": True},
                  B=2, T=20, F=12)
            g.add("cudnn", f"{p}_stateful", kind,
                  {"units": 3, "stateful": True, "return_sequences": True, "return_state": True},
                  B=2, T=4, F=5,
                  calls=[{"reset": "none"}, {"reset": "none"}, {"reset": "random"}])
        g.add("cudnn", "cudnnlstm_no_unit_forget_bias", "CuDNNLSTM",
              {"units": 3, "unit_forget_bias": False, "return_state": True}, B=2, T=4, F=5)

    # ---------------- cells ----------------
    for ra in (True, False):
        rn = "ra" if ra else "rb"
        for impl in impls:
            for ub in (True, False):
                nm = f"grucell_{rn}" + (f"_impl{impl}" if impl else "") + \
                    ("_bias" if ub else "_nobias")
                g.add("cells", nm, "GRUCell", gru_kw(4, reset_after=ra, use_bias=ub,
                                                      **impl_kw(impl)),
                      B=3, F=5, init_state=True)
        g.add("cells", f"grucell_{rn}_zero_state", "GRUCell", gru_kw(3, reset_after=ra),
              B=2, F=4)
        g.add("cells", f"grucell_{rn}_units1_b1", "GRUCell", gru_kw(1, reset_after=ra),
              B=1, F=3, init_state=True)
        g.add("cells", f"grucell_{rn}_hard_sigmoid", "GRUCell",
              gru_kw(5, reset_after=ra, recurrent_activation="hard_sigmoid"), B=4, F=6,
              init_state=True, scale=1.3)
    for impl in impls:
        for ub in (True, False):
            nm = "lstmcell" + (f"_impl{impl}" if impl else "") + ("_bias" if ub else "_nobias")
            g.add("cells", nm, "LSTMCell", gru_kw(4, use_bias=ub, **impl_kw(impl)),
                  B=3, F=5, init_state=True)
    g.add("cells", "lstmcell_zero_state", "LSTMCell", gru_kw(3), B=2, F=4)
    g.add("cells", "lstmcell_units1_b1", "LSTMCell", gru_kw(1), B=1, F=3, init_state=True)
    g.add("cells", "lstmcell_hard_sigmoid", "LSTMCell",
          gru_kw(5, recurrent_activation="hard_sigmoid"), B=4, F=6, init_state=True, scale=1.3)
    g.add("cells", "grucell_units64", "GRUCell", gru_kw(64), B=4, F=16, init_state=True)
    g.add("cells", "lstmcell_units64", "LSTMCell", gru_kw(64), B=4, F=16, init_state=True)

    # ---------------- masks ----------------
    mask_layers = [("gru_ra", "GRU", {"reset_after": True}),
                   ("gru_rb", "GRU", {"reset_after": False}),
                   ("lstm", "LSTM", {})]
    for lp, kind, extra in mask_layers:
        for mk in ("right", "left", "holes", "fullrow"):
            for h0 in (False, True):
                for gb in (False, True):
                    nm = f"mask_{lp}_{mk}" + ("_h0" if h0 else "") + ("_backwards" if gb else "")
                    g.add("masks", nm, kind,
                          gru_kw(3, **extra, go_backwards=gb, return_sequences=True,
                                 return_state=True),
                          B=4, T=6, F=4, mask=mk, init_state=h0)
            for gb in (False, True):
                nm = f"mask_{lp}_{mk}_zero_output" + ("_backwards" if gb else "")
                g.add("masks", nm, kind,
                      gru_kw(3, **extra, go_backwards=gb, zero_output_for_mask=True,
                             return_sequences=True, return_state=True),
                      B=4, T=6, F=4, mask=mk, init_state=True)
        for zo in (False, True):
            nm = f"mask_{lp}_mixed_last" + ("_zero_output" if zo else "")
            g.add("masks", nm, kind,
                  gru_kw(3, **extra, zero_output_for_mask=zo, return_state=True),
                  B=4, T=6, F=4, mask="mixed", init_state=True)
        g.add("masks", f"mask_{lp}_mixed_unroll", kind,
              gru_kw(3, **extra, unroll=True, return_sequences=True, return_state=True),
              B=4, T=6, F=4, mask="mixed", init_state=True)
    if k2:
        v1 = dict(activation="tanh", recurrent_activation="hard_sigmoid", reset_after=False,
                  implementation=1)
        g.add("masks", "mask_gru_v1_defaults_mixed", "GRU",
              gru_kw(4, **v1, return_sequences=True, return_state=True),
              B=4, T=6, F=3, mask="mixed", init_state=True)
        g.add("masks", "mask_lstm_v1_defaults_mixed", "LSTM",
              gru_kw(4, activation="tanh", recurrent_activation="hard_sigmoid", implementation=1,
                     return_sequences=True, return_state=True),
              B=4, T=6, F=3, mask="mixed", init_state=True)

    # ---------------- stateful ----------------
    third = "random" if k2 else "zeros"
    for lp, kind, extra in mask_layers:
        g.add("stateful", f"stateful_{lp}", kind,
              gru_kw(4, **extra, stateful=True, return_sequences=True, return_state=True),
              B=3, T=4, F=5,
              calls=[{"reset": "none"}, {"reset": "none"}, {"reset": third}])
        g.add("stateful", f"stateful_{lp}_last", kind, gru_kw(3, **extra, stateful=True),
              B=2, T=5, F=3,
              calls=[{"reset": "none"}, {"reset": "none"}, {"reset": "zeros"}])
        g.add("stateful", f"stateful_{lp}_initial_state", kind,
              gru_kw(3, **extra, stateful=True, return_state=True), B=2, T=4, F=3,
              calls=[{"reset": "none", "init_state": True},
                     {"reset": "none", "init_state": True},
                     {"reset": "zeros", "init_state": True}],
              note=("K2 quirk: a passed initial_state is used only while every stored state is "
                    "exactly 0 (calls 1 and 3); in call 2 the stored states win."
                    if k2 else "K3: a passed initial_state is always used."))
        g.add("stateful", f"stateful_{lp}_mask_backwards", kind,
              gru_kw(3, **extra, stateful=True, go_backwards=True, return_sequences=True,
                     return_state=True), B=4, T=6, F=3,
              calls=[{"reset": "none", "mask": "holes"}, {"reset": "none", "mask": "fullrow"},
                     {"reset": third, "mask": "left"}])
    if k2:
        g.add("stateful", "stateful_gru_ra_time_major", "GRU",
              gru_kw(3, stateful=True, time_major=True, return_sequences=True,
                     return_state=True), B=2, T=4, F=3,
              calls=[{"reset": "none"}, {"reset": "none"}, {"reset": "random"}])

    # ---------------- activations ----------------
    for a in ACTIVATION_CANDIDATES:
        if not g.activation_accepted(a):
            continue
        unb = a in UNBOUNDED
        sc, xs, T = (0.5, 0.6, 4) if unb else (1.0, 1.0, 6)
        if a == "exponential":
            sc, xs, T = 0.35, 0.5, 3
        for lp, kind, extra in mask_layers:
            s2, x2 = sc, xs
            if a == "exponential" and kind == "LSTM":
                s2, x2 = 0.15, 0.3  # h = o*exp(c): keep the cell state small
            g.add("activations", f"act_{a}_{lp}", kind,
                  gru_kw(3, **extra, activation=a, return_sequences=True, return_state=True),
                  B=2, T=T, F=4, scale=s2, xscale=x2)
        g.add("activations", f"act_{a}_grucell", "GRUCell", gru_kw(3, activation=a),
              B=2, F=4, scale=sc, xscale=xs, init_state=True)
    for ra_name in RECURRENT_ACTIVATIONS:
        # A gate outside [0, 1] makes the GRU update z*h + (1-z)*hh expansive: keep those small.
        unb = ra_name in ("linear", "relu", "softplus")
        sc = 0.6 if unb else 1.3
        for lp, kind, extra in mask_layers:
            gsc, xs, T = sc, 1.0, 5
            if kind == "GRU" and unb:
                gsc, xs, T = 0.3, 0.5, 4
            g.add("activations", f"recact_{ra_name}_{lp}", kind,
                  gru_kw(3, **extra, recurrent_activation=ra_name, return_sequences=True,
                         return_state=True),
                  B=2, T=T, F=4, scale=gsc, xscale=xs, init_state=True)
        g.add("activations", f"recact_{ra_name}_lstmcell", "LSTMCell",
              gru_kw(3, recurrent_activation=ra_name), B=3, F=4, scale=sc, init_state=True)
    # hard_sigmoid everywhere, wide pre-activations across both K2 (+-2.5) and K3 (+-3) kinks
    for lp, kind, extra in mask_layers:
        g.add("activations", f"hard_sigmoid_both_{lp}", kind,
              gru_kw(4, **extra, activation="hard_sigmoid", recurrent_activation="hard_sigmoid",
                     return_sequences=True, return_state=True),
              B=3, T=6, F=5, scale=1.6, init_state=True)


def build_new_cases(g):
    """Regularizers, constraints, initializer statistics and quirks (README: format fields
    `losses`, `constrained_weights`, `initializer_stats`)."""
    k2 = g.dialect == "keras2"
    K = g.K
    R, C, I = K.regularizers, K.constraints, K.initializers
    mask_layers = [("gru_ra", "GRU", {"reset_after": True}),
                   ("gru_rb", "GRU", {"reset_after": False}),
                   ("lstm", "LSTM", {})]

    # ---------------- regularizers ----------------
    l1 = lambda: R.L1(0.01)  # noqa: E731
    l2 = lambda: R.L2(0.02)  # noqa: E731
    l1l2 = lambda: R.L1L2(l1=0.01, l2=0.02)  # noqa: E731
    orow = lambda: R.OrthogonalRegularizer(factor=0.01, mode="rows")  # noqa: E731
    ocol = lambda: R.OrthogonalRegularizer(factor=0.02, mode="columns")  # noqa: E731

    def regs(k=None, r=None, b=None, a=None):
        d = {}
        if k is not None:
            d["kernel_regularizer"] = k()
        if r is not None:
            d["recurrent_regularizer"] = r()
        if b is not None:
            d["bias_regularizer"] = b()
        if a is not None:
            d["activity_regularizer"] = a()
        return d

    def reg(name, kind, kw, **a):
        a.setdefault("B", 3)
        a.setdefault("T", 5)
        a.setdefault("F", 4)
        g.add("regularizers", name, kind, kw, losses=True, **a)

    reg("reg_gru_ra_seq_state", "GRU",
        gru_kw(4, return_sequences=True, return_state=True, **regs(l1, l2, l1l2, l1)))
    reg("reg_gru_rb_state", "GRU",
        gru_kw(4, reset_after=False, return_state=True, **regs(l2, l1l2, l1, l2)))
    reg("reg_gru_ra_last_activity_only", "GRU", gru_kw(3, **regs(a=l1l2)), B=2)
    reg("reg_gru_ra_seq_weights_only", "GRU",
        gru_kw(4, return_sequences=True, **regs(l1l2, l1, l2)))
    reg("reg_gru_rb_seq_state_h0", "GRU",
        gru_kw(3, reset_after=False, return_sequences=True, return_state=True,
               **regs(l1, l1, l1, l1l2)), init_state=True)
    reg("reg_lstm_seq_state", "LSTM",
        gru_kw(4, return_sequences=True, return_state=True, **regs(l1l2, l1, l2, l1)))
    reg("reg_lstm_state", "LSTM", gru_kw(4, return_state=True, **regs(l1, a=l1l2)))
    reg("reg_lstm_last", "LSTM", gru_kw(3, **regs(r=l2, b=l1l2, a=l2)))
    reg("reg_gru_ra_orthogonal", "GRU",
        gru_kw(4, return_sequences=True, **regs(orow, ocol, a=l1)))
    reg("reg_lstm_orthogonal", "LSTM", gru_kw(4, return_state=True, **regs(ocol, orow, l1)))
    reg("reg_gru_nobias_bias_regularizer", "GRU",
        gru_kw(3, use_bias=False, return_state=True, **regs(l1, b=l2, a=l2)),
        note="use_bias=False: the bias_regularizer has no weight to act on, so no bias loss.")
    reg("reg_gru_ra_mask_holes", "GRU",
        gru_kw(3, return_sequences=True, return_state=True, **regs(l2, a=l1)),
        B=4, T=6, mask="holes", init_state=True)
    reg("reg_lstm_mask_left", "LSTM",
        gru_kw(3, return_sequences=True, return_state=True, **regs(b=l1, a=l2)),
        B=4, T=6, mask="left")
    reg("reg_gru_strings", "GRU",
        gru_kw(3, kernel_regularizer="l1", recurrent_regularizer="l2", bias_regularizer="l2",
               activity_regularizer="l1", return_state=True),
        note="string identifiers 'l1'/'l2' (factor 0.01)")
    # cells: K2 cells do not serialize activity_regularizer (their get_config has no such key),
    # so only K3 cells carry an activity regularizer.
    act_cell = {} if k2 else {"a": l2}
    reg("reg_grucell_ra", "GRUCell", gru_kw(4, **regs(l1, l2, l1l2, **act_cell)),
        init_state=True)
    reg("reg_grucell_rb", "GRUCell", gru_kw(3, reset_after=False, **regs(l2, orow, l1)),
        init_state=True)
    reg("reg_lstmcell", "LSTMCell", gru_kw(4, **regs(l1l2, l1, l2, **({} if k2 else {"a": l1}))),
        init_state=True)
    frozen_note = ("trainable=False: " + (
        "Keras 2 still reports the weight penalties of frozen weights." if k2 else
        "Keras 3 reports weight penalties for trainable weights only, so only the activity "
        "losses remain."))
    reg("reg_gru_frozen", "GRU",
        gru_kw(3, trainable=False, return_state=True, **regs(l1, l2, l1l2, l1)), note=frozen_note)
    reg("reg_lstm_frozen_no_activity", "LSTM",
        gru_kw(3, trainable=False, return_sequences=True, **regs(l2, l1, l1l2)),
        note=frozen_note)
    if k2:
        reg("reg_lstm_l1_l2_string", "LSTM",
            gru_kw(3, kernel_regularizer="l1_l2", recurrent_regularizer="l1_l2",
                   activity_regularizer="l1_l2", return_state=True),
            note="Keras 2 string 'l1_l2' = L1L2(l1=0.01, l2=0.01) (keras_semantics.md §11.1); "
                 "Keras 3 refuses this string.")
        reg("reg_gru_time_major", "GRU",
            gru_kw(3, time_major=True, return_sequences=True, return_state=True,
                   **regs(l1, a=l1)), B=3, T=5,
            note="time_major: each activity penalty is divided by the size of that output's "
                 "first axis: T=5 for the (T,B,u) sequence, B=3 for state_h.")
        reg("reg_gru_impl1_hard_sigmoid", "GRU",
            gru_kw(3, implementation=1, recurrent_activation="hard_sigmoid",
                   return_sequences=True, **regs(l2, l1, l1, l2)))

    # ---------------- constraints ----------------
    def zeros_in(wname, a, negzero=np.float32(-0.0)):
        a = np.array(a, dtype=np.float32)
        flat = a.reshape(-1)
        flat[::7] = 0.0
        flat[3::11] = negzero
        if a.ndim == 2 and wname != "bias":
            a[:, 0] = 0.0                      # a zero column (axis-0 norm 0)
            a[1, :] = negzero                  # a -0.0 row (axis-1 norm 0)
        return a

    # K3 NonNeg is ops.maximum(w, 0): on TF CPU, maximum(-0.0, 0.0) gives +0.0 in the 8-wide
    # vectorised part and -0.0 in the scalar tail, so the sign of zero for a -0.0 input depends
    # on its position. The K3 non_neg cases therefore use +0.0 where the others use -0.0.
    k3_nonneg_note = ("K3 non_neg = ops.maximum(w, 0): these weights hold +0.0 instead of -0.0, "
                      "because TF's CPU maximum(-0.0, 0.0) returns +0.0 or -0.0 depending on the "
                      "element's position (vectorised body vs scalar tail).")

    def cons(kind, extra, spec):
        two_d_bias = kind in ("GRU",) and extra.get("reset_after", True)
        d = {}
        for wname, key in (("kernel", "kernel_constraint"),
                           ("recurrent_kernel", "recurrent_constraint"),
                           ("bias", "bias_constraint")):
            c = spec(wname, two_d_bias)
            if c is not None:
                d[key] = c
        return d

    cspecs = {
        "max_norm_default": lambda w, b2: C.MaxNorm(),
        "max_norm_05_axis0": lambda w, b2: C.MaxNorm(max_value=0.5, axis=0),
        "max_norm_05_axis1": lambda w, b2: (C.MaxNorm(max_value=0.5, axis=1)
                                           if (w != "bias" or b2) else None),
        "max_norm_1_axis01": lambda w, b2: (C.MaxNorm(max_value=1.0, axis=[0, 1])
                                           if (w != "bias" or b2) else
                                           C.MaxNorm(max_value=1.0, axis=0)),
        "unit_norm": lambda w, b2: C.UnitNorm(),
        "unit_norm_axis1": lambda w, b2: C.UnitNorm(axis=1) if w != "bias" else None,
        "min_max_norm": lambda w, b2: C.MinMaxNorm(min_value=0.2, max_value=0.8, rate=0.5),
        "non_neg": lambda w, b2: C.NonNeg(),
    }
    clayers = list(mask_layers) + ([("cudnngru", "CuDNNGRU", {})] if k2 else [])
    for cn, spec in cspecs.items():
        for lp, kind, extra in clayers:
            k3nn = cn == "non_neg" and not k2
            g.add("constraints", f"constraint_{cn}_{lp}", kind,
                  gru_kw(4, **extra, return_sequences=True, return_state=True,
                         **cons(kind, extra, spec)),
                  B=2, T=4, F=5, constraints=True,
                  weight_fn=(lambda w, a: zeros_in(w, a, np.float32(0.0))) if k3nn else zeros_in,
                  note=k3_nonneg_note if k3nn else None)
    if k2:
        g.add("constraints", "constraint_non_neg_cudnnlstm", "CuDNNLSTM",
              gru_kw(3, return_state=True, kernel_constraint=C.NonNeg(),
                     recurrent_constraint=C.NonNeg(), bias_constraint=C.NonNeg()),
              B=2, T=4, F=5, constraints=True, weight_fn=zeros_in)
        g.add("constraints", "constraint_max_norm_1_axis0_cudnnlstm", "CuDNNLSTM",
              gru_kw(3, return_state=True, kernel_constraint=C.MaxNorm(1.0),
                     recurrent_constraint=C.MaxNorm(1.0), bias_constraint=C.MaxNorm(1.0)),
              B=2, T=4, F=5, constraints=True, weight_fn=zeros_in)
    g.add("constraints", "constraint_kernel_only_gru_ra", "GRU",
          gru_kw(3, kernel_constraint=C.UnitNorm(axis=1)), B=2, T=4, F=5, constraints=True,
          weight_fn=zeros_in, note="only the kernel has a constraint; the others are unchanged")

    # ---------------- initializers (statistics only) ----------------
    F, U = 96, 48
    seeds = (1101, 1102, 1103)

    def same(factory):
        return lambda: tuple(factory(s) for s in seeds)

    inits = {
        "glorot_uniform": same(lambda s: I.GlorotUniform(seed=s)),
        "glorot_normal": same(lambda s: I.GlorotNormal(seed=s)),
        "he_uniform": same(lambda s: I.HeUniform(seed=s)),
        "he_normal": same(lambda s: I.HeNormal(seed=s)),
        "lecun_uniform": same(lambda s: I.LecunUniform(seed=s)),
        "lecun_normal": same(lambda s: I.LecunNormal(seed=s)),
        "random_uniform": same(lambda s: I.RandomUniform(-0.3, 0.3, seed=s)),
        "random_normal": same(lambda s: I.RandomNormal(mean=0.1, stddev=0.2, seed=s)),
        "truncated_normal": same(lambda s: I.TruncatedNormal(mean=0.0, stddev=0.3, seed=s)),
        "variance_scaling_fan_out_uniform": same(
            lambda s: I.VarianceScaling(scale=2.0, mode="fan_out", distribution="uniform",
                                        seed=s)),
        "variance_scaling_fan_out_untruncated_normal": same(
            lambda s: I.VarianceScaling(scale=2.0, mode="fan_out",
                                        distribution="untruncated_normal", seed=s)),
        "orthogonal_gain1": lambda: (I.Orthogonal(gain=1.0, seed=seeds[0]),
                                     I.Orthogonal(gain=1.0, seed=seeds[1]), I.Zeros()),
        "orthogonal_gain2_5": lambda: (I.Orthogonal(gain=2.5, seed=seeds[0]),
                                       I.Orthogonal(gain=2.5, seed=seeds[1]), I.Zeros()),
        "constant_0_7": lambda: (I.Constant(0.7), I.Constant(0.7), I.Constant(0.7)),
        "ones": lambda: (I.Ones(), I.Ones(), I.Ones()),
        "zeros": lambda: (I.Zeros(), I.Zeros(), I.Zeros()),
        "identity": lambda: (I.Identity(), I.Identity(), I.Zeros()),
    }
    lstm_note = ("LSTM unit_forget_bias=True (default): bias = concat(init((u,)), ones((u,)), "
                 "init((2u,))), each part initialised on its own shape.")
    for iname, mk in inits.items():
        for lp, kind, extra in (("gru_ra", "GRU", {}), ("lstm", "LSTM", {})):
            ki, ri, bi = mk()
            g.add_init("initializers", f"init_{iname}_{lp}", kind,
                       gru_kw(U, **extra, kernel_initializer=ki, recurrent_initializer=ri,
                              bias_initializer=bi), F=F,
                       note=lstm_note if kind == "LSTM" else None)
    ki, ri, bi = inits["glorot_uniform"]()
    g.add_init("initializers", "init_glorot_uniform_gru_rb", "GRU",
               gru_kw(U, reset_after=False, kernel_initializer=ki, recurrent_initializer=ri,
                      bias_initializer=bi), F=F, note="1-D bias (3u,): fan_in = fan_out = 3u")
    ki, ri, bi = inits["random_uniform"]()
    g.add_init("initializers", "init_random_uniform_lstm_no_unit_forget_bias", "LSTM",
               gru_kw(U, unit_forget_bias=False, kernel_initializer=ki,
                      recurrent_initializer=ri, bias_initializer=bi), F=F)
    ki, ri, bi = inits["he_uniform"]()
    g.add_init("initializers", "init_he_uniform_grucell", "GRUCell",
               gru_kw(U, kernel_initializer=ki, recurrent_initializer=ri, bias_initializer=bi),
               F=F)
    if k2:
        for kind in ("CuDNNGRU", "CuDNNLSTM"):
            p = kind.lower()
            g.add_init("initializers", f"init_defaults_seeded_{p}", kind,
                       gru_kw(U, kernel_initializer=I.GlorotUniform(seed=seeds[0]),
                              recurrent_initializer=I.Orthogonal(seed=seeds[1]),
                              bias_initializer=I.Zeros()), F=F)
        g.add_init("initializers", "init_random_uniform_cudnnlstm_unit_forget_bias", "CuDNNLSTM",
                   gru_kw(U, kernel_initializer=I.GlorotUniform(seed=seeds[0]),
                          recurrent_initializer=I.Orthogonal(seed=seeds[1]),
                          bias_initializer=I.RandomUniform(-0.3, 0.3, seed=seeds[2])), F=F,
                   note="CuDNNLSTM unit_forget_bias: bias (8u,) = concat(init((5u,)), "
                        "ones((u,)), init((2u,))): the ones block is the 6th of 8 "
                        "(the recurrent-bias forget block, index 5 counting from 0).")

    # ---------------- quirks ----------------
    for mk in ("holes", "left", "right"):
        for lp, kind, extra in (mask_layers[0], mask_layers[2]):
            g.add("quirks", f"quirk_unroll_mask_{mk}_{lp}", kind,
                  gru_kw(3, **extra, unroll=True, return_sequences=True, return_state=True),
                  B=4, T=6, F=4, mask=mk, init_state=True)
    bug = ("keras_semantics.md §12.15: with unroll=True the backend.rnn unroll branch zeroes the "
           "returned sequence with the UNREVERSED mask (outputs were computed with the carry "
           "rule in processed order, then where(mask[:, k], out[:, k], 0)); the last output and "
           "the states are correct.")
    contrast = ("unroll=False contrast for the case with the same mask: the generic while loop "
                "zeroes each masked processed step.")
    for mk in ("holes", "left", "right"):
        for lp, kind, extra in mask_layers:
            if lp != "gru_ra" and mk != "holes":
                continue
            for un in (True, False):
                g.add("quirks",
                      f"quirk_{'unroll' if un else 'loop'}_zero_output_backwards_{mk}_{lp}", kind,
                      gru_kw(3, **extra, unroll=un, zero_output_for_mask=True, go_backwards=True,
                             return_sequences=True, return_state=True),
                      B=4, T=6, F=4, mask=mk, init_state=True, note=bug if un else contrast)
    for gb in (False, True):
        nm = "quirk_unroll_zero_output_last_gru_ra" + ("_backwards" if gb else "")
        try:
            g.add("quirks", nm, "GRU",
                  gru_kw(3, unroll=True, zero_output_for_mask=True, go_backwards=gb,
                         return_state=True),
                  B=4, T=6, F=4, mask="mixed", init_state=True,
                  note="return_sequences=False: only last_output is returned.")
        except Exception as e:  # noqa: BLE001  (tf_keras crashes here; recorded, not written)
            g.names.discard(nm)
            lines = [ln for ln in str(e).splitlines() if "shape" in ln] or str(e).splitlines()
            g.refused_cases[nm] = f"{type(e).__name__}: {lines[0].strip()[:200]}"
    if k2:
        cud = ("keras_semantics.md §3.5/§12.14: base_cudnn_rnn.py applies go_backwards as "
               "backend.reverse(inputs, 1) BEFORE _process_batch; with time_major=True axis 1 is "
               "the batch axis, so the batch order is reversed and time runs forwards; the "
               "outputs (and final states) stay in the reversed batch order and initial_state[b] "
               "pairs with input sample B-1-b. Reference: the converted native layer with "
               "time_major=True, go_backwards=False fed x[:, ::-1] (batch-reversed).")
        for kind in ("CuDNNGRU", "CuDNNLSTM"):
            p = kind.lower()
            for h0 in (False, True):
                g.add("quirks", f"quirk_{p}_time_major_go_backwards" + ("_h0" if h0 else ""),
                      kind, {"units": 3, "time_major": True, "go_backwards": True,
                             "return_sequences": True, "return_state": True},
                      B=3, T=5, F=4, init_state=h0, note=cud)
            g.add("quirks", f"quirk_{p}_time_major_go_backwards_last", kind,
                  {"units": 4, "time_major": True, "go_backwards": True}, B=4, T=3, F=2,
                  note=cud)
        g.add("quirks", "quirk_gru_impl0", "GRU",
              gru_kw(4, implementation=0, return_sequences=True, return_state=True),
              B=3, T=5, F=4, init_state=True,
              note="tf_keras accepts implementation=0 (deprecation warning), keeps 0 in the "
                   "config and computes like implementation=2 (GRUCell tests == 1).")
        g.add("quirks", "quirk_gru_rb_impl0_generic", "GRU",
              gru_kw(4, implementation=0, reset_after=False, recurrent_activation="hard_sigmoid",
                     return_sequences=True, return_state=True), B=3, T=5, F=4, scale=1.3,
              note="implementation=0 on the generic backend.rnn loop.")
        from tf_keras.src.layers.rnn import gru_v1, lstm_v1

        v1n = ("tf_keras.src.layers.rnn.{m}.{c} (= tf.compat.v1.keras.layers.{c}) built with its "
               "own defaults (units and flags only); the config carries {d}.")
        for gb in (False, True):
            sfx = "_backwards" if gb else ""
            g.add("quirks", f"quirk_v1_gru_class_mask_h0{sfx}", "GRU",
                  gru_kw(4, go_backwards=gb, return_sequences=True, return_state=True),
                  B=4, T=6, F=3, mask="holes", init_state=True, layer_cls=gru_v1.GRU,
                  scale=1.3, note=v1n.format(m="gru_v1", c="GRU",
                                             d="recurrent_activation='hard_sigmoid', "
                                               "reset_after=False, implementation=1"))
            g.add("quirks", f"quirk_v1_lstm_class_mask_h0{sfx}", "LSTM",
                  gru_kw(4, go_backwards=gb, return_sequences=True, return_state=True),
                  B=4, T=6, F=3, mask="left", init_state=True, layer_cls=lstm_v1.LSTM,
                  scale=1.3, note=v1n.format(m="lstm_v1", c="LSTM",
                                             d="recurrent_activation='hard_sigmoid', "
                                               "implementation=1"))


def build_simple_rnn_cases(g):
    """SimpleRNN and SimpleRNNCell: the option matrix of the GRU/LSTM files, in two groups:
    simple_rnn.json (layers and cells, masks, stateful, quirks; saved as model files too) and
    simple_rnn_options.json (activations, regularizers, constraints, initializer statistics)."""
    k2 = g.dialect == "keras2"
    K = g.K
    R, C, I = K.regularizers, K.constraints, K.initializers
    S, SC = "SimpleRNN", "SimpleRNNCell"
    f, fo = "simple_rnn", "simple_rnn_options"

    # ---------------- layer options ----------------
    for ub in (True, False):
        g.add(f, "simple_rnn_" + ("bias" if ub else "nobias"), S,
              gru_kw(4, use_bias=ub, return_sequences=True, return_state=True), B=3, T=6, F=5)
    for rs in (False, True):
        for rst in (False, True):
            g.add(f, f"simple_rnn_seq{int(rs)}_state{int(rst)}", S,
                  gru_kw(5, return_sequences=rs, return_state=rst), B=2, T=7, F=3)
    g.add(f, "simple_rnn_go_backwards_seq", S,
          gru_kw(4, go_backwards=True, return_sequences=True, return_state=True), B=3, T=6, F=2)
    g.add(f, "simple_rnn_go_backwards_last", S, gru_kw(4, go_backwards=True), B=2, T=5, F=3)
    g.add(f, "simple_rnn_initial_state", S,
          gru_kw(6, return_sequences=True, return_state=True), B=3, T=5, F=4, init_state=True)
    g.add(f, "simple_rnn_initial_state_go_backwards", S,
          gru_kw(3, go_backwards=True, return_sequences=True, return_state=True),
          B=2, T=4, F=5, init_state=True)
    g.add(f, "simple_rnn_units1", S, gru_kw(1, return_sequences=True, return_state=True),
          B=2, T=6, F=3)
    g.add(f, "simple_rnn_b1_t1", S, gru_kw(3, return_sequences=True, return_state=True),
          B=1, T=1, F=4)
    g.add(f, "simple_rnn_f_eq_units", S, gru_kw(4, return_sequences=True), B=2, T=5, F=4)
    g.add(f, "simple_rnn_unroll", S,
          gru_kw(3, unroll=True, return_sequences=True, return_state=True), B=2, T=5, F=4,
          init_state=True)
    g.add(f, "simple_rnn_batch16", S, gru_kw(8, return_sequences=True, return_state=True),
          B=16, T=4, F=6)
    g.add(f, "simple_rnn_relu", S,
          gru_kw(4, activation="relu", return_sequences=True, return_state=True),
          B=3, T=4, F=5, scale=0.5, xscale=0.6)
    g.add(f, "simple_rnn_relu_h0_backwards", S,
          gru_kw(4, activation="relu", go_backwards=True, return_sequences=True,
                 return_state=True), B=3, T=4, F=5, scale=0.5, xscale=0.6, init_state=True)
    g.add(f, "simple_rnn_linear_nobias", S,
          gru_kw(3, activation="linear", use_bias=False, return_sequences=True,
                 return_state=True), B=2, T=4, F=4, scale=0.5, xscale=0.6)
    g.add(f, "simple_rnn_dropout_inference", S,
          gru_kw(4, dropout=0.3, recurrent_dropout=0.2, return_sequences=True,
                 return_state=True), B=3, T=5, F=4,
          note="dropout and recurrent_dropout are inactive in inference (training=False).")
    if k2:
        g.add(f, "simple_rnn_time_major", S,
              gru_kw(4, time_major=True, return_sequences=True, return_state=True),
              B=3, T=5, F=2)
        g.add(f, "simple_rnn_time_major_go_backwards", S,
              gru_kw(3, time_major=True, go_backwards=True, return_sequences=True,
                     return_state=True), B=2, T=4, F=3, init_state=True)
    g.add(f, "simple_rnn_units48_t20", S, gru_kw(48, return_sequences=True, return_state=True),
          B=1, T=20, F=12, scale=0.5)
    g.add(f, "simple_rnn_long_t200", S, gru_kw(6, return_sequences=True, return_state=True),
          B=1, T=200, F=3, scale=0.5)

    # ---------------- masks ----------------
    for mk in ("right", "left", "holes", "fullrow"):
        for h0 in (False, True):
            for gb in (False, True):
                g.add(f, f"mask_simple_rnn_{mk}" + ("_h0" if h0 else "") +
                      ("_backwards" if gb else ""), S,
                      gru_kw(3, go_backwards=gb, return_sequences=True, return_state=True),
                      B=4, T=6, F=4, mask=mk, init_state=h0)
        for gb in (False, True):
            g.add(f, f"mask_simple_rnn_{mk}_zero_output" + ("_backwards" if gb else ""), S,
                  gru_kw(3, go_backwards=gb, zero_output_for_mask=True, return_sequences=True,
                         return_state=True), B=4, T=6, F=4, mask=mk, init_state=True)
    for zo in (False, True):
        g.add(f, "mask_simple_rnn_mixed_last" + ("_zero_output" if zo else ""), S,
              gru_kw(3, zero_output_for_mask=zo, return_state=True),
              B=4, T=6, F=4, mask="mixed", init_state=True)
    g.add(f, "mask_simple_rnn_mixed_unroll", S,
          gru_kw(3, unroll=True, return_sequences=True, return_state=True),
          B=4, T=6, F=4, mask="mixed", init_state=True)
    g.add(f, "mask_simple_rnn_relu_holes_h0", S,
          gru_kw(3, activation="relu", return_sequences=True, return_state=True),
          B=4, T=6, F=4, mask="holes", init_state=True, scale=0.5, xscale=0.6)

    # ---------------- stateful ----------------
    third = "random" if k2 else "zeros"
    g.add(f, "stateful_simple_rnn", S,
          gru_kw(4, stateful=True, return_sequences=True, return_state=True), B=3, T=4, F=5,
          calls=[{"reset": "none"}, {"reset": "none"}, {"reset": third}])
    g.add(f, "stateful_simple_rnn_last", S, gru_kw(3, stateful=True), B=2, T=5, F=3,
          calls=[{"reset": "none"}, {"reset": "none"}, {"reset": "zeros"}])
    g.add(f, "stateful_simple_rnn_initial_state", S,
          gru_kw(3, stateful=True, return_state=True), B=2, T=4, F=3,
          calls=[{"reset": "none", "init_state": True}, {"reset": "none", "init_state": True},
                 {"reset": "zeros", "init_state": True}],
          note=("K2 quirk: a passed initial_state is used only while every stored state is "
                "exactly 0 (calls 1 and 3); in call 2 the stored states win."
                if k2 else "K3: a passed initial_state is always used."))
    g.add(f, "stateful_simple_rnn_mask_backwards", S,
          gru_kw(3, stateful=True, go_backwards=True, return_sequences=True, return_state=True),
          B=4, T=6, F=3,
          calls=[{"reset": "none", "mask": "holes"}, {"reset": "none", "mask": "fullrow"},
                 {"reset": third, "mask": "left"}])
    if k2:
        g.add(f, "stateful_simple_rnn_time_major", S,
              gru_kw(3, stateful=True, time_major=True, return_sequences=True,
                     return_state=True), B=2, T=4, F=3,
              calls=[{"reset": "none"}, {"reset": "none"}, {"reset": "random"}])

    # ---------------- quirks ----------------
    for mk in ("holes", "left", "right"):
        g.add(f, f"quirk_unroll_mask_{mk}_simple_rnn", S,
              gru_kw(3, unroll=True, return_sequences=True, return_state=True),
              B=4, T=6, F=4, mask=mk, init_state=True)
    for un in (True, False):
        g.add(f, f"quirk_{'unroll' if un else 'loop'}_zero_output_backwards_holes_simple_rnn", S,
              gru_kw(3, unroll=un, zero_output_for_mask=True, go_backwards=True,
                     return_sequences=True, return_state=True),
              B=4, T=6, F=4, mask="holes", init_state=True,
              note=("keras_semantics.md §12.15: with unroll=True the returned sequence is zeroed "
                    "with the UNREVERSED mask." if un else
                    "unroll=False contrast: each masked processed step is zeroed."))
    if not k2:  # tf_keras raises for unroll + zero_output_for_mask + return_sequences=False
        for gb in (False, True):
            g.add(f, "quirk_unroll_zero_output_last_simple_rnn" + ("_backwards" if gb else ""),
                  S, gru_kw(3, unroll=True, zero_output_for_mask=True, go_backwards=gb,
                            return_state=True),
                  B=4, T=6, F=4, mask="mixed", init_state=True,
                  note="return_sequences=False: only last_output is returned.")

    # ---------------- cells ----------------
    for ub in (True, False):
        g.add(f, "simplernncell_" + ("bias" if ub else "nobias"), SC, gru_kw(4, use_bias=ub),
              B=3, F=5, init_state=True)
    g.add(f, "simplernncell_zero_state", SC, gru_kw(3), B=2, F=4)
    g.add(f, "simplernncell_units1_b1", SC, gru_kw(1), B=1, F=3, init_state=True)
    g.add(f, "simplernncell_relu", SC, gru_kw(5, activation="relu"), B=4, F=6, init_state=True,
          scale=0.5, xscale=0.6)
    g.add(f, "simplernncell_units40", SC, gru_kw(40), B=3, F=8, init_state=True, scale=0.5)

    # ---------------- activations ----------------
    for a in ACTIVATION_CANDIDATES:
        if a in g.skipped_activations or not g.activation_accepted(a):
            continue
        unb = a in UNBOUNDED
        sc, xs, T = (0.5, 0.6, 4) if unb else (1.0, 1.0, 6)
        if a == "exponential":
            sc, xs, T = 0.25, 0.4, 3  # h = exp(...) feeds back into the next step
        g.add(fo, f"act_{a}_simple_rnn", S,
              gru_kw(3, activation=a, return_sequences=True, return_state=True),
              B=2, T=T, F=4, scale=sc, xscale=xs, init_state=True)
        if a in ("tanh", "relu", "sigmoid", "linear", "hard_sigmoid", "softmax", "gelu"):
            g.add(fo, f"act_{a}_simplernncell", SC, gru_kw(3, activation=a),
                  B=2, F=4, scale=sc, xscale=xs, init_state=True)

    # ---------------- regularizers ----------------
    l1 = lambda: R.L1(0.01)  # noqa: E731
    l2 = lambda: R.L2(0.02)  # noqa: E731
    l1l2 = lambda: R.L1L2(l1=0.01, l2=0.02)  # noqa: E731
    orow = lambda: R.OrthogonalRegularizer(factor=0.01, mode="rows")  # noqa: E731
    ocol = lambda: R.OrthogonalRegularizer(factor=0.02, mode="columns")  # noqa: E731

    def regs(k=None, r=None, b=None, a=None):
        d = {}
        for key, v in (("kernel_regularizer", k), ("recurrent_regularizer", r),
                       ("bias_regularizer", b), ("activity_regularizer", a)):
            if v is not None:
                d[key] = v()
        return d

    k3_drop = None if k2 else (
        "Keras 3's SimpleRNN takes activity_regularizer but never passes it on (it is not "
        "given to RNN.__init__): the layer has none, its config says null and layer.losses "
        "holds no activity loss.")

    def reg(name, kind, kw, **a):
        a.setdefault("B", 3)
        a.setdefault("T", 5)
        a.setdefault("F", 4)
        g.add(fo, name, kind, kw, losses=True, **a)

    reg("reg_simple_rnn_seq_state", S,
        gru_kw(4, return_sequences=True, return_state=True, **regs(l1, l2, l1l2, l1)),
        note=k3_drop)
    reg("reg_simple_rnn_state", S, gru_kw(4, return_state=True, **regs(l2, l1l2, l1, l2)),
        note=k3_drop)
    reg("reg_simple_rnn_last_weights_only", S, gru_kw(3, **regs(l1l2, l1, l2)), B=2)
    reg("reg_simple_rnn_orthogonal", S, gru_kw(4, return_sequences=True, **regs(orow, ocol)))
    reg("reg_simple_rnn_nobias_bias_regularizer", S,
        gru_kw(3, use_bias=False, return_state=True, **regs(l1, b=l2)),
        note="use_bias=False: the bias_regularizer has no weight to act on, so no bias loss.")
    reg("reg_simple_rnn_mask_holes", S,
        gru_kw(3, return_sequences=True, return_state=True, **regs(l2, a=l1)),
        B=4, T=6, mask="holes", init_state=True, note=k3_drop)
    reg("reg_simple_rnn_strings", S,
        gru_kw(3, kernel_regularizer="l1", recurrent_regularizer="l2", bias_regularizer="l2",
               return_state=True), note="string identifiers 'l1'/'l2' (factor 0.01)")
    reg("reg_simple_rnn_frozen", S,
        gru_kw(3, trainable=False, return_state=True, **regs(l1, l2, l1l2)),
        note="trainable=False: " + ("Keras 2 still reports the weight penalties of frozen "
                                    "weights." if k2 else "Keras 3 reports weight penalties "
                                    "for trainable weights only."))
    # K2 cells do not serialize activity_regularizer, so only K3 cells carry one.
    reg("reg_simplernncell", SC, gru_kw(4, **regs(l1, l2, l1l2, **({} if k2 else {"a": l2}))),
        init_state=True)
    if k2:
        reg("reg_simple_rnn_time_major", S,
            gru_kw(3, time_major=True, return_sequences=True, return_state=True,
                   **regs(l1, a=l1)), B=3, T=5,
            note="time_major: each activity penalty is divided by the size of that output's "
                 "first axis: T=5 for the (T,B,u) sequence, B=3 for state_h.")

    # ---------------- constraints ----------------
    def zeros_in(wname, a, negzero=np.float32(-0.0)):
        a = np.array(a, dtype=np.float32)
        flat = a.reshape(-1)
        flat[::7] = 0.0
        flat[3::11] = negzero
        if a.ndim == 2 and wname != "bias":
            a[:, 0] = 0.0
            a[1, :] = negzero
        return a

    cspecs = {
        "max_norm_default": lambda w: C.MaxNorm(),
        "max_norm_05_axis0": lambda w: C.MaxNorm(max_value=0.5, axis=0),
        "max_norm_05_axis1": lambda w: C.MaxNorm(max_value=0.5, axis=1) if w != "bias" else None,
        "max_norm_1_axis01": lambda w: C.MaxNorm(max_value=1.0, axis=[0, 1] if w != "bias" else 0),
        "unit_norm": lambda w: C.UnitNorm(),
        "unit_norm_axis1": lambda w: C.UnitNorm(axis=1) if w != "bias" else None,
        "min_max_norm": lambda w: C.MinMaxNorm(min_value=0.2, max_value=0.8, rate=0.5),
        "non_neg": lambda w: C.NonNeg(),
    }
    for cn, spec in cspecs.items():
        d = {}
        for wname, key in (("kernel", "kernel_constraint"),
                           ("recurrent_kernel", "recurrent_constraint"),
                           ("bias", "bias_constraint")):
            c = spec(wname)
            if c is not None:
                d[key] = c
        k3nn = cn == "non_neg" and not k2
        g.add(fo, f"constraint_{cn}_simple_rnn", S,
              gru_kw(4, return_sequences=True, return_state=True, **d),
              B=2, T=4, F=5, constraints=True,
              weight_fn=(lambda w, a: zeros_in(w, a, np.float32(0.0))) if k3nn else zeros_in,
              note=("K3 non_neg = ops.maximum(w, 0): these weights hold +0.0 instead of -0.0 "
                    "(see constraints.json)." if k3nn else None))
    g.add(fo, "constraint_kernel_only_simplernncell", SC,
          gru_kw(3, kernel_constraint=C.UnitNorm(axis=1)), B=2, F=5, init_state=True,
          constraints=True, weight_fn=zeros_in,
          note="only the kernel has a constraint; the others are unchanged")

    # ---------------- initializers (statistics only) ----------------
    Fi, Ui = 96, 48
    seeds = (1101, 1102, 1103)
    inits = {
        "glorot_uniform": lambda: (I.GlorotUniform(seed=seeds[0]), I.GlorotUniform(seed=seeds[1]),
                                   I.GlorotUniform(seed=seeds[2])),
        "he_normal": lambda: (I.HeNormal(seed=seeds[0]), I.HeNormal(seed=seeds[1]),
                              I.HeNormal(seed=seeds[2])),
        "random_uniform": lambda: (I.RandomUniform(-0.3, 0.3, seed=seeds[0]),
                                   I.RandomUniform(-0.3, 0.3, seed=seeds[1]),
                                   I.RandomUniform(-0.3, 0.3, seed=seeds[2])),
        "variance_scaling_fan_out_uniform": lambda: tuple(
            I.VarianceScaling(scale=2.0, mode="fan_out", distribution="uniform", seed=s)
            for s in seeds),
        "orthogonal_gain2_5": lambda: (I.Orthogonal(gain=2.5, seed=seeds[0]),
                                       I.Orthogonal(gain=2.5, seed=seeds[1]), I.Zeros()),
        "identity": lambda: (I.Identity(), I.Identity(), I.Zeros()),
        "constant_0_7": lambda: (I.Constant(0.7), I.Constant(0.7), I.Constant(0.7)),
    }
    for iname, mk in inits.items():
        ki, ri, bi = mk()
        g.add_init(fo, f"init_{iname}_simple_rnn", S,
                   gru_kw(Ui, kernel_initializer=ki, recurrent_initializer=ri,
                          bias_initializer=bi), F=Fi,
                   note="square recurrent kernel (u, u): orthogonal and identity are exact"
                   if iname in ("orthogonal_gain2_5", "identity") else None)
    ki, ri, bi = inits["glorot_uniform"]()
    g.add_init(fo, "init_glorot_uniform_simplernncell", SC,
               gru_kw(Ui, kernel_initializer=ki, recurrent_initializer=ri, bias_initializer=bi),
               F=Fi)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dialect", required=True, choices=["keras2", "keras3"])
    ap.add_argument("--out", default=None, help="output folder (default fixtures/<dialect>)")
    ap.add_argument("--groups", default=None,
                    help="comma-separated fixture files (without .json) to write; default all")
    args = ap.parse_args()
    groups = set(args.groups.split(",")) if args.groups else None
    g = Generator(args.dialect, groups)
    build_cases(g)
    build_new_cases(g)
    build_simple_rnn_cases(g)
    if groups is not None and groups - set(g.cases):
        raise SystemExit(f"no cases for groups {sorted(groups - set(g.cases))}")
    out = args.out or os.path.join(HERE, "fixtures", args.dialect)
    g.write(out)

    total = 0
    for file, cases in sorted(g.cases.items()):
        size = os.path.getsize(os.path.join(out, file + ".json"))
        total += size
        print(f"{file}.json: {len(cases)} cases, {size / 1024:.1f} KiB")
    print(f"total: {sum(len(c) for c in g.cases.values())} cases, {total / 1024:.1f} KiB")
    print("versions:", json.dumps(g.versions))
    if g.skipped_activations:
        print("activations refused by this dialect:")
        for k, v in g.skipped_activations.items():
            print(f"  {k}: {v}")
    for k, v in g.refused_cases.items():
        print(f"case refused by Keras (not written): {k}: {v}")
    if g.loss_check:
        w = max(g.loss_check, key=lambda r: r[2])
        print(f"losses: {len(g.loss_check)} checked against the float64 model, worst rel "
              f"{w[2]:.2e} ({w[0]}/{w[1]})")
    if g.constraint_check:
        w = max(g.constraint_check, key=lambda r: r[3])
        print(f"constraints: {len(g.constraint_check)} checked, worst |keras - model| "
              f"{w[3]:.2e} ({w[0]}/{w[1]} {w[2]})")
        per = {}
        for r in g.constraint_check:
            t = per.setdefault(r[2], [0, 0])
            t[0] += r[5]
            t[1] += r[4]
        for cls, (negz, mism) in sorted(per.items()):
            print(f"  {cls}: -0.0 values in Keras results: {negz}, zero-sign mismatches vs "
                  f"the model: {mism}")
    worst = sorted(g.check, key=lambda r: -r[2])[:8]
    print("largest |keras float32 - float64 model| per case:")
    for file, name, d, tol in worst:
        print(f"  {file}/{name}: {d:.3e} (tolerance {tol:g})")
    loosened = [r for r in g.check if r[3] != DEFAULT_TOL]
    print(f"cases with a loosened tolerance: {len(loosened)}")
    print("hard_sigmoid recurrent pre-activation coverage (min, max, frac<-bp, frac>bp):")
    for name, lo, hi, fl, fh in g.hs_coverage:
        print(f"  {name}: [{lo:.2f}, {hi:.2f}] below {fl:.2f} above {fh:.2f}")


if __name__ == "__main__":
    sys.exit(main())
