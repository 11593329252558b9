# SPDX-License-Identifier: Apache-2.0
"""Makes the benchmark's models with real Keras (tf_keras on TensorFlow): run it in a Python with
tf_keras and TensorFlow (e.g. /work/venvs/keras2-like venvs; see README.md).

    make_models.py OUT_DIR [--units 64] [--features 32] [--timesteps 20] [--batches 1,32]

Writes, per cell (gru, lstm):
  CELL.keras                      Input((None, F)) -> CELL(H, return_sequences=True); for recur
  CELL_weights.npz                kernel, recurrent_kernel, bias (Keras layout); for the ONNX graph
  CELL_seq_bB.tflite              the same model with fixed shape (B, T, F), converted by
                                  tf.lite.TFLiteConverter
  CELL_step_bB.tflite             one step: x (B, 1, F) and the states in, (y, states) out
  CELL_step_unrolled_bB.tflite    the same built with unroll=True (no While loop)
  reference.npz                   inputs and Keras's own outputs: x_seq (Bmax, T, F), x_stream
                                  (Bmax, S, F) and, per cell, Keras predict on each
plus versions.json (TensorFlow, tf_keras, numpy).
"""
import argparse
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np
import tensorflow as tf
import tf_keras as keras

STREAM_STEPS = 8  # consecutive steps checked for the streaming call


def layer_class(cell):
    return keras.layers.GRU if cell == "gru" else keras.layers.LSTM


def seq_model(cell, H, F, B=None, T=None, name=None):
    x = keras.Input(shape=(T, F), batch_size=B, name="x")
    y = layer_class(cell)(H, return_sequences=True, name=cell)(x)
    return keras.Model(x, y, name=name or f"{cell}_seq")


def step_model(cell, H, F, B, unroll):
    """One timestep with the states as explicit inputs and outputs: what a stateless runtime
    needs to stream."""
    x = keras.Input(shape=(1, F), batch_size=B, name="x")
    n_states = 2 if cell == "lstm" else 1
    states = [keras.Input(shape=(H,), batch_size=B, name=f"state{i}") for i in range(n_states)]
    outs = layer_class(cell)(H, return_sequences=True, return_state=True, unroll=unroll,
                             name=cell)(x, initial_state=states)
    return keras.Model([x] + states, outs, name=f"{cell}_step")


def to_tflite(model):
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    return conv.convert()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--units", type=int, default=64)
    ap.add_argument("--features", type=int, default=32)
    ap.add_argument("--timesteps", type=int, default=20)
    ap.add_argument("--batches", default="1,32")
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()
    H, F, T = a.units, a.features, a.timesteps
    batches = [int(b) for b in a.batches.split(",")]
    os.makedirs(a.out, exist_ok=True)
    keras.utils.set_random_seed(a.seed)
    rng = np.random.default_rng(a.seed)
    Bmax = max(batches)
    ref = {
        "x_seq": rng.standard_normal((Bmax, T, F)).astype(np.float32),
        "x_stream": rng.standard_normal((Bmax, STREAM_STEPS, F)).astype(np.float32),
    }
    for cell in ("gru", "lstm"):
        m = seq_model(cell, H, F)
        kernel, recurrent, bias = m.get_layer(cell).get_weights()
        # Keras initialises biases to zeros (the LSTM forget half to ones); nonzero biases check
        # that every converter maps each bias slot.
        bias = rng.uniform(-0.2, 0.2, bias.shape).astype(np.float32)
        weights = [kernel, recurrent, bias]
        m.get_layer(cell).set_weights(weights)
        m.save(os.path.join(a.out, f"{cell}.keras"))
        np.savez(os.path.join(a.out, f"{cell}_weights.npz"), kernel=kernel,
                 recurrent_kernel=recurrent, bias=bias)
        for B in batches:
            ref[f"{cell}_seq_b{B}"] = m.predict(ref["x_seq"][:B], verbose=0)
            ref[f"{cell}_stream_b{B}"] = m.predict(ref["x_stream"][:B], verbose=0)
            fixed = seq_model(cell, H, F, B=B, T=T)
            fixed.get_layer(cell).set_weights(weights)
            with open(os.path.join(a.out, f"{cell}_seq_b{B}.tflite"), "wb") as f:
                f.write(to_tflite(fixed))
            for unroll in (False, True):
                sm = step_model(cell, H, F, B, unroll)
                sm.get_layer(cell).set_weights(weights)
                tag = "step_unrolled" if unroll else "step"
                with open(os.path.join(a.out, f"{cell}_{tag}_b{B}.tflite"), "wb") as f:
                    f.write(to_tflite(sm))
        print(cell, "done", flush=True)
    np.savez(os.path.join(a.out, "reference.npz"), **ref)
    with open(os.path.join(a.out, "versions.json"), "w") as f:
        json.dump({"tensorflow": tf.__version__, "tf_keras": keras.__version__,
                   "numpy": np.__version__, "units": H, "features": F, "timesteps": T,
                   "batches": batches, "stream_steps": STREAM_STEPS, "seed": a.seed}, f, indent=1)


if __name__ == "__main__":
    main()
