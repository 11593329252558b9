// SPDX-License-Identifier: Apache-2.0
// The activation functions Keras accepts for recurrent layers, per dialect.
#pragma once

#include "recur/cpu_kernels.hpp"

#include <Eigen/Core>
#include <string>
#include <string_view>

#include "recur/dialect.hpp"

namespace recur {

enum class Activation {
  linear,
  tanh,
  sigmoid,
  hard_sigmoid,  // formula depends on the dialect, see HardSigmoid below
  relu,
  relu6,
  leaky_relu,
  elu,
  selu,
  celu,
  softplus,
  softsign,
  exponential,
  silu,
  hard_silu,
  gelu,
  mish,
  log_sigmoid,
  sparse_plus,
  squareplus,
  tanh_shrink,
  hard_tanh,
  soft_shrink,
  hard_shrink,
  sparse_sigmoid,
  softmax,      // row-wise over the units axis
  log_softmax,  // row-wise over the units axis
  sparsemax,    // row-wise over the units axis
};

// Which hard_sigmoid formula a layer uses: Keras 2 clip(0.2x + 0.5), Keras 3.0.x clip(x/6 + 0.5),
// Keras >= 3.1 relu6(x + 3) / 6. They round differently, so the exact form matters.
enum class HardSigmoid { keras2, keras3_0, keras3 };

struct ActivationFn {
  Activation kind = Activation::tanh;
  HardSigmoid hard_sigmoid = HardSigmoid::keras3;
};

// Parses a Keras activation name (as written in a layer config) for the given dialect.
// Throws Error(invalid_argument) naming `field` for a name that dialect does not accept.
ActivationFn parse_activation(std::string_view name, const DialectInfo& dialect, std::string_view field);

// The name Keras writes for the activation in a config of that dialect.
std::string activation_name(Activation a, Dialect dialect);

// Applies the activation in place to a row-major (rows x cols) block of contiguous floats.
void apply_activation(const ActivationFn& fn, float* data, Eigen::Index rows, Eigen::Index cols);

// The activation as the CPU kernels apply it (vectorised kinds flagged, the rest through
// apply_activation).
cpu::ActSpec act_spec(const ActivationFn& fn);

}  // namespace recur
