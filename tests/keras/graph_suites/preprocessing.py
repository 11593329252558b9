# SPDX-License-Identifier: Apache-2.0
"""Numeric preprocessing layers saved inside recurrent models: Normalization, Rescaling,
Discretization, CategoryEncoding, IntegerLookup (configured or adapted).

The preprocessing layers keep the state Keras gave them (adapt() or config values); only the
other layers' weights are drawn, as in the core cases."""
import numpy as np

from generate_graphs import B, Skip, case

PREPROCESSING = {"Normalization", "Rescaling", "Discretization", "CategoryEncoding", "IntegerLookup"}


def drawn(g, model):
    """Weights uniform(-0.5, 0.5) for every layer but the preprocessing ones (their mean,
    variance and count are their state, not weights to draw)."""
    for layer in model.layers:
        if type(layer).__name__ in PREPROCESSING:
            continue
        for v in layer.weights:
            shape = tuple(int(s) for s in v.shape)
            v.assign(g.weight_rng.uniform(-0.5, 0.5, shape).astype(np.dtype(getattr(v.dtype, "name", v.dtype))))
    return model


def needs_tensorflow(g, what):
    if g.dialect == "keras3_jax":
        raise Skip(f"{what} runs on TensorFlow only (tf.lookup / tf.data), not on JAX")


def unsaveable(model, ext, why):
    """model.save() to a .{ext} path raises `why`: Keras writes a file it does not read back the
    same, so the case records the format in skipped_files instead of keeping a wrong file."""
    save = model.save

    def checked(path, *a, **kw):
        if str(path).endswith("." + ext):
            raise NotImplementedError(why)
        return save(path, *a, **kw)

    model.save = checked
    return model


def done(g, model, inputs):
    return {"model": drawn(g, model), "weights_set": True, "inputs": inputs}


@case("normalization_adapted_lstm", "Input(6, 3) -> Normalization(axis=-1, adapted) -> LSTM(4) -> "
      "Dense(2): mean, variance and count are saved as the layer's weights")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    norm = L.Normalization(axis=-1)
    norm.adapt(d.seq(20, 6, 3, lo=-2.0, hi=3.0))
    y = L.Dense(2)(L.LSTM(4)(norm(x)))
    return done(g, g.K.Model(x, y), [d.seq(B, 6, 3, lo=-2.0, hi=3.0)])


@case("normalization_config_gru", "Input(6, 3) -> Normalization(mean=[..], variance=[..], one "
      "variance 0: Keras divides by max(sqrt(variance), epsilon)) -> GRU(4, rs) -> Dense(2)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    norm = L.Normalization(mean=[0.5, -1.0, 0.25], variance=[2.0, 0.0, 0.5])
    y = L.Dense(2)(L.GRU(4, return_sequences=True)(norm(x)))
    return done(g, g.K.Model(x, y), [d.seq(B, 6, 3)])


@case("normalization_axis_none_rnn", "Input(6, 2) -> Masking -> Normalization(axis=None, mean=0.5, "
      "variance=2.0) -> SimpleRNN(3, rs): one scalar mean; the mask passes (Keras 3)",
      dialects=("keras3", "keras3_jax"))
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 2), name="x")
    norm = L.Normalization(axis=None, mean=0.5, variance=2.0)
    y = L.SimpleRNN(3, return_sequences=True)(norm(L.Masking()(x)))
    return done(g, g.K.Model(x, y), [d.masked(6, 2)])


@case("normalization_axis_none_scalar", "Input(6, 2) -> Normalization(axis=None, mean=0.5, "
      "variance=2.0) -> SimpleRNN(3, rs)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 2), name="x")
    norm = L.Normalization(axis=None, mean=0.5, variance=2.0)
    y = L.SimpleRNN(3, return_sequences=True)(norm(x))
    return done(g, g.K.Model(x, y), [d.seq(B, 6, 2)])


@case("normalization_axis_time_features", "Input(5, 2) -> Normalization(axis=(1, 2), adapted): "
      "statistics per timestep and feature (the model does not stream) -> GRU(3) -> Dense(2)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(5, 2), name="x")
    norm = L.Normalization(axis=(1, 2))
    norm.adapt(d.seq(16, 5, 2, lo=-1.0, hi=2.0))
    y = L.Dense(2)(L.GRU(3)(norm(x)))
    return done(g, g.K.Model(x, y), [d.seq(B, 5, 2)])


@case("normalization_invert", "Input(6, 3) -> Normalization(invert=True, adapted) -> LSTM(3, rs): "
      "mean + x * max(sqrt(variance), epsilon)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    norm = L.Normalization(invert=True)
    norm.adapt(d.seq(20, 6, 3, lo=0.0, hi=2.0))
    y = L.LSTM(3, return_sequences=True)(norm(x))
    return done(g, g.K.Model(x, y), [d.seq(B, 6, 3)])


@case("rescaling_gru", "Input(7, 3) -> Rescaling(scale=0.5, offset=-0.25) -> GRU(4, rs) -> "
      "Rescaling(2.0) -> Dense(2)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    h = L.GRU(4, return_sequences=True)(L.Rescaling(scale=0.5, offset=-0.25)(x))
    y = L.Dense(2)(L.Rescaling(2.0)(h))
    return done(g, g.K.Model(x, y), [d.seq(B, 7, 3)])


@case("rescaling_per_channel", "Input(7, 3) -> Masking -> Rescaling(scale=[..3], offset=[..3]) -> "
      "LSTM(3): a scale and offset per channel; the mask passes", dialects=("keras3", "keras3_jax"))
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    r = L.Rescaling(scale=[0.5, 2.0, -1.0], offset=[0.1, 0.0, -0.2])
    y = L.LSTM(3)(r(L.Masking()(x)))
    return done(g, g.K.Model(x, y), [d.masked(7, 3)])


@case("discretization_embedding_gru", "Input(None,) float -> Discretization(bin_boundaries=[-0.5, 0, "
      "0.5]) -> Embedding(4, 3) -> GRU(4) -> Dense(2)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(None,), name="x")
    ids = L.Discretization(bin_boundaries=[-0.5, 0.0, 0.5])(x)
    y = L.Dense(2)(L.GRU(4)(L.Embedding(4, 3)(ids)))
    xs = d.seq(B, 7)
    xs[0, 0], xs[1, 1], xs[2, 2] = -0.5, 0.0, 0.5  # on the boundaries
    return done(g, g.K.Model(x, y), [xs])


@case("discretization_adapted_embedding", "Input(None,) float -> Discretization(num_bins=4, "
      "adapted) -> Embedding(4, 2) -> LSTM(3, rs): the adapted boundaries are in the config")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(None,), name="x")
    needs_tensorflow(g, "Discretization.adapt")
    disc = L.Discretization(num_bins=4, epsilon=0.01)
    disc.adapt(d.seq(50, lo=-2.0, hi=2.0))
    y = L.LSTM(3, return_sequences=True)(L.Embedding(4, 2)(disc(x)))
    m = g.K.Model(x, y)
    if g.dialect == "keras2":
        unsaveable(m, "keras", "tf_keras loads an adapted Discretization back from .keras with other "
                   "bin boundaries (its predictions differ)")
    return done(g, m, [d.seq(B, 6, lo=-2.0, hi=2.0)])


@case("discretization_one_hot_lstm", "Input(6, 1) float -> Discretization([0.0, 0.5], one_hot) -> "
      "(B, 6, 3) -> LSTM(3)", dialects=("keras3", "keras3_jax"))
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 1), name="x")
    oh = L.Discretization(bin_boundaries=[0.0, 0.5], output_mode="one_hot")(x)
    y = L.LSTM(3)(oh)
    return done(g, g.K.Model(x, y), [d.seq(B, 6, 1)])


@case("category_encoding_one_hot_gru", "Input(None,) int -> CategoryEncoding(5, one_hot) -> "
      "(B, T, 5) -> GRU(3, rs)", dialects=("keras3", "keras3_jax"))
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(None,), dtype="int32", name="ids")
    y = L.GRU(3, return_sequences=True)(L.CategoryEncoding(5, output_mode="one_hot")(x))
    return done(g, g.K.Model(x, y), [d.rng.integers(0, 5, (B, 6)).astype(np.int32)])


@case("category_encoding_bags", "inputs seq (6, 3) -> GRU(4), and tokens (5,) int -> "
      "CategoryEncoding(6, multi_hot) and CategoryEncoding(6, count) -> Concatenate -> Dense(2)")
def _(g, d):
    L = g.L
    seq = g.K.Input(shape=(6, 3), name="seq")
    tok = g.K.Input(shape=(5,), dtype="int32", name="tokens")
    mh = L.CategoryEncoding(6, output_mode="multi_hot")(tok)
    ct = L.CategoryEncoding(6, output_mode="count")(tok)
    y = L.Dense(2)(L.Concatenate()([L.GRU(4)(seq), mh, ct]))
    toks = d.rng.integers(0, 6, (B, 5)).astype(np.int32)
    return done(g, g.K.Model([seq, tok], y), [d.seq(B, 6, 3), toks])


@case("category_encoding_output", "inputs seq (6, 3) -> LSTM(3), and tokens (4,) int -> "
      "CategoryEncoding(5, count) as a model output of its own")
def _(g, d):
    L = g.L
    seq = g.K.Input(shape=(6, 3), name="seq")
    tok = g.K.Input(shape=(4,), dtype="int32", name="tokens")
    outs = [L.LSTM(3)(seq), L.CategoryEncoding(5, output_mode="count")(tok)]
    return done(g, g.K.Model([seq, tok], outs), [d.seq(B, 6, 3), d.rng.integers(0, 5, (B, 4)).astype(np.int32)])


VOCAB = [7, 3, 16777217, 16777219, 250]  # two ids above 2^24 that float32 cannot tell apart


def lookup_ids(d, T, extra=(0, 5, 16777218)):
    pool = np.array(VOCAB + list(extra), dtype=np.int64)
    return pool[d.rng.integers(0, len(pool), (B, T))].astype(np.int32)


@case("integer_lookup_vocab_gru", "Input(None,) int -> IntegerLookup(vocabulary=[7, 3, 16777217, "
      "16777219, 250], mask_token=0) -> Embedding(7, 3, mask_zero=True) -> GRU(4) -> Dense(2): ids "
      "above 2^24 stay exact; 0 is the mask token, unknown ids the OOV index 1")
def _(g, d):
    needs_tensorflow(g, "IntegerLookup")
    L = g.L
    x = g.K.Input(shape=(None,), dtype="int32", name="ids")
    lk = L.IntegerLookup(vocabulary=VOCAB, mask_token=0)
    y = L.Dense(2)(L.GRU(4)(L.Embedding(7, 3, mask_zero=True)(lk(x))))
    return done(g, g.K.Model(x, y), [lookup_ids(d, 7)])


@case("integer_lookup_adapted_lstm", "Input(None,) int -> IntegerLookup(num_oov_indices=2, adapted) "
      "-> Embedding(8, 3) -> LSTM(3, rs): the adapted vocabulary is an asset of the .keras file; two "
      "OOV indices take id % 2")
def _(g, d):
    L = g.L
    needs_tensorflow(g, "IntegerLookup")
    x = g.K.Input(shape=(None,), dtype="int32", name="ids")
    lk = L.IntegerLookup(num_oov_indices=2)
    lk.adapt(np.array([[7, 7, 3, 250], [16777217, 3, 7, 16777219]], dtype=np.int64))
    n = lk.vocabulary_size()
    y = L.LSTM(3, return_sequences=True)(L.Embedding(n, 3)(lk(x)))
    m = unsaveable(g.K.Model(x, y), "h5", "a legacy .h5 file keeps no adapted IntegerLookup vocabulary "
                   "(Keras loads it back with an empty lookup table)")
    return done(g, m, [lookup_ids(d, 6, extra=(0, 5, 16777218, -3))])


@case("integer_lookup_modes", "inputs seq (6, 2) -> LSTM(3), and tokens (4,) int -> IntegerLookup("
      "vocabulary, output_mode=multi_hot / count / one_hot on (B, 1)) -> Concatenate -> Dense(2)")
def _(g, d):
    needs_tensorflow(g, "IntegerLookup")
    L = g.L
    seq = g.K.Input(shape=(6, 2), name="seq")
    tok = g.K.Input(shape=(4,), dtype="int32", name="tokens")
    one = g.K.Input(shape=(1,), dtype="int32", name="one")
    mh = L.IntegerLookup(vocabulary=VOCAB, output_mode="multi_hot")(tok)
    ct = L.IntegerLookup(vocabulary=VOCAB, output_mode="count", num_oov_indices=0, mask_token=0)(tok)
    oh = L.IntegerLookup(vocabulary=VOCAB, output_mode="one_hot")(one)
    y = L.Dense(2)(L.Concatenate()([L.LSTM(3)(seq), mh, ct, oh]))
    toks = np.array(VOCAB + [0, 0, 250])[d.rng.integers(0, 8, (B, 4))].astype(np.int32)
    return done(g, g.K.Model([seq, tok, one], y), [d.seq(B, 6, 2), toks, lookup_ids(d, 1)])


@case("integer_lookup_invert_embedding", "Input(None,) int -> IntegerLookup(vocabulary=[5, 9, 2, 7], "
      "invert=True) (index -> term; OOV index 0 -> oov_token -1 clipped by a later lookup) -> "
      "IntegerLookup(vocabulary=[2, 5, 7, 9]) -> Embedding(5, 3) -> GRU(3)")
def _(g, d):
    needs_tensorflow(g, "IntegerLookup")
    L = g.L
    x = g.K.Input(shape=(None,), dtype="int32", name="ids")
    terms = L.IntegerLookup(vocabulary=[5, 9, 2, 7], invert=True)(x)
    ids = L.IntegerLookup(vocabulary=[2, 5, 7, 9])(terms)
    y = L.GRU(3)(L.Embedding(5, 3)(ids))
    return done(g, g.K.Model(x, y), [d.rng.integers(0, 5, (B, 6)).astype(np.int32)])


@case("discretization_drops_mask", "Input(6, 1) -> Masking -> Discretization([0.0, 0.5]) -> "
      "Reshape((6,)) -> Embedding(3, 2) -> GRU(3, rs): Discretization does not support masking, so the GRU runs "
      "unmasked (Keras 2 refuses the mask at build)", dialects=("keras3", "keras3_jax"))
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 1), name="x")
    with g.warnings_ignored():
        ids = L.Discretization(bin_boundaries=[0.0, 0.5])(L.Masking()(x))
    y = L.GRU(3, return_sequences=True)(L.Embedding(3, 2)(L.Reshape((6,))(ids)))
    return done(g, g.K.Model(x, y), [d.masked(6, 1)])


@case("integer_lookup_one_hot_lstm", "Input(None,) int -> IntegerLookup(vocabulary=[4, 8, 15], "
      "mask_token=0, output_mode=one_hot) -> (B, T, 4): the mask token encodes as zeros -> LSTM(3, rs)",
      dialects=("keras3",))
def _(g, d):
    L = g.L
    needs_tensorflow(g, "IntegerLookup")
    x = g.K.Input(shape=(None,), dtype="int32", name="ids")
    oh = L.IntegerLookup(vocabulary=[4, 8, 15], mask_token=0, output_mode="one_hot")(x)
    y = L.LSTM(3, return_sequences=True)(oh)
    ids = np.array([0, 4, 8, 15, 16])[d.rng.integers(0, 5, (B, 6))].astype(np.int32)
    return done(g, g.K.Model(x, y), [ids])
