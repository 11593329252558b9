# SPDX-License-Identifier: Apache-2.0
"""Stream.save/load (recur_model_state_save/_load): a stream saved mid-sequence goes on in a new
stream with bit-identical outputs; bad bytes, another batch and another model's bytes are refused
with the stream unchanged."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import recur

GRAPHS = Path(os.environ.get("RECUR_SOURCE_DIR", Path(__file__).resolve().parents[3])) / "tests" / "keras" / "graphs"


def _x(t, batch=3, features=None):
    rng = np.random.default_rng(t)
    return rng.uniform(-1, 1, size=(batch, 1, features)).astype(np.float32)


def _model(rel):
    return recur.load_model(str(GRAPHS / rel))


def test_save_load_goes_on_bit_identically():
    m = _model("keras3/nested_sequential.keras")
    f = m.inputs[0].shape[-1]
    xs = [_x(t, features=f) for t in range(6)]
    with m.new_state(batch=3) as whole, m.new_state(batch=3) as first, m.new_state(batch=3) as resumed:
        want = [whole.step(x) for x in xs]
        for x in xs[:3]:
            first.step(x)
        data = first.save()
        assert isinstance(data, bytes) and data[:4] == b"RCST"
        resumed.load(data)
        assert resumed.save() == data
        for t in range(3, 6):
            np.testing.assert_array_equal(resumed.step(xs[t]), want[t])


def test_bad_bytes_batch_and_model_are_refused():
    m = _model("keras3/nested_sequential.keras")
    other = _model("keras3/masking_sequential.keras")
    f = m.inputs[0].shape[-1]
    with m.new_state(batch=3) as s, m.new_state(batch=2) as s2, other.new_state(batch=3) as o:
        s.step(_x(0, features=f))
        data = s.save()
        with pytest.raises(recur.InvalidArgumentError, match="too short"):
            s.load(b"RC")
        with pytest.raises(recur.InvalidArgumentError, match="checksum"):
            s.load(data[:-1])
        with pytest.raises(recur.InvalidArgumentError, match="batch 3"):
            s2.load(data)
        with pytest.raises(recur.StateError, match="saved by another model"):
            o.load(data)
        with pytest.raises(TypeError):
            s.load("not bytes")
        assert s.save() == data
