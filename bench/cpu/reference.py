# SPDX-License-Identifier: Apache-2.0
"""Weights, inputs and the float64 reference: the Keras GRU and LSTM equations in numpy."""
import numpy as np

CELLS = ("gru_ra", "gru_rb", "lstm")


def gates(cell):
    return 4 if cell == "lstm" else 3


def make_weights(cell, F, H, rng):
    """Keras-layout float32 weights: kernel (F, G*H), recurrent_kernel (H, G*H), bias (G*H,) or,
    for GRU reset_after=True, (2, 3H). Scaled as glorot_uniform so that gates stay off
    saturation, and biases nonzero so that every bias slot's mapping is exercised."""
    G = gates(cell)
    lim_k = np.sqrt(6.0 / (F + G * H))
    lim_r = np.sqrt(3.0 / H)
    kernel = rng.uniform(-lim_k, lim_k, (F, G * H)).astype(np.float32)
    recurrent = rng.uniform(-lim_r, lim_r, (H, G * H)).astype(np.float32)
    bshape = (2, 3 * H) if cell == "gru_ra" else (G * H,)
    bias = rng.uniform(-0.2, 0.2, bshape).astype(np.float32)
    return kernel, recurrent, bias


def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def keras_forward(cell, kernel, recurrent, bias, x):
    """Float64 outputs (B, T, H) of a Keras layer with return_sequences=True from zero states."""
    k, r, b = (np.asarray(a, np.float64) for a in (kernel, recurrent, bias))
    x = np.asarray(x, np.float64)
    B, T, _ = x.shape
    H = r.shape[0]
    h = np.zeros((B, H))
    c = np.zeros((B, H))
    out = np.empty((B, T, H))
    if cell == "gru_ra":
        bx, bh = b[0], b[1]
    elif cell == "gru_rb":
        bx, bh = b, np.zeros_like(b)
    xp = x @ k  # the input projection of every step at once
    for t in range(T):
        if cell == "lstm":
            zz = xp[:, t] + h @ r + b
            i = _sigmoid(zz[:, :H])
            f = _sigmoid(zz[:, H:2 * H])
            g = np.tanh(zz[:, 2 * H:3 * H])
            o = _sigmoid(zz[:, 3 * H:])
            c = f * c + i * g
            h = o * np.tanh(c)
        else:
            xi = xp[:, t] + bx
            z = _sigmoid(xi[:, :H] + h @ r[:, :H] + bh[:H])
            rr = _sigmoid(xi[:, H:2 * H] + h @ r[:, H:2 * H] + bh[H:2 * H])
            if cell == "gru_ra":
                hh = np.tanh(xi[:, 2 * H:] + rr * (h @ r[:, 2 * H:] + bh[2 * H:]))
            else:
                hh = np.tanh(xi[:, 2 * H:] + (rr * h) @ r[:, 2 * H:])
            h = z * h + (1.0 - z) * hh
        out[:, t] = h
    return out


def flops_per_call(cell, B, T, F, H):
    return 2.0 * B * T * (F + H) * gates(cell) * H


def weight_bytes(cell, F, H):
    """The float32 kernels a timestep reads once each (the biases are under 1% of them)."""
    return 4 * (F + H) * gates(cell) * H
