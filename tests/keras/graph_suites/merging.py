# SPDX-License-Identifier: Apache-2.0
"""Dot (batch_dot over one axis of each input, with and without normalize) in the models people
build around recurrent layers: Luong attention spelled out as Dot -> Softmax -> Dot, and cosine
similarity of two encoders. Identity passes tensors and masks."""
from generate_graphs import B, case


@case("dot_luong_attention", "Input(7, 3) -> Masking -> LSTM(4, rs) h; scores = Dot(axes=(2, 2))([h, h]) "
      "(B, 7, 7) -> Activation(softmax) -> context = Dot(axes=(2, 1))([scores, h]) -> Concatenate([context, h]) "
      "-> Dense(2); Dot gives no mask")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    h = L.LSTM(4, return_sequences=True)(L.Masking()(x))
    s = L.Activation("softmax")(L.Dot(axes=(2, 2))([h, h]))
    c = L.Dot(axes=(2, 1))([s, h])
    y = L.Dense(2)(L.Concatenate()([c, h]))
    return {"model": g.K.Model(x, y), "inputs": [d.masked(7, 3)]}


@case("dot_cosine_encoders", "inputs a (6, 3), b (5, 3) -> GRU(4) each -> Dot(axes=1, normalize=True) "
      "(B, 1) and Dot(axes=-1) (B, 1), Identity -> outputs; also Dot(axes=(2, 1)) of sequence a and the permuted b "
      "(B, 6, 5) -> Flatten -> Dense(2)")
def _(g, d):
    L = g.L
    a = g.K.Input(shape=(6, 3), name="a")
    b = g.K.Input(shape=(5, 3), name="b")
    ga, gb = L.GRU(4), L.GRU(4)
    ha, hb = ga(a), gb(b)
    cos = L.Identity()(L.Dot(axes=1, normalize=True)([ha, hb]))
    raw = L.Dot(axes=-1)([ha, hb])
    sa = L.GRU(4, return_sequences=True)(a)
    sb = L.GRU(4, return_sequences=True)(b)
    outer = L.Dense(2)(L.Flatten()(L.Dot(axes=(2, 1))([sa, L.Permute((2, 1))(sb)])))

    return {"model": g.K.Model([a, b], [cos, raw, outer]), "inputs": [d.seq(B, 6, 3), d.seq(B, 5, 3)]}


@case("dot_normalize_zero_rows", "Input a (4,), b (4,) -> Dot(axes=1, normalize=True): rows of zeros hit "
      "each dialect's epsilon (Keras 2 rsqrt(max(ss, 1e-12)), Keras 3 min(rsqrt(ss), 1e7))")
def _(g, d):
    L = g.L
    a = g.K.Input(shape=(4,), name="a")
    b = g.K.Input(shape=(4,), name="b")
    y = L.Dot(axes=1, normalize=True)([a, b])
    xa, xb = d.seq(B, 4), d.seq(B, 4)
    xa[1, :] = 0.0
    xb[2, :] = 0.0
    return {"model": g.K.Model([a, b], y), "inputs": [xa, xb]}
