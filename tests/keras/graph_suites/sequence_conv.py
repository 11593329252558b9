# SPDX-License-Identifier: Apache-2.0
"""Depthwise and separable 1D convolutions around recurrent layers."""
from generate_graphs import B, Skip, case  # noqa: F401


def _sep(L, *args, **kw):
    cls = getattr(L, "SeparableConv1D", None) or L.SeparableConvolution1D
    return cls(*args, **kw)


@case("depthwise_conv_lstm", "Input(8, 3) -> DepthwiseConv1D(3, depth_multiplier 2, same, relu) -> "
      "DepthwiseConv1D(2, strides 2, valid, no bias) -> LSTM(3, rs) -> Dense(2)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(8, 3), name="x")
    h = L.DepthwiseConv1D(3, depth_multiplier=2, padding="same", activation="relu")(x)
    h = L.DepthwiseConv1D(2, strides=2, use_bias=False)(h)
    y = L.Dense(2)(L.LSTM(3, return_sequences=True)(h))
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 8, 3)]}


@case("depthwise_conv_dilated_gru", "Input(8, 2) -> DepthwiseConv1D(2, dilation 3, valid, dm 3, tanh) "
      "-> GRU(3)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(8, 2), name="x")
    h = L.DepthwiseConv1D(2, dilation_rate=3, depth_multiplier=3, activation="tanh")(x)
    y = L.GRU(3)(h)
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 8, 2)]}


@case("separable_conv_lstm", "Input(8, 3) -> SeparableConv1D(4, 3, same, dm 2, tanh) -> "
      "SeparableConv1D(3, 2, strides 2, valid, no bias) -> LSTM(3, rs)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(8, 3), name="x")
    h = _sep(L, 4, 3, padding="same", depth_multiplier=2, activation="tanh")(x)
    h = _sep(L, 3, 2, strides=2, use_bias=False)(h)
    y = L.LSTM(3, return_sequences=True)(h)
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 8, 3)]}


@case("separable_conv_causal_gru", "Input(None, 2) -> SeparableConv1D(3, 3, causal, dilation 2, "
      "dm 2) -> GRU(3, rs) -> Dense(2): Keras 2 only (Keras 3 refuses causal); streams",
      dialects=("keras2",))
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(None, 2), name="x")
    h = _sep(L, 3, 3, padding="causal", dilation_rate=2, depth_multiplier=2, activation="relu")(x)
    y = L.Dense(2)(L.GRU(3, return_sequences=True)(h))
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 7, 2)]}


@case("separable_conv_masked_lstm", "Input(7, 2) -> Masking -> SeparableConv1D(3, 1, dm 2) -> "
      "LSTM(3, rs): the convolution drops the mask, as in Keras")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 2), name="x")
    h = _sep(L, 3, 1, depth_multiplier=2)(L.Masking()(x))
    y = L.LSTM(3, return_sequences=True)(h)
    return {"model": g.K.Model(x, y), "inputs": [d.masked(7, 2)]}


def _einsum(g):
    cls = getattr(g.L, "EinsumDense", None)
    if cls is None:
        cls = g.K.layers.experimental.EinsumDense
    return cls


@case("einsum_dense_lstm", "Input(6, 3) -> EinsumDense('abc,cd->abd', (None, 4), bias 'd', tanh) -> "
      "LSTM(3, rs) -> EinsumDense('...b,bc->...c', 2, no bias)")
def _(g, d):
    E = _einsum(g)
    x = g.K.Input(shape=(6, 3), name="x")
    h = E("abc,cd->abd", output_shape=(None, 4), bias_axes="d", activation="tanh")(x)
    h = g.L.LSTM(3, return_sequences=True)(h)
    y = E("...b,bc->...c", output_shape=2)(h)
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 6, 3)]}


@case("einsum_dense_heads_gru", "Input(5, 4) -> EinsumDense('abc,cde->abde', (None, 2, 3), bias 'de') "
      "-> Reshape((5, 6)) -> GRU(3) -> EinsumDense('ab,bc->ac', 2, bias 'c', relu)")
def _(g, d):
    E = _einsum(g)
    x = g.K.Input(shape=(5, 4), name="x")
    h = E("abc,cde->abde", output_shape=(None, 2, 3), bias_axes="de")(x)
    h = g.L.GRU(3)(g.L.Reshape((5, 6))(h))
    y = E("ab,bc->ac", output_shape=2, bias_axes="c", activation="relu")(h)
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 5, 4)]}


@case("einsum_dense_over_time", "Input(6, 2) -> LSTM(3, rs) -> EinsumDense('abc,bd->acd', (3, 2), "
      "bias 'c'): a kernel over the steps (does not stream); Masking before the LSTM: EinsumDense drops it")
def _(g, d):
    E = _einsum(g)
    x = g.K.Input(shape=(6, 2), name="x")
    h = g.L.LSTM(3, return_sequences=True)(g.L.Masking()(x))
    y = E("abc,bd->acd", output_shape=(3, 2), bias_axes="c")(h)
    return {"model": g.K.Model(x, y), "inputs": [d.masked(6, 2)]}


@case("einsum_dense_masked_rs", "Input(7, 2) -> Masking -> EinsumDense('abc,cd->abd', (None, 3), bias "
      "'d') -> LSTM(3, rs): the mask does not reach the LSTM (EinsumDense drops it)")
def _(g, d):
    E = _einsum(g)
    x = g.K.Input(shape=(7, 2), name="x")
    h = E("abc,cd->abd", output_shape=(None, 3), bias_axes="d")(g.L.Masking()(x))
    y = g.L.LSTM(3, return_sequences=True)(h)
    return {"model": g.K.Model(x, y), "inputs": [d.masked(7, 2)]}


@case("group_norm_lstm", "Input(6, 4) -> GroupNormalization(2) -> LSTM(4, rs) -> "
      "GroupNormalization(4, no center, epsilon 0.01) -> GRU(2)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 4), name="x")
    h = L.GroupNormalization(groups=2)(x)
    h = L.LSTM(4, return_sequences=True)(h)
    h = L.GroupNormalization(groups=4, center=False, epsilon=0.01)(h)
    y = L.GRU(2)(h)
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 6, 4, lo=-2.0, hi=3.0)]}


@case("group_norm_after_last_output", "Input(5, 3) -> GRU(4) -> GroupNormalization(2, no scale)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(5, 3), name="x")
    y = L.GroupNormalization(groups=2, scale=False)(L.GRU(4)(x))
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 5, 3)]}


@case("group_norm_masked", "Input(7, 2) -> Masking -> GroupNormalization(1) -> LSTM(3, rs): Keras 3 "
      "passes the mask on and leaves it out of the statistics", dialects=("keras3", "keras3_jax"))
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 2), name="x")
    h = L.GroupNormalization(groups=1)(L.Masking()(x))
    y = L.LSTM(3, return_sequences=True)(h)
    return {"model": g.K.Model(x, y), "inputs": [d.masked(7, 2)]}


@case("adaptive_pooling_lstm", "Input(7, 3) -> LSTM(4, rs) -> AdaptiveAveragePooling1D(3) -> "
      "AdaptiveMaxPooling1D(5) (more steps than it reads) -> GRU(2, rs)", dialects=("keras3", "keras3_jax"))
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    h = L.LSTM(4, return_sequences=True)(x)
    h = L.AdaptiveMaxPooling1D(5)(L.AdaptiveAveragePooling1D(3)(h))
    y = L.GRU(2, return_sequences=True)(h)
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 7, 3)]}


@case("adaptive_pooling_channels_first", "Input(8, 2) -> Masking -> GRU(4, rs) -> "
      "AdaptiveMaxPooling1D(3, channels_first) and AdaptiveAveragePooling1D(5): the mask is dropped",
      dialects=("keras3", "keras3_jax"))
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(8, 2), name="x")
    h = L.GRU(4, return_sequences=True)(L.Masking()(x))
    a = L.AdaptiveMaxPooling1D(3, data_format="channels_first")(h)
    b = L.AdaptiveAveragePooling1D(5)(h)
    return {"model": g.K.Model(x, [a, b]), "inputs": [d.masked(8, 2)]}


def _convt(L, *args, **kw):
    cls = getattr(L, "Conv1DTranspose", None) or L.Convolution1DTranspose
    return cls(*args, **kw)


@case("conv_transpose_lstm", "Input(5, 3) -> LSTM(4, rs) -> Conv1DTranspose(3, 3, strides 2, same) -> "
      "Conv1DTranspose(2, 2, strides 3, valid, relu) -> GRU(2, rs)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(5, 3), name="x")
    h = L.LSTM(4, return_sequences=True)(x)
    h = _convt(L, 3, 3, strides=2, padding="same")(h)
    h = _convt(L, 2, 2, strides=3, activation="relu")(h)
    y = L.GRU(2, return_sequences=True)(h)
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 5, 3)]}


@case("conv_transpose_output_padding", "Input(4, 2) -> Conv1DTranspose(3, 3, strides 2, same, "
      "output_padding 1) -> Conv1DTranspose(2, 4, strides 3, valid, output_padding 2, no bias) -> LSTM(3)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(4, 2), name="x")
    h = _convt(L, 3, 3, strides=2, padding="same", output_padding=1)(x)
    h = _convt(L, 2, 4, strides=3, output_padding=2, use_bias=False)(h)
    y = L.LSTM(3)(h)
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 4, 2)]}


@case("conv_transpose_dilated", "Input(5, 2) -> GRU(3, rs) -> Conv1DTranspose(2, 3, dilation 2, same) -> "
      "Conv1DTranspose(2, 2, dilation 3, valid, tanh): Keras 3 on JAX (TensorFlow refuses dilation on the CPU)",
      dialects=("keras3_jax",))
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(5, 2), name="x")
    h = L.GRU(3, return_sequences=True)(x)
    h = _convt(L, 2, 3, dilation_rate=2, padding="same")(h)
    y = _convt(L, 2, 2, dilation_rate=3, activation="tanh")(h)
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 5, 2)]}
