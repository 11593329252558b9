// SPDX-License-Identifier: Apache-2.0
/*
 * Python idioms for bindings/recur.i (included before the classes).
 *
 * SWIG writes this wrapper as the extension module recur._native, built with -builtin (the
 * classes are C types: a call costs no Python-level proxy) and -threads (the GIL is released
 * around every call into recur, so Python threads run recur concurrently). Users never import
 * it: the package `recur` (bindings/python/recur/) is hand-written Python on top.
 *
 * - recur_rc (a status) becomes an exception, one class per status (recur.RecurError and its
 *   subclasses, created here), with the library's message intact. The message is read right
 *   after the call, on the same OS thread (a Python thread is one OS thread), so it is the
 *   failing call's.
 * - (pointer, length) pairs of tensors are objects with the buffer protocol (NumPy arrays,
 *   bytes, bytearray, memoryview, array.array), passed without a copy; they must be C-contiguous
 *   and of the element type the C ABI takes (float32 or uint8): the package converts before.
 *   Writable buffers receive outputs in place. None passes NULL (no mask, no initial state).
 * - Scalar and string out-parameters become return values (a tuple when there are several).
 */

%{
#define SWIG_FILE_WITH_INIT
#include <limits.h>

/* The exception classes, created once at import (recur_py_init_errors). Index: -status for the
 * statuses -1..-9, 0 for RecurError itself (and unknown statuses), 10 for INTERNAL. */
static PyObject *recur_py_errors[11];

static PyObject *recur_py_error_class(int st) {
  if (st < 0 && st >= -9 && recur_py_errors[-st]) return recur_py_errors[-st];
  if (st == RECUR_ERR_INTERNAL && recur_py_errors[10]) return recur_py_errors[10];
  return recur_py_errors[0] ? recur_py_errors[0] : PyExc_RuntimeError;
}

/* Raises the exception of status st with `message`; sets its `status` attribute. */
static void recur_py_raise_message(int st, const char *message) {
  PyObject *cls = recur_py_error_class(st);
  PyObject *msg = PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message), "replace");
  PyObject *exc = msg ? PyObject_CallFunctionObjArgs(cls, msg, NULL) : NULL;
  Py_XDECREF(msg);
  if (!exc) return; /* the failure to build it is the pending exception */
  {
    PyObject *code = PyLong_FromLong(st);
    if (code) {
      PyObject_SetAttrString(exc, "status", code);
      Py_DECREF(code);
    }
  }
  PyErr_SetObject(cls, exc);
  Py_DECREF(exc);
}

static void recur_py_raise(int st) { recur_py_raise_message(st, recur_last_error()); }

static int recur_py_init_errors(PyObject *m) {
  static const struct { int index; const char *name; const char *doc; PyObject **base; } defs[] = {
    {1, "InvalidArgumentError", "An argument recur cannot take (RECUR_ERR_INVALID_ARGUMENT).", &PyExc_ValueError},
    {2, "ShapeError", "A length or dimension that does not agree (RECUR_ERR_SHAPE).", &PyExc_ValueError},
    {3, "UnsupportedError", "Valid Keras that recur does not run (RECUR_ERR_UNSUPPORTED).", NULL},
    {4, "ParseError", "Malformed JSON (RECUR_ERR_PARSE).", &PyExc_ValueError},
    {5, "StateError", "A closed object, or one that cannot do this (RECUR_ERR_STATE).", NULL},
    {6, "OutOfMemoryError", "recur could not allocate (RECUR_ERR_OUT_OF_MEMORY).", &PyExc_MemoryError},
    {7, "IOError", "File access; a corrupt, truncated or hostile model file (RECUR_ERR_IO).", &PyExc_OSError},
    {8, "LimitError", "Over a resource limit (RECUR_ERR_LIMIT; recur.set_limit raises it).", NULL},
    {9, "CancelledError", "A cancelled call (RECUR_ERR_CANCELLED).", NULL},
    {10, "InternalError", "A bug in recur; the message says what happened (RECUR_ERR_INTERNAL).", NULL},
  };
  size_t i;
  recur_py_errors[0] = PyErr_NewExceptionWithDoc(
      "recur.RecurError",
      "A failed recur call: `status` is the C ABI's status, str(error) the library's message.", PyExc_Exception,
      NULL);
  if (!recur_py_errors[0] || PyModule_AddObject(m, "RecurError", recur_py_errors[0]) < 0) return -1;
  Py_INCREF(recur_py_errors[0]);
  for (i = 0; i < sizeof defs / sizeof defs[0]; ++i) {
    char qual[64];
    PyObject *bases = defs[i].base ? PyTuple_Pack(2, recur_py_errors[0], *defs[i].base)
                                   : PyTuple_Pack(1, recur_py_errors[0]);
    if (!bases) return -1;
    snprintf(qual, sizeof qual, "recur.%s", defs[i].name);
    recur_py_errors[defs[i].index] = PyErr_NewExceptionWithDoc(qual, defs[i].doc, bases, NULL);
    Py_DECREF(bases);
    if (!recur_py_errors[defs[i].index]) return -1;
    /* The class's status, so that an instance raised from Python code carries it too. */
    {
      PyObject *code = PyLong_FromLong(defs[i].index == 10 ? RECUR_ERR_INTERNAL : -defs[i].index);
      int bad = !code || PyObject_SetAttrString(recur_py_errors[defs[i].index], "status", code) < 0;
      Py_XDECREF(code);
      if (bad) return -1;
    }
    Py_INCREF(recur_py_errors[defs[i].index]);
    if (PyModule_AddObject(m, defs[i].name, recur_py_errors[defs[i].index]) < 0) return -1;
  }
  return 0;
}

/* A buffer of `itemsize`-byte elements of one of `formats`, C-contiguous; writable if asked.
 * None gives NULL/0. `what` names the argument in the message. */
static int recur_py_get_buffer(PyObject *obj, Py_buffer *view, int writable, Py_ssize_t itemsize,
                               const char *formats, const char *what, void **data, size_t *len) {
  const char *f;
  view->obj = NULL;
  *data = NULL;
  *len = 0;
  if (obj == Py_None) return 0;
  if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0) {
    PyErr_Clear();
    recur_py_raise_message(RECUR_ERR_INVALID_ARGUMENT, what);
    return -1;
  }
  f = view->format ? view->format : "B";
  if (*f == '<' || *f == '=' || *f == '@') ++f;
  if (view->itemsize != itemsize || !strchr(formats, *f) || f[0] == '\0' || f[1] != '\0') {
    PyBuffer_Release(view);
    view->obj = NULL;
    recur_py_raise_message(RECUR_ERR_INVALID_ARGUMENT, what);
    return -1;
  }
  *data = view->buf;
  *len = (size_t)(view->len / itemsize);
  return 0;
}

static void recur_py_release(Py_buffer *view) {
  if (view->obj) PyBuffer_Release(view);
}

static PyObject *recur_py_str(const char *s) {
  if (!s) Py_RETURN_NONE;
  return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}
%}

%init %{
  if (recur_py_init_errors(m) < 0) return NULL;
%}

/* ---- status -> exception ------------------------------------------------------------------ */
%typemap(out) recur_rc %{
  if ($1 != RECUR_OK) {
    recur_py_raise((int)$1);
    SWIG_fail;
  }
  $result = SWIG_Py_Void();
%}
%typemap(in, numinputs = 0) recur_rc *st (recur_rc temp) %{
  temp = RECUR_OK;
  $1 = &temp;
%}
%typemap(argout) recur_rc *st %{
  if (temp$argnum != RECUR_OK) {
    Py_XDECREF($result);
    $result = NULL;
    recur_py_raise((int)temp$argnum);
    SWIG_fail;
  }
%}

/* ---- tensors: the buffer protocol, no copy ------------------------------------------------- */
%typemap(in) (const float *BUF, size_t LEN) (Py_buffer view, void *data, size_t n) %{
  if (recur_py_get_buffer($input, &view, 0, 4, "f", "$1_name: expected a C-contiguous float32 buffer (numpy.float32) or None", &data, &n) < 0) SWIG_fail;
  $1 = (float *)data;
  $2 = n;
%}
%typemap(freearg) (const float *BUF, size_t LEN) %{ recur_py_release(&view$argnum); %}

%typemap(in) (float *BUF, size_t LEN) (Py_buffer view, void *data, size_t n) %{
  if (recur_py_get_buffer($input, &view, 1, 4, "f", "$1_name: expected a writable C-contiguous float32 buffer (numpy.float32) or None", &data, &n) < 0) SWIG_fail;
  $1 = (float *)data;
  $2 = n;
%}
%typemap(freearg) (float *BUF, size_t LEN) %{ recur_py_release(&view$argnum); %}

%typemap(in) (const uint8_t *BUF, size_t LEN) (Py_buffer view, void *data, size_t n) %{
  if (recur_py_get_buffer($input, &view, 0, 1, "Bb?c", "$1_name: expected a C-contiguous buffer of bytes (numpy.uint8 or bool) or None", &data, &n) < 0) SWIG_fail;
  $1 = (uint8_t *)data;
  $2 = n;
%}
%typemap(freearg) (const uint8_t *BUF, size_t LEN) %{ recur_py_release(&view$argnum); %}
%apply (const float *BUF, size_t LEN) {
  (const float *input, size_t input_len), (const float *states, size_t states_len),
  (const float *initial_state, size_t initial_state_len)
};
%apply (float *BUF, size_t LEN) { (float *output, size_t output_len), (float *final_state, size_t final_state_len) };
%apply (const uint8_t *BUF, size_t LEN) { (const uint8_t *mask, size_t mask_len), (const uint8_t *bytes, size_t bytes_len) };
/* A writable bytes buffer (bytearray): model stream snapshots (since 0.9). */
%typemap(in) (uint8_t *out_bytes, size_t capacity) (Py_buffer view, void *data, size_t n) %{
  if (recur_py_get_buffer($input, &view, 1, 1, "Bbc", "$1_name: expected a writable C-contiguous bytes buffer (bytearray)", &data, &n) < 0) SWIG_fail;
  $1 = (uint8_t *)data;
  $2 = n;
%}
%typemap(freearg) (uint8_t *out_bytes, size_t capacity) %{ recur_py_release(&view$argnum); %}

/* A sequence of Python ints: the timesteps of each input, the states of forward_states. */
%define RECUR_PY_INT_ARRAY(CTYPE, NAME, COUNT, COUNT_NAME)
%typemap(in) (const CTYPE *NAME, COUNT COUNT_NAME) (CTYPE *arr = NULL) %{
  {
    Py_ssize_t i, n;
    PyObject *seq = PySequence_Fast($input, "$1_name: expected a sequence of integers");
    if (!seq) SWIG_fail;
    n = PySequence_Fast_GET_SIZE(seq);
    if (n > INT32_MAX) n = INT32_MAX;
    arr = (CTYPE *)malloc(sizeof(CTYPE) * (size_t)(n > 0 ? n : 1));
    if (!arr) { Py_DECREF(seq); PyErr_NoMemory(); SWIG_fail; }
    for (i = 0; i < n; ++i) {
      long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, i));
      if (v == -1 && PyErr_Occurred()) { Py_DECREF(seq); SWIG_fail; }
      arr[i] = (CTYPE)v;
    }
    Py_DECREF(seq);
    $1 = arr;
    $2 = (COUNT)n;
  }
%}
%typemap(freearg) (const CTYPE *NAME, COUNT COUNT_NAME) %{ free(arr$argnum); %}
%enddef
RECUR_PY_INT_ARRAY(int32_t, timesteps, int32_t, num_timesteps)
RECUR_PY_INT_ARRAY(long long, handles, int32_t, num_handles)

/* ---- out-parameters -> return values -------------------------------------------------------- */
%include <typemaps.i>
%apply int32_t *OUTPUT {
  int32_t *count, int32_t *num_threads, int32_t *stateful, int32_t *sequence, int32_t *dtype, int32_t *rank,
  int32_t *token_ids, int32_t *input_size, int32_t *output_size, int32_t *recurrent, int32_t *num_states,
  int32_t *batch, int32_t *units, int32_t *ndims
};
%apply size_t *OUTPUT { size_t *out_len, size_t *len, size_t *inputs_len, size_t *outputs_len };
%apply long long *OUTPUT { int64_t *dim0, int64_t *dim1 };
%apply unsigned long long *OUTPUT {
  uint64_t *value, uint64_t *layers, uint64_t *states, uint64_t *models, uint64_t *model_states
};

%typemap(in, numinputs = 0) const char ** (const char *temp = NULL) %{ $1 = ($1_ltype)&temp; %}
%typemap(argout) const char ** %{ $result = SWIG_Python_AppendOutput($result, recur_py_str(temp$argnum)); %}

/* dims: RECUR_MAX_RANK values back as a tuple (the package keeps the first `rank`). */
%typemap(in, numinputs = 0) (int64_t *dims, int32_t dims_cap) (int64_t temp[RECUR_MAX_RANK]) %{
  memset(temp, 0, sizeof temp);
  $1 = temp;
  $2 = RECUR_MAX_RANK;
%}
%typemap(argout) (int64_t *dims, int32_t dims_cap) %{
  {
    int k;
    PyObject *t = PyTuple_New(RECUR_MAX_RANK);
    if (!t) SWIG_fail;
    for (k = 0; k < RECUR_MAX_RANK; ++k) PyTuple_SET_ITEM(t, k, PyLong_FromLongLong((long long)temp$argnum[k]));
    $result = SWIG_Python_AppendOutput($result, t);
  }
%}

/* The info structs come back as dicts. */
%typemap(in, numinputs = 0) recur_layer_info *info (recur_layer_info temp) %{
  memset(&temp, 0, sizeof temp);
  $1 = &temp;
%}
%typemap(argout) recur_layer_info *info %{
  $result = SWIG_Python_AppendOutput($result, Py_BuildValue(
      "{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i}", "type", temp$argnum.type, "dialect",
      temp$argnum.dialect, "units", temp$argnum.units, "input_size", temp$argnum.input_size, "num_states",
      temp$argnum.num_states, "num_weights", temp$argnum.num_weights, "return_sequences",
      temp$argnum.return_sequences, "return_state", temp$argnum.return_state, "go_backwards",
      temp$argnum.go_backwards, "stateful", temp$argnum.stateful, "time_major", temp$argnum.time_major,
      "batch_size", temp$argnum.batch_size, "implementation", temp$argnum.implementation, "reset_after",
      temp$argnum.reset_after));
%}
%typemap(in, numinputs = 0) recur_model_info *info (recur_model_info temp) %{
  memset(&temp, 0, sizeof temp);
  $1 = &temp;
%}
%typemap(argout) recur_model_info *info %{
  {
    PyObject *kv = recur_py_str(temp$argnum.keras_version), *un = recur_py_str(temp$argnum.unsupported);
    $result = SWIG_Python_AppendOutput($result, Py_BuildValue(
        "{s:i,s:N,s:i,s:i,s:N,s:i,s:i,s:i,s:i,s:i}", "dialect", temp$argnum.dialect, "keras_version", kv,
        "num_layers", temp$argnum.num_layers, "runnable", temp$argnum.runnable, "unsupported", un, "input_size",
        temp$argnum.input_size, "takes_token_ids", temp$argnum.takes_token_ids, "output_size",
        temp$argnum.output_size, "returns_sequences", temp$argnum.returns_sequences, "num_outputs",
        temp$argnum.num_outputs));
  }
%}

/* Python names: the classes as the package imports them. */
%rename(Layer) RecurLayer;
%rename(State) RecurState;
%rename(Model) RecurModel;
%rename(ModelState) RecurModelState;
%rename(LayerOptions) RecurLayerOptions;

/* ---- named runs, run options and the log (C ABI 0.6) ---------------------------------------- */
%{
typedef struct recur_run_options RecurRunOptions;

/* One named input: (name: bytes, dtype: int, data, dims: tuple, mask or None). data is a
 * buffer, or for RECUR_DTYPE_STRING a sequence of bytes objects (UTF-8, one per element). */
typedef struct {
  Py_buffer data, mask, out;
  PyObject *texts; /* the PySequence_Fast of a string input */
  const char **ptrs;
} recur_py_held;

/* The states of a many-state step (ops 4 and 5 of recur_py_named). */
typedef struct {
  recur_model_state **p;
  int32_t n;
} recur_py_states;

static PyObject *recur_py_named(int op, void *handle, PyObject *inputs, PyObject *outputs, void *options) {
  PyObject *in_seq = NULL, *out_seq = NULL, *result = NULL;
  /* Calls with a few inputs and outputs (nearly all) use the stack: no allocation per call. */
  enum { STACK = 8 };
  recur_tensor in_stack[STACK];
  recur_output out_stack[STACK];
  recur_py_held held_stack[2 * STACK];
  recur_tensor *in = NULL;
  recur_output *out = NULL;
  recur_py_held *held = NULL;
  Py_ssize_t n = 0, m = 0, i;
  recur_status st = RECUR_OK;
  int ok = 0;

  in_seq = PySequence_Fast(inputs, "inputs: expected a sequence of (name, dtype, data, dims, mask) tuples");
  if (!in_seq) goto done;
  out_seq = PySequence_Fast(outputs, "outputs: expected a sequence of (name, buffer) tuples");
  if (!out_seq) goto done;
  n = PySequence_Fast_GET_SIZE(in_seq);
  m = PySequence_Fast_GET_SIZE(out_seq);
  in = n <= STACK ? in_stack : (recur_tensor *)calloc((size_t)n, sizeof *in);
  out = m <= STACK ? out_stack : (recur_output *)calloc((size_t)m, sizeof *out);
  /* one per input and one per output (its buffer), held until the call returns */
  held = n + m <= 2 * STACK ? held_stack : (recur_py_held *)calloc((size_t)(n + m), sizeof *held);
  if (held == held_stack) memset(held_stack, 0, sizeof(recur_py_held) * (size_t)(n + m));
  if (!in || !out || !held) {
    PyErr_NoMemory();
    goto done;
  }
  for (i = 0; i < n; ++i) {
    PyObject *name, *data, *dims, *mask;
    int dtype;
    Py_ssize_t k, rank;
    void *p;
    size_t len;
    recur_tensor_init(&in[i], RECUR_TENSOR_VERSION);
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(in_seq, i), "SiOOO", &name, &dtype, &data, &dims, &mask)) goto done;
    in[i].name = PyBytes_AS_STRING(name);
    in[i].dtype = dtype;
    if (!PyTuple_Check(dims) || (rank = PyTuple_GET_SIZE(dims)) > RECUR_MAX_RANK) {
      PyErr_SetString(PyExc_TypeError, "dims: expected a tuple of at most RECUR_MAX_RANK integers");
      goto done;
    }
    in[i].rank = (int32_t)rank;
    for (k = 0; k < rank; ++k) {
      in[i].dims[k] = PyLong_AsLongLong(PyTuple_GET_ITEM(dims, k));
      if (in[i].dims[k] == -1 && PyErr_Occurred()) goto done;
    }
    if (dtype == RECUR_DTYPE_STRING) {
      Py_ssize_t count;
      held[i].texts = PySequence_Fast(data, "texts: expected a sequence of bytes");
      if (!held[i].texts) goto done;
      count = PySequence_Fast_GET_SIZE(held[i].texts);
      held[i].ptrs = (const char **)malloc(sizeof(char *) * (size_t)(count > 0 ? count : 1));
      if (!held[i].ptrs) {
        PyErr_NoMemory();
        goto done;
      }
      for (k = 0; k < count; ++k) {
        PyObject *b = PySequence_Fast_GET_ITEM(held[i].texts, k);
        if (!PyBytes_Check(b)) {
          PyErr_SetString(PyExc_TypeError, "texts: expected bytes");
          goto done;
        }
        held[i].ptrs[k] = PyBytes_AS_STRING(b);
      }
      in[i].data = held[i].ptrs;
      in[i].length = (size_t)count;
    } else if (data != Py_None) {
      Py_ssize_t itemsize = dtype == RECUR_DTYPE_INT64 ? 8 : 4;
      const char *formats = dtype == RECUR_DTYPE_FLOAT32 ? "f" : dtype == RECUR_DTYPE_INT32 ? "iil" : "qlL";
      if (dtype != RECUR_DTYPE_FLOAT32 && dtype != RECUR_DTYPE_INT32 && dtype != RECUR_DTYPE_INT64) formats = "f";
      if (recur_py_get_buffer(data, &held[i].data, 0, itemsize, formats,
                              "data: expected a C-contiguous buffer of the tensor's dtype", &p, &len) < 0)
        goto done;
      in[i].data = p;
      in[i].length = len;
    }
    if (recur_py_get_buffer(mask, &held[i].mask, 0, 1, "Bb?c", "mask: expected a C-contiguous uint8 or bool buffer", &p, &len) < 0)
      goto done;
    in[i].mask = (const uint8_t *)p;
    in[i].mask_length = len;
  }
  for (i = 0; i < m; ++i) {
    PyObject *name, *buf;
    recur_output_init(&out[i], RECUR_OUTPUT_VERSION);
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(out_seq, i), "SO", &name, &buf)) goto done;
    out[i].name = PyBytes_AS_STRING(name);
    if (buf != Py_None) {
      void *p;
      size_t len;
      if (recur_py_get_buffer(buf, &held[n + i].out, 1, 4, "f", "outputs: expected a writable C-contiguous float32 buffer", &p, &len) < 0)
        goto done;
      out[i].data = (float *)p;
      out[i].capacity = len;
    }
  }
  Py_BEGIN_ALLOW_THREADS
  switch (op) {
    case 0: st = recur_model_run_named((const recur_model *)handle, in, (int32_t)n, out, (int32_t)m, (const recur_run_options *)options); break;
    case 1: st = recur_model_output_shapes((const recur_model *)handle, in, (int32_t)n, out, (int32_t)m); break;
    case 2: st = recur_model_state_step_named((recur_model_state *)handle, in, (int32_t)n, out, (int32_t)m, (const recur_run_options *)options); break;
    case 3: st = recur_model_state_output_shapes((const recur_model_state *)handle, in, (int32_t)n, out, (int32_t)m); break;
    case 4: st = recur_model_states_step_named(((recur_py_states *)handle)->p, ((recur_py_states *)handle)->n, in, (int32_t)n, out, (int32_t)m, (const recur_run_options *)options); break;
    default: st = recur_model_states_output_shapes((const recur_model_state *const *)((recur_py_states *)handle)->p, ((recur_py_states *)handle)->n, in, (int32_t)n, out, (int32_t)m); break;
  }
  Py_END_ALLOW_THREADS
  if (st != RECUR_OK) {
    recur_py_raise((int)st);
    goto done;
  }
  ok = 1;
done:
  if (ok) {
    result = PyList_New(m);
    for (i = 0; result && i < m; ++i) {
      int k;
      PyObject *dims = PyTuple_New(out[i].rank);
      if (!dims) {
        Py_CLEAR(result);
        break;
      }
      for (k = 0; k < out[i].rank; ++k) PyTuple_SET_ITEM(dims, k, PyLong_FromLongLong((long long)out[i].dims[k]));
      PyList_SET_ITEM(result, i, dims);
    }
  }
  for (i = 0; held && i < n + m; ++i) {
    recur_py_release(&held[i].out);
    recur_py_release(&held[i].data);
    recur_py_release(&held[i].mask);
    Py_XDECREF(held[i].texts);
    free((void *)held[i].ptrs);
  }
  if (held != held_stack) free(held);
  if (in != in_stack) free(in);
  if (out != out_stack) free(out);
  Py_XDECREF(in_seq);
  Py_XDECREF(out_seq);
  return result;
}

/* ops 4 and 5 of recur_py_named over a sequence of ModelState objects. */
static PyObject *recur_py_many(int op, PyObject *states, PyObject *inputs, PyObject *outputs, void *options) {
  PyObject *seq = PySequence_Fast(states, "states: expected a sequence of ModelState"), *result = NULL;
  recur_py_states a = {NULL, 0};
  Py_ssize_t n, i;
  if (!seq) return NULL;
  n = PySequence_Fast_GET_SIZE(seq);
  if (n > INT32_MAX) {
    PyErr_SetString(PyExc_OverflowError, "states: more than 2^31 - 1 states");
    goto done;
  }
  a.p = (recur_model_state **)malloc(sizeof(recur_model_state *) * (size_t)(n > 0 ? n : 1));
  if (!a.p) {
    PyErr_NoMemory();
    goto done;
  }
  for (i = 0; i < n; ++i) {
    void *ptr = NULL;
    if (!SWIG_IsOK(SWIG_ConvertPtr(PySequence_Fast_GET_ITEM(seq, i), &ptr, SWIGTYPE_p_RecurModelState, 0))) {
      PyErr_Format(PyExc_TypeError, "states[%zd]: expected a ModelState", i);
      goto done;
    }
    a.p[i] = (recur_model_state *)ptr;
  }
  a.n = (int32_t)n;
  result = recur_py_named(op, &a, inputs, outputs, options);
done:
  free(a.p);
  Py_DECREF(seq);
  return result;
}

/* The log callback: user_data is the Python callable (a strong reference the module keeps). */
static PyObject *recur_py_log_handler;

static void recur_py_log(void *user_data, int32_t level, const char *message) {
  PyGILState_STATE g = PyGILState_Ensure();
  PyObject *msg = recur_py_str(message);
  if (msg) {
    PyObject *r = PyObject_CallFunction((PyObject *)user_data, "iO", (int)level, msg);
    Py_XDECREF(r);
    Py_DECREF(msg);
  }
  /* A handler that raises must not disturb the call that logged: report it as unraisable. */
  if (PyErr_Occurred()) PyErr_WriteUnraisable((PyObject *)user_data);
  PyGILState_Release(g);
}
%}

/* The rename must come before the declaration, or SWIG keeps the C name. */
%rename(RunOptions) RecurRunOptions;
%nodefaultctor RecurRunOptions;
%nodefaultdtor RecurRunOptions;
typedef struct {} RecurRunOptions;
%newobject RecurRunOptions::create;
%extend RecurRunOptions {
  static RecurRunOptions *create(recur_rc *st) {
    recur_run_options *o = NULL;
    *st = recur_run_options_create(&o);
    return o;
  }
  ~RecurRunOptions() { recur_run_options_destroy($self); }
  recur_rc cancel() { return recur_run_options_cancel($self); }
  recur_rc reset() { return recur_run_options_reset($self); }
  recur_rc is_cancelled(int32_t *count) { return recur_run_options_is_cancelled($self, count); }
  /* Each call's timeout in seconds, 0 for none (since 0.8). */
  recur_rc set_timeout(double seconds) { return recur_run_options_set_timeout($self, seconds); }
  double get_timeout() {
    double s = 0;
    recur_run_options_get_timeout($self, &s); /* cannot fail on a live handle */
    return s;
  }
}

/* These hold Python objects, so they keep the GIL and release it themselves around the C call. */
%nothread recur_py_run_named;
%nothread recur_py_output_shapes;
%nothread recur_py_step_named;
%nothread recur_py_step_output_shapes;
%nothread recur_py_set_log_handler;
%nothread recur_py_states_step_named;
%nothread recur_py_states_output_shapes;
%inline %{
/* inputs: [(name: bytes, dtype, data, dims: tuple, mask)]; outputs: [(name: bytes, buffer)].
 * Returns each output's dims (a list of tuples). */
PyObject *recur_py_run_named(RecurModel *model, PyObject *inputs, PyObject *outputs, RecurRunOptions *options) {
  return recur_py_named(0, model, inputs, outputs, options);
}
PyObject *recur_py_output_shapes(RecurModel *model, PyObject *inputs, PyObject *outputs) {
  return recur_py_named(1, model, inputs, outputs, NULL);
}
PyObject *recur_py_step_named(RecurModelState *state, PyObject *inputs, PyObject *outputs, RecurRunOptions *options) {
  return recur_py_named(2, state, inputs, outputs, options);
}
PyObject *recur_py_step_output_shapes(RecurModelState *state, PyObject *inputs, PyObject *outputs) {
  return recur_py_named(3, state, inputs, outputs, NULL);
}
/* handler(level, message) or None. The call may come from any thread recur runs on. */
PyObject *recur_py_set_log_handler(PyObject *handler, int32_t min_level) {
  recur_status st;
  PyObject *old = recur_py_log_handler;
  if (handler == Py_None) handler = NULL;
  if (handler && !PyCallable_Check(handler)) {
    PyErr_SetString(PyExc_TypeError, "handler: expected a callable(level, message) or None");
    return NULL;
  }
  Py_XINCREF(handler);
  /* recur_set_log_callback waits for running callbacks, which need the GIL: release it. */
  Py_BEGIN_ALLOW_THREADS
  st = recur_set_log_callback(handler ? recur_py_log : NULL, handler, min_level);
  Py_END_ALLOW_THREADS
  if (st != RECUR_OK) {
    Py_XDECREF(handler);
    recur_py_raise((int)st);
    return NULL;
  }
  recur_py_log_handler = handler;
  Py_XDECREF(old);
  Py_RETURN_NONE;
}
int32_t recur_py_dtype_string(void) { return RECUR_DTYPE_STRING; }
/* Many streams of one model in one step (recur_model_states_step_named): states is a sequence of
 * ModelState; inputs and outputs hold the rows of every state, one after another. */
PyObject *recur_py_states_step_named(PyObject *states, PyObject *inputs, PyObject *outputs, RecurRunOptions *options) {
  return recur_py_many(4, states, inputs, outputs, options);
}
PyObject *recur_py_states_output_shapes(PyObject *states, PyObject *inputs, PyObject *outputs) {
  return recur_py_many(5, states, inputs, outputs, NULL);
}
%}
