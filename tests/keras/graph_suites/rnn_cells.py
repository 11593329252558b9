# SPDX-License-Identifier: Apache-2.0
"""The generic RNN layer over GRUCell, LSTMCell, SimpleRNNCell and StackedRNNCells of them."""
from generate_graphs import B, Skip, case


def flat(outs):
    """A stack's states come back nested ([y, h1, [h2, c2]]): the model outputs them flat."""
    if isinstance(outs, (list, tuple)):
        return [t for o in outs for t in flat(o)]
    return [outs]


def stateful_calls(d, F, lengths=(4, 3, 5, 4, 2)):
    """3 calls, reset_states, 2 calls."""
    return [(i == 3, [d.seq(B, T, F)]) for i, T in enumerate(lengths)]


@case("rnn_gru_cell", "Input(7, 3) -> RNN(GRUCell(4), rs) -> Dense(2): the same numbers as GRU(4)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    y = L.Dense(2)(L.RNN(L.GRUCell(4), return_sequences=True)(x))
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 7, 3)]}


@case("rnn_gru_cell_options", "Input(7, 3) -> Masking -> RNN(GRUCell(4, reset_after=False, "
      "activation='relu', recurrent_activation='hard_sigmoid', use_bias=False, dropout=0.3, "
      "recurrent_dropout=0.2), go_backwards=True, rs) -> Dense(2)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    cell = L.GRUCell(4, reset_after=False, activation="relu", recurrent_activation="hard_sigmoid",
                     use_bias=False, dropout=0.3, recurrent_dropout=0.2)
    y = L.Dense(2)(L.RNN(cell, go_backwards=True, return_sequences=True)(L.Masking()(x)))
    return {"model": g.K.Model(x, y), "inputs": [d.masked(7, 3)]}


@case("rnn_lstm_cell_state", "Input(7, 3) -> Masking -> RNN(LSTMCell(3, unit_forget_bias=False), "
      "rs, return_state=True) -> [y, h, c]")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    outs = L.RNN(L.LSTMCell(3, unit_forget_bias=False), return_sequences=True, return_state=True)(L.Masking()(x))
    return {"model": g.K.Model(x, flat(outs)), "inputs": [d.masked(7, 3)]}


@case("rnn_simple_cell_unroll", "Input(7, 3) -> Masking -> RNN(SimpleRNNCell(4, activation='relu'), "
      "unroll=True, go_backwards=True, rs, return_state=True) -> [y, h]")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    outs = L.RNN(L.SimpleRNNCell(4, activation="relu"), unroll=True, go_backwards=True,
                 return_sequences=True, return_state=True)(L.Masking()(x))
    return {"model": g.K.Model(x, flat(outs)), "inputs": [d.masked(7, 3)]}


@case("rnn_lstm_cell_unroll_last", "Input(6, 3) -> Masking -> RNN(LSTMCell(4), unroll=True) -> Dense(2); "
      "leading masked steps")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    y = L.Dense(2)(L.RNN(L.LSTMCell(4), unroll=True)(L.Masking()(x)))
    return {"model": g.K.Model(x, y), "inputs": [d.masked(6, 3, pattern="leading")]}


@case("rnn_initial_state", "inputs x (6, 3), h (4,), c (4,) -> RNN(LSTMCell(4), rs)(x, "
      "initial_state=[h, c]) -> Dense(2); RNN(GRUCell(3), return_state)(x, initial_state=h3)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    h = g.K.Input(shape=(4,), name="h")
    c = g.K.Input(shape=(4,), name="c")
    h3 = g.K.Input(shape=(3,), name="h3")
    y = L.Dense(2)(L.RNN(L.LSTMCell(4), return_sequences=True)(x, initial_state=[h, c]))
    z, zs = L.RNN(L.GRUCell(3), return_state=True)(x, initial_state=h3)
    return {"model": g.K.Model([x, h, c, h3], [y, z, zs]),
            "inputs": [d.seq(B, 6, 3), d.seq(B, 4), d.seq(B, 4), d.seq(B, 3)]}


@case("rnn_stacked", "Input(7, 3) -> Masking -> RNN(StackedRNNCells([GRUCell(4), LSTMCell(3), "
      "SimpleRNNCell(5)]), rs, return_state=True) -> [y, h1, h2, c2, h3]")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    cells = L.StackedRNNCells([L.GRUCell(4), L.LSTMCell(3), L.SimpleRNNCell(5)])
    outs = L.RNN(cells, return_sequences=True, return_state=True)(L.Masking()(x))
    return {"model": g.K.Model(x, flat(outs)), "inputs": [d.masked(7, 3)]}


@case("rnn_stacked_same_units", "Input(7, 3) -> Masking -> RNN(StackedRNNCells([GRUCell(4), "
      "GRUCell(4)]), rs, return_state=True) -> [y, h1, h2]; leading masked steps")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    cells = L.StackedRNNCells([L.GRUCell(4), L.GRUCell(4)])
    outs = L.RNN(cells, return_sequences=True, return_state=True)(L.Masking()(x))
    return {"model": g.K.Model(x, flat(outs)), "inputs": [d.masked(7, 3, pattern="leading")]}


@case("rnn_stacked_lstm_same_units", "Input(7, 3) -> Masking -> RNN(StackedRNNCells([LSTMCell(4), "
      "LSTMCell(4)]), rs) -> Dense(2); leading masked steps")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    cells = L.StackedRNNCells([L.LSTMCell(4), L.LSTMCell(4)])
    y = L.Dense(2)(L.RNN(cells, return_sequences=True)(L.Masking()(x)))
    return {"model": g.K.Model(x, y), "inputs": [d.masked(7, 3, pattern="leading")]}


@case("rnn_stacked_backwards", "Input(7, 3) -> Masking -> RNN(StackedRNNCells([LSTMCell(3), "
      "GRUCell(4, reset_after=False)]), go_backwards=True, return_state=True) -> [y, h1, c1, h2]; "
      "the same with rs")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    m = L.Masking()(x)
    a = L.RNN(L.StackedRNNCells([L.LSTMCell(3), L.GRUCell(4, reset_after=False)]), go_backwards=True,
              return_state=True)(m)
    b = L.RNN(L.StackedRNNCells([L.GRUCell(2), L.SimpleRNNCell(3)]), go_backwards=True,
              return_sequences=True)(m)
    return {"model": g.K.Model(x, flat(a) + [b]), "inputs": [d.masked(7, 3)]}


@case("rnn_stacked_unroll", "Input(6, 3) -> Masking -> RNN(StackedRNNCells([SimpleRNNCell(3), "
      "LSTMCell(4)]), unroll=True, rs) -> Dense(2)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    cells = L.StackedRNNCells([L.SimpleRNNCell(3), L.LSTMCell(4)])
    y = L.Dense(2)(L.RNN(cells, unroll=True, return_sequences=True)(L.Masking()(x)))
    return {"model": g.K.Model(x, y), "inputs": [d.masked(6, 3)]}


@case("rnn_stacked_initial_state", "inputs x (6, 3), h1 (3,), h2 (4,), c2 (4,) -> "
      "RNN(StackedRNNCells([GRUCell(3), LSTMCell(4)]), rs, return_state)(x, initial_state=[h1, h2, c2])")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    h1 = g.K.Input(shape=(3,), name="h1")
    h2 = g.K.Input(shape=(4,), name="h2")
    c2 = g.K.Input(shape=(4,), name="c2")
    cells = L.StackedRNNCells([L.GRUCell(3), L.LSTMCell(4)])
    outs = L.RNN(cells, return_sequences=True, return_state=True)(x, initial_state=[h1, [h2, c2]])
    return {"model": g.K.Model([x, h1, h2, c2], flat(outs)),
            "inputs": [d.seq(B, 6, 3), d.seq(B, 3), d.seq(B, 4), d.seq(B, 4)]}


@case("rnn_embedding_mask", "ids (6,) -> Embedding(10, 3, mask_zero) -> RNN(GRUCell(4), rs) -> "
      "RNN(StackedRNNCells([LSTMCell(3), GRUCell(2)])) -> Dense(2)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(None,), dtype="int32", name="ids")
    h = L.RNN(L.GRUCell(4), return_sequences=True)(L.Embedding(10, 3, mask_zero=True)(x))
    h = L.RNN(L.StackedRNNCells([L.LSTMCell(3), L.GRUCell(2)]))(h)
    return {"model": g.K.Model(x, L.Dense(2)(h)), "inputs": [d.ids(6, 10)]}


@case("rnn_stateful", "Input(batch_shape=(3, None, 3)) -> RNN(LSTMCell(4), stateful, rs) -> "
      "RNN(GRUCell(3), stateful, rs) -> Dense(2); 3 calls, reset_states, 2 calls")
def _(g, d):
    L = g.L
    x = g.K.Input(batch_shape=(B, None, 3), name="x")
    h = L.RNN(L.LSTMCell(4), stateful=True, return_sequences=True)(x)
    h = L.RNN(L.GRUCell(3), stateful=True, return_sequences=True)(h)
    return {"model": g.K.Model(x, L.Dense(2)(h)), "calls": stateful_calls(d, 3)}


# Keras 3.15's RNN.reset_state assigns to each state, and a stack's states are lists of them
# (AttributeError: 'ListWrapper' object has no attribute 'assign').
@case("rnn_stateful_stacked", "Input(batch_shape=(3, None, 3)) -> RNN(StackedRNNCells([GRUCell(3), "
      "LSTMCell(2)]), stateful, rs) -> Dense(2); 3 calls, reset_states, 2 calls", dialects=("keras2",))
def _(g, d):
    L = g.L
    x = g.K.Input(batch_shape=(B, None, 3), name="x")
    h = L.RNN(L.StackedRNNCells([L.GRUCell(3), L.LSTMCell(2)]), stateful=True, return_sequences=True)(x)
    return {"model": g.K.Model(x, L.Dense(2)(h)), "calls": stateful_calls(d, 3)}


@case("rnn_sequential", "Sequential(Input(7, 3), RNN(GRUCell(4), rs), RNN(StackedRNNCells([GRUCell(3), "
      "LSTMCell(2)])), Dense(2))")
def _(g, d):
    L = g.L
    m = g.K.Sequential([g.K.Input(shape=(7, 3)), L.RNN(L.GRUCell(4), return_sequences=True),
                        L.RNN(L.StackedRNNCells([L.GRUCell(3), L.LSTMCell(2)])), L.Dense(2)])
    return {"model": m, "inputs": [d.seq(B, 7, 3)]}


@case("rnn_bidirectional", "Input(7, 3) -> Masking -> Bidirectional(RNN(GRUCell(4), rs)) -> "
      "Bidirectional(RNN(LSTMCell(3)), merge_mode='sum') -> Dense(2)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    h = L.Bidirectional(L.RNN(L.GRUCell(4), return_sequences=True))(L.Masking()(x))
    h = L.Bidirectional(L.RNN(L.LSTMCell(3)), merge_mode="sum")(h)
    return {"model": g.K.Model(x, L.Dense(2)(h)), "inputs": [d.masked(7, 3)]}


@case("rnn_bidirectional_stacked", "Input(7, 3) -> Masking -> Bidirectional(RNN(StackedRNNCells("
      "[GRUCell(3), LSTMCell(2)]), rs)) -> Dense(2)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    h = L.Bidirectional(L.RNN(L.StackedRNNCells([L.GRUCell(3), L.LSTMCell(2)]), return_sequences=True))(L.Masking()(x))
    return {"model": g.K.Model(x, L.Dense(2)(h)), "inputs": [d.masked(7, 3)]}


@case("rnn_time_distributed", "Input(4, 5, 3) -> TimeDistributed(RNN(GRUCell(3))) -> Dense(2)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(4, 5, 3), name="x")
    y = L.Dense(2)(L.TimeDistributed(L.RNN(L.GRUCell(3)))(x))
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 4, 5, 3)]}


@case("rnn_bidirectional_stacked_unroll", "Input(6, 3) -> Masking -> Bidirectional(RNN(StackedRNNCells("
      "[GRUCell(3), LSTMCell(2)]), unroll=True, rs)) -> Dense(2): the halves zero their masked outputs "
      "(Bidirectional sets zero_output_for_mask), which Keras's unrolled loop does in input order")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 3), name="x")
    rnn = L.RNN(L.StackedRNNCells([L.GRUCell(3), L.LSTMCell(2)]), unroll=True, return_sequences=True)
    h = L.Bidirectional(rnn)(L.Masking()(x))
    return {"model": g.K.Model(x, L.Dense(2)(h)), "inputs": [d.masked(6, 3)]}
