// SPDX-License-Identifier: Apache-2.0
// What turns a cuDNN forward pass into Keras's results, shared by the plugin's CUDA kernels
// (cudnn_route.cu) and the CPU-only emulator (tests/gpu_emulator/emulated_cudnn.cpp), so that the
// two differ only in how cudnnRNNForward itself is computed.
//
// cuDNN runs each row over its first len' = max(len, 1) steps (a row of length 0 runs one step
// whose results are discarded), writes 0 at padded outputs and returns the state after step
// len' - 1. Keras instead visits every step in processing order: a masked step keeps the state and
// repeats the previous output (the carried-in output, or 0), or writes 0 with zero_output_for_mask;
// go_backwards visits the padding first. The per-element functions below map one onto the other;
// each is called for every element index of its tensor, by a kernel or by a host loop.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "recur/gpu_plugin_abi.h"

#include "hd.hpp"

namespace recur::cuda::cudnn_post {

// Everything the post-processing reads and writes. Tensors are row-major with row (b, t) at
// t*B + b when time_major, else b*T + t.
struct PostArgs {
  int64_t batch = 0;
  int64_t timesteps = 0;
  int64_t units = 0;
  int64_t features = 0;
  int32_t time_major = 0;
  int32_t go_backwards = 0;
  int32_t zero_output_for_mask = 0;
  int32_t num_states = 1;
  const int32_t* lengths = nullptr;   // B valid steps per row, 0..T (never null)
  const float* x = nullptr;           // (rows, F) the layer's input
  float* x_rev = nullptr;             // (rows, F) cuDNN's input under go_backwards
  const float* y = nullptr;           // (rows, u) cuDNN's output
  float* out = nullptr;               // (rows, u) the sequence output, in processing order
  const float* carried_in = nullptr;  // (B, u) or null (zeros)
  float* carried_out = nullptr;       // (B, u) or null; may alias carried_in
  float* last_output = nullptr;       // (B, u) or null
  const float* hy = nullptr;          // ns x (B, u) cuDNN's final states
  float* states = nullptr;            // ns x (B, u): initial states in, final states out
};

// The arguments every post-processing step shares, from the run and the layer; the caller adds
// its buffers (x, x_rev, y, out) and cuDNN's final states (hy).
inline PostArgs post_args(const recur_gpu_run& r, const recur_gpu_layer_desc& d, const int32_t* lengths,
                          const float* hy) {
  PostArgs a;
  a.batch = r.batch;
  a.timesteps = r.timesteps;
  a.units = d.units;
  a.features = d.input_size;
  a.time_major = r.time_major;
  a.go_backwards = r.go_backwards;
  a.zero_output_for_mask = r.zero_output_for_mask;
  a.num_states = d.cell == RECUR_GPU_CELL_LSTM ? 2 : 1;
  a.lengths = lengths;
  a.carried_in = r.carried_in;
  a.carried_out = r.carried_out;
  a.last_output = r.last_output;
  a.hy = hy;
  a.states = r.states;
  return a;
}

RECUR_HD inline int64_t seq_row(const PostArgs& a, int64_t b, int64_t t) {
  return a.time_major ? t * a.batch + b : b * a.timesteps + t;
}

RECUR_HD inline void split_row(const PostArgs& a, int64_t row, int64_t& b, int64_t& t) {
  if (a.time_major) {
    t = row / a.batch;
    b = row % a.batch;
  } else {
    b = row / a.timesteps;
    t = row % a.timesteps;
  }
}

// The length cuDNN is given: it cannot run an empty row.
RECUR_HD inline int32_t cudnn_length(int32_t len) { return len > 0 ? len : 1; }

// Under go_backwards cuDNN's step t reads input step len-1-t: each row's valid steps reversed,
// the padding left at the end (Keras's reverse_sequence).
RECUR_HD inline int64_t reversed_step(int64_t t, int64_t len) { return t < len ? len - 1 - t : t; }

constexpr int64_t kCarried = -1;  // a masked step repeating the output carried in
constexpr int64_t kZero = -2;     // a masked step writing 0

// Which cuDNN output step Keras's output at processing step k equals, or kCarried / kZero.
RECUR_HD inline int64_t output_source(int64_t k, int64_t len, int64_t T, bool go_backwards, bool zero_masked) {
  if (go_backwards) {
    // The padding (input steps T-1 .. len) comes first, before any valid step.
    const int64_t first_valid = T - len;
    if (k >= first_valid) return k - first_valid;
    return zero_masked ? kZero : kCarried;
  }
  if (k < len) return k;
  if (zero_masked) return kZero;
  return len > 0 ? len - 1 : kCarried;
}

RECUR_HD inline float output_value(const PostArgs& a, int64_t b, int64_t k, int64_t j) {
  const int64_t src = output_source(k, a.lengths[b], a.timesteps, a.go_backwards != 0, a.zero_output_for_mask != 0);
  if (src >= 0) return a.y[seq_row(a, b, src) * a.units + j];
  if (src == kCarried && a.carried_in) return a.carried_in[b * a.units + j];
  return 0.0f;
}

// Element i of x_rev (rows * F elements).
RECUR_HD inline void reverse_input_element(const PostArgs& a, int64_t i) {
  const int64_t row = i / a.features, f = i % a.features;
  int64_t b, t;
  split_row(a, row, b, t);
  a.x_rev[i] = a.x[seq_row(a, b, reversed_step(t, a.lengths[b])) * a.features + f];
}

// Element i of the sequence output (rows * u elements). padded_only: `out` is `y` (cuDNN wrote
// the output in place), so the elements that already hold their own cuDNN step are left alone.
RECUR_HD inline void output_element(const PostArgs& a, int64_t i, bool padded_only) {
  const int64_t row = i / a.units, j = i % a.units;
  int64_t b, k;
  split_row(a, row, b, k);
  if (padded_only && output_source(k, a.lengths[b], a.timesteps, a.go_backwards != 0, a.zero_output_for_mask != 0) == k)
    return;
  a.out[i] = output_value(a, b, k, j);
}

// Element i of (B, u): the last output (processing step T-1), the carried output and the states.
// Rows of length 0 keep their initial states (cuDNN ran them one step).
RECUR_HD inline void finish_element(const PostArgs& a, int64_t i) {
  const int64_t b = i / a.units, j = i % a.units;
  // Read before writing: carried_out may alias carried_in.
  const float last = a.timesteps > 0 ? output_value(a, b, a.timesteps - 1, j) : (a.carried_in ? a.carried_in[i] : 0.0f);
  if (a.last_output) a.last_output[i] = last;
  if (a.carried_out) a.carried_out[i] = last;
  if (a.lengths[b] > 0) {
    const int64_t plane = a.batch * a.units;
    for (int32_t s = 0; s < a.num_states; ++s) a.states[s * plane + i] = a.hy[s * plane + i];
  }
}

// ---- Host side: checks and planning, identical for the real route and the emulator ----

// Per-call host facts derived from a run.
struct RunPlan {
  std::vector<int32_t> lengths;  // [valid lengths (B) | cuDNN lengths (B)], uploaded together
  bool all_full = true;          // every row has T valid steps
  bool direct = false;           // cuDNN writes the sequence output in place
  bool fill_padded = false;      // direct, with padded rows: rewrite their padded steps
  bool scatter = false;          // the sequence output is gathered from a temporary y
};

// The layers the route computes (the core only sends these).
inline bool route_supports(const recur_gpu_layer_desc& d, std::string& err) {
  const bool gru = d.cell == RECUR_GPU_CELL_GRU;
  if (!d.cudnn_capable || d.units < 1 || d.input_size < 1 || (gru && !d.reset_after) ||
      (!gru && d.cell != RECUR_GPU_CELL_LSTM)) {
    err =
        "the cuDNN route was asked for a layer cuDNN does not compute (it takes GRU reset_after=True or LSTM "
        "with tanh/sigmoid, units and input size >= 1)";
    return false;
  }
  return true;
}

// Checks what the core guarantees for route CUDNN and plans the call. Returns a RECUR_GPU_* code.
inline int plan_run(const recur_gpu_run& r, RunPlan& p, std::string& err) {
  if (r.route != RECUR_GPU_ROUTE_CUDNN) {
    err = "the cuDNN route was handed a run for another route";
    return RECUR_GPU_ERR_INVALID;
  }
  if (r.memory != RECUR_GPU_MEMORY_DEVICE) {
    err = "the cuDNN route takes device buffers only (the runner stages host buffers)";
    return RECUR_GPU_ERR_INVALID;
  }
  if (r.mask || r.recurrent_masks || r.unrolled_mask_quirk || r.num_inputs != 1) {
    err =
        "the cuDNN route takes no mask bytes, recurrent masks, unroll quirk or per-gate inputs "
        "(a right-padded mask comes as lengths)";
    return RECUR_GPU_ERR_INVALID;
  }
  if (r.batch < 0 || r.timesteps < 0 || r.batch > INT32_MAX || r.timesteps > INT32_MAX) {
    err = "the cuDNN route needs batch and timesteps in [0, 2^31), got " + std::to_string(r.batch) + " and " +
          std::to_string(r.timesteps);
    return RECUR_GPU_ERR_INVALID;
  }
  if (r.batch > 0 && (!r.states || (r.timesteps > 0 && (!r.inputs || !r.inputs[0])))) {
    err = "the cuDNN route needs an input and the states";
    return RECUR_GPU_ERR_INVALID;
  }
  const int64_t B = r.batch, T = r.timesteps;
  p.lengths.assign(static_cast<size_t>(2 * B), static_cast<int32_t>(T));
  p.all_full = true;
  if (r.lengths) {
    for (int64_t b = 0; b < B; ++b) {
      const int32_t len = r.lengths[b];
      if (len < 0 || len > T) {
        err = "row " + std::to_string(b) + " has length " + std::to_string(len) + ", outside [0, " + std::to_string(T) +
              "]";
        return RECUR_GPU_ERR_INVALID;
      }
      p.lengths[static_cast<size_t>(b)] = len;
      p.all_full = p.all_full && len == T;
    }
  }
  for (int64_t b = 0; b < B; ++b)
    p.lengths[static_cast<size_t>(B + b)] = cudnn_length(p.lengths[static_cast<size_t>(b)]);
  // cuDNN's y is the sequence output itself when the two agree step for step: always forwards
  // (padded steps are rewritten after), and backwards when no row is padded.
  p.direct = r.sequence_output && (!r.go_backwards || p.all_full);
  p.fill_padded = p.direct && !p.all_full;
  p.scatter = r.sequence_output && !p.direct;
  return RECUR_GPU_OK;
}

// Where cuDNN (or the emulator's model of it) places one matrix or bias of the weight space.
struct ParamPlace {
  int64_t offset = 0;  // floats from the start of the weight space
  int64_t rows = 0;
  int64_t cols = 0;
};

inline int lin_layer_count(const recur_gpu_layer_desc& d) { return d.cell == RECUR_GPU_CELL_GRU ? 6 : 8; }

// Checks the core's regions against cuDNN's answers: query(id, matrix, bias, err) fills where
// cuDNN puts linLayerID id, or returns a RECUR_GPU_* code. Every (id, matrix/bias) must appear once.
template <class Query>
int check_regions(const recur_gpu_layer_desc& d, const recur_gpu_weights& w, Query&& query, std::string& err) {
  const int n = lin_layer_count(d);
  if (!w.regions || w.num_regions != 2 * n) {
    err = "the cuDNN weight space of a " + std::string(d.cell == RECUR_GPU_CELL_GRU ? "GRU" : "LSTM") + " has " + std::to_string(2 * n) +
          " regions (a matrix and a bias per linLayerID), recur described " + std::to_string(w.num_regions);
    return RECUR_GPU_ERR_INVALID;
  }
  std::vector<ParamPlace> places(static_cast<size_t>(2 * n));
  for (int id = 0; id < n; ++id) {
    const int rc = query(id, places[static_cast<size_t>(2 * id)], places[static_cast<size_t>(2 * id + 1)], err);
    if (rc != RECUR_GPU_OK) return rc;
  }
  std::vector<bool> seen(static_cast<size_t>(2 * n), false);
  for (int32_t k = 0; k < w.num_regions; ++k) {
    const recur_gpu_cudnn_region& g = w.regions[k];
    const std::string name = "linLayerID " + std::to_string(g.lin_layer_id) + (g.is_bias ? " bias" : " matrix");
    if (g.lin_layer_id < 0 || g.lin_layer_id >= n || (g.is_bias != 0 && g.is_bias != 1)) {
      err = "cuDNN weight region " + name + " does not exist for this cell";
      return RECUR_GPU_ERR_INVALID;
    }
    const size_t slot = static_cast<size_t>(2 * g.lin_layer_id + g.is_bias);
    if (seen[slot]) {
      err = "cuDNN weight region " + name + " is described twice";
      return RECUR_GPU_ERR_INVALID;
    }
    seen[slot] = true;
    const ParamPlace& c = places[slot];
    if (g.offset != c.offset || g.rows != c.rows || g.cols != c.cols) {
      err = "cuDNN weight region " + name + ": recur placed it at offset " + std::to_string(g.offset) + " as " +
            std::to_string(g.rows) + "x" + std::to_string(g.cols) + ", cuDNN at offset " + std::to_string(c.offset) +
            " as " + std::to_string(c.rows) + "x" + std::to_string(c.cols);
      return RECUR_GPU_ERR_INVALID;
    }
  }
  return RECUR_GPU_OK;
}

}  // namespace recur::cuda::cudnn_post
