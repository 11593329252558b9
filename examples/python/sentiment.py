# SPDX-License-Identifier: Apache-2.0
"""recur from Python: every bundled model file next to Keras's predictions, then one sequence
streamed token by token through the whole model, as a service would feed it.

Usage: python sentiment.py [MODELS_DIR]   (default: examples/models)
Exits non-zero when recur differs from Keras by more than 1e-5."""
import sys
from pathlib import Path

import numpy as np

import recur

models = Path(sys.argv[1] if len(sys.argv) > 1 else "examples/models")
ids = np.load(models / "sentiment_inputs.npy")  # (12, 10) int32 token ids, 0 = padding
worst = 0.0
for dialect in ("keras2", "keras3"):
    keras = np.load(models / ("sentiment_%s_keras.npy" % dialect))  # Keras's own model.predict(ids)
    for ext in ("keras", "h5"):
        with recur.load_model(models / ("sentiment_%s.%s" % (dialect, ext))) as model:
            probs = model.predict(ids)  # integer ids reach the Embedding as integers
            err = float(np.abs(probs - keras).max())
            worst = max(worst, err)
            print("%-24s recur %s  Keras %s  max abs difference %.2g"
                  % ("sentiment_%s.%s" % (dialect, ext), probs[0], keras[0], err))

# Streaming: one stream per user session; feed tokens as they arrive. The model masks token 0,
# so the padded sample 2 gives the same probabilities streamed as whole.
model = recur.load_model(models / "sentiment_keras3.keras")
keras = np.load(models / "sentiment_keras3_keras.npy")
stream = model.new_state(batch=1)
for t in range(ids.shape[1]):
    probs = stream.step(ids[2:3, t])  # one timestep, (batch,) ids without the time axis
print("streamed sample 2 token by token: %s  Keras %s" % (probs[0], keras[2]))
worst = max(worst, float(np.abs(probs[0] - keras[2]).max()))
print("max abs difference to Keras: %.2g" % worst)
sys.exit(0 if worst <= 1e-5 else 1)
