# SPDX-License-Identifier: Apache-2.0
"""ConvLSTM1D and ConvLSTM2D: convolutional LSTMs over one or two spatial axes."""
from generate_graphs import B, Skip, case


def stateful_calls(d, shape, lengths=(4, 3, 5, 4, 2)):
    """3 calls, reset_states, 2 calls."""
    return [(i == 3, [d.seq(B, T, *shape)]) for i, T in enumerate(lengths)]


@case("convlstm1d_basic", "Input(5, 7, 2) -> ConvLSTM1D(3, 3, rs) -> Dense(2)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(5, 7, 2), name="x")
    y = L.Dense(2)(L.ConvLSTM1D(3, 3, return_sequences=True)(x))
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 5, 7, 2)]}


@case("convlstm1d_same_strides_state", "Input(6, 7, 2) -> ConvLSTM1D(4, 3, strides=2, padding='same', "
      "activation='relu', recurrent_activation='hard_sigmoid', return_state=True) -> [y, h, c]")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 7, 2), name="x")
    outs = L.ConvLSTM1D(4, 3, strides=2, padding="same", activation="relu", recurrent_activation="hard_sigmoid",
                        return_state=True)(x)
    return {"model": g.K.Model(x, list(outs)), "inputs": [d.seq(B, 6, 7, 2)]}


@case("convlstm1d_dilation_backwards", "Input(5, 8, 3) -> ConvLSTM1D(2, 2, dilation_rate=3, go_backwards=True, "
      "use_bias=False, rs) and ConvLSTM1D(3, 4, padding='same', dilation_rate=2) -> two outputs")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(5, 8, 3), name="x")
    a = L.ConvLSTM1D(2, 2, dilation_rate=3, go_backwards=True, use_bias=False, return_sequences=True)(x)
    b = L.ConvLSTM1D(3, 4, padding="same", dilation_rate=2)(x)
    return {"model": g.K.Model(x, [a, b]), "inputs": [d.seq(B, 5, 8, 3)]}


@case("convlstm1d_channels_first", "Input(5, 2, 7) -> ConvLSTM1D(3, 3, data_format='channels_first', "
      "padding='same', rs, return_state=True) -> [y, h, c]")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(5, 2, 7), name="x")
    layer = L.ConvLSTM1D(3, 3, data_format="channels_first", padding="same", return_sequences=True, return_state=True)
    try:
        outs = layer(x)
        m = g.K.Model(x, list(outs))
        m.predict(d.seq(B, 5, 2, 7), verbose=0)
    except Exception as e:  # noqa: BLE001
        raise Skip(f"channels_first ConvLSTM1D does not run on this backend's CPU: {type(e).__name__}: "
                   f"{str(e).splitlines()[0][:200]}")
    return {"model": m, "inputs": [d.seq(B, 5, 2, 7)]}


@case("convlstm2d_basic", "Input(4, 5, 6, 2) -> ConvLSTM2D(3, (3, 2), padding='same', rs) -> Dense(2)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(4, 5, 6, 2), name="x")
    y = L.Dense(2)(L.ConvLSTM2D(3, (3, 2), padding="same", return_sequences=True)(x))
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 4, 5, 6, 2)]}


@case("convlstm2d_strides_state", "Input(4, 7, 5, 2) -> ConvLSTM2D(2, 3, strides=(2, 1), "
      "recurrent_activation='sigmoid', activation='elu', return_state=True) -> [y, h, c]")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(4, 7, 5, 2), name="x")
    outs = L.ConvLSTM2D(2, 3, strides=(2, 1), activation="elu", return_state=True)(x)
    return {"model": g.K.Model(x, list(outs)), "inputs": [d.seq(B, 4, 7, 5, 2)]}


@case("convlstm2d_channels_first", "Input(4, 2, 5, 6) -> ConvLSTM2D(3, 3, data_format='channels_first', rs)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(4, 2, 5, 6), name="x")
    try:
        m = g.K.Model(x, L.ConvLSTM2D(3, 3, data_format="channels_first", return_sequences=True)(x))
        m.predict(d.seq(B, 4, 2, 5, 6), verbose=0)
    except Exception as e:  # noqa: BLE001
        raise Skip(f"channels_first ConvLSTM2D does not run on this backend's CPU: {type(e).__name__}: "
                   f"{str(e).splitlines()[0][:200]}")
    return {"model": m, "inputs": [d.seq(B, 4, 2, 5, 6)]}


@case("convlstm1d_initial_state", "inputs x (5, 7, 2), h (5, 3), c (5, 3) -> ConvLSTM1D(3, 3, rs)"
      "(x, initial_state=[h, c])")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(5, 7, 2), name="x")
    h = g.K.Input(shape=(5, 3), name="h")
    c = g.K.Input(shape=(5, 3), name="c")
    y = L.ConvLSTM1D(3, 3, return_sequences=True)(x, initial_state=[h, c])
    return {"model": g.K.Model([x, h, c], y), "inputs": [d.seq(B, 5, 7, 2), d.seq(B, 5, 3), d.seq(B, 5, 3)]}


@case("convlstm1d_masked", "Input(6, 14) -> Masking -> TimeDistributed(Reshape((7, 2))) -> "
      "ConvLSTM1D(3, 3, rs, return_state=True) -> [y, h, c]: a (batch, time) mask")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 14), name="x")
    try:
        r = L.TimeDistributed(L.Reshape((7, 2)))(L.Masking()(x))
    except TypeError as e:
        raise Skip(f"no (batch, time) mask reaches a ConvLSTM1D this way: {str(e).splitlines()[0][:200]}")
    inputs = [d.masked(6, 14)]
    try:
        outs = L.ConvLSTM1D(3, 3, return_sequences=True, return_state=True)(r)
        m = g.K.Model(x, list(outs))
        m.predict(inputs[0], verbose=0)
    except ValueError as e:  # Keras 3.15 on JAX: its masked scan cannot broadcast a (batch, 1) mask over h
        raise Skip(f"a masked ConvLSTM1D does not run on this backend: {str(e).splitlines()[0][:200]}")
    return {"model": m, "inputs": inputs}


@case("convlstm1d_stateful", "Input(batch_shape=(3, None, 6, 2)) -> ConvLSTM1D(2, 3, padding='same', "
      "stateful, rs) -> Dense(2); 3 calls, reset_states, 2 calls")
def _(g, d):
    L = g.L
    x = g.K.Input(batch_shape=(B, None, 6, 2), name="x")
    y = L.Dense(2)(L.ConvLSTM1D(2, 3, padding="same", stateful=True, return_sequences=True)(x))
    return {"model": g.K.Model(x, y), "calls": stateful_calls(d, (6, 2))}


@case("convlstm_sequential", "Sequential(Input(5, 6, 6, 1), ConvLSTM2D(2, 3, rs), ConvLSTM2D(2, 2), Flatten, Dense(2))")
def _(g, d):
    L = g.L
    m = g.K.Sequential([g.K.Input(shape=(5, 6, 6, 1)), L.ConvLSTM2D(2, 3, return_sequences=True),
                        L.ConvLSTM2D(2, 2), L.Flatten(), L.Dense(2)])
    return {"model": m, "inputs": [d.seq(B, 5, 6, 6, 1)]}


@case("convlstm3d", "Input(3, 4, 5, 3, 2) -> ConvLSTM3D(2, (2, 3, 2), padding='same', rs, return_state=True) "
      "-> [y, h, c]")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(3, 4, 5, 3, 2), name="x")
    outs = L.ConvLSTM3D(2, (2, 3, 2), padding="same", return_sequences=True, return_state=True)(x)
    return {"model": g.K.Model(x, list(outs)), "inputs": [d.seq(B, 3, 4, 5, 3, 2)]}
