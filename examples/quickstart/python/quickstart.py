# recur quick start: open a Keras model, run one sequence of ten token ids, print its probabilities.
# Usage: quickstart.py [MODEL [LIBRARY]]   (LIBRARY: the full path of librecur.so.0)
import ctypes
import sys

path = sys.argv[1] if len(sys.argv) > 1 else "examples/models/sentiment_keras3.keras"
lib = ctypes.CDLL(sys.argv[2] if len(sys.argv) > 2 else "librecur.so.0")
lib.recur_last_error.restype = ctypes.c_char_p
model = ctypes.c_void_p()
ids = (ctypes.c_float * 10)(12, 13, 18, 11, 15, 16, 5, 2, 6, 6)
probs = (ctypes.c_float * 2)()
if lib.recur_model_open(ctypes.byref(model), path.encode()) or \
   lib.recur_model_run(model, ids, ctypes.c_size_t(10), 1, 10, None, ctypes.c_size_t(0), probs, ctypes.c_size_t(2)):
    raise SystemExit(lib.recur_last_error().decode())
print("%.9f %.9f" % (probs[0], probs[1]))
lib.recur_model_destroy(model)
