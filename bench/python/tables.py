# SPDX-License-Identifier: Apache-2.0
"""results.md from bench.py's results.json (`python tables.py results.json` prints it again)."""
import json
import sys


def us(t):
    return "n/a" if t is None else f"{t * 1e6:.2f}"


def mb(b):
    return f"{b / 1e6:.1f}"


def call_name(mode, B, T):
    return f"predict (B={B}, T={T})" if mode == "seq" else f"step (B={B})"


def markdown(r):
    env = r["env"]
    v = env["versions"]
    km = v["keras_models"]
    T = km["timesteps"]
    L = []
    L.append(f"CPU: {env['cpu']['model']} ({env['cpu']['cores']} cores; {', '.join(env['cpu']['isa'])}); "
             f"recur kernels: {env['recur_kernels']}. Python {env['python']}, {env['platform']}.")
    L.append(f"Versions: recur {v['recur']}, onnxruntime {v['onnxruntime']}, ai-edge-litert {v['ai-edge-litert']}, "
             f"numpy {v['numpy']}, onnx {v['onnx']}; models made by tf_keras {km['tf_keras']} on TensorFlow "
             f"{km['tensorflow']}.")
    L.append(f"Models: GRU({km['units']}) (reset_after=True) and LSTM({km['units']}), return_sequences=True, "
             f"on {km['features']} features. Method: {env['rounds']} interleaved rounds of >= {env['seconds']} s "
             f"per contender; median of the per-round means (min in results.json); 1-thread measurements "
             f"pinned to CPU {env.get('pinned_cpu_1_thread')}. Load average "
             f"{env['load_start'][0]:.2f} at the start, {env['load_end'][0]:.2f} at the end.")
    L.append("")

    L.append("### Outputs: max abs difference")
    L.append("")
    L.append("| model | call | recur vs Keras | ORT vs recur | LiteRT vs recur | LiteRT unrolled vs recur |")
    L.append("|---|---|---|---|---|---|")
    for c in r["checks"]:
        un = c.get("litert_unrolled_vs_recur")
        L.append(f"| {c['cell'].upper()} | {call_name(c['mode'], c['batch'], T)} | {c['recur_vs_keras']:.1e} | "
                 f"{c['ort_vs_recur']:.1e} | {c['litert_vs_recur']:.1e} | {'—' if un is None else f'{un:.1e}'} |")
    L.append("")

    L.append("### recur's cost per call above the C ABI (1 thread, µs per call, best round)")
    L.append("")
    L.append("Each figure is the best of the rounds' mean times per call (the differences are small "
             "beside a shared machine's noise; the medians are in results.json).")
    L.append("")
    L.append("C loop: the same named call in a loop in C (c_loop.c), in this process; float API: "
             "`recur_model_run` / `recur_model_state_step` instead of the named calls. native: the extension's "
             "`recur_py_run_named`/`recur_py_step_named` called directly on buffers made once; native, new "
             "array: the same with a fresh output array and argument lists each call (what any call that returns "
             "its result must do). public: `Model.predict(x)` / "
             "`Stream.step(x)` with x of shape (B, 1, F); (B, F): one step given without its time axis. "
             "layer: the model's recurrent layer alone, one step (`recur_layer_forward_state`), in C "
             "(`recur_binding_c_step_ns`), from the extension (`Layer.forward_state`) and through `recur.layers` "
             "(`model.get_layer(name).new_state(B).step(x)`, x (B, F)).")
    L.append("")
    L.append("| model | call | C loop, float API | C loop | native | native, new array | public | public − C | public − native, new array | public (B, F) | (B, F) − C | layer C | layer native | layer public | layer public − C |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for o in r["overhead"]:
        t = {k: x["min"] for k, x in o["times"].items()}
        c = t["C loop"]
        pb = t.get("public (B, F)")
        lc, ln, lp = t.get("layer C loop"), t.get("layer native"), t.get("layer public")
        na = t["native, new array"]
        cf = t.get("C loop, float API")
        L.append(f"| {o['cell'].upper()} | {call_name(o['mode'], o['batch'], T)} | {us(cf) if cf else '—'} | "
                 f"{us(c)} | {us(t['native'])} | "
                 f"{us(na)} | {us(t['public'])} | **{us(t['public'] - c)}** | {us(t['public'] - na)} | "
                 f"{us(pb) if pb else '—'} | "
                 f"{us(pb - c) if pb else '—'} | {us(lc) if lc else '—'} | {us(ln) if ln else '—'} | "
                 f"{us(lp) if lp else '—'} | {us(lp - lc) if lp and lc else '—'} |")
    L.append("")

    L.append("### recur vs ONNX Runtime and LiteRT (µs per call; ratio = peer / recur, > 1: recur faster)")
    L.append("")
    ident = r.get("ort_identity_s")
    if ident:
        L.append(f"ONNX Runtime's fixed cost per call (an Identity model through the same IOBinding path): "
                 f"{us(ident)} µs. CPU/wall: process CPU time over wall time in the timed loops (the threads "
                 f"really used).")
        L.append("")
    L.append("Times and ratios: medians over the rounds; best rounds: the ratios of each contender's best "
             "round (ORT, LiteRT, LiteRT unrolled).")
    L.append("")
    L.append("| threads | model | call | recur | ORT | ORT / recur | LiteRT | LiteRT / recur | LiteRT unrolled | unrolled / recur | best rounds | CPU/wall recur, ORT, LiteRT |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for p in r["peers"]:
        t = p["times"]
        rc = t["recur"]["median"]
        o = t["onnxruntime"]["median"]
        lt = t["litert"]["median"]
        un = t.get("litert unrolled")
        cpu = ", ".join(f"{t[k]['cpu_per_wall']:.2f}" for k in ("recur", "onnxruntime", "litert"))
        un_ratio = "%.2f" % (un["median"] / rc) if un else "—"
        rmin = t["recur"]["min"]
        best = ", ".join("%.2f" % (t[k]["min"] / rmin) for k in ("onnxruntime", "litert", "litert unrolled") if k in t)
        L.append(f"| {p['threads']} | {p['cell'].upper()} | {call_name(p['mode'], p['batch'], T)} | {us(rc)} | "
                 f"{us(o)} | {o / rc:.2f} | {us(lt)} | {lt / rc:.2f} | "
                 f"{us(un['median']) if un else '—'} | {un_ratio} | {best} | {cpu} |")
    L.append("")

    L.append("### Import time (a fresh interpreter, the import statement alone; median of runs, warm cache)")
    L.append("")
    L.append("| import | median ms | min ms |")
    L.append("|---|---|---|")
    for k, x in r["imports"].items():
        if "median" in x:
            L.append(f"| `{k}` | {x['median'] * 1e3:.1f} | {x['min'] * 1e3:.1f} |")
        else:
            L.append(f"| `{k}` | failed: {x['error']} | |")
    L.append("")

    L.append("### Installed size (MB; with deps: the package and what it requires, recursively)")
    L.append("")
    L.append("| package | version | MB | MB with deps | deps |")
    L.append("|---|---|---|---|---|")
    for k, x in r["sizes"].items():
        if "error" in x:
            L.append(f"| {k} | failed: {x['error']} | | | |")
        elif "files" in x:
            L.append(f"| {x['name']} | {x['version']} | {mb(x['bytes'])} | (+ numpy for arrays) | {', '.join(x['files'])} |")
        else:
            L.append(f"| {x['name']} | {x['version']} | {mb(x['bytes'])} | {mb(x['with_deps_bytes'])} | "
                     f"{', '.join(x['deps'])} |")
    L.append("")
    return "\n".join(L)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        print(markdown(json.load(f)))
