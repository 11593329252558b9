// SPDX-License-Identifier: Apache-2.0
// Keras weight layouts (names, shapes, order) and the CuDNN <-> native conversions.
#pragma once

#include <vector>

#include "recur/cell.hpp"
#include "recur/config.hpp"
#include "recur/tensor.hpp"

namespace recur {

struct WeightSpec {
  const char* name;  // "kernel", "recurrent_kernel", "bias"
  std::vector<Index> shape;
};

// get_weights() order and shapes for a config: [kernel, recurrent_kernel, bias] (no bias without use_bias).
std::vector<WeightSpec> weight_specs(const LayerConfig& config);

// The compute form of a layer's Keras-layout weights; CuDNN layouts are converted (§3.4).
CellParams cell_params(const LayerConfig& config, const std::vector<Tensor>& weights);

// CuDNN kernel (F, G*u) raw cuDNN buffers -> native Keras kernel, gate block by gate block:
// Kn_g = reshape_rowmajor(Kc_g, (u, F)).T. And its inverse.
RowMatrix cudnn_kernel_to_native(const RowMatrix& kc, int gates, Index units);
RowMatrix native_kernel_to_cudnn(const RowMatrix& kn, int gates, Index units);
// Recurrent kernels transpose per gate block (the same in both directions).
RowMatrix transpose_gate_blocks(const RowMatrix& u, int gates, Index units);

}  // namespace recur
