# SPDX-License-Identifier: Apache-2.0
"""results.json -> results.md and bench.png."""
import json
import sys

NAMES = {"recur": "recur", "onednn": "oneDNN", "torch": "PyTorch", "ort": "ORT"}
CELL_NAMES = {"gru_ra": "GRU reset_after=True", "gru_rb": "GRU reset_after=False", "lstm": "LSTM"}
SHORT_CELL = {"gru_ra": "GRU ra=T", "gru_rb": "GRU ra=F", "lstm": "LSTM"}
PEERS = ["onednn", "torch", "ort"]


def name_of(c):
    """recur_avx2 -> recur (avx2): recur on one of its other kernel sets; onednn_avx2 -> oneDNN
    (avx2): oneDNN capped to that instruction set."""
    for prefix in ("recur_", "onednn_"):
        if c.startswith(prefix):
            return f"{NAMES[prefix[:-1]]} ({c[len(prefix):]})"
    return NAMES[c]


def other_sets(res):
    return res["meta"].get("recur_other_sets", [])


def fmt_time(s):
    if s is None:
        return "n/a"
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def shape_label(r):
    kind = "stream, 1 step/call" if r["stream"] else "sequence"
    return f"{r['shape']} ({r['B']},{r['T']},{r['F']},{r['H']}) {kind}"


def table_row(r, contender_cells):
    """A markdown row: shape, cell and threads, then contender_cells(name, result) per contender."""
    cells = [shape_label(r), SHORT_CELL[r["cell"]], str(r["threads"])]
    for c in ["recur"] + PEERS:
        cells += contender_cells(c, r["results"][c])
    return "| " + " | ".join(cells) + " |"


def row_line(row):
    parts = []
    for c, r in row["results"].items():
        if r["status"] != "ok":
            parts.append(f"{c} n/a")
            continue
        ratio = f" ({r['ratio_vs_recur']:.2f}x)" if c != "recur" and r.get("ratio_vs_recur") else ""
        parts.append(f"{c} {fmt_time(r['median_s'])}{ratio}")
    return f"{row['shape']} {row['cell']} {row['threads']}t: " + " | ".join(parts)


def write_markdown(res, path):
    m = res["meta"]
    rows = res["rows"]
    out = []
    w = out.append
    w("# recur CPU benchmark: recur vs oneDNN, PyTorch, ONNX Runtime\n")
    w(f"{'**Quick run** (checks the pipeline; the numbers are not measurements). ' if m['quick'] else ''}"
      f"{m['date']}, {m['cpu']}, {m['cores']} cores; {m['rounds']} rounds of at least "
      f"{m['seconds_per_measurement']} s per contender and measurement; whole run {m.get('duration_s', 0):.0f} s.\n")
    loads = [x for r in rows for x in r["loadavg"]]
    w(f"- Load: `{m['uptime_start']}` at the start, `{m.get('uptime_end', '')}` at the end"
      + (f"; 1-minute load between {min(loads):.1f} and {max(loads):.1f} during the measurements." if loads else ".")
      )
    w("- One process per contender and thread count, with `OMP_NUM_THREADS` at that count from its start, so "
      "that every library creates its primitives, sessions and pools at the count it is measured at; each "
      "library's own wait policy (OpenMP's default, `OMP_WAIT_POLICY` unset); ONNX Runtime's intra-op spinning "
      + ("on (its default)" if m["env"].get("ort_intra_op_allow_spinning", "1") == "1" else "off")
      + f"; {m['env'].get('settle_s', 0) * 1e3:.0f} ms of quiet between two timed commands.")
    w("- Cores used: each contender's CPU time over its wall time while timed (its process's every thread; a "
      "spinning pool thread counts), the median over the rounds. A contender that used more than it was given "
      "fails the run.")
    for p, v in m.get("versions", {}).items():
        w(f"- {p} process: {v}")
    if "ort_identity_call_s" in m:
        w(f"- ONNX Runtime's fixed cost per call (an Identity model through IOBinding, from Python): "
          f"{m['ort_identity_call_s'] * 1e6:.2f} µs; it is part of every ORT time below, and matters for the "
          "streaming rows.")
    for when, table in m.get("sgemm_gflops", {}).items():
        w(f"- SGEMM 1024³ at the {when} (GFLOP/s; the best reading is the peak used below): " + "; ".join(
            f"{lib} " + ", ".join(f"{g:.1f} ({t}t)" for t, g in sorted(v.items(), key=lambda kv: int(kv[0])))
            for lib, v in table.items()))
    w("")

    w("## Time per call\n")
    w("Median of the per-round mean time per call (the minimum in brackets), then the cores the contender kept "
      "busy. × = peer time / recur time at the same thread count: above 1 recur is faster. Outputs: the full "
      "sequence of h (return_sequences).\n")
    w("| shape (B,T,F,H) | cell | threads | recur | oneDNN | × | PyTorch | × | ORT | × |")
    w("|---|---|---|---|---|---|---|---|---|---|")
    def time_cells(c, x):
        ok = x["status"] == "ok"
        used = f" · {x['threads_used']:.2f} cores" if ok and "threads_used" in x else ""
        cells = [f"{fmt_time(x['median_s'])} ({fmt_time(x['min_s'])}){used}" if ok else "n/a"]
        if c != "recur":
            ratio = x.get("ratio_vs_recur") if ok else None
            cells.append(f"{ratio:.2f}" if ratio else "–")
        return cells

    for r in rows:
        w(table_row(r, time_cells))
    w("")

    for k in other_sets(res):
        c = f"recur_{k}"
        w(f"### recur on its `{k}` kernels\n")
        w(f"The same measurements with `RECUR_CPU_KERNELS={k}` (its own processes, interleaved with the others). "
          "× = peer time / this time.\n")
        capped = f"onednn_{k}"
        has_capped = any(r["results"].get(capped, {}).get("status") == "ok" for r in rows)
        peers = ["recur"] + PEERS + ([capped] if has_capped else [])
        w(f"| shape (B,T,F,H) | cell | threads | recur ({k}) | × recur | × oneDNN | × PyTorch | × ORT |"
          + (f" × oneDNN capped to {k} |" if has_capped else ""))
        w("|---|---|---|---|---|---|---|---|" + ("---|" if has_capped else ""))
        for r in rows:
            x = r["results"].get(c, {"status": "n/a"})
            cells = [shape_label(r), SHORT_CELL[r["cell"]], str(r["threads"])]
            if x["status"] != "ok":
                w("| " + " | ".join(cells + ["n/a"] + ["–"] * len(peers)) + " |")
                continue
            used = f" · {x['threads_used']:.2f} cores" if "threads_used" in x else ""
            cells.append(f"{fmt_time(x['median_s'])} ({fmt_time(x['min_s'])}){used}")
            for p in peers:
                y = r["results"].get(p, {"status": "n/a"})
                cells.append(f"{y['median_s'] / x['median_s']:.2f}" if y["status"] == "ok" else "–")
            w("| " + " | ".join(cells) + " |")
        w("")

    w("## Throughput\n")
    pk = m.get("sgemm_peak_gflops", {})
    w("GFLOP/s (FLOPs per call: GRU 2·B·T·(F+H)·3H, LSTM 2·B·T·(F+H)·4H) and, in brackets, the fraction of the "
      "SGEMM peak at the same thread count ("
      + ", ".join(f"{t} thread(s): {g:.1f} GFLOP/s" for t, g in sorted(pk.items(), key=lambda kv: int(kv[0])))
      + ").\n")
    w("| shape (B,T,F,H) | cell | threads | recur | oneDNN | PyTorch | ORT |")
    w("|---|---|---|---|---|---|---|")
    def throughput_cells(c, x):
        if x["status"] != "ok":
            return ["n/a"]
        frac = x.get("frac_sgemm_peak")
        return [f"{x['gflops']:.2f}" + (f" ({frac * 100:.0f}%)" if frac is not None else "")]

    for r in rows:
        w(table_row(r, throughput_cells))
    w("")

    rp = m.get("read_peak_gbps", {})
    streams = [r for r in rows if r["stream"] and "weight_bytes" in r]
    if rp and streams:
        w("## Streaming steps against the read rate\n")
        w("A streaming step reads each of the layer's weights once and does little else, so it can go no faster "
          "than the cores read that many bytes. GB/s = float32 kernel bytes (4·(F+H)·gates·H) per step / time per "
          "step; in brackets, the fraction of the read rate `read_peak` measured over a buffer of the same size, "
          "split across the same number of threads (the best of the readings at the start and the end).\n")
        w("| shape (B,T,F,H) | cell | threads | weights | read rate | recur | oneDNN | PyTorch | ORT |")
        w("|---|---|---|---|---|---|---|---|---|")
        for r in streams:
            top = rp.get(str(r["threads"]), {}).get(str(r["weight_bytes"]))
            cells = [shape_label(r), SHORT_CELL[r["cell"]], str(r["threads"]),
                     f"{r['weight_bytes'] / 2**20:.2f} MiB", f"{top:.1f} GB/s" if top else "n/a"]
            for c in ["recur"] + PEERS:
                x = r["results"][c]
                if x["status"] != "ok" or "weight_gbps" not in x:
                    cells.append("n/a")
                    continue
                frac = x.get("frac_read_peak")
                cells.append(f"{x['weight_gbps']:.1f}" + (f" ({frac * 100:.0f}%)" if frac is not None else ""))
            w("| " + " | ".join(cells) + " |")
        w("")

    mem = res.get("memory", [])
    if mem:
        w("## Peak memory\n")
        w("VmHWM (peak resident set) of a fresh single-thread process per contender, read after each phase: the "
          "process with its libraries and the Keras weights and input loaded (start), the layer created, its "
          "weights set, the first call and the second call. ONNX Runtime takes its weights when its session is "
          "created, so its create and weights phases are one. Over start = the peak less the start.\n")
        w("| case | contender | peak MiB | peak phase | over start MiB | start | create | weights | call 1 | call 2 |")
        w("|---|---|---|---|---|---|---|---|---|---|")
        for e in mem:
            case = f"{e['shape']} ({e['B']},{e['T']},{e['F']},{e['H']}) {SHORT_CELL[e['cell']]}"
            if e["status"] != "ok":
                w(f"| {case} | {name_of(e['contender'])} | n/a | {e['reason']} | | | | | | |")
                continue
            ph = e["phases_kb"]
            w(f"| {case} | {name_of(e['contender'])} | {e['peak_kb'] / 1024:.1f} | {e['peak_phase']} | "
              f"{e['over_start_kb'] / 1024:.1f} | "
              + " | ".join(f"{ph.get(k, 0) / 1024:.1f}" for k in ("start", "create", "weights", "call1", "call2"))
              + " |")
        w("")

    w("## Notes\n")
    reasons = {}
    for r in rows:
        for c, x in r["results"].items():
            if x["status"] != "ok":
                reasons.setdefault(f"{name_of(c)}: {x['reason']}", []).append(
                    f"{r['shape']} {SHORT_CELL[r['cell']]} {r['threads']}t")
    for reason, where in reasons.items():
        w(f"- n/a, {reason} ({len(where)} rows" + (f": {', '.join(where)}" if len(where) <= 6 else "") + ")")
    errs = {}
    for r in rows:
        for c, x in r["results"].items():
            if x["status"] == "ok":
                errs[c] = max(errs.get(c, 0.0), x["max_abs_err"])
    w("- Largest |output − float64 Keras| over all cases before timing: "
      + ", ".join(f"{name_of(c)} {e:.1e}" for c, e in errs.items()) + f" (tolerance {m['tolerance']}).")
    routes = [f"{r['shape']} {SHORT_CELL[r['cell']]} {r['threads']}t "
              f"{r['results']['torch']['describe'].replace('route=', '')}" for r in rows
              if r["results"].get("torch", {}).get("status") == "ok"]
    if routes:
        w("- PyTorch route, the faster of its own kernels (native) and oneDNN (mkldnn) in a trial at each thread "
          "count: " + "; ".join(routes) + ".")
    impls = sorted({r["results"]["onednn"]["describe"] for r in rows
                    if r["results"].get("onednn", {}).get("status") == "ok"})
    if impls:
        w("- oneDNN implementation: " + ", ".join(f"`{i}`" for i in impls)
          + (" (`ref` is oneDNN's RNN driver, not naive code: its GEMMs are oneDNN's JIT packed SGEMM, as "
             "ONEDNN_VERBOSE=1 shows with the weights in `rnn_packed` format)" if any("ref" in i for i in impls) else "") + ".")
    for r in m.get("restarts", []):
        w(f"- A process was restarted after it was lost, before {r}")
    for f in m.get("failures", []):
        w(f"- **FAILED** {f}")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def summary_table(res):
    """The docs' table: recur's median time and each peer's ratio, with the cores each used."""
    out = ["| shape (B, T, F, H) | cell | threads | recur | × oneDNN | × PyTorch | × ORT |",
           "|---|---|---|---|---|---|---|"]
    for r in res["rows"]:
        x = r["results"]["recur"]
        kind = "stream step" if r["stream"] else ""
        cells = [f"{r['shape']} ({r['B']},{r['T']},{r['F']},{r['H']}) {kind}".strip(), SHORT_CELL[r["cell"]],
                 str(r["threads"])]
        cells.append(f"{fmt_time(x['median_s'])} ({x['threads_used']:.1f})" if x["status"] == "ok" else "n/a")
        for c in PEERS:
            y = r["results"][c]
            cells.append(f"{y['ratio_vs_recur']:.2f} ({y['threads_used']:.1f})"
                         if y["status"] == "ok" and y.get("ratio_vs_recur") else "–")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def plot(res, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    rows = res["rows"]
    shapes = list(dict.fromkeys(r["shape"] for r in rows))
    if not shapes:
        return
    ncols = 3
    nrows = (len(shapes) + 1 + ncols - 1) // ncols
    fig, axes = plt.subplots(nrows, ncols, figsize=(6 * ncols, 4.2 * nrows), squeeze=False)
    colors = {"recur": "#d62728", "onednn": "#1f77b4", "torch": "#ff7f0e", "ort": "#2ca02c"}
    contenders = ["recur"] + PEERS
    width = 0.8 / len(contenders)
    for ax, shape in zip(axes.flat, shapes):
        srows = [r for r in rows if r["shape"] == shape]
        times = [x["median_s"] for r in srows for x in r["results"].values() if x["status"] == "ok"]
        scale, unit = (1e6, "µs") if times and max(times) < 1e-3 else (1e3, "ms") if times and max(times) < 1 else (1, "s")
        labels = []
        for gi, r in enumerate(srows):
            labels.append(f"{SHORT_CELL[r['cell']]}\n{r['threads']} thr")
            for ki, c in enumerate(contenders):
                x = r["results"][c]
                pos = gi + (ki - (len(contenders) - 1) / 2) * width
                if x["status"] != "ok":
                    ax.text(pos, 0.02, "n/a", transform=ax.get_xaxis_transform(), ha="center", va="bottom",
                            fontsize=6, rotation=90, color="gray")
                    continue
                v = x["median_s"] * scale
                ax.bar(pos, v, width, color=colors[c], label=NAMES[c] if gi == 0 else None)
                ratio = x.get("ratio_vs_recur")
                if c != "recur" and ratio:
                    label = f"{ratio:.2f}×" if ratio < 10 else f"{ratio:.0f}×"
                    ax.text(pos, v, label, ha="center", va="bottom", fontsize=6, rotation=90)
        ax.set_xticks(range(len(srows)))
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_yscale("log")  # contenders can differ by 100x on one shape
        ax.margins(y=0.25)
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        # Minor labels at 2 and 5 only, and none over a wide range, where they would overlap.
        lo, hi = ax.get_ylim()
        wide = hi / lo > 100
        ax.yaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(
            lambda v, _: "" if wide or f"{v:g}".lstrip("0.")[:1] not in "25" else f"{v:g}"))
        ax.tick_params(axis="y", which="minor", labelsize=6)
        ax.set_ylabel(f"median time per call ({unit}, log scale)")
        ax.set_title(shape_label(srows[0]), fontsize=9)
    for ax in list(axes.flat)[len(shapes):]:
        ax.axis("off")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[c]) for c in contenders]
    legend_ax = list(axes.flat)[len(shapes)]
    legend_ax.legend(handles, [NAMES[c] for c in contenders], loc="upper left", fontsize=10)
    m = res["meta"]
    legend_ax.text(0.0, 0.45, "Bars: median of per-round mean times (lower is better).\n"
                   "Labels: peer time / recur time (>1: recur faster).\n"
                   f"{m['rounds']} interleaved rounds; a process per contender and thread count.\n"
                   f"{m['cpu']}, {m['cores']} cores. {m['date']}"
                   + ("\nQUICK RUN: not a measurement." if m["quick"] else ""),
                   fontsize=8, va="top", transform=legend_ax.transAxes)
    fig.suptitle("recur vs oneDNN, PyTorch and ONNX Runtime on the CPU", fontsize=12)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    # Re-render from a results.json: report.py results.json OUT_DIR, or print the docs' table:
    # report.py results.json --summary
    with open(sys.argv[1]) as f:
        res = json.load(f)
    if sys.argv[2] == "--summary":
        print(summary_table(res))
    else:
        write_markdown(res, sys.argv[2] + "/results.md")
        plot(res, sys.argv[2] + "/bench.png")
