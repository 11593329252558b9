# SPDX-License-Identifier: Apache-2.0
"""UnitNormalization and RMSNormalization (Keras 3) around recurrent layers, with masks."""
from generate_graphs import B, case, Skip


@case("unit_norm_masked", "Input(7, 3) -> Masking -> UnitNormalization -> GRU(4, rs) -> "
      "UnitNormalization(axis=-1) -> Dense(2); the mask passes through UnitNormalization")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    h = L.GRU(4, return_sequences=True)(L.UnitNormalization()(L.Masking()(x)))
    y = L.Dense(2)(L.UnitNormalization(axis=-1)(h))
    return {"model": g.K.Model(x, y), "inputs": [d.masked(7, 3)]}


@case("unit_norm_two_axes", "Input(5, 3) -> LSTM(4, rs) -> UnitNormalization(axis=[1, 2]) -> Flatten -> Dense(2)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(5, 3), name="x")
    h = L.LSTM(4, return_sequences=True)(x)
    y = L.Dense(2)(L.Flatten()(L.UnitNormalization(axis=[1, 2])(h)))
    out = {"model": g.K.Model(x, y), "inputs": [d.seq(B, 5, 3)]}
    if g.dialect != "keras2":
        out["skip_formats"] = {"h5": "Keras 3 loads its own legacy .h5 of UnitNormalization(axis=[1, 2]) back "
                                     "with other predictions (off by 0.5)"}
    return out


@case("rms_norm", "Input(7, 3) -> GRU(5, rs) -> RMSNormalization(epsilon=1e-5) -> LSTM(3) -> Dense(2)",
      dialects=("keras3", "keras3_jax"))
def _(g, d):
    L = g.L
    if not hasattr(L, "RMSNormalization"):
        raise Skip("no RMSNormalization in this Keras")
    x = g.K.Input(shape=(7, 3), name="x")
    h = L.RMSNormalization(epsilon=1e-5)(L.GRU(5, return_sequences=True)(x))
    y = L.Dense(2)(L.LSTM(3)(h))
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 7, 3)]}
