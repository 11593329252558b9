#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Structural check of the committed fixtures (standard library only; no Keras needed).

    python3 tests/keras/check_fixtures.py [fixtures_dir]

Checks the format documented in README.md: keys, tensor shapes against their data lengths,
weight shapes against the layer config, output names/shapes against return_sequences /
return_state / time_major, mask values, reset_states usage, finiteness, unique names, the
optional fields `losses`, `constrained_weights` and `initializer_stats`, the model-file fields
(`model_files`, `model_layer`, `expect_open_error`: every listed file exists under tests/keras/,
every sequence-layer case with weights of a file that has model files names its layer, cells do
not, layer names are unique per model file, and every file under models/ is referenced), and the
size budgets (each fixture < 1.5 MB, all fixtures < 9 MB, all model files < 18 MB). Exits 1 on
the first problem.
"""
import glob
import json
import math
import os
import sys

MAX_FILE = 1_500_000
MAX_TOTAL = 9_000_000
MAX_MODELS = 18_000_000
HERE = os.path.dirname(os.path.abspath(__file__))
GENERATORS = {"tests/keras/generate.py", "tests/keras/generate_models.py"}


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def check_tensor(t, where, shape=None, ints=False):
    if set(t) - {"shape", "data", "name"} or "shape" not in t or "data" not in t:
        fail(f"{where}: bad tensor keys {sorted(t)}")
    if numel(t["shape"]) != len(t["data"]):
        fail(f"{where}: shape {t['shape']} but {len(t['data'])} values")
    if shape is not None and list(t["shape"]) != list(shape):
        fail(f"{where}: shape {t['shape']}, expected {list(shape)}")
    for v in t["data"]:
        if ints:
            if v not in (0, 1) or not isinstance(v, int):
                fail(f"{where}: mask value {v!r}")
        elif not isinstance(v, (int, float)) or not math.isfinite(v):
            fail(f"{where}: bad number {v!r}")


KNOWN_KEYS = {"name", "layer", "input_size", "weights", "tolerance", "tolerance_reason", "note",
              "calls", "losses", "constrained_weights", "initializer_stats",
              "model_layer", "model_files", "expect_open_error"}
WEIGHT_ORDER = ["kernel", "recurrent_kernel", "bias"]


def check_number(v, where):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        fail(f"{where}: bad number {v!r}")


def check_stats(stats, exp, where):
    got = [(s["name"], s["shape"]) for s in stats]
    if got != exp:
        fail(f"{where}: initializer_stats {got}, expected {exp}")
    keys = {"name", "shape", "n", "mean", "std", "min", "max", "row_orthogonality",
            "col_orthogonality"}
    for s in stats:
        w = f"{where}/initializer_stats/{s['name']}"
        if set(s) - {"blocks"} != keys:
            fail(f"{w}: keys {sorted(s)}")
        if s["n"] != numel(s["shape"]):
            fail(f"{w}: n {s['n']} for shape {s['shape']}")
        for k in ("mean", "std", "min", "max"):
            check_number(s[k], f"{w}/{k}")
        if not (s["min"] <= s["mean"] <= s["max"]) or s["std"] < 0:
            fail(f"{w}: inconsistent min/mean/max/std")
        shp = s["shape"]
        two = len(shp) == 2
        want_row = two and shp[0] <= shp[1]
        want_col = two and shp[0] >= shp[1]
        for k, want in (("row_orthogonality", want_row), ("col_orthogonality", want_col)):
            if want:
                check_number(s[k], f"{w}/{k}")
            elif s[k] is not None:
                fail(f"{w}: {k} must be null for shape {shp}")
        if "blocks" in s:
            if sum(b["n"] for b in s["blocks"]) != s["n"]:
                fail(f"{w}: blocks do not cover the weight")
            for b in s["blocks"]:
                for k in ("mean", "std", "min", "max"):
                    check_number(b[k], f"{w}/blocks/{k}")


def check_case(case, dialect, where):
    if set(case) - KNOWN_KEYS:
        fail(f"{where}: unknown keys {sorted(set(case) - KNOWN_KEYS)}")
    stats_case = "initializer_stats" in case
    # A case with its own model_files exists only as a model file (conversion.json): its weights
    # are in the file, not in the fixture.
    file_only = "model_files" in case
    need = ("name", "layer", "input_size", "calls") if stats_case else (
        "name", "layer", "input_size", "tolerance", "calls", "model_layer") if file_only else (
        "name", "layer", "input_size", "weights", "tolerance", "calls")
    for k in need:
        if k not in case:
            fail(f"{where}: missing {k}")
    layer = case["layer"]
    cls = layer["class_name"]
    cfg = layer["config"]
    if dialect == "keras3":
        for k in ("module", "registered_name", "build_config"):
            if k not in layer:
                fail(f"{where}: keras3 layer lacks {k}")
    if cls not in ("GRU", "LSTM", "GRUCell", "LSTMCell", "CuDNNGRU", "CuDNNLSTM", "SimpleRNN",
                   "SimpleRNNCell"):
        fail(f"{where}: class {cls}")
    if cls.startswith("CuDNN") and dialect != "keras2":
        fail(f"{where}: CuDNN layer in {dialect}")
    is_cell = cls.endswith("Cell")
    is_gru = "GRU" in cls
    is_simple = cls.startswith("SimpleRNN")
    u = cfg["units"]
    F = case["input_size"]
    n = 1 if is_simple else (3 if is_gru else 4)
    ns = 2 if "LSTM" in cls else 1
    if is_simple:
        for k in ("recurrent_activation", "reset_after", "unit_forget_bias", "implementation"):
            if k in cfg:
                fail(f"{where}: {cls} has no argument {k}")
    if not (case.get("tolerance", 1e-5) > 0):
        fail(f"{where}: tolerance")
    if case.get("tolerance", 1e-5) != 1e-5 and "tolerance_reason" not in case:
        fail(f"{where}: loosened tolerance without tolerance_reason")

    # weights
    exp = [("kernel", [F, n * u]), ("recurrent_kernel", [u, n * u])]
    if cls.startswith("CuDNN"):
        exp.append(("bias", [2 * n * u]))
    elif cfg.get("use_bias", True):
        if is_gru and cfg.get("reset_after", True):
            exp.append(("bias", [2, 3 * u]))
        else:
            exp.append(("bias", [n * u]))
    if stats_case:
        if case["calls"]:
            fail(f"{where}: an initializer_stats case must have no calls")
        if "losses" in case or "constrained_weights" in case:
            fail(f"{where}: initializer_stats mixed with losses/constrained_weights")
        check_stats(case["initializer_stats"], exp, where)
        if "weights" not in case:
            return
    if file_only:
        if "weights" in case or "losses" in case or "constrained_weights" in case:
            fail(f"{where}: a model-file-only case carries no weights, losses or constraints")
        if "expect_open_error" in case:
            if not isinstance(case["expect_open_error"], str) or not case["expect_open_error"]:
                fail(f"{where}: expect_open_error must be a non-empty string")
            if case["calls"]:
                fail(f"{where}: a case whose file fails to open has no calls")
            return
    elif "expect_open_error" in case:
        fail(f"{where}: expect_open_error needs the case's own model_files")
    else:
        got = [(w["name"], w["shape"]) for w in case["weights"]]
        if got != exp:
            fail(f"{where}: weights {got}, expected {exp}")
        for w in case["weights"]:
            check_tensor(w, f"{where}/weights/{w['name']}")
    if stats_case:
        return
    if "constrained_weights" in case:
        cw = case["constrained_weights"]
        if [(w["name"], w["shape"]) for w in cw] != exp:
            fail(f"{where}: constrained_weights {[(w['name'], w['shape']) for w in cw]}")
        for w in cw:
            check_tensor(w, f"{where}/constrained_weights/{w['name']}")

    stateful = cfg.get("stateful", False)
    tm = cfg.get("time_major", False)
    if stateful and len(case["calls"]) != 3:
        fail(f"{where}: stateful case with {len(case['calls'])} calls")
    if not case["calls"]:
        fail(f"{where}: no calls")
    for ci, call in enumerate(case["calls"]):
        w = f"{where}/call{ci}"
        if set(call) != {"reset_states", "input", "mask", "initial_state", "training", "outputs"}:
            fail(f"{w}: keys {sorted(call)}")
        if call["training"] is not False:
            fail(f"{w}: training")
        shp = call["input"]["shape"]
        check_tensor(call["input"], f"{w}/input")
        if is_cell:
            if len(shp) != 2 or shp[1] != F:
                fail(f"{w}: cell input shape {shp}")
            B, T = shp[0], None
        else:
            if len(shp) != 3 or shp[2] != F:
                fail(f"{w}: input shape {shp}")
            T, B = (shp[0], shp[1]) if tm else (shp[1], shp[0])
        rs = call["reset_states"]
        if rs is not None:
            if not stateful:
                fail(f"{w}: reset_states on a non-stateful layer")
            if rs and dialect != "keras2":
                fail(f"{w}: reset_states(states) is K2 only")
            if rs and len(rs) != ns:
                fail(f"{w}: reset_states count")
            for t in rs:
                check_tensor(t, f"{w}/reset_states", [B, u])
        if call["mask"] is not None:
            if is_cell or tm:
                fail(f"{w}: mask on a cell / time_major case")
            check_tensor(call["mask"], f"{w}/mask", [B, T], ints=True)
        init = call["initial_state"]
        if init and len(init) != ns:
            fail(f"{w}: initial_state count {len(init)}")
        if is_cell and len(init) != ns:
            fail(f"{w}: cells need explicit states")
        for t in init:
            check_tensor(t, f"{w}/initial_state", [B, u])
        outs = call["outputs"]
        if is_cell:
            exp_out = [("output", [B, u]), ("state_h", [B, u])] + (
                [("state_c", [B, u])] if ns == 2 else [])
        else:
            if cfg.get("return_sequences"):
                o = [T, B, u] if tm else [B, T, u]
            else:
                o = [B, u]
            exp_out = [("output", o)]
            if cfg.get("return_state"):
                exp_out += [("state_h", [B, u])] + ([("state_c", [B, u])] if ns == 2 else [])
        got = [(t["name"], t["shape"]) for t in outs]
        if got != exp_out:
            fail(f"{w}: outputs {got}, expected {exp_out}")
        for t in outs:
            check_tensor(t, f"{w}/outputs/{t['name']}")

    if "losses" in case:
        if not case["calls"]:
            fail(f"{where}: losses without a call")
        out_names = [t["name"] for t in case["calls"][-1]["outputs"]]
        names = [entry["name"] for entry in case["losses"]]
        act = [n[len("activity:"):] for n in names if n.startswith("activity:")]
        wts = [n for n in names if not n.startswith("activity:")]
        if names != ["activity:" + n for n in act] + wts:
            fail(f"{where}: activity losses must come first: {names}")
        if act and act != out_names:
            fail(f"{where}: activity losses {act} but outputs {out_names}")
        present = [w["name"] for w in case["weights"]]
        if wts != [n for n in WEIGHT_ORDER if n in wts] or not set(wts) <= set(present):
            fail(f"{where}: weight losses {wts} (weights {present})")
        if dialect == "keras3" and cfg.get("trainable") is False and wts:
            fail(f"{where}: keras3 reports no weight penalty for a frozen layer")
        for entry in case["losses"]:
            if set(entry) != {"name", "value"}:
                fail(f"{where}: loss keys {sorted(entry)}")
            check_number(entry["value"], f"{where}/losses/{entry['name']}")
            if entry["value"] < 0:
                fail(f"{where}: negative loss {entry}")


def check_model_fields(doc, case, where, layers_per_file, referenced):
    """model_files / model_layer; returns the number of (case, model file) pairs."""
    w = f"{where}/{case['name']}"
    files = case.get("model_files", doc.get("model_files"))
    for key, val in (("model_files", doc.get("model_files")), ("model_files", case.get("model_files"))):
        if val is None:
            continue
        if not isinstance(val, list) or not val or not all(isinstance(f, str) for f in val):
            fail(f"{w}: {key} must be a non-empty list of paths")
        for f in val:
            if not f.startswith("models/") or not f.endswith((".keras", ".h5")):
                fail(f"{w}: model file {f!r} (expected models/<dialect>/<name>.keras|.h5)")
            if not os.path.isfile(os.path.join(HERE, f)):
                fail(f"{w}: model file {f} does not exist")
            referenced.add(f)
    cls = case["layer"]["class_name"]
    has_layer = "model_layer" in case
    if cls.endswith("Cell") and has_layer:
        fail(f"{w}: a cell is not a layer of a model")
    if has_layer and not files:
        fail(f"{w}: model_layer without model_files")
    if files and not cls.endswith("Cell") and case.get("calls") and "weights" in case \
            and not has_layer:
        fail(f"{w}: the file has model files but the case has no model_layer")
    if not has_layer:
        return 0
    if not isinstance(case["model_layer"], str) or not case["model_layer"]:
        fail(f"{w}: model_layer must be a non-empty string")
    for f in files:
        seen = layers_per_file.setdefault(f, set())
        if case["model_layer"] in seen:
            fail(f"{w}: layer {case['model_layer']} appears twice in {f}")
        seen.add(case["model_layer"])
    return len(files)


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "fixtures")
    total = 0
    ncases = 0
    n_model = 0
    layers_per_file = {}
    referenced = set()
    for dialect in ("keras2", "keras3"):
        files = sorted(glob.glob(os.path.join(root, dialect, "*.json")))
        if not files:
            fail(f"no fixtures for {dialect}")
        names = set()
        for path in files:
            size = os.path.getsize(path)
            total += size
            if size > MAX_FILE:
                fail(f"{path}: {size} bytes > {MAX_FILE}")
            with open(path, encoding="utf-8") as fh:
                doc = json.load(fh)
            if doc.get("format") != 1 or doc.get("dialect") != dialect:
                fail(f"{path}: format/dialect")
            if doc.get("generator") not in GENERATORS:
                fail(f"{path}: generator")
            if set(doc) - {"format", "dialect", "versions", "generator", "model_files", "cases"}:
                fail(f"{path}: unknown top-level keys")
            v = doc["versions"]
            if set(v) != {"python", "tensorflow", "keras", "numpy", "backend"}:
                fail(f"{path}: versions keys {sorted(v)}")
            for case in doc["cases"]:
                if case["name"] in names:
                    fail(f"{path}: duplicate name {case['name']}")
                names.add(case["name"])
                check_case(case, dialect, f"{dialect}/{os.path.basename(path)}/{case['name']}")
                n_model += check_model_fields(doc, case, f"{dialect}/{os.path.basename(path)}",
                                              layers_per_file, referenced)
            ncases += len(doc["cases"])
            print(f"{dialect}/{os.path.basename(path)}: {len(doc['cases'])} cases, "
                  f"{size / 1024:.1f} KiB (keras {v['keras']}, tensorflow {v['tensorflow']})")
    if total > MAX_TOTAL:
        fail(f"total {total} bytes > {MAX_TOTAL}")
    models = sorted(glob.glob(os.path.join(HERE, "models", "*", "*")))
    for m in models:
        if os.path.relpath(m, HERE) not in referenced:
            fail(f"{m}: not referenced by any fixture")
    msize = sum(os.path.getsize(m) for m in models)
    if msize > MAX_MODELS:
        fail(f"model files: {msize} bytes > {MAX_MODELS}")
    print(f"OK: {ncases} cases, {total / 1024:.1f} KiB; {n_model} case/model-file pairs in "
          f"{len(models)} model files, {msize / 1024:.1f} KiB")


if __name__ == "__main__":
    main()
