#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Build the model on which the `recur` CLI tests that token ids above 2^24 stay exact, with REAL Keras 3.

Usage (from the repository root, any Keras 3 backend):

    tests/keras/.venv-keras3/bin/python tests/cli/make_big_embedding.py

Writes tests/cli/models/keras3/:
  big_embedding.keras     Input((3,), int64) -> Embedding(2^24 + 2, 1): every row 0 but row 5 (1.5),
                          row 2^24 (3.0, what the float32 of 2^24 + 1 rounds to) and row 2^24 + 1 (7.0)
  big_embedding_x.npy     int64 ids [[2^24 + 1, 5, 2^24]]
  big_embedding_y.npy     model.predict(x): [7, 1.5, 3] where the ids reach the lookup exactly
Keras stores the 64 MiB of weights uncompressed; the archive is rewritten with its members
deflated (the same bytes inside), which keeps the file near 70 KB.
"""
import os
import zipfile

import numpy as np
import keras

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    out_dir = os.path.join(HERE, "models", "keras3")
    rows = 2**24 + 2
    ids = keras.Input(shape=(3,), dtype="int64", name="ids")
    emb = keras.layers.Embedding(rows, 1, name="emb")
    model = keras.Model(ids, emb(ids), name="big_embedding")
    w = np.zeros((rows, 1), np.float32)
    w[5] = 1.5
    w[2**24] = 3.0
    w[2**24 + 1] = 7.0
    emb.set_weights([w])
    x = np.array([[2**24 + 1, 5, 2**24]], dtype=np.int64)
    y = np.asarray(model.predict(x, verbose=0)).astype(np.float32)
    assert y.ravel().tolist() == [7.0, 1.5, 3.0], y
    np.save(os.path.join(out_dir, "big_embedding_x.npy"), x)
    np.save(os.path.join(out_dir, "big_embedding_y.npy"), y)
    stored = os.path.join(out_dir, "big_embedding.stored.keras")
    model.save(stored)
    with zipfile.ZipFile(stored) as src, zipfile.ZipFile(
        os.path.join(out_dir, "big_embedding.keras"), "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9
    ) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info.filename))
    os.remove(stored)
    print(keras.__version__, keras.backend.backend(), "->", out_dir, y.ravel().tolist())


if __name__ == "__main__":
    main()
