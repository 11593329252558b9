// SPDX-License-Identifier: Apache-2.0
// Model stream snapshots (recur_model_state_save/_load): a stream saved mid-sequence and loaded
// into a fresh state of the same model goes on with bit-identical outputs (recurrent states,
// stacked and nested layers, masks, causal Conv1D and attention histories); hostile bytes, another
// batch and another model's bytes are refused with the state unchanged.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "c_api_test_util.hpp"
#include "recur/recur.hpp"

namespace {

const std::string kKeras = std::string(RECUR_TEST_KERAS_DIR) + "/graphs/";
constexpr int32_t kB = 3;
constexpr int32_t kT = 7;

struct Case {
  const char* file;
  bool ids;  // inputs hold integer ids: small integers only
};

const Case kCases[] = {
    {"keras3/masking_sequential.keras", false},      // Masking, LSTM, masked steps
    {"keras3/nested_sequential.keras", false},       // a nested Sequential: GRU then LSTM
    {"keras3/stateful_functional_lstm_gru.keras", false},  // stacked LSTM -> GRU
    {"keras3/residual_add_layernorm.keras", false},  // GRU in a residual block
    {"keras2/masking_functional.h5", false},
    {"conv_stream/keras3/causal_conv_with_ids.keras", true},  // causal Conv1D history, Embedding
    {"conv_stream/keras3/tcn_lstm.keras", false},    // dilated causal Conv1D stack, LSTM
    {"attention/keras3/mha_causal.keras", false},    // causal attention: growing history
    {"attention/keras3/attn_causal_masked.keras", false},  // history with its mask
};

rt::Model open_model(const std::string& file) {
  recur_model* m = nullptr;
  EXPECT_EQ(recur_model_open(&m, (kKeras + file).c_str()), RECUR_OK) << file << ": " << recur_last_error();
  return rt::Model(m);
}

rt::Stream make_stream(const recur_model* m) {
  recur_model_state* s = nullptr;
  EXPECT_EQ(recur_model_state_create(&s, m, kB), RECUR_OK) << recur_last_error();
  return rt::Stream(s);
}

// Step t's inputs (one timestep): whole rows of zeros now and then, so Masking layers mask them.
std::vector<float> step_inputs(const recur_model_state* s, int32_t t, bool ids) {
  size_t in_len = 0, out_len = 0;
  EXPECT_EQ(recur_model_state_lengths(s, 1, &in_len, &out_len), RECUR_OK) << recur_last_error();
  std::vector<float> x(in_len);
  const size_t per_row = in_len / kB;
  for (size_t k = 0; k < in_len; ++k) {
    const size_t b = k / (per_row ? per_row : 1);
    if (ids)
      x[k] = static_cast<float>((k * 7 + static_cast<size_t>(t) * 3) % 4);
    else
      x[k] = ((b + static_cast<size_t>(t)) % 4 == 1) ? 0.0f : 0.1f * static_cast<float>((k * 13 + static_cast<size_t>(t) * 5) % 17) - 0.8f;
  }
  return x;
}

std::vector<float> step(recur_model_state* s, int32_t t, bool ids) {
  const std::vector<float> x = step_inputs(s, t, ids);
  size_t in_len = 0, out_len = 0;
  EXPECT_EQ(recur_model_state_lengths(s, 1, &in_len, &out_len), RECUR_OK);
  std::vector<float> y(out_len);
  EXPECT_EQ(recur_model_state_step(s, 1, x.data(), x.size(), nullptr, 0, y.data(), y.size()), RECUR_OK) << recur_last_error();
  return y;
}

std::vector<unsigned char> save(const recur_model_state* s) {
  size_t need = 0;
  EXPECT_EQ(recur_model_state_save(s, nullptr, 0, &need), RECUR_OK) << recur_last_error();
  std::vector<unsigned char> bytes(need);
  size_t written = 0;
  EXPECT_EQ(recur_model_state_save(s, bytes.data(), bytes.size(), &written), RECUR_OK) << recur_last_error();
  EXPECT_EQ(written, need);
  return bytes;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(CApiStateSnapshot, SaveLoadContinuesBitIdentically) {
  RECUR_SKIP_WITHOUT_FILES();
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.file);
    rt::Model m = open_model(c.file);
    ASSERT_TRUE(m);
    const char* why = nullptr;
    ASSERT_EQ(recur_model_streamable(m.get(), &why), RECUR_OK);
    ASSERT_STREQ(why, "") << "the case must stream";
    for (int32_t cut = 0; cut <= kT; cut += 3) {
      SCOPED_TRACE("cut at step " + std::to_string(cut));
      rt::Stream whole = make_stream(m.get());
      rt::Stream first = make_stream(m.get());
      std::vector<std::vector<float>> want;
      for (int32_t t = 0; t < kT; ++t) want.push_back(step(whole.get(), t, c.ids));
      for (int32_t t = 0; t < cut; ++t) step(first.get(), t, c.ids);
      const std::vector<unsigned char> bytes = save(first.get());
      first.reset();  // the saved stream is gone: only the bytes go on
      rt::Stream resumed = make_stream(m.get());
      ASSERT_RECUR_OK(recur_model_state_load(resumed.get(), bytes.data(), bytes.size()));
      // The same bytes again: a loaded stream saves as it was saved.
      EXPECT_EQ(save(resumed.get()), bytes);
      for (int32_t t = cut; t < kT; ++t)
        EXPECT_TRUE(same_bits(step(resumed.get(), t, c.ids), want[static_cast<size_t>(t)])) << "step " << t;
    }
  }
}

TEST(CApiStateSnapshot, LoadReplacesWhatTheStateHeld) {
  RECUR_SKIP_WITHOUT_FILES();
  rt::Model m = open_model("conv_stream/keras3/tcn_lstm.keras");
  rt::Stream a = make_stream(m.get()), b = make_stream(m.get());
  step(a.get(), 0, false);
  const std::vector<unsigned char> fresh = save(make_stream(m.get()).get());
  for (int32_t t = 0; t < 4; ++t) step(b.get(), t, false);
  ASSERT_RECUR_OK(recur_model_state_load(b.get(), fresh.data(), fresh.size()));  // back to a new stream
  rt::Stream c = make_stream(m.get());
  for (int32_t t = 0; t < 3; ++t) EXPECT_TRUE(same_bits(step(b.get(), t, false), step(c.get(), t, false)));
}

TEST(CApiStateSnapshot, SizeQueryAndSmallBuffer) {
  RECUR_SKIP_WITHOUT_FILES();
  rt::Model m = open_model("keras3/masking_sequential.keras");
  rt::Stream s = make_stream(m.get());
  step(s.get(), 0, false);
  size_t need = 0;
  ASSERT_RECUR_OK(recur_model_state_save(s.get(), nullptr, 0, &need));
  ASSERT_GT(need, 28u);
  std::vector<unsigned char> small(need - 1, 0xAB);
  size_t written = 0;
  EXPECT_RECUR_ERR(recur_model_state_save(s.get(), small.data(), small.size(), &written), RECUR_ERR_SHAPE, "the snapshot needs");
  EXPECT_EQ(written, need);
  for (unsigned char b : small) ASSERT_EQ(b, 0xAB) << "nothing is written to a small buffer";
  EXPECT_RECUR_ERR(recur_model_state_save(s.get(), nullptr, 0, nullptr), RECUR_ERR_INVALID_ARGUMENT, "written");
  EXPECT_RECUR_ERR(recur_model_state_save(nullptr, nullptr, 0, &need), RECUR_ERR_INVALID_ARGUMENT, "state is NULL");
  EXPECT_RECUR_ERR(recur_model_state_load(nullptr, small.data(), small.size()), RECUR_ERR_INVALID_ARGUMENT, "state is NULL");
  EXPECT_RECUR_ERR(recur_model_state_load(s.get(), nullptr, 5), RECUR_ERR_INVALID_ARGUMENT, "data");
}

// Fixes up the trailing CRC-32 after an edit, so that the checks behind it are reached.
void reseal(std::vector<unsigned char>& b) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i + 4 < b.size(); ++i) {
    c ^= b[i];
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  c ^= 0xFFFFFFFFu;
  for (int i = 0; i < 4; ++i) b[b.size() - 4 + static_cast<size_t>(i)] = static_cast<unsigned char>(c >> (8 * i));
}

struct StateSnapshotHostile : ::testing::Test {
  rt::Model m;
  rt::Stream s;
  std::vector<unsigned char> good;
  std::vector<float> next;  // the step after the save, from the saved stream
  void SetUp() override {
    if (!RECUR_TEST_WITH_FILES) GTEST_SKIP() << "recur was built without model-file support (RECUR_WITH_FILES=OFF)";
    m = open_model("conv_stream/keras3/causal_conv_with_ids.keras");
    s = make_stream(m.get());
    for (int32_t t = 0; t < 3; ++t) step(s.get(), t, true);
    good = save(s.get());
  }
  // The load fails with `code` and `needle`, and the stream goes on as if nothing happened.
  void refused(const std::vector<unsigned char>& bytes, recur_status code, const char* needle) {
    EXPECT_RECUR_ERR(recur_model_state_load(s.get(), bytes.data(), bytes.size()), code, needle);
    rt::Stream ref = make_stream(m.get());
    ASSERT_RECUR_OK(recur_model_state_load(ref.get(), good.data(), good.size()));
    EXPECT_TRUE(same_bits(step(s.get(), 3, true), step(ref.get(), 3, true))) << "the state changed";
    ASSERT_RECUR_OK(recur_model_state_load(s.get(), good.data(), good.size()));
  }
};

TEST_F(StateSnapshotHostile, Truncated) {
  for (size_t n : {size_t(0), size_t(3), size_t(27), good.size() / 2, good.size() - 1}) {
    SCOPED_TRACE(n);
    std::vector<unsigned char> b(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    refused(b, RECUR_ERR_INVALID_ARGUMENT, n < 28 ? "too short" : "checksum");
  }
  // Cut short and resealed: the reader finds the end.
  std::vector<unsigned char> b(good.begin(), good.end() - 40);
  reseal(b);
  refused(b, RECUR_ERR_INVALID_ARGUMENT, "truncated");
}

TEST_F(StateSnapshotHostile, WrongMagicVersionChecksum) {
  std::vector<unsigned char> b = good;
  b[0] = 'X';
  refused(b, RECUR_ERR_INVALID_ARGUMENT, "RCST");
  b = good;
  b[4] = 9;
  reseal(b);
  refused(b, RECUR_ERR_INVALID_ARGUMENT, "format version 9");
  b = good;
  b[b.size() / 2] ^= 0x40;
  refused(b, RECUR_ERR_INVALID_ARGUMENT, "checksum");
}

TEST_F(StateSnapshotHostile, HugeCounts) {
  // The layout's entry count (after magic, version, batch) set to 2^32 - 1.
  ASSERT_GT(good.size(), 24u);
  std::vector<unsigned char> b = good;
  std::fill(b.begin() + 16, b.begin() + 20, static_cast<unsigned char>(0xFF));
  reseal(b);
  refused(b, RECUR_ERR_INVALID_ARGUMENT, "truncated");
  // The first layer name's length set huge.
  b = good;
  std::fill(b.begin() + 20, b.begin() + 24, static_cast<unsigned char>(0xFF));
  reseal(b);
  refused(b, RECUR_ERR_INVALID_ARGUMENT, "corrupt");
}

TEST_F(StateSnapshotHostile, BatchMismatch) {
  recur_model_state* other = nullptr;
  ASSERT_RECUR_OK(recur_model_state_create(&other, m.get(), kB + 1));
  rt::Stream o(other);
  EXPECT_RECUR_ERR(recur_model_state_load(o.get(), good.data(), good.size()), RECUR_ERR_INVALID_ARGUMENT, "batch 3");
  std::vector<unsigned char> b = good;
  b[8] = kB + 2;
  reseal(b);
  refused(b, RECUR_ERR_INVALID_ARGUMENT, "batch 5");
}

TEST_F(StateSnapshotHostile, AnotherModelsBytes) {
  rt::Model other = open_model("keras3/masking_sequential.keras");
  rt::Stream os = make_stream(other.get());
  step(os.get(), 0, false);
  const std::vector<unsigned char> theirs = save(os.get());
  refused(theirs, RECUR_ERR_STATE, "saved by another model");
  refused(theirs, RECUR_ERR_STATE, "LSTM");
  // A layer renamed in the layout (another version of the model).
  std::vector<unsigned char> b = good;
  const std::string cls = "Conv1D";
  auto at = std::search(b.begin(), b.end(), cls.begin(), cls.end());
  ASSERT_NE(at, b.end());
  *at = 'X';
  reseal(b);
  refused(b, RECUR_ERR_STATE, "Xonv1D");
}

TEST_F(StateSnapshotHostile, TrailingBytes) {
  std::vector<unsigned char> b = good;
  b.insert(b.end() - 4, {1, 2, 3});
  reseal(b);
  refused(b, RECUR_ERR_INVALID_ARGUMENT, "follow the last entry");
}

// The C++ wrapper: save() and load() round-trip, and a bad load throws recur::Error with the status.
TEST(CApiStateSnapshot, CppWrapper) {
  RECUR_SKIP_WITHOUT_FILES();
  recur::Model m(kKeras + "keras3/masking_sequential.keras");
  recur::ModelState a(m, kB), b(m, kB);
  step(a.get(), 0, false);
  const std::vector<unsigned char> bytes = a.save();
  b.load(bytes);
  EXPECT_EQ(b.save(), bytes);
  EXPECT_TRUE(same_bits(step(a.get(), 1, false), step(b.get(), 1, false)));
  try {
    b.load(std::vector<unsigned char>(bytes.begin(), bytes.end() - 1));
    ADD_FAILURE() << "a cut snapshot loaded";
  } catch (const recur::Error& e) {
    EXPECT_EQ(e.status(), RECUR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
  }
}

}  // namespace
