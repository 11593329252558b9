#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The error table of docs/precision.md: `recur verify --precision P` over every model file with
Keras's expected outputs, for P in float32, bf16 and int8, printed as a Markdown table of the max
abs error against Keras (and the largest |expected| value, the scale the error compares with).

  scripts/precision-errors.py [--recur build/cli/recur] [--kernels avx512|avx2|baseline]

Files: the graph fixtures (tests/keras/graphs/**/<dialect>.json: each case's first call, whole
model), the layer fixtures (tests/keras/fixtures/<dialect>/*.json: each case's first call with
--layer, cases without initial states or training), and the bundled model (examples/models).
Needs NumPy (to write the .npy inputs). Cases the CLI cannot run as one call (e.g. Keras 3 ragged
inputs, or models without recurrent layers, which have no precision to set) are counted as
skipped."""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PRECISIONS = ("float32", "bf16", "int8")


def save(path, t, dtype=None):
    a = np.asarray(t["data"], dtype=dtype or t.get("dtype", "float32")).reshape(t["shape"])
    np.save(path, a)
    return a


def verify(recur, model, inputs, expected, precision, env, layer=None, masks=(), backend=None):
    cmd = [recur, "verify", str(model), "--precision", precision, "--atol", "1e30"]
    if backend:
        cmd += ["--keras-backend", backend]
    for x in inputs:
        cmd += ["--input", x]
    for m in masks:
        cmd += ["--mask", m]
    for y in expected:
        cmd += ["--expected", y]
    if layer:
        cmd += ["--layer", layer]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    m = re.search(r"precision: (\w+)\nmax abs error: ([0-9.e+-]+)", r.stdout)
    if r.returncode != 0 or not m or m.group(1) != precision:
        return None, (r.stderr or r.stdout).strip().splitlines()[-1:] or ["?"]
    return float(m.group(2)), None


def graph_cases(tmp):
    for js in sorted(ROOT.glob("tests/keras/graphs/**/*.json")):
        doc = json.loads(js.read_text())
        if "cases" not in doc:
            continue
        # Keras 3 run under JAX: its numbers at masked steps (recur_model_set_keras_backend).
        backend = "jax" if doc.get("backend") == "jax" else None
        for c in doc["cases"]:
            call = c["calls"][0]
            if any(t.get("dtype", "float32") not in ("float32", "float64", "int32", "int64") for t in call["inputs"]):
                yield "%s (%s)" % (js, c["name"]), None, [], [], 0.0, None, (), None  # text inputs: skipped
                continue
            d = tmp / ("g_%s_%s" % (js.stem, c["name"]))
            d.mkdir(exist_ok=True)
            ins = []
            for k, t in enumerate(call["inputs"]):
                p = d / ("x%d.npy" % k)
                save(p, t)
                ins.append(str(p))
            outs, scale = [], 0.0
            for k, t in enumerate(call["outputs"]):
                p = d / ("y%d.npy" % k)
                a = save(p, t, "float32")
                scale = max(scale, float(np.max(np.abs(a))) if a.size else 0.0)
                outs.append(str(p))
            for f in c["files"]:
                model = js.parent / f if not f.startswith("graphs/") else ROOT / "tests/keras" / f
                yield "%s (%s)" % (f, c["name"]), model, ins, outs, scale, None, (), backend


def layer_cases(tmp):
    for js in sorted(ROOT.glob("tests/keras/fixtures/*/*.json")):
        doc = json.loads(js.read_text())
        files = doc.get("model_files") or []
        for c in doc.get("cases", []):
            if not c.get("model_layer") or not c.get("calls"):
                continue
            call = c["calls"][0]
            if call.get("initial_state") or call.get("training") or "input" not in call:
                continue
            d = tmp / ("l_%s_%s_%s" % (js.parent.name, js.stem, c["name"]))
            d.mkdir(exist_ok=True)
            x = d / "x.npy"
            save(x, call["input"])
            masks = []
            if call.get("mask"):
                mp = d / "m.npy"
                np.save(mp, np.asarray(call["mask"]["data"]).reshape(call["mask"]["shape"]).astype(np.uint8))
                masks.append(str(mp))
            outs, scale = [], 0.0
            for t in call["outputs"]:
                p = d / (t["name"] + ".npy")
                a = save(p, t, "float32")
                scale = max(scale, float(np.max(np.abs(a))) if a.size else 0.0)
                outs.append("%s=%s" % (t["name"], p))
            for f in files:
                yield ("%s (%s)" % (f, c["name"]), ROOT / "tests/keras" / f, [str(x)], outs, scale, c["model_layer"],
                       masks, None)


def example_cases():
    ex = ROOT / "examples/models"
    for dialect in ("keras2", "keras3"):
        for ext in ("keras", "h5"):
            model = ex / ("sentiment_%s.%s" % (dialect, ext))
            want = np.load(ex / ("sentiment_%s_keras.npy" % dialect))
            yield ("examples/models/" + model.name, model, [str(ex / "sentiment_inputs.npy")],
                   [str(ex / ("sentiment_%s_keras.npy" % dialect))], float(np.max(np.abs(want))), None, (), None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--recur", default=str(ROOT / "build/cli/recur"))
    ap.add_argument("--kernels", default=None, help="RECUR_CPU_KERNELS for the runs")
    ap.add_argument("--rows", action="store_true", help="print every file's row (default: groups only)")
    ns = ap.parse_args()
    env = dict(os.environ)
    if ns.kernels:
        env["RECUR_CPU_KERNELS"] = ns.kernels
    groups = {}  # group -> [count, worst per precision, scale]
    skipped = {}
    rows = []
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        for source in (example_cases(), graph_cases(tmp), layer_cases(tmp)):
            for label, model, ins, outs, scale, layer, masks, backend in source:
                errs = []
                why = ["string inputs (the CLI takes numbers)"] if model is None else None
                for p in (PRECISIONS if model is not None else ()):
                    e, why = verify(ns.recur, model, ins, outs, p, env, layer, masks, backend)
                    if e is None:
                        break
                    errs.append(e)
                if len(errs) != len(PRECISIONS):
                    key = (why or ["?"])[0][:100]
                    skipped[key] = skipped.get(key, 0) + 1
                    continue
                rel = str(model.relative_to(ROOT)) if model.is_relative_to(ROOT) else str(model)
                group = "examples/models" if rel.startswith("examples") else "/".join(rel.split("/")[:-1])
                g = groups.setdefault(group, [0, [0.0] * len(PRECISIONS), 0.0])
                g[0] += 1
                g[1] = [max(a, b) for a, b in zip(g[1], errs)]
                g[2] = max(g[2], scale)
                rows.append((label, errs, scale))
    print("| files | runs | largest \\|expected\\| | float32 | bf16 | int8 |")
    print("|---|---:|---:|---:|---:|---:|")
    for group in sorted(groups):
        n, worst, scale = groups[group]
        print("| %s | %d | %.3g | %.1e | %.1e | %.1e |" % (group, n, scale, *worst))
    if ns.rows:
        print()
        print("| run | largest \\|expected\\| | float32 | bf16 | int8 |")
        print("|---|---:|---:|---:|---:|")
        for label, errs, scale in rows:
            print("| %s | %.3g | %.1e | %.1e | %.1e |" % (label, scale, *errs))
    if skipped:
        print()
        print("skipped (not one CLI call, or no recurrent layer):", sum(skipped.values()))
        for why, n in sorted(skipped.items(), key=lambda kv: -kv[1]):
            print("  %4d  %s" % (n, why))
    return 0


if __name__ == "__main__":
    sys.exit(main())
