/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The boundary between the core library and a GPU backend plugin (librecur_cuda.so).
 *
 * The core never links CUDA: it dlopen()s the plugin when a layer or model asks for a GPU, looks
 * up the one exported symbol RECUR_GPU_PLUGIN_ENTRY and calls it with the ABI version it was
 * built with. The plugin answers with its table; the core refuses a table whose abi_version or
 * build_id differs from its own (a plugin from another build), with a message naming both.
 *
 * Everything here is plain C: no exceptions cross it. Every fallible function returns 0 on
 * success or a nonzero code, and then writes a message into err (err_len bytes, always
 * NUL-terminated). Pointers are host pointers unless a field says "device".
 *
 * Layout conventions are the core's: row (b, t) of a sequence tensor is t*B + b when time_major,
 * else b*T + t; states are num_states tensors (B, units) concatenated; weights are row-major in
 * Keras's gate order (GRU z, r, h; LSTM i, f, c, o; SimpleRNN one block).
 */
#ifndef RECUR_GPU_PLUGIN_ABI_H
#define RECUR_GPU_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bump on any change to a struct or function below. */
#define RECUR_GPU_PLUGIN_ABI_VERSION 8
#define RECUR_GPU_PLUGIN_ENTRY "recur_gpu_plugin_entry"
/* The most axes broadcast_op, gather_strided, elementwise and reduce take, the most letters einsum
 * takes and the most inputs elementwise folds. */
#define RECUR_GPU_MAX_RANK 8
#define RECUR_GPU_MAX_EINSUM_LETTERS 12
#define RECUR_GPU_MAX_FOLD_INPUTS 8

/* Return codes. */
#define RECUR_GPU_OK 0
#define RECUR_GPU_ERR_NO_DRIVER 1      /* no (or too old a) CUDA driver */
#define RECUR_GPU_ERR_NO_DEVICE 2      /* driver present, no such GPU */
#define RECUR_GPU_ERR_NO_CUDNN 3       /* cuDNN missing or of another major version */
#define RECUR_GPU_ERR_INVALID 4        /* an argument the core should not have sent */
#define RECUR_GPU_ERR_OUT_OF_MEMORY 5  /* device or host allocation failed */
#define RECUR_GPU_ERR_CUDA 6           /* a CUDA, cuBLAS or cuDNN call failed */

/* Which route a run takes. The core decides (and can say why); the plugin follows. */
#define RECUR_GPU_ROUTE_KERNEL 0 /* recur's kernels: the input projection, then fused steps */
#define RECUR_GPU_ROUTE_CUDNN 1  /* cudnnRNNForward + post-processing kernels */

/* One matrix or bias of the cuDNN weight space, as recur's host layout model places it.
 * The plugin checks every region against cudnnGetRNNWeightParams before uploading. */
typedef struct recur_gpu_cudnn_region {
  int32_t lin_layer_id; /* cuDNN linLayerID: GRU 0..5 (r, z, h on x; r, z, h on h), LSTM 0..7 */
  int32_t is_bias;      /* 0: matrix (rows x cols, row-major), 1: bias (rows values, cols = 1) */
  int64_t offset;       /* in floats, from the start of the weight space */
  int64_t rows;
  int64_t cols;
} recur_gpu_cudnn_region;

/* The cell a layer steps (recur_gpu_layer_desc.cell). */
#define RECUR_GPU_CELL_LSTM 0       /* 4 gates, 2 states (h, c) */
#define RECUR_GPU_CELL_GRU 1        /* 3 gates, 1 state */
#define RECUR_GPU_CELL_SIMPLE_RNN 2 /* h' = act((x@K + b) + h@U): 1 block, 1 state; kernel route only */

/* What a layer computes. Activation codes are recur::Activation values; hard_sigmoid_variant is
 * recur::HardSigmoid (the formula differs between Keras versions). */
typedef struct recur_gpu_layer_desc {
  int32_t device;            /* CUDA ordinal */
  int32_t cell;              /* RECUR_GPU_CELL_* */
  int32_t units;
  int32_t input_size;
  int32_t reset_after;       /* GRU */
  int32_t use_bias;
  int32_t bias_in_projection; /* the input bias is added to x@K (else after x@K + h@U, LSTM impl 2) */
  int32_t activation;
  int32_t activation_hard_sigmoid;
  int32_t recurrent_activation;
  int32_t recurrent_activation_hard_sigmoid;
  int32_t cudnn_capable;     /* the layer may take RECUR_GPU_ROUTE_CUDNN */
} recur_gpu_layer_desc;

/* The weights of a layer, in the form the math uses (CuDNN* layouts already converted).
 * kernel (F, G*u), recurrent (u, G*u), input_bias (G*u) or NULL, recurrent_bias (G*u) or NULL
 * (GRU reset_after only). When the layer is cudnn_capable, cudnn_params holds the whole cuDNN
 * weight space on the host (cudnn_params_len floats) and regions says where each piece is. */
typedef struct recur_gpu_weights {
  const float *kernel;
  const float *recurrent;
  const float *input_bias;
  const float *recurrent_bias;
  const float *cudnn_params;
  int64_t cudnn_params_len;
  const recur_gpu_cudnn_region *regions;
  int32_t num_regions;
} recur_gpu_weights;

/* Where a run's buffers live. */
#define RECUR_GPU_MEMORY_HOST 0   /* host buffers: the plugin copies in and out */
#define RECUR_GPU_MEMORY_DEVICE 1 /* device buffers (and `stream`) from a caller holding them */

/* One run over a sequence (inference or training with host-made dropout masks). `memory` applies
 * to inputs, states, carried_*, sequence_output and last_output; mask, lengths and
 * recurrent_masks are always host arrays (the core plans routes from the mask). */
typedef struct recur_gpu_run {
  int32_t route;            /* RECUR_GPU_ROUTE_* */
  int32_t memory;           /* RECUR_GPU_MEMORY_*: for every pointer below */
  void *stream;             /* cudaStream_t, or NULL for the plugin's own stream */
  int64_t batch;
  int64_t timesteps;
  int32_t time_major;
  int32_t go_backwards;
  int32_t num_inputs;             /* 1, or G (one input per gate: per-gate input dropout) */
  const float *const *inputs;     /* num_inputs pointers, each (rows, F); host array of pointers */
  const uint8_t *mask;            /* (rows) bytes, nonzero = valid, or NULL */
  const int32_t *lengths;         /* cuDNN route with a right-padded mask: per-row valid steps
                                     (host array, B values, may be 0); NULL = all T */
  int32_t zero_output_for_mask;
  int32_t unrolled_mask_quirk;    /* Keras unroll=True with go_backwards: see the CPU backend */
  const float *recurrent_masks;   /* NULL, or G masks (B, u) concatenated (recurrent dropout), host */
  float *states;                  /* in: initial states; out: final states. ns x (B, u). NULL with
                                     memory DEVICE: zero initial states, final states dropped */
  const float *carried_in;        /* the output a masked first step repeats (B, u); NULL = zeros */
  float *carried_out;             /* the last output (B, u), or NULL */
  float *sequence_output;         /* (rows, u) in processing order, or NULL */
  float *last_output;             /* (B, u), or NULL */
  int32_t states_on_device;       /* with memory HOST: states, carried_in and carried_out are device
                                     pointers (a stream's resident state); the rest is host memory */
  int32_t zero_states;            /* plugin-internal: the initial states are zeros (set by the
                                     plugin for the cuDNN route; the core leaves it 0) */
} recur_gpu_run;

/* One step for many independent streams at once (the serving / game case). Each stream's
 * state lives in its own device buffer made by state_alloc; rows are the streams' batch rows,
 * in order. h_rows[r], c_rows[r] (LSTM) and carried_rows[r] are device pointers to row r's
 * vectors (units floats) inside those buffers; the pointer arrays are host arrays. */
typedef struct recur_gpu_step_rows {
  int64_t rows;
  float *const *h_rows;
  float *const *c_rows;             /* NULL for GRU and SimpleRNN */
  float *const *carried_rows;
  const float *input;               /* host (rows, F) */
  const uint8_t *mask;              /* host (rows) or NULL */
  int32_t zero_output_for_mask;
  float *output;                    /* host (rows, u) */
  int32_t memory;                   /* since ABI 4: RECUR_GPU_MEMORY_DEVICE makes input and output
                                       device pointers (the mask stays a host array) */
  void *stream;                     /* since ABI 4: with memory DEVICE, the caller's cudaStream_t
                                       (NULL: the plugin's own stream) */
} recur_gpu_step_rows;

/* Since ABI 5: one call of an attention layer (Attention, AdditiveAttention, MultiHeadAttention),
 * recur_gpu_plugin.attention. Rows of query, key and value are (b, step) at (b * steps + step) *
 * stride; head h reads key_dim floats at h * key_dim of a query and key row and value_dim at
 * h * value_dim of a value row. For each (b, h, i), as the CPU layers compute it:
 *   logit j: DOT sum over c of double(q[c]) * k[c] (q[c] first times `scale` with PRESCALE_QUERY),
 *            rounded to float, then times `scale` with SCALE_LOGITS;
 *            CONCAT concat_weight * float(sum of double(tanhf(x))), x = q[c] + k[c] (times `scale`
 *            first with SCALE_LOGITS);
 *            ADDITIVE float(sum of double(feature_scale[c] * tanhf(q[c] + k[c])));
 *   a masked j (a value or key step masked off, j > i with CAUSAL (j > i + v_steps - q_steps with
 *            CAUSAL_LAST, since ABI 7: the queries are the last q_steps of the steps attended
 *            over, a stream's step after its past), attention_mask 0, and with
 *            QUERY_MASKS_SCORES a masked query) gets -1e9 added, or is -1e9 with REPLACE_MASKED;
 *   the weights: the softmax of the logits in double (max, the sum of exp(x - max), exp(x - max) /
 *            sum), rounded to float, written to scores; with ZERO_MASKED the masked ones then 0;
 *   output c: float(sum over j of double(weight j) * v[c]); 0 for a masked query unless
 *            QUERY_MASKS_SCORES. */
#define RECUR_GPU_ATTN_DOT 0
#define RECUR_GPU_ATTN_CONCAT 1
#define RECUR_GPU_ATTN_ADDITIVE 2
#define RECUR_GPU_ATTN_PRESCALE_QUERY 1    /* flags */
#define RECUR_GPU_ATTN_SCALE_LOGITS 2
#define RECUR_GPU_ATTN_CAUSAL 4
#define RECUR_GPU_ATTN_REPLACE_MASKED 8
#define RECUR_GPU_ATTN_ZERO_MASKED 16
#define RECUR_GPU_ATTN_QUERY_MASKS_SCORES 32
#define RECUR_GPU_ATTN_CAUSAL_LAST 64
typedef struct recur_gpu_attention {
  int32_t score; /* RECUR_GPU_ATTN_DOT, _CONCAT or _ADDITIVE */
  int32_t flags; /* RECUR_GPU_ATTN_* flags */
  int64_t batch, heads, q_steps, v_steps, key_dim, value_dim;
  const float *query; /* device */
  int64_t query_stride;
  const float *key; /* device */
  int64_t key_stride;
  const float *value; /* device */
  int64_t value_stride;
  float scale, concat_weight;
  const float *feature_scale;      /* ADDITIVE: key_dim floats, device */
  const uint8_t *host_query_mask;  /* (batch, q_steps) bytes, nonzero: kept; or NULL */
  const uint8_t *host_value_mask;  /* (batch, v_steps) bytes; or NULL */
  const float *attention_mask;     /* (batch, q_steps, v_steps) floats, nonzero: kept; device; or NULL */
  float *scores;                   /* (batch, heads, q_steps, v_steps): the weights; device */
  float *output;                   /* rows (b, i) of heads * value_dim floats at (b * q_steps + i) * output_stride; device */
  int64_t output_stride;
} recur_gpu_attention;

/* Since ABI 6: an elementwise op over inputs broadcast to one output (Keras's merges, Keras 3's op
 * nodes), recur_gpu_plugin.elementwise. For each output element (index i_d along axis d of the
 * row-major `dims`), input k reads inputs[k][sum of i_d * strides[k * rank + d]] (strides 0 where it
 * broadcasts), or constants[k] where inputs[k] is NULL. One input: a unary op. More: folded left to
 * right, acc = op(acc, next) (AVERAGE adds, then divides by the count; comparisons and logical ops
 * take two). With masks (Keras 3's masked Multiply, Maximum and Minimum; rank >= 3), input k's mask
 * byte for (i_0, i_1) is masks[k][i_0 * dims[1] + i_1] (masks[k] NULL: unmasked): a masked value
 * counts as 1 in MUL, and in MAX/MIN the value of the other side (the first valid one so far); a
 * MUL where every input is masked gives 0. */
typedef struct recur_gpu_elementwise {
  int32_t op;                  /* RECUR_GPU_OP_* */
  int32_t num_inputs;          /* 1 .. RECUR_GPU_MAX_FOLD_INPUTS */
  const float *const *inputs;  /* host array of num_inputs device pointers (or NULL: a constant) */
  const int64_t *input_floats; /* host array: each input's size; every offset read must lie in it */
  const float *constants;      /* host array of num_inputs scalars, or NULL when no input is one */
  int32_t rank;                /* 1 .. RECUR_GPU_MAX_RANK */
  const int64_t *dims;         /* host array: the output's sizes */
  const int64_t *strides;      /* host array (num_inputs x rank) */
  const uint8_t *const *masks; /* NULL, or a host array of num_inputs host arrays (or NULL) */
  float *out;                  /* device */
} recur_gpu_elementwise;

typedef struct recur_gpu_plugin {
  uint32_t abi_version;  /* RECUR_GPU_PLUGIN_ABI_VERSION of the plugin's build */
  uint32_t struct_size;  /* sizeof(recur_gpu_plugin) in the plugin's build */
  const char *build_id;  /* the recur version and ABI the plugin was built with */
  const char *name;      /* "cuda" (or "emulator" for the CPU-only test double) */

  /* Number of usable devices, or a code (NO_DRIVER, NO_DEVICE, NO_CUDNN) with a message saying
   * what is missing. Cheap after the first call. */
  int (*probe)(int32_t *device_count, char *err, size_t err_len);
  /* "NVIDIA H100 80GB HBM3, compute 9.0, cuDNN 9.19.0" for messages and reports; on failure a
   * nonzero code with the reason written into `out` instead. */
  int (*device_name)(int32_t device, char *out, size_t out_len);

  /* Layers: weights on the device, uploaded once per set_weights. Thread rules: set_weights and
   * destroy are exclusive; run may be called concurrently on one layer from many threads. */
  int (*layer_create)(const recur_gpu_layer_desc *desc, void **layer, char *err, size_t err_len);
  int (*layer_set_weights)(void *layer, const recur_gpu_weights *weights, char *err, size_t err_len);
  /* Returns once the outputs are written. With a caller's stream, the work this thread queued on
   * the plugin's own stream (buffer copies, model ops) is finished first. */
  int (*layer_run)(void *layer, const recur_gpu_run *run, char *err, size_t err_len);
  void (*layer_destroy)(void *layer);

  /* Device buffers for resident states (floats). */
  int (*buffer_alloc)(int32_t device, int64_t floats, void **buffer, char *err, size_t err_len);
  void (*buffer_free)(void *buffer);
  int (*buffer_upload)(void *buffer, int64_t offset, const float *src, int64_t floats, char *err, size_t err_len);
  int (*buffer_download)(const void *buffer, int64_t offset, float *dst, int64_t floats, char *err, size_t err_len);
  float *(*buffer_device_pointer)(void *buffer);

  /* One step of many streams whose states are device-resident (see recur_gpu_step_rows). */
  int (*layer_step_rows)(void *layer, const recur_gpu_step_rows *step, char *err, size_t err_len);

  /* Device tensor ops for whole models (the layers around the recurrent ones), so a model runs
   * without a round trip to the host between layers. All pointers are device pointers made with
   * buffer_alloc (buffer_device_pointer plus an offset) unless named host_; all work is ordered on
   * the calling thread's stream for `device`, and buffer_download waits for it. */
  /* y (rows, out) = act(x (rows, in) @ w (in, out) + b (out) or no bias). */
  int (*dense)(int32_t device, const float *x, int64_t rows, int64_t in, const float *w, const float *b, int64_t out,
               int32_t activation, int32_t hard_sigmoid_variant, float *y, char *err, size_t err_len);
  /* In place, per row of `cols` (softmax-like activations normalise over the row). */
  int (*activate)(int32_t device, float *data, int64_t rows, int64_t cols, int32_t activation,
                  int32_t hard_sigmoid_variant, char *err, size_t err_len);
  /* out[i, :] = table[host_ids[i], :] (ids already checked by the core). */
  int (*gather_rows)(int32_t device, const float *table, int64_t cols, const int32_t *host_ids, int64_t n, float *out,
                     char *err, size_t err_len);
  /* out = a (op) b elementwise over n floats; op: RECUR_GPU_OP_*. out may alias a. */
  int (*binary)(int32_t device, int32_t op, const float *a, const float *b, int64_t n, float *out, char *err,
                size_t err_len);
  /* Copies a (rows x cols) block between strided row-major tensors (concatenation, slicing). */
  int (*copy2d)(int32_t device, const float *src, int64_t src_stride, float *dst, int64_t dst_stride, int64_t rows,
                int64_t cols, char *err, size_t err_len);

  /* Since ABI 4: more of the layers around the recurrent ones. */
  /* ---- normalization and activation layers with arguments */
  /* Normalizes x (batch, positions, channels) into y over groups: a group is one sample's
   * channels/groups consecutive channels at every position (LayerNormalization, RMSNormalization
   * and UnitNormalization over trailing axes: batch = rows, positions = 1, groups = 1;
   * GroupNormalization: positions = the non-batch positions). Statistics are one serial loop per
   * group (positions outer, channels inner), in double for LAYER and GROUP and in float otherwise,
   * as the CPU layers compute them. gamma and beta (channels floats) scale and shift each channel,
   * NULL for none: RMS needs gamma, the unit norms read neither. x, gamma, beta and y are device
   * pointers; y may alias x. kind RECUR_GPU_NORM_*: */
#define RECUR_GPU_NORM_LAYER 0       /* inv = rsqrt(var + eps) * gamma; x * inv + (-mean * inv + beta) */
#define RECUR_GPU_NORM_GROUP 1       /* the same rounded as GroupNormalization: x * inv + (beta - mean * inv) */
#define RECUR_GPU_NORM_RMS 2         /* x * rsqrt(sum(x^2) / count + eps) * gamma */
#define RECUR_GPU_NORM_UNIT_KERAS3 3 /* x * min(rsqrt(sum x^2), 1e12) */
#define RECUR_GPU_NORM_UNIT_KERAS2 4 /* x * rsqrt(max(sum x^2, 1e-12)) */
  int (*normalize)(int32_t device, int32_t kind, const float *x, int64_t batch, int64_t positions, int64_t channels,
                   int64_t groups, float epsilon, const float *gamma, const float *beta, float *y, char *err,
                   size_t err_len);
  /* y[k] = f(x[k], p[a], q[a]) over a row-major tensor of `rank` (1..8) sizes `dims`, where a is the
   * sum over axes of k's index along the axis times strides[axis] (0 along an axis the parameters do
   * not vary over). dims and strides are host arrays; x, p, q and y device pointers (y may alias
   * x). kind RECUR_GPU_BCAST_*: */
#define RECUR_GPU_BCAST_AFFINE 0 /* x * p + q (BatchNormalization, its statistics folded into p, q) */
#define RECUR_GPU_BCAST_PRELU 1  /* max(x, 0) + -p * max(-x, 0) (PReLU, p = alpha; q unused, may be NULL) */
  int (*broadcast_op)(int32_t device, int32_t kind, const float *x, int32_t rank, const int64_t *dims,
                      const int64_t *strides, const float *p, const float *q, float *y, char *err, size_t err_len);
  /* y = f(x) elementwise over n floats with arguments a, b, c, in float32 as Keras computes them.
   * x and y are device pointers (y may alias x). kind RECUR_GPU_ACT_*: */
#define RECUR_GPU_ACT_RELU 0        /* Keras relu: negative_slope a, threshold b, max_value c (flags HAS_MAX) */
#define RECUR_GPU_ACT_ELU 1         /* x > 0 ? x : a * expm1(x) */
#define RECUR_GPU_ACT_THRESHOLDED 2 /* x > a ? x : 0 */
#define RECUR_GPU_ACT_HAS_MAX 1     /* flags: RELU clips at max_value c */
  int (*activate_args)(int32_t device, int32_t kind, const float *x, int64_t n, float a, float b, float c,
                       int32_t flags, float *y, char *err, size_t err_len);
  /* Softmax of x (outer, n, inner) over its middle axis into y (several adjacent axes: n their
   * product), each row one serial loop as the CPU: max, then the sum of exp(x - max), then
   * exp(x - max) / sum, or exp(x - max - log(sum)) when log_sum_exp (Keras over several axes).
   * host_mask: NULL, or a (mask_rows, mask_cols) byte mask (nonzero: keep) broadcast against x from
   * its last axis (last, prev: x's last two sizes; each mask size is 1 or the size it meets), applied
   * by `mode` RECUR_GPU_SOFTMAX_MASK_*. x and y are device pointers (y may alias x); host_mask is a
   * host array. */
#define RECUR_GPU_SOFTMAX_MASK_ADD 0          /* Keras 2: masked values get -1e9 added */
#define RECUR_GPU_SOFTMAX_MASK_REPLACE 1      /* Keras 2 robust_masking: masked values become -1e9 */
#define RECUR_GPU_SOFTMAX_MASK_REPLACE_ZERO 2 /* Keras 3: become -1e9, their outputs then 0 */
  int (*softmax_axis)(int32_t device, const float *x, int64_t outer, int64_t n, int64_t inner, int32_t log_sum_exp,
                      const uint8_t *host_mask, int64_t mask_rows, int64_t mask_cols, int64_t last, int64_t prev,
                      int32_t mode, float *y, char *err, size_t err_len);
  /* ---- end of normalization and activation layers */
  /* ---- pooling, convolution, padding */
  /* Pooling over the steps of x (batch, steps, features), or (batch, features, steps) when
   * channels_first: output step o takes the steps [o*strides - pad, o*strides - pad + pool) that lie
   * in [0, steps); y is (batch, out_steps, features) (or (batch, features, out_steps)). A global
   * pooling is pool = steps, strides = 1, pad = 0, out_steps = 1. Each output element is one serial
   * loop over its window in step order (the CPU layers' float sums). kind RECUR_GPU_POOL_*:
   * MAX (NaN-skipping as std::max), AVERAGE (the sum over the window's steps in the input), and the
   * global average weighted by host_mask (batch, mask_len) bytes: MASKED_MULTIPLY (Keras 2:
   * sum v * (m ? 1 : 0) / sum m) or MASKED_SELECT (Keras 3: sum over the kept steps / their count);
   * mask_len is steps or 1 (one flag per row), and host_mask is NULL for the unmasked kinds.
   * x and y are device pointers; host_mask is a host array. */
#define RECUR_GPU_POOL_MAX 0
#define RECUR_GPU_POOL_AVERAGE 1
#define RECUR_GPU_POOL_MASKED_MULTIPLY 2
#define RECUR_GPU_POOL_MASKED_SELECT 3
  int (*pool1d)(int32_t device, int32_t kind, const float *x, int64_t batch, int64_t steps, int64_t features,
                int32_t channels_first, int64_t pool, int64_t strides, int64_t pad, int64_t out_steps,
                const uint8_t *host_mask, int64_t mask_len, float *y, char *err, size_t err_len);
  /* A grouped 1D convolution, channels_last: y (batch, out_steps, out_channels) =
   * act(conv(x (batch, steps, in_channels), kernel (kernel_size, in_channels/groups, out_channels))
   * + bias), output step t reading input steps t*strides + k*dilation - pad (zeros outside the
   * input). Each output element sums its taps in order, each tap's group channels in order, from
   * zero, then adds bias (out_channels, or NULL), as the CPU's Conv1D. in_channels and
   * out_channels are multiples of groups. x, kernel, bias and y are device pointers; activation
   * codes as in dense. */
  int (*conv1d)(int32_t device, const float *x, int64_t batch, int64_t steps, int64_t in_channels, const float *kernel,
                int64_t kernel_size, int64_t groups, int64_t out_channels, const float *bias, int64_t strides,
                int64_t dilation, int64_t pad, int64_t out_steps, int32_t activation, int32_t hard_sigmoid_variant,
                float *y, char *err, size_t err_len);
  /* Conv1DTranspose, channels_last: input step u, tap k adds x[u] @ kernel[k]^T (kernel
   * (kernel_size, filters, in_channels)) to output step u*strides + k*dilation - pad of y (batch,
   * out_steps, filters), those outside [0, out_steps) dropped; then + bias (filters, or NULL) and
   * the activation. Each output element adds its taps in the order u ascending (each tap's sum
   * over the channels in order, from zero), as the CPU's layer. Device pointers as conv1d. */
  int (*conv1d_transpose)(int32_t device, const float *x, int64_t batch, int64_t steps, int64_t in_channels,
                          const float *kernel, int64_t kernel_size, int64_t filters, const float *bias, int64_t strides,
                          int64_t dilation, int64_t pad, int64_t out_steps, int32_t activation,
                          int32_t hard_sigmoid_variant, float *y, char *err, size_t err_len);
  /* y[0, n) = value (a zero padding's background); y is a device pointer. */
  int (*fill)(int32_t device, float *y, int64_t n, float value, char *err, size_t err_len);
  /* ---- end of pooling, convolution, padding */

  /* Since ABI 5: the attention layers, strided reads, Masking, Dot and EinsumDense. */
  /* y (rows, n), row r at r * y_stride, = x (rows, c) @ w (c, n) + b (n floats, or NULL): each
   * element one serial sum over c of double(x) * w, rounded to float, then + b in float
   * (MultiHeadAttention's projections). x, w, b and y are device pointers. */
  int (*project)(int32_t device, const float *x, int64_t rows, int64_t c, const float *w, const float *b, int64_t n,
                 float *y, int64_t y_stride, char *err, size_t err_len);
  /* One attention call (recur_gpu_attention above). */
  int (*attention)(int32_t device, const recur_gpu_attention *a, char *err, size_t err_len);
  /* y[k] = x[offset + sum over axes d of i_d * strides[d]], k running over a row-major tensor of
   * `rank` (1..8) sizes `dims` and i_d its index along d (Permute, Transpose, strided slices).
   * Strides may be 0 or negative; every offset read must lie in [0, x_floats). dims and strides
   * are host arrays; x and y device pointers. */
  int (*gather_strided)(int32_t device, const float *x, int64_t x_floats, int64_t offset, int32_t rank,
                        const int64_t *dims, const int64_t *strides, float *y, char *err, size_t err_len);
  /* Keras's Masking over x (rows, width): host_keep[r] = 1 when any float of row r differs from
   * value (float !=, so NaN differs), else 0; y = x with the rows not kept zeroed. Returns once
   * host_keep (a host array of `rows` bytes) is written. x and y are device pointers. */
  int (*mask_rows)(int32_t device, const float *x, int64_t rows, int64_t width, float value, float *y,
                   uint8_t *host_keep, char *err, size_t err_len);
  /* Keras's Dot: out[b, i, j, p, q] = the float sum over c in order of x[b, i, c, j] * y[b, p, c, q]
   * for x (batch, xo, k, xi), y (batch, yo, k, yi), out (batch, xo, xi, yo, yi); device pointers. */
  int (*dot)(int32_t device, const float *x, const float *y, int64_t batch, int64_t xo, int64_t k, int64_t xi,
             int64_t yo, int64_t yi, float *out, char *err, size_t err_len);
  /* EinsumDense's product over `letters` (1..12) index letters, the first `out_letters` of them y's
   * axes in order: y (row-major) = the float sum, over the other letters in row-major order, of
   * x * kernel, each read at the sum of its letters' indices times x_strides / k_strides (0 for a
   * letter it lacks), then + bias at the sum of y's indices times bias_strides (bias NULL: none).
   * sizes and the strides are host arrays; x, kernel, bias and y device pointers. */
  int (*einsum)(int32_t device, const float *x, const float *kernel, int32_t letters, int32_t out_letters,
                const int64_t *sizes, const int64_t *x_strides, const int64_t *k_strides, const float *bias,
                const int64_t *bias_strides, float *y, char *err, size_t err_len);

  /* Since ABI 6: Keras 3's op nodes and merges that broadcast or are masked. */
  /* One elementwise op (recur_gpu_elementwise above). */
  int (*elementwise)(int32_t device, const recur_gpu_elementwise *e, char *err, size_t err_len);
  /* y = x (row-major, `rank` 1..8 sizes `dims`) reduced over the axes whose bits are set in
   * `axes` (bit d: axis d), y row-major over the others. Each y element folds its inputs in
   * row-major order of the reduced axes from RECUR_GPU_REDUCE_*'s start: acc = acc + v (SUM, MEAN;
   * MEAN then divides by their count in float), acc < v ? v : acc (MAX, from -inf), v < acc ? v :
   * acc (MIN, from +inf), acc != 0 || v != 0 (ANY, from 0), acc != 0 && v != 0 (ALL, from 1).
   * dims is a host array; x and y are device pointers. */
#define RECUR_GPU_REDUCE_SUM 0
#define RECUR_GPU_REDUCE_MEAN 1
#define RECUR_GPU_REDUCE_MAX 2
#define RECUR_GPU_REDUCE_MIN 3
#define RECUR_GPU_REDUCE_ANY 4
#define RECUR_GPU_REDUCE_ALL 5
  int (*reduce)(int32_t device, int32_t kind, const float *x, int32_t rank, const int64_t *dims, uint32_t axes,
                float *y, char *err, size_t err_len);

  /* Since ABI 8: many streams' states batched on the device. */
  /* For each block i < n: counts[i] floats from src[i] to dst[i], all blocks in one launch, queued
   * in order with the model ops. src, dst and counts are host arrays of n entries; the pointers
   * they hold are device pointers. No destination may overlap another block's source or
   * destination. */
  int (*copy_blocks)(int32_t device, const float *const *src, float *const *dst, const int64_t *counts, int64_t n,
                     char *err, size_t err_len);
} recur_gpu_plugin;

#define RECUR_GPU_OP_ADD 0
#define RECUR_GPU_OP_MUL 1
#define RECUR_GPU_OP_AVERAGE 2 /* (a + b) / 2 */
#define RECUR_GPU_OP_SUB 3     /* a - b (since ABI 4) */
#define RECUR_GPU_OP_MAX 4     /* a < b ? b : a, as std::max (since ABI 4) */
#define RECUR_GPU_OP_MIN 5     /* b < a ? b : a, as std::min (since ABI 4) */
/* Since ABI 6, elementwise only: */
#define RECUR_GPU_OP_DIV 6           /* a / b */
#define RECUR_GPU_OP_NOT_EQUAL 7     /* the comparisons give 1 or 0 (float compares: NaN != NaN) */
#define RECUR_GPU_OP_EQUAL 8
#define RECUR_GPU_OP_GREATER 9
#define RECUR_GPU_OP_GREATER_EQUAL 10
#define RECUR_GPU_OP_LESS 11
#define RECUR_GPU_OP_LESS_EQUAL 12
#define RECUR_GPU_OP_LOGICAL_AND 13  /* a != 0 && b != 0 */
#define RECUR_GPU_OP_LOGICAL_OR 14
#define RECUR_GPU_OP_LOGICAL_XOR 15  /* (a != 0) != (b != 0) */
#define RECUR_GPU_OP_LOGICAL_NOT 16  /* unary: a == 0 */
#define RECUR_GPU_OP_ABS 17          /* unary: fabs */
#define RECUR_GPU_OP_NEGATIVE 18     /* unary: -a */
#define RECUR_GPU_OP_SQUARE 19       /* unary: a * a */
#define RECUR_GPU_OP_SQRT 20         /* unary: the correctly rounded square root */
#define RECUR_GPU_OP_TO_BOOL 21      /* unary: a != 0 */
#define RECUR_GPU_OP_TRUNC 22        /* unary: trunc(a) (a cast to an integer type) */
#define RECUR_GPU_OP_COPY 23         /* unary: a */

/* The plugin's one exported symbol. Returns NULL when it cannot serve `core_abi_version`. */
typedef const recur_gpu_plugin *(*recur_gpu_plugin_entry_fn)(uint32_t core_abi_version);

#ifdef __cplusplus
}
#endif

#endif /* RECUR_GPU_PLUGIN_ABI_H */
