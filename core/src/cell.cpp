// SPDX-License-Identifier: Apache-2.0
#include "recur/cell.hpp"

#include "recur/activations.hpp"

namespace recur {

Cell::Cell(const LayerConfig& c)
    : gru_(c.is_gru()),
      lstm_(c.is_lstm()),
      reset_after_(c.is_gru() && c.reset_after),
      use_bias_(c.use_bias),
      // Keras: GRU and SimpleRNN add the input bias to x@K; LSTM implementation 1 too.
      bias_in_projection_(c.use_bias && (!c.is_lstm() || c.effective_implementation() == 1) &&
                          c.kind != LayerKind::cudnn_lstm),
      units_(c.units),
      input_size_(c.input_size),
      gates_(c.gates()),
      activation_(act_spec(c.activation)),
      recurrent_activation_(act_spec(c.recurrent_activation)),
      kernels_(&cpu::cpu_kernels()),
      panels_per_gate_(kernels_->panels(c.units)) {}

namespace {

// Packs the gate blocks of a (k, G*u) matrix one after the other, each padded to whole panels, into
// `out` (in place when it has the size already, so a weight update needs no second copy).
void pack_gates(const cpu::KernelSet& k, const float* m, Index rows, int gates, Index u, Index ppg,
                std::vector<float>& out) {
  out.resize(static_cast<std::size_t>(gates * ppg * rows * k.nr));
  for (int g = 0; g < gates; ++g) k.pack(m + g * u, gates * u, rows, u, out.data() + g * ppg * rows * k.nr);
}

std::vector<float> pad_gates(const float* bias, int gates, Index u, Index up) {
  if (!bias) return {};
  std::vector<float> out(static_cast<std::size_t>(gates * up), 0.0f);
  for (int g = 0; g < gates; ++g) std::copy(bias + g * u, bias + (g + 1) * u, out.begin() + g * up);
  return out;
}

// The inverse of pack_gates.
void unpack_gates(const std::vector<float>& packed, Index rows, int gates, Index u, Index ppg, Index nr, float* m) {
  for (int g = 0; g < gates; ++g)
    for (Index p = 0; p < ppg; ++p)
      for (Index kk = 0; kk < rows; ++kk) {
        const float* src = packed.data() + ((g * ppg + p) * rows + kk) * nr;
        for (Index j = 0; j < nr && p * nr + j < u; ++j) m[kk * gates * u + g * u + p * nr + j] = src[j];
      }
}

}  // namespace

void Cell::pack_kernel(const float* kernel) {
  pack_gates(*kernels_, kernel, input_size_, gates_, units_, panels_per_gate_, kernel_);
}

void Cell::pack_recurrent(const float* recurrent) {
  pack_gates(*kernels_, recurrent, units_, gates_, units_, panels_per_gate_, recurrent_);
}

void Cell::set_biases(const float* input_bias, const float* recurrent_bias) {
  const Index up = padded_units();
  input_bias_ = pad_gates(use_bias_ ? input_bias : nullptr, gates_, units_, up);
  recurrent_bias_ = pad_gates(reset_after_ && use_bias_ ? recurrent_bias : nullptr, gates_, units_, up);
}

void Cell::unpack_kernel(float* kernel) const {
  unpack_gates(kernel_, input_size_, gates_, units_, panels_per_gate_, kernels_->nr, kernel);
}

void Cell::unpack_recurrent(float* recurrent) const {
  unpack_gates(recurrent_, units_, gates_, units_, panels_per_gate_, kernels_->nr, recurrent);
}

void Cell::set_weights(const float* kernel, const float* recurrent, const float* input_bias,
                       const float* recurrent_bias) {
  pack_kernel(kernel);
  pack_recurrent(recurrent);
  set_biases(input_bias, recurrent_bias);
}

void Cell::set_params(const CellParams& p) {
  set_weights(p.kernel.data(), p.recurrent.data(), p.input_bias.size() ? p.input_bias.data() : nullptr,
              p.recurrent_bias.size() ? p.recurrent_bias.data() : nullptr);
}

void Cell::gate_gemm(const std::vector<float>& packed, Index k, int gate, int count, const float* a, Index lda,
                     Index rows, float* c, Index ldc, const std::vector<float>& bias, Index q0, Index q1) const {
  const Index nr = kernels_->nr, up = padded_units();
  // Every panel of consecutive gates is one run of panels (and of columns of c and the bias): one
  // product, whose last panels of a gate share registers with the next gate's first.
  const bool whole = q0 == 0 && q1 == panels_per_gate_;
  const int calls = whole ? 1 : count;
  const Index panels = whole ? count * panels_per_gate_ : q1 - q0;
  for (int g = gate; g < gate + calls; ++g) {
    const Index first = g * panels_per_gate_ + q0;
    kernels_->gemm(rows, k, a, lda, packed.data() + first * k * nr, panels, c + g * up + q0 * nr, ldc,
                   bias.empty() ? nullptr : bias.data() + g * up + q0 * nr);
  }
}

void Cell::project(const float* const* xs, int n_x, Index rows, float* out, Index ldo, Index q0, Index q1) const {
  static const std::vector<float> none;
  const std::vector<float>& bias = bias_in_projection_ ? input_bias_ : none;
  if (n_x == 1) return gate_gemm(kernel_, input_size_, 0, gates_, xs[0], input_size_, rows, out, ldo, bias, q0, q1);
  for (int g = 0; g < gates_; ++g) gate_gemm(kernel_, input_size_, g, 1, xs[g], input_size_, rows, out, ldo, bias, q0, q1);
}

void Cell::project(const float* const* xs, int n_x, Index rows, RowMatrix& out) const {
  out.resize(rows, padded_width());
  project(xs, n_x, rows, out.data(), padded_width(), 0, panels_per_gate_);
}

void Cell::prepare(StepWorkspace& ws, Index batch) const {
  ws.pre.resize(batch, padded_width());
  if (gru_ && !reset_after_) ws.rh.resize(batch, units_);
}

void Cell::step_range(const float* xp, Index xp_stride, Index batch, const float* const* in, float* const* out,
                      const std::vector<RowMatrix>* masks, StepWorkspace& ws, Index q0, Index q1, StepSync sync,
                      void* sync_context) const {
  const Index u = units_, pw = padded_width(), nr = kernels_->nr;
  float* pre = ws.pre.data();
  const float* h = in[0];
  // Recurrent products (+ the recurrent bias of GRU reset_after) of the gates computed from h;
  // with dropout, each gate sees h ⊙ its own mask.
  const int from_h = gru_ && !reset_after_ ? 2 : gates_;
  if (!masks) {
    gate_gemm(recurrent_, u, 0, from_h, h, u, batch, pre, pw, recurrent_bias_, q0, q1);
  } else {
    ws.masked.resize(batch, u);
    for (int g = 0; g < from_h; ++g) {
      kernels_->multiply(h, (*masks)[static_cast<std::size_t>(g)].data(), ws.masked.data(), batch * u);
      gate_gemm(recurrent_, u, g, 1, ws.masked.data(), u, batch, pre, pw, recurrent_bias_, q0, q1);
    }
  }

  cpu::GateArgs args;
  args.batch = batch;
  args.units = u;
  args.j0 = q0 * nr;
  args.j1 = std::min<Index>(q1 * nr, u);
  args.xp = xp;
  args.xp_stride = xp_stride;
  args.pre = pre;
  args.pre_stride = pw;
  args.gate_stride = padded_units();
  args.h = h;
  args.h_out = out[0];
  args.act = activation_;
  args.ract = recurrent_activation_;
  if (!gru_ && !lstm_) {
    // SimpleRNN: h' = act((x@K + b) + h@U)
    kernels_->simple_rnn_update(args);
    return;
  }
  if (lstm_) {
    args.c = in[1];
    args.c_out = out[1];
    if (use_bias_ && !bias_in_projection_) args.bias = input_bias_.data();
    kernels_->lstm_update(args);
    return;
  }
  args.reset_after = reset_after_;
  if (!reset_after_) {
    args.rh = ws.rh.data();
    if (masks) args.hmask = (*masks)[2].data();
  }
  kernels_->gru_gates(args);
  if (!reset_after_) {
    // ĥ's GEMM reads r ⊙ h over every unit: wait for the other threads' units first.
    if (sync) sync(sync_context);
    gate_gemm(recurrent_, u, 2, 1, ws.rh.data(), u, batch, pre, pw, recurrent_bias_, q0, q1);
  }
  kernels_->gru_update(args);
}

void Cell::step(const float* xp, Index xp_stride, Index batch, const RowMatrix* in, RowMatrix* out,
                const std::vector<RowMatrix>* masks, StepWorkspace& ws) const {
  prepare(ws, batch);
  const float* in_ptrs[2] = {in[0].data(), lstm_ ? in[1].data() : nullptr};
  float* out_ptrs[2];
  for (int s = 0; s < num_states(); ++s) {
    out[s].resize(batch, units_);
    out_ptrs[s] = out[s].data();
  }
  step_range(xp, xp_stride, batch, in_ptrs, out_ptrs, masks, ws, 0, panels_per_gate_, nullptr, nullptr);
}

}  // namespace recur
