// SPDX-License-Identifier: Apache-2.0
// One timestep of GRU, LSTM or SimpleRNN math over a batch: the only place the equations live.
// A step is split in two halves so a sequence runner can batch the input half over all timesteps:
//   project(): the input projection x @ K (+ input bias where Keras adds it there), for many rows;
//   step():    the recurrent half for one timestep, given the projected rows.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "recur/config.hpp"
#include "recur/cpu_kernels.hpp"
#include "recur/tensor.hpp"

namespace recur {

// Weights in the form the math uses (CuDNN layouts are converted into this form).
struct CellParams {
  RowMatrix kernel;          // (F, G*u), gate blocks in Keras order: GRU z,r,h / LSTM i,f,c,o / SimpleRNN one
  RowMatrix recurrent;       // (u, G*u)
  RowVector input_bias;      // (G*u), empty without bias
  RowVector recurrent_bias;  // (G*u), GRU reset_after only, else empty
};

// The order in which a step reads the weights; the numbers do not depend on it. Reading them
// from last to first on every other step keeps the part read last in the cache for the next step
// when they do not all fit (cpu_backend.cpp). `products_ready`: the workspace already holds the
// recurrent products (Cell::recurrent_products ran before the input projection).
struct StepOrder {
  bool descending = false;
  bool products_ready = false;
};

// Scratch space for step(); reused across steps so a step does not allocate. Sized by prepare()
// before threads share it: each thread then writes only its own columns.
struct StepWorkspace {
  RowMatrix pre;     // recurrent products, then activated gates, (B, padded width)
  RowMatrix rh;      // GRU reset_after=False: r ⊙ h, (B, u)
  RowMatrix masked;  // h ⊙ a recurrent dropout mask, (B, u)
};

// Runs between the two GEMMs of a GRU reset_after=False step when threads share the step (the
// candidate's GEMM reads r ⊙ h over every unit); null when one thread runs it.
using StepSync = void (*)(void* context);

// How the cell stores its kernel and recurrent kernel for the GEMMs (recur_layer_set_precision).
// float32 is Keras's numbers; the others keep the float32 weights too (get_weights and switching
// back are exact) and add a reduced copy that the GEMMs read. Biases, states and gate math stay
// float32.
enum class Precision { float32, bf16, int8 };
const char* precision_name(Precision p);
// Parses "float32", "bf16", "int8"; throws Error(invalid_argument) listing them otherwise.
Precision parse_precision(const std::string& name, const char* what);

class Cell {
 public:
  explicit Cell(const LayerConfig& config);

  // Packs the weights for the CPU kernels, in the form CellParams describes (kernel (F, G*u),
  // recurrent (u, G*u), biases (G*u) or null). Nothing else of them is kept.
  void set_weights(const float* kernel, const float* recurrent, const float* input_bias, const float* recurrent_bias);
  void set_params(const CellParams& p);
  // The same, one part at a time; and the parts back in the form they were given (the packing
  // only reorders and pads, so this is exact).
  void pack_kernel(const float* kernel);
  void pack_recurrent(const float* recurrent);
  void set_biases(const float* input_bias, const float* recurrent_bias);
  void unpack_kernel(float* kernel) const;
  void unpack_recurrent(float* recurrent) const;

  int units() const { return units_; }
  int input_size() const { return input_size_; }
  int gates() const { return gates_; }
  int width() const { return gates_ * units_; }
  int num_states() const { return lstm_ ? 2 : 1; }

  // Projected inputs and gate pre-activations are laid out gate by gate, each gate padded to a
  // whole number of the kernels' panels.
  Index padded_units() const { return panels_per_gate_ * kernels_->nr; }
  Index padded_width() const { return gates_ * padded_units(); }
  // Threads split a step by panels of units: [q0, q1) of every gate.
  Index panels_per_gate() const { return panels_per_gate_; }
  // Whether a step may be split by units: false when an activation normalises over all units.
  bool splittable() const { return !activation_.rowwise && !recurrent_activation_.rowwise; }
  const cpu::KernelSet& kernels() const { return *kernels_; }

  // Repacks the reduced copies (from the float32 weights) for `p`; float32 drops them. Throws
  // Error(unsupported) for int8 when a GEMM's depth passes cpu::kMaxInt8Depth. Not while the cell runs.
  void set_precision(Precision p);
  Precision precision() const { return precision_; }

  // out (rows, padded width) = x @ K (+ input bias), for panels [q0, q1) of every gate. `xs` holds
  // one input (all gates) or one per gate, each `rows` x F row-major (per-gate inputs carry
  // per-gate dropout). `ldo`: floats between rows of out.
  // `descending`: the weights' panels (and gates) are read from last to first, as in StepOrder.
  void project(const float* const* xs, int n_x, Index rows, float* out, Index ldo, Index q0, Index q1,
               bool descending = false) const;
  void project(const float* const* xs, int n_x, Index rows, RowMatrix& out) const;

  // Whether a run of `steps` steps starts reading the weights from last to first: each run goes on
  // alternating where the last run over these weights stopped, whichever state or thread ran it.
  bool begin_descending(Index steps) const;
  // The products of h (or of h ⊙ each gate's recurrent mask) with the gates computed from h, into
  // ws.pre, for panels [q0, q1): the first part of step_range. `ws` must be prepared for `batch`.
  void recurrent_products(const float* h, Index batch, const std::vector<RowMatrix>* recurrent_masks,
                          StepWorkspace& ws, Index q0, Index q1, bool descending) const;

  void prepare(StepWorkspace& ws, Index batch) const;
  // The recurrent half of one timestep for `batch` rows, for panels [q0, q1) of every gate. `xp`
  // points at the projection of the first row, rows `xp_stride` floats apart. in/out: h (and c),
  // (batch, u) each; out must not alias in. `recurrent_masks` is null or one (B, u) mask per gate
  // (Keras implementation 1 dropout; one thread only). `ws` must be prepared for `batch`.
  void step_range(const float* xp, Index xp_stride, Index batch, const float* const* in, float* const* out,
                  const std::vector<RowMatrix>* recurrent_masks, StepWorkspace& ws, Index q0, Index q1,
                  StepSync sync, void* sync_context, StepOrder order = {}) const;
  // The whole step on the calling thread.
  void step(const float* xp, Index xp_stride, Index batch, const RowMatrix* states_in, RowMatrix* states_out,
            const std::vector<RowMatrix>* recurrent_masks, StepWorkspace& ws) const;

 private:
  // One weight matrix packed for the kernels: float32 always, plus the current precision's copy.
  struct Packed {
    std::vector<float> f32;
    std::vector<std::uint16_t> bf16;
    std::vector<std::int8_t> i8;
    std::vector<float> scales;          // int8: per padded column
    std::vector<std::int32_t> colsums;  // int8: per padded column
  };
  void pack_matrix(const float* m, Index rows, Packed& out) const;
  void pack_reduced(Index rows, Packed& out) const;
  // int8: rows of a GEMM input quantized once for the GEMMs of several gates.
  // bf16 with vdpbf16ps: rows rounded to bfloat16 once, likewise.
  struct QuantizedRows {
    std::vector<std::uint8_t> q;
    std::vector<float> scale, zero;
    std::vector<std::uint16_t> bf16;
    Index ldq = 0;
  };
  // The calling thread's quantization (int8) or rounding (bf16 with vdpbf16ps) of `rows` rows of
  // a (k wide), or null when the GEMM takes a as it is.
  const QuantizedRows* quantize(const float* a, Index lda, Index rows, Index k) const;
  // c[:, panels [q0, q1) of gates [gate, gate + count)] = a @ those gates of the packed matrix
  // (+ bias); `quantized`: a as quantize() gave it (int8, bf16 with vdpbf16ps), or null.
  void gate_gemm(const Packed& packed, Index k, int gate, int count, const float* a, Index lda, Index rows,
                 float* c, Index ldc, const std::vector<float>& bias, Index q0, Index q1,
                 const QuantizedRows* quantized = nullptr, bool descending = false) const;

  bool gru_;
  bool lstm_;
  bool reset_after_;
  bool use_bias_;
  bool bias_in_projection_;  // LSTM implementation 2 adds the bias after x@K + h@U; SimpleRNN never
  int units_;
  int input_size_;
  int gates_;
  cpu::ActSpec activation_;
  cpu::ActSpec recurrent_activation_;
  const cpu::KernelSet* kernels_;
  Index panels_per_gate_;
  Precision precision_ = Precision::float32;
  Packed kernel_;     // packed, gate by gate
  Packed recurrent_;  // packed, gate by gate
  std::vector<float> input_bias_;      // padded gates; empty without
  std::vector<float> recurrent_bias_;  // padded gates; GRU reset_after only
  // The direction of the next run's first step (begin_descending). Only a hint for the cache:
  // relaxed, and a copy starts afresh.
  struct NextDirection {
    mutable std::atomic<bool> descending{false};
    NextDirection() = default;
    NextDirection(const NextDirection&) {}
    NextDirection& operator=(const NextDirection&) { return *this; }
  } next_direction_;
};

}  // namespace recur
