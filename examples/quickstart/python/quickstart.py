# recur quick start: open a Keras model, run one sequence of ten token ids, print its probabilities.
import sys
import numpy as np
import recur

model = recur.load_model(sys.argv[1] if len(sys.argv) > 1 else "examples/models/sentiment_keras3.keras")
ids = np.array([[12, 13, 18, 11, 15, 16, 5, 2, 6, 6]])   # batch 1, 10 timesteps
probs = model.predict(ids)
print("%.9f %.9f" % (probs[0, 0], probs[0, 1]))
