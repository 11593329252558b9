# SPDX-License-Identifier: Apache-2.0
"""``python -m recur``: the ``recur`` command-line tool's info, run and verify for people who
have only the wheel. Exit codes as the native tool: 0 success, 1 verify found a difference,
2 any error (one line on stderr, ``recur: <message>``)."""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import RecurError, get_limit, load_model, set_limit, set_log_handler, cpu_kernels, __version__
from ._util import np


class UsageError(Exception):
    """Bad usage or an unreadable argument file: exit 2."""


def _size(v: int) -> str:
    for unit, k in (("G", 30), ("M", 20), ("K", 10)):
        if v and v % (1 << k) == 0:
            return "%d%s" % (v >> k, unit)
    return str(v)


def _parse_size(text: str, what: str) -> int:
    t = text.strip()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:].upper(), 1)
    if mult != 1:
        t = t[:-1]
    if not t.isdigit():
        raise UsageError("%s: expected a whole number with an optional K, M or G, got %r" % (what, text))
    return int(t) * mult


def _shape(shape: Sequence[Optional[int]], sequence: bool) -> str:
    dims = ["B"] + [("T" if (i == 1 and sequence) else ("?" if d is None else str(d))) for i, d in enumerate(shape) if i > 0]
    return "(" + ", ".join(dims) + ")"


def describe(model: Any, as_json: bool = False) -> str:
    """The text (or JSON) of `info` for an open model."""
    info = model.info
    runnable = bool(info["runnable"])
    dialect = {2: "keras2", 3: "keras3"}.get(info["dialect"], str(info["dialect"]))
    dev = model.device_info()
    obj: Dict[str, Any] = {
        "file": model.name,
        "dialect": dialect,
        "keras_version": info["keras_version"],
        "runnable": runnable,
        "unsupported": info["unsupported"] or None,
        "device": dev,
        "cpu_kernels": cpu_kernels(),
        "layers": [{k: v for k, v in l.items() if k != "config"} for l in model.layers],
    }
    if runnable:
        obj["inputs"] = [{"name": s.name, "shape": list(s.shape), "dtype": s.dtype, "sequence": s.sequence,
                          "token_ids": s.token_ids} for s in model.inputs]
        obj["outputs"] = [{"name": s.name, "shape": list(s.shape)} for s in model.outputs]
        obj["stateful_layers"] = {k: list(v) for k, v in model.stateful_layers.items()}
        obj["streams"] = model.streamable is None
        obj["streamable_reason"] = model.streamable
    if as_json:
        return json.dumps(obj, indent=2)
    lines = ["file:          %s" % model.name,
             "dialect:       %s (keras_version %s)" % (dialect, info["keras_version"]),
             "runnable:      %s" % ("yes" if runnable else "no: " + (info["unsupported"] or ""))]
    if runnable:
        width = max([len(s.name) for s in model.inputs + model.outputs] + [4])
        lines.append("inputs:        %d" % len(model.inputs))
        for s in model.inputs:
            what = "strings" if s.dtype == "string" else ("int ids" if s.token_ids else "float32")
            lines.append("  %-*s  %s  %s" % (width, s.name, _shape(s.shape, s.sequence), what))
        lines.append("outputs:       %d" % len(model.outputs))
        for s in model.outputs:
            lines.append("  %-*s  %s" % (width, s.name, "(" + ", ".join(["B"] + ["?" if d is None else str(d) for d in s.shape[1:]]) + ")"))
        st = model.stateful_layers
        lines.append("stateful:      %s" % (", ".join("%s %s" % (k, v) for k, v in st.items()) if st else "no"))
        lines.append("streams:       %s" % ("yes" if model.streamable is None else "no: " + model.streamable))
    lines.append("device:        %s (%s)" % (dev["backend"], dev["reason"]))
    lines.append("cpu kernels:   %s" % cpu_kernels())
    lines.append("limits:        %s" % ", ".join("%s %s" % (k, _size(get_limit(k))) for k in
                                                  ("units", "batch", "state_bytes", "weight_bytes", "file_bytes", "tensor_bytes",
                                                   "total_state_bytes", "run_bytes", "timesteps", "init_work", "run_work")))
    layers = model.layers
    lines.append("layers:        %d" % len(layers))
    w = max([len(l["name"]) for l in layers] + [4])
    cw = max([len(l["class_name"]) for l in layers] + [5])
    lines.append("  %-*s  %-*s  input  output  recurrent" % (w, "name", cw, "class"))
    for l in layers:
        lines.append("  %-*s  %-*s  %5d  %6d  %s" % (w, l["name"], cw, l["class_name"], l["input_size"], l["output_size"],
                                                   "yes" if l["recurrent"] else "no"))
    return "\n".join(lines)


def _split(arg: str) -> Tuple[Optional[str], str]:
    """NAME=path or path (a path may hold '=' when it exists as given)."""
    if "=" in arg and not os.path.exists(arg):
        name, path = arg.split("=", 1)
        return name, path
    return None, arg


def _load_array(path: str, what: str) -> Any:
    N = np()
    try:
        if path.endswith(".txt"):
            with open(path, "rb") as f:
                rows = f.read().split(b"\n")
            if rows and rows[-1] == b"":
                rows.pop()
            texts = []
            for k, r in enumerate(rows, 1):
                try:
                    texts.append(r.rstrip(b"\r").decode("utf-8"))
                except UnicodeDecodeError:
                    raise UsageError("%s: %s line %d is not UTF-8 text" % (what, path, k)) from None
            return N.array(texts, dtype=object).reshape(-1, 1)
        a = N.load(path, allow_pickle=False)
        if not isinstance(a, N.ndarray):
            if hasattr(a, "close"):
                a.close()
            raise UsageError("%s: %s is not one array (.npy)%s" % (what, path, "; an .npz goes without NAME=" if what == "-i" else ""))
        return a
    except UsageError:
        raise
    except (OSError, ValueError) as e:
        raise UsageError("%s: cannot read %s: %s" % (what, path, e)) from None


def _inputs(model: Any, args: List[str]) -> Any:
    specs = model.inputs
    named: Dict[str, Any] = {}
    positional: List[Any] = []
    for a in args:
        name, path = _split(a)
        if path.endswith(".npz") and name is None:
            try:
                with np().load(path, allow_pickle=False) as z:
                    arrays = {k: z[k] for k in z.files}
            except (OSError, ValueError) as e:
                raise UsageError("-i: cannot read %s: %s" % (path, e)) from None
            if len(specs) == 1 and len(arrays) == 1:
                positional.extend(arrays.values())
            else:
                named.update(arrays)
            continue
        value = _load_array(path, "-i")
        if name is None:
            positional.append(value)
        else:
            named[name] = value
    if named and positional:
        if len(positional) + len(named) != len(specs):
            raise UsageError("-i: expected one input per model input (%s)" % ", ".join(s.name for s in specs))
        rest = [s.name for s in specs if s.name not in named]
        named.update(zip(rest, positional))
        return named
    if named:
        return named
    if len(positional) != len(specs):
        raise UsageError("-i: the model has %d input(s) (%s); got %d" % (len(specs), ", ".join(s.name for s in specs), len(positional)))
    return positional if len(specs) > 1 else positional[0]


def _masks(model: Any, args: List[str]) -> Any:
    if not args:
        return None
    out: Dict[str, Any] = {}
    seq = [s.name for s in model.inputs if s.sequence]
    for a in args:
        name, path = _split(a)
        if name is None:
            if len(seq) != 1:
                raise UsageError("-m: the model has %d sequence inputs; write -m NAME=mask.npy" % len(seq))
            name = seq[0]
        out[name] = _load_array(path, "-m")
    return out


def _run(model: Any, ns: argparse.Namespace) -> Dict[str, Any]:
    if ns.states_in:
        try:
            with np().load(ns.states_in, allow_pickle=False) as z:
                states = {k: z[k] for k in z.files}
        except (OSError, ValueError) as e:
            raise UsageError("--states-in: cannot read %s: %s" % (ns.states_in, e)) from None
        model.set_states(states)
    outputs = ns.outputs.split(",") if ns.outputs else None
    options = None
    if ns.timeout:
        from .model import RunOptions

        options = RunOptions()
        options.timeout = ns.timeout
    res = model.predict(_inputs(model, ns.input), mask=_masks(model, ns.mask), return_dict=True, outputs=outputs,
                        run_options=options)
    if ns.states_out:
        np().savez(ns.states_out, **{k: np().stack(v) for k, v in model.get_states().items()})
    return res


def _write(res: Dict[str, Any], path: Optional[str], as_json: bool) -> None:
    N = np()
    if path and path.endswith(".npz"):
        N.savez(path, **res)
        return
    if path and path.endswith(".npy"):
        if len(res) != 1:
            raise UsageError("-o %s: the run has %d outputs; write them to an .npz" % (path, len(res)))
        N.save(path, next(iter(res.values())))
        return
    if as_json or (path and path.endswith(".json")):
        text = json.dumps({k: {"shape": list(v.shape), "values": v.tolist()} for k, v in res.items()})
    else:
        with N.printoptions(precision=9, suppress=False, threshold=sys.maxsize):
            text = "\n".join("%s %s\n%s" % (k, tuple(v.shape), v) for k, v in res.items())
    if path and path != "-":
        with open(path, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    else:
        print(text)


def _verify(model: Any, ns: argparse.Namespace) -> int:
    res = _run(model, ns)
    N = np()
    names = list(res)
    expected: Dict[str, Any] = {}
    positional: List[Any] = []
    for a in ns.expected:
        name, path = _split(a)
        if path.endswith(".npz"):
            try:
                z = N.load(path, allow_pickle=False)
            except (OSError, ValueError) as e:
                raise UsageError("-e: cannot read %s: %s" % (path, e)) from None
            with z:
                for k in z.files:
                    # `output`, `output_1`, ... as run writes them, or the model's output names
                    if k in res:
                        expected[k] = z[k]
                    elif k == "output":
                        expected[names[0]] = z[k]
                    elif k.startswith("output_") and k[7:].isdigit() and int(k[7:]) < len(names):
                        expected[names[int(k[7:])]] = z[k]
                    else:
                        print("recur: note: %r in %s is not compared (not among the outputs)" % (k, path), file=sys.stderr)
        elif name is not None:
            expected[name] = _load_array(path, "-e")
        else:
            positional.append(_load_array(path, "-e"))
    for k, v in zip(names[len(expected):], positional):
        expected.setdefault(k, v)
    if not expected:
        raise UsageError("-e: give the expected outputs (.npz, or one .npy per output)")
    worst = 0.0
    failed = False
    for k, want in expected.items():
        if k not in res:
            print("%s: FAIL (no such output; the outputs are %s)" % (k, ", ".join(names)))
            failed = True
            continue
        got = res[k]
        if got.shape != want.shape:
            print("%s: FAIL shape %s, expected %s" % (k, got.shape, want.shape))
            failed = True
            continue
        err = float(N.max(N.abs(got.astype(N.float64) - want.astype(N.float64)))) if got.size else 0.0
        worst = max(worst, err)
        ok = err <= ns.atol
        failed |= not ok
        print("%s: %s max abs error %.3g (atol %g)" % (k, "ok" if ok else "FAIL", err, ns.atol))
    return 1 if failed else 0


def _common(dest_suffix: str) -> argparse.ArgumentParser:
    # Before and after the subcommand; separate destinations, because a subcommand's defaults
    # would overwrite what was given before it.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE", dest="limit" + dest_suffix,
                        help="set a resource limit (units, batch, state_bytes, weight_bytes, file_bytes, tensor_bytes, "
                             "total_state_bytes, run_bytes, timesteps, init_work, run_work)")
    common.add_argument("--log", choices=["debug", "info", "warning", "error"], dest="log" + dest_suffix,
                        help="print the library's log on stderr")
    return common


def _parser() -> argparse.ArgumentParser:
    common = _common("_after")
    model = argparse.ArgumentParser(add_help=False)
    model.add_argument("file", help="a .keras or .h5 model")
    model.add_argument("--device", default=None, help="cpu (default), cuda, cuda:N or auto")
    model.add_argument("--threads", type=int, default=None, help="CPU threads per call (0 = one per core)")
    model.add_argument("--keras-backend", choices=["tensorflow", "jax"], default=None)
    model.add_argument("--precision", choices=["float32", "bf16", "int8"], default=None,
                       help="weights of the recurrent layers: float32 (Keras's numbers), bf16 or int8 (faster)")
    running = argparse.ArgumentParser(add_help=False)
    running.add_argument("-i", "--input", action="append", default=[], required=True,
                         metavar="[NAME=]x.npy|x.npz|texts.txt", help="an input (repeat for several)")
    running.add_argument("-m", "--mask", action="append", default=[], metavar="[NAME=]mask.npy")
    running.add_argument("--outputs", help="comma-separated output names to compute")
    running.add_argument("--states-in", help="stateful models: .npz of states to start from")
    running.add_argument("--states-out", help="stateful models: write the states the run leaves")
    running.add_argument("--timeout", type=float, default=0.0, metavar="SECONDS",
                         help="seconds the run may take before it stops with an error (0, the default: no limit)")
    p = argparse.ArgumentParser(prog="python -m recur", parents=[_common("")],
                                description="Run Keras recurrent models with recur (the CLI's info, run and verify).")
    p.add_argument("--version", action="version", version="recur %s" % __version__)
    sub = p.add_subparsers(dest="command", required=True)
    pi = sub.add_parser("info", parents=[common, model], help="what a model takes and gives, and whether it runs")
    pi.add_argument("--json", action="store_true")
    pr = sub.add_parser("run", parents=[common, model, running], help="run a model on .npy inputs")
    pr.add_argument("-o", "--output", default=None, metavar="-|out.npz|out.npy|out.txt|out.json")
    pr.add_argument("--json", action="store_true")
    pv = sub.add_parser("verify", parents=[common, model, running], help="run and compare with expected outputs")
    pv.add_argument("-e", "--expected", action="append", default=[], required=True, metavar="[NAME=]y.npy|y.npz")
    pv.add_argument("--atol", type=float, default=1e-5)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the tool; returns the exit code."""
    p = _parser()
    ns = p.parse_args(argv)
    ns.limit = ns.limit + ns.limit_after
    ns.log = ns.log_after or ns.log
    try:
        for item in ns.limit:
            name, eq, value = item.partition("=")
            if not eq:
                raise UsageError("--limit: expected NAME=VALUE, got %r" % item)
            set_limit(name, _parse_size(value, "--limit " + name))
        if ns.log:
            set_log_handler(lambda level, msg: print("recur: log: %s" % msg, file=sys.stderr), ns.log)
        model = load_model(ns.file, device=ns.device, num_threads=ns.threads, keras_backend=ns.keras_backend,
                           precision=ns.precision)
        if ns.command == "info":
            print(describe(model, ns.json))
            return 0
        if ns.command == "run":
            _write(_run(model, ns), ns.output, ns.json)
            return 0
        return _verify(model, ns)
    except (RecurError, UsageError) as e:
        print("recur: %s" % e, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
