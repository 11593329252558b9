// SPDX-License-Identifier: Apache-2.0
// The bytes as a .keras file (any file image recur_model_open_memory takes): open it and, when it
// opens, query it and run it once on zeros.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  recur_fuzz::open_and_exercise(data, size, "fuzz.keras");
  return 0;
}
