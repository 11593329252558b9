# SPDX-License-Identifier: Apache-2.0
"""ONNX Runtime's CPU GRU and LSTM, driven over stdin with the protocol of src/common.hpp.

The Python wheel has no C header, so ORT is timed from Python; every call goes through IOBinding
onto preallocated buffers, which leaves only ORT's own fixed per-call cost (measured with an
Identity model by the `identity` command, and reported beside the streaming rows).

    ort_worker.py --threads N            serve contender "ort" at N threads
    ort_worker.py --mem ort CELL B T F H STREAM CHECK_STEPS DIR   peak memory per phase
"""
import os
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OPSET = 14


def read_f32(path, shape):
    a = np.fromfile(path, dtype=np.float32)
    if a.size != int(np.prod(shape)):
        raise ValueError(f"{path}: {a.size} floats, expected {int(np.prod(shape))}")
    return a.reshape(shape)


def vm_hwm_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return -1


class Spec:
    def __init__(self, words):
        cell, B, T, F, H, stream, tc, self.dir = words
        self.cell = cell
        self.B, self.T, self.F, self.H, self.tc = (int(v) for v in (B, T, F, H, tc))
        self.stream = stream != "0"
        if cell not in ("gru_ra", "gru_rb", "lstm"):
            raise ValueError(f"unknown cell '{cell}'")
        self.G = 4 if cell == "lstm" else 3


def build_model(s, kernel, recurrent, bias):
    """The Keras layer as an ONNX graph. ORT's CPU RNN ops accept only time-major tensors
    (layout=0), so Keras-layout (B, T, F) inputs and (B, T, H) outputs go through Transposes, as
    in a converted Keras model."""
    H = s.H
    if s.cell == "lstm":
        order = [0, 3, 1, 2]  # ONNX i,o,f,c from Keras i,f,c,o
    else:
        order = [0, 1, 2]  # ONNX z,r,h = Keras z,r,h

    def reorder(m):  # (rows, G*H) Keras columns -> (1, G*H, rows) ONNX
        return np.ascontiguousarray(
            np.concatenate([m[:, g * H:(g + 1) * H] for g in order], axis=1).T[None])

    W = reorder(kernel)
    R = reorder(recurrent)
    if s.cell == "gru_ra":
        bx, bh = bias[0], bias[1]
    else:
        bx, bh = bias, np.zeros_like(bias)
    Bv = np.concatenate([reorder(bx[None])[0, :, 0], reorder(bh[None])[0, :, 0]])[None]

    state_names = ["initial_h", "initial_c"] if s.cell == "lstm" else ["initial_h"]
    out_state_names = ["Y_h", "Y_c"] if s.cell == "lstm" else ["Y_h"]
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [s.B, s.T, s.F])]
    outputs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [s.B, s.T, H])]
    if s.stream:
        inputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, s.B, H]) for n in state_names]
        outputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, s.B, H]) for n in out_state_names]
    rnn_in = ["Xt", "W", "R", "B", ""] + (state_names if s.stream else [])
    rnn_out = ["Y4"] + (out_state_names if s.stream else [])
    attrs = {"hidden_size": H}
    if s.cell != "lstm":
        attrs["linear_before_reset"] = 1 if s.cell == "gru_ra" else 0
    nodes = [
        helper.make_node("Transpose", ["X"], ["Xt"], perm=[1, 0, 2]),
        helper.make_node("LSTM" if s.cell == "lstm" else "GRU", rnn_in, rnn_out, **attrs),
        helper.make_node("Squeeze", ["Y4", "axis1"], ["Y3"]),  # (T, 1, B, H) -> (T, B, H)
        helper.make_node("Transpose", ["Y3"], ["Y"], perm=[1, 0, 2]),
    ]
    inits = [numpy_helper.from_array(W, "W"), numpy_helper.from_array(R, "R"),
             numpy_helper.from_array(Bv.astype(np.float32), "B"),
             numpy_helper.from_array(np.array([1], np.int64), "axis1")]
    graph = helper.make_graph(nodes, "keras_rnn", inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


def session(model_bytes, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # ORT's own pool spins briefly before it blocks (its default, kept unless the driver says
    # otherwise): without spinning, a 2-thread one-step GRU here took 15 ms a call instead of 0.15.
    so.add_session_config_entry("session.intra_op.allow_spinning", os.environ.get("BENCH_ORT_SPIN", "1"))
    return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])


def ortvalue(a):
    return ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(a, dtype=np.float32))


class OrtLayer:
    def __init__(self, s, model_bytes, x, threads):
        self.s = s
        self.model = model_bytes
        self.x = ortvalue(x)
        self.threads = threads
        # The session is created at the count it is measured at (a session option).
        sess = session(self.model, threads)
        self.cur = (sess,) + self._bindings(sess, self.x)

    def _bindings(self, sess, x):
        s = self.s
        y = ortvalue(np.zeros((s.B, s.T, s.H)))
        if not s.stream:
            b = sess.io_binding()
            b.bind_ortvalue_input("X", x)
            b.bind_ortvalue_output("Y", y)
            return [b], y, []
        # Two sets of state buffers: each call reads one and writes the other, and the next call
        # uses the other binding, so the state moves without a copy or a rebind.
        n = 2 if s.cell == "lstm" else 1
        states = [[ortvalue(np.zeros((1, s.B, s.H))) for _ in range(n)] for _ in range(2)]
        ins = ["initial_h", "initial_c"][:n]
        outs = ["Y_h", "Y_c"][:n]
        bindings = []
        for k in range(2):
            b = sess.io_binding()
            b.bind_ortvalue_input("X", x)
            b.bind_ortvalue_output("Y", y)
            for i in range(n):
                b.bind_ortvalue_input(ins[i], states[k][i])
                b.bind_ortvalue_output(outs[i], states[1 - k][i])
            bindings.append(b)
        return bindings, y, states

    def set_threads(self, n):
        if n != self.threads:
            raise ValueError(f"this process runs at {self.threads} thread(s), not {n}: start one with --threads {n}")

    def run_n(self, iters):
        sess, bindings, _, _ = self.cur
        run = sess.run_with_iobinding
        if len(bindings) == 1:
            b = bindings[0]
            for _ in range(iters):
                run(b)
        else:
            b0, b1 = bindings
            for _ in range(iters // 2):
                run(b0)
                run(b1)
            if iters % 2:
                run(b0)
                self.cur = (sess, [b1, b0]) + self.cur[2:]

    def check(self, xc):
        s = self.s
        sess = session(self.model, self.threads)
        if not s.stream:
            bindings, y, _ = self._bindings(sess, ortvalue(xc))
            sess.run_with_iobinding(bindings[0])
            return np.array(y.numpy())  # a copy: numpy() views the buffer, which dies with y
        out = np.empty((s.B, s.tc, s.H), np.float32)
        xt = ortvalue(np.zeros((s.B, 1, s.F)))
        bindings, y, _ = self._bindings(sess, xt)
        for t in range(s.tc):
            xt.update_inplace(np.ascontiguousarray(xc[:, t:t + 1]))
            sess.run_with_iobinding(bindings[t % 2])
            out[:, t] = y.numpy()[:, 0]
        return out


def load(s):
    G, H = s.G, s.H
    kernel = read_f32(f"{s.dir}/kernel.f32", (s.F, G * H))
    recurrent = read_f32(f"{s.dir}/recurrent_kernel.f32", (H, G * H))
    bias = read_f32(f"{s.dir}/bias.f32", (2, 3 * H) if s.cell == "gru_ra" else (G * H,))
    x = read_f32(f"{s.dir}/x.f32", (s.B, s.T, s.F))
    xc = read_f32(f"{s.dir}/xc.f32", (s.B, s.tc, s.F))
    return kernel, recurrent, bias, x, xc


def identity_cost(seconds=0.3):
    """Seconds per call of an Identity model on one (1, 256) tensor through IOBinding: ORT's
    fixed cost per call, which streaming calls pay on top of the work."""
    g = helper.make_graph([helper.make_node("Identity", ["X"], ["Y"])], "identity",
                          [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 256])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 256])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = 8
    sess = session(m.SerializeToString(), 1)
    b = sess.io_binding()
    b.bind_ortvalue_input("X", ortvalue(np.ones((1, 256))))
    b.bind_ortvalue_output("Y", ortvalue(np.zeros((1, 256))))
    best = float("inf")
    for _ in range(3):
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds / 3:
            for _ in range(100):
                sess.run_with_iobinding(b)
            n += 100
        best = min(best, (time.perf_counter() - t0) / n)
    return best


def memory_probe(words):
    s = Spec(words)
    kernel, recurrent, bias, x, _ = load(s)
    model = build_model(s, kernel, recurrent, bias)
    print("start", vm_hwm_kb())
    layer = OrtLayer(s, model, x, 1)  # the session: ORT takes the weights when it is created
    print("create", vm_hwm_kb())
    print("weights", vm_hwm_kb())
    layer.run_n(1)
    print("call1", vm_hwm_kb())
    layer.run_n(1)
    print("call2", vm_hwm_kb())


def serve(threads):
    layers, data = {}, {}
    info = f"onnxruntime={ort.__version__} onnx={onnx.__version__}"
    print("ready", info, flush=True)
    for line in sys.stdin:
        w = line.split()
        if not w:
            continue
        cmd, args = w[0], w[1:]
        try:
            if cmd == "quit":
                print("ok", flush=True)
                return
            if cmd == "info":
                reply = info
            elif cmd == "identity":
                reply = repr(identity_cost())
            elif cmd == "setup":
                name, s = args[0], Spec(args[1:])
                layers.pop(name, None)
                kernel, recurrent, bias, x, xc = load(s)
                layers[name] = OrtLayer(s, build_model(s, kernel, recurrent, bias), x, threads)
                data[name] = xc
                reply = "transposes=" + ("trivial(B=1)" if s.B == 1 else "yes")
            elif cmd == "check":
                name, path = args
                layers[name].check(data[name]).astype(np.float32).tofile(path)
                reply = ""
            elif cmd == "time":
                name, asked, iters = args[0], int(args[1]), int(args[2])
                layer = layers[name]
                layer.set_threads(asked)
                # process_time: the CPU time of every thread of the process (ORT's pool included).
                c0, t0 = time.process_time(), time.perf_counter()
                layer.run_n(iters)
                reply = f"{time.perf_counter() - t0!r} {time.process_time() - c0!r}"
            elif cmd == "describe":
                reply = f"intra_op_num_threads={layers[args[0]].threads}"
            elif cmd == "free":
                layers.pop(args[0], None)
                data.pop(args[0], None)
                reply = ""
            else:
                raise ValueError(f"unknown command '{cmd}'")
            print("ok", reply, flush=True)
        except KeyError as e:
            print(f"err no layer set up for {e}", flush=True)
        except Exception as e:  # the driver reports it; the process keeps serving
            print("err", str(e).replace("\n", " "), flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--mem":
        memory_probe(sys.argv[3:])
    elif len(sys.argv) == 3 and sys.argv[1] == "--threads" and int(sys.argv[2]) >= 1:
        serve(int(sys.argv[2]))
    else:
        sys.exit("usage: ort_worker.py --threads N | --mem ort CELL B T F H STREAM CHECK_STEPS DIR")
