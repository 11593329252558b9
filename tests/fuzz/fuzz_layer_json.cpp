// SPDX-License-Identifier: Apache-2.0
// The layer JSON parser (recur_layer_create_from_json). Three leading bytes pick the dialect, the
// input size and the Keras version; the rest is the JSON. A layer that parses runs once on a
// tiny batch (1-2 rows, 1-3 timesteps; a cell one step) and is destroyed.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_common.hpp"
#include "recur/recur.h"

namespace {

// Largest layer the run step takes on (floats of weights; about 128 units): bigger ones are only
// parsed, since materialising their weights (an orthogonal init is a QR) can take over a second
// in the sanitized build.
constexpr std::size_t kMaxWeights = std::size_t(1) << 16;

}  // namespace

// The parser, not the allocator, is under test: a config may still declare a layer of a few
// hundred MB within the default limits, whose zeroed weights alone take seconds under ASan.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  recur_set_limit(RECUR_LIMIT_WEIGHT_BYTES, std::uint64_t(64) << 20);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  static const int32_t kDialects[] = {RECUR_DIALECT_AUTO, 1, RECUR_DIALECT_KERAS2, RECUR_DIALECT_KERAS3};
  static const char* const kVersions[] = {nullptr, "2.15.0", "3.0.0", "3.13.0", "3.14.0", "", "x"};
  const int32_t dialect = kDialects[data[0] & 3];
  // 0 (and below) takes the size from batch_input_shape / build_config; -1 and 1..32 otherwise.
  const int32_t input_size = static_cast<int32_t>(data[1] % 34) - 1;
  const char* version = kVersions[(data[2] & 0x7f) % (sizeof kVersions / sizeof kVersions[0])];
  const bool training = data[2] & 0x80;
  const std::string json(reinterpret_cast<const char*>(data) + 3, size - 3);

  recur_layer* layer = nullptr;
  if (recur_layer_create_from_json(&layer, json.c_str(), input_size, dialect, version) != RECUR_OK) {
    recur_fuzz::check_message(true);
    if (layer) std::abort();  // documented: *out is NULL on error
    return 0;
  }
  recur_layer_info info;
  std::memset(&info, 0, sizeof info);
  info.version = RECUR_LAYER_INFO_VERSION;
  std::size_t wlen = 0;
  if (recur_layer_get_info(layer, &info) == RECUR_OK && recur_layer_weights_length(layer, &wlen) == RECUR_OK &&
      wlen <= kMaxWeights && info.units > 0 && info.input_size > 0 && info.units <= 4096 && info.input_size <= 4096) {
    const int32_t batch = info.stateful && info.batch_size > 0 ? info.batch_size : 1 + (size & 1);
    const int32_t timesteps = 1 + static_cast<int32_t>(size % 3);
    const std::size_t b = static_cast<std::size_t>(batch), t = static_cast<std::size_t>(timesteps),
                      u = static_cast<std::size_t>(info.units), f = static_cast<std::size_t>(info.input_size),
                      ns = static_cast<std::size_t>(info.num_states > 0 ? info.num_states : 1);
    if (b <= 64) {
      std::vector<float> states(ns * b * u, 0.0f), new_states(ns * b * u, 0.0f);
      const bool cell = info.type == RECUR_LAYER_GRU_CELL || info.type == RECUR_LAYER_LSTM_CELL ||
                        info.type == RECUR_LAYER_SIMPLE_RNN_CELL;
      if (cell) {
        std::vector<float> in(b * f, 0.25f), out(b * u, 0.0f);
        recur_cell_call(layer, in.data(), in.size(), batch, states.data(), states.size(), static_cast<int32_t>(ns),
                        training, out.data(), out.size(), new_states.data(), new_states.size());
      } else {
        std::size_t out_len = 0;
        if (recur_layer_output_length(layer, batch, timesteps, &out_len) == RECUR_OK && out_len <= b * t * u) {
          std::vector<float> in(b * t * f, 0.25f), out(out_len, 0.0f);
          std::vector<std::uint8_t> mask(b * t, 1);
          mask[0] = 0;
          recur_layer_forward(layer, in.data(), in.size(), batch, timesteps, (size & 2) ? mask.data() : nullptr,
                              (size & 2) ? mask.size() : 0, nullptr, 0, 0, training, out.data(), out.size(),
                              new_states.data(), new_states.size());
        }
      }
      int32_t count = 0;
      if (recur_layer_get_losses(layer, nullptr, 0, &count) == RECUR_OK && count > 0 && count < 64) {
        std::vector<float> losses(static_cast<std::size_t>(count));
        recur_layer_get_losses(layer, losses.data(), losses.size(), &count);
      }
      recur_layer_apply_constraints(layer);
    }
  }
  recur_layer_destroy(layer);
  return 0;
}
