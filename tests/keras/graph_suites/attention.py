# SPDX-License-Identifier: Apache-2.0
"""Attention layers (Attention, AdditiveAttention, MultiHeadAttention) in the models they usually
sit in: LSTM text and time-series models, encoder-decoders, residual self-attention blocks."""
from generate_graphs import B, Skip, case, mask_rows  # noqa: F401


def _causal(g, layer, args, **kw):
    """layer(args, use_causal_mask=True): a call argument in Keras 3 and later tf_keras."""
    return layer(args, use_causal_mask=True, **kw)


@case("attn_text_lstm", "Input(7,) int32 ids -> Embedding(12, 4, mask_zero=True) -> LSTM(4, rs) -> "
      "Attention()([h, h]) -> GlobalAveragePooling1D -> Dense(2): query and value masks from the "
      "padding")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7,), dtype="int32", name="ids")
    h = L.LSTM(4, return_sequences=True)(L.Embedding(12, 4, mask_zero=True)(x))
    a = L.Attention()([h, h])
    y = L.Dense(2)(L.GlobalAveragePooling1D()(a))
    return {"model": g.K.Model(x, y), "inputs": [d.ids(7, 12, pattern="no_full_row")]}


@case("attn_scale_concat_scores", "Input(6, 3) -> Masking -> LSTM(4, rs) -> Attention(use_scale=True, "
      "score_mode='concat')([h, h], return_attention_scores=True) -> [Dense(2)(out), scores]; a fully "
      "masked row")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    h = L.LSTM(4, return_sequences=True)(L.Masking()(x))
    a, s = L.Attention(use_scale=True, score_mode="concat")([h, h], return_attention_scores=True)
    return {"model": g.K.Model(x, [L.Dense(2)(a), s]), "inputs": [d.masked(6, 3)]}


@case("attn_dot_scale_scores", "Input(6, 3) -> LSTM(4, rs) -> Attention(use_scale=True)([h, h], "
      "return_attention_scores=True) -> [out, scores], no mask")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    h = L.LSTM(4, return_sequences=True)(x)
    a, s = L.Attention(use_scale=True)([h, h], return_attention_scores=True)
    return {"model": g.K.Model(x, [a, s]), "inputs": [d.seq(B, 6, 3)]}


@case("attn_encoder_decoder", "encoder Input(7, 3) -> Masking -> LSTM(4, rs); decoder Input(5, 2) -> "
      "LSTM(4, rs) -> Attention()([decoder_seq, encoder_seq]) -> Concatenate([decoder_seq, context]) "
      "-> Dense(2): the value mask comes from the encoder's padding")
def _(g, d):
    L = g.L
    enc = g.K.Input(shape=(7, 3), name="encoder_in")
    dec = g.K.Input(shape=(5, 2), name="decoder_in")
    e = L.LSTM(4, return_sequences=True)(L.Masking()(enc))
    q = L.LSTM(4, return_sequences=True)(dec)
    c = L.Attention()([q, e])
    y = L.Dense(2)(L.Concatenate()([q, c]))
    return {"model": g.K.Model([enc, dec], y), "inputs": [d.masked(7, 3, pattern="no_full_row"), d.seq(B, 5, 2)]}


@case("attn_causal_call", "Input(6, 3) -> Dense(4) -> Attention(use_scale=True)([h, h], "
      "use_causal_mask=True) -> Dense(2): causal self-attention, streams")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    h = L.Dense(4)(x)
    a = _causal(g, L.Attention(use_scale=True), [h, h])
    return {"model": g.K.Model(x, L.Dense(2)(a)), "inputs": [d.seq(B, 6, 3)]}


@case("attn_query_value_key", "inputs q (5, 3), v (6, 2), k (6, 3) -> Attention()([q, v, k], "
      "return_attention_scores=True) -> [out, scores]")
def _(g, d):
    L = g.L
    q = g.K.Input(shape=(5, 3), name="q")
    v = g.K.Input(shape=(6, 2), name="v")
    k = g.K.Input(shape=(6, 3), name="k")
    a, s = L.Attention()([q, v, k], return_attention_scores=True)
    return {"model": g.K.Model([q, v, k], [a, s]), "inputs": [d.seq(B, 5, 3), d.seq(B, 6, 2), d.seq(B, 6, 3)]}


@case("attn_static_encoder", "static Input(6,) -> Dense(12) -> Reshape((4, 3)) as the value; "
      "sequence Input(5, 3) -> LSTM(3, rs) query -> Attention()([q, v]) -> Dense(2): a value that "
      "does not step, so the model streams over the query")
def _(g, d):
    L = g.L
    s = g.K.Input(shape=(6,), name="static")
    x = g.K.Input(shape=(5, 3), name="x")
    v = L.Reshape((4, 3))(L.Dense(12)(s))
    q = L.LSTM(3, return_sequences=True)(x)
    y = L.Dense(2)(L.Attention()([q, v]))
    return {"model": g.K.Model([s, x], y), "inputs": [d.seq(B, 6), d.seq(B, 5, 3)]}


@case("additive_attention", "Input(7, 3) -> Masking -> LSTM(4, rs) -> AdditiveAttention()([h, h]) "
      "-> Dense(2); and AdditiveAttention(use_scale=False)([h, h], use_causal_mask=True, "
      "return_attention_scores=True)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    h = L.LSTM(4, return_sequences=True)(L.Masking()(x))
    a = L.AdditiveAttention()([h, h])
    b, s = _causal(g, L.AdditiveAttention(use_scale=False), [h, h], return_attention_scores=True)
    return {"model": g.K.Model(x, [L.Dense(2)(a), b, s]), "inputs": [d.masked(7, 3)]}


@case("additive_attention_causal", "Input(6, 3) -> Dense(4) -> AdditiveAttention()([h, h], "
      "use_causal_mask=True) -> Dense(2): streams")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    h = L.Dense(4)(x)
    a = _causal(g, L.AdditiveAttention(), [h, h])
    return {"model": g.K.Model(x, L.Dense(2)(a)), "inputs": [d.seq(B, 6, 3)]}


@case("mha_self_residual", "Input(7, 3) -> Masking -> LSTM(4, rs) -> MultiHeadAttention(2, 3)(h, h) "
      "-> Add([h, a]) -> LayerNormalization -> GlobalAveragePooling1D -> Dense(2)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    h = L.LSTM(4, return_sequences=True)(L.Masking()(x))
    a = L.MultiHeadAttention(num_heads=2, key_dim=3)(h, h)
    y = L.LayerNormalization()(L.Add()([h, a]))
    y = L.Dense(2)(L.GlobalAveragePooling1D()(y))
    return {"model": g.K.Model(x, y), "inputs": [d.masked(7, 3, pattern="no_full_row")]}


@case("mha_text_masked", "Input(7,) int32 ids -> Embedding(12, 4, mask_zero=True) -> "
      "MultiHeadAttention(2, 2)(e, e) -> LSTM(3) -> Dense(2); a fully padded row")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7,), dtype="int32", name="ids")
    e = L.Embedding(12, 4, mask_zero=True)(x)
    a = L.MultiHeadAttention(num_heads=2, key_dim=2)(e, e)
    y = L.Dense(2)(L.LSTM(3)(a))
    return {"model": g.K.Model(x, y), "inputs": [d.ids(7, 12)]}


@case("mha_cross_scores", "decoder Input(5, 4) -> LSTM(4, rs) query; encoder Input(6, 3) -> Masking "
      "value and Input(6, 2) key -> MultiHeadAttention(2, 3, value_dim=2, use_bias=False, "
      "output_shape=5)(q, v, k, return_attention_scores=True) -> [out, scores]")
def _(g, d):
    L = g.L
    dec = g.K.Input(shape=(5, 4), name="decoder_in")
    enc = g.K.Input(shape=(6, 3), name="encoder_in")
    key = g.K.Input(shape=(6, 2), name="key_in")
    q = L.LSTM(4, return_sequences=True)(dec)
    mha = L.MultiHeadAttention(num_heads=2, key_dim=3, value_dim=2, use_bias=False, output_shape=5)
    a, s = mha(q, L.Masking()(enc), key, return_attention_scores=True)
    return {"model": g.K.Model([dec, enc, key], [a, s]),
            "inputs": [d.seq(B, 5, 4), d.masked(6, 3, pattern="no_full_row"), d.seq(B, 6, 2)]}


@case("mha_causal", "Input(6, 3) -> Dense(4) -> MultiHeadAttention(2, 2)(h, h, use_causal_mask=True) "
      "-> Dense(2): causal self-attention, streams")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    h = L.Dense(4)(x)
    a = L.MultiHeadAttention(num_heads=2, key_dim=2)(h, h, use_causal_mask=True)
    return {"model": g.K.Model(x, L.Dense(2)(a)), "inputs": [d.seq(B, 6, 3)]}


@case("mha_causal_masked_scores", "Input(6, 3) -> Masking -> Dense(4) -> MultiHeadAttention(2, 2)"
      "(h, h, use_causal_mask=True, return_attention_scores=True) -> [Dense(2)(out), scores]")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    h = L.Dense(4)(L.Masking()(x))
    a, s = L.MultiHeadAttention(num_heads=2, key_dim=2)(h, h, use_causal_mask=True,
                                                        return_attention_scores=True)
    return {"model": g.K.Model(x, [L.Dense(2)(a), s]), "inputs": [d.masked(6, 3, pattern="leading")]}


@case("mha_attention_mask_input", "inputs x (6, 3) and attention_mask (6, 6) of 0/1 -> Dense(4) -> "
      "MultiHeadAttention(2, 2)(h, h, attention_mask=m) -> Dense(2); one query row fully masked")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    m = g.K.Input(shape=(6, 6), name="attention_mask")
    h = L.Dense(4)(x)
    a = L.MultiHeadAttention(num_heads=2, key_dim=2)(h, h, attention_mask=m)
    mask = (d.rng.uniform(0, 1, (B, 6, 6)) > 0.4).astype("float32")
    mask[1, 2, :] = 0
    return {"model": g.K.Model([x, m], L.Dense(2)(a)), "inputs": [d.seq(B, 6, 3), mask]}


@case("mha_keywords", "inputs q (5, 3), v (6, 4), k (6, 2) -> MultiHeadAttention(3, 2)(query=q, "
      "value=v, key=k) -> Dense(2): tensors passed by keyword")
def _(g, d):
    L = g.L
    q = g.K.Input(shape=(5, 3), name="q")
    v = g.K.Input(shape=(6, 4), name="v")
    k = g.K.Input(shape=(6, 2), name="k")
    a = L.MultiHeadAttention(num_heads=3, key_dim=2)(query=q, value=v, key=k)
    return {"model": g.K.Model([q, v, k], L.Dense(2)(a)),
            "inputs": [d.seq(B, 5, 3), d.seq(B, 6, 4), d.seq(B, 6, 2)]}


@case("mha_static_encoder", "static Input(4,) -> Dense(10) -> Reshape((5, 2)) as value and key; "
      "sequence Input(6, 3) -> LSTM(4, rs) query -> MultiHeadAttention(2, 3)(q, v) -> Dense(2): a "
      "cross-attention over a value that does not step streams over the query")
def _(g, d):
    L = g.L
    s = g.K.Input(shape=(4,), name="static")
    x = g.K.Input(shape=(6, 3), name="x")
    v = L.Reshape((5, 2))(L.Dense(10)(s))
    q = L.LSTM(4, return_sequences=True)(x)
    a = L.MultiHeadAttention(num_heads=2, key_dim=3)(q, v)
    return {"model": g.K.Model([s, x], L.Dense(2)(a)), "inputs": [d.seq(B, 4), d.seq(B, 6, 3)]}


@case("mha_dropout_masked", "Input(7, 3) -> Masking -> LSTM(4, rs) -> MultiHeadAttention(2, 2, "
      "dropout=0.1)(h, h) -> Add([h, a]) -> LayerNormalization -> Dense(1); a fully masked row "
      "(Keras 3 runs its Softmax layer when dropout > 0)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    h = L.LSTM(4, return_sequences=True)(L.Masking()(x))
    a = L.MultiHeadAttention(num_heads=2, key_dim=2, dropout=0.1)(h, h)
    y = L.Dense(1)(L.LayerNormalization()(L.Add()([h, a])))
    return {"model": g.K.Model(x, y), "inputs": [d.masked(7, 3)]}


@case("attn_causal_masked", "Input(6, 3) -> Masking -> Dense(4) -> Attention()([h, h], "
      "use_causal_mask=True) -> Dense(2); padded head, tail and holes: a masked causal "
      "self-attention that streams (a masked query is zeroed, a valid one sees itself)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    h = L.Dense(4)(L.Masking()(x))
    a = _causal(g, L.Attention(), [h, h])
    return {"model": g.K.Model(x, L.Dense(2)(a)), "inputs": [d.masked(6, 3, pattern="leading")]}
