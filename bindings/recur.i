// SPDX-License-Identifier: Apache-2.0
/*
 * The one SWIG interface of recur, over the C ABI (recur.h), for Java, C#, Go and Python.
 *
 * This file declares the object model every language gets: Layer (sequence layers and cells),
 * State, Model (a Keras graph with any number of inputs and outputs), ModelState (one stream
 * through a whole model) and LayerOptions, as proxies of the opaque C handles. Methods keep the C
 * ABI's (pointer, length) argument pairs; each language's file maps those pairs to its own array
 * types and adds its idioms (exceptions or errors, Close/Dispose, naming):
 *   java/recur_java.i, csharp/recur_csharp.i, go/recur_go.i, python/recur_python.i
 *
 * Every method that can fail returns recur_rc, a status that each language turns into its error
 * form INSIDE the same native call, so the thread-local message is read on the thread that
 * failed (this matters for goroutines, which can move between OS threads).
 */
%module recur

%{
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "recur/recur.h"

/* SWIG-side names of the opaque handles. They must differ from the C names, or SWIG's %extend
 * helpers (<struct>_<method>) would collide with the C ABI's own functions. */
typedef struct recur_layer RecurLayer;
typedef struct recur_state RecurState;
typedef struct recur_model RecurModel;
typedef struct recur_model_state RecurModelState;
typedef recur_layer_options RecurLayerOptions;
/* A status that the language files turn into an exception or an error. */
typedef recur_status recur_rc;

/* State handles cross as 64-bit integers (Java long[], C# long[], Go []int64) and go to the C ABI
 * as its array of pointers, without a copy: the bindings are built for 64-bit targets only. */
typedef char recur_binding_handles_are_64_bit[sizeof(recur_state *) == sizeof(long long) ? 1 : -1];

/* Copies a model tensor's dims (RECUR_MAX_RANK values) into a language array of dims_cap values. */
static void recur_binding_copy_dims(recur_rc st, const int64_t *d, int64_t *dims, int32_t dims_cap) {
  int32_t i;
  if (st != RECUR_OK || !dims) return;
  for (i = 0; i < dims_cap && i < RECUR_MAX_RANK; ++i) dims[i] = d[i];
}

/* Where something runs, as five library-owned strings (the language files copy them at once). */
static recur_rc recur_binding_device(recur_rc st, const recur_device_info *info, const char **requested,
                                     const char **backend, const char **path, const char **reason,
                                     const char **device_name) {
  if (st == RECUR_OK) {
    *requested = info->requested;
    *backend = info->backend;
    *path = info->path;
    *reason = info->reason;
    *device_name = info->device_name;
  }
  return st;
}
%}

%include <stdint.i>

/* recur_rc is an int to SWIG, so the typemaps the language files put on it do not touch the
 * recur_status enum itself. */
typedef int recur_rc;

/* Language idioms: array typemaps, status handling, naming, resource management. They must be
 * seen before the classes below. */
#if defined(SWIGJAVA)
%include "java/recur_java.i"
#elif defined(SWIGCSHARP)
%include "csharp/recur_csharp.i"
#elif defined(SWIGGO)
%include "go/recur_go.i"
#elif defined(SWIGPYTHON)
%include "python/recur_python.i"
#endif

/* ------------------------------------------------------------------------------------------ */
/* Constants and library functions                                                              */
/* ------------------------------------------------------------------------------------------ */

%constant int LAYER_GRU = RECUR_LAYER_GRU;
%constant int LAYER_LSTM = RECUR_LAYER_LSTM;
%constant int LAYER_CUDNN_GRU = RECUR_LAYER_CUDNN_GRU;
%constant int LAYER_CUDNN_LSTM = RECUR_LAYER_CUDNN_LSTM;
%constant int LAYER_GRU_CELL = RECUR_LAYER_GRU_CELL;
%constant int LAYER_LSTM_CELL = RECUR_LAYER_LSTM_CELL;
%constant int LAYER_SIMPLE_RNN = RECUR_LAYER_SIMPLE_RNN;
%constant int LAYER_SIMPLE_RNN_CELL = RECUR_LAYER_SIMPLE_RNN_CELL;
%constant int MAX_RANK = RECUR_MAX_RANK;
%constant int DIALECT_AUTO = RECUR_DIALECT_AUTO;
%constant int DIALECT_KERAS2 = RECUR_DIALECT_KERAS2;
%constant int DIALECT_KERAS3 = RECUR_DIALECT_KERAS3;
%constant int DEFAULT = RECUR_DEFAULT;
%constant int OK = RECUR_OK;
%constant int ERR_INVALID_ARGUMENT = RECUR_ERR_INVALID_ARGUMENT;
%constant int ERR_SHAPE = RECUR_ERR_SHAPE;
%constant int ERR_UNSUPPORTED = RECUR_ERR_UNSUPPORTED;
%constant int ERR_PARSE = RECUR_ERR_PARSE;
%constant int ERR_STATE = RECUR_ERR_STATE;
%constant int ERR_OUT_OF_MEMORY = RECUR_ERR_OUT_OF_MEMORY;
%constant int ERR_IO = RECUR_ERR_IO;
%constant int ERR_LIMIT = RECUR_ERR_LIMIT;
%constant int ERR_INTERNAL = RECUR_ERR_INTERNAL;
%constant int LIMIT_UNITS = RECUR_LIMIT_UNITS;
%constant int LIMIT_BATCH = RECUR_LIMIT_BATCH;
%constant int LIMIT_STATE_BYTES = RECUR_LIMIT_STATE_BYTES;
%constant int LIMIT_WEIGHT_BYTES = RECUR_LIMIT_WEIGHT_BYTES;
%constant int LIMIT_FILE_BYTES = RECUR_LIMIT_FILE_BYTES;
%constant int LIMIT_TENSOR_BYTES = RECUR_LIMIT_TENSOR_BYTES;
%constant int LIMIT_TOTAL_STATE_BYTES = RECUR_LIMIT_TOTAL_STATE_BYTES;
%constant int LIMIT_RUN_BYTES = RECUR_LIMIT_RUN_BYTES;
%constant int LIMIT_TIMESTEPS = RECUR_LIMIT_TIMESTEPS;
%constant int LIMIT_INIT_WORK = RECUR_LIMIT_INIT_WORK;
%constant int LIMIT_RUN_WORK = RECUR_LIMIT_RUN_WORK;

%inline %{
/* The loaded library's version, "MAJOR.MINOR.PATCH". */
const char *recur_binding_version(void) { return recur_version_string(); }

/* Devices: usable CUDA devices (0 is not an error), and whether a device string can run now. */
recur_rc recur_binding_device_count(int32_t *count) { return recur_device_count(count); }
recur_rc recur_binding_device_check(const char *device) { return recur_device_check(device); }

/* The CPU kernel set this process runs: "avx512", "avx2" or "baseline" (RECUR_CPU_KERNELS, read
 * at load, can ask for a lower one). */
const char *recur_binding_cpu_kernels(void) { return recur_cpu_kernels(); }

/* Process-wide resource limits (since 0.5): a recur_limit's current value, its built-in default,
 * and setting it (0 restores the default). Going over one fails with ERR_LIMIT naming it. */
recur_rc recur_binding_get_limit(int32_t limit, uint64_t *value) { return recur_get_limit(limit, value); }
recur_rc recur_binding_default_limit(int32_t limit, uint64_t *value) { return recur_default_limit(limit, value); }
recur_rc recur_binding_set_limit(int32_t limit, uint64_t limit_value) { return recur_set_limit(limit, limit_value); }

/* Live handles (since 0.5): the layers (cells included), states, models and model states created
 * and not yet destroyed in this process, for leak checks. Never fails. */
recur_rc recur_binding_live_handles(uint64_t *layers, uint64_t *states, uint64_t *models, uint64_t *model_states) {
  return recur_live_handles(layers, states, models, model_states);
}
%}

/* ------------------------------------------------------------------------------------------ */
/* LayerOptions: the constructor arguments of a Keras recurrent layer                           */
/* ------------------------------------------------------------------------------------------ */

/* String fields are copied into memory the options object owns, so a language's temporary
 * strings can be released right after a setter returns. */
/* Emitted before the class: SWIG writes the %extend bodies where the class is declared. */
%{
/* The options struct plus storage for its strings, freed together. */
typedef struct {
  RecurLayerOptions opts;
  char *strings[16];
} recur_binding_options;

static void recur_binding_set_string(RecurLayerOptions *o, int slot, const char **field, const char *value) {
  recur_binding_options *b = (recur_binding_options *)o; /* opts is the first member */
  free(b->strings[slot]);
  b->strings[slot] = NULL;
  *field = NULL;
  if (value) {
    size_t n = strlen(value) + 1;
    b->strings[slot] = (char *)malloc(n);
    if (b->strings[slot]) {
      memcpy(b->strings[slot], value, n);
      *field = b->strings[slot];
    }
  }
}
%}

%nodefaultctor RecurLayerOptions;
%nodefaultdtor RecurLayerOptions;
typedef struct {
  int32_t type;
  int32_t dialect;
  int32_t units;
  int32_t input_size;
  int32_t use_bias;
  int32_t reset_after;
  int32_t implementation;
  int32_t unit_forget_bias;
  float dropout;
  float recurrent_dropout;
  int32_t return_sequences;
  int32_t return_state;
  int32_t go_backwards;
  int32_t stateful;
  int32_t time_major;
  int32_t unroll;
  int32_t zero_output_for_mask;
  int32_t batch_size;
  int64_t seed;
  int32_t trainable;
} RecurLayerOptions;


%extend RecurLayerOptions {
  RecurLayerOptions() {
    recur_binding_options *b = (recur_binding_options *)calloc(1, sizeof *b);
    if (b) recur_layer_options_init(&b->opts, RECUR_LAYER_OPTIONS_VERSION);
    return &b->opts;
  }
  ~RecurLayerOptions() {
    recur_binding_options *b = (recur_binding_options *)$self;
    int i;
    for (i = 0; i < 16; ++i) free(b->strings[i]);
    free(b);
  }
  void set_activation(const char *v) { recur_binding_set_string($self, 0, &$self->activation, v); }
  void set_recurrent_activation(const char *v) { recur_binding_set_string($self, 1, &$self->recurrent_activation, v); }
  void set_kernel_initializer(const char *v) { recur_binding_set_string($self, 2, &$self->kernel_initializer, v); }
  void set_recurrent_initializer(const char *v) { recur_binding_set_string($self, 3, &$self->recurrent_initializer, v); }
  void set_bias_initializer(const char *v) { recur_binding_set_string($self, 4, &$self->bias_initializer, v); }
  void set_kernel_regularizer(const char *v) { recur_binding_set_string($self, 5, &$self->kernel_regularizer, v); }
  void set_recurrent_regularizer(const char *v) { recur_binding_set_string($self, 6, &$self->recurrent_regularizer, v); }
  void set_bias_regularizer(const char *v) { recur_binding_set_string($self, 7, &$self->bias_regularizer, v); }
  void set_activity_regularizer(const char *v) { recur_binding_set_string($self, 8, &$self->activity_regularizer, v); }
  void set_kernel_constraint(const char *v) { recur_binding_set_string($self, 9, &$self->kernel_constraint, v); }
  void set_recurrent_constraint(const char *v) { recur_binding_set_string($self, 10, &$self->recurrent_constraint, v); }
  void set_bias_constraint(const char *v) { recur_binding_set_string($self, 11, &$self->bias_constraint, v); }
  void set_keras_version(const char *v) { recur_binding_set_string($self, 12, &$self->keras_version, v); }
  void set_name(const char *v) { recur_binding_set_string($self, 13, &$self->name, v); }
}

/* ------------------------------------------------------------------------------------------ */
/* Layer: a Keras sequence layer or cell                                                        */
/* ------------------------------------------------------------------------------------------ */

%nodefaultctor RecurLayer;
%nodefaultdtor RecurLayer;
typedef struct {} RecurLayer;

%newobject RecurLayer::create;
%newobject RecurLayer::create_from_json;

%extend RecurLayer {
  /* Factories: NULL with the status in *st; the language files raise it. */
  static RecurLayer *create(const RecurLayerOptions *opts, recur_rc *st) {
    recur_layer *l = NULL;
    *st = recur_layer_create(&l, opts);
    return l;
  }
  static RecurLayer *create_from_json(const char *json, int32_t input_size, int32_t dialect,
                                      const char *keras_version, recur_rc *st) {
    recur_layer *l = NULL;
    *st = recur_layer_create_from_json(&l, json, input_size, dialect, keras_version);
    return l;
  }
  ~RecurLayer() { recur_layer_destroy($self); }

  recur_rc get_info(recur_layer_info *info) {
    info->version = RECUR_LAYER_INFO_VERSION;
    return recur_layer_get_info($self, info);
  }
  recur_rc output_length(int32_t batch, int32_t timesteps, size_t *out_len) {
    return recur_layer_output_length($self, batch, timesteps, out_len);
  }
  recur_rc forward(const float *input, size_t input_len, int32_t batch, int32_t timesteps, const uint8_t *mask,
                   size_t mask_len, const float *initial_state, size_t initial_state_len, int32_t num_initial_states,
                   int32_t training, float *output, size_t output_len, float *final_state, size_t final_state_len) {
    return recur_layer_forward($self, input, input_len, batch, timesteps, mask, mask_len, initial_state,
                               initial_state_len, num_initial_states, training, output, output_len, final_state,
                               final_state_len);
  }
  recur_rc forward_state(RecurState *state, const float *input, size_t input_len, int32_t timesteps,
                         const uint8_t *mask, size_t mask_len, float *output, size_t output_len) {
    return recur_layer_forward_state($self, state, input, input_len, timesteps, mask, mask_len, output, output_len);
  }
  /* One step for many states as one batch; handles are the states' addresses (see above). */
  recur_rc forward_states(const long long *handles, int32_t num_handles, const float *input, size_t input_len,
                          const uint8_t *mask, size_t mask_len, float *output, size_t output_len) {
    return recur_layer_forward_states($self, (recur_state *const *)handles, num_handles, input, input_len, mask,
                                      mask_len, output, output_len);
  }
  /* recur_layer_forward on CUDA device memory: the addresses come from the caller's CUDA interop
   * library; the mask stays a host array. */
  recur_rc forward_device(int64_t cuda_stream, int64_t d_input, int32_t batch, int32_t timesteps,
                          const uint8_t *mask, size_t mask_len, int64_t d_initial_state,
                          int32_t num_initial_states, int64_t d_output, int64_t d_final_state) {
    return recur_layer_forward_device($self, (void *)(intptr_t)cuda_stream, (const float *)(intptr_t)d_input, batch,
                                      timesteps, mask, mask_len, (const float *)(intptr_t)d_initial_state,
                                      num_initial_states, (float *)(intptr_t)d_output,
                                      (float *)(intptr_t)d_final_state);
  }
  /* forward_states on CUDA device memory: the states' handles as in forward_states, the device
   * addresses and the stream as in forward_device; the mask stays a host array. Since 0.9. */
  recur_rc forward_states_device(int64_t cuda_stream, const long long *handles, int32_t num_handles, int64_t d_input,
                                 const uint8_t *mask, size_t mask_len, int64_t d_output) {
    return recur_layer_forward_states_device($self, (void *)(intptr_t)cuda_stream, (recur_state *const *)handles,
                                             num_handles, (const float *)(intptr_t)d_input, mask, mask_len,
                                             (float *)(intptr_t)d_output);
  }
  recur_rc set_device(const char *device) { return recur_layer_set_device($self, device); }
  recur_rc get_device(const char **requested, const char **backend, const char **path, const char **reason,
                      const char **device_name) {
    recur_device_info info;
    info.version = RECUR_DEVICE_INFO_VERSION;
    return recur_binding_device(recur_layer_get_device($self, &info), &info, requested, backend, path, reason,
                                device_name);
  }
  /* Threads one CPU call may use: 1 (the default) never starts a thread, 0 = one per core. */
  recur_rc set_num_threads(int32_t num_threads) { return recur_layer_set_num_threads($self, num_threads); }
  recur_rc get_num_threads(int32_t *num_threads) { return recur_layer_get_num_threads($self, num_threads); }
  /* Reduced precision weights (since 0.8): "float32" (the default), "bf16" or "int8". */
  recur_rc set_precision(const char *precision) { return recur_layer_set_precision($self, precision); }
  const char *get_precision() {
    const char *p = "";
    recur_layer_get_precision($self, &p);
    return p;
  }
  recur_rc reset_states() { return recur_layer_reset_states($self); }
  /* Keras 3 backend semantics: "tensorflow" (the default) or "jax". */
  recur_rc set_keras_backend(const char *backend) { return recur_layer_set_keras_backend($self, backend); }
  recur_rc set_states(const float *states, size_t states_len, int32_t num_states) {
    return recur_layer_set_states($self, states, states_len, num_states);
  }
  recur_rc get_states(float *output, size_t output_len) { return recur_layer_get_states($self, output, output_len); }
  recur_rc cell_call(const float *input, size_t input_len, int32_t batch, const float *states, size_t states_len,
                     int32_t num_states, int32_t training, float *output, size_t output_len, float *final_state,
                     size_t final_state_len) {
    return recur_cell_call($self, input, input_len, batch, states, states_len, num_states, training, output,
                           output_len, final_state, final_state_len);
  }
  recur_rc dropout_mask(int32_t batch, int32_t training, float *output, size_t output_len, int32_t *count) {
    return recur_cell_get_dropout_mask($self, batch, training, output, output_len, count);
  }
  recur_rc recurrent_dropout_mask(int32_t batch, int32_t training, float *output, size_t output_len,
                                  int32_t *count) {
    return recur_cell_get_recurrent_dropout_mask($self, batch, training, output, output_len, count);
  }
  recur_rc reset_dropout_mask() { return recur_cell_reset_dropout_mask($self); }
  recur_rc reset_recurrent_dropout_mask() { return recur_cell_reset_recurrent_dropout_mask($self); }
  recur_rc num_weights(int32_t *count) { return recur_layer_num_weights($self, count); }
  recur_rc weight_shape(int32_t index, int64_t *dim0, int64_t *dim1, int32_t *ndims) {
    int64_t dims[2] = {0, 0};
    recur_rc st = recur_layer_weight_shape($self, index, dims, ndims);
    *dim0 = dims[0];
    *dim1 = dims[1];
    return st;
  }
  recur_rc weight_name(int32_t index, const char **name) { return recur_layer_weight_name($self, index, name); }
  recur_rc get_weight(int32_t index, float *output, size_t output_len) {
    return recur_layer_get_weight($self, index, output, output_len);
  }
  recur_rc set_weight(int32_t index, const float *input, size_t input_len) {
    return recur_layer_set_weight($self, index, input, input_len, NULL, 0);
  }
  recur_rc weights_length(size_t *len) { return recur_layer_weights_length($self, len); }
  recur_rc get_weights(float *output, size_t output_len) { return recur_layer_get_weights($self, output, output_len); }
  recur_rc set_weights(const float *input, size_t input_len) { return recur_layer_set_weights($self, input, input_len); }
  recur_rc get_losses(float *output, size_t output_len, int32_t *count) {
    return recur_layer_get_losses($self, output, output_len, count);
  }
  recur_rc loss_name(int32_t index, const char **name) { return recur_layer_loss_name($self, index, name); }
  recur_rc apply_constraints() { return recur_layer_apply_constraints($self); }
}

/* ------------------------------------------------------------------------------------------ */
/* State: h (and c) of a batch of streams, stepped against a shared read-only layer            */
/* ------------------------------------------------------------------------------------------ */

%nodefaultctor RecurState;
%nodefaultdtor RecurState;
typedef struct {} RecurState;

%newobject RecurState::create;

%extend RecurState {
  static RecurState *create(const RecurLayer *layer, int32_t batch, recur_rc *st) {
    recur_state *s = NULL;
    *st = recur_state_create(&s, layer, batch);
    return s;
  }
  ~RecurState() { recur_state_destroy($self); }
  recur_rc shape(int32_t *num_states, int32_t *batch, int32_t *units) {
    return recur_state_shape($self, num_states, batch, units);
  }
  recur_rc get(float *output, size_t output_len) { return recur_state_get($self, output, output_len); }
  recur_rc set(const float *input, size_t input_len, int32_t num_states) {
    return recur_state_set($self, input, input_len, num_states);
  }
  recur_rc reset() { return recur_state_reset($self); }
  recur_rc set_device(const char *device) { return recur_state_set_device($self, device); }
  recur_rc get_device(const char **requested, const char **backend, const char **path, const char **reason,
                      const char **device_name) {
    recur_device_info info;
    info.version = RECUR_DEVICE_INFO_VERSION;
    return recur_binding_device(recur_state_get_device($self, &info), &info, requested, backend, path, reason,
                                device_name);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Model: a Keras .keras or .h5 file                                                            */
/* ------------------------------------------------------------------------------------------ */

%nodefaultctor RecurModel;
%nodefaultdtor RecurModel;
typedef struct {} RecurModel;

%newobject RecurModel::open;
%newobject RecurModel::open_memory;
%newobject RecurModel::get_layer;

%extend RecurModel {
  static RecurModel *open(const char *path, recur_rc *st) {
    recur_model *m = NULL;
    *st = recur_model_open(&m, path);
    return m;
  }
  ~RecurModel() { recur_model_destroy($self); }
  recur_rc get_info(recur_model_info *info) {
    info->version = RECUR_MODEL_INFO_VERSION;
    return recur_model_get_info($self, info);
  }
  recur_rc layer(int32_t index, const char **name, const char **class_name, const char **config_json,
                 int32_t *input_size, int32_t *output_size, int32_t *recurrent) {
    return recur_model_layer($self, index, name, class_name, config_json, input_size, output_size, recurrent);
  }
  RecurLayer *get_layer(const char *name, recur_rc *st) {
    recur_layer *l = NULL;
    *st = recur_model_get_layer($self, name, &l);
    return l;
  }
  recur_rc output_length(int32_t batch, int32_t timesteps, size_t *out_len) {
    return recur_model_output_length($self, batch, timesteps, out_len);
  }
  recur_rc run(const float *input, size_t input_len, int32_t batch, int32_t timesteps, const uint8_t *mask,
               size_t mask_len, float *output, size_t output_len) {
    return recur_model_run($self, input, input_len, batch, timesteps, mask, mask_len, output, output_len);
  }
  recur_rc set_device(const char *device) { return recur_model_set_device($self, device); }
  /* layer_index -1: the model as a whole. */
  recur_rc get_device(int32_t layer_index, const char **requested, const char **backend, const char **path,
                      const char **reason, const char **device_name) {
    recur_device_info info;
    info.version = RECUR_DEVICE_INFO_VERSION;
    return recur_binding_device(recur_model_get_device($self, layer_index, &info), &info, requested, backend, path,
                                reason, device_name);
  }
  /* On every layer the model runs, and on the layers get_layer returns afterwards. */
  recur_rc set_num_threads(int32_t num_threads) { return recur_model_set_num_threads($self, num_threads); }
  recur_rc get_num_threads(int32_t *num_threads) { return recur_model_get_num_threads($self, num_threads); }
  /* Reduced precision weights of every recurrent layer (since 0.8). */
  recur_rc set_precision(const char *precision) { return recur_model_set_precision($self, precision); }
  const char *get_precision() {
    const char *p = "";
    recur_model_get_precision($self, &p);
    return p;
  }

  /* ---- graphs: inputs and outputs, stateful models, backends, streams (since 0.4) ---- */
  /* A model from the bytes of a .keras or .h5 file (copied during the call); file_name (may be
   * NULL) stands for the file in messages. */
  static RecurModel *open_memory(const uint8_t *bytes, size_t bytes_len, const char *file_name, recur_rc *st) {
    recur_model *m = NULL;
    /* An empty language array arrives as NULL: let the C ABI report the empty image. */
    *st = recur_model_open_memory(&m, bytes ? (const void *)bytes : (const void *)"", bytes_len, file_name);
    return m;
  }
  recur_rc num_inputs(int32_t *count) { return recur_model_num_inputs($self, count); }
  recur_rc num_outputs(int32_t *count) { return recur_model_num_outputs($self, count); }
  /* dims: a caller array of dims_cap values (RECUR_MAX_RANK suffice); -1 = given at run time. */
  recur_rc input(int32_t index, const char **name, int32_t *rank, int32_t *token_ids, int64_t *dims,
                 int32_t dims_cap) {
    int64_t d[RECUR_MAX_RANK];
    recur_rc st = recur_model_input($self, index, name, rank, d, token_ids);
    recur_binding_copy_dims(st, d, dims, dims_cap);
    return st;
  }
  recur_rc output(int32_t index, const char **name, int32_t *rank, int64_t *dims, int32_t dims_cap) {
    int64_t d[RECUR_MAX_RANK];
    recur_rc st = recur_model_output($self, index, name, rank, d);
    recur_binding_copy_dims(st, d, dims, dims_cap);
    return st;
  }
  /* timesteps: one value per input (num_timesteps = the number of inputs). */
  recur_rc output_dims(int32_t index, int32_t batch, const int32_t *timesteps, int32_t num_timesteps, int32_t *rank,
                       int64_t *dims, int32_t dims_cap) {
    int64_t d[RECUR_MAX_RANK];
    recur_rc st = recur_model_output_dims($self, index, batch, timesteps, num_timesteps, d, rank);
    recur_binding_copy_dims(st, d, dims, dims_cap);
    return st;
  }
  recur_rc outputs_length(int32_t batch, const int32_t *timesteps, int32_t num_timesteps, size_t *out_len) {
    return recur_model_outputs_length($self, batch, timesteps, num_timesteps, out_len);
  }
  recur_rc inputs_length(int32_t batch, const int32_t *timesteps, int32_t num_timesteps, size_t *out_len) {
    return recur_model_inputs_length($self, batch, timesteps, num_timesteps, out_len);
  }
  /* Every input concatenated in input order; masks NULL or the (B, T_i) masks of the sequence
   * inputs concatenated; every output concatenated in output order. */
  recur_rc run_inputs(int32_t batch, const int32_t *timesteps, int32_t num_timesteps, const float *input,
                      size_t input_len, const uint8_t *mask, size_t mask_len, float *output, size_t output_len) {
    return recur_model_run_inputs($self, batch, timesteps, num_timesteps, input, input_len, mask, mask_len, output,
                                  output_len);
  }
  recur_rc is_stateful(int32_t *stateful) { return recur_model_is_stateful($self, stateful); }
  recur_rc reset_states() { return recur_model_reset_states($self); }
  /* States of stateful layer `layer` ("<name>/forward|backward" for a Bidirectional half). */
  recur_rc states_length(const char *layer, size_t *len) { return recur_model_states_length($self, layer, len); }
  recur_rc get_states(const char *layer, float *output, size_t output_len) {
    return recur_model_get_states($self, layer, output, output_len);
  }
  recur_rc set_states(const char *layer, const float *states, size_t states_len) {
    return recur_model_set_states($self, layer, states, states_len);
  }
  /* "tensorflow" (the default) or "jax" (Keras 3 models only). */
  recur_rc set_keras_backend(const char *backend) { return recur_model_set_keras_backend($self, backend); }
  /* "" when the model streams, else why not (naming the layer). */
  recur_rc streamable(const char **why) { return recur_model_streamable($self, why); }
  /* 1 when input `index` has a timesteps axis (axis 1): masks address it, streams feed it a few
   * steps at a time (since 0.4). */
  recur_rc input_sequence(int32_t index, int32_t *sequence) {
    return recur_model_input_sequence($self, index, sequence);
  }
  /* The recur_dtype input `index` takes: RECUR_DTYPE_STRING for text (since 0.7). */
  recur_rc input_dtype(int32_t index, int32_t *dtype) { return recur_model_input_dtype($self, index, dtype); }
  /* The stateful layers in config order (the names set_states takes), with their states' shape. */
  recur_rc num_stateful_layers(int32_t *count) { return recur_model_num_stateful_layers($self, count); }
  recur_rc stateful_layer(int32_t index, const char **name, int32_t *num_states, int32_t *batch, int32_t *units) {
    return recur_model_stateful_layer($self, index, name, num_states, batch, units);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* ModelState: one stream through a whole model, stepped some timesteps at a time              */
/* ------------------------------------------------------------------------------------------ */

%nodefaultctor RecurModelState;
%nodefaultdtor RecurModelState;
typedef struct {} RecurModelState;

%newobject RecurModelState::create;

%extend RecurModelState {
  /* Fails with UNSUPPORTED (naming the layer) for a model that does not stream. The state keeps
   * what it needs of the model: it outlives it. */
  static RecurModelState *create(const RecurModel *model, int32_t batch, recur_rc *st) {
    recur_model_state *s = NULL;
    *st = recur_model_state_create(&s, model, batch);
    return s;
  }
  ~RecurModelState() { recur_model_state_destroy($self); }
  recur_rc reset() { return recur_model_state_reset($self); }
  recur_rc lengths(int32_t timesteps, size_t *inputs_len, size_t *outputs_len) {
    return recur_model_state_lengths($self, timesteps, inputs_len, outputs_len);
  }
  recur_rc step(int32_t timesteps, const float *input, size_t input_len, const uint8_t *mask, size_t mask_len,
                float *output, size_t output_len) {
    return recur_model_state_step($self, timesteps, input, input_len, mask, mask_len, output, output_len);
  }
  /* Snapshots (since 0.9): save_size gives the bytes save writes; load takes them back into a
   * state of the same model and batch (all or nothing). */
  recur_rc save_size(size_t *len) { return recur_model_state_save($self, NULL, 0, len); }
  recur_rc save(uint8_t *out_bytes, size_t capacity, size_t *len) {
    return recur_model_state_save($self, out_bytes, capacity, len);
  }
  recur_rc load(const uint8_t *bytes, size_t bytes_len) { return recur_model_state_load($self, bytes, bytes_len); }
  /* The dims of output `index` of a step of `timesteps` steps: sequence outputs hold those steps,
   * the others their whole value. */
  recur_rc output_dims(int32_t index, int32_t timesteps, int32_t *rank, int64_t *dims, int32_t dims_cap) {
    int64_t d[RECUR_MAX_RANK];
    recur_rc st = recur_model_state_output_dims($self, index, timesteps, d, rank);
    recur_binding_copy_dims(st, d, dims, dims_cap);
    return st;
  }
}

/* The info structs as plain, read-only data classes. */
%immutable recur_model_info::keras_version;
%immutable recur_model_info::unsupported;
typedef struct recur_layer_info {
  int32_t type;
  int32_t dialect;
  int32_t units;
  int32_t input_size;
  int32_t num_states;
  int32_t num_weights;
  int32_t return_sequences;
  int32_t return_state;
  int32_t go_backwards;
  int32_t stateful;
  int32_t time_major;
  int32_t batch_size;
  int32_t implementation;
  int32_t reset_after;
} recur_layer_info;

typedef struct recur_model_info {
  int32_t dialect;
  const char *keras_version;
  int32_t num_layers;
  int32_t runnable;
  const char *unsupported;
  int32_t input_size;
  int32_t takes_token_ids;
  int32_t output_size;
  int32_t returns_sequences;
  int32_t num_outputs;
} recur_model_info;

/* A streaming-step loop run entirely in C, so benchmarks can compare one step through a binding
 * with the same step through the C ABI in the same process. Returns nanoseconds per step. */
%inline %{
double recur_binding_c_step_ns(RecurLayer *layer, RecurState *state, const float *input, size_t input_len,
                               float *output, size_t output_len, int32_t iterations) {
  struct timespec a, b;
  int32_t i;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (i = 0; i < iterations; ++i)
    if (recur_layer_forward_state(layer, state, input, input_len, 1, NULL, 0, output, output_len) != RECUR_OK)
      return -1.0;
  clock_gettime(CLOCK_MONOTONIC, &b);
  return ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)(iterations > 0 ? iterations : 1);
}
%}
