# SPDX-License-Identifier: Apache-2.0
"""Pooling over time: MaxPooling1D / AveragePooling1D (pool_size, strides, valid and same
padding, channels_last and channels_first) and the global poolings' keepdims and channels_first,
between recurrent layers, with masked inputs.

What these files pin down: neither dialect passes a mask through MaxPooling1D / AveragePooling1D
(Keras 2's layers do not support masking and drop it; Keras 3 warns and drops it), so the
recurrent layers after them run unmasked. With padding='same' TensorFlow and JAX pad as
TensorFlow does (the extra step at the end) and the average divides by the steps inside the
input. GlobalAveragePooling1D expands its input's (batch, axis 1) mask on the features axis:
with channels_first that weighs the steps by the mask of the features axis, which only
broadcasts when both are as long."""
from generate_graphs import B, case


@case("pool1d_windows", "Input(8, 3) -> GRU(4, rs) -> MaxPooling1D(2), MaxPooling1D(3, strides=2, "
      "padding='same'), AveragePooling1D(3, strides=2, padding='same') (the average counts only the "
      "steps inside the input), AveragePooling1D(2, strides=1), AveragePooling1D(3, strides=None, "
      "padding='same'), MaxPool1D(4, strides=3) -> each an output; MaxPooling1D(2) -> LSTM(3)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(8, 3), name="x")
    h = L.GRU(4, return_sequences=True)(x)
    outs = [L.MaxPooling1D(2)(h),
            L.MaxPooling1D(3, strides=2, padding="same")(h),
            L.AveragePooling1D(3, strides=2, padding="same")(h),
            L.AveragePooling1D(2, strides=1)(h),
            L.AveragePooling1D(3, strides=None, padding="same")(h),
            L.MaxPool1D(4, strides=3)(h)]
    outs.append(L.LSTM(3)(L.MaxPooling1D(2)(h)))
    return {"model": g.K.Model(x, outs), "inputs": [d.seq(B, 8, 3)]}


@case("pool1d_masked", "Input(8, 3) -> Masking -> GRU(4, rs) -> MaxPooling1D(2) -> LSTM(3) and "
      "-> AveragePooling1D(2, strides=1, padding='same') -> GRU(3, rs): the poolings drop the mask "
      "(Keras 2 silently, Keras 3 with a warning), so the recurrent layers after them run unmasked")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(8, 3), name="x")
    h = L.GRU(4, return_sequences=True)(L.Masking()(x))
    with g.warnings_ignored():
        a = L.LSTM(3)(L.MaxPooling1D(2)(h))
        b = L.GRU(3, return_sequences=True)(L.AveragePooling1D(2, strides=1, padding="same")(h))
    return {"model": g.K.Model(x, [a, b]), "inputs": [d.masked(8, 3)]}


@case("pool1d_variable_length", "Input(None, 3) -> GRU(4, rs) -> MaxPooling1D(2, padding='same') "
      "-> GRU(3, rs) -> AveragePooling1D(3, strides=2) -> Dense(2): a time axis of unknown length")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(None, 3), name="x")
    gru = L.GRU(3, return_sequences=True)  # made first, as the fixtures' layer names say
    h = gru(L.MaxPooling1D(2, padding="same")(L.GRU(4, return_sequences=True)(x)))
    y = L.Dense(2)(L.AveragePooling1D(3, strides=2)(h))
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 9, 3)]}


@case("pool1d_channels_first", "Input(7, 3) -> GRU(6, rs) -> (batch, 7, 6) read as channels_first "
      "(7 features, 6 steps): MaxPooling1D(2) -> (7, 3), AveragePooling1D(3, strides=2, "
      "padding='same') -> (7, 3), MaxPooling1D(4, strides=1, padding='same') -> (7, 6) -> GRU(2)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    h = L.GRU(6, return_sequences=True)(x)
    outs = [L.MaxPooling1D(2, data_format="channels_first")(h),
            L.AveragePooling1D(3, strides=2, padding="same", data_format="channels_first")(h),
            L.GRU(2)(L.MaxPooling1D(4, strides=1, padding="same", data_format="channels_first")(h))]
    return {"model": g.K.Model(x, outs), "inputs": [d.seq(B, 7, 3)]}


@case("global_pool_keepdims_channels_first", "Input(7, 3) -> Masking -> GRU(4, rs) -> "
      "GlobalAveragePooling1D(keepdims=True) (masked) -> GRU(2); GlobalMaxPooling1D(keepdims=True); "
      "unmasked GRU(5, rs) -> GlobalAveragePooling1D(data_format='channels_first') and "
      "GlobalMaxPooling1D(data_format='channels_first', keepdims=True); six outputs")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    h = L.GRU(4, return_sequences=True)(L.Masking()(x))
    u = L.GRU(5, return_sequences=True)(x)
    avg_k = L.GlobalAveragePooling1D(keepdims=True)(h)
    outs = [avg_k, L.GRU(2)(avg_k), L.GlobalMaxPooling1D(keepdims=True)(h),
            L.GlobalAveragePooling1D(data_format="channels_first")(u),
            L.GlobalMaxPooling1D(data_format="channels_first", keepdims=True)(u),
            L.GlobalAveragePooling1D(data_format="channels_first", keepdims=True)(u)]
    return {"model": g.K.Model(x, outs), "inputs": [d.masked(7, 3, pattern="no_full_row")]}


@case("global_avg_channels_first_masked", "Input(5, 3) -> Masking -> GRU(5, rs) -> (batch, 5, 5) "
      "-> GlobalAveragePooling1D(data_format='channels_first'): Keras expands the (batch, 5) mask on "
      "axis 1 and weighs axis 2 with it (the shapes only broadcast because there are as many "
      "units as steps)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(5, 3), name="x")
    h = L.GRU(5, return_sequences=True)(L.Masking()(x))
    y = L.GlobalAveragePooling1D(data_format="channels_first")(h)
    return {"model": g.K.Model(x, y), "inputs": [d.masked(5, 3, pattern="no_full_row")]}


@case("pool1d_sequential", "Sequential(Input(8, 3), Masking, GRU(4, rs), MaxPooling1D(2), "
      "AveragePooling1D(2, padding='same'), LSTM(3), Dense(2)): the LSTM runs unmasked")
def _(g, d):
    L = g.L
    with g.warnings_ignored():
        m = g.K.Sequential([g.K.Input(shape=(8, 3)), L.Masking(), L.GRU(4, return_sequences=True),
                            L.MaxPooling1D(2), L.AveragePooling1D(2, padding="same"), L.LSTM(3),
                            L.Dense(2)])
    return {"model": m, "inputs": [d.masked(8, 3)]}
