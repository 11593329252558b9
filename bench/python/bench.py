# SPDX-License-Identifier: Apache-2.0
"""recur's Python API against ONNX Runtime and LiteRT, in one process (README.md).

    bench.py --models DIR --out DIR [--rounds 7] [--seconds 0.4] [--threads 1,2] [--quick]

Needs the bench venv (requirements.txt), recur's package on PYTHONPATH, and the models of
make_models.py in --models. Writes results.json and results.md to --out.
"""
import argparse
import ctypes
import importlib.metadata as md
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(REPO, "bench", "cpu"))  # the ONNX graph builder of the CPU benchmark

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
import recur  # noqa: E402
from ai_edge_litert.interpreter import Interpreter  # noqa: E402
from ort_worker import OrtLayer, Spec, build_model, identity_cost  # noqa: E402
from recur import _native as N  # noqa: E402

import tables  # noqa: E402  (bench/python/tables.py)

CELLS = ("gru", "lstm")
ORT_CELL = {"gru": "gru_ra", "lstm": "lstm"}  # Keras 2's GRU default is reset_after=True


# ---- timing ------------------------------------------------------------------------------------

def timed(fn, n):
    """(seconds per call, process CPU time / wall time) of fn(n). fn may return its own seconds
    for the n calls (the C loop, which times inside C); None means the wall time here."""
    c0, t0 = time.process_time(), time.perf_counter()
    own = fn(n)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    return (own if own is not None else wall) / n, cpu / wall if wall > 0 else float("nan")


def calibrate(fn, seconds):
    """Calls per measurement so that one lasts about `seconds` (warming up on the way)."""
    n = 1
    while True:
        per, _ = timed(fn, n)
        if per * n >= seconds / 4 or n >= 1 << 24:
            return max(1, int(math.ceil(seconds / max(per, 1e-9))))
        n *= 4 if per * n < seconds / 40 else 2


def interleaved(contenders, rounds, seconds):
    """contenders: {name: fn}. Every round times every contender once, in a fresh random order.
    Returns {name: {median, min, cpu_per_wall, rounds: [...], calls}} (seconds per call)."""
    calls = {k: calibrate(f, seconds) for k, f in contenders.items()}
    per = {k: [] for k in contenders}
    ratio = {k: [] for k in contenders}
    names = list(contenders)
    for _ in range(rounds):
        random.shuffle(names)
        for k in names:
            t, r = timed(contenders[k], calls[k])
            per[k].append(t)
            ratio[k].append(r)
    return {k: {"median": statistics.median(per[k]), "min": min(per[k]),
                "cpu_per_wall": statistics.median(ratio[k]), "rounds": per[k], "calls": calls[k]}
            for k in contenders}


def maxdiff(a, b):
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


# ---- contenders ----------------------------------------------------------------------------------

class Data:
    def __init__(self, models):
        self.dir = models
        with open(os.path.join(models, "versions.json")) as f:
            self.meta = json.load(f)
        self.ref = dict(np.load(os.path.join(models, "reference.npz")))
        self.H, self.F, self.T = self.meta["units"], self.meta["features"], self.meta["timesteps"]
        self.S = self.meta["stream_steps"]

    def path(self, name):
        return os.path.join(self.dir, name)

    def x(self, mode, B):
        """The timed call's input: the whole sequence, or one step (B, 1, F)."""
        return np.ascontiguousarray(self.ref["x_seq"][:B] if mode == "seq" else self.ref["x_stream"][:B, :1])

    def check_input(self, mode, B):
        return np.ascontiguousarray(self.ref["x_seq"][:B] if mode == "seq" else self.ref["x_stream"][:B])

    def keras(self, cell, mode, B):
        return self.ref[f"{cell}_{mode if mode == 'seq' else 'stream'}_b{B}"]

    def weights(self, cell):
        w = np.load(self.path(f"{cell}_weights.npz"))
        return w["kernel"], w["recurrent_kernel"], w["bias"]


def recur_public(d, cell, mode, B, threads):
    """Model.predict / Stream.step, the API users call."""
    m = recur.load_model(d.path(f"{cell}.keras"), num_threads=threads)
    x = d.x(mode, B)
    if mode == "seq":
        def run(n):
            p = m.predict
            for _ in range(n):
                p(x)
    else:
        s = m.new_state(B)

        def run(n):
            step = s.step
            for _ in range(n):
                step(x)
    return run


def recur_public_check(d, cell, mode, B):
    m = recur.load_model(d.path(f"{cell}.keras"))
    xc = d.check_input(mode, B)
    if mode == "seq":
        return m.predict(xc)
    s = m.new_state(B)
    return np.concatenate([s.step(xc[:, t]) for t in range(xc.shape[1])], axis=1)


def recur_public_2d(d, cell, B, threads):
    """Stream.step given one step without its time axis, (B, F): the converting path."""
    m = recur.load_model(d.path(f"{cell}.keras"), num_threads=threads)
    x = np.ascontiguousarray(d.x("step", B)[:, 0])
    s = m.new_state(B)

    def run(n):
        step = s.step
        for _ in range(n):
            step(x)
    return run


def recur_native(d, cell, mode, B, threads, new_output=False):
    """The extension's named run/step called directly, inputs and outputs prepared once: the
    SWIG wrapper's cost without the package's Python. new_output: a fresh output array each
    call, as an API that returns its result must make (the least a public call can cost)."""
    h = N.Model.open(d.path(f"{cell}.keras"))
    h.set_num_threads(threads)
    x = d.x(mode, B)
    shape = (B, x.shape[1], d.H)
    out = np.empty(shape, np.float32)
    name = cell.encode()
    ins, outs = [(b"x", 1, x, x.shape, None)], [(name, out)]
    f = N.recur_py_run_named if mode == "seq" else N.recur_py_step_named
    target = h if mode == "seq" else N.ModelState.create(h, B)
    if not new_output:
        def run(n):
            for _ in range(n):
                f(target, ins, outs, None)
    else:
        def run(n):
            empty, f32 = np.empty, np.float32
            for _ in range(n):
                y = empty(shape, f32)
                f(target, [(b"x", 1, x, x.shape, None)], [(name, y)], None)
    return run


class CLoop:
    """c_loop.c, compiled here with cc against recur's headers and the package's librecur.so.0."""

    def __init__(self, build_dir):
        pkg = os.path.dirname(recur.__file__)
        so = os.path.join(build_dir, "c_loop.so")
        src = os.path.join(HERE, "c_loop.c")
        if not os.path.exists(so) or os.path.getmtime(so) < os.path.getmtime(src):
            os.makedirs(build_dir, exist_ok=True)
            subprocess.run([os.environ.get("CC", "cc"), "-O2", "-shared", "-fPIC", "-o", so, src,
                            "-I" + os.path.join(REPO, "c_api", "include"), "-L" + pkg, "-l:librecur.so.0",
                            "-Wl,-rpath," + pkg], check=True)
        # recur's package has loaded librecur.so.0 already: the loader binds this to that copy.
        self.lib = ctypes.CDLL(so)
        f = self.lib.bench_c_loop_ns
        f.restype = ctypes.c_double
        f.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int32, ctypes.c_int32,
                      ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_void_p,
                      ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int32, ctypes.c_int32]

    def contender(self, d, cell, mode, B, threads, named=True):
        x = d.x(mode, B)
        out = np.empty((B, x.shape[1], d.H), np.float32)
        path = d.path(f"{cell}.keras").encode()

        def run(n):
            ns = self.lib.bench_c_loop_ns(path, b"x", cell.encode(), threads, int(mode != "seq"), int(named),
                                          B, d.T, d.F,
                                          x.ctypes.data, out.ctypes.data, out.size, min(n, 100), n)
            if ns < 0:
                raise RuntimeError(f"c_loop: recur status {-ns}")
            return ns * n * 1e-9
        return run


def layer_public(d, cell, B, threads):
    """recur.layers: the model's layer (Model.get_layer), one step of a LayerState, x (B, F)."""
    layer = recur.load_model(d.path(f"{cell}.keras")).get_layer(cell)
    layer.num_threads = threads
    s = layer.new_state(B)
    x = np.ascontiguousarray(d.x("step", B)[:, 0])

    def run(n):
        step = s.step
        for _ in range(n):
            step(x)
    return run


def _has_layers():
    try:
        import recur.layers  # noqa: F401
        return True
    except ImportError:
        return False


def layer_step(d, cell, B, threads, in_c):
    """The recurrent layer alone (the model's, through recur_layer_forward_state), one step:
    in a C loop (recur_binding_c_step_ns) or called from Python one step at a time."""
    h = N.Model.open(d.path(f"{cell}.keras"))
    lay = h.get_layer(cell)
    lay.set_num_threads(threads)
    st = N.State.create(lay, B)
    x = np.ascontiguousarray(d.x("step", B)[:, 0])
    out = np.empty((B, d.H), np.float32)
    if in_c:
        def run(n):
            ns = N.recur_binding_c_step_ns(lay, st, x, out, n)
            if ns < 0:
                raise RuntimeError("recur_binding_c_step_ns failed")
            return ns * n * 1e-9
    else:
        def run(n):
            f = lay.forward_state
            for _ in range(n):
                f(st, x, 1, None, out)
    return run


def ort_layer(d, cell, mode, B, threads, x=None):
    """ONNX Runtime through IOBinding (bench/cpu/ort_worker.py): one GRU/LSTM node between
    Transposes, as converters emit for a Keras layer; a step passes h (and c) in and out."""
    T = d.T if mode == "seq" else 1
    s = Spec([ORT_CELL[cell], str(B), str(T), str(d.F), str(d.H), "0" if mode == "seq" else "1",
              str(d.S if mode != "seq" else T), "-"])
    layer = OrtLayer(s, build_model(s, *d.weights(cell)), d.x(mode, B) if x is None else x)
    if threads:
        layer.set_threads(threads)
    return layer


def ort_contender(d, cell, mode, B, threads):
    layer = ort_layer(d, cell, mode, B, threads)

    def run(n):
        layer.run_n(n)
    return run


def ort_check(d, cell, mode, B):
    return ort_layer(d, cell, mode, B, 0).check(d.check_input(mode, B))


class Lite:
    """A LiteRT interpreter: set_tensor, invoke, get_tensor of the output (what its Python API
    offers); a step also copies the state outputs to the state inputs of the next step."""

    def __init__(self, path, threads):
        self.it = Interpreter(model_path=path, num_threads=threads)
        self.it.allocate_tensors()
        ins = self.it.get_input_details()
        outs = self.it.get_output_details()
        self.x = next(i["index"] for i in ins if "serving_default_x" in i["name"])
        st_in = sorted((i["name"], i["index"]) for i in ins if "state" in i["name"])
        # Keras outputs (y, h[, c]) are StatefulPartitionedCall:0, :1, :2.
        by_k = {int(o["name"].rsplit(":", 1)[1]): o["index"] for o in outs}
        self.y = by_k[0]
        self.pairs = [(idx, by_k[k + 1]) for k, (_, idx) in enumerate(st_in)]
        shapes = {i["index"]: tuple(i["shape"]) for i in ins}
        for idx, _ in self.pairs:  # the first step's states; later steps carry theirs over
            self.it.set_tensor(idx, np.zeros(shapes[idx], np.float32))

    def call(self, x):
        it = self.it
        it.set_tensor(self.x, x)
        it.invoke()
        for i, o in self.pairs:  # the next step's states (outputs have no data before an invoke)
            it.set_tensor(i, it.get_tensor(o))
        return it.get_tensor(self.y)

    def ops(self):
        return sorted({o["op_name"] for o in self.it._get_ops_details()})


def lite_path(d, cell, mode, B, variant):
    return d.path(f"{cell}_{'seq' if mode == 'seq' else variant}_b{B}.tflite")


def lite_contender(d, cell, mode, B, threads, variant="step"):
    lt = Lite(lite_path(d, cell, mode, B, variant), threads)
    x = d.x(mode, B)
    it, xi, yi, pairs = lt.it, lt.x, lt.y, lt.pairs
    if not pairs:
        def run(n):
            for _ in range(n):
                it.set_tensor(xi, x)
                it.invoke()
                it.get_tensor(yi)
    else:
        def run(n):
            for _ in range(n):
                it.set_tensor(xi, x)
                it.invoke()
                for i, o in pairs:
                    it.set_tensor(i, it.get_tensor(o))
                it.get_tensor(yi)
    return run


def lite_check(d, cell, mode, B, variant="step"):
    lt = Lite(lite_path(d, cell, mode, B, variant), 1)
    xc = d.check_input(mode, B)
    if mode == "seq":
        return lt.call(xc), lt.ops()
    # The first call's states: zeros, set by Lite.__init__; later ones carry over.
    return np.concatenate([lt.call(np.ascontiguousarray(xc[:, t:t + 1])) for t in range(xc.shape[1])], axis=1), lt.ops()


# ---- environment, imports, sizes ---------------------------------------------------------------

def cpu_info():
    model, flags = "?", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model == "?":
                    model = line.split(":", 1)[1].strip()
                if line.startswith("flags") and not flags:
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    isa = [f for f in ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "amx_tile")
           if f in flags]
    return {"model": model, "isa": isa, "cores": os.cpu_count()}


def import_time(python, stmt, env, runs):
    """Median and min seconds of `stmt` in a fresh interpreter (after one untimed run, so the
    page cache is warm), timed inside the process: the import alone, not Python's start."""
    code = f"import time; t = time.perf_counter(); {stmt}; print(time.perf_counter() - t)"
    out = []
    for i in range(runs + 1):
        r = subprocess.run([python, "-c", code], env=env, capture_output=True, text=True)
        if r.returncode != 0:
            return {"error": r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"}
        if i:
            out.append(float(r.stdout.strip().splitlines()[-1]))
    return {"median": statistics.median(out), "min": min(out), "runs": out}


SIZE_CODE = r"""
import importlib.metadata as md, json, os, re, sys
try:
    from packaging.requirements import Requirement
except ImportError:
    Requirement = None
def dist(name):
    try:
        return md.distribution(name)
    except md.PackageNotFoundError:
        return md.distribution(name + "-cpu")  # tensorflow-cpu stands for tensorflow
def size(name):
    d = dist(name)
    total = 0
    for f in d.files or []:
        try:
            total += os.path.getsize(f.locate())
        except OSError:
            pass
    return d.metadata["Name"], d.version, total
def deps(name):
    out = []
    for r in dist(name).requires or []:
        if Requirement is None:
            if "extra ==" in r:
                continue
            out.append(re.split(r"[ ;<>=!~\[(]", r, 1)[0])
            continue
        q = Requirement(r)
        if q.marker is not None and not q.marker.evaluate({"extra": ""}):
            continue
        out.append(q.name)
    return out
res = {}
for top in sys.argv[1:]:
    seen, todo = {}, [top]
    while todo:
        n = todo.pop()
        key = n.lower().replace("_", "-")
        if key in seen:
            continue
        try:
            seen[key] = size(n)
        except md.PackageNotFoundError:
            seen[key] = (n, None, 0)
            continue
        todo += deps(n)
    own = seen[top.lower().replace("_", "-")]
    if own[1] is None:
        raise SystemExit(top + " is not installed")
    res[top] = {"name": own[0], "version": own[1], "bytes": own[2],
                "with_deps_bytes": sum(v[2] for v in seen.values()),
                "deps": sorted(k for k in seen if k != top.lower().replace("_", "-"))}
print(json.dumps(res))
"""


def dist_sizes(python, names):
    r = subprocess.run([python, "-c", SIZE_CODE] + names, capture_output=True, text=True)
    if r.returncode != 0:
        return {n: {"error": r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "failed"} for n in names}
    return json.loads(r.stdout)


def dir_bytes(path):
    total = 0
    for root, dirs, files in os.walk(path):
        dirs[:] = [x for x in dirs if x != "__pycache__"]
        for f in files:
            if f != ".sources":
                total += os.path.getsize(os.path.join(root, f))
    return total


# ---- the run -------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--build", default=None, help="where c_loop.so is built (default: OUT)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=0.4)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--batches", default=None, help="default: the models' batches")
    ap.add_argument("--keras-python", default=None, help="a Python with TensorFlow, for its import time and size")
    ap.add_argument("--import-runs", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="3 rounds of 0.1 s: checks the pipeline, not the speed")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pin", type=int, default=None,
                    help="the CPU the 1-thread measurements run on (default: the last; -1: not pinned)")
    a = ap.parse_args()
    if a.quick:
        a.rounds, a.seconds, a.import_runs = 3, 0.1, 3
    random.seed(a.seed)
    os.makedirs(a.out, exist_ok=True)
    d = Data(a.models)
    threads = [int(t) for t in a.threads.split(",")]
    batches = [int(b) for b in a.batches.split(",")] if a.batches else d.meta["batches"]
    res = {"env": {
        "cpu": cpu_info(), "recur_kernels": recur.cpu_kernels(), "python": platform.python_version(),
        "platform": platform.platform(), "load_start": os.getloadavg(),
        "versions": {"recur": recur.__version__, "numpy": np.__version__, "onnxruntime": ort.__version__,
                     "ai-edge-litert": md.version("ai-edge-litert"), "onnx": md.version("onnx"),
                     "keras_models": d.meta},
        "rounds": a.rounds, "seconds": a.seconds,
    }}
    print(f"CPU {res['env']['cpu']['model']} ({', '.join(res['env']['cpu']['isa'])}), recur kernels "
          f"{res['env']['recur_kernels']}, load {os.getloadavg()[0]:.2f}", flush=True)

    # 1. outputs agree: each against Keras's own predict and against recur.
    checks = []
    for cell in CELLS:
        for mode in ("seq", "step"):
            for B in batches:
                keras = d.keras(cell, mode, B)
                r = recur_public_check(d, cell, mode, B)
                row = {"cell": cell, "mode": mode, "batch": B, "recur_vs_keras": maxdiff(r, keras)}
                o = ort_check(d, cell, mode, B)
                row["ort_vs_keras"], row["ort_vs_recur"] = maxdiff(o, keras), maxdiff(o, r)
                variants = ["seq"] if mode == "seq" else ["step", "step_unrolled"]
                for v in variants:
                    lo, ops = lite_check(d, cell, mode, B, v)
                    tag = "litert" if v in ("seq", "step") else "litert_unrolled"
                    row[f"{tag}_vs_keras"], row[f"{tag}_vs_recur"] = maxdiff(lo, keras), maxdiff(lo, r)
                    row[f"{tag}_ops"] = ops
                checks.append(row)
                print("check", json.dumps({k: v for k, v in row.items() if not k.endswith("_ops")}), flush=True)
    res["checks"] = checks
    worst = max(v for row in checks for k, v in row.items() if k.endswith(("_vs_keras", "_vs_recur")))
    if worst > 1e-4:
        print(f"warning: outputs differ by up to {worst:.3g}", flush=True)

    # Every 1-thread contender is made and timed on one CPU: it steadies the figures on a shared
    # machine. The 2-thread ones are made after the whole set is allowed again, so that the pools
    # they start may use it.
    all_cpus = os.sched_getaffinity(0)
    pin = max(all_cpus) if a.pin is None else a.pin
    res["env"]["pinned_cpu_1_thread"] = pin if pin >= 0 else None

    def pinned(th):
        os.sched_setaffinity(0, {pin} if th == 1 and pin >= 0 else all_cpus)

    # 2. recur's per-call overhead above the C ABI (batch 1 and the largest batch, 1 thread).
    pinned(1)
    cl = CLoop(a.build or a.out)
    overhead = []
    for cell in CELLS:
        for mode in ("seq", "step"):
            for B in sorted({1, max(batches)}):
                c = {"C loop": cl.contender(d, cell, mode, B, 1),
                     "C loop, float API": cl.contender(d, cell, mode, B, 1, named=False),
                     "native": recur_native(d, cell, mode, B, 1),
                     "native, new array": recur_native(d, cell, mode, B, 1, new_output=True),
                     "public": recur_public(d, cell, mode, B, 1)}
                if mode == "step":
                    c["public (B, F)"] = recur_public_2d(d, cell, B, 1)
                    c["layer C loop"] = layer_step(d, cell, B, 1, True)
                    c["layer native"] = layer_step(d, cell, B, 1, False)
                    if _has_layers():
                        c["layer public"] = layer_public(d, cell, B, 1)
                t = interleaved(c, a.rounds, a.seconds)
                overhead.append({"cell": cell, "mode": mode, "batch": B, "times": t, "load": os.getloadavg()[0]})
                print("overhead", cell, mode, B, {k: round(v["median"] * 1e6, 3) for k, v in t.items()}, flush=True)
    res["overhead"] = overhead

    # 3. recur against ONNX Runtime and LiteRT.
    rows = []
    res["ort_identity_s"] = identity_cost()
    for th in threads:
        pinned(th)
        for cell in CELLS:
            for mode in ("seq", "step"):
                for B in batches:
                    c = {"recur": recur_public(d, cell, mode, B, th),
                         "onnxruntime": ort_contender(d, cell, mode, B, th),
                         "litert": lite_contender(d, cell, mode, B, th)}
                    if mode == "step":
                        c["litert unrolled"] = lite_contender(d, cell, mode, B, th, "step_unrolled")
                    l0 = os.getloadavg()[0]
                    t = interleaved(c, a.rounds, a.seconds)
                    rows.append({"cell": cell, "mode": mode, "batch": B, "threads": th, "times": t,
                                 "load": [l0, os.getloadavg()[0]]})
                    print("peers", th, cell, mode, B,
                          {k: (round(v["median"] * 1e6, 2), round(v["cpu_per_wall"], 2)) for k, v in t.items()},
                          flush=True)
    res["peers"] = rows
    pinned(0)

    # 4. import times and installed sizes.
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(recur.__file__))
    me = sys.executable
    imports = {
        "recur": (me, "import recur"),
        "recur + numpy": (me, "import recur, numpy"),
        "numpy": (me, "import numpy"),
        "onnxruntime": (me, "import onnxruntime"),
        "ai_edge_litert (Interpreter)": (me, "from ai_edge_litert.interpreter import Interpreter"),
    }
    if a.keras_python:
        imports["tensorflow"] = (a.keras_python, "import tensorflow")
    res["imports"] = {k: import_time(p, s, env, a.import_runs) for k, (p, s) in imports.items()}
    for k, v in res["imports"].items():
        print("import", k, v.get("median", v), flush=True)
    pkg = os.path.dirname(recur.__file__)
    sizes = {"recur": {"name": "recur (package folder)", "version": recur.__version__, "bytes": dir_bytes(pkg),
                       "files": sorted(f for f in os.listdir(pkg) if f != ".sources" and f != "__pycache__")}}
    sizes.update(dist_sizes(me, ["numpy", "onnxruntime", "ai-edge-litert"]))
    if a.keras_python:
        sizes.update(dist_sizes(a.keras_python, ["tensorflow", "tf-keras"]))
    res["sizes"] = sizes
    res["env"]["load_end"] = os.getloadavg()
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(res, f, indent=1)
    with open(os.path.join(a.out, "results.md"), "w") as f:
        f.write(tables.markdown(res))
    print(f"wrote {a.out}/results.json and results.md", flush=True)


if __name__ == "__main__":
    main()
