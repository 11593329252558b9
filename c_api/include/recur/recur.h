/* SPDX-License-Identifier: Apache-2.0 */
/*
 * recur: Keras recurrent layers (GRU, LSTM, CuDNNGRU, CuDNNLSTM, SimpleRNN, GRUCell, LSTMCell,
 * SimpleRNNCell) with Keras's exact numbers, behind a small C ABI.
 *
 * Conventions (apply to every function below unless its comment says otherwise):
 * - Every fallible function returns a recur_status: RECUR_OK (0) or a negative error code. On
 *   error, recur_last_error() on the same thread returns a message that names the argument and
 *   what was expected, and nothing the call would have changed has changed.
 * - Handles are opaque. recur_*_destroy(NULL) does nothing. Using a destroyed handle returns
 *   RECUR_ERR_STATE (the library keeps a registry of live handles; this cannot catch a stale
 *   pointer whose address a newer handle of the same type has reused).
 * - Tensors are dense, row-major float32 buffers passed with their length in elements. The
 *   library checks each length against the dimensions and never keeps a pointer after a call
 *   returns. Output buffers are owned and allocated by the caller.
 * - Strings returned by the library are owned by it: recur_version_string and
 *   recur_status_string are static; recur_last_error is valid until the next recur_* call on
 *   the same thread; weight and loss names live as long as their layer.
 * - Threads: all functions may be called from any thread. A layer's weights are read-only
 *   during a forward pass, so recur_layer_forward_state may run concurrently on one layer with
 *   different states. Functions that change a layer (set weights, stateful calls, training
 *   calls, constraints, destroy) must not run concurrently with other calls on that layer. One
 *   state is used by one thread at a time.
 * - The header is C89. The only call back into the caller is the log callback an application
 *   installs with recur_set_log_callback (since 0.6); no other recur function calls back.
 */
#ifndef RECUR_RECUR_H
#define RECUR_RECUR_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32) && !defined(RECUR_STATIC)
#if defined(RECUR_BUILDING)
#define RECUR_API __declspec(dllexport)
#else
#define RECUR_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) && __GNUC__ >= 4
#define RECUR_API __attribute__((visibility("default")))
#else
#define RECUR_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------ */
/* Version and errors                                                                          */
/* ------------------------------------------------------------------------------------------ */

#define RECUR_VERSION_MAJOR 0
#define RECUR_VERSION_MINOR 9
#define RECUR_VERSION_PATCH 0
#define RECUR_VERSION_NUMBER (RECUR_VERSION_MAJOR * 10000 + RECUR_VERSION_MINOR * 100 + RECUR_VERSION_PATCH)

typedef enum recur_status {
  RECUR_OK = 0,
  RECUR_ERR_INVALID_ARGUMENT = -1, /* NULL pointer, value out of range, unknown name */
  RECUR_ERR_SHAPE = -2,            /* a length or dimension that does not agree */
  RECUR_ERR_UNSUPPORTED = -3,      /* valid Keras, but not in this dialect / not supported */
  RECUR_ERR_PARSE = -4,            /* malformed JSON */
  RECUR_ERR_STATE = -5,            /* destroyed handle, or the object cannot do this */
  RECUR_ERR_OUT_OF_MEMORY = -6,
  RECUR_ERR_IO = -7,               /* file access; a corrupt, truncated or hostile model file */
  RECUR_ERR_LIMIT = -8,            /* over a resource limit (recur_set_limit raises it; since 0.5) */
  RECUR_ERR_CANCELLED = -9,        /* recur_run_options_cancel stopped the call (since 0.6) */
  RECUR_ERR_INTERNAL = -100        /* a bug in recur; the message says what happened */
} recur_status;

/* RECUR_VERSION_NUMBER of the loaded library (compare with the macro to detect mismatches). */
RECUR_API uint32_t recur_version_number(void);
/* "MAJOR.MINOR.PATCH" of the loaded library. Static string. */
RECUR_API const char *recur_version_string(void);
/* A short static description of a status code, e.g. "invalid argument". Never NULL. */
RECUR_API const char *recur_status_string(recur_status status);
/* The message of the last failed call on this thread ("" if none has failed); successful calls
 * leave it as it is. Valid until the next recur_* call on this thread. Never NULL. A message is
 * one line of printable UTF-8 (control and invalid bytes it quotes from an input appear as \xNN)
 * of at most about 2 KiB, however large the input it quotes: a longer value is cut, and "..."
 * follows. */
RECUR_API const char *recur_last_error(void);

/* ------------------------------------------------------------------------------------------ */
/* Layer options                                                                               */
/* ------------------------------------------------------------------------------------------ */

typedef enum recur_layer_type {
  RECUR_LAYER_GRU = 1,
  RECUR_LAYER_LSTM = 2,
  RECUR_LAYER_CUDNN_GRU = 3,  /* Keras 2 only */
  RECUR_LAYER_CUDNN_LSTM = 4, /* Keras 2 only */
  RECUR_LAYER_GRU_CELL = 5,   /* single-step cells: use recur_cell_call */
  RECUR_LAYER_LSTM_CELL = 6,
  RECUR_LAYER_SIMPLE_RNN = 7,     /* since 0.4 */
  RECUR_LAYER_SIMPLE_RNN_CELL = 8 /* since 0.4 */
} recur_layer_type;

/* SimpleRNN and SimpleRNNCell compute h' = activation((x @ kernel + bias) + h @ recurrent_kernel)
 * with one state (h) and the weights kernel (F, units), recurrent_kernel (units, units), bias
 * (units,). They take what Keras's classes take: recurrent_activation, reset_after and
 * unit_forget_bias must be left at NULL / RECUR_DEFAULT (Keras rejects them; recur fails with
 * INVALID_ARGUMENT naming the field), and so must implementation in Keras 3; Keras 2 accepts
 * implementation 1 or 2 and ignores it, as tf.keras does. Keras 3's SimpleRNN ignores
 * activity_regularizer (Keras 3 never hands it on to the layer), so recur does too; Keras 2's
 * SimpleRNN and both dialects' SimpleRNNCell apply it. dropout masks the input and
 * recurrent_dropout masks h before the recurrent product, one mask each per call (per cell
 * cache), constant in time. On a GPU they run on recur's kernels (recur does not use cuDNN's
 * RNN_TANH/RNN_RELU modes). */

typedef enum recur_dialect {
  RECUR_DIALECT_AUTO = 0,   /* JSON: detect from the fields; options: Keras 3 */
  RECUR_DIALECT_KERAS2 = 2, /* tf.keras / tf-keras (TF 2.x) */
  RECUR_DIALECT_KERAS3 = 3
} recur_dialect;

/* Marks an int32 option as "the layer's Keras default for this dialect". */
#define RECUR_DEFAULT (-1)

#define RECUR_LAYER_OPTIONS_VERSION 1

/* Constructor arguments of a Keras recurrent layer. Initialise with recur_layer_options_init;
 * fields are appended in later versions, never reordered. String fields are copied during
 * recur_layer_create and may be freed afterwards. */
typedef struct recur_layer_options {
  uint32_t version;          /* set by recur_layer_options_init */
  int32_t type;              /* recur_layer_type; required */
  int32_t dialect;           /* recur_dialect */
  const char *keras_version; /* e.g. "2.15.0" or "3.13.0"; NULL = newest of the dialect. Selects
                                the formulas that changed within a dialect (Keras 3.0 hard_sigmoid,
                                activity regularizer scaling before 3.14). */
  const char *name;          /* layer name used in messages; NULL = none */
  int32_t units;             /* required, > 0 */
  int32_t input_size;        /* required, > 0: size of the last input axis */
  const char *activation;    /* Keras activation name; NULL = default ("tanh") */
  const char *recurrent_activation; /* NULL = default ("sigmoid"); SimpleRNN: must be NULL */
  int32_t use_bias;          /* 0/1 or RECUR_DEFAULT */
  int32_t reset_after;       /* GRU: 0/1 or RECUR_DEFAULT (1) */
  int32_t implementation;    /* 1, 2 or RECUR_DEFAULT (2); SimpleRNN: see above */
  int32_t unit_forget_bias;  /* LSTM: 0/1 or RECUR_DEFAULT (1) */
  float dropout;             /* rate in [0, 1]; applies in training calls only */
  float recurrent_dropout;   /* rate in [0, 1]; applies in training calls only */
  int32_t return_sequences;  /* 0/1 or RECUR_DEFAULT (0); likewise the flags below */
  int32_t return_state;      /* states are always available through final_state buffers */
  int32_t go_backwards;
  int32_t stateful;          /* needs batch_size */
  int32_t time_major;        /* Keras 2 only: inputs/outputs (T, B, ...) */
  int32_t unroll;
  int32_t zero_output_for_mask;
  int32_t batch_size;        /* fixed batch of a stateful layer; 0 = none */
  /* Initializers, regularizers and constraints: a Keras name ("glorot_uniform", "l2",
   * "max_norm") or Keras JSON ({"class_name": "Orthogonal", "config": {"gain": 2.0}}).
   * NULL = the Keras default (initializers) or none. */
  const char *kernel_initializer;
  const char *recurrent_initializer;
  const char *bias_initializer;
  const char *kernel_regularizer;
  const char *recurrent_regularizer;
  const char *bias_regularizer;
  const char *activity_regularizer;
  const char *kernel_constraint;
  const char *recurrent_constraint;
  const char *bias_constraint;
  int64_t seed;              /* >= 0: seeds initializers and dropout masks; -1 = random */
  int32_t trainable;         /* 0/1 or RECUR_DEFAULT (1); Keras 3 omits frozen weights' penalties */
} recur_layer_options;

/* Fills *opts with defaults for the given struct version (pass RECUR_LAYER_OPTIONS_VERSION).
 * Errors: RECUR_ERR_INVALID_ARGUMENT (opts NULL), RECUR_ERR_UNSUPPORTED (unknown version). */
RECUR_API recur_status recur_layer_options_init(recur_layer_options *opts, uint32_t version);

/* ------------------------------------------------------------------------------------------ */
/* Layers and cells                                                                            */
/* ------------------------------------------------------------------------------------------ */

typedef struct recur_layer recur_layer; /* a sequence layer or a cell */
typedef struct recur_state recur_state; /* the h (and c) of a batch of streams */

/* Creates a layer or cell and initialises its weights with its initializers. The caller owns
 * *out and frees it with recur_layer_destroy. On error *out is set to NULL.
 * Errors: INVALID_ARGUMENT (a field out of range or an unknown name; the message names the
 * field), UNSUPPORTED (e.g. CuDNN layers or time_major in Keras 3). */
RECUR_API recur_status recur_layer_create(recur_layer **out, const recur_layer_options *opts);

/* Creates a layer or cell from the JSON Keras writes for it: {"class_name": "GRU", "config":
 * {...}} (Keras 2 get_config/to_json style, or Keras 3 serialize_keras_object style).
 * input_size <= 0 takes the input size from batch_input_shape / build_config.
 * dialect: RECUR_DIALECT_AUTO detects it from the fields (Keras 3 when nothing tells).
 * keras_version: as in recur_layer_options; may be NULL.
 * Errors: PARSE (malformed JSON), INVALID_ARGUMENT (unknown field or value), UNSUPPORTED. */
RECUR_API recur_status recur_layer_create_from_json(recur_layer **out, const char *json, int32_t input_size,
                                                    int32_t dialect, const char *keras_version);

/* Frees a layer. NULL is a no-op. States created for it stay valid objects of their own. */
RECUR_API void recur_layer_destroy(recur_layer *layer);

#define RECUR_LAYER_INFO_VERSION 1

/* What a layer is, after defaults were resolved. */
typedef struct recur_layer_info {
  uint32_t version;   /* set by the caller to RECUR_LAYER_INFO_VERSION */
  int32_t type;       /* recur_layer_type */
  int32_t dialect;    /* RECUR_DIALECT_KERAS2 or RECUR_DIALECT_KERAS3 */
  int32_t units;
  int32_t input_size;
  int32_t num_states; /* 1 (h) or 2 (h, c) */
  int32_t num_weights;
  int32_t return_sequences;
  int32_t return_state;
  int32_t go_backwards;
  int32_t stateful;
  int32_t time_major;
  int32_t batch_size; /* stateful batch, or 0 */
  int32_t implementation; /* the one the layer computes with; 0 for SimpleRNN (it has none) */
  int32_t reset_after;
} recur_layer_info;

/* Fills *info (info->version must be set). Errors: INVALID_ARGUMENT, UNSUPPORTED (version),
 * STATE (destroyed handle). */
RECUR_API recur_status recur_layer_get_info(const recur_layer *layer, recur_layer_info *info);

/* Number of floats recur_layer_forward writes for this batch and timestep count:
 * B*T*units with return_sequences, else B*units. */
RECUR_API recur_status recur_layer_output_length(const recur_layer *layer, int32_t batch, int32_t timesteps,
                                                 size_t *out_len);

/* Runs the layer over a batch of sequences, as Keras's layer call.
 * input:   (B, T, F), or (T, B, F) for time_major; input_len = B*T*F.
 * mask:    NULL, or (B, T) ((T, B) for time_major) bytes, nonzero = valid step; any pattern.
 *          mask_len = B*T. Masked steps carry the state and the previous output (or write 0
 *          with zero_output_for_mask). CuDNN layers reject masks, as Keras does.
 * initial_state: NULL, or num_initial_states tensors (B, units) concatenated ([h] for GRU and
 *          SimpleRNN, [h, c] for LSTM); num_initial_states must then equal the layer's state count.
 *          Stateful layers: Keras 3 always uses it; Keras 2 uses it only while the stored
 *          states are all zero.
 * training: nonzero applies dropout and recurrent_dropout.
 * output:  output_len = recur_layer_output_length(B, T).
 * final_state: NULL, or a buffer for the final states (B, units) concatenated (what Keras returns
 *          with return_state). Stateful layers also keep them for the next call.
 * Errors: INVALID_ARGUMENT, SHAPE (every length), UNSUPPORTED (mask on CuDNN), STATE (a cell or a
 * destroyed handle). Not thread-safe for stateful layers or training calls. */
RECUR_API recur_status recur_layer_forward(recur_layer *layer, const float *input, size_t input_len, int32_t batch,
                                           int32_t timesteps, const uint8_t *mask, size_t mask_len,
                                           const float *initial_state, size_t initial_state_len,
                                           int32_t num_initial_states, int32_t training, float *output,
                                           size_t output_len, float *final_state, size_t final_state_len);

/* Zero-fills a stateful layer's states (Keras reset_states()). Errors: STATE ("Layer must be
 * stateful."). */
RECUR_API recur_status recur_layer_reset_states(recur_layer *layer);

/* Sets a stateful layer's states (Keras 2 reset_states(states)): num_states tensors
 * (batch_size, units) concatenated. Errors: STATE, SHAPE (count or length). */
RECUR_API recur_status recur_layer_set_states(recur_layer *layer, const float *states, size_t len,
                                              int32_t num_states);

/* Copies a stateful layer's current states (num_states x (batch_size, units)). */
RECUR_API recur_status recur_layer_get_states(const recur_layer *layer, float *out, size_t len);

/* Keras get_initial_state: zeros, num_states x (batch, units). */
RECUR_API recur_status recur_layer_get_initial_state(const recur_layer *layer, int32_t batch, float *out, size_t len);

/* ------------------------------------------------------------------------------------------ */
/* States for streaming                                                                        */
/* ------------------------------------------------------------------------------------------ */

/* Creates a zero state of `batch` streams shaped for `layer` (the layer is only read; the state
 * does not reference it afterwards). The caller owns *out. */
RECUR_API recur_status recur_state_create(recur_state **out, const recur_layer *layer, int32_t batch);
/* Frees a state. NULL is a no-op. */
RECUR_API void recur_state_destroy(recur_state *state);
/* Number of state tensors, batch and units of a state. Any out pointer may be NULL. */
RECUR_API recur_status recur_state_shape(const recur_state *state, int32_t *num_states, int32_t *batch,
                                         int32_t *units);
/* Copies the states out: num_states x (batch, units), concatenated. */
RECUR_API recur_status recur_state_get(const recur_state *state, float *out, size_t len);
/* Sets the states: num_states must match; len = num_states*batch*units. */
RECUR_API recur_status recur_state_set(recur_state *state, const float *values, size_t len, int32_t num_states);
/* Zero-fills the states. */
RECUR_API recur_status recur_state_reset(recur_state *state);

/* Advances `state` through `timesteps` steps of input (inference): input (B, T, F) or
 * (T, B, F) for time_major, with B = the state's batch; mask as in recur_layer_forward; output
 * as recur_layer_output_length(B, T). The state then holds the final states and the last output,
 * which a masked step repeats, so feeding a sequence in pieces gives the same outputs as one call
 * (recur_state_set and recur_state_reset start a new stream, whose masked steps output 0 until a
 * valid one). Safe to call concurrently on one layer with different states; steady-state calls do
 * not allocate. */
RECUR_API recur_status recur_layer_forward_state(const recur_layer *layer, recur_state *state, const float *input,
                                                 size_t input_len, int32_t timesteps, const uint8_t *mask,
                                                 size_t mask_len, float *output, size_t output_len);

/* ------------------------------------------------------------------------------------------ */
/* Cells (GRUCell, LSTMCell, SimpleRNNCell)                                                    */
/* ------------------------------------------------------------------------------------------ */

/* One step of a cell: input (B, F); states num_states x (B, units) concatenated ([h] or
 * [h, c]); output (B, units); new_states NULL or num_states x (B, units).
 * training: nonzero applies dropout with the cell's cached masks (created on first use).
 * Errors: STATE (a sequence layer), SHAPE, INVALID_ARGUMENT. */
RECUR_API recur_status recur_cell_call(recur_layer *cell, const float *input, size_t input_len, int32_t batch,
                                       const float *states, size_t states_len, int32_t num_states,
                                       int32_t training, float *output, size_t output_len, float *new_states,
                                       size_t new_states_len);

/* The cell's cached input dropout masks for a batch (Keras get_dropout_mask_for_cell): *count
 * masks of (batch, input_size), concatenated, values 0 or 1/(1-rate). Created on first use and
 * kept until recur_cell_reset_dropout_mask. *count is 0 when dropout is 0. Keras 2 caches ones
 * when training is 0. Pass out=NULL, out_len=0 to query *count only. Errors: INVALID_ARGUMENT
 * (batch <= 0, count NULL), STATE (not a cell), SHAPE (out_len wrong, or a cached mask of another
 * batch), LIMIT (batch over RECUR_LIMIT_BATCH, or the masks over RECUR_LIMIT_STATE_BYTES; since
 * 0.5). */
RECUR_API recur_status recur_cell_get_dropout_mask(recur_layer *cell, int32_t batch, int32_t training, float *out,
                                                   size_t out_len, int32_t *count);
/* The same for recurrent dropout: *count masks of (batch, units). */
RECUR_API recur_status recur_cell_get_recurrent_dropout_mask(recur_layer *cell, int32_t batch, int32_t training,
                                                             float *out, size_t out_len, int32_t *count);
RECUR_API recur_status recur_cell_reset_dropout_mask(recur_layer *cell);
RECUR_API recur_status recur_cell_reset_recurrent_dropout_mask(recur_layer *cell);

/* ------------------------------------------------------------------------------------------ */
/* Weights (Keras get_weights / set_weights order: kernel, recurrent_kernel[, bias])           */
/* ------------------------------------------------------------------------------------------ */

/* Number of weight tensors (2 without bias, else 3). */
RECUR_API recur_status recur_layer_num_weights(const recur_layer *layer, int32_t *count);
/* Shape of weight `index`: dims must hold 2 values; *ndims receives 1 or 2. */
RECUR_API recur_status recur_layer_weight_shape(const recur_layer *layer, int32_t index, int64_t *dims,
                                                int32_t *ndims);
/* Name of weight `index` ("kernel", "recurrent_kernel", "bias"); owned by the layer. */
RECUR_API recur_status recur_layer_weight_name(const recur_layer *layer, int32_t index, const char **name);
/* Copies weight `index` (row-major, len = product of its shape). */
RECUR_API recur_status recur_layer_get_weight(const recur_layer *layer, int32_t index, float *out, size_t len);
/* Sets weight `index`. dims/ndims may be NULL/0 (only the length is checked); otherwise the
 * shape must equal Keras's (e.g. a (6u,) CuDNN bias is rejected by a GRU, as Keras does).
 * CuDNN layers take their own CuDNN-layout weights. */
RECUR_API recur_status recur_layer_set_weight(recur_layer *layer, int32_t index, const float *data, size_t len,
                                              const int64_t *dims, int32_t ndims);
/* Total floats of all weights. */
RECUR_API recur_status recur_layer_weights_length(const recur_layer *layer, size_t *len);
/* All weights concatenated in get_weights order. Validated before anything changes. */
RECUR_API recur_status recur_layer_get_weights(const recur_layer *layer, float *out, size_t len);
RECUR_API recur_status recur_layer_set_weights(recur_layer *layer, const float *data, size_t len);

/* ------------------------------------------------------------------------------------------ */
/* Losses and constraints                                                                      */
/* ------------------------------------------------------------------------------------------ */

/* Keras layer.losses: the activity-regularizer penalties of the last call (one per output, states
 * included with return_state), then the kernel, recurrent_kernel and bias penalties. *count
 * receives their number; out may be NULL (count query, which computes no penalty) or hold
 * out_len >= *count floats. Errors: LIMIT (an OrthogonalRegularizer over more rows or columns
 * than RECUR_LIMIT_TENSOR_BYTES allows; see recur_limit), SHAPE (out_len too small). */
RECUR_API recur_status recur_layer_get_losses(const recur_layer *layer, float *out, size_t out_len, int32_t *count);
/* Name of loss `index` in recur_layer_get_losses order: "activity:output", "activity:state_h",
 * "activity:state_c", "kernel", "recurrent_kernel" or "bias". Static string. Computes no
 * penalty. Errors: INVALID_ARGUMENT (index out of range). */
RECUR_API recur_status recur_layer_loss_name(const recur_layer *layer, int32_t index, const char **name);
/* Applies kernel/recurrent/bias constraints to the weights, as an optimizer does after an
 * update. No-op without constraints. */
RECUR_API recur_status recur_layer_apply_constraints(recur_layer *layer);

/* ------------------------------------------------------------------------------------------ */
/* Keras model files (.keras and legacy .h5)                                                   */
/* ------------------------------------------------------------------------------------------ */

typedef struct recur_model recur_model;

/* Opens a Keras model file as it is: a .keras zip (Keras 3, tf.keras >= 2.13) or a legacy .h5
 * (model.save from Keras 2 or 3). The dialect comes from the file's keras_version. The caller
 * owns *out (recur_model_destroy). Layers recur cannot run do not fail the open: the file's
 * recurrent layers stay usable one by one, and recur_model_run reports the unsupported layer.
 * Errors: IO (missing, truncated, corrupt or hostile file: the message names the file, the object
 * path inside it and the problem), UNSUPPORTED (e.g. a Keras 1 file), INVALID_ARGUMENT. A corrupt
 * or hostile file gives RECUR_ERR_IO, never a crash or a hang: recur's HDF5 reader checks every
 * read against the file's size and bounds its work by it.
 * A library built without file support (CMake option RECUR_WITH_FILES=OFF: no libzip or zlib)
 * returns RECUR_ERR_UNSUPPORTED, with a message saying so, from recur_model_open and
 * recur_model_open_memory; layers built from their JSON config and weights work as always. */
RECUR_API recur_status recur_model_open(recur_model **out, const char *path);
/* Frees a model. NULL is a no-op. Layers taken from it with recur_model_get_layer stay valid. */
RECUR_API void recur_model_destroy(recur_model *model);

#define RECUR_MODEL_INFO_VERSION 1

typedef struct recur_model_info {
  uint32_t version;           /* set by the caller to RECUR_MODEL_INFO_VERSION */
  int32_t dialect;            /* RECUR_DIALECT_KERAS2 / RECUR_DIALECT_KERAS3 */
  const char *keras_version;  /* as the file records it; owned by the model */
  int32_t num_layers;         /* layers of the model config, InputLayer included (not Keras 3's
                                 op nodes) */
  int32_t runnable;           /* 1 if recur can run the whole graph */
  const char *unsupported;    /* why not ("" if runnable); owned by the model */
  int32_t input_size;         /* last axis of input 0 (1: token ids) */
  int32_t takes_token_ids;    /* input 0 holds token ids (an int Input, or it feeds an Embedding) */
  int32_t output_size;        /* last axis of output 0 */
  int32_t returns_sequences;  /* output 0 has a timesteps axis */
  int32_t num_outputs;        /* the model's outputs (recur_model_num_outputs) */
} recur_model_info;

/* Fills *info (info->version must be set). */
RECUR_API recur_status recur_model_get_info(const recur_model *model, recur_model_info *info);

/* Name, Keras class, config JSON (the layer's entry in the model config) and the sizes of the last
 * input and output axes (0 if unknown) of layer `index`. Strings are owned by the model; any out
 * pointer may be NULL. *recurrent is 1 for layers recur_model_get_layer can return. */
RECUR_API recur_status recur_model_layer(const recur_model *model, int32_t index, const char **name,
                                         const char **class_name, const char **config_json, int32_t *input_size,
                                         int32_t *output_size, int32_t *recurrent);

/* A new, independent layer with the config and weights of the recurrent layer `name` (for a
 * Bidirectional, "<name>/forward" or "<name>/backward"; for an RNN over StackedRNNCells, one cell
 * as a layer, "<name>/cell_<k>"). The caller owns *out. */
RECUR_API recur_status recur_model_get_layer(const recur_model *model, const char *name, recur_layer **out);

/* Number of floats recur_model_run writes for B sequences of T steps (all outputs together) of
 * a one-input model. Errors: INVALID_ARGUMENT (a model with several inputs:
 * recur_model_outputs_length). */
RECUR_API recur_status recur_model_output_length(const recur_model *model, int32_t batch, int32_t timesteps,
                                                 size_t *out_len);

/* Runs a one-input model (any graph; several inputs: recur_model_run_inputs): input (B, T, ...)
 * floats (token ids as floats), optional (B, T) mask (for models without Masking/Embedding to
 * make one), output of recur_model_output_length floats (every output, concatenated). Masks
 * propagate as in Keras. Errors: UNSUPPORTED (a layer recur cannot run), SHAPE, INVALID_ARGUMENT
 * (e.g. a token id out of range, a model with several inputs). Safe to call concurrently on one
 * model unless it holds stateful layers (then one run at a time, carrying their states). */
RECUR_API recur_status recur_model_run(const recur_model *model, const float *input, size_t input_len, int32_t batch,
                                       int32_t timesteps, const uint8_t *mask, size_t mask_len, float *output,
                                       size_t output_len);

/* ------------------------------------------------------------------------------------------ */
/* Devices: CPU and NVIDIA GPUs (since 0.2)                                                    */
/* ------------------------------------------------------------------------------------------ */

/* Device strings: "cpu", "cuda" (= "cuda:0"), "cuda:N" (CUDA ordinal N) or "auto" (the first GPU
 * when one can run, else the CPU). The GPU backend is a plugin (librecur_cuda.so, next to
 * librecur.so or named by the environment variable RECUR_CUDA_PLUGIN) that the library loads
 * only when a GPU is first asked for; librecur.so itself has no CUDA dependency. Every layer
 * option runs on the GPU with the CPU's numbers: through cuDNN where cuDNN computes the same
 * function (GRU reset_after=True and LSTM with tanh/sigmoid, CuDNNGRU, CuDNNLSTM, masks that are
 * right-padded), and through recur's own CUDA kernels otherwise (any activation, reset_after=False,
 * SimpleRNN, masks with holes, unroll's masking quirk, training-mode dropout). */

#define RECUR_DEVICE_INFO_VERSION 1

/* Where something runs and why. Strings are owned by the object queried and stay valid until
 * its next recur_*_set_device or its destruction. */
typedef struct recur_device_info {
  uint32_t version;        /* set by the caller to RECUR_DEVICE_INFO_VERSION */
  const char *requested;   /* "cpu", "cuda:N" or "auto", as last set ("cpu" by default) */
  const char *backend;     /* where calls run now: "cpu" or "cuda:N" */
  const char *path;        /* "cpu", "cudnn" or "kernel": the route of a call without a mask
                              (masks with holes always take "kernel" on a GPU) */
  const char *reason;      /* why this backend and path, e.g. "reset_after=False is not cuDNN's GRU" */
  const char *device_name; /* the GPU's name and cuDNN version, or "" on the CPU */
} recur_device_info;

/* Number of usable CUDA devices: 0 when the plugin, the driver or a GPU is missing (that is not
 * an error; recur_device_check says which). Errors: INVALID_ARGUMENT (count NULL). */
RECUR_API recur_status recur_device_count(int32_t *count);

/* RECUR_OK when `device` can run now. Errors: INVALID_ARGUMENT (not a device string; the message
 * lists the accepted forms), UNSUPPORTED (the message says which is missing: the plugin file and
 * why it did not load, the CUDA driver, a GPU with that ordinal, or cuDNN 9). "cpu" and "auto"
 * always pass. Thread-safe. */
RECUR_API recur_status recur_device_check(const char *device);

/* Moves a layer (its weights, and the states of a stateful layer) to `device`. Weights are
 * uploaded once here and again on every set_weight(s); later calls copy only inputs and outputs.
 * "auto" falls back to the CPU when no GPU can run, and the info's reason says why.
 * Errors: INVALID_ARGUMENT (device string), UNSUPPORTED (a GPU that cannot run; the layer stays
 * where it was), STATE. Not thread-safe with other calls on the layer. */
RECUR_API recur_status recur_layer_set_device(recur_layer *layer, const char *device);
/* Where the layer runs, which route (cudnn or kernel) and why. */
RECUR_API recur_status recur_layer_get_device(const recur_layer *layer, recur_device_info *info);

/* Where a state's tensors live. A state starts on the device of the layer it was created for
 * (recur_state_create), and moves when stepped by a layer on another device; recur_state_get/
 * set/reset work wherever it lives. path is "cpu" or "device-resident". */
RECUR_API recur_status recur_state_get_device(const recur_state *state, recur_device_info *info);
/* Moves a state's tensors to `device` now ("cpu" brings them to host memory; "auto" picks the
 * first GPU when one can run). Errors: INVALID_ARGUMENT (device string), UNSUPPORTED (a GPU that
 * cannot run; the state stays where it was), STATE. One thread at a time, as for any use of a
 * state. */
RECUR_API recur_status recur_state_set_device(recur_state *state, const char *device);

/* One step for many independent streams at once: states[i] (num_states handles, each of any
 * batch b_i) advance by one timestep of input as one batch, on the layer's device, with their
 * states staying resident there. input: (sum b_i, F) rows in the order of `states`; mask: NULL or
 * sum b_i bytes; output: (sum b_i, units). The same state may not appear twice. Equals calling
 * recur_layer_forward_state on each state with T = 1, up to float rounding (one product over all
 * rows may round differently from one per state; within 1e-6 in the tests). Errors: INVALID_ARGUMENT, SHAPE (a state
 * of another layer shape, a length), STATE (a cell, a destroyed handle). Thread rules as
 * recur_layer_forward_state: each state used by one thread at a time. */
RECUR_API recur_status recur_layer_forward_states(const recur_layer *layer, recur_state *const *states,
                                                  int32_t num_states, const float *input, size_t input_len,
                                                  const uint8_t *mask, size_t mask_len, float *output,
                                                  size_t output_len);

/* recur_layer_forward for callers that hold CUDA device buffers: d_input, d_initial_state
 * (or NULL), d_output and d_final_state (or NULL) are device pointers on the layer's GPU, shaped
 * as in recur_layer_forward; mask is a HOST array (or NULL): recur plans the route from it.
 * cuda_stream is a cudaStream_t (NULL: the default stream); the call is ordered on it and returns
 * once the outputs are written. Errors: STATE (the layer is not on a GPU: recur_layer_set_device),
 * INVALID_ARGUMENT, SHAPE, UNSUPPORTED (a CuDNN layer given a mask; Keras 2's CuDNN time_major with
 * go_backwards; a mask on a layer set to the JAX backend without unroll, whose masked loop runs on
 * the CPU only: use recur_layer_forward for these). */
RECUR_API recur_status recur_layer_forward_device(recur_layer *layer, void *cuda_stream, const float *d_input,
                                                  int32_t batch, int32_t timesteps, const uint8_t *mask,
                                                  size_t mask_len, const float *d_initial_state,
                                                  int32_t num_initial_states, float *d_output,
                                                  float *d_final_state);

/* Moves a model to `device`. On a GPU, a run keeps the tensors between layers in device memory:
 * each input goes up once and each output comes down once. A layer without a GPU kernel (see
 * recur_model_get_device) runs on the CPU: its inputs come down and its outputs go back up, the
 * only other copies a run makes. Streaming (recur_model_state) keeps its states on the GPU and its
 * tensors between layers on the host. Errors as recur_layer_set_device. */
RECUR_API recur_status recur_model_set_device(recur_model *model, const char *device);
/* layer_index -1: where the model runs; otherwise that layer (recur_model_layer order). On a GPU,
 * a layer with a GPU kernel reports the GPU (recurrent layers with their route, the others path
 * "kernel"); a layer without one reports "cpu", and its reason names what it lacks and says that
 * its inputs and outputs are copied. Errors: INVALID_ARGUMENT (index). */
RECUR_API recur_status recur_model_get_device(const recur_model *model, int32_t layer_index, recur_device_info *info);

/* ------------------------------------------------------------------------------------------ */
/* CPU threads and kernels (since 0.3)                                                        */
/* ------------------------------------------------------------------------------------------ */

/* Threads one call on this layer may use on the CPU: recur_layer_forward, recur_layer_forward_state,
 * recur_layer_forward_states and recur_cell_call. 1 (the default) runs on the calling thread only
 * and never starts a thread; 0 means one per core of the machine. More threads split the batch
 * rows (8 or more per thread) or the gate columns and the input projection of a call between them,
 * never a sum, so results are bitwise the same for every thread count. Small calls (little work per timestep) stay on the calling thread whatever
 * the count, since waking a thread would cost more than it saves. Calls on a GPU ignore it.
 * Errors: INVALID_ARGUMENT (num_threads negative or above 1024), STATE (destroyed handle).
 * Not thread-safe with other calls on the layer. */
RECUR_API recur_status recur_layer_set_num_threads(recur_layer *layer, int32_t num_threads);
/* The count as set (0 stays 0). Errors: INVALID_ARGUMENT (num_threads NULL), STATE. */
RECUR_API recur_status recur_layer_get_num_threads(const recur_layer *layer, int32_t *num_threads);
/* Sets the count on every layer of the model (recur_model_run and the layers recur_model_get_layer
 * returns afterwards). Errors and thread rules as recur_layer_set_num_threads. */
RECUR_API recur_status recur_model_set_num_threads(recur_model *model, int32_t num_threads);
RECUR_API recur_status recur_model_get_num_threads(const recur_model *model, int32_t *num_threads);

/* The CPU kernel set this process uses, chosen once when the library loads from the CPU's
 * features: "avx512" (x86-64 with AVX-512 F/BW/DQ/VL), "avx2" (x86-64 with AVX2 and FMA), "neon"
 * (aarch64) or "baseline" (any other CPU; the compiler's default instruction set). The environment variable
 * RECUR_CPU_KERNELS=baseline|avx2|avx512|neon, read at load, asks for a set; a set the CPU cannot run
 * (or an unknown name) falls back to the best the CPU can, and this function says which ran.
 * Static string, never NULL; thread-safe. Every kernel set gives Keras's numbers within the
 * parity suite's tolerances; they may differ from each other in the last bits. */
RECUR_API const char *recur_cpu_kernels(void);

/* ------------------------------------------------------------------------------------------ */
/* Models as graphs: inputs and outputs, stateful models, streams, memory (since 0.4)          */
/* ------------------------------------------------------------------------------------------ */

/* A model is any Keras functional graph (or Sequential) of supported layers, with any number of
 * inputs and outputs, in the order the file lists them (Keras's model.inputs / model.outputs).
 * Masks propagate as Keras propagates them, merge layers included. */

/* Opens a model from a file image in memory: the bytes of a .keras zip or a legacy .h5 file. The
 * bytes are copied during the call; the caller may free them afterwards. `name` (may be NULL)
 * stands for the file in messages. Errors as recur_model_open (IO: not a Keras file, truncated,
 * corrupt or hostile, never a crash or a hang; INVALID_ARGUMENT: data NULL with len > 0, or
 * len 0; UNSUPPORTED: a library built without file support, see recur_model_open). */
RECUR_API recur_status recur_model_open_memory(recur_model **out, const void *data, size_t len, const char *name);

/* Largest rank of a model input or output (batch axis included). */
#define RECUR_MAX_RANK 8

/* Number of the model's inputs / outputs. Errors: INVALID_ARGUMENT (count NULL), STATE. */
RECUR_API recur_status recur_model_num_inputs(const recur_model *model, int32_t *count);
RECUR_API recur_status recur_model_num_outputs(const recur_model *model, int32_t *count);

/* Input `index`: its name (the InputLayer's), rank (batch axis included) and dims, where -1
 * marks an axis given at run time: dims[0] (the batch, unless a stateful model fixes it) and the
 * timesteps axis of sequence inputs (at most one other axis may be unknown). *token_ids is 1 when the input holds
 * integer ids (Keras dtype int*), passed as floats (or as int32/int64, exactly, to
 * recur_model_run_named; since 0.6). `dims` must hold RECUR_MAX_RANK values; any
 * out pointer may be NULL. The name is owned by the model. Errors: INVALID_ARGUMENT (index). */
RECUR_API recur_status recur_model_input(const recur_model *model, int32_t index, const char **name, int32_t *rank,
                                         int64_t *dims, int32_t *token_ids);
/* The element type input `index` takes in a named run (since 0.7), as a recur_dtype:
 * RECUR_DTYPE_STRING for an Input with Keras dtype "string" (text for StringLookup or
 * TextVectorization layers; pass it only through recur_model_run_named, the float entry points
 * refuse such a model with INVALID_ARGUMENT naming the input), RECUR_DTYPE_INT64 for token ids
 * (recur_model_input's token_ids; int32 and float32 are taken too), else RECUR_DTYPE_FLOAT32.
 * A model with a string input does not stream (recur_model_state_create refuses it with
 * UNSUPPORTED, naming the text layer). Errors: INVALID_ARGUMENT (index out of range, dtype NULL),
 * STATE. */
RECUR_API recur_status recur_model_input_dtype(const recur_model *model, int32_t index, int32_t *dtype);

/* Output `index`: its name (Keras's model.output_names: Keras 3 repeats a layer's name for each
 * of its outputs, Keras 2 makes them unique with _1, _2, ...), rank and dims, -1 where the value
 * depends on the batch or the inputs' timesteps. */
RECUR_API recur_status recur_model_output(const recur_model *model, int32_t index, const char **name, int32_t *rank,
                                          int64_t *dims);

/* The concrete dims of output `index` (RECUR_MAX_RANK values; *rank receives the rank) for
 * `batch` rows and timesteps[i] for input i (num_timesteps = the number of inputs; entries of
 * inputs without an unknown axis are ignored). Errors: INVALID_ARGUMENT, SHAPE (the inputs'
 * timesteps do not fit the graph, e.g. an Add of sequences of different lengths). */
RECUR_API recur_status recur_model_output_dims(const recur_model *model, int32_t index, int32_t batch,
                                               const int32_t *timesteps, int32_t num_timesteps, int64_t *dims,
                                               int32_t *rank);
/* Floats recur_model_run_inputs writes for those shapes: every output, concatenated in order. */
RECUR_API recur_status recur_model_outputs_length(const recur_model *model, int32_t batch, const int32_t *timesteps,
                                                  int32_t num_timesteps, size_t *out_len);
/* Floats recur_model_run_inputs reads: every input, concatenated in order. */
RECUR_API recur_status recur_model_inputs_length(const recur_model *model, int32_t batch, const int32_t *timesteps,
                                                 int32_t num_timesteps, size_t *in_len);

/* Runs the graph (Keras's model.predict on one batch). inputs: every input, row-major, in input
 * order, concatenated; masks: NULL, or for every input with a timesteps axis its (B, T_i) mask
 * (nonzero = valid), concatenated in input order, as Keras's call(mask=...) takes it. outputs:
 * every output concatenated in order (recur_model_outputs_length). Stateful layers start from
 * the states the previous call left (recur_model_reset_states zeroes them), as in Keras.
 * Errors: UNSUPPORTED (a layer recur cannot run: the message names its class and name), SHAPE,
 * INVALID_ARGUMENT (e.g. a token id out of range). Thread rules: safe to call concurrently on
 * one model unless it has stateful layers; then one call at a time. */
RECUR_API recur_status recur_model_run_inputs(const recur_model *model, int32_t batch, const int32_t *timesteps,
                                              int32_t num_timesteps, const float *inputs, size_t inputs_len,
                                              const uint8_t *masks, size_t masks_len, float *outputs,
                                              size_t outputs_len);

/* *sequence is 1 when input `index` has a timesteps axis (axis 1): its length comes from the
 * run's timesteps (a declared length is only the default: Keras runs other lengths too), masks
 * address it, and model streams feed it a few steps at a time. Inputs without one (e.g. (B, F)
 * features) are given whole on every stream step. Errors: INVALID_ARGUMENT (index). */
RECUR_API recur_status recur_model_input_sequence(const recur_model *model, int32_t index, int32_t *sequence);

/* *stateful is 1 when some layer of the model is stateful (recur_model_run then carries states
 * between calls). */
RECUR_API recur_status recur_model_is_stateful(const recur_model *model, int32_t *stateful);
/* Zeroes the states of every stateful layer (Keras's model.reset_states()). Not thread-safe with
 * runs of the model. */
RECUR_API recur_status recur_model_reset_states(recur_model *model);
/* Floats of the states of stateful layer `layer` ("<name>/forward" or "<name>/backward" for the
 * halves of a Bidirectional, "<name>/cell_<k>" for cell k of an RNN over StackedRNNCells; a layer's
 * own name is matched first, so every name recur_model_stateful_layer lists works, '/' in it or not):
 * num_states x (batch_size, units), h then c. Stateful ConvLSTM layers are reset with the model
 * but not named here. Errors: INVALID_ARGUMENT
 * (no such layer, or it is not stateful). */
RECUR_API recur_status recur_model_states_length(const recur_model *model, const char *layer, size_t *len);
RECUR_API recur_status recur_model_get_states(const recur_model *model, const char *layer, float *out, size_t len);
/* The stateful layers, in config order ("<name>/forward" and "/backward" for a Bidirectional's
 * halves, "<name>/cell_<k>" per cell of a stack): name (owned by the model), states per layer (1 or 2), the fixed batch and the units.
 * Any out pointer may be NULL. Errors: INVALID_ARGUMENT (index). */
RECUR_API recur_status recur_model_num_stateful_layers(const recur_model *model, int32_t *count);
RECUR_API recur_status recur_model_stateful_layer(const recur_model *model, int32_t index, const char **name,
                                                  int32_t *num_states, int32_t *batch, int32_t *units);
/* Sets them (all of them: len must equal recur_model_states_length). Errors: INVALID_ARGUMENT,
 * SHAPE (len). Not thread-safe with runs of the model. */
RECUR_API recur_status recur_model_set_states(recur_model *model, const char *layer, const float *states, size_t len);

/* Keras 3 backend semantics. "tensorflow" (the default; also torch's) or "jax" (also numpy's):
 * they differ at masked steps before the first valid one, where JAX outputs the initial state
 * and TensorFlow zeros, and in that JAX's unroll=True ignores zero_output_for_mask. Errors:
 * INVALID_ARGUMENT (another name), UNSUPPORTED ("jax" for a Keras 2 layer or model). A model
 * passes it to all of its layers. Not thread-safe with calls on the object. */
RECUR_API recur_status recur_layer_set_keras_backend(recur_layer *layer, const char *backend);
RECUR_API recur_status recur_model_set_keras_backend(recur_model *model, const char *backend);

/* Streams through a whole model: one recur_model_state per stream (a batch of rows), any number
 * per model, stepped by any number of threads on one shared model (each state by one thread at a
 * time). recur_model_state_step feeds the next timesteps of every sequence input and returns
 * what the model outputs for them: sequence outputs for those steps, the other outputs as they
 * stand after them. Feeding a sequence in pieces gives the outputs of one recur_model_run_inputs
 * over the whole sequence. A model streams when every layer between its inputs and outputs
 * allows it: recurrent layers without go_backwards or initial_state tensors, per-timestep layers
 * (Dense, Activation, Masking, Embedding, merges, normalizations over features, TimeDistributed,
 * Dropout, the numeric preprocessing layers except multi_hot/count encodings), causal Conv1D
 * with strides 1 (each stream keeps its last (kernel_size - 1) * dilation_rate input steps) and,
 * after a recurrent layer without return_sequences, per-sample layers. */
typedef struct recur_model_state recur_model_state;

/* "" when the model streams, else why not, naming the layer (e.g. "layer 'bi' (Bidirectional)
 * reads the sequence backwards"). Owned by the model. Errors: INVALID_ARGUMENT. */
RECUR_API recur_status recur_model_streamable(const recur_model *model, const char **why);
/* A stream state for `batch` rows, all states zero. The state keeps what it needs of the model:
 * it stays valid after recur_model_destroy. Errors: UNSUPPORTED (the model does not stream: the
 * message names the layer), INVALID_ARGUMENT (batch <= 0, or not the batch_size of the model's
 * stateful layers). */
RECUR_API recur_status recur_model_state_create(recur_model_state **out, const recur_model *model, int32_t batch);
/* Frees a state. NULL is a no-op. */
RECUR_API void recur_model_state_destroy(recur_model_state *state);
/* Zeroes it: the next step starts a new stream. */
RECUR_API recur_status recur_model_state_reset(recur_model_state *state);
/* Floats recur_model_state_step reads (every input for `timesteps` steps, concatenated) and
 * writes (every output, concatenated). */
RECUR_API recur_status recur_model_state_lengths(const recur_model_state *state, int32_t timesteps, size_t *inputs_len,
                                                 size_t *outputs_len);
/* The dims of output `index` of a step of `timesteps` steps (RECUR_MAX_RANK values): sequence
 * outputs hold those steps, the others their whole value. Errors: INVALID_ARGUMENT (index,
 * timesteps < 1), STATE. */
RECUR_API recur_status recur_model_state_output_dims(const recur_model_state *state, int32_t index, int32_t timesteps,
                                                     int64_t *dims, int32_t *rank);
/* Steps the stream `timesteps` (>= 1) steps: inputs and masks as in recur_model_run_inputs with
 * every sequence input holding `timesteps` steps (inputs without a timesteps axis are given on
 * every call). Errors: SHAPE, INVALID_ARGUMENT, STATE (destroyed handle). A step that fails, even
 * in a later layer (an Embedding id out of range), leaves the stream as it was. */
RECUR_API recur_status recur_model_state_step(recur_model_state *state, int32_t timesteps, const float *inputs,
                                              size_t inputs_len, const uint8_t *masks, size_t masks_len,
                                              float *outputs, size_t outputs_len);

/* ------------------------------------------------------------------------------------------ */
/* Resource limits (since 0.5)                                                                 */
/* ------------------------------------------------------------------------------------------ */

/* Every size that comes from a model file, a JSON config or an argument is checked against these
 * process-wide limits before recur allocates for it, so a small hostile input cannot make it take
 * unbounded memory: going over one fails with RECUR_ERR_LIMIT and a message that names the limit,
 * the amount asked for, and how to raise it. The defaults are generous for real models. Creating
 * a layer or opening a model runs no initializer whose result the file's weights replace, so its
 * time grows with the bytes of the input, not with the sizes it declares. Running a model does the
 * work its config declares (a RepeatVector of n steps runs the layers after it for n steps), and
 * every tensor that work builds is checked against RECUR_LIMIT_TENSOR_BYTES. Since 0.8 the limits
 * also bound the whole: all of a model's states together, the peak of a run's live tensors
 * (planned before the run starts), the timesteps a layer creates and an initializer's work, and
 * since 0.9 a run's work (see "Budgets" at the end of this header); with the defaults, opening any
 * model file and running it takes at most about 2 GiB beyond the caller's own buffers and about
 * 10 seconds on a 2-core machine. An application can also set a timeout on its runs
 * (recur_run_options_set_timeout) to bound their time in its own seconds. */
typedef enum recur_limit {
  RECUR_LIMIT_UNITS = 0,        /* units of one recurrent layer (default 65536) */
  RECUR_LIMIT_BATCH = 1,        /* batch of a stateful layer, a recur_state or a recur_model_state
                                   (default 1048576) */
  RECUR_LIMIT_STATE_BYTES = 2,  /* bytes of the states one stateful layer or one state holds, or of
                                   the dropout masks one cell caches; a model state checks each
                                   recurrent layer's (default 256 MiB) */
  RECUR_LIMIT_WEIGHT_BYTES = 3, /* bytes of the weights of one layer as the CPU kernels hold them
                                   (each gate padded to whole panels of 8, 16 or 32 columns by
                                   kernel set, so a layer of few units counts up to 32 times its
                                   Keras size), and of all the layers of one model as the file
                                   stores them (default 1 GiB) */
  RECUR_LIMIT_FILE_BYTES = 4,   /* bytes of a model file or image, and of one member of a .keras
                                   archive (default 4 GiB) */
  RECUR_LIMIT_TENSOR_BYTES = 5, /* bytes of one tensor a model allocates while it is built, runs or
                                   streams, and of the (n x n) float32 product an orthogonal
                                   regularizer forms over n rows or columns (weight penalties in
                                   recur_layer_get_losses, activity penalties in a forward or
                                   cell call: checked before anything changes) (default 1 GiB) */
  /* Budgets over the whole (since 0.8): see "Budgets" at the end of this header. */
  RECUR_LIMIT_TOTAL_STATE_BYTES = 6, /* bytes of the states of all the stateful layers of one
                                   model together, counted as each is built, and of all the states
                                   one model state (stream) holds (default 256 MiB) */
  RECUR_LIMIT_RUN_BYTES = 7,    /* bytes of the tensors live at once in one model run or stream
                                   step (the inputs, every layer's outputs until their last use),
                                   planned from the shapes before the run starts (default 512 MiB) */
  RECUR_LIMIT_TIMESTEPS = 8,    /* timesteps one layer creates: RepeatVector's n, UpSampling1D's
                                   output steps (default 1048576) */
  RECUR_LIMIT_INIT_WORK = 9,    /* work of one initializer whose cost grows faster than its output,
                                   in multiply-adds: Orthogonal's QR of a (rows x cols) matrix
                                   counts max(rows, cols) x min(rows, cols)^2 (default 2^31: a
                                   GRU's Orthogonal recurrent kernel of about 870 units, 1 to 2
                                   seconds on one core) */
  RECUR_LIMIT_RUN_WORK = 10     /* since 0.9: the work of one model run or stream step, planned from
                                   the shapes before it starts, in units of about one multiply-add
                                   of a large matrix product (each layer weighs its loops by what
                                   they cost against that unit: see "Budgets" at the end of this
                                   header) (default 2^38: at most about 4 seconds on one core) */
} recur_limit;

/* The current value of a limit (a recur_limit). Errors: INVALID_ARGUMENT (unknown limit, value
 * NULL). */
RECUR_API recur_status recur_get_limit(int32_t limit, uint64_t *value);
/* The built-in default of a limit. Errors as recur_get_limit. */
RECUR_API recur_status recur_default_limit(int32_t limit, uint64_t *value);
/* Sets a limit for the whole process; 0 restores the default. Objects that already exist keep
 * what they hold; the new value applies to every check after the call. Threads: may be called
 * from any thread at any time (each limit is read atomically), though a call running at the
 * same moment may see either value. Errors: INVALID_ARGUMENT (unknown limit). */
RECUR_API recur_status recur_set_limit(int32_t limit, uint64_t value);

/* ------------------------------------------------------------------------------------------ */
/* Live handles (since 0.5)                                                                    */
/* ------------------------------------------------------------------------------------------ */

/* How many handles of each kind exist in this process right now: layers (cells included), states,
 * models and model states created and not yet destroyed. For leak checks: an application (or a
 * binding's tests) that has closed everything it made should read zeros. Any pointer may be NULL
 * to skip that count. Threads: any; a count is exact at the moment it is read, and handles other
 * threads create or destroy meanwhile may or may not be in it. Never fails. */
RECUR_API recur_status recur_live_handles(uint64_t *layers, uint64_t *states, uint64_t *models,
                                          uint64_t *model_states);


/* ------------------------------------------------------------------------------------------ */
/* Named runs, integer ids, cancellation and logging (since 0.6)                               */
/* ------------------------------------------------------------------------------------------ */

/* Element types of a named input (since 0.6; RECUR_DTYPE_STRING since 0.7). */
typedef enum recur_dtype {
  RECUR_DTYPE_FLOAT32 = 1,
  RECUR_DTYPE_INT32 = 2,
  RECUR_DTYPE_INT64 = 3,
  /* Text for a model input with Keras dtype "string" (read by the model's StringLookup or
   * TextVectorization layers): recur_tensor.data points to an array of `length` pointers
   * (const char *const *), each to a NUL-terminated UTF-8 string, one per element, row-major over
   * dims (e.g. (B, 1) for a TextVectorization input: one text per row). A string ends at its first
   * NUL byte. recur copies the strings during the call and keeps no pointer. */
  RECUR_DTYPE_STRING = 4
} recur_dtype;

#define RECUR_TENSOR_VERSION 1

/* One model input of a named run or step (since 0.6). Initialise with recur_tensor_init; fields
 * are appended in later versions, never reordered. Nothing is kept after the call returns.
 * name:  the model input's name (recur_model_input), required.
 * dtype: a recur_dtype. float32 is read as it is. int32/int64 values are token ids when the input
 *        feeds an Embedding (recur_model_input's token_ids): they reach the lookup as integers,
 *        exact at any size (2^24 + 1 picks row 2^24 + 1). Elsewhere they are cast to float32 as
 *        Keras casts them (to the nearest float). Float token ids keep the rule of
 *        recur_model_run_inputs: each must be a whole number below the Embedding's input_dim, and
 *        ids above 2^24 are not exact as floats.
 *        RECUR_DTYPE_STRING (since 0.7) is required for, and only taken by, a string input
 *        (recur_model_input_dtype); see recur_dtype for its layout. Errors, each naming the input
 *        (and the element index): INVALID_ARGUMENT for a NULL string pointer, a string that is not
 *        valid UTF-8 (overlong forms, surrogates and code points past U+10FFFF included), strings
 *        given to a numeric input or numbers to a string input; LIMIT when the strings together
 *        pass RECUR_LIMIT_TENSOR_BYTES; SHAPE when length is not the product of dims. A string
 *        input takes no mask.
 * data, length: row-major elements of dtype; length = the product of dims.
 * rank, dims: the tensor's dims, batch first (rank <= RECUR_MAX_RANK). Every input has the same
 *        batch; a sequence input's dims[1] is its timesteps (any length >= 1, as Keras runs other
 *        lengths than declared); every other axis must equal the model's.
 * mask, mask_length: NULL/0, or (B, T) bytes (nonzero = valid step) for a sequence input, as
 *        Keras's call(mask=...) takes it. */
typedef struct recur_tensor {
  uint32_t version;              /* set by recur_tensor_init */
  const char *name;
  int32_t dtype;                 /* recur_dtype */
  const void *data;
  size_t length;                 /* elements */
  int32_t rank;
  int64_t dims[RECUR_MAX_RANK];
  const uint8_t *mask;
  size_t mask_length;
} recur_tensor;

#define RECUR_OUTPUT_VERSION 1

/* One requested model output (since 0.6). Initialise with recur_output_init.
 * name:  the model output's name (recur_model_output). A Keras 3 layer with several outputs gives
 *        them one name; "name:k" (k = 0, 1, ...) then selects its k-th, and the bare name is refused
 *        as ambiguous.
 * data, capacity: the caller's float32 buffer and how many floats it holds (at least the
 *        output's size; recur_model_output_shapes tells it).
 * rank, dims, length: written by a successful call: the output's dims and the floats written. */
typedef struct recur_output {
  uint32_t version;              /* set by recur_output_init */
  const char *name;
  float *data;
  size_t capacity;               /* floats */
  int32_t rank;                  /* out */
  int64_t dims[RECUR_MAX_RANK];  /* out */
  size_t length;                 /* out: floats written */
} recur_output;

/* Fill *tensor / *output with empty defaults for the given struct version (pass
 * RECUR_TENSOR_VERSION / RECUR_OUTPUT_VERSION): NULL pointers, zero lengths, dtype float32.
 * Errors: INVALID_ARGUMENT (NULL), UNSUPPORTED (unknown version). */
RECUR_API recur_status recur_tensor_init(recur_tensor *tensor, uint32_t version);
RECUR_API recur_status recur_output_init(recur_output *output, uint32_t version);

/* Options of a run: the handle another thread cancels it with (since 0.6). One options handle
 * may be passed to any number of calls, on any threads; cancelling it stops all of them. The
 * caller owns it (recur_run_options_destroy); it must outlive the calls it is passed to. */
typedef struct recur_run_options recur_run_options;

/* Creates options, not cancelled. Errors: INVALID_ARGUMENT (out NULL). */
RECUR_API recur_status recur_run_options_create(recur_run_options **out);
/* Frees options. NULL is a no-op. Not while a call is using them. */
RECUR_API void recur_run_options_destroy(recur_run_options *options);
/* Asks every call running with these options, and every later one until
 * recur_run_options_reset, to stop: each returns RECUR_ERR_CANCELLED ("cancelled"). A call checks
 * between layers and, on the CPU, between timesteps of each recurrent layer (one relaxed atomic
 * load each): it stops after the timestep, or the non-recurrent layer, that is running; a
 * recurrent layer on a GPU finishes its sequence first. Thread rules: may be called from any thread at any time (it is
 * the one function meant to run concurrently with a call). Errors: INVALID_ARGUMENT (NULL),
 * STATE (destroyed handle). */
RECUR_API recur_status recur_run_options_cancel(recur_run_options *options);
/* Clears a cancel so that the options can be used again. Call it when no call is running with
 * them (a call running meanwhile may or may not see the cancel). Errors as cancel. */
RECUR_API recur_status recur_run_options_reset(recur_run_options *options);
/* How many recur_run_options exist now (created, not destroyed), for leak checks as
 * recur_live_handles (since 0.6). Errors: INVALID_ARGUMENT (count NULL). */
RECUR_API recur_status recur_live_run_options(uint64_t *count);
/* *cancelled is 1 after recur_run_options_cancel, until recur_run_options_reset. */
RECUR_API recur_status recur_run_options_is_cancelled(const recur_run_options *options, int32_t *cancelled);

/* Runs the model on named inputs into per-output buffers (since 0.6): Keras's model.predict on
 * one batch, as recur_model_run_inputs, with inputs and outputs addressed by name.
 * inputs[0..num_inputs): every model input exactly once, in any order (recur_tensor).
 * outputs[0..num_outputs): any subset of the model's outputs, in any order, each once; only those
 *   are written. num_outputs may be 0 (a stateful model then only advances its states).
 * options: NULL, or recur_run_options to cancel the call from another thread.
 * The timesteps of each sequence input come from its dims. Stateful layers start from the states
 * the previous call left, as in recur_model_run_inputs.
 * Errors (each message names the argument, e.g. "inputs[1] ('tokens').dims: expected (B, T),
 * got (2, 3, 4) (rank 3)"): INVALID_ARGUMENT (a NULL array with a count > 0, a negative count, an
 * unknown, missing or repeated input name or an unknown or repeated output name (listing the
 * model's names), a bad dtype or version, NULL data, a mask on an input without timesteps, a
 * token id out of range: the message names the input, the id, its position and the valid range),
 * SHAPE (rank, dims, batch, length, mask_length or an output's capacity: expected vs got),
 * UNSUPPORTED (a layer recur cannot run), LIMIT, CANCELLED, STATE (destroyed handle).
 * On any error no output buffer, dims or length is written, and a stateful model's states are
 * those before the call (a cancelled run restores them).
 * Thread rules: as recur_model_run_inputs (concurrent calls on one model are safe unless it is
 * stateful; then they run one at a time). */
RECUR_API recur_status recur_model_run_named(const recur_model *model, const recur_tensor *inputs, int32_t num_inputs,
                                             recur_output *outputs, int32_t num_outputs,
                                             const recur_run_options *options);

/* Writes rank, dims and length of each requested output for these inputs without running the
 * model (since 0.6); data and capacity are ignored and inputs' data may be NULL (their length must
 * still fit their dims). Errors as recur_model_run_named, less the run's own.
 * Since 0.7: where an output's size depends on the text (a TextVectorization without
 * output_sequence_length gives as many ids as the longest row has tokens), the model is run to
 * tell (a stateful model's states are left as they were), so the string inputs' data is then
 * required. recur_model_run_named checks a text model's output buffers after the run and, when
 * one is too small, writes nothing (SHAPE). */
RECUR_API recur_status recur_model_output_shapes(const recur_model *model, const recur_tensor *inputs,
                                                 int32_t num_inputs, recur_output *outputs, int32_t num_outputs);

/* Steps a model stream with named inputs (since 0.6): as recur_model_state_step, with every
 * sequence input holding the same number of steps (its dims[1]; the batch is the state's) and
 * inputs without a timesteps axis given whole. Integer ids work as in recur_model_run_named.
 * outputs: any subset; sequence outputs hold the steps fed, the others their value after them.
 * options: NULL, or recur_run_options to cancel the step.
 * On any error (cancellation included) the stream is left exactly as before the call: every
 * recurrent state and the last output its masked steps repeat; the next step continues from
 * there. Errors as recur_model_run_named, plus SHAPE for a batch other than the state's or
 * sequence inputs of different lengths. Thread rules: one thread at a time per state; many
 * states of one model may step concurrently. */
RECUR_API recur_status recur_model_state_step_named(recur_model_state *state, const recur_tensor *inputs,
                                                    int32_t num_inputs, recur_output *outputs, int32_t num_outputs,
                                                    const recur_run_options *options);
/* recur_model_output_shapes for a step of a stream (since 0.6). */
RECUR_API recur_status recur_model_state_output_shapes(const recur_model_state *state, const recur_tensor *inputs,
                                                       int32_t num_inputs, recur_output *outputs, int32_t num_outputs);

/* Log levels (since 0.6). */
typedef enum recur_log_level {
  RECUR_LOG_DEBUG = 0,
  RECUR_LOG_INFO = 1,
  RECUR_LOG_WARNING = 2,
  RECUR_LOG_ERROR = 3
} recur_log_level;

/* Receives one message: a line of UTF-8 without a newline, valid only during the call. */
typedef void (*recur_log_callback)(void *user_data, int32_t level, const char *message);

/* Installs the process-wide log callback (since 0.6), which hears what recur decided and why:
 * the CPU kernel set and why (once, when a callback is installed), each layer's and model's
 * device, route (cpu, cudnn or kernel) and its reason, fallbacks ("auto" to the CPU, and why; a
 * GPU plugin that did not load, and why), a summary of each model opened (inputs, outputs, what
 * cannot run or stream) and limits set. Messages below min_level (a recur_log_level) are not
 * built. callback NULL turns logging off (user_data and min_level are then ignored).
 * Thread rules: the callback may be called from any thread that calls into recur, and from
 * several at once; it must be thread-safe, return promptly, and not call
 * recur_set_log_callback (that deadlocks); other recur calls are allowed. recur_set_log_callback
 * may be called from any thread; when it returns, no call of the previous callback is running or
 * will start, so its user_data may be freed. Errors: INVALID_ARGUMENT (min_level not a
 * recur_log_level). */
RECUR_API recur_status recur_set_log_callback(recur_log_callback callback, void *user_data, int32_t min_level);

/* ---- Many model streams stepped in one call (since 0.8) ----
 * Games step hundreds of streams per tick and stream processors thousands of keys: stepping each
 * recur_model_state alone runs one small matrix product per layer per stream. These calls step
 * many states of one model as one batch: every layer runs once per timestep for all of them. */

/* Steps num_states model streams of the same model in one call (since 0.8): the same numbers as
 * calling recur_model_state_step_named on each state with its own rows (up to the float rounding
 * of a matrix product over more rows; the tests hold them within 1e-6 of each other).
 * states[0..num_states): model states from recur_model_state_create on one recur_model, each at
 *   most once; their batch sizes may differ. A state's first step may come in the same call as
 *   other states' later steps.
 * inputs: as recur_model_state_step_named, holding the rows of every state one after another in
 *   the order of states: dims[0] = the sum of the states' batches (state i's rows start after the
 *   rows of states 0..i-1); masks likewise. Every sequence input holds the same number of steps
 *   for all states.
 * outputs: as recur_model_state_step_named, rows concatenated in the order of states (a sequence
 *   output's dims are (sum of batches, steps, ...)). recur_model_states_output_shapes tells them.
 * options: NULL, or recur_run_options to cancel the call or give it a timeout.
 * Streams whose recurrent states line up (the same layers stepped, causal histories of the same
 * length: all streams after their first step) run as one batch wherever they are in `states`;
 * others run in batches of their own within the call (the states stepped for the first time
 * beside states already stepped). A model
 * with a fixed batch size (a stateful Keras model) takes one state per call.
 * Errors (each message names the argument): INVALID_ARGUMENT (num_states < 1, states NULL, a NULL
 * entry, the same state twice, a state of another model than states[0], and all errors of
 * recur_model_state_step_named), SHAPE (an input whose dims[0] is not the sum of the states'
 * batches, and the shape errors of recur_model_state_step_named), STATE (a destroyed state),
 * UNSUPPORTED, LIMIT (the sum of the batches over the batch limit, or the options' timeout
 * passed), CANCELLED.
 * On any error (cancellation included) every state is left exactly as before the call and no
 * output's rank, dims or length is written.
 * Ownership: nothing is kept; the caller owns the states, inputs and output buffers.
 * Thread rules: a call uses all its states: no state may be in use by another thread during it
 * (each state one thread at a time, as recur_model_state_step_named). Calls on disjoint sets of
 * states of one model may run concurrently. The model keeps the batched copies of the states (at
 * most 16384 rows in all, shared by its states and threads), so a repeated call allocates nothing
 * per state. On a GPU (recur_model_set_device) the states stay in device memory: they are gathered
 * into the batch and handed back there, and only the inputs go up and the outputs come down. */
RECUR_API recur_status recur_model_states_step_named(recur_model_state *const *states, int32_t num_states,
                                                     const recur_tensor *inputs, int32_t num_inputs,
                                                     recur_output *outputs, int32_t num_outputs,
                                                     const recur_run_options *options);
/* recur_model_state_output_shapes for recur_model_states_step_named (since 0.8): writes rank,
 * dims and length of each requested output for these inputs without stepping; inputs' data may be
 * NULL. Errors as recur_model_states_step_named, less the run's own. */
RECUR_API recur_status recur_model_states_output_shapes(const recur_model_state *const *states, int32_t num_states,
                                                        const recur_tensor *inputs, int32_t num_inputs,
                                                        recur_output *outputs, int32_t num_outputs);

/* ------------------------------------------------------------------------------------------ */
/* Budgets: untrusted models (since 0.8)                                                       */
/* ------------------------------------------------------------------------------------------ */

/* The limits above bound each thing a model asks for; these bound their sum and the time they
 * take, each checked BEFORE anything is allocated or computed:
 *   RECUR_LIMIT_TOTAL_STATE_BYTES  all the stateful layers of a model together, and a model
 *                                  state's (stream's) states together;
 *   RECUR_LIMIT_RUN_BYTES          the peak of a run's or stream step's live tensors, planned from
 *                                  the shapes (each tensor from the layer that makes it to its
 *                                  last use) before the run starts: the run is refused up front;
 *   RECUR_LIMIT_TIMESTEPS          the timesteps one layer creates (RepeatVector, UpSampling1D);
 *   RECUR_LIMIT_INIT_WORK          an initializer whose work grows faster than its output
 *                                  (Orthogonal), before it starts;
 *   RECUR_LIMIT_RUN_WORK           (since 0.9) the work of a run or stream step, planned with the
 *                                  live tensors: each layer counts what its loops do from the
 *                                  shapes (a recurrent layer: every weight once per row and step,
 *                                  and its gates; an attention: every query-key pair; a pooling
 *                                  window: every step of it; an element-wise layer: every element),
 *                                  weighted by what each step costs, in units of about one
 *                                  multiply-add of a large matrix product.
 * Going over one fails with RECUR_ERR_LIMIT and a message naming the limit, the amount asked for
 * and how to raise it. With the default limits, opening any model file and running it take at
 * most about 2 GiB beyond the caller's own input and output buffers and the weights the file
 * itself holds (run_bytes 512 MiB of live tensors, total_state_bytes 256 MiB of states, and the
 * layers' working buffers), and opening takes time that grows with the file's bytes (no
 * initializer runs whose result the file's weights replace). Creating a layer from JSON runs its
 * initializers once: init_work holds an Orthogonal to a second or two. A run's time grows with
 * the work the model declares (a recurrent layer of u units over T steps at batch B does about
 * 3 B T u (u + features) multiply-adds), which run_work bounds: with the defaults, one run or
 * step takes at most about 4 seconds of one core of a current server (measured over every layer
 * family: docs/budgets.md), and opening plus running any model file stays under about 2 GiB and
 * 10 seconds on a 2-core machine. A service running untrusted models can also set a timeout
 * (recur_run_options_set_timeout), which the run checks between layers and between timesteps,
 * for a bound in its own seconds rather than recur's estimate. */

/* Sets the timeout of every call made with these options: a run (recur_model_run_named) or a
 * stream step (recur_model_state_step_named, recur_model_states_step_named) that has run `seconds` since it started stops at its
 * next check (between layers, and between timesteps of a recurrent layer) and returns
 * RECUR_ERR_LIMIT ("deadline passed after X ms ..."), leaving a stateful model's states or the
 * stream exactly as before the call, as a cancel does. 0 (the default) means no timeout. The
 * timeout counts from the start of each call, so one options handle serves any number of calls.
 * Threads: as recur_run_options_cancel; a call running at the moment it is set may see either
 * value. Errors: INVALID_ARGUMENT (options NULL, seconds negative, NaN or infinite), STATE
 * (destroyed handle). Since 0.8. */
RECUR_API recur_status recur_run_options_set_timeout(recur_run_options *options, double seconds);
/* The timeout recur_run_options_set_timeout set (0: none). Errors: INVALID_ARGUMENT (a pointer
 * NULL), STATE (destroyed handle). Since 0.8. */
RECUR_API recur_status recur_run_options_get_timeout(const recur_run_options *options, double *seconds);

/* ------------------------------------------------------------------------------------------ */
/* Reduced precision weights (since 0.8)                                                      */
/* ------------------------------------------------------------------------------------------ */

/* The precision of a recurrent layer's kernel and recurrent kernel in its matrix products on the
 * CPU (since 0.8). `precision`:
 *   "float32" (the default): Keras's numbers, bit for bit what recur gives without this call;
 *   "bf16":   the kernels rounded to bfloat16 (nearest even), widened to float32 in the product;
 *   "int8":   the kernels as int8 with one scale per output column (symmetric), and each row of
 *             the product's input (x, h) quantized per call to 8 bits (7 on CPUs without AVX-512
 *             VNNI) with its own scale and zero point; integer dot products (vpdpbusd,
 *             vpmaddubsw, or portable code).
 * Biases, states and the gate math stay float32. With bf16 or int8 the outputs differ from
 * Keras's: `recur verify --precision ...` prints by how much for a model file (docs/precision.md
 * lists it for recur's test models: 1e-4 to 5e-3 on outputs of order 1, up to 5e-2 for layers
 * with large weights). On CPUs with AVX512_BF16, bf16 also rounds the rows of x and h to bfloat16
 * inside the product (vdpbf16ps); int8 quantizes them per call, so a row's result does not depend
 * on the other rows of the batch.
 * The float32 weights are kept: recur_layer_get_weights returns them unchanged, setting weights
 * repacks the reduced copy, and setting "float32" again gives exactly the float32 numbers. The
 * reduced copy adds half (bf16) or a quarter (int8) of the kernels' memory.
 * Errors: INVALID_ARGUMENT (precision NULL or not one of "float32", "bf16", "int8"; the message
 * lists them), UNSUPPORTED (the layer is on a GPU, which runs float32 only: move it to the CPU
 * first; or int8 with an input size or units above 65536), STATE (destroyed handle). A layer with
 * a reduced precision refuses recur_layer_set_device to a GPU (UNSUPPORTED; "auto" stays on the
 * CPU). Not thread-safe with other calls on the layer. */
RECUR_API recur_status recur_layer_set_precision(recur_layer *layer, const char *precision);
/* The layer's precision: "float32", "bf16" or "int8" (a static string). Errors: INVALID_ARGUMENT
 * (precision NULL), STATE. */
RECUR_API recur_status recur_layer_get_precision(const recur_layer *layer, const char **precision);
/* Sets the precision of every recurrent layer of the model (recur_model_run, streams, and the
 * layers recur_model_get_layer returns afterwards); the model's other layers (Dense, convolutions,
 * ConvLSTM, ...) stay float32. Errors as recur_layer_set_precision, and UNSUPPORTED when the model
 * is on a GPU or has no recurrent layer (for "bf16" and "int8"); on an error no layer changes.
 * Not thread-safe with other calls on the model or its streams. */
RECUR_API recur_status recur_model_set_precision(recur_model *model, const char *precision);
/* The model's precision as last set ("float32" by default). Errors: INVALID_ARGUMENT, STATE. */
RECUR_API recur_status recur_model_get_precision(const recur_model *model, const char **precision);

/* ------------------------------------------------------------------------------------------ */
/* Model stream snapshots (since 0.9)                                                          */
/* ------------------------------------------------------------------------------------------ */

/* Saves everything a model stream carries to its next step (each recurrent layer's states and
 * last output, each causal layer's past input steps), so that a stream can stop (a checkpoint,
 * another process) and go on later: recur_model_state_load of these bytes into a fresh state of
 * the same model and batch, then further steps, gives bit-identical outputs to never having
 * stopped. The bytes are a versioned little-endian format (magic "RCST", format version, the
 * batch, the model's stream layout: each state's layer name, class, call site and shape; the
 * values; a CRC-32), the same on every platform.
 * Size query: out NULL (capacity ignored) writes the bytes needed to *written and returns OK.
 * out too small (capacity < the bytes needed): writes the bytes needed to *written, nothing to
 * out, and returns RECUR_ERR_SHAPE. Otherwise writes the snapshot to out and its length to
 * *written. The first save of a model's streams runs one small step of ones on a scratch stream
 * to learn the layout (kept by the model).
 * Errors: INVALID_ARGUMENT (written NULL), SHAPE (capacity), STATE (destroyed handle),
 * UNSUPPORTED (a layer keeps integer ids or strings between steps). The state does not change.
 * Thread rules: as recur_model_state_step (one thread at a time per state). Since 0.9. */
RECUR_API recur_status recur_model_state_save(const recur_model_state *state, void *out, size_t capacity,
                                              size_t *written);
/* Loads bytes from recur_model_state_save into `state` (all or nothing: on any error the state is
 * unchanged). The data is copied; the caller keeps ownership.
 * Errors: INVALID_ARGUMENT (data NULL with len > 0; not a snapshot: truncated, wrong magic,
 * unknown format version, checksum mismatch, counts or dims that do not fit the data; saved at
 * another batch: create the state with the saved batch), STATE (destroyed handle; saved by
 * another model or model version: the message names the first layer whose states differ),
 * LIMIT (past inputs over tensor_bytes). Thread rules: as recur_model_state_step. Since 0.9. */
RECUR_API recur_status recur_model_state_load(recur_model_state *state, const void *data, size_t len);

/* ------------------------------------------------------------------------------------------ */
/* Many streams on CUDA device buffers (since 0.9)                                             */
/* ------------------------------------------------------------------------------------------ */

/* recur_layer_forward_states for callers that hold CUDA device buffers: one step of num_states
 * states (each of any batch b_i, resident on the layer's GPU) as one batch, with d_input
 * (sum b_i, F) and d_output (sum b_i, units) device pointers on the layer's GPU; mask is a HOST
 * array of sum b_i bytes, or NULL. cuda_stream is a cudaStream_t (NULL: recur's own stream for the
 * calling thread); the call is ordered on it and returns once d_output is written. The same
 * numbers as recur_layer_forward_states. No host copy of the inputs or outputs is made: the
 * states' rows are gathered and scattered on the device (the serving case of thousands of streams
 * per step, where host copies would cost more than the step). One state whose batch holds every
 * stream (num_states 1) is one slab of device memory and steps in place, with no gather and no
 * per-stream work on the host: the fastest form for many streams. The caller keeps ownership of every
 * buffer. Errors: STATE (the layer is not on a GPU: recur_layer_set_device; a destroyed handle; a
 * cell), INVALID_ARGUMENT (NULL pointers, num_states < 1, the same state twice), SHAPE (a state of
 * another layer shape, mask_len), UNSUPPORTED (a CuDNN layer given a mask; a mask on a layer set
 * to the JAX backend). Thread rules as recur_layer_forward_states: each state used by one thread
 * at a time. Since 0.9. */
RECUR_API recur_status recur_layer_forward_states_device(const recur_layer *layer, void *cuda_stream,
                                                         recur_state *const *states, int32_t num_states,
                                                         const float *d_input, const uint8_t *mask, size_t mask_len,
                                                         float *d_output);

#ifdef __cplusplus
}
#endif

#endif /* RECUR_RECUR_H */
