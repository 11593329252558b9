# SPDX-License-Identifier: Apache-2.0
"""Causal Conv1D stacks (TCNs) in front of recurrent layers: they stream, each call site keeping
its last (kernel_size - 1) * dilation_rate input steps."""
from generate_graphs import B, case


@case("tcn_lstm", "Input(8, 3) -> Conv1D(4, 2, causal, dilation 1) -> Conv1D(4, 2, causal, "
      "dilation 2) + residual Add -> Conv1D(4, 2, causal, dilation 4, relu) + residual Add -> "
      "LSTM(3, rs) -> Dense(2)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(8, 3), name="x")
    h1 = L.Conv1D(4, 2, padding="causal", dilation_rate=1, activation="tanh")(x)
    h2 = L.Add()([h1, L.Conv1D(4, 2, padding="causal", dilation_rate=2, activation="tanh")(h1)])
    h3 = L.Add()([h2, L.Conv1D(4, 2, padding="causal", dilation_rate=4, activation="relu")(h2)])
    y = L.Dense(2)(L.LSTM(3, return_sequences=True)(h3))
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 8, 3)]}


@case("causal_conv_groups_gru", "Input(7, 4) -> Conv1D(6, 3, causal, dilation 2, groups=2) -> "
      "Conv1D(2, 1) -> GRU(3): a kernel span of 5 steps, longer than each streamed piece")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 4), name="x")
    h = L.Conv1D(6, 3, padding="causal", dilation_rate=2, groups=2)(x)
    y = L.GRU(3)(L.Conv1D(2, 1)(h))
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 7, 4)]}


@case("causal_conv_variable_length", "Input(None, 2) -> Conv1D(3, 3, causal, no bias) -> "
      "Conv1D(3, 2, causal, dilation 3) -> SimpleRNN(2, rs): variable length",)
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(None, 2), name="x")
    h = L.Conv1D(3, 3, padding="causal", use_bias=False)(x)
    h = L.Conv1D(3, 2, padding="causal", dilation_rate=3)(h)
    y = L.SimpleRNN(2, return_sequences=True)(h)
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 6, 2)]}


@case("causal_conv_with_ids", "inputs x (None, 2) float and ids (None,) int: x -> Conv1D(3, 3, "
      "causal, dilation 2); ids -> Embedding(5, 2); Concatenate -> GRU(3, rs) -> Dense(2)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(None, 2), name="x")
    ids = g.K.Input(shape=(None,), dtype="int32", name="ids")
    h = L.Conv1D(3, 3, padding="causal", dilation_rate=2, activation="tanh")(x)
    y = L.Concatenate()([h, L.Embedding(5, 2)(ids)])
    y = L.Dense(2)(L.GRU(3, return_sequences=True)(y))
    return {"model": g.K.Model([x, ids], y),
            "inputs": [d.seq(B, 7, 2), d.rng.integers(0, 5, (B, 7)).astype("int32")]}
