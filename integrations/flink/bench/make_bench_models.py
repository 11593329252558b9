# SPDX-License-Identifier: Apache-2.0
"""The benchmark's models (not committed: GRU(256) is a few MB): Input(None, 16) -> GRU(units) ->
Dense(4), for units 64 and 256, saved with Keras 3 into the folder given.

    /work/venvs/keras3/bin/python integrations/flink/bench/make_bench_models.py build/flink-bench
"""
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras  # noqa: E402

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for units in (64, 256):
    keras.utils.set_random_seed(units)
    x = keras.Input((None, 16), name="x")
    h = keras.layers.GRU(units, name="gru")(x)
    y = keras.layers.Dense(4, name="dense")(h)
    keras.Model(x, y).save(os.path.join(out, "gru%d.keras" % units))
