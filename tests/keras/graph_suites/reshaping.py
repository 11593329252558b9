# SPDX-License-Identifier: Apache-2.0
"""Shifting and stretching the time axis: ZeroPadding1D, Cropping1D, UpSampling1D between
recurrent layers, with masked inputs and a time axis of unknown length.

What these files pin down: neither dialect passes a mask through ZeroPadding1D, Cropping1D or
UpSampling1D (Keras 2 drops it silently, Keras 3 with a warning). Only Keras 3's ZeroPadding1D
takes a data_format."""
from generate_graphs import B, case


@case("pad_crop_masked", "Input(6, 3) -> Masking -> GRU(4, rs) -> ZeroPadding1D(2) -> LSTM(3, rs) "
      "-> Cropping1D((1, 2)) -> ZeroPadding1D((0, 3)) -> GRU(3, rs) -> Cropping1D(1) -> Dense(2); "
      "ZeroPadding1D drops the mask, so the LSTM runs over every step")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    h = L.GRU(4, return_sequences=True)(L.Masking()(x))
    with g.warnings_ignored():
        h = L.LSTM(3, return_sequences=True)(L.ZeroPadding1D(2)(h))
    h = L.ZeroPadding1D((0, 3))(L.Cropping1D((1, 2))(h))
    y = L.Dense(2)(L.Cropping1D(1)(L.GRU(3, return_sequences=True)(h)))
    return {"model": g.K.Model(x, y), "inputs": [d.masked(6, 3)]}


@case("pad_crop_variable_length", "Input(None, 3) -> ZeroPadding1D((3, 0)) -> GRU(4, rs) -> "
      "Cropping1D((0, 2)) -> Cropping1D((2, 0)) -> ZeroPadding1D(padding=(0, 0)) -> LSTM(3): a time "
      "axis of unknown length")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(None, 3), name="x")
    h = L.GRU(4, return_sequences=True)(L.ZeroPadding1D((3, 0))(x))
    h = L.ZeroPadding1D(padding=(0, 0))(L.Cropping1D((2, 0))(L.Cropping1D((0, 2))(h)))
    return {"model": g.K.Model(x, L.LSTM(3)(h)), "inputs": [d.seq(B, 7, 3)]}


@case("upsampling_masked", "Input(5, 3) -> Masking -> GRU(4, rs) -> UpSampling1D(2) -> GRU(3, rs) "
      "-> UpSampling1D(size=3) -> Dense(2), and -> LSTM(2): UpSampling1D drops the mask")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(5, 3), name="x")
    h = L.GRU(4, return_sequences=True)(L.Masking()(x))
    with g.warnings_ignored():
        h = L.GRU(3, return_sequences=True)(L.UpSampling1D(2)(h))
    u = L.UpSampling1D(size=3)(h)
    return {"model": g.K.Model(x, [L.Dense(2)(u), L.LSTM(2)(u)]), "inputs": [d.masked(5, 3)]}


@case("upsampling_variable_length", "Input(None, 3) -> UpSampling1D(3) -> GRU(4, rs) -> "
      "UpSampling1D() -> LSTM(3, rs) -> Dense(2): repeats each step, so it streams")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(None, 3), name="x")
    h = L.GRU(4, return_sequences=True)(L.UpSampling1D(3)(x))
    y = L.Dense(2)(L.LSTM(3, return_sequences=True)(L.UpSampling1D()(h)))
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 4, 3)]}


@case("zero_padding_channels_first", "Keras 3: Input(6, 3) -> GRU(5, rs) -> "
      "ZeroPadding1D((1, 2), data_format='channels_first') pads axis 2 -> (6, 8) -> GRU(2)",
      dialects=("keras3", "keras3_jax"))
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    h = L.ZeroPadding1D((1, 2), data_format="channels_first")(L.GRU(5, return_sequences=True)(x))
    return {"model": g.K.Model(x, [h, L.GRU(2)(h)]), "inputs": [d.seq(B, 6, 3)]}


@case("reshaping_sequential", "Sequential(Input(5, 3), Masking, GRU(4, rs), ZeroPadding1D(1), "
      "UpSampling1D(2), Cropping1D((2, 1)), LSTM(3)): the LSTM runs unmasked over 11 steps")
def _(g, d):
    L = g.L
    with g.warnings_ignored():
        m = g.K.Sequential([g.K.Input(shape=(5, 3)), L.Masking(), L.GRU(4, return_sequences=True),
                            L.ZeroPadding1D(1), L.UpSampling1D(2), L.Cropping1D((2, 1)), L.LSTM(3)])
    return {"model": m, "inputs": [d.masked(5, 3)]}
