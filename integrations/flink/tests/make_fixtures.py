# SPDX-License-Identifier: Apache-2.0
"""Writes the Flink integration's fixtures from real Keras 3: two small models (a GRU, and two
stacked LSTMs) and, for each, a few dozen keyed sequences of different lengths with what Keras
outputs for each whole sequence (model.predict on the key's sequence alone). The Flink tests feed
the keys' events interleaved and compare each event's output with these.

    /work/venvs/keras3/bin/python integrations/flink/tests/make_fixtures.py

Output: integrations/flink/tests/fixtures/{gru,lstm}.keras and {gru,lstm}_cases.txt, a text
format: "key K T" then T lines "x0 x1 x2 | y0 y1" (float32 values, 9 significant digits).
"""
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import keras  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures")
FEATURES = 3
KEYS = 30
MAX_LEN = 12


def gru_model():
    x = keras.Input((None, FEATURES), name="x")
    h = keras.layers.GRU(8, return_sequences=True, name="gru")(x)
    y = keras.layers.Dense(2, name="dense")(h)
    return keras.Model(x, y, name="gru_model")


def lstm_model():
    x = keras.Input((None, FEATURES), name="x")
    h = keras.layers.LSTM(6, return_sequences=True, name="lstm_1")(x)
    h = keras.layers.LSTM(5, return_sequences=True, name="lstm_2")(h)
    y = keras.layers.Dense(2, name="dense")(h)
    return keras.Model(x, y, name="lstm_model")


def write(name, model, seed):
    keras.utils.set_random_seed(seed)
    model = model()
    rng = np.random.default_rng(seed)
    # Non-zero biases, so that the states' start matters.
    for w in model.weights:
        if "bias" in w.path:
            w.assign(rng.uniform(-0.3, 0.3, size=w.shape).astype(np.float32))
    model.save(os.path.join(OUT, name + ".keras"))
    lines = []
    for k in range(KEYS):
        T = int(rng.integers(1, MAX_LEN + 1))
        x = rng.uniform(-1, 1, size=(1, T, FEATURES)).astype(np.float32)
        y = model.predict(x, verbose=0)[0]
        lines.append("key %d %d" % (k, T))
        for t in range(T):
            lines.append(" ".join("%.9g" % v for v in x[0, t]) + " | " + " ".join("%.9g" % v for v in y[t]))
    with open(os.path.join(OUT, name + "_cases.txt"), "w") as f:
        f.write("# keras %s, %s: %d keys, whole-sequence outputs of model.predict\n" % (keras.__version__, name, KEYS))
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    write("gru", gru_model, 1)
    write("lstm", lstm_model, 2)
