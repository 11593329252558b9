#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Build the small Keras models that the `recur` CLI tests run, with REAL Keras.

Usage (from the repository root; the venvs come from tests/keras/setup_venvs.sh):

    tests/keras/.venv-keras2/bin/python tests/cli/make_models.py --dialect keras2
    KERAS_BACKEND=tensorflow tests/keras/.venv-keras3/bin/python tests/cli/make_models.py --dialect keras3

Writes tests/cli/models/<dialect>/:
  tokens.keras, tokens.h5   Input(int ids) -> Embedding(20, 4, mask_zero=True) -> GRU(5, seq) -> LSTM(3)
                            -> Dense(2, softmax)   (functional)
  bigru.keras, bigru.h5     Input(T, 3) -> Masking(0) -> Bidirectional(GRU(3, seq)) -> TimeDistributed(Dense(2))
                            (sequential)
  binone.keras, binone.h5   Input(T, 3) -> Bidirectional(LSTM(2), merge_mode=None)   (two outputs)
  <model>_x.npy             the model input (int32 ids with 0 = padding / float32 with all-zero steps)
  <model>_y.npy / .npz      model.predict(x) on CPU (binone: y.npz with output, output_1)
  layer_gru_*.npy/.npz      layer-level case for the GRU 'gru' of tokens: its input (the Embedding
                            output), its mask, an initial state h0, expected output + state_h
  layer_lstm_*              the LSTM 'lstm' of tokens (fed by the GRU): output, state_h, state_c
  layer_biforward_*         the forward half 'bi/forward' of bigru: output, state_h
All weights are drawn from a seeded numpy generator, so reruns give the same numbers.
"""
import argparse
import os

os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"
os.environ["CUDA_VISIBLE_DEVICES"] = ""
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
B, T = 3, 6


def randomize(model, seed):
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        ws = layer.get_weights()
        if ws:
            layer.set_weights([rng.uniform(-0.6, 0.6, w.shape).astype(np.float32) for w in ws])


def with_state(keras, layer):
    """A copy of a recurrent layer that also returns its states, with the same weights."""
    cfg = layer.get_config()
    cfg["return_state"] = True
    clone = type(layer).from_config(cfg)
    return clone


def run_layer(layer, clone, x, mask, initial_state=None):
    kwargs = {"mask": mask}
    if initial_state is not None:
        kwargs["initial_state"] = initial_state
    clone(x, **kwargs)  # builds
    clone.set_weights(layer.get_weights())
    out = clone(x, **kwargs)
    return [np.asarray(o, dtype=np.float32) for o in out]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dialect", choices=["keras2", "keras3"], required=True)
    args = ap.parse_args()
    if args.dialect == "keras2":
        import tf_keras as keras
    else:
        import keras
    import tensorflow as tf

    out_dir = os.path.join(HERE, "models", args.dialect)
    os.makedirs(out_dir, exist_ok=True)
    seed = 7 if args.dialect == "keras2" else 8
    keras.utils.set_random_seed(seed)
    L = keras.layers

    def save(model, name):
        for ext in (".keras", ".h5"):
            path = os.path.join(out_dir, name + ext)
            if os.path.exists(path):
                os.remove(path)
            model.save(path)

    def npy(name, a):
        np.save(os.path.join(out_dir, name + ".npy"), a)

    # 1. token ids -> Embedding(mask_zero) -> GRU -> LSTM -> Dense(softmax)
    ids = keras.Input(shape=(T,), dtype="int32", name="ids")
    emb = L.Embedding(20, 4, mask_zero=True, name="embedding")
    gru = L.GRU(5, return_sequences=True, name="gru")
    lstm = L.LSTM(3, name="lstm")
    h = emb(ids)
    g = gru(h)
    y = L.Dense(2, activation="softmax", name="dense")(lstm(g))
    tokens = keras.Model(ids, y, name="tokens")
    randomize(tokens, seed * 100 + 1)
    x = np.array([[3, 7, 1, 19, 0, 0],    # right padding
                  [0, 0, 5, 2, 8, 11],    # left padding
                  [4, 0, 9, 0, 6, 13]],   # holes
                 dtype=np.int32)
    npy("tokens_x", x)
    npy("tokens_y", tokens.predict(x, verbose=0).astype(np.float32))
    save(tokens, "tokens")

    # layer-level cases of tokens
    mask = x != 0
    e = np.asarray(emb(x), dtype=np.float32)
    rng = np.random.default_rng(seed * 100 + 2)
    h0 = rng.uniform(-0.5, 0.5, (B, 5)).astype(np.float32)
    out, state_h = run_layer(gru, with_state(keras, gru), e, tf.constant(mask), [tf.constant(h0)])
    npy("layer_gru_x", e)
    npy("layer_gru_mask", mask)
    npy("layer_gru_h0", h0)
    np.savez(os.path.join(out_dir, "layer_gru_y.npz"), output=out, state_h=state_h)
    gseq = np.asarray(gru(e, mask=tf.constant(mask)), dtype=np.float32)
    out, state_h, state_c = run_layer(lstm, with_state(keras, lstm), gseq, tf.constant(mask))
    npy("layer_lstm_x", gseq)
    npy("layer_lstm_mask", mask.astype(np.uint8))
    np.savez_compressed(os.path.join(out_dir, "layer_lstm_y.npz"), output=out, state_h=state_h, state_c=state_c)

    # 2. float input -> Masking -> Bidirectional(GRU, seq) -> TimeDistributed(Dense)
    bigru = keras.Sequential([
        keras.Input(shape=(T, 3)),
        L.Masking(mask_value=0.0, name="masking"),
        L.Bidirectional(L.GRU(3, return_sequences=True), name="bi"),
        L.TimeDistributed(L.Dense(2), name="td"),
    ], name="bigru")
    randomize(bigru, seed * 100 + 3)
    rng = np.random.default_rng(seed * 100 + 4)
    xf = rng.uniform(-1, 1, (B, T, 3)).astype(np.float64)  # float64 on purpose: the CLI converts
    xf[0, 4:] = 0.0
    xf[1, :2] = 0.0
    xf[2, 3] = 0.0
    npy("bigru_x", xf)
    npy("bigru_y", bigru.predict(xf, verbose=0).astype(np.float32))
    save(bigru, "bigru")
    fwd = bigru.get_layer("bi").forward_layer
    xf32 = xf.astype(np.float32)
    fmask = np.any(xf32 != 0.0, axis=-1)
    out, state_h = run_layer(fwd, with_state(keras, fwd), xf32, tf.constant(fmask))
    npy("layer_biforward_x", xf32)
    npy("layer_biforward_mask", fmask)
    np.savez(os.path.join(out_dir, "layer_biforward_y.npz"), output=out, state_h=state_h)

    # 3. Bidirectional(LSTM, merge_mode=None): two outputs
    inp = keras.Input(shape=(T, 3), name="x")
    outs = L.Bidirectional(L.LSTM(2), merge_mode=None, name="bin")(inp)
    binone = keras.Model(inp, outs, name="binone")
    randomize(binone, seed * 100 + 5)
    xb = np.random.default_rng(seed * 100 + 6).uniform(-1, 1, (B, T, 3)).astype(np.float32)
    npy("binone_x", xb)
    y0, y1 = binone.predict(xb, verbose=0)
    np.savez(os.path.join(out_dir, "binone_y.npz"), output=y0.astype(np.float32), output_1=y1.astype(np.float32))
    save(binone, "binone")

    print(args.dialect, "->", out_dir)
    for f in sorted(os.listdir(out_dir)):
        print("  %-28s %6d bytes" % (f, os.path.getsize(os.path.join(out_dir, f))))


if __name__ == "__main__":
    main()
