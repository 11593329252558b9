// One timestep of GRU or LSTM math over a batch: the only place the equations live.
// A step is split in two halves so a sequence runner can batch the input half over all timesteps:
//   project(): the input projection x @ K (+ input bias where Keras adds it there), for many rows;
//   step():    the recurrent half for one timestep, given the projected rows.
#pragma once

#include <vector>

#include "recur/config.hpp"
#include "recur/tensor.hpp"

namespace recur {

// Weights in the form the math uses (CuDNN layouts are converted into this form).
struct CellParams {
  RowMatrix kernel;          // (F, G*u), gate blocks in Keras order: GRU z,r,h / LSTM i,f,c,o
  RowMatrix recurrent;       // (u, G*u)
  RowVector input_bias;      // (G*u), empty without bias
  RowVector recurrent_bias;  // (G*u), GRU reset_after only, else empty
};

// Scratch space for step(); reused across steps so a step does not allocate.
struct StepWorkspace {
  RowMatrix pre;    // pre-activations, (B, G*u)
  RowMatrix cand;   // candidate / squashed cell, (B, u)
  RowMatrix tmp;    // dropped-out recurrent inputs and products, (B, u)
  RowMatrix prod;   // (B, u)
};

class Cell {
 public:
  explicit Cell(const LayerConfig& config);

  void set_params(CellParams params) { params_ = std::move(params); }
  const CellParams& params() const { return params_; }

  int units() const { return units_; }
  int input_size() const { return input_size_; }
  int gates() const { return gates_; }
  int width() const { return gates_ * units_; }
  int num_states() const { return gru_ ? 1 : 2; }

  // out (rows, G*u) = x @ K (+ input bias). `xs` holds one input (all gates) or one per gate, each
  // `rows` x F row-major (per-gate inputs carry per-gate dropout).
  void project(const float* const* xs, int n_x, Index rows, RowMatrix& out) const;

  // The recurrent half of one timestep for `batch` rows. `xp` points at the projection of the first
  // row, rows are `xp_stride` floats apart. states_in/out hold h (and c); out must not alias in.
  // `recurrent_masks` is null or one (B, u) mask per gate (Keras implementation 1 dropout).
  void step(const float* xp, Index xp_stride, Index batch, const RowMatrix* states_in, RowMatrix* states_out,
            const std::vector<RowMatrix>* recurrent_masks, StepWorkspace& ws) const;

 private:
  void step_gru(const float* xp, Index xp_stride, Index batch, const RowMatrix& h, RowMatrix& h_out,
                const std::vector<RowMatrix>* masks, StepWorkspace& ws) const;
  void step_lstm(const float* xp, Index xp_stride, Index batch, const RowMatrix& h, const RowMatrix& c,
                 RowMatrix& h_out, RowMatrix& c_out, const std::vector<RowMatrix>* masks, StepWorkspace& ws) const;
  // out(:, gate block g) = (h ⊙ mask_g) @ U_g, or h @ U over `n_gates` blocks without masks.
  void recurrent_product(const RowMatrix& h, int first_gate, int n_gates, const std::vector<RowMatrix>* masks,
                         RowMatrix& out, StepWorkspace& ws) const;
  void activate(const ActivationFn& fn, RowMatrix& m, int gate, Index batch) const;

  bool gru_;
  bool reset_after_;
  bool use_bias_;
  bool bias_in_projection_;  // LSTM implementation 2 adds the bias after x@K + h@U
  int units_;
  int input_size_;
  int gates_;
  ActivationFn activation_;
  ActivationFn recurrent_activation_;
  CellParams params_;
};

}  // namespace recur
