# SPDX-License-Identifier: Apache-2.0
"""Drives the contender processes, checks their outputs against the float64 Keras reference,
times them interleaved, and writes results.json, results.md and bench.png (README.md)."""
import argparse
import datetime
import json
import math
import os
import platform
import queue
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

import reference
import report

HERE = os.path.dirname(os.path.abspath(__file__))

# name, B, T, F, H, streaming. A streaming call is one timestep that continues the state of the
# previous call; the others are whole sequences from zero states.
SHAPES = [
    ("stream256", 1, 1, 256, 256, True),
    ("stream64", 1, 1, 64, 64, True),
    ("seq", 1, 100, 64, 256, False),
    ("batch", 32, 100, 64, 256, False),
    ("large", 64, 50, 512, 1024, False),
]
CONTENDERS = ["recur", "onednn", "torch", "ort"]
THREADS = [1, 2]
STREAM_CHECK_STEPS = 8  # consecutive streaming calls checked, so that carrying the state is checked
TOLERANCE = 1e-4
MEMORY_CASES = [("large", "gru_ra"), ("large", "lstm")]
# Between two timed commands: the pool threads of the contender that just ran spin a little before
# they sleep (OpenMP's default policy, ORT's and recur's pools alike); the next one starts on quiet
# cores.
SETTLE_S = 0.03
# A contender that keeps more cores busy than it was given (CPU time / wall time) is measured at
# another thread count than the row says: the run fails. The slack covers timer granularity and
# the process's own housekeeping.
def over_threads(used, asked):
    return used > asked * 1.1 + 0.1


class WorkerError(RuntimeError):
    """An error reply: the process lives on."""


class WorkerLost(WorkerError):
    """The process died, or hung and was killed."""


REPLY_TIMEOUT_S = 120  # far above any command's time here, even the large shape under load


class Worker:
    """One long-lived contender process, one command line in and one reply line out. Replies are
    read by a thread so that a hung process is noticed, killed and reported, not waited on."""

    def __init__(self, name, argv, env, log):
        self.name, self.argv, self.env, self.log = name, argv, env, log
        self.info = ""
        self._start()

    def _start(self):
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     env=self.env, text=True, bufsize=1, cwd=HERE)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, args=(self.proc, self.lines), daemon=True).start()
        ready = self._reply("start", REPLY_TIMEOUT_S).split(None, 1)
        if not ready or ready[0] != "ready":
            self.proc.kill()
            raise WorkerLost(f"{self.name} process did not start: {' '.join(ready)}")
        self.info = ready[1].strip() if len(ready) > 1 else ""

    @staticmethod
    def _read(proc, lines):
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    def _reply(self, line, timeout):
        try:
            reply = self.lines.get(timeout=timeout)
        except queue.Empty:
            self.proc.kill()
            self.proc.wait()
            raise WorkerLost(f"{self.name} process: no reply within {timeout:.0f} s to '{line}'; killed it")
        if reply is None:
            raise WorkerLost(f"{self.name} process died on '{line}' (exit {self.proc.wait()}); see workers.log")
        return reply

    @property
    def alive(self):
        return self.proc.poll() is None

    def cmd(self, line, timeout=None):
        timeout = timeout or REPLY_TIMEOUT_S
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise WorkerLost(f"{self.name} process is gone (exit {self.proc.wait()}); see workers.log")
        status, _, rest = self._reply(line, timeout).strip().partition(" ")
        if status != "ok":
            raise WorkerError(rest)
        return rest

    def restart(self):
        self.close()
        self._start()

    def close(self):
        if self.alive:
            try:
                self.cmd("quit", timeout=10)
            except WorkerError:
                pass
        if self.alive:
            self.proc.kill()
        self.proc.wait()


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def uptime():
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return f"load average: {loadavg()}"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def write_case(dirname, cell, B, T, F, H, stream, seed):
    """Writes the weights and inputs of one case and returns the float64 reference outputs of
    the check input."""
    rng = np.random.default_rng(seed)
    kernel, recurrent, bias = reference.make_weights(cell, F, H, rng)
    if stream:
        xc = rng.uniform(-1, 1, (B, STREAM_CHECK_STEPS, F)).astype(np.float32)
        x = np.ascontiguousarray(xc[:, :1])
    else:
        x = rng.uniform(-1, 1, (B, T, F)).astype(np.float32)
        xc = x
    os.makedirs(dirname, exist_ok=True)
    for name, a in (("kernel", kernel), ("recurrent_kernel", recurrent), ("bias", bias), ("x", x), ("xc", xc)):
        a.tofile(os.path.join(dirname, name + ".f32"))
    return reference.keras_forward(cell, kernel, recurrent, bias, xc)


def spec_args(cell, B, T, F, H, stream, dirname):
    tc = STREAM_CHECK_STEPS if stream else T
    return f"{cell} {B} {T} {F} {H} {int(stream)} {tc} {dirname}"


def timed_call(worker, name, threads, n):
    """n calls: (wall seconds, CPU seconds of the contender's process)."""
    wall, cpu = worker.cmd(f"time {name} {threads} {n}").split()
    return float(wall), float(cpu)


def calibrate(worker, name, threads, target):
    """Calls per measurement so that one takes at least `target` seconds. The first call also warms
    the process up (thread pools, routes, caches)."""
    timed_call(worker, name, threads, 1)
    n = 1
    while True:
        dt = timed_call(worker, name, threads, n)[0]
        if dt >= min(0.05, target / 2) or n >= 1 << 24:
            break
        n *= 2 if dt <= 0 else min(64, max(2, math.ceil(0.06 / dt)))
    return max(1, math.ceil(target * n / dt)) if dt > 0 else n


def worker_env(threads):
    """A contender process's environment: its own thread count from the start, and each library's
    own defaults otherwise (OpenMP's wait policy included)."""
    env = dict(os.environ)
    env.pop("OMP_WAIT_POLICY", None)
    env["OMP_NUM_THREADS"] = str(threads)
    env.setdefault("BENCH_ORT_SPIN", "1")
    return env


def measure_sgemm(bindir, seconds):
    """One process per thread count, as for the contenders."""
    print("SGEMM 1024^3:", flush=True)
    table = {}
    for t in THREADS:
        out = subprocess.run([os.path.join(bindir, "sgemm_peak"), str(seconds), str(t)], capture_output=True,
                             text=True, env=worker_env(t), check=True).stdout
        for line in out.splitlines():
            lib, thr, gf = line.split()
            table.setdefault(lib, {})[int(thr)] = float(gf)
    for lib, v in table.items():
        print(f"  {lib:9s} " + "  ".join(f"{t} thread(s): {g:6.1f} GFLOP/s" for t, g in sorted(v.items())), flush=True)
    return table


def measure_read(bindir, seconds, sizes):
    """The read rate over a buffer of each size (a streaming step's weights), split across the
    threads as a step's units are; one process per thread count, as for the contenders."""
    table = {}
    if not sizes:
        return table
    print("Read rate over buffers the size of the streaming steps' weights:", flush=True)
    for t in THREADS:
        out = subprocess.run([os.path.join(bindir, "read_peak"), str(seconds), str(t)] + [str(b) for b in sizes],
                             capture_output=True, text=True, env=worker_env(t), check=True).stdout
        for line in out.splitlines():
            _, thr, b, gbps = line.split()
            table.setdefault(int(thr), {})[int(b)] = float(gbps)
    for t, v in sorted(table.items()):
        print(f"  {t} thread(s): " + "  ".join(f"{b / 2**20:.2f} MiB {g:6.1f} GB/s" for b, g in sorted(v.items())),
              flush=True)
    return table


def read_peak(readings):
    """The best reading per thread count and size."""
    best = {}
    for table in readings.values():
        for t, v in table.items():
            for b, g in v.items():
                best.setdefault(t, {})[b] = max(g, best.get(t, {}).get(b, 0.0))
    return best


def stream_weight_sizes(shapes):
    return sorted({reference.weight_bytes(cell, F, H) for _, _, _, F, H, stream in shapes if stream
                   for cell in reference.CELLS})


def set_read_fractions(rows, peak):
    """For streaming rows: the rate each contender read the weights at, and its fraction of the
    read rate measured over a buffer of that size at the same thread count."""
    for row in rows:
        if not row["stream"]:
            continue
        b = reference.weight_bytes(row["cell"], row["F"], row["H"])
        row["weight_bytes"] = b
        top = peak.get(row["threads"], {}).get(b)
        for r in row["results"].values():
            if r["status"] == "ok":
                r["weight_gbps"] = b / r["median_s"] / 1e9
                r["frac_read_peak"] = r["weight_gbps"] / top if top else None


def sgemm_peak(readings):
    """The best rate of any library at any reading, per thread count."""
    return {t: max(v.get(t, 0.0) for table in readings.values() for v in table.values()) for t in THREADS}


def memory_probe(argv, env):
    out = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=HERE)
    if out.returncode != 0:
        raise WorkerError(f"{' '.join(argv[:3])}: exit {out.returncode}: {out.stderr.strip()[-500:]}")
    phases = {}
    for line in out.stdout.splitlines():
        w = line.split()
        if len(w) == 2 and w[0] in ("start", "create", "weights", "call1", "call2"):
            phases[w[0]] = int(w[1])
    return phases


def recur_kernels(bindir, asked=None):
    """The kernel set librecur runs in a process (with RECUR_CPU_KERNELS=asked)."""
    env = dict(os.environ)
    env.pop("RECUR_CPU_KERNELS", None)
    if asked:
        env["RECUR_CPU_KERNELS"] = asked
    out = subprocess.run([os.path.join(bindir, "native_worker"), "--kernels"], capture_output=True, text=True, env=env)
    return out.stdout.strip() if out.returncode == 0 else ""


def other_recur_sets(bindir):
    """recur's kernel sets this CPU runs besides the one it chooses (and the baseline): each is timed
    as a contender of its own ("recur_avx2", say), so that every set is compared with the peers."""
    chosen = recur_kernels(bindir)
    return [k for k in ("avx512", "avx2") if k != chosen and recur_kernels(bindir, k) == k]


# oneDNN capped to the instruction set of recur's other kernel sets: its counterpart on a machine
# with only that set.
ONEDNN_ISA = {"avx2": "AVX2", "avx512": "AVX512_CORE"}


def contender_argv(bindir, c):
    if c.startswith("recur_"):
        c = "recur"
    if c.startswith("onednn_"):
        c = "onednn"
    return {"recur": [os.path.join(bindir, "native_worker")],
            "onednn": [os.path.join(bindir, "native_worker")],
            "torch": [os.path.join(bindir, "torch_worker")],
            "ort": [sys.executable, os.path.join(HERE, "ort_worker.py")]}[c]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="3 rounds of 0.1 s: checks the pipeline, not the speed")
    ap.add_argument("--bin", required=True, help="directory of native_worker, torch_worker, sgemm_peak")
    ap.add_argument("--out", required=True, help="results directory")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--seconds", type=float, help="minimum seconds per measurement")
    ap.add_argument("--shapes", help="comma-separated subset of " + ",".join(s[0] for s in SHAPES))
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--recur-sets", default="auto",
                    help="recur's other kernel sets to time as well (comma-separated, e.g. avx2; 'auto': every set "
                         "this CPU runs except baseline; 'none')")
    ap.add_argument("--threads", default=",".join(map(str, THREADS)),
                    help="comma-separated thread counts (default %(default)s), each measured in its own processes")
    ap.add_argument("--ort-no-spin", action="store_true",
                    help="ORT intra-op pool without spin-waiting (not its default)")
    args = ap.parse_args()
    THREADS[:] = sorted({int(t) for t in args.threads.split(",")})
    if THREADS[0] < 1:
        sys.exit("error: --threads: counts must be >= 1")
    rounds = args.rounds or (3 if args.quick else 7)
    target = args.seconds or (0.1 if args.quick else 0.4)
    shapes = SHAPES
    if args.shapes:
        wanted = args.shapes.split(",")
        shapes = [s for s in SHAPES if s[0] in wanted]
    os.makedirs(args.out, exist_ok=True)
    started = time.time()
    if args.ort_no_spin:
        os.environ["BENCH_ORT_SPIN"] = "0"
    ort_spin = os.environ.get("BENCH_ORT_SPIN", "1")
    print(f"one process per contender and thread count, OMP_NUM_THREADS set to that count from its start, "
          f"each library's default wait policy; ORT intra-op spinning {'on (its default)' if ort_spin == '1' else 'off'}",
          flush=True)
    print(f"{rounds} rounds, >= {target} s per measurement", flush=True)

    meta = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "quick": args.quick,
        "rounds": rounds,
        "seconds_per_measurement": target,
        "env": {"processes": "one per contender and thread count", "OMP_NUM_THREADS": "the measured count",
                "OMP_WAIT_POLICY": "unset (each library's default)", "ort_intra_op_allow_spinning": ort_spin,
                "settle_s": SETTLE_S},
        "uptime_start": uptime(),
        "tolerance": TOLERANCE,
    }

    if args.recur_sets == "auto":
        others = other_recur_sets(args.bin)
    elif args.recur_sets == "none":
        others = []
    else:
        others = [k for k in args.recur_sets.split(",") if k]
    CONTENDERS[1:1] = [f"recur_{k}" for k in others]
    CONTENDERS[len(CONTENDERS):] = [f"onednn_{k}" for k in others if k in ONEDNN_ISA]
    meta["recur_other_sets"] = others
    print("recur's other kernel sets timed: " + (", ".join(others) or "none"), flush=True)

    log = open(os.path.join(args.out, "workers.log"), "w")
    sgemm_seconds = 0.6 if args.quick else 1.5
    sgemm = {"start": measure_sgemm(args.bin, sgemm_seconds)}
    peak = sgemm_peak(sgemm)
    read_sizes = stream_weight_sizes(shapes)
    reads = {"start": measure_read(args.bin, sgemm_seconds, read_sizes)}

    # One process per (contender, threads): nothing of one library runs beside another's threads,
    # and each creates its primitives, sessions and pools at the count it is measured at.
    workers, missing = {}, {}
    for c in CONTENDERS:
        argv = contender_argv(args.bin, c)
        if c != "ort" and not os.path.exists(argv[0]):
            missing[c] = f"{os.path.basename(argv[0])} was not built"
            continue
        for t in THREADS:
            env = worker_env(t)
            if c.startswith("recur_"):
                env["RECUR_CPU_KERNELS"] = c[len("recur_"):]
            if c.startswith("onednn_"):
                env["ONEDNN_MAX_CPU_ISA"] = ONEDNN_ISA[c[len("onednn_"):]]
            try:
                workers[c, t] = Worker(f"{c} at {t} thread(s)", argv + ["--threads", str(t)], env, log)
            except WorkerError as e:
                missing.setdefault(c, str(e))
    meta["versions"] = {c: w.info for (c, t), w in workers.items() if t == THREADS[0]}
    if ("recur", THREADS[0]) not in workers:
        sys.exit(f"error: the recur process did not start: {missing.get('recur')}")
    print("versions: " + "; ".join(dict.fromkeys(meta["versions"].values())), flush=True)
    if ("ort", 1) in workers:
        meta["ort_identity_call_s"] = float(workers["ort", 1].cmd("identity"))
        print(f"ORT fixed cost per call (Identity model, IOBinding): {meta['ort_identity_call_s'] * 1e6:.2f} us",
              flush=True)

    tmp = tempfile.mkdtemp(prefix="recur-cpu-bench-")
    rows, failures, memory = [], [], []
    rng = random.Random()  # the orders: fresh each round and each run
    n_meas = len(shapes) * len(reference.CELLS) * len(THREADS)
    i_meas = 0

    def fail(msg):
        failures.append(msg)
        print(f"FAILED: {msg}", flush=True)

    try:
        for si, (shape, B, T, F, H, stream) in enumerate(shapes):
            for ci, cell in enumerate(reference.CELLS):
                # A process lost in an earlier case starts afresh for this one.
                for key, w in list(workers.items()):
                    if not w.alive:
                        try:
                            w.restart()
                            meta.setdefault("restarts", []).append(f"{shape} {cell}: {w.name}: {w.info}")
                            print(f"restarted {w.name}: {w.info}", flush=True)
                        except WorkerError as e:
                            missing[key[0]] = f"could not restart: {e}"
                            del workers[key]
                case_dir = os.path.join(tmp, f"{shape}_{cell}")
                ref = write_case(case_dir, cell, B, T, F, H, stream, args.seed + 10 * si + ci)
                for threads in THREADS:
                    i_meas += 1
                    live, na, errs, notes = [], {}, {}, {}
                    for c in CONTENDERS:
                        if c == "torch" and cell == "gru_rb":
                            na[c] = "PyTorch has no GRU with reset_after=False"
                            continue
                        w = workers.get((c, threads))
                        if w is None or not w.alive:
                            na[c] = missing.get(c, f"the {c} process was lost")
                            continue
                        try:
                            notes[c] = w.cmd(f"setup {c} {spec_args(cell, B, T, F, H, stream, case_dir)}")
                            out_path = os.path.join(case_dir, f"out_{c}_{threads}.f32")
                            w.cmd(f"check {c} {out_path}")
                        except WorkerError as e:
                            fail(f"{shape} {cell} {threads}t {c}: setup or check: {e}")
                            na[c] = f"error: {e}"
                            continue
                        if c.startswith("recur_") and f"kernels={c[len('recur_'):]}" not in notes[c]:
                            na[c] = f"this CPU cannot run those kernels ({notes[c]})"
                            continue
                        if c.startswith("onednn_") and f"isa={c[len('onednn_'):]}" not in notes[c].split():
                            na[c] = f"oneDNN did not cap its instruction set ({notes[c]})"
                            continue
                        got = np.fromfile(out_path, np.float32).reshape(-1, *ref.shape)  # torch: both routes
                        errs[c] = float(max(np.abs(g - ref).max() for g in got))
                        if not np.isfinite(errs[c]) or errs[c] > TOLERANCE:
                            fail(f"{shape} {cell} {threads}t {c}: max |out - keras| = {errs[c]:.3g} > {TOLERANCE}")
                            na[c] = f"wrong output (max abs error {errs[c]:.3g})"
                            continue
                        live.append(c)
                    if threads == THREADS[0]:
                        print(f"{shape} (B={B},T={T},F={F},H={H}) {cell}: max |out - keras float64|: "
                              + ", ".join(f"{c} {e:.1e}" for c, e in errs.items()), flush=True)

                    iters, tna = {}, dict(na)
                    timed = list(live)
                    for c in live:
                        try:
                            iters[c] = calibrate(workers[c, threads], c, threads, target)
                        except WorkerError as e:
                            fail(f"{shape} {cell} {threads}t {c}: {e}")
                            timed.remove(c)
                            tna[c] = f"error: {e}"
                        time.sleep(SETTLE_S)
                    times = {c: [] for c in timed}
                    used = {c: [] for c in timed}
                    load = [loadavg()]
                    for _ in range(rounds):
                        order = timed[:]
                        rng.shuffle(order)
                        for c in order:
                            if c not in timed:
                                continue
                            try:
                                wall, cpu = timed_call(workers[c, threads], c, threads, iters[c])
                            except WorkerError as e:
                                fail(f"{shape} {cell} {threads}t {c}: {e}")
                                timed.remove(c)
                                tna[c] = f"error: {e}"
                                continue
                            finally:
                                time.sleep(SETTLE_S)
                            times[c].append(wall / iters[c])
                            used[c].append(cpu / wall if wall > 0 else 0.0)
                    load.append(loadavg())
                    res = {}
                    for c in CONTENDERS:
                        if c in timed:
                            med = statistics.median(times[c])
                            thr = statistics.median(used[c])
                            try:
                                what = workers[c, threads].cmd(f"describe {c}")
                            except WorkerError as e:
                                what = f"(describe failed: {e})"
                            res[c] = {"status": "ok", "median_s": med, "min_s": min(times[c]),
                                      "round_means_s": times[c], "calls_per_round": iters[c],
                                      "threads_used": thr, "round_threads_used": used[c],
                                      "max_abs_err": errs[c], "describe": what}
                            if over_threads(thr, threads):
                                fail(f"{shape} {cell} {threads}t {c}: kept {thr:.2f} cores busy (CPU time / wall "
                                     f"time), asked for {threads} thread(s)")
                        else:
                            res[c] = {"status": "n/a", "reason": tna.get(c, "not run")}
                    flops = reference.flops_per_call(cell, B, T, F, H)
                    base = res["recur"].get("median_s")
                    for c, r in res.items():
                        if r["status"] == "ok":
                            r["gflops"] = flops / r["median_s"] / 1e9
                            r["frac_sgemm_peak"] = r["gflops"] / peak[threads] if peak[threads] else None
                            r["ratio_vs_recur"] = r["median_s"] / base if base else None
                    rows.append({"shape": shape, "B": B, "T": T, "F": F, "H": H, "stream": stream, "cell": cell,
                                 "threads": threads, "flops_per_call": flops, "loadavg": load,
                                 "setup": notes, "results": res})
                    print(f"[{i_meas}/{n_meas}] {report.row_line(rows[-1])}  (load {load[0]:.1f}-{load[1]:.1f})",
                          flush=True)
                    for c in live:
                        try:
                            workers[c, threads].cmd(f"free {c}")
                        except WorkerError:
                            pass

        memory = run_memory(shapes, args, tmp, missing)
    finally:
        for w in workers.values():
            w.close()
        shutil.rmtree(tmp, ignore_errors=True)
        log.close()

    # Measured again at the end, and the best of both taken: load on this shared machine only
    # ever lowers a GEMM rate, so the higher reading is the nearer to the true peak.
    if rows:
        sgemm["end"] = measure_sgemm(args.bin, sgemm_seconds)
        peak = sgemm_peak(sgemm)
        reads["end"] = measure_read(args.bin, sgemm_seconds, read_sizes)
        for row in rows:
            for r in row["results"].values():
                if r["status"] == "ok":
                    r["frac_sgemm_peak"] = r["gflops"] / peak[row["threads"]] if peak[row["threads"]] else None
    read_best = read_peak(reads)
    set_read_fractions(rows, read_best)
    meta["sgemm_gflops"] = sgemm
    meta["sgemm_peak_gflops"] = peak
    meta["read_gbps"] = reads
    meta["read_peak_gbps"] = read_best
    meta["uptime_end"] = uptime()
    meta["duration_s"] = round(time.time() - started, 1)
    meta["failures"] = failures
    # Through JSON once, so that the reports read exactly what results.json holds.
    results = json.loads(json.dumps({"meta": meta, "rows": rows, "memory": memory}))
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    report.write_markdown(results, os.path.join(args.out, "results.md"))
    report.plot(results, os.path.join(args.out, "bench.png"))
    print(f"wrote {args.out}/results.json, results.md, bench.png in {meta['duration_s']:.0f} s", flush=True)
    if failures:
        print("\nFAILED: contenders disagree with the Keras reference, broke, or ran at another thread count:",
              file=sys.stderr)
        for f in failures:
            print("  " + f, file=sys.stderr)
        sys.exit(1)


def run_memory(shapes, args, tmp, missing):
    """VmHWM per phase, one fresh single-thread process per contender and case."""
    names = {s[0]: s for s in shapes}
    argv = {"recur": [os.path.join(args.bin, "native_worker"), "--mem", "recur"],
            "onednn": [os.path.join(args.bin, "native_worker"), "--mem", "onednn"],
            "torch": [os.path.join(args.bin, "torch_worker"), "--mem", "torch"],
            "ort": [sys.executable, os.path.join(HERE, "ort_worker.py"), "--mem", "ort"]}
    env1 = worker_env(1)
    memory = []
    for shape, cell in MEMORY_CASES:
        if shape not in names:
            continue
        _, B, T, F, H, stream = names[shape]
        case_dir = os.path.join(tmp, f"mem_{shape}_{cell}")
        write_case(case_dir, cell, B, T, F, H, stream, args.seed + 999)
        for c in [c for c in CONTENDERS if not c.startswith(("recur_", "onednn_"))]:
            entry = {"shape": shape, "cell": cell, "B": B, "T": T, "F": F, "H": H, "contender": c}
            if c in missing:
                entry.update(status="n/a", reason=missing[c])
            else:
                try:
                    ph = memory_probe(argv[c] + spec_args(cell, B, T, F, H, stream, case_dir).split(), env1)
                    peak_phase = max(ph, key=lambda k: (ph[k], -list(ph).index(k)))
                    entry.update(status="ok", phases_kb=ph, peak_kb=ph[peak_phase], peak_phase=peak_phase,
                                 over_start_kb=ph[peak_phase] - ph["start"])
                except (WorkerError, KeyError, ValueError) as e:
                    entry.update(status="n/a", reason=str(e))
            memory.append(entry)
            if entry["status"] == "ok":
                print(f"memory {shape} {cell} {c}: peak {entry['peak_kb'] / 1024:.0f} MiB at {entry['peak_phase']} "
                      f"({entry['over_start_kb'] / 1024:+.0f} MiB over the process with its data loaded)", flush=True)
            else:
                print(f"memory {shape} {cell} {c}: n/a: {entry['reason']}", flush=True)
    return memory


if __name__ == "__main__":
    main()
