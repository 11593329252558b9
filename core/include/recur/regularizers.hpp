// SPDX-License-Identifier: Apache-2.0
// Keras weight and activity regularizers: the penalty a weight or output adds to the loss.
#pragma once

#include <string>

#include "recur/specs.hpp"
#include "recur/tensor.hpp"

namespace recur {

// The penalty of `spec` on a row-major (rows x cols) block; 0 for an inactive spec.
float regularization_penalty(const RegularizerSpec& spec, const float* data, Index rows, Index cols);

// Throws Error(limit), naming `what`, when `spec` is an orthogonal regularizer whose product of
// a (rows x cols) block with itself (size x size, size being rows or cols by its mode) would be
// over RECUR_LIMIT_TENSOR_BYTES as the float32 tensor Keras forms. Its time grows with size
// squared, so a small weight or a large batch could otherwise ask for hours. Callers check
// before they change anything.
void check_regularization_cost(const RegularizerSpec& spec, Index rows, Index cols, const std::string& what);

}  // namespace recur
