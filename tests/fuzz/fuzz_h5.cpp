// SPDX-License-Identifier: Apache-2.0
// The bytes as a legacy Keras .h5 file: the first 8 bytes are always the HDF5 signature, so every
// input reaches the HDF5 reader and the model_config / model_weights code behind it.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const char kSignature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
  std::vector<char> image(data, data + size);
  if (image.size() < sizeof kSignature) image.resize(sizeof kSignature);
  std::memcpy(image.data(), kSignature, sizeof kSignature);
  recur_fuzz::open_and_exercise(image.data(), image.size(), "fuzz.h5");
  return 0;
}
