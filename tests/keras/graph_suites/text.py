# SPDX-License-Identifier: Apache-2.0
"""Text preprocessing layers inside models: TextVectorization and StringLookup fed by a string
Input, their ids into an Embedding and a recurrent layer. Vocabularies are adapted on a small
corpus (saved in the .keras file's assets) or given as a list (saved in the config). The texts
hold non-ASCII letters, punctuation (ASCII and not), empty strings, tabs, non-breaking and
ideographic spaces and words outside the vocabulary.

Keras 3 on JAX has no string tensors (its TextVectorization runs only in tf.data pipelines), so
every case is left out of keras3_jax. tf_keras cannot save these layers to .h5 (the generator
records it); Keras 3's .h5 keeps no adapted vocabulary (no assets), so those cases skip it."""
import numpy as np

from generate_graphs import B, Skip, case

CORPUS = [
    "The cat sat on the mat.",
    "Dogs, cats & birds!  The END",
    "Él comió ÉCLAIRS, ¡qué rico! «très» bien",
    "",
    "naïve café\tmenu; the cat's hat",
    "don't-stop: 3 dogs @ 10am",
]
TEXTS = np.array([["THE Cat, sat!\ton   the mat?"],
                  ["Él comió éclairs… unknownword «très» naïve\u00a0café"],
                  [""]], dtype=object)
TEXTS2 = np.array([["dogs\u3000cats the cat sat"],
                   ["¡qué rico!  the END, the end."],
                   ["menu;café\tmenu"]], dtype=object)

NO_H5_ASSETS = ("Keras 3 saves an adapted vocabulary only in a .keras file's assets; its legacy .h5 "
                "holds none (recur refuses such a file, naming the layer)")


def _text_layers(g):
    if g.dialect == "keras3_jax":
        raise Skip("JAX has no string tensors: Keras 3's text layers run on TensorFlow and cannot be "
                   "part of a model on another backend (its documentation says so)")
    import tensorflow as tf  # noqa: F401  (tf_keras and Keras 3 on TensorFlow)


def _no_h5(g):
    """tf_keras refuses to save these layers to .h5 by itself (the generator records its error)."""
    return {} if g.dialect == "keras2" else {"h5": NO_H5_ASSETS}


def _randomize(g, model, skip=("text_vectorization", "string_lookup")):
    """g.randomize on the layers that hold weights (tf_keras lists a text layer's vocabulary
    handler among the model's weights, which has no value to draw)."""
    for layer in model.layers:
        if not layer.name.startswith(skip) and layer.weights:
            g.randomize(layer)


def _string_input(g, shape):
    return g.K.Input(shape=shape, dtype="string", name="text")


def _tv_model(g, tv, rnn, corpus=CORPUS, adapt=True, units=3, mask_zero=True, head=None):
    K, L = g.K, g.L
    if adapt:
        tv.adapt(np.array(corpus, dtype=object) if g.dialect == "keras2" else corpus)
    inp = _string_input(g, (1,))
    x = tv(inp)
    x = L.Embedding(tv.vocabulary_size(), 4, mask_zero=mask_zero)(x)
    x = rnn(units)(x)
    y = L.Dense(2, name=head or "out")(x)
    return K.Model(inp, y)


@case("text_vectorization_lstm", "TextVectorization(adapted, max_tokens=16, output_sequence_length=6) "
      "-> Embedding(mask_zero) -> LSTM -> Dense: lower_and_strip_punctuation, whitespace split; OOV "
      "words, non-ASCII letters and punctuation, an empty text")
def _(g, d):
    _text_layers(g)
    tv = g.L.TextVectorization(max_tokens=16, output_sequence_length=6)
    model = _tv_model(g, tv, g.L.LSTM)
    _randomize(g, model)
    return {"model": model, "weights_set": True, "skip_formats": _no_h5(g),
            "inputs": [TEXTS]}


@case("text_vectorization_ragged_bigrams", "TextVectorization(standardize='lower', ngrams=2, no "
      "output_sequence_length: ids padded to the longest row) -> Embedding(mask_zero) -> GRU -> Dense")
def _(g, d):
    _text_layers(g)
    tv = g.L.TextVectorization(standardize="lower", ngrams=2)
    model = _tv_model(g, tv, g.L.GRU)
    _randomize(g, model)
    return {"model": model, "weights_set": True, "skip_formats": _no_h5(g),
            "inputs": [TEXTS2]}


@case("text_vectorization_characters", "TextVectorization(split='character', "
      "standardize='strip_punctuation', ngrams=(1, 3), output_sequence_length=8) -> Embedding -> LSTM")
def _(g, d):
    _text_layers(g)
    tv = g.L.TextVectorization(split="character", standardize="strip_punctuation", ngrams=(1, 3),
                               output_sequence_length=8, max_tokens=40)
    model = _tv_model(g, tv, g.L.LSTM)
    _randomize(g, model)
    return {"model": model, "weights_set": True, "skip_formats": _no_h5(g),
            "inputs": [TEXTS]}


@case("text_vectorization_vocabulary_list", "TextVectorization(vocabulary=[...] in the config, "
      "standardize=None, output_sequence_length=5) -> Embedding -> SimpleRNN -> Dense; case and "
      "punctuation are kept, so 'The' and 'the,' are other tokens")
def _(g, d):
    _text_layers(g)
    vocab = ["the", "The", "cat", "sat", "on", "mat?", "Él", "comió", "«très»", "the,"]
    tv = g.L.TextVectorization(vocabulary=vocab, standardize=None, output_sequence_length=5)
    model = _tv_model(g, tv, g.L.SimpleRNN, adapt=False, mask_zero=False)
    _randomize(g, model)
    return {"model": model, "weights_set": True, "inputs": [TEXTS]}


@case("text_vectorization_multi_hot", "TextVectorization(output_mode='multi_hot', max_tokens=12, "
      "pad_to_max_tokens=True) and TextVectorization(output_mode='count') -> Concatenate -> Dense")
def _(g, d):
    _text_layers(g)
    K, L = g.K, g.L
    a = L.TextVectorization(output_mode="multi_hot", max_tokens=12, pad_to_max_tokens=True)
    b = L.TextVectorization(output_mode="count", max_tokens=10)
    corpus = np.array(CORPUS, dtype=object) if g.dialect == "keras2" else CORPUS
    a.adapt(corpus)
    b.adapt(corpus)
    inp = _string_input(g, (1,))
    y = L.Dense(3, name="out")(L.Concatenate()([a(inp), b(inp)]))
    model = K.Model(inp, y)
    _randomize(g, model)
    return {"model": model, "weights_set": True, "skip_formats": _no_h5(g),
            "inputs": [np.concatenate([TEXTS[:2], TEXTS2[1:2]])]}


TOKENS = np.array([["the", "cat", "", "ÉCLAIRS", "sat"],
                   ["naïve", "unknown", "café", "", ""],
                   ["", "", "", "", ""]], dtype=object)


@case("string_lookup_gru", "StringLookup(vocabulary=[...], mask_token='') on pre-split tokens "
      "(batch, 5) -> Embedding(mask_zero) -> GRU -> Dense: '' is the mask, OOV words map to 1")
def _(g, d):
    _text_layers(g)
    K, L = g.K, g.L
    sl = L.StringLookup(vocabulary=["the", "cat", "sat", "naïve", "café", "ÉCLAIRS"], mask_token="")
    inp = _string_input(g, (5,))
    x = L.Embedding(sl.vocabulary_size(), 4, mask_zero=True)(sl(inp))
    y = L.Dense(2, name="out")(L.GRU(3)(x))
    model = K.Model(inp, y)
    _randomize(g, model)
    return {"model": model, "weights_set": True, "inputs": [TOKENS]}


@case("string_lookup_adapted", "StringLookup(adapted: vocabulary in the .keras assets, no mask "
      "token, so '' is an unknown word) -> Embedding -> GRU(return_sequences) -> Dense")
def _(g, d):
    _text_layers(g)
    K, L = g.K, g.L
    sl = L.StringLookup()
    # No '' among the words: Keras 3 writes it as the file's last line when it is the rarest,
    # and drops it when it reads the file back (its own reload then differs).
    words = np.array([["the", "cat", "sat", "the"], ["café", "cat", "naïve", "the"]], dtype=object)
    sl.adapt(words)
    inp = _string_input(g, (5,))
    x = L.Embedding(sl.vocabulary_size(), 4)(sl(inp))
    y = L.Dense(2, name="out")(L.GRU(3, return_sequences=True)(x))
    model = K.Model(inp, y)
    _randomize(g, model)
    return {"model": model, "weights_set": True, "skip_formats": _no_h5(g),
            "inputs": [TOKENS]}


@case("string_lookup_count", "StringLookup(vocabulary=[...], num_oov_indices=0, output_mode='count') "
      "-> Dense, and StringLookup(output_mode='multi_hot') -> Dense")
def _(g, d):
    _text_layers(g)
    K, L = g.K, g.L
    vocab = ["the", "cat", "sat", "naïve", "café", "ÉCLAIRS", "", "unknown"]
    a = L.StringLookup(vocabulary=vocab, num_oov_indices=0, output_mode="count")
    b = L.StringLookup(vocabulary=vocab[:4], output_mode="multi_hot")
    inp = _string_input(g, (5,))
    y = L.Dense(2, name="out")(L.Concatenate()([a(inp), b(inp)]))
    model = K.Model(inp, y)
    _randomize(g, model)
    return {"model": model, "weights_set": True, "inputs": [TOKENS]}


@case("text_vectorization_stateful_gru", "TextVectorization(no output_sequence_length) -> "
      "Embedding(mask_zero) -> GRU(stateful) -> Dense, with a fixed batch of 3: the states carry "
      "from one call of texts to the next, and a reset clears them")
def _(g, d):
    _text_layers(g)
    if g.dialect == "keras2":
        raise Skip("tf_keras's TextVectorization loses the batch size its Input fixes, so a stateful "
                   "GRU after it cannot be built")
    K, L = g.K, g.L
    tv = L.TextVectorization(max_tokens=20)
    tv.adapt(np.array(CORPUS, dtype=object) if g.dialect == "keras2" else CORPUS)
    inp = K.Input(shape=(1,), batch_size=B, dtype="string", name="text")
    x = L.Embedding(tv.vocabulary_size(), 4, mask_zero=True)(tv(inp))
    y = L.Dense(2, name="out")(L.GRU(3, stateful=True)(x))
    model = K.Model(inp, y)
    _randomize(g, model)
    return {"model": model, "weights_set": True, "skip_formats": _no_h5(g),
            "calls": [(False, [TEXTS]), (False, [TEXTS2]), (True, [TEXTS2])]}


@case("text_vectorization_sequential", "Sequential: TextVectorization(output_sequence_length=5) on a "
      "rank-1 (batch,) string input -> Embedding(mask_zero) -> LSTM -> Dense (tf_keras: no Input, the "
      "layer's own string dtype; Keras 3: Input(shape=(), dtype='string'))")
def _(g, d):
    _text_layers(g)
    K, L = g.K, g.L
    tv = L.TextVectorization(max_tokens=16, output_sequence_length=5)
    tv.adapt(np.array(CORPUS, dtype=object) if g.dialect == "keras2" else CORPUS)
    head = [] if g.dialect == "keras2" else [K.Input(shape=(), dtype="string")]
    model = K.Sequential(head + [tv, L.Embedding(tv.vocabulary_size(), 4, mask_zero=True), L.LSTM(3),
                                 L.Dense(2, name="out")])
    model(g.tf_strings(TEXTS[:, 0]))  # builds a tf_keras Sequential that has no Input
    _randomize(g, model)
    return {"model": model, "weights_set": True, "skip_formats": _no_h5(g), "inputs": [TEXTS[:, 0]]}
