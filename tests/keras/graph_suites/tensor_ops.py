# SPDX-License-Identifier: Apache-2.0
"""Tensor arithmetic on a functional model's tensors (y * 0.5 + 1, tf.concat, y[:, -1, :]):
Keras 2 saves each as a TFOpLambda (SlicingOpLambda for slices) layer, Keras 3 as a keras.ops
node. The same models in every dialect: tf.* functions in Keras 2, keras.ops in Keras 3."""
from generate_graphs import B, case

# Keras 3's legacy .h5 saves keras.ops nodes without their module, and Keras 3 cannot load such a
# file back ("Unknown layer: 'TrueDivide'"): only the .keras form is a model Keras reads.
K3_H5 = {"h5": "Keras 3 cannot load back a legacy .h5 whose outputs are computed by keras.ops nodes"}


def done(g, built):
    if g.dialect != "keras2":
        built["skip_formats"] = K3_H5
    return built


def ops(g):
    """The dialect's functions by one set of names."""
    if g.dialect == "keras2":
        import tensorflow as tf

        return dict(add=tf.math.add, subtract=tf.math.subtract, multiply=tf.math.multiply,
                    divide=tf.math.truediv, maximum=tf.math.maximum, minimum=tf.math.minimum,
                    mean=tf.math.reduce_mean, sum=tf.math.reduce_sum, max=tf.math.reduce_max,
                    concat=lambda xs, axis: tf.concat(xs, axis=axis), stack=tf.stack,
                    squeeze=tf.squeeze, expand_dims=tf.expand_dims,
                    transpose=lambda x, perm: tf.transpose(x, perm=perm))
    K = g.K
    return dict(add=K.ops.add, subtract=K.ops.subtract, multiply=K.ops.multiply,
                divide=K.ops.divide, maximum=K.ops.maximum, minimum=K.ops.minimum,
                mean=K.ops.mean, sum=K.ops.sum, max=K.ops.max,
                concat=lambda xs, axis: K.ops.concatenate(xs, axis=axis), stack=K.ops.stack,
                squeeze=K.ops.squeeze, expand_dims=K.ops.expand_dims,
                transpose=lambda x, perm: K.ops.transpose(x, axes=perm))


@case("ops_arithmetic", "Input(6, 3) -> GRU(4, rs) -> y; y * 0.5 + 1, 1 - y, 0.5 * y, y / 2, "
      "add/subtract/multiply/divide of tensors, maximum, minimum -> three outputs (one through "
      "Dense(2)); per step, so it streams")
def _(g, d):
    L, o = g.L, ops(g)
    x = g.K.Input(shape=(6, 3), name="x")
    y = L.GRU(4, return_sequences=True)(x)
    z = y * 0.5 + 1
    w = 1 - y
    v = 0.5 * y
    u = y / 2.0
    m = o["maximum"](z, w)
    n = o["minimum"](v, o["divide"](u, 3.0))
    t = o["subtract"](o["multiply"](y, w), o["add"](z, v)) - 2.0 / (z + 1.5)
    out = [L.Dense(2, name="head")(m), n, t]
    return done(g, {"model": g.K.Model(x, out), "inputs": [d.seq(B, 6, 3)]})


@case("ops_masked_input", "Input(6, 3) -> Masking -> GRU(4, rs) (masked) -> y * 2 - 0.5 -> "
      "LSTM(3) -> Dense(2): the op's output carries the mask only where Keras passes it on")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    y = L.GRU(4, return_sequences=True)(L.Masking()(x))
    z = y * 2.0 - 0.5
    out = L.Dense(2)(L.LSTM(3)(z))
    return done(g, {"model": g.K.Model(x, out), "inputs": [d.masked(6, 3, pattern="no_full_row")]})


@case("ops_reduce", "Input(6, 3) -> GRU(4, rs) -> y; reduce_mean(axis=-1, keepdims=True), "
      "reduce_max(axis=2), reduce_sum(axis=1) (over time: does not stream)")
def _(g, d):
    L, o = g.L, ops(g)
    x = g.K.Input(shape=(6, 3), name="x")
    y = L.GRU(4, return_sequences=True)(x)
    out = [o["mean"](y, axis=-1, keepdims=True), o["max"](y, axis=2), o["sum"](y, axis=1)]
    return done(g, {"model": g.K.Model(x, out), "inputs": [d.seq(B, 6, 3)]})


@case("ops_reduce_stream", "Input(6, 3) -> GRU(4, rs) -> y; reduce_mean(axis=2) and "
      "reduce_sum(axis=-1, keepdims=True) -> Concatenate -> Dense(2): per step, streams")
def _(g, d):
    L, o = g.L, ops(g)
    x = g.K.Input(shape=(6, 3), name="x")
    y = L.GRU(4, return_sequences=True)(x)
    a = o["expand_dims"](o["mean"](y, axis=2), -1)
    b = o["sum"](y, axis=-1, keepdims=True)
    out = L.Dense(2)(L.Concatenate()([a, b, y]))
    return done(g, {"model": g.K.Model(x, out), "inputs": [d.seq(B, 6, 3)]})


@case("ops_shapes", "Input(6, 3) -> GRU(4, rs) -> y; concat([y, y * 2], -1), stack([y, 1 - y], "
      "axis=-1) -> transpose(perm=[0, 1, 3, 2]), squeeze(expand_dims(y, 2), axis=2) -> Dense(2): "
      "per step, streams")
def _(g, d):
    L, o = g.L, ops(g)
    x = g.K.Input(shape=(6, 3), name="x")
    y = L.GRU(4, return_sequences=True)(x)
    c = o["concat"]([y, y * 2.0], -1)
    s = o["transpose"](o["stack"]([y, 1.0 - y], axis=-1), [0, 1, 3, 2])
    q = o["squeeze"](o["expand_dims"](y, 2), axis=2)
    out = [c, s, L.Dense(2)(q)]
    return done(g, {"model": g.K.Model(x, out), "inputs": [d.seq(B, 6, 3)]})


@case("ops_transpose_time", "Input(6, 3) -> GRU(4, rs) -> transpose(perm=[0, 2, 1]) -> "
      "Dense(3) (moves time off axis 1: does not stream)")
def _(g, d):
    L, o = g.L, ops(g)
    x = g.K.Input(shape=(6, 3), name="x")
    y = L.GRU(4, return_sequences=True)(x)
    out = L.Dense(3)(o["transpose"](y, [0, 2, 1]))
    return done(g, {"model": g.K.Model(x, out), "inputs": [d.seq(B, 6, 3)]})


@case("ops_slicing", "Input(6, 3) -> GRU(4, rs) -> y; y[:, -1, :], y[:, 1:-1, ::2], "
      "y[:, ::-2, 1:3], y[:, 2] (time slices: does not stream)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    y = L.GRU(4, return_sequences=True)(x)
    out = [y[:, -1, :], y[:, 1:-1, ::2], y[:, ::-2, 1:3], L.Dense(2)(y[:, 2])]
    return done(g, {"model": g.K.Model(x, out), "inputs": [d.seq(B, 6, 3)]})


@case("ops_slicing_features", "Input(6, 3) -> GRU(4, rs) -> y; y[:, :, 1:3] + y[:, :, ::-2], "
      "y[:, :, -1:] -> Dense(2): slices of the feature axis only, streams")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    y = L.GRU(4, return_sequences=True)(x)
    out = [y[:, :, 1:3] + y[:, :, ::-2], L.Dense(2)(y[:, :, -1:])]
    return done(g, {"model": g.K.Model(x, out), "inputs": [d.seq(B, 6, 3)]})


@case("ops_slicing_ellipsis", "Input(6, 3) -> GRU(4, rs) -> y; y[..., -1:] + y[..., :1], "
      "y[:, None, 1] and y[..., None, ::-1] -> Dense(2): an ellipsis and new axes (tf_keras cannot "
      "save an ellipsis in a .keras file: .h5 only in Keras 2)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    y = L.GRU(4, return_sequences=True)(x)
    out = [y[..., -1:] + y[..., :1], y[:, None, 1], L.Dense(2)(y[..., None, ::-1])]
    return done(g, {"model": g.K.Model(x, out), "inputs": [d.seq(B, 6, 3)]})
