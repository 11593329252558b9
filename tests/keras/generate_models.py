#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Save the parity fixtures as Keras model files (.keras and legacy .h5), with REAL Keras.

Usage (from the repository root, after generate.py wrote the fixtures of the dialect):

    tests/keras/.venv-keras2/bin/python tests/keras/generate_models.py --dialect keras2
    tests/keras/.venv-keras3/bin/python tests/keras/generate_models.py --dialect keras3

`--groups simple_rnn,...` saves only those groups' model files and fixtures and leaves the other
files as they are.

For every fixture file fixtures/<dialect>/<group>.json this builds ONE functional model that
holds each sequence-layer case of the file as its own branch: its own Input (with the batch size
fixed for stateful layers) feeding the case's layer, rebuilt from the case's serialized config
under the case's name, with the case's weights. The model is saved as
models/<dialect>/<group>.keras and models/<dialect>/<group>.h5, loaded back with Keras and its
weights compared with the fixture. The fixture file then gets a top-level "model_files" list and
each such case a "model_layer" field (every other byte of the fixture stays as generate.py wrote
it). Cells and initializer-only cases (no weights) are not layers of a model and are skipped.

keras2 only: also writes fixtures/keras2/conversion.json and models/keras2/conversion_*.h5, the
Keras 2 h5 loader's CuDNN <-> native weight conversion (keras_semantics.md section 3.4): crafted
.h5 files whose model_config says GRU/LSTM while the weights are stored in CuDNN layout, and the
reverse; their reference outputs come from tf_keras.models.load_model on the crafted file.
See README.md.
"""
import argparse
import copy
import json
import os
import sys
import zlib

os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["PYTHONHASHSEED"] = "0"

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from generate import configure_tensorflow  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CELLS = ("GRUCell", "LSTMCell", "SimpleRNNCell")
# Fixture files saved without model files, to keep tests/keras/models near 16 MB.
OPTIONS_LEFT_OUT = ("SimpleRNN activations, regularizers, constraints and initializers: the same "
                    "layer config fields as simple_rnn.json, whose model files load SimpleRNN from "
                    ".keras and .h5")
LEFT_OUT = {
    ("keras3", "large"): "one GRU with 256 units (0.8 MB per model file); the keras2 large.json "
                         "model files already load a layer of that size from .keras and .h5",
    ("keras2", "simple_rnn_options"): OPTIONS_LEFT_OUT,
    ("keras3", "simple_rnn_options"): OPTIONS_LEFT_OUT,
}


def dump_fixture(path, doc):
    """Writes a fixture exactly the way generate.py does (one case per line)."""
    head = {k: v for k, v in doc.items() if k != "cases"}
    text = json.dumps(head, separators=(",", ":"))[:-1] + ',"cases":[\n'
    text += ",\n".join(json.dumps(c, separators=(",", ":"), allow_nan=False) for c in doc["cases"])
    text += "\n]}\n"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode("utf-8")))


def q(a, decimals=3):
    return np.round(np.asarray(a, dtype=np.float64), decimals).astype(np.float32)


def tensor(a):
    a = np.asarray(a, dtype=np.float32)
    if not np.all(np.isfinite(a)):
        raise ValueError("non-finite value in fixture data")
    data = []
    for v in a.ravel():
        f = float(str(v))
        assert np.float32(f) == v
        data.append(f)
    return {"shape": list(a.shape), "data": data}


class ModelWriter:
    def __init__(self, dialect):
        self.dialect = dialect
        self.tf = tf = configure_tensorflow(dialect)
        if dialect == "keras2":
            import tf_keras as K
            from tf_keras.src.layers.rnn.cudnn_gru import CuDNNGRU
            from tf_keras.src.layers.rnn.cudnn_lstm import CuDNNLSTM

            self.custom = {"CuDNNGRU": CuDNNGRU, "CuDNNLSTM": CuDNNLSTM}
        else:
            import keras as K

            self.custom = {}
        self.K = K
        self.skipped = []  # (file, case, why)

    # ---- one model per fixture file -----------------------------------------------------------
    def layer_from_case(self, c):
        spec = copy.deepcopy(c["layer"])
        spec["config"]["name"] = c["name"]
        if spec["class_name"] in self.custom:  # not exported by tf_keras.layers
            return self.custom[spec["class_name"]].from_config(spec["config"])
        if self.dialect == "keras2":
            return self.K.layers.deserialize(spec)
        return self.K.layers.deserialize(spec)

    def input_for(self, c):
        cfg = c["layer"]["config"]
        shape = c["calls"][0]["input"]["shape"]
        if cfg.get("stateful"):
            batch = cfg.get("batch_input_shape") or c["layer"]["build_config"]["input_shape"]
            return self.K.Input(batch_shape=tuple(batch), name="in_" + c["name"])
        if cfg.get("time_major"):
            return self.K.Input(batch_shape=(shape[0], None, shape[2]), name="in_" + c["name"])
        return self.K.Input(shape=tuple(shape[1:]), name="in_" + c["name"])

    def model_cases(self, doc, file):
        out = []
        for c in doc["cases"]:
            if c["layer"]["class_name"] in CELLS:
                self.skipped.append((file, c["name"], "cell (not a layer of a model)"))
            elif not c.get("calls") or "weights" not in c:
                self.skipped.append((file, c["name"], "no weights/calls (initializer statistics)"))
            else:
                out.append(c)
        return out

    def check_loaded(self, path, cases):
        K = self.K
        if self.dialect == "keras2" and path.endswith(".keras"):
            # tf_keras 2.21 cannot load a .keras file holding a CuDNN layer: it looks custom
            # classes up by registered_name, which CuDNN layers save as null, even with
            # custom_objects. Let the lookup find them by class name for this check.
            from tf_keras.src.saving import serialization_lib as sl

            orig = sl._retrieve_class_or_fn

            def find(name, *a, **kw):
                return self.custom[name] if name in self.custom else orig(name, *a, **kw)

            sl._retrieve_class_or_fn = find
            try:
                m = K.models.load_model(path, compile=False)
            finally:
                sl._retrieve_class_or_fn = orig
        elif self.dialect == "keras2":
            m = K.models.load_model(path, custom_objects=self.custom, compile=False)
        else:
            m = K.models.load_model(path, compile=False)
        for c in cases:
            got = m.get_layer(c["model_layer"]).get_weights()
            want = [np.asarray(w["data"], np.float32).reshape(w["shape"]) for w in c["weights"]]
            assert len(got) == len(want), (path, c["name"])
            for g_, w_ in zip(got, want):
                assert g_.shape == w_.shape and np.array_equal(g_, w_), (path, c["name"])

    def write_group(self, fixture_path, models_dir):
        K = self.K
        file = os.path.splitext(os.path.basename(fixture_path))[0]
        with open(fixture_path, encoding="utf-8") as fh:
            doc = json.load(fh)
        doc.pop("model_files", None)
        for c in doc["cases"]:
            c.pop("model_layer", None)
        cases = self.model_cases(doc, file)
        if (self.dialect, file) in LEFT_OUT:
            for c in cases:
                self.skipped.append((file, c["name"], "left out: " + LEFT_OUT[(self.dialect, file)]))
            cases = []
        if not cases:
            dump_fixture(fixture_path, doc)
            return None
        inputs, outputs, kept = [], [], []
        for c in cases:
            try:
                layer = self.layer_from_case(c)
                x = self.input_for(c)
                y = layer(x)
                layer.set_weights([np.asarray(w["data"], np.float32).reshape(w["shape"])
                                   for w in c["weights"]])
            except Exception as e:  # noqa: BLE001
                self.skipped.append((file, c["name"], f"{type(e).__name__}: {str(e)[:200]}"))
                continue
            inputs.append(x)
            outputs.extend(y if isinstance(y, (list, tuple)) else [y])
            c["model_layer"] = c["name"]
            kept.append(c)
        model = K.Model(inputs, outputs, name=file)
        os.makedirs(models_dir, exist_ok=True)
        rel = []
        for ext in (".keras", ".h5"):
            path = os.path.join(models_dir, file + ext)
            if os.path.exists(path):
                os.remove(path)
            model.save(path)
            self.check_loaded(path, kept)
            rel.append(os.path.relpath(path, HERE))
        # model_files goes before "cases" (generate.py writes "cases" last).
        cases_list = doc.pop("cases")
        doc["model_files"] = rel
        doc["cases"] = cases_list
        dump_fixture(fixture_path, doc)
        K.backend.clear_session()
        return file, len(kept), [os.path.getsize(os.path.join(HERE, r)) for r in rel]

    # ---- Keras 2 CuDNN <-> native conversion (keras_semantics.md 3.4) -----------------------
    def conversion(self, fixtures_dir, models_dir, versions):
        import h5py
        from tf_keras.src.saving.legacy import hdf5_format

        K, tf = self.K, self.tf
        F, U, B, T = 5, 3, 3, 6  # F != units

        def build(kind, kw, batch_shape=None):
            cls = self.custom.get(kind) or getattr(K.layers, kind)
            layer = cls(U, name="rnn", **kw)
            x = K.Input(shape=(T, F), name="x")
            y = layer(x)
            return K.Model(x, y if isinstance(y, (list, tuple)) else [y], name="conversion"), layer

        def cudnn_weights(kind, name):
            rng = rng_for(f"keras2/{name}")
            n = 3 if "GRU" in kind else 4
            k = q(rng.uniform(-1.6, 1.6, (F, n * U)))
            r = q(rng.uniform(-1.1, 1.1, (U, n * U)))
            b = q(rng.uniform(-1, 1, (2 * n * U,)))
            return [k, r, b]

        def graft(dst, src):
            """dst's file with the weights group of layer 'rnn' replaced by src's."""
            with h5py.File(src, "r") as fs, h5py.File(dst, "a") as fd:
                del fd["model_weights/rnn"]
                fs.copy(fs["model_weights/rnn"], fd["model_weights"], name="rnn")

        def outputs_of(model, x):
            ys = model(x, training=False)
            ys = ys if isinstance(ys, (list, tuple)) else [ys]
            names = ["output", "state_h", "state_c"][: len(ys)]
            return [dict(name=nm, **tensor(np.asarray(y))) for nm, y in zip(names, ys)]

        def native_of(kind):
            return ("GRU", {"reset_after": True}) if kind == "CuDNNGRU" else ("LSTM", {})

        flags = {"return_sequences": True, "return_state": True}
        cases, sizes = [], []
        tmp = os.path.join(models_dir, "_tmp.h5")

        def finish(name, config_layer, path, call_model, note, expect_error=None):
            """config_layer: the layer whose config the file's model_config holds."""
            rng = rng_for(f"keras2/{name}/call0")
            x = q(rng.uniform(-2, 2, (B, T, F)))
            case = {"name": name, "layer": K.layers.serialize(config_layer)}
            case["input_size"] = F
            case["tolerance"] = 1e-5
            case["note"] = note
            case["model_files"] = [os.path.relpath(path, HERE)]
            case["model_layer"] = "rnn"
            if expect_error is not None:
                case["expect_open_error"] = expect_error
                case["calls"] = []
            else:
                case["calls"] = [{"reset_states": None, "input": tensor(x), "mask": None,
                                  "initial_state": [], "training": False,
                                  "outputs": outputs_of(call_model, x)}]
            sizes.append(os.path.getsize(path))
            cases.append(case)

        for cudnn_kind in ("CuDNNGRU", "CuDNNLSTM"):
            nat_kind, nat_kw = native_of(cudnn_kind)
            low = cudnn_kind.lower()
            # (1) model_config says GRU(reset_after=True) / LSTM, weights in CuDNN layout.
            name = f"conversion_{low}_weights_in_{nat_kind.lower()}"
            path = os.path.join(models_dir, name + ".h5")
            cm, cl = build(cudnn_kind, flags)
            wc = cudnn_weights(cudnn_kind, name)
            cl.set_weights(wc)
            cm.save(tmp)
            nm, nl = build(nat_kind, dict(flags, **nat_kw))
            nm.save(path)
            graft(path, tmp)
            with h5py.File(path, "r") as fh:
                g = fh["model_weights/rnn"]
                names = [n.decode() if isinstance(n, bytes) else n for n in g.attrs["weight_names"]]
                assert [g[n].shape for n in names] == [w.shape for w in wc], names
            loaded = K.models.load_model(path, custom_objects=self.custom, compile=False)
            assert type(loaded.get_layer("rnn")).__name__ == nat_kind
            # Keras converted with _convert_rnn_weights: compare with its direct use.
            want = hdf5_format.preprocess_weights_for_loading(nl, wc)
            for g_, w_ in zip(loaded.get_layer("rnn").get_weights(), want):
                assert np.array_equal(g_, w_), name
            finish(name, nl, path, loaded,
                   f"model_config {nat_kind}"
                   f"{'(reset_after=True)' if nat_kind == 'GRU' else ''}, weights stored in "
                   f"{cudnn_kind} layout (bias {wc[2].shape}); outputs of "
                   "tf_keras.models.load_model(file), which converts them")
            K.backend.clear_session()

            # (2) model_config says CuDNNGRU / CuDNNLSTM, weights in native layout.
            name = f"conversion_{nat_kind.lower()}_weights_in_{low}"
            path = os.path.join(models_dir, name + ".h5")
            nm, nl = build(nat_kind, dict(flags, **nat_kw))
            wn = hdf5_format.preprocess_weights_for_loading(nl, cudnn_weights(cudnn_kind, name))
            nl.set_weights(wn)
            nm.save(tmp)
            cm, cl = build(cudnn_kind, flags)
            cm.save(path)
            graft(path, tmp)
            loaded = K.models.load_model(path, custom_objects=self.custom, compile=False)
            assert type(loaded.get_layer("rnn")).__name__ == cudnn_kind
            wl = loaded.get_layer("rnn").get_weights()
            assert [w.shape for w in wl] == [w.shape for w in cl.get_weights()]
            # The CuDNN layer needs a GPU to run; Keras's own converter maps the loaded CuDNN
            # weights to the equivalent native layer (as generate.py does for cudnn.json).
            rm, rl = build(nat_kind, dict(flags, **nat_kw, activation="tanh",
                                          recurrent_activation="sigmoid"))
            rl.set_weights(hdf5_format.preprocess_weights_for_loading(rl, wl))
            finish(name, cl, path, rm,
                   f"model_config {cudnn_kind}, weights stored in {nat_kind} layout; "
                   "tf_keras.models.load_model(file) converts them to CuDNN layout; outputs of "
                   f"the {nat_kind} those loaded weights convert back to")
            K.backend.clear_session()

        # (3) GRU(reset_after=False) config with CuDNNGRU weights: Keras refuses to load.
        name = "conversion_cudnngru_weights_in_gru_reset_before"
        path = os.path.join(models_dir, name + ".h5")
        cm, cl = build("CuDNNGRU", flags)
        cl.set_weights(cudnn_weights("CuDNNGRU", name))
        cm.save(tmp)
        nm, nl = build("GRU", dict(flags, reset_after=False))
        nm.save(path)
        graft(path, tmp)
        try:
            K.models.load_model(path, custom_objects=self.custom, compile=False)
            raise AssertionError("Keras loaded a CuDNNGRU weight set into GRU(reset_after=False)")
        except ValueError as e:
            msg = str(e)
        expect = "CuDNNGRU is not compatible with GRU(reset_after=False)"
        assert expect in msg, msg
        print(f"conversion: Keras refuses {name}: {msg}")
        finish(name, nl, path, None, "model_config GRU(reset_after=False), weights stored in "
               "CuDNNGRU layout: tf_keras.models.load_model raises ValueError('" + msg + "')",
               expect_error=expect)
        os.remove(tmp)
        K.backend.clear_session()

        doc = {"format": 1, "dialect": "keras2", "versions": versions,
               "generator": "tests/keras/generate_models.py", "cases": cases}
        dump_fixture(os.path.join(fixtures_dir, "conversion.json"), doc)
        return len(cases), sizes


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dialect", required=True, choices=["keras2", "keras3"])
    ap.add_argument("--groups", default=None,
                    help="comma-separated fixture files (without .json) to save; default all")
    args = ap.parse_args()
    groups = set(args.groups.split(",")) if args.groups else None
    w = ModelWriter(args.dialect)
    fixtures_dir = os.path.join(HERE, "fixtures", args.dialect)
    models_dir = os.path.join(HERE, "models", args.dialect)
    os.makedirs(models_dir, exist_ok=True)
    for old in os.listdir(models_dir):
        if old.endswith((".keras", ".h5")) and (groups is None or os.path.splitext(old)[0] in groups):
            os.remove(os.path.join(models_dir, old))
    total, n_cases, versions = 0, 0, None
    for f in sorted(os.listdir(fixtures_dir)):
        if not f.endswith(".json") or f == "conversion.json":
            continue
        if groups is not None and f[:-5] not in groups:
            continue
        path = os.path.join(fixtures_dir, f)
        with open(path, encoding="utf-8") as fh:
            versions = json.load(fh)["versions"]
        r = w.write_group(path, models_dir)
        if r is None:
            print(f"{f}: no model files (no sequence-layer cases, or left out)")
            continue
        group, n, sizes = r
        n_cases += n
        total += sum(sizes)
        print(f"{f}: {n} cases -> {group}.keras {sizes[0] / 1024:.1f} KiB, "
              f"{group}.h5 {sizes[1] / 1024:.1f} KiB")
    if args.dialect == "keras2" and groups is None:
        n, sizes = w.conversion(fixtures_dir, models_dir, versions)
        total += sum(sizes)
        print(f"conversion.json: {n} cases, {sum(sizes) / 1024:.1f} KiB of .h5")
    print(f"total: {n_cases} cases in models, {total / 1024:.1f} KiB of model files")
    reasons = {}
    for file, case, why in w.skipped:
        reasons.setdefault(why, []).append(f"{file}/{case}")
    for why, names in reasons.items():
        print(f"skipped ({why}): {len(names)}")
        if not why.startswith(("cell", "no weights", "left out")):
            for n in names:
                print("   ", n)


if __name__ == "__main__":
    sys.exit(main())
