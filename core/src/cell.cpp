#include "recur/cell.hpp"

namespace recur {
namespace {
using ConstStrided = Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>>;
}

Cell::Cell(const LayerConfig& c)
    : gru_(c.is_gru()),
      reset_after_(c.is_gru() && c.reset_after),
      use_bias_(c.use_bias),
      bias_in_projection_(c.use_bias && (c.is_gru() || c.effective_implementation() == 1) &&
                          c.kind != LayerKind::cudnn_lstm),
      units_(c.units),
      input_size_(c.input_size),
      gates_(c.gates()),
      activation_(c.activation),
      recurrent_activation_(c.recurrent_activation) {}

void Cell::project(const float* const* xs, int n_x, Index rows, RowMatrix& out) const {
  const Index w = width();
  out.resize(rows, w);
  if (n_x == 1) {
    Eigen::Map<const RowMatrix> x(xs[0], rows, input_size_);
    out.noalias() = x * params_.kernel;
  } else {
    for (int g = 0; g < gates_; ++g) {
      Eigen::Map<const RowMatrix> x(xs[g], rows, input_size_);
      out.middleCols(g * units_, units_).noalias() = x * params_.kernel.middleCols(g * units_, units_);
    }
  }
  if (bias_in_projection_) out.rowwise() += params_.input_bias;
}

void Cell::recurrent_product(const RowMatrix& h, int first_gate, int n_gates, const std::vector<RowMatrix>* masks,
                             RowMatrix& out, StepWorkspace& ws) const {
  const Index u = units_;
  if (!masks) {
    out.leftCols(n_gates * u).noalias() = h * params_.recurrent.middleCols(first_gate * u, n_gates * u);
    return;
  }
  for (int g = first_gate; g < first_gate + n_gates; ++g) {
    ws.tmp = h.cwiseProduct((*masks)[static_cast<std::size_t>(g)]);
    out.middleCols((g - first_gate) * u, u).noalias() = ws.tmp * params_.recurrent.middleCols(g * u, u);
  }
}

void Cell::activate(const ActivationFn& fn, RowMatrix& m, int gate, Index batch) const {
  // Activations apply per row over the units of one gate (softmax-like ones normalise over units).
  if (m.cols() == units_) {
    apply_activation(fn, m.data(), batch, units_);
    return;
  }
  for (Index r = 0; r < batch; ++r) apply_activation(fn, m.data() + r * m.cols() + gate * units_, 1, units_);
}

void Cell::step(const float* xp, Index xp_stride, Index batch, const RowMatrix* in, RowMatrix* out,
                const std::vector<RowMatrix>* masks, StepWorkspace& ws) const {
  if (gru_)
    step_gru(xp, xp_stride, batch, in[0], out[0], masks, ws);
  else
    step_lstm(xp, xp_stride, batch, in[0], in[1], out[0], out[1], masks, ws);
}

void Cell::step_gru(const float* xp_ptr, Index xp_stride, Index batch, const RowMatrix& h, RowMatrix& h_out,
                    const std::vector<RowMatrix>* masks, StepWorkspace& ws) const {
  const Index u = units_;
  const ConstStrided xp(xp_ptr, batch, 3 * u, Eigen::OuterStride<>(xp_stride));
  RowMatrix& pre = ws.pre;
  pre.resize(batch, 3 * u);
  // z and r: act((x@K + b_in) + (h@U + b_rec)); the reset_after=False bias sits in b_in.
  recurrent_product(h, 0, reset_after_ ? 3 : 2, masks, pre, ws);
  if (reset_after_ && use_bias_) pre.rowwise() += params_.recurrent_bias;
  pre.leftCols(2 * u) = xp.leftCols(2 * u) + pre.leftCols(2 * u);
  activate(recurrent_activation_, pre, 0, batch);
  activate(recurrent_activation_, pre, 1, batch);
  const auto z = pre.leftCols(u);
  const auto r = pre.middleCols(u, u);

  ws.cand.resize(batch, u);
  if (reset_after_) {
    // ĥ = act((x@K_h + b_in_h) + r ⊙ (h@U_h + b_rec_h))
    ws.cand = xp.rightCols(u) + r.cwiseProduct(pre.rightCols(u));
  } else {
    // ĥ = act((x@K_h + b_h) + (r ⊙ h)@U_h)
    ws.prod.resize(batch, u);
    if (masks)
      ws.prod = r.cwiseProduct(h.cwiseProduct((*masks)[2]));
    else
      ws.prod = r.cwiseProduct(h);
    ws.tmp.resize(batch, u);
    ws.tmp.noalias() = ws.prod * params_.recurrent.rightCols(u);
    ws.cand = xp.rightCols(u) + ws.tmp;
  }
  activate(activation_, ws.cand, 0, batch);
  // h' = z ⊙ h + (1 - z) ⊙ ĥ, in this association (Keras never rewrites it as ĥ + z(h - ĥ)).
  h_out.resize(batch, u);
  h_out.array() = z.array() * h.array() + (1.0f - z.array()) * ws.cand.array();
}

void Cell::step_lstm(const float* xp_ptr, Index xp_stride, Index batch, const RowMatrix& h, const RowMatrix& c,
                     RowMatrix& h_out, RowMatrix& c_out, const std::vector<RowMatrix>* masks,
                     StepWorkspace& ws) const {
  const Index u = units_;
  const ConstStrided xp(xp_ptr, batch, 4 * u, Eigen::OuterStride<>(xp_stride));
  RowMatrix& pre = ws.pre;
  pre.resize(batch, 4 * u);
  recurrent_product(h, 0, 4, masks, pre, ws);
  // implementation 2: (x@K + h@U) + b;  implementation 1: (x@K + b) + h@U (bias already in xp)
  pre = xp + pre;
  if (use_bias_ && !bias_in_projection_) pre.rowwise() += params_.input_bias;
  activate(recurrent_activation_, pre, 0, batch);
  activate(recurrent_activation_, pre, 1, batch);
  activate(activation_, pre, 2, batch);
  activate(recurrent_activation_, pre, 3, batch);
  c_out.resize(batch, u);
  c_out.array() = pre.middleCols(u, u).array() * c.array() + pre.leftCols(u).array() * pre.middleCols(2 * u, u).array();
  ws.cand = c_out;
  activate(activation_, ws.cand, 0, batch);
  h_out.resize(batch, u);
  h_out.array() = pre.rightCols(u).array() * ws.cand.array();
}

}  // namespace recur
