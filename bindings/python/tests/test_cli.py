# SPDX-License-Identifier: Apache-2.0
"""python -m recur: info, run and verify on the bundled model and the CLI's fixtures, against
Keras's stored outputs, and the exit code and one-line message of each error."""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[3]
MODELS = ROOT / "examples" / "models"
MODEL = MODELS / "sentiment_keras3.keras"
KERAS = np.loadtxt(MODELS / "sentiment_keras3_keras.txt", dtype=np.float32)


def cli(*args, cwd=None):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-m", "recur", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120)


@pytest.fixture
def ids(tmp_path):
    p = tmp_path / "ids.npy"
    np.save(p, np.load(MODELS / "sentiment_inputs.npy"))
    return p


def test_info_text_and_json():
    r = cli("info", MODEL)
    assert r.returncode == 0, r.stderr
    assert "runnable:      yes" in r.stdout and "input_layer" in r.stdout and "int ids" in r.stdout
    r = cli("info", MODEL, "--json")
    info = json.loads(r.stdout)
    assert info["runnable"] is True and info["dialect"] == "keras3"
    assert [i["name"] for i in info["inputs"]] == ["input_layer"] and info["inputs"][0]["token_ids"]
    assert [l["class_name"] for l in info["layers"]] == ["InputLayer", "Embedding", "GRU", "LSTM", "Dense"]


@pytest.mark.parametrize("out", ["probs.npy", "probs.npz"])
def test_run_writes_keras_numbers(ids, tmp_path, out):
    r = cli("run", MODEL, "-i", ids, "-o", tmp_path / out)
    assert r.returncode == 0, r.stderr
    got = np.load(tmp_path / out)
    got = got["head"] if out.endswith(".npz") else got
    assert np.abs(got - KERAS).max() <= 1e-6


def test_run_json_to_stdout(ids):
    r = cli("run", MODEL, "-i", "input_layer=%s" % ids, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["head"]["shape"] == [12, 2]
    assert np.abs(np.array(out["head"]["values"], np.float32) - KERAS).max() <= 1e-6


def test_verify_passes_and_fails(ids, tmp_path):
    np.save(tmp_path / "want.npy", KERAS)
    r = cli("verify", MODEL, "-i", ids, "-e", tmp_path / "want.npy", "--atol", "1e-6")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "head: ok" in r.stdout
    np.save(tmp_path / "wrong.npy", KERAS + 0.01)
    r = cli("verify", MODEL, "-i", ids, "-e", tmp_path / "wrong.npy")
    assert r.returncode == 1 and "head: FAIL" in r.stdout


def test_verify_prints_the_precision_and_its_error(ids, tmp_path):
    np.save(tmp_path / "want.npy", KERAS)
    r = cli("verify", MODEL, "-i", ids, "-e", tmp_path / "want.npy")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "precision: float32\n" in r.stdout
    r = cli("verify", MODEL, "-i", ids, "-e", tmp_path / "want.npy", "--precision", "int8", "--atol", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "precision: int8\n" in r.stdout
    # int8 weights differ from Keras's numbers, and the error printed says by how much.
    err = float(r.stdout.split("max abs error: ")[1].split()[0])
    assert 0 < err < 1, r.stdout


def test_masks_and_limits(ids, tmp_path):
    mask = np.load(MODELS / "sentiment_inputs.npy") != 0
    np.save(tmp_path / "mask.npy", mask)
    r = cli("run", MODEL, "-i", ids, "-m", tmp_path / "mask.npy", "-o", tmp_path / "m.npy")
    assert r.returncode == 0, r.stderr
    # The model masks token 0 itself: the same mask given explicitly gives Keras's numbers.
    assert np.abs(np.load(tmp_path / "m.npy") - KERAS).max() <= 1e-6
    r = cli("--limit", "units=4", "run", MODEL, "-i", ids)
    assert r.returncode == 2 and r.stderr.startswith("recur: ") and "units" in r.stderr


@pytest.mark.parametrize("args, words", [
    (["run", "/no/such/model.keras", "-i", "x.npy"], "no such file"),
    (["run", MODEL, "-i", "/no/such/ids.npy"], "-i: cannot read"),
    (["run", MODEL, "-i", "a=%s" % MODEL], "is not one array"),
    (["--limit", "units=lots", "info", MODEL], "--limit units"),
    (["--limit", "nope=3", "info", MODEL], "unknown limit"),
    (["verify", MODEL, "-i", "IDS", "-e", "/no/such/want.npz"], "-e: cannot read"),
])
def test_errors_exit_2_with_one_line(ids, args, words):
    args = [str(ids) if a == "IDS" else a for a in args]
    r = cli(*args)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("recur: ")
    assert words.lower() in lines[0].lower()


def test_states_in_and_out_round_trip(tmp_path):
    model = ROOT / "tests" / "keras" / "graphs" / "keras3" / "stateful_sequential_gru.keras"
    from recur import load_model

    spec = load_model(model).inputs[0]
    x = np.random.default_rng(1).random([d or 4 for d in spec.shape], dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    r = cli("run", model, "-i", tmp_path / "x.npy", "--states-out", tmp_path / "s.npz", "-o", tmp_path / "y1.npy")
    assert r.returncode == 0, r.stderr
    # Starting again from the states the first run left equals a second call in one process.
    r = cli("run", model, "-i", tmp_path / "x.npy", "--states-in", tmp_path / "s.npz", "-o", tmp_path / "y2.npy")
    assert r.returncode == 0, r.stderr
    m = load_model(model)
    m.predict(x)
    assert np.array_equal(np.load(tmp_path / "y2.npy"), m.predict(x))
    assert not np.array_equal(np.load(tmp_path / "y1.npy"), np.load(tmp_path / "y2.npy"))


def test_model_summary_prints_the_info_text():
    from recur import load_model

    lines = []
    load_model(MODEL).summary(print_fn=lines.append)
    assert len(lines) == 1 and lines[0] == cli("info", MODEL).stdout.rstrip("\n")
