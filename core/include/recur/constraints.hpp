// SPDX-License-Identifier: Apache-2.0
// Keras weight constraints: projections an optimizer applies after each update (never in forward).
#pragma once

#include "recur/dialect.hpp"
#include "recur/specs.hpp"
#include "recur/tensor.hpp"

namespace recur {

// Applies `spec` to `w` in place. Throws Error(invalid_argument) for an axis outside w's rank.
void apply_constraint(const ConstraintSpec& spec, Tensor& w, Dialect dialect, const char* field);

}  // namespace recur
