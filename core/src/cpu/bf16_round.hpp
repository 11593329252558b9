// SPDX-License-Identifier: Apache-2.0
// Rounding float32 to bfloat16, for the kernel translation units that pack or round to it. Internal
// linkage: each of them keeps its own copy, compiled with its own instruction set, so the linker
// never hands one set's code to another.
#pragma once

#include <cstdint>
#include <cstring>

namespace recur {
namespace cpu {
namespace {

// Nearest bfloat16, ties to even; NaN stays NaN.
inline std::uint16_t to_bf16(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(u >> 16);
}

}  // namespace
}  // namespace cpu
}  // namespace recur
