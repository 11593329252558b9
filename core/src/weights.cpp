// SPDX-License-Identifier: Apache-2.0
#include "recur/weights.hpp"

namespace recur {

std::vector<WeightSpec> weight_specs(const LayerConfig& c) {
  const Index u = c.units, F = c.input_size, w = static_cast<Index>(c.gates()) * u;
  std::vector<WeightSpec> specs{{"kernel", {F, w}}, {"recurrent_kernel", {u, w}}};
  if (!c.use_bias) return specs;
  switch (c.kind) {
    case LayerKind::cudnn_gru:
    case LayerKind::cudnn_lstm:
      specs.push_back({"bias", {2 * w}});  // input biases then recurrent biases
      break;
    case LayerKind::gru:
    case LayerKind::gru_cell:
      if (c.reset_after)
        specs.push_back({"bias", {2, w}});  // row 0 input bias, row 1 recurrent bias
      else
        specs.push_back({"bias", {w}});
      break;
    default:
      specs.push_back({"bias", {w}});
  }
  return specs;
}

RowMatrix cudnn_kernel_to_native(const RowMatrix& kc, int gates, Index units) {
  const Index F = kc.rows();
  RowMatrix kn(F, kc.cols());
  for (int g = 0; g < gates; ++g) {
    // flat(Kc_g)[p*u + q] = Kc[p, g*u + q];  Kn_g[c, a] = flat(Kc_g)[a*F + c]
    for (Index a = 0; a < units; ++a)
      for (Index c = 0; c < F; ++c) {
        const Index flat = a * F + c;
        kn(c, g * units + a) = kc(flat / units, g * units + flat % units);
      }
  }
  return kn;
}

RowMatrix native_kernel_to_cudnn(const RowMatrix& kn, int gates, Index units) {
  const Index F = kn.rows();
  RowMatrix kc(F, kn.cols());
  for (int g = 0; g < gates; ++g)
    for (Index a = 0; a < units; ++a)
      for (Index c = 0; c < F; ++c) {
        const Index flat = a * F + c;
        kc(flat / units, g * units + flat % units) = kn(c, g * units + a);
      }
  return kc;
}

RowMatrix transpose_gate_blocks(const RowMatrix& m, int gates, Index units) {
  RowMatrix out(m.rows(), m.cols());
  for (int g = 0; g < gates; ++g) out.middleCols(g * units, units) = m.middleCols(g * units, units).transpose();
  return out;
}

CellParams cell_params(const LayerConfig& c, const std::vector<Tensor>& weights) {
  CellParams p;
  const Index u = c.units, w = static_cast<Index>(c.gates()) * u;
  if (c.is_cudnn()) {
    p.kernel = cudnn_kernel_to_native(weights[0].value, c.gates(), u);
    p.recurrent = transpose_gate_blocks(weights[1].value, c.gates(), u);
    const RowMatrix& b = weights[2].value;  // (1, 2w)
    if (c.kind == LayerKind::cudnn_gru) {
      p.input_bias = b.leftCols(w);
      p.recurrent_bias = b.rightCols(w);
    } else {
      p.input_bias = b.leftCols(w) + b.rightCols(w);  // Keras's converter sums the two halves
    }
    return p;
  }
  p.kernel = weights[0].value;
  p.recurrent = weights[1].value;
  if (c.use_bias) {
    const RowMatrix& b = weights[2].value;
    if (c.is_gru() && c.reset_after) {
      p.input_bias = b.row(0);
      p.recurrent_bias = b.row(1);
    } else {
      p.input_bias = b.row(0);
    }
  }
  return p;
}

}  // namespace recur
