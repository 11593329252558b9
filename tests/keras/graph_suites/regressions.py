# SPDX-License-Identifier: Apache-2.0
"""Models users found wrong or refused: nested models and shared layers called at several call
sites (Keras 2 numbers a nested model's calls from 1), and a stateful GRU given its initial
state by a model input."""
from generate_graphs import B, case


def encoder(g, name, T=6, F=3):
    """Input(T, F) -> LSTM(4, return_state=True) -> Concatenate([h, c]) -> Dense(3)."""
    L = g.L
    xi = g.K.Input(shape=(T, F), name=f"{name}_in")
    _, h, c = L.LSTM(4, return_state=True)(xi)
    return g.K.Model(xi, L.Dense(3)(L.Concatenate()([h, c])), name=name)


@case("nested_encoder_two_calls", "a nested functional encoder (Input(6, 3) -> LSTM(4, "
      "return_state=True) -> Concatenate([h, c]) -> Dense(3)) called on inputs a and b -> "
      "Concatenate -> Dense(2)")
def _(g, d):
    L = g.L
    enc = encoder(g, "enc")
    a = g.K.Input(shape=(6, 3), name="a")
    b = g.K.Input(shape=(6, 3), name="b")
    y = L.Dense(2)(L.Concatenate()([enc(a), enc(b)]))
    return {"model": g.K.Model([a, b], y), "inputs": [d.seq(B, 6, 3), d.seq(B, 6, 3)]}


@case("nested_encoder_three_calls_add", "the same encoder called on inputs a, b and c -> "
      "Add([enc(a), enc(b)]) and Subtract([enc(c), enc(a)]) -> Concatenate -> Dense(2)")
def _(g, d):
    L = g.L
    enc = encoder(g, "enc")
    xs = [g.K.Input(shape=(6, 3), name=n) for n in "abc"]
    ea, eb, ec = [enc(x) for x in xs]
    y = L.Dense(2)(L.Concatenate()([L.Add()([ea, eb]), L.Subtract()([ec, ea])]))
    return {"model": g.K.Model(xs, y), "inputs": [d.seq(B, 6, 3) for _ in xs]}


@case("shared_layers_two_calls", "a shared GRU(4) and a shared Dense(3) each called on inputs a "
      "and b, a shared LSTM(3, return_state=True) on both -> Concatenate of everything -> Dense(2)")
def _(g, d):
    L = g.L
    a = g.K.Input(shape=(6, 3), name="a")
    b = g.K.Input(shape=(6, 3), name="b")
    gru, dense = L.GRU(4, name="shared_gru"), L.Dense(3, name="shared_dense")
    lstm = L.LSTM(3, return_state=True, name="shared_lstm")
    ga, gb = gru(a), gru(b)
    _, ha, ca = lstm(a)
    _, hb, cb = lstm(b)
    y = L.Dense(2)(L.Concatenate()([dense(ga), dense(gb), ha, cb, L.Subtract()([ca, hb])]))
    return {"model": g.K.Model([a, b], y), "inputs": [d.seq(B, 6, 3), d.seq(B, 6, 3)]}


@case("nested_in_nested_two_calls", "an inner model (Input(6, 3) -> GRU(4, rs) -> Dense(3)) "
      "called twice inside a middle model (inputs p, q -> Add) that the outer model calls twice "
      "(on a, b and on b, a) -> Concatenate -> GRU(3) -> Dense(2)")
def _(g, d):
    L = g.L
    xi = g.K.Input(shape=(6, 3), name="inner_in")
    inner = g.K.Model(xi, L.Dense(3)(L.GRU(4, return_sequences=True)(xi)), name="inner")
    p = g.K.Input(shape=(6, 3), name="p")
    q = g.K.Input(shape=(6, 3), name="q")
    middle = g.K.Model([p, q], L.Subtract()([inner(p), inner(q)]), name="middle")
    a = g.K.Input(shape=(6, 3), name="a")
    b = g.K.Input(shape=(6, 3), name="b")
    h = L.Concatenate()([middle([a, b]), middle([b, L.Dense(3, name="mix")(a)])])
    y = L.Dense(2)(L.GRU(3)(h))
    return {"model": g.K.Model([a, b], y), "inputs": [d.seq(B, 6, 3), d.seq(B, 6, 3)]}


@case("nested_sequential_two_calls", "a nested Sequential(Input(6, 3), GRU(4), Dense(3)) and a "
      "Keras 2 style Sequential(GRU(4, input_shape=(6, 3)), Dense(3)) each called on inputs a "
      "and b -> Concatenate -> Dense(2)")
def _(g, d):
    L = g.L
    s1 = g.K.Sequential([g.K.Input(shape=(6, 3)), L.GRU(4), L.Dense(3)], name="seq_input")
    if g.dialect == "keras2":
        s2 = g.K.Sequential([L.GRU(4, input_shape=(6, 3)), L.Dense(3)], name="seq_shape")
    else:
        s2 = g.K.Sequential([g.K.Input(shape=(6, 3)), L.GRU(4), L.Dense(3)], name="seq_shape")
    a = g.K.Input(shape=(6, 3), name="a")
    b = g.K.Input(shape=(6, 3), name="b")
    y = L.Dense(2)(L.Concatenate()([s1(a), s1(b), s2(b), s2(a)]))
    return {"model": g.K.Model([a, b], y), "inputs": [d.seq(B, 6, 3), d.seq(B, 6, 3)]}


@case("nested_multi_output_two_calls", "a nested model with two outputs (Input(6, 3) -> GRU(4, "
      "rs, return_state=True) -> [Dense(3)(y), h]) called on a and b; the first call's output 0 "
      "and the second call's output 1 (and output 0) -> Dense(2) each")
def _(g, d):
    L = g.L
    xi = g.K.Input(shape=(6, 3), name="inner_in")
    y, h = L.GRU(4, return_sequences=True, return_state=True)(xi)
    inner = g.K.Model(xi, [L.Dense(3)(y), h], name="inner")
    a = g.K.Input(shape=(6, 3), name="a")
    b = g.K.Input(shape=(6, 3), name="b")
    ya, _ = inner(a)
    yb, hb = inner(b)
    out1 = L.Dense(2, name="from_h")(hb)
    out2 = L.Dense(2, name="from_y")(L.GRU(3)(L.Add()([ya, yb])))
    return {"model": g.K.Model([a, b], [out1, out2]), "inputs": [d.seq(B, 6, 3), d.seq(B, 6, 3)]}


@case("stateful_gru_initial_state_input", "inputs x (batch_shape (3, None, 3)) and h0 "
      "(batch_shape (3, 4)) -> GRU(4, stateful, rs)(x, initial_state=h0) -> Dense(2); 5 calls, "
      "reset_states before each later call (Keras starts every call from its h0, so a stream "
      "that carried the states on would differ)")
def _(g, d):
    L = g.L
    x = g.K.Input(batch_shape=(B, None, 3), name="x")
    h0 = g.K.Input(batch_shape=(B, 4), name="h0")
    y = L.GRU(4, stateful=True, return_sequences=True)(x, initial_state=h0)
    calls = [(i > 0, [d.seq(B, T, 3), d.seq(B, 4)]) for i, T in enumerate((4, 3, 5, 4, 2))]
    return {"model": g.K.Model([x, h0], L.Dense(2)(y)), "calls": calls}


@case("nested_model_sequence_and_repeated", "a nested model (Input(6, 3) -> GRU(4) -> Dense(2)) "
      "called on a sequence input a and on RepeatVector(6)(Dense(3)(static input s)) -> "
      "Concatenate -> Dense(2): one call site steps with a stream, the other does not (recur "
      "refuses to stream it)")
def _(g, d):
    L = g.L
    xi = g.K.Input(shape=(6, 3), name="inner_in")
    inner = g.K.Model(xi, L.Dense(2)(L.GRU(4)(xi)), name="inner")
    a = g.K.Input(shape=(6, 3), name="a")
    s = g.K.Input(shape=(3,), name="s")
    r = L.RepeatVector(6)(L.Dense(3)(s))
    y = L.Dense(2)(L.Concatenate()([inner(a), inner(r)]))
    return {"model": g.K.Model([a, s], y), "inputs": [d.seq(B, 6, 3), d.seq(B, 3)]}
