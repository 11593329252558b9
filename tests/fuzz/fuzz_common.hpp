// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the fuzz targets: the fixture files they start from, an in-memory .keras zip
// writer, and one pass over everything a model that opened can be asked.
#ifndef RECUR_FUZZ_COMMON_HPP
#define RECUR_FUZZ_COMMON_HPP

#include <zip.h>
#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "recur/recur.h"

#ifndef RECUR_FUZZ_SOURCE_DIR
#error "RECUR_FUZZ_SOURCE_DIR must name the source tree (the fixtures are read from it)"
#endif

namespace recur_fuzz {

// A fixture file of the source tree, read whole; a missing file stops the fuzzer at once (a
// target that silently fuzzes nothing would look healthy).
inline std::string read_source_file(const std::string& relative) {
  const std::string path = std::string(RECUR_FUZZ_SOURCE_DIR) + "/" + relative;
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "fuzz: cannot read the fixture %s\n", path.c_str());
    std::abort();
  }
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// One member of a zip image (libzip, for reading the fixtures once at start-up).
inline std::string zip_member(const std::string& image, const char* member, const std::string& what) {
  zip_error_t e;
  zip_error_init(&e);
  zip_source_t* src = zip_source_buffer_create(image.data(), image.size(), 0, &e);
  zip_t* z = src ? zip_open_from_source(src, ZIP_RDONLY, &e) : nullptr;
  zip_error_fini(&e);
  std::string out;
  zip_stat_t st;
  zip_stat_init(&st);
  zip_file_t* f = z && zip_stat(z, member, 0, &st) == 0 ? zip_fopen(z, member, 0) : nullptr;
  if (!f) {
    std::fprintf(stderr, "fuzz: %s has no member %s\n", what.c_str(), member);
    std::abort();
  }
  out.resize(static_cast<std::size_t>(st.size));
  if (zip_fread(f, &out[0], st.size) != static_cast<zip_int64_t>(st.size)) std::abort();
  zip_fclose(f);
  zip_discard(z);
  return out;
}

// The parts of a .keras file.
struct KerasParts {
  std::string name;
  std::string config;
  std::string metadata;
  std::string weights;
};

inline KerasParts keras_parts(const std::string& relative) {
  const std::string image = read_source_file(relative);
  return {relative, zip_member(image, "config.json", relative), zip_member(image, "metadata.json", relative),
          zip_member(image, "model.weights.h5", relative)};
}

// Small Keras 3 and Keras 2 graphs of tests/keras/graphs covering every layer kind recur runs:
// merges, nesting, seq2seq with initial states, stateful layers, Conv1D, Embedding, masks,
// normalizations, TimeDistributed, pooling, RepeatVector, Bidirectional, CuDNN layers.
inline const std::vector<KerasParts>& base_models() {
  static const std::vector<KerasParts> models = [] {
    static const char* const files[] = {
        "tests/keras/graphs/keras3/masking_sequential.keras",
        "tests/keras/graphs/keras3/multi_io.keras",
        "tests/keras/graphs/keras3/nested_functional.keras",
        "tests/keras/graphs/keras3/seq2seq_initial_state.keras",
        "tests/keras/graphs/keras3/stateful_functional_lstm_gru.keras",
        "tests/keras/graphs/keras3/conv1d_padding.keras",
        "tests/keras/graphs/keras3/embedding_masked_merge.keras",
        "tests/keras/graphs/keras3/bidirectional_backward_layer_config.keras",
        "tests/keras/graphs/keras3/norms_layernorm.keras",
        "tests/keras/graphs/keras3/time_distributed_dense.keras",
        "tests/keras/graphs/keras3/pooling.keras",
        "tests/keras/graphs/keras3/encoder_decoder_repeat.keras",
        "tests/keras/graphs/keras3/merges_mixed_masks.keras",
        "tests/keras/graphs/keras3/residual_add_layernorm.keras",
        "tests/keras/graphs/keras2/reshape_permute_flatten.keras",
        "tests/keras/graphs/keras2/cudnn_bidirectional_gru.keras",
        "tests/keras/graphs/keras2/branches_concat.keras",
        "tests/keras/graphs/keras2/activations_layers.keras",
        "tests/keras/graphs/keras2/stateful_sequential_gru.keras",
        "tests/keras/graphs/keras2/nested_sequential.keras",
        // one model per layer family's suite
        "tests/keras/graphs/activations/keras3/activations_sequential.keras",
        "tests/keras/graphs/attention/keras3/attn_dot_scale_scores.keras",
        "tests/keras/graphs/attention/keras3/mha_text_masked.keras",
        "tests/keras/graphs/conv_lstm/keras3/convlstm1d_same_strides_state.keras",
        "tests/keras/graphs/conv_stream/keras3/causal_conv_groups_gru.keras",
        "tests/keras/graphs/merging/keras3/dot_luong_attention.keras",
        "tests/keras/graphs/pooling/keras3/pool1d_channels_first.keras",
        "tests/keras/graphs/preprocessing/keras3/discretization_one_hot_lstm.keras",
        "tests/keras/graphs/regressions/keras2/nested_encoder_two_calls.keras",
        "tests/keras/graphs/rnn_cells/keras3/rnn_lstm_cell_state.keras",
        "tests/keras/graphs/tensor_ops/keras2/ops_arithmetic.keras",
        "tests/keras/graphs/text/keras3/string_lookup_count.keras",
    };
    std::vector<KerasParts> out;
    for (const char* f : files) out.push_back(keras_parts(f));
    return out;
  }();
  return models;
}

// A zip image of stored (uncompressed) members, written by hand: cheap enough to build on every
// fuzz input, and free to hold what libzip's writer would refuse (duplicate or empty names).
inline std::string zip_store(const std::vector<std::pair<std::string, std::string>>& members) {
  std::string out, central;
  auto u16 = [](std::string& s, std::uint32_t v) {
    s += static_cast<char>(v & 0xff);
    s += static_cast<char>((v >> 8) & 0xff);
  };
  auto u32 = [&](std::string& s, std::uint32_t v) {
    u16(s, v & 0xffff);
    u16(s, v >> 16);
  };
  for (const auto& m : members) {
    const std::uint32_t crc = static_cast<std::uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(m.second.data()), static_cast<uInt>(m.second.size())));
    const std::uint32_t size = static_cast<std::uint32_t>(m.second.size());
    const std::uint32_t offset = static_cast<std::uint32_t>(out.size());
    u32(out, 0x04034b50);
    u16(out, 20);  // version needed
    u16(out, 0);   // flags
    u16(out, 0);   // stored
    u16(out, 0);   // time
    u16(out, 0x21);  // date: 1980-01-01
    u32(out, crc);
    u32(out, size);
    u32(out, size);
    u16(out, static_cast<std::uint32_t>(m.first.size()));
    u16(out, 0);
    out += m.first;
    out += m.second;
    u32(central, 0x02014b50);
    u16(central, 20);  // made by
    u16(central, 20);
    u16(central, 0);
    u16(central, 0);
    u16(central, 0);
    u16(central, 0x21);
    u32(central, crc);
    u32(central, size);
    u32(central, size);
    u16(central, static_cast<std::uint32_t>(m.first.size()));
    u16(central, 0);  // extra
    u16(central, 0);  // comment
    u16(central, 0);  // disk
    u16(central, 0);  // internal attributes
    u32(central, 0);  // external attributes
    u32(central, offset);
    central += m.first;
  }
  const std::uint32_t cd_offset = static_cast<std::uint32_t>(out.size());
  out += central;
  u32(out, 0x06054b50);
  u16(out, 0);
  u16(out, 0);
  u16(out, static_cast<std::uint32_t>(members.size()));
  u16(out, static_cast<std::uint32_t>(members.size()));
  u32(out, static_cast<std::uint32_t>(central.size()));
  u32(out, cd_offset);
  u16(out, 0);
  return out;
}

// Touches a string the library returned (ASan reports a dangling or unterminated one).
inline std::size_t touch(const char* s) { return s ? std::strlen(s) : 0; }

// An error message as recur.h promises recur_last_error(), whatever the input quoted: one line of
// printable UTF-8 of at most about 2 KiB (2048 bytes, then "..."); after a failure, not empty.
inline void check_message_text(const char* m, bool after_failure) {
  const std::size_t n = touch(m);
  bool ok = n <= 2048 + 3 && (n > 0 || !after_failure);
  for (std::size_t i = 0; ok && i < n;) {
    const auto c = static_cast<unsigned char>(m[i]);
    const std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    ok = len > 0 && i + len <= n && (len > 1 || (c >= 0x20 && c != 0x7F));
    for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(m[i + k]) >> 6) == 0x2;
    i += len;
  }
  if (!ok) {
    std::fprintf(stderr, "fuzz: an error message is empty, too long (%zu bytes) or not printable: %.200s\n", n, m);
    std::abort();
  }
}

inline void check_message(bool after_failure) { check_message_text(recur_last_error(), after_failure); }

// Largest buffer (floats) a fuzz input may have a model read or write in one call.
constexpr std::size_t kMaxRunFloats = std::size_t(1) << 18;

// Asks an opened model everything the C ABI can tell about it, then runs it once on zeros with
// one row and two timesteps (and streams it one step) when the buffers are small.
inline void exercise_model(recur_model* m) {
  recur_model_info info;
  std::memset(&info, 0, sizeof info);
  info.version = RECUR_MODEL_INFO_VERSION;
  if (recur_model_get_info(m, &info) != RECUR_OK) return;
  touch(info.keras_version);
  touch(info.unsupported);
  for (int32_t i = 0; i < info.num_layers && i < 64; ++i) {
    const char *name = nullptr, *cls = nullptr, *cfg = nullptr;
    int32_t in = 0, out = 0, recurrent = 0;
    if (recur_model_layer(m, i, &name, &cls, &cfg, &in, &out, &recurrent) != RECUR_OK) continue;
    touch(name);
    touch(cls);
    touch(cfg);
    if (!recurrent || !name) continue;
    for (const char* half : {"", "/forward", "/backward"}) {
      recur_layer* layer = nullptr;
      if (recur_model_get_layer(m, (std::string(name) + half).c_str(), &layer) == RECUR_OK) {
        recur_layer_info li;
        std::memset(&li, 0, sizeof li);
        li.version = RECUR_LAYER_INFO_VERSION;
        recur_layer_get_info(layer, &li);
        recur_layer_destroy(layer);
      }
    }
  }
  int32_t nin = 0, nout = 0;
  if (recur_model_num_inputs(m, &nin) != RECUR_OK || recur_model_num_outputs(m, &nout) != RECUR_OK) return;
  int32_t batch = 1;
  for (int32_t i = 0; i < nin; ++i) {
    const char* name = nullptr;
    int32_t rank = 0, ids = 0, seq = 0;
    int64_t dims[RECUR_MAX_RANK];
    if (recur_model_input(m, i, &name, &rank, dims, &ids) != RECUR_OK) continue;
    touch(name);
    if (rank > 0 && dims[0] > 0 && dims[0] <= 8) batch = static_cast<int32_t>(dims[0]);
    recur_model_input_sequence(m, i, &seq);
  }
  for (int32_t i = 0; i < nout; ++i) {
    const char* name = nullptr;
    int32_t rank = 0;
    int64_t dims[RECUR_MAX_RANK];
    if (recur_model_output(m, i, &name, &rank, dims) == RECUR_OK) touch(name);
  }
  const char* why = nullptr;
  const bool streams = recur_model_streamable(m, &why) == RECUR_OK && why && !*why;
  touch(why);
  int32_t stateful = 0, nstateful = 0;
  recur_model_is_stateful(m, &stateful);
  recur_model_num_stateful_layers(m, &nstateful);
  for (int32_t i = 0; i < nstateful && i < 16; ++i) {
    const char* name = nullptr;
    int32_t ns = 0, b = 0, units = 0;
    if (recur_model_stateful_layer(m, i, &name, &ns, &b, &units) != RECUR_OK || !name) continue;
    std::size_t len = 0;
    if (recur_model_states_length(m, name, &len) != RECUR_OK || len > kMaxRunFloats) continue;
    std::vector<float> s(len, 0.5f);
    recur_model_set_states(m, name, s.data(), s.size());
    recur_model_get_states(m, name, s.data(), s.size());
  }
  if (!info.runnable || nin <= 0 || nin > 16) return;
  std::vector<int32_t> timesteps(static_cast<std::size_t>(nin), 2);
  std::size_t in_len = 0, out_len = 0;
  if (recur_model_inputs_length(m, batch, timesteps.data(), nin, &in_len) != RECUR_OK ||
      recur_model_outputs_length(m, batch, timesteps.data(), nin, &out_len) != RECUR_OK)
    return;
  for (int32_t i = 0; i < nout; ++i) {
    int64_t dims[RECUR_MAX_RANK];
    int32_t rank = 0;
    recur_model_output_dims(m, i, batch, timesteps.data(), nin, dims, &rank);
  }
  if (in_len > kMaxRunFloats || out_len > kMaxRunFloats) return;
  std::vector<float> in(in_len, 0.0f), out(out_len, 0.0f);
  recur_model_run_inputs(m, batch, timesteps.data(), nin, in.data(), in.size(), nullptr, 0, out.data(), out.size());
  if (!streams) return;
  recur_model_state* st = nullptr;
  if (recur_model_state_create(&st, m, batch) != RECUR_OK) return;
  std::size_t sin = 0, sout = 0;
  if (recur_model_state_lengths(st, 1, &sin, &sout) == RECUR_OK && sin <= kMaxRunFloats && sout <= kMaxRunFloats) {
    std::vector<float> a(sin, 0.0f), b(sout, 0.0f);
    recur_model_state_step(st, 1, a.data(), a.size(), nullptr, 0, b.data(), b.size());
  }
  recur_model_state_destroy(st);
}

// Largest tensor (bytes) a fuzzed model may build while it runs. A model does the work its config
// declares: a RepeatVector of 65536 steps before a GRU ran 65536 GRU steps (1.2 s under the
// sanitizers) in a 34 KB file, within the default limits. No fixture needs more than 2 KiB at the
// batch and timesteps run here, so this leaves them all running and makes such a model fail with
// RECUR_ERR_LIMIT, as an application that runs untrusted models would have it.
constexpr std::uint64_t kModelTensorBytes = 16 << 10;

// Opens a model image and, when it opens, exercises it.
inline void open_and_exercise(const void* data, std::size_t size, const char* name) {
  static const bool limited = recur_set_limit(RECUR_LIMIT_TENSOR_BYTES, kModelTensorBytes) == RECUR_OK;
  if (!limited) std::abort();
  recur_model* m = nullptr;
  if (recur_model_open_memory(&m, data, size, name) == RECUR_OK) {
    exercise_model(m);
    recur_model_destroy(m);
  } else {
    check_message(true);
    if (m) std::abort();  // documented: *out is NULL on error
  }
}

}  // namespace recur_fuzz

#endif
