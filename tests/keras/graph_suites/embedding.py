# SPDX-License-Identifier: Apache-2.0
"""Embedding shapes beyond (batch, timesteps) ids: ids of shape (B, T, 1) give (B, T, 1, output_dim)
in both dialects, and an Embedding without mask_zero gives no mask."""
from generate_graphs import B, case


@case("embedding_ids_t1", "Input((6, 1), int32) -> Embedding(10, 3) (B, 6, 1, 3) -> Reshape((6, 3)) -> "
      "LSTM(4) -> Dense(2), and TimeDistributed(Flatten) of the embedding as a second output")
def _(g, d):
    L = g.L
    x = g.K.Input(shape=(6, 1), dtype="int32", name="ids")
    e = L.Embedding(10, 3)(x)
    y = L.Dense(2)(L.LSTM(4)(L.Reshape((6, 3))(e)))
    z = L.TimeDistributed(L.Flatten())(e)
    return {"model": g.K.Model(x, [y, z]), "inputs": [d.ids(6, 10)[:, :, None]]}
