// SPDX-License-Identifier: Apache-2.0
// recur_model_state_load on any bytes, into a stream of a fixture model with a causal Conv1D (past
// inputs), an Embedding and a GRU (recurrent states). Byte 0 picks: bit 0 set, the trailing CRC-32
// is recomputed over the rest so that the checks behind the checksum are reached. recur promises:
// a load that fails leaves the stream as it was (it saves the same bytes as before); a load that
// succeeds saves back exactly the bytes it loaded, and the stream then steps.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "fuzz_common.hpp"

namespace {

struct Fixture {
  recur_model* model = nullptr;
  recur_model_state* stream = nullptr;
  std::vector<unsigned char> before;  // the stream's snapshot before each load
  Fixture() {
    const std::string image = recur_fuzz::read_source_file("tests/keras/graphs/conv_stream/keras3/causal_conv_with_ids.keras");
    if (recur_model_open_memory(&model, image.data(), image.size(), "causal_conv_with_ids.keras") != RECUR_OK ||
        recur_model_state_create(&stream, model, 2) != RECUR_OK) {
      std::fprintf(stderr, "fuzz_model_state_load: the fixture does not open: %s\n", recur_last_error());
      std::abort();
    }
  }
};

std::vector<unsigned char> save(recur_model_state* s) {
  size_t n = 0;
  if (recur_model_state_save(s, nullptr, 0, &n) != RECUR_OK) std::abort();
  std::vector<unsigned char> b(n);
  if (recur_model_state_save(s, b.data(), b.size(), &n) != RECUR_OK || n != b.size()) std::abort();
  return b;
}

void reseal(std::vector<unsigned char>& b) {
  if (b.size() < 4) return;
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i + 4 < b.size(); ++i) {
    c ^= b[i];
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  c ^= 0xFFFFFFFFu;
  for (int i = 0; i < 4; ++i) b[b.size() - 4 + static_cast<std::size_t>(i)] = static_cast<unsigned char>(c >> (8 * i));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static Fixture f;
  if (size == 0) return 0;
  std::vector<unsigned char> bytes(data + 1, data + size);
  if (data[0] & 1) reseal(bytes);
  recur_model_state_reset(f.stream);
  const std::vector<unsigned char> before = save(f.stream);
  if (recur_model_state_load(f.stream, bytes.data(), bytes.size()) != RECUR_OK) {
    recur_fuzz::check_message(true);
    if (save(f.stream) != before) {
      std::fprintf(stderr, "fuzz_model_state_load: a failed load changed the stream\n");
      std::abort();
    }
    return 0;
  }
  if (save(f.stream) != bytes) {
    std::fprintf(stderr, "fuzz_model_state_load: a loaded stream does not save the bytes it loaded\n");
    std::abort();
  }
  size_t in_len = 0, out_len = 0;
  if (recur_model_state_lengths(f.stream, 1, &in_len, &out_len) != RECUR_OK) std::abort();
  std::vector<float> x(in_len, 1.0f), y(out_len);
  if (recur_model_state_step(f.stream, 1, x.data(), x.size(), nullptr, 0, y.data(), y.size()) != RECUR_OK)
    recur_fuzz::check_message(true);
  return 0;
}
