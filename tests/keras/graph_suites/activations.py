# SPDX-License-Identifier: Apache-2.0
"""Activation layers: ReLU (max_value, negative_slope, threshold), LeakyReLU, ELU,
ThresholdedReLU (Keras 2), PReLU (shared_axes), Softmax (axes, masks) and Activation with every
activation name of each dialect, between recurrent layers, with masked inputs (they pass the mask
on; Softmax also applies it).

What these files pin down: in a graph, Softmax is called with its input's (batch, timesteps)
mask, which both dialects broadcast against the input from the last axis (numpy's rule), not
along the batch and time axes: for a (batch, T, F) input Keras only runs when the batch is 1 or T
and T is 1 or F (softmax_masked_broadcast has batch = T = F = 3), and fails otherwise. Keras 2
adds -1e9 at masked positions (robust_masking=True: sets them to -1e9); Keras 3 sets them to -1e9
and the outputs there to 0. Keras 3 reads a legacy .h5's Softmax axis list of several back as the
default axis (saving_utils.py keeps only an integer or a list of one)."""
import itertools
import os

from generate_graphs import B, case

# The names Activation accepts in each dialect ("threshold" needs arguments; "glu" halves the
# last axis and recur refuses it).
KERAS2_NAMES = ["relu", "leaky_relu", "relu6", "softmax", "elu", "selu", "softplus", "softsign",
                "silu", "swish", "gelu", "tanh", "sigmoid", "exponential", "hard_sigmoid",
                "linear", "mish", "log_softmax"]
KERAS3_NAMES = KERAS2_NAMES + ["celu", "squareplus", "soft_shrink", "sparse_plus", "tanh_shrink",
                               "sparse_sigmoid", "hard_silu", "hard_swish", "hard_tanh",
                               "hard_shrink", "log_sigmoid", "sparsemax"]


@case("relu_options", "Input(7, 3) -> Masking -> Dense(4) -> ReLU with every combination of "
      "max_value (None, 0.3, 6), negative_slope (0, 0.2) and threshold (0, 0.1), each an output; "
      "ReLU(0.3, 0.2, 0.1) -> LSTM(3) (masked: ReLU passes the mask on). Inputs in [-4, 4]")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    h = L.Dense(4)(L.Masking()(x))
    outs = []
    for mv, ns, th in itertools.product((None, 0.3, 6.0), (0.0, 0.2), (0.0, 0.1)):
        outs.append(L.ReLU(max_value=mv, negative_slope=ns, threshold=th)(h))
    outs.append(L.LSTM(3)(L.ReLU(max_value=0.3, negative_slope=0.2, threshold=0.1)(h)))
    x_in = d.masked(7, 3)
    x_in *= 4
    return {"model": g.K.Model(x, outs), "inputs": [x_in]}


@case("leaky_elu_thresholded", "Input(7, 3) -> Masking -> GRU(4, rs) -> Dense(4) -> LeakyReLU(), "
      "LeakyReLU(0.1), ELU(), ELU(alpha=0.5), ThresholdedReLU(theta=0.2) (Keras 2 only) -> each an "
      "output; ELU(0.5) -> GRU(3) (masked)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    h = L.Dense(4)(L.GRU(4, return_sequences=True)(L.Masking()(x)))
    slope = {"alpha": 0.1} if g.dialect == "keras2" else {"negative_slope": 0.1}
    outs = [L.LeakyReLU()(h), L.LeakyReLU(**slope)(h), L.ELU()(h), L.ELU(alpha=0.5)(h)]
    if g.dialect == "keras2":
        outs.append(L.ThresholdedReLU(theta=0.2)(h))
    outs.append(L.GRU(3)(L.ELU(alpha=0.5)(h)))
    x_in = d.masked(7, 3)
    x_in *= 3
    return {"model": g.K.Model(x, outs), "inputs": [x_in]}


@case("prelu_per_step", "Input(7, 3) -> Masking -> GRU(4, rs) -> PReLU() (alpha (7, 4): one per "
      "step and unit, so it does not stream) -> PReLU(shared_axes=[1]) -> GRU(3) (masked) -> "
      "Dense(2)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    h = L.GRU(4, return_sequences=True)(L.Masking()(x))
    h = L.PReLU(shared_axes=[1])(L.PReLU()(h))
    return {"model": g.K.Model(x, L.Dense(2)(L.GRU(3)(h))), "inputs": [d.masked(7, 3)]}


@case("prelu_shared_variable_length", "Input(None, 3) -> Dense(4) -> PReLU(shared_axes=1) -> "
      "LSTM(4, rs) -> PReLU(shared_axes=[1, 2]) -> GRU(2, rs): streams")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(None, 3), name="x")
    h = L.LSTM(4, return_sequences=True)(L.PReLU(shared_axes=1)(L.Dense(4)(x)))
    y = L.GRU(2, return_sequences=True)(L.PReLU(shared_axes=[1, 2])(h))
    return {"model": g.K.Model(x, y), "inputs": [d.seq(B, 6, 3)]}


@case("softmax_axes", "Input(7, 3) -> GRU(4, rs) -> Dense(4) -> Softmax(), Softmax(axis=1) (over "
      "time), Softmax(axis=-2), Softmax(axis=[2]) -> each an output; Softmax() -> LSTM(3)")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    h = L.Dense(4)(L.GRU(4, return_sequences=True)(x))
    outs = [L.Softmax()(h), L.Softmax(axis=1)(h), L.Softmax(axis=-2)(h), L.Softmax(axis=[2])(h),
            L.LSTM(3)(L.Softmax()(h))]
    x_in = d.seq(B, 7, 3)
    x_in *= 3
    return {"model": g.K.Model(x, outs), "inputs": [x_in]}


@case("softmax_several_axes", "Input(7, 3) -> GRU(4, rs) -> Dense(4) -> Softmax(axis=[1, 2]) and "
      "Softmax(axis=[2, 1]) -> GRU(2): exp(x - logsumexp(x)) over both axes. Keras 3 reads the "
      "axis list of a legacy .h5 back as the default axis (legacy/saving/saving_utils.py keeps an "
      "integer or a list of one), so its .h5 is left out")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    h = L.Dense(4)(L.GRU(4, return_sequences=True)(x))
    outs = [L.Softmax(axis=[1, 2])(h), L.GRU(2)(L.Softmax(axis=[2, 1])(h))]
    x_in = d.seq(B, 7, 3)
    x_in *= 3
    built = {"model": g.K.Model(x, outs), "inputs": [x_in]}
    if g.dialect != "keras2":
        built["skip_formats"] = {"h5": "Keras 3 loads a Softmax axis list of several from a "
                                           "legacy .h5 as axis=-1, so the file predicts otherwise"}
    return built


@case("softmax_several_axes_keras3_h5", "Keras 3: the model of softmax_several_axes saved as a "
      "legacy .h5 only, and its outputs those of Keras 3 loading that .h5 back, which runs the "
      "Softmax layers over the last axis (the axis lists of several are dropped)",
      dialects=("keras3", "keras3_jax"))
def _(g, d):
    import tempfile

    L = g.L
    x = g.K.Input(shape=(7, 3), name="x")
    h = L.Dense(4)(L.GRU(4, return_sequences=True)(x))
    model = g.K.Model(x, [L.Softmax(axis=[1, 2])(h), L.GRU(2)(L.Softmax(axis=[2, 1])(h))])
    g.randomize(model)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.h5")
        with g.warnings_ignored():
            model.save(path)
        as_keras_reads_it = g.K.models.load_model(path, compile=False)
    assert [lay.axis for lay in as_keras_reads_it.layers if type(lay).__name__ == "Softmax"] == [-1, -1]
    x_in = d.seq(B, 7, 3)
    x_in *= 3
    return {"model": model, "predict_model": as_keras_reads_it, "weights_set": True,
            "skip_formats": {"keras": "the .keras file keeps the axis lists (softmax_several_axes)"},
            "inputs": [x_in]}


@case("softmax_masked_broadcast", "Input(3, 3) -> Masking -> GRU(3, rs) -> Softmax() and "
      "Softmax(axis=1) -> LSTM(2, rs), and Softmax(robust_masking=True) in Keras 2: the Softmax "
      "gets the (batch, 3) mask and broadcasts it against (batch, 3, 3) from the last axis, as "
      "numpy does (with a batch of 3 the shapes fit): "
      "Keras 2 adds -1e9 there (robust_masking: replaces), Keras 3 replaces and zeroes the "
      "outputs there; the mask passes on")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(3, 3), name="x")
    h = L.Dense(3)(L.GRU(3, return_sequences=True)(L.Masking()(x)))
    s1 = L.Softmax()(h)
    s2 = L.Softmax(axis=1)(h)
    outs = [s1, s2, L.LSTM(2, return_sequences=True)(s1)]
    if g.dialect == "keras2":
        outs.append(L.Softmax(robust_masking=True)(h))
    x_in = d.seq(B, 3, 3)
    x_in[0, 2] = 0.0
    x_in[1, 0] = 0.0
    return {"model": g.K.Model(x, outs), "inputs": [x_in]}


@case("activation_names", "Input(6, 3) -> Masking -> Dense(4) -> Activation(name) for every "
      "activation name the dialect accepts, each an output; Activation('hard_sigmoid') -> GRU(3) "
      "(masked). Inputs in [-5, 5]")
def _(g, d):
    L = g.L
    names = KERAS2_NAMES if g.dialect == "keras2" else KERAS3_NAMES
    x = g.K.Input(shape=(6, 3), name="x")
    h = L.Dense(4)(L.Masking()(x))
    outs = [L.Activation(n, name=f"act_{n}")(h) for n in names]
    outs.append(L.GRU(3)(L.Activation("hard_sigmoid")(h)))
    x_in = d.masked(6, 3)
    x_in *= 5
    return {"model": g.K.Model(x, outs), "inputs": [x_in]}


@case("activations_sequential", "Sequential(Input(6, 3), Masking, GRU(4, rs), "
      "PReLU(shared_axes=[1]), LeakyReLU(), ReLU(max_value=0.5), ELU(alpha=0.7), LSTM(2, rs)): "
      "every layer passes the mask on to the LSTM; PReLU's weights in a Sequential .h5 (no "
      "Softmax: its (batch, 6) mask does not broadcast against (batch, 6, 4), and Keras fails)")
def _(g, d):
    L = g.L
    m = g.K.Sequential([g.K.Input(shape=(6, 3)), L.Masking(), L.GRU(4, return_sequences=True),
                        L.PReLU(shared_axes=[1]), L.LeakyReLU(), L.ReLU(max_value=0.5),
                        L.ELU(alpha=0.7), L.LSTM(2, return_sequences=True)])
    return {"model": m, "inputs": [d.masked(6, 3)]}
