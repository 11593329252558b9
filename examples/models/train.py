# SPDX-License-Identifier: Apache-2.0
"""Trains the small model bundled with recur's examples, with real Keras, and saves it with the
Keras outputs beside it.

    tests/keras/.venv-keras3/bin/python examples/models/train.py keras3
    tests/keras/.venv-keras2/bin/python examples/models/train.py keras2

(The virtual environments come from tests/keras/setup_venvs.sh.) The task is a toy one: a
sequence of token ids (0 = padding) is "positive" when token 3 occurs more often than token 5.
The model is Embedding(mask_zero) -> GRU(return_sequences) -> LSTM -> Dense(softmax), so the
padding mask flows through both recurrent layers.

Writes, per dialect D:
  sentiment_D.keras, sentiment_D.h5   the trained model, as Keras saves it
  sentiment_inputs.npy / .txt         12 sample sequences (B=12, T=10), right- and left-padded
  sentiment_D_keras.npy / .txt        Keras's predictions on them (model.predict, CPU, float32)
The .txt files carry the same numbers for the C example, one row per line.
"""
import os
import sys

os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

dialect = sys.argv[1] if len(sys.argv) > 1 else "keras3"
if dialect == "keras2":
    import tf_keras as keras
else:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import keras

import numpy as np
import tensorflow as tf

here = os.path.dirname(os.path.abspath(__file__))
VOCAB, T = 20, 10


def make_batch(rng, n):
    x = np.zeros((n, T), dtype="int32")
    y = np.zeros((n,), dtype="int32")
    for i in range(n):
        length = rng.integers(3, T + 1)
        tokens = rng.integers(1, VOCAB, size=length)
        if rng.random() < 0.5:
            x[i, :length] = tokens          # right-padded
        else:
            x[i, T - length:] = tokens      # left-padded
        y[i] = int(np.sum(tokens == 3) > np.sum(tokens == 5))
    return x, y


def main():
    rng = np.random.default_rng(2026)
    tf.random.set_seed(2026)
    keras.utils.set_random_seed(2026)
    x_train, y_train = make_batch(rng, 4000)
    layers = keras.layers
    model = keras.Sequential([
        keras.Input(shape=(T,), dtype="int32"),
        layers.Embedding(VOCAB, 8, mask_zero=True, name="embedding"),
        layers.GRU(16, return_sequences=True, name="gru"),
        layers.LSTM(8, name="lstm"),
        layers.Dense(2, activation="softmax", name="head"),
    ])
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit(x_train, y_train, epochs=6, batch_size=64, verbose=2)

    samples_rng = np.random.default_rng(7)
    x, _ = make_batch(samples_rng, 12)
    y = model.predict(x, verbose=0).astype("float32")
    model.save(os.path.join(here, f"sentiment_{dialect}.keras"))
    model.save(os.path.join(here, f"sentiment_{dialect}.h5"))
    np.save(os.path.join(here, "sentiment_inputs.npy"), x)
    np.savetxt(os.path.join(here, "sentiment_inputs.txt"), x, fmt="%d")
    np.save(os.path.join(here, f"sentiment_{dialect}_keras.npy"), y)
    np.savetxt(os.path.join(here, f"sentiment_{dialect}_keras.txt"), y, fmt="%.9g")
    print(dialect, keras.__version__, "saved; predictions:\n", y)


if __name__ == "__main__":
    main()
