// SPDX-License-Identifier: Apache-2.0
// A backend runs a whole sequence for a layer, so it can batch the input projection of all
// timesteps into one GEMM and keep the recurrent loop tight. The CPU backend (Eigen) is always
// present; a GPU backend is a plugin that implements the same interface.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "recur/cell.hpp"
#include "recur/tensor.hpp"

namespace recur {

// Scratch memory for one sequence run; kept by a State (or per thread) so steady-state runs
// do not allocate.
struct SequenceWorkspace {
  RowMatrix projected;            // (rows, G*u)
  std::vector<RowMatrix> next;    // next states
  RowMatrix out_t;                // output at the current step, (B, u)
  std::vector<std::vector<float>> dropped;   // inputs with dropout applied (training only)
  std::vector<std::vector<float>> gathered;  // a chunk of timesteps of long sequences
  std::vector<const float*> gathered_ptrs;
  std::vector<RowMatrix> call_states;       // a layer call's states
  std::vector<const float*> call_inputs;    // a layer call's inputs (one per gate with dropout)
  StepWorkspace step;
  // Upper bound on projected inputs held at once (floats, 4 MiB by default): longer sequences
  // are projected in chunks of timesteps, so memory stays bounded whatever T is, and a chunk is
  // still a GEMM of hundreds of rows.
  Index projection_budget = Index(1) << 20;
  // A run split by batch rows between threads: each thread's own scratch (cpu_backend.cpp).
  std::vector<SequenceWorkspace> parts;
};

// One run over a sequence. Layout: row (b, t) of the input, mask and output is t*B + b when
// time_major, else b*T + t. Outputs follow processing order (go_backwards does not re-reverse).
struct SequenceJob {
  const float* const* inputs = nullptr;  // 1 input, or one per gate (per-gate input dropout)
  int num_inputs = 1;
  Index batch = 0;
  Index timesteps = 0;
  bool time_major = false;
  bool go_backwards = false;
  const std::uint8_t* mask = nullptr;   // null: every step valid
  bool zero_output_for_mask = false;
  // Keras's unrolled loop zeroes masked outputs with the un-reversed mask under go_backwards.
  bool unrolled_mask_quirk = false;
  // Keras 3 on JAX: the previous output of a masked step starts at h0 (states[0]), not zeros.
  bool output_starts_at_state = false;
  const std::vector<RowMatrix>* recurrent_masks = nullptr;
  RowMatrix* states = nullptr;          // in: initial states, out: final states
  // in: the output a masked first step repeats (null: zeros, as in a Keras call); out: the last
  // output. Streaming states carry it so that steps fed one call at a time equal one long call.
  RowMatrix* carried_output = nullptr;
  float* sequence_output = nullptr;     // (B,T,u) / (T,B,u), or null
  float* last_output = nullptr;         // (B,u), or null
  int threads = 1;                      // CPU threads the run may use (0: one per core)
  // The run's cancel flag (recur/cancel.hpp), or null: the CPU loop stops between timesteps once
  // it is set, leaving the outputs and states unfinished (the caller throws Error(cancelled)).
  const std::atomic<bool>* cancel = nullptr;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  virtual void run_sequence(const Cell& cell, const SequenceJob& job, SequenceWorkspace& ws) const = 0;
};

const Backend& cpu_backend();

}  // namespace recur
