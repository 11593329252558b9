// SPDX-License-Identifier: Apache-2.0
/*
 * Go idioms for bindings/recur.i (included before the classes).
 *
 * SWIG writes this wrapper into an internal package (recur.dev/recur/internal/recurswig), so the
 * generated, SWIG-shaped API is not importable by users; the public package recur.dev/recur is
 * hand-written Go on top of it (bindings/go/recur.go).
 *
 * - recur_rc (a status) becomes `error`. The C wrapper reads recur_last_error() INSIDE the same
 *   cgo call as the failing function, so the message always comes from the OS thread that
 *   failed, even though a goroutine can move between threads between two cgo calls. On success
 *   nothing is allocated and no second cgo call is made; on failure the wrapper returns
 *   "<status>\n<message>" in malloc'd memory that the Go side copies and frees. No panic is ever
 *   raised (and certainly never from inside a C++ catch block).
 * - Tensor pointers become Go slices, passed without a copy: C gets the slice's own backing
 *   array (the length is its own argument, always len(slice) from the hand-written package). recur never keeps a pointer after a call, and float32/uint8
 *   slices hold no Go pointers, so this satisfies cgo's pointer rules (checked with
 *   GODEBUG=cgocheck=2). A nil slice passes NULL, which is what the C ABI wants for "no mask",
 *   "no initial state" and "no final state".
 * - Scalar out-parameters become Go pointers (*int32, *int64, *uint64), strings returned through
 *   `const char **` become *string (copied into Go memory in the same call).
 */

%{
#include <stdio.h>
#include <string.h>

/* "" (no allocation) for RECUR_OK; "<status>\n<message>" in malloc'd memory otherwise. The
 * message is read here, on the thread that just failed. */
/* A message of the Go glue's own (a failure before recur was called), read instead of
 * recur_last_error() by the next recur_go_status on this thread. */
static __thread const char *recur_go_own_error;

static _gostring_ recur_go_status(recur_status st) {
  _gostring_ r;
  r.p = NULL;
  r.n = 0;
  if (st != RECUR_OK) {
    const char *msg = recur_go_own_error ? recur_go_own_error : recur_last_error();
    size_t n = strlen(msg);
    char *p = (char *)malloc(n + 16);
    if (p) {
      int k = sprintf(p, "%d\n", (int)st);
      memcpy(p + k, msg, n);
      r.p = p;
      r.n = (intgo)(k + n);
    } else {
      /* Still report the failure: a 1-byte static string means "out of memory" (a real
       * message is at least "-1\n"), and the Go side does not free it. */
      static char oom[] = "!";
      r.p = oom;
      r.n = 1;
    }
  }
  recur_go_own_error = NULL;
  return r;
}
%}

/* ---- status -> error ---------------------------------------------------------------------- */
%typemap(gotype) recur_rc "error"
%typemap(imtype) recur_rc "string"
%typemap(out) recur_rc %{ $result = recur_go_status((recur_status)$1); %}
%typemap(goout) recur_rc %{ $result = statusError($1) %}
/* The factories' status out-parameter: *recur_rc in C, *error in Go. */
%typemap(gotype) recur_rc *st "*error"
%typemap(imtype) recur_rc *st "*string"
%typemap(in) recur_rc *st (recur_rc temp) %{ temp = RECUR_OK; $1 = &temp; %}
%typemap(argout) recur_rc *st %{ *$input = recur_go_status((recur_status)temp$argnum); %}
%typemap(goin) recur_rc *st %{ var swig_st_$1 string
  $result = &swig_st_$1 %}
%typemap(goargout) recur_rc *st %{ *$1 = statusError(*$input) %}

%insert(go_wrapper) %{
// Error is the error of a failed recur call: the C ABI's status (one of the ERR_* constants)
// and the library's message, read on the OS thread that failed. Cause is what made a cancelled
// call stop (the context's error), nil otherwise; Unwrap returns it, so that errors.Is(err,
// context.Canceled) holds for a call its context cancelled.
type Error struct {
	Status int
	Msg    string
	Cause  error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return "recur: " + StatusString(e.Status) + ": " + e.Msg + " (" + e.Cause.Error() + ")"
	}
	return "recur: " + StatusString(e.Status) + ": " + e.Msg
}

// Unwrap returns Cause.
func (e *Error) Unwrap() error { return e.Cause }

// StatusString names a status code, like recur_status_string.
func StatusString(status int) string {
	switch status {
	case 0:
		return "ok"
	case -1:
		return "invalid argument"
	case -2:
		return "shape mismatch"
	case -3:
		return "unsupported"
	case -4:
		return "parse error"
	case -5:
		return "invalid state"
	case -6:
		return "out of memory"
	case -7:
		return "I/O error"
	case -8:
		return "over a resource limit"
	case -9:
		return "cancelled"
	case -100:
		return "internal error"
	}
	return "status " + itoa(status)
}

func itoa(v int) string {
	neg := v < 0
	if neg {
		v = -v
	}
	var b [24]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

type swigGoString struct {
	p uintptr
	n int
}

// statusError turns the wrapper's status string into nil or an *Error, copying the C memory
// and freeing it. The empty string (success) allocated nothing.
func statusError(s string) error {
	if len(s) == 0 {
		return nil
	}
	if len(s) == 1 {
		return &Error{Status: -6, Msg: "out of memory while reporting an error"}
	}
	raw := *(*swigGoString)(unsafe.Pointer(&s))
	msg := string((*[1 << 30]byte)(unsafe.Pointer(raw.p))[:raw.n:raw.n])
	Swig_free(raw.p)
	status, i := 0, 0
	neg := false
	if i < len(msg) && msg[i] == '-' {
		neg = true
		i++
	}
	for i < len(msg) && msg[i] >= '0' && msg[i] <= '9' {
		status = status*10 + int(msg[i]-'0')
		i++
	}
	if neg {
		status = -status
	}
	if i < len(msg) && msg[i] == '\n' {
		i++
	}
	return &Error{Status: status, Msg: msg[i:]}
}
%}

/* ---- slices ------------------------------------------------------------------------------- */
/* A tensor argument is a Go slice passed as an unsafe.Pointer to its first element (nil for an
 * empty slice, which the C ABI reads as NULL), next to its length argument, which the
 * hand-written package always passes as len(slice). Not SWIG's _goslice_ struct: cgo checks
 * struct arguments that hold pointers by converting them to interface{}, which allocates on every
 * call; an unsafe.Pointer argument is checked without allocating, so a steady-state step
 * allocates nothing. */
%define RECUR_GO_SLICE(CTYPE, GOTYPE, NAMES...)
%typemap(gotype) CTYPE *SLICEPTR "GOTYPE"
%typemap(imtype) CTYPE *SLICEPTR "unsafe.Pointer"
%typemap(goin) CTYPE *SLICEPTR %{ $result = nil
  if len($input) > 0 {
    $result = unsafe.Pointer(&$input[0])
  } %}
%typemap(in) CTYPE *SLICEPTR %{ $1 = ($1_ltype)$input; %}
%apply CTYPE *SLICEPTR { NAMES };
%enddef

RECUR_GO_SLICE(const float, []float32, const float *input, const float *initial_state, const float *states)
RECUR_GO_SLICE(float, []float32, float *output, float *final_state)
RECUR_GO_SLICE(const uint8_t, []byte, const uint8_t *mask, const uint8_t *bytes)
RECUR_GO_SLICE(uint8_t, []byte, uint8_t *out_bytes)
/* Per-input timesteps of the model calls, and the dims a model call fills. */
RECUR_GO_SLICE(const int32_t, []int32, const int32_t *timesteps)
RECUR_GO_SLICE(int64_t, []int64, int64_t *dims)
/* The C handles of forward_states' states (C memory addresses, not Go pointers). */
RECUR_GO_SLICE(const long long, []int64, const long long *handles)

/* Lengths and counts as Go ints. */
%apply int { size_t input_len, size_t initial_state_len, size_t states_len, size_t output_len,
             size_t final_state_len, size_t mask_len, size_t bytes_len, size_t capacity };

/* The state argument of the step, as the concrete handle type: passing SWIG's State interface
 * would box the handle (an allocation per call). */
%typemap(gotype) RecurState *state "SwigcptrState"
%typemap(imtype) RecurState *state "uintptr"
%typemap(goin) RecurState *state %{ $result = uintptr($input) %}

/* ---- scalar out-parameters ---------------------------------------------------------------- */
%define RECUR_GO_OUT(CTYPE, GOTYPE, NAMES...)
%typemap(gotype) CTYPE *OUTVAL "*GOTYPE"
%typemap(imtype) CTYPE *OUTVAL "*GOTYPE"
%typemap(in) CTYPE *OUTVAL (CTYPE temp) %{ temp = 0; $1 = &temp; %}
%typemap(argout) CTYPE *OUTVAL %{ if ($input) *$input = temp$argnum; %}
%apply CTYPE *OUTVAL { NAMES };
%enddef

RECUR_GO_OUT(int32_t, int32, int32_t *count, int32_t *ndims, int32_t *num_states, int32_t *batch,
             int32_t *units, int32_t *input_size, int32_t *output_size, int32_t *recurrent,
             int32_t *num_threads, int32_t *rank, int32_t *token_ids, int32_t *stateful,
             int32_t *sequence, int32_t *dtype)
RECUR_GO_OUT(int64_t, int64, int64_t *dim0, int64_t *dim1)
RECUR_GO_OUT(size_t, uint64, size_t *out_len, size_t *len, size_t *inputs_len, size_t *outputs_len)
RECUR_GO_OUT(uint64_t, uint64, uint64_t *value, uint64_t *layers, uint64_t *states, uint64_t *models,
             uint64_t *model_states)

/* const char ** (names owned by the library): copied into a Go string in the same call. */
%typemap(gotype) const char **OUTSTR "*string"
%typemap(imtype) const char **OUTSTR "*string"
%typemap(in) const char **OUTSTR (const char *temp) %{ temp = NULL; $1 = ($1_ltype)&temp; %}
%typemap(argout, fragment="AllocateString") const char **OUTSTR
%{ if ($input) *$input = Swig_AllocateString(temp$argnum ? temp$argnum : "", temp$argnum ? strlen(temp$argnum) : 0); %}
%typemap(goin) const char **OUTSTR %{ var swig_s_$1 string
  $result = &swig_s_$1 %}
%typemap(goargout, fragment="CopyString") const char **OUTSTR %{ if $1 != nil {
    *$1 = swigCopyString(*$input)
  } else {
    swigCopyString(*$input)
  } %}
%apply const char **OUTSTR { const char **name, const char **class_name, const char **config_json,
                             const char **requested, const char **backend, const char **path, const char **reason,
                             const char **device_name, const char **why };

/* Optional strings: Go has no nil string, so "" passes NULL (the C ABI's "default"). */
%typemap(in) const char *OPTSTR %{
  $1 = NULL;
  if ($input.n > 0) {
    $1 = ($1_ltype)malloc($input.n + 1);
    if ($1) {
      memcpy($1, $input.p, $input.n);
      $1[$input.n] = '\0';
    }
  }
%}
%typemap(freearg) const char *OPTSTR %{ free($1); %}
%apply const char *OPTSTR { const char *keras_version, const char *v, const char *file_name };

/* Naming: the generated package is internal; keep its names close to the C ones. */
%rename(LayerOptions) RecurLayerOptions;
%rename(Layer) RecurLayer;
%rename(State) RecurState;
%rename(Model) RecurModel;
%rename(ModelState) RecurModelState;
%rename(LayerInfo) recur_layer_info;
%rename(ModelInfo) recur_model_info;

/* ---- named runs, cancellation and the log (C ABI 0.6) --------------------------------------- */
/* Go-only glue for recur_model_run_named and its kin. cgo lets a call pass Go memory only when
 * that memory holds no Go pointers, and lets C keep none, so the Go side cannot build the
 * recur_tensor / recur_output arrays (they point at Go slices). It passes instead:
 * - records, a []int64 of plain numbers: per input RECUR_GO_IN_WORDS words (name offset, dtype,
 *   length, rank, dims[8], data ref, mask ref, mask length), then per output RECUR_GO_OUT_WORDS
 *   (name offset, data ref, capacity, then rank, dims[8] and length, written back on success);
 * - names, a []byte of NUL-terminated names that the offsets index;
 * - the data, mask and output slices themselves as RECUR_GO_SLOTS separate pointer arguments,
 *   which cgo checks and keeps alive for the call. A ref is -1 (none), a slot index, or, past
 *   the slots, the address of C memory the Go side staged the values in.
 * The arrays are built here, for the one call, and nothing is kept. */
%{
#define RECUR_GO_SLOTS 16
#define RECUR_GO_IN_WORDS 15
#define RECUR_GO_OUT_WORDS 13
#define RECUR_GO_STACK 8

enum { RECUR_GO_RUN = 0, RECUR_GO_RUN_SHAPES = 1, RECUR_GO_STEP = 2, RECUR_GO_STEP_SHAPES = 3 };
/* Many states in one step (recur_model_states_step_named): the handle is the address of C memory
 * holding the count, then that many recur_model_state pointers. */
enum { RECUR_GO_STEPS = 4, RECUR_GO_STEPS_SHAPES = 5 };

static void *recur_go_ref(int64_t ref, void *const *slots) {
  if (ref < 0) return NULL;
  if (ref < RECUR_GO_SLOTS) return slots[ref];
  return (void *)(uintptr_t)ref;
}

extern void recurGoLog(uintptr_t handler, int32_t level, char *message);

static void recur_go_log_trampoline(void *user_data, int32_t level, const char *message) {
  recurGoLog((uintptr_t)user_data, level, (char *)message);
}
%}

%typemap(gotype) void *SLOT "unsafe.Pointer"
%typemap(imtype) void *SLOT "unsafe.Pointer"
%typemap(in) void *SLOT %{ $1 = $input; %}
%apply void *SLOT { void *s0, void *s1, void *s2, void *s3, void *s4, void *s5, void *s6, void *s7,
                    void *s8, void *s9, void *s10, void *s11, void *s12, void *s13, void *s14, void *s15 };
RECUR_GO_SLICE(int64_t, []int64, int64_t *records)
RECUR_GO_SLICE(const uint8_t, []byte, const uint8_t *names)
RECUR_GO_OUT(long long, int64, long long *options_out)

%constant int GO_SLOTS = RECUR_GO_SLOTS;
%constant int GO_IN_WORDS = RECUR_GO_IN_WORDS;
%constant int GO_OUT_WORDS = RECUR_GO_OUT_WORDS;
%constant int GO_RUN = RECUR_GO_RUN;
%constant int GO_RUN_SHAPES = RECUR_GO_RUN_SHAPES;
%constant int GO_STEP = RECUR_GO_STEP;
%constant int GO_STEP_SHAPES = RECUR_GO_STEP_SHAPES;
%constant int GO_STEPS = RECUR_GO_STEPS;
%constant int GO_STEPS_SHAPES = RECUR_GO_STEPS_SHAPES;
%constant int ERR_CANCELLED = RECUR_ERR_CANCELLED;

%inline %{
/* op: RECUR_GO_RUN / _RUN_SHAPES on a model handle, RECUR_GO_STEP / _STEP_SHAPES on a model
 * state handle; options: 0 or a run options handle. */
recur_rc recur_go_named(int32_t op, long long handle, int64_t *records, int32_t num_inputs, int32_t num_outputs,
                        const uint8_t *names, long long options, void *s0, void *s1, void *s2, void *s3, void *s4,
                        void *s5, void *s6, void *s7, void *s8, void *s9, void *s10, void *s11, void *s12, void *s13,
                        void *s14, void *s15) {
  void *const slots[RECUR_GO_SLOTS] = {s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11, s12, s13, s14, s15};
  recur_tensor in_stack[RECUR_GO_STACK];
  recur_output out_stack[RECUR_GO_STACK];
  recur_tensor *in = in_stack;
  recur_output *out = out_stack;
  const char **texts[RECUR_GO_STACK] = {0}; /* a string input's pointers, the first RECUR_GO_STACK inputs */
  const char ***more_texts = NULL;
  const char *text = (const char *)names;
  recur_rc st = RECUR_OK;
  int32_t i, k;
  if (num_inputs > RECUR_GO_STACK) in = (recur_tensor *)malloc(sizeof *in * (size_t)num_inputs);
  if (num_outputs > RECUR_GO_STACK) out = (recur_output *)malloc(sizeof *out * (size_t)num_outputs);
  if (!in || !out) {
    if (in != in_stack) free(in);
    if (out != out_stack) free(out);
    recur_go_own_error = "out of memory for the run's input and output descriptors";
    return RECUR_ERR_OUT_OF_MEMORY;
  }
  for (i = 0; i < num_inputs; ++i) {
    const int64_t *r = records + (size_t)i * RECUR_GO_IN_WORDS;
    recur_tensor_init(&in[i], RECUR_TENSOR_VERSION);
    in[i].name = text + r[0];
    in[i].dtype = (int32_t)r[1];
    in[i].length = (size_t)r[2];
    in[i].rank = (int32_t)r[3];
    for (k = 0; k < RECUR_MAX_RANK; ++k) in[i].dims[k] = r[4 + k];
    in[i].data = recur_go_ref(r[12], slots);
    in[i].mask = (const uint8_t *)recur_go_ref(r[13], slots);
    in[i].mask_length = (size_t)r[14];
    if (in[i].dtype == RECUR_DTYPE_STRING && in[i].data) {
      /* The Go side sends length NUL-terminated texts one after another (no NUL inside one). */
      const char *p = (const char *)in[i].data;
      const char **ptrs = (const char **)malloc(sizeof *ptrs * ((size_t)in[i].length + 1));
      size_t e;
      if (i >= RECUR_GO_STACK && !more_texts) more_texts = (const char ***)calloc((size_t)num_inputs, sizeof *more_texts);
      if (!ptrs || (i >= RECUR_GO_STACK && !more_texts)) {
        free(ptrs);
        recur_go_own_error = "out of memory for a string input's pointers";
        st = RECUR_ERR_OUT_OF_MEMORY;
        break;
      }
      for (e = 0; e < in[i].length; ++e) {
        ptrs[e] = p;
        p += strlen(p) + 1;
      }
      in[i].data = ptrs;
      if (i < RECUR_GO_STACK) texts[i] = ptrs;
      else more_texts[i] = ptrs;
    }
  }
  for (i = 0; i < num_outputs; ++i) {
    const int64_t *r = records + (size_t)num_inputs * RECUR_GO_IN_WORDS + (size_t)i * RECUR_GO_OUT_WORDS;
    recur_output_init(&out[i], RECUR_OUTPUT_VERSION);
    out[i].name = text + r[0];
    out[i].data = (float *)recur_go_ref(r[1], slots);
    out[i].capacity = (size_t)r[2];
  }
  if (st != RECUR_OK) op = -1;
  switch (op) {
    case -1:
      break;
    case RECUR_GO_RUN:
      st = recur_model_run_named((const recur_model *)handle, in, num_inputs, out, num_outputs,
                                 (const recur_run_options *)options);
      break;
    case RECUR_GO_RUN_SHAPES:
      st = recur_model_output_shapes((const recur_model *)handle, in, num_inputs, out, num_outputs);
      break;
    case RECUR_GO_STEP:
      st = recur_model_state_step_named((recur_model_state *)handle, in, num_inputs, out, num_outputs,
                                        (const recur_run_options *)options);
      break;
    case RECUR_GO_STEP_SHAPES:
      st = recur_model_state_output_shapes((const recur_model_state *)handle, in, num_inputs, out, num_outputs);
      break;
    case RECUR_GO_STEPS:
      st = recur_model_states_step_named((recur_model_state *const *)((const int64_t *)(uintptr_t)handle + 1),
                                         (int32_t)*(const int64_t *)(uintptr_t)handle, in, num_inputs, out,
                                         num_outputs, (const recur_run_options *)options);
      break;
    default:
      st = recur_model_states_output_shapes((const recur_model_state *const *)((const int64_t *)(uintptr_t)handle + 1),
                                            (int32_t)*(const int64_t *)(uintptr_t)handle, in, num_inputs, out,
                                            num_outputs);
      break;
  }
  if (st == RECUR_OK) {
    for (i = 0; i < num_outputs; ++i) {
      int64_t *r = records + (size_t)num_inputs * RECUR_GO_IN_WORDS + (size_t)i * RECUR_GO_OUT_WORDS;
      r[3] = out[i].rank;
      for (k = 0; k < RECUR_MAX_RANK; ++k) r[4 + k] = out[i].dims[k];
      r[12] = (int64_t)out[i].length;
    }
  }
  for (i = 0; i < num_inputs && i < RECUR_GO_STACK; ++i) free((void *)texts[i]);
  for (i = RECUR_GO_STACK; more_texts && i < num_inputs; ++i) free((void *)more_texts[i]);
  free(more_texts);
  if (in != in_stack) free(in);
  if (out != out_stack) free(out);
  return st;
}

recur_rc recur_go_run_options_create(long long *options_out) {
  recur_run_options *o = NULL;
  recur_rc st = recur_run_options_create(&o);
  *options_out = (long long)(uintptr_t)o;
  return st;
}
recur_rc recur_go_run_options_cancel(long long options) {
  return recur_run_options_cancel((recur_run_options *)(uintptr_t)options);
}
void recur_go_run_options_destroy(long long options) {
  recur_run_options_destroy((recur_run_options *)(uintptr_t)options);
}
recur_rc recur_go_live_run_options(uint64_t *value) { return recur_live_run_options(value); }
recur_rc recur_go_run_options_set_timeout(long long options, double seconds) {
  return recur_run_options_set_timeout((recur_run_options *)(uintptr_t)options, seconds);
}

/* handler: 0 turns the log off, else the Go handle of the function recurGoLog calls. */
recur_rc recur_go_set_log_handler(long long handler, int32_t min_level) {
  return recur_set_log_callback(handler ? recur_go_log_trampoline : NULL, (void *)(uintptr_t)handler, min_level);
}
%}
