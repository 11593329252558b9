# SPDX-License-Identifier: Apache-2.0
"""Makes the Spark integration's fixtures: two models saved by real Keras and a Parquet table of
sequences of mixed lengths with Keras's outputs for every row.

    python integrations/spark/tests/make_fixtures.py --arrow-python build/spark-venv/bin/python

Keras runs in the venvs tests/keras/setup_venvs.sh makes (.venv-keras3, .venv-keras2), or in the
Pythons named by --keras3-python and --keras2-python (Keras 3; TensorFlow with tf_keras); the
Parquet files are written by a Python with PyArrow (build/spark-venv, integrations/spark/deps.sh).
Keras's reference for a row is that row alone, unpadded: rows of one length go through
model.predict together, so no padding or mask is involved in the expected numbers.

Files (tests/fixtures/):
  gru_masking_keras3.keras  Input (None, 4) -> Masking -> GRU(8, return_sequences) -> LSTM(6) ->
                            Dense(3); outputs [score, gru] (gru is a sequence output)
  lstm_keras2.h5            Input (None, 4) -> LSTM(5) -> Dense(2, sigmoid), no Masking: a padded
                            batch needs an explicit mask to give each row's own result
  embedding_gru_keras3.keras  Input (None,) int32 token ids -> Embedding(20, 5, mask_zero) -> GRU(4)
                            -> Dense(1): a (batch, steps) input, one id per step
  stateful_gru_keras3.keras Input batch (2, None, 4) -> GRU(2, stateful): refused (rows would carry
                            states into each other)
  sequences.parquet         id: int64, seq: array<array<float>> (T_i, 4), T_i in 1..12,
                            tokens: array<int32> (T_i ids in 1..19)
  expected.parquet          id, k3_score (3), k3_gru (T_i*8, row-major), k2_prob (2), k3_tok (1):
                            Keras's outputs
"""
import argparse
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixtures")
ROWS, FEATURES, MAX_T, SEED = 240, 4, 12, 20261127


def data():
    import numpy as np
    rng = np.random.default_rng(SEED)
    lengths = rng.integers(1, MAX_T + 1, size=ROWS)
    # Never an all-zero step: Masking would mask it (Keras would too, but the fixture keeps the
    # padding the only masked steps so that the unpadded reference is the right one).
    seqs = [rng.normal(0.0, 1.0, size=(int(t), FEATURES)).astype("float32") + 0.01 for t in lengths]
    ids = (1000 + np.arange(ROWS)).astype("int64")
    return ids, seqs


def tokens(seqs):
    import numpy as np
    rng = np.random.default_rng(SEED + 1)
    return [rng.integers(1, 20, size=len(s)).astype("int32") for s in seqs]


def per_row(model, seqs):
    """Keras's outputs for each row alone: rows of equal length predicted together, unpadded."""
    import numpy as np
    outs = [None] * len(seqs)
    by_len = {}
    for i, s in enumerate(seqs):
        by_len.setdefault(len(s), []).append(i)
    for t, idx in sorted(by_len.items()):
        x = np.stack([seqs[i] for i in idx])
        y = model.predict(x, verbose=0)
        y = y if isinstance(y, list) else [y]
        for j, i in enumerate(idx):
            outs[i] = [np.asarray(o[j], dtype="float32").reshape(-1) for o in y]
    return outs


def stage_keras3(npz):
    import numpy as np
    import keras
    keras.utils.set_random_seed(SEED)
    inp = keras.Input((None, FEATURES), name="seq_in")
    m = keras.layers.Masking(0.0, name="masking")(inp)
    g = keras.layers.GRU(8, return_sequences=True, name="gru")(m)
    h = keras.layers.LSTM(6, name="lstm")(g)
    s = keras.layers.Dense(3, name="score")(h)
    model = keras.Model(inp, [s, g])
    model.save(os.path.join(OUT, "gru_masking_keras3.keras"))
    ids, seqs = data()
    outs = per_row(model, seqs)
    ti = keras.Input((None,), dtype="int32", name="tokens")
    e = keras.layers.Embedding(20, 5, mask_zero=True, name="embedding")(ti)
    tok_model = keras.Model(ti, keras.layers.Dense(1, name="tok_score")(keras.layers.GRU(4, name="tok_gru")(e)))
    tok_model.save(os.path.join(OUT, "embedding_gru_keras3.keras"))
    tok = per_row(tok_model, tokens(seqs))
    si = keras.Input(batch_shape=(2, None, FEATURES), name="seq_in")
    keras.Model(si, keras.layers.GRU(2, stateful=True, name="gru")(si)).save(os.path.join(OUT, "stateful_gru_keras3.keras"))
    np.savez(npz, k3_score=np.concatenate([o[0] for o in outs]), k3_gru=np.concatenate([o[1] for o in outs]),
             k3_tok=np.concatenate([o[0] for o in tok]))


def stage_keras2(npz):
    import numpy as np
    import tensorflow as tf
    import tf_keras as keras
    tf.random.set_seed(SEED)
    inp = keras.Input((None, FEATURES), name="seq_in")
    h = keras.layers.LSTM(5, name="lstm")(inp)
    p = keras.layers.Dense(2, activation="sigmoid", name="prob")(h)
    model = keras.Model(inp, p)
    model.save(os.path.join(OUT, "lstm_keras2.h5"))
    ids, seqs = data()
    outs = per_row(model, seqs)
    np.savez(npz, k2_prob=np.concatenate([o[0] for o in outs]))


def stage_parquet(k3, k2):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    ids, seqs = data()
    lens = np.array([len(s) for s in seqs])
    seq_type = pa.list_(pa.list_(pa.float32()))
    pq.write_table(pa.table({"id": pa.array(ids), "seq": pa.array([s.tolist() for s in seqs], type=seq_type),
                             "tokens": pa.array([t.tolist() for t in tokens(seqs)], type=pa.list_(pa.int32()))}),
                   os.path.join(OUT, "sequences.parquet"))
    a, b = np.load(k3), np.load(k2)

    def split(flat, sizes):
        return pa.array([c.tolist() for c in np.split(flat, np.cumsum(sizes)[:-1])], type=pa.list_(pa.float32()))
    pq.write_table(pa.table({
        "id": pa.array(ids),
        "k3_score": split(a["k3_score"], [3] * ROWS),
        "k3_gru": split(a["k3_gru"], lens * 8),
        "k2_prob": split(b["k2_prob"], [2] * ROWS),
        "k3_tok": split(a["k3_tok"], [1] * ROWS),
    }), os.path.join(OUT, "expected.parquet"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stage", choices=["keras3", "keras2", "parquet"])
    ap.add_argument("--npz", nargs="*")
    keras_venvs = os.path.join(HERE, "../../../tests/keras")
    ap.add_argument("--keras3-python", default=os.path.join(keras_venvs, ".venv-keras3/bin/python"))
    ap.add_argument("--keras2-python", default=os.path.join(keras_venvs, ".venv-keras2/bin/python"))
    ap.add_argument("--arrow-python", default=os.path.join(HERE, "../../../build/spark-venv/bin/python"))
    a = ap.parse_args()
    if a.stage == "keras3":
        return stage_keras3(a.npz[0])
    if a.stage == "keras2":
        return stage_keras2(a.npz[0])
    if a.stage == "parquet":
        return stage_parquet(*a.npz)
    os.makedirs(OUT, exist_ok=True)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="", KERAS_BACKEND="tensorflow")
    with tempfile.TemporaryDirectory() as tmp:
        k3, k2 = os.path.join(tmp, "k3.npz"), os.path.join(tmp, "k2.npz")
        me = os.path.abspath(__file__)
        subprocess.run([a.keras3_python, me, "--stage", "keras3", "--npz", k3], check=True, env=env)
        subprocess.run([a.keras2_python, me, "--stage", "keras2", "--npz", k2], check=True, env=env)
        subprocess.run([a.arrow_python, me, "--stage", "parquet", "--npz", k3, k2], check=True, env=env)
    for f in sorted(os.listdir(OUT)):
        print(f, os.path.getsize(os.path.join(OUT, f)))


if __name__ == "__main__":
    sys.exit(main())
