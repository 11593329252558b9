// SPDX-License-Identifier: Apache-2.0
// Keras initializers: same shape rules and distributions as Keras (the random streams of
// TensorFlow/JAX cannot be reproduced, so values differ; statistics and limits do not).
#pragma once

#include "recur/random.hpp"
#include "recur/specs.hpp"
#include "recur/tensor.hpp"

namespace recur {

// Fills `out` (already shaped) following `spec`. A spec with its own seed restarts from that seed
// on every call, as Keras's seeded initializers do; otherwise numbers come from `rng`.
void initialize(const InitializerSpec& spec, Tensor& out, Rng& rng);

// Keras's fan computation for a shape (rank 1: fan_in = fan_out = n).
void compute_fans(const std::vector<Index>& shape, double& fan_in, double& fan_out);

}  // namespace recur
