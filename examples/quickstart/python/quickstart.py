"""recur quick start in Python through ctypes: open a Keras model, run one sequence of token ids,
print the prediction. Usage: quickstart.py MODEL [LIBRARY]  (LIBRARY: the full path of librecur.so.0)"""
import ctypes
import sys

lib = ctypes.CDLL(sys.argv[2] if len(sys.argv) > 2 else "librecur.so.0")
lib.recur_last_error.restype = ctypes.c_char_p
lib.recur_model_run.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_float), ctypes.c_size_t, ctypes.c_int32,
                                ctypes.c_int32, ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_float), ctypes.c_size_t]
ids = (ctypes.c_float * 10)(12, 13, 18, 11, 15, 16, 5, 2, 6, 6)  # the first sample of sentiment_inputs.npy
probs = (ctypes.c_float * 2)()  # P(negative), P(positive)
model = ctypes.c_void_p()
status = lib.recur_model_open(ctypes.byref(model), sys.argv[1].encode())
if status == 0:
    status = lib.recur_model_run(model, ids, 10, 1, 10, None, 0, probs, 2)  # batch 1, 10 steps
if status != 0:
    sys.exit("recur: " + lib.recur_last_error().decode())
print(f"prediction: {probs[0]:.9f} {probs[1]:.9f}")  # Keras: 0.999587297 0.000412621826
lib.recur_model_destroy(model)
