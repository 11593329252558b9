# SPDX-License-Identifier: Apache-2.0
"""The Python example and the README's quick start, run as users run them, against Keras."""
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]


def test_sentiment_example_matches_keras():
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / "sentiment.py"), str(ROOT / "examples" / "models")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "streamed sample 2 token by token" in r.stdout and "max abs difference to Keras" in r.stdout


def test_quickstart_prints_keras_numbers():
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart" / "python" / "quickstart.py")],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    got = np.array([float(v) for v in r.stdout.split()])
    keras = np.loadtxt(ROOT / "examples" / "models" / "sentiment_keras3_keras.txt")[0]
    assert got.shape == (2,) and np.abs(got - keras).max() <= 1e-6
