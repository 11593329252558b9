// Keras weight and activity regularizers: the penalty a weight or output adds to the loss.
#pragma once

#include "recur/specs.hpp"
#include "recur/tensor.hpp"

namespace recur {

// The penalty of `spec` on a row-major (rows x cols) block; 0 for an inactive spec.
float regularization_penalty(const RegularizerSpec& spec, const float* data, Index rows, Index cols);

}  // namespace recur
