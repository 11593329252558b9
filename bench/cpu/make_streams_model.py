# SPDX-License-Identifier: Apache-2.0
"""Writes bench/cpu/models/streams_gru64_lstm64.keras, the model streams_bench steps: Input (T, 16)
-> GRU(64, return_sequences) -> LSTM(64) -> Dense(4), seeded weights. Run it with Keras 3:
    /path/to/keras3-venv/bin/python bench/cpu/make_streams_model.py
"""
import os
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
import keras  # noqa: E402

keras.utils.set_random_seed(7)
x = keras.Input(shape=(None, 16), name="x")
h = keras.layers.GRU(64, return_sequences=True, name="gru")(x)
h = keras.layers.LSTM(64, name="lstm")(h)
y = keras.layers.Dense(4, name="head")(h)
model = keras.Model(x, y)
out = Path(__file__).resolve().parent / "models" / "streams_gru64_lstm64.keras"
out.parent.mkdir(exist_ok=True)
model.save(out)
print(out, out.stat().st_size, "bytes")
