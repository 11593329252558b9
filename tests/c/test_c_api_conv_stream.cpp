// SPDX-License-Identifier: Apache-2.0
// Streams through causal Conv1D layers: each keeps its last input steps per stream. A reset starts
// that history afresh; a step that fails (a bad input, an id out of range after the convolution
// ran) leaves it as it was, so the next steps give the numbers of one whole-sequence run.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "c_api_test_util.hpp"

namespace {

const std::string kGraphs = std::string(RECUR_TEST_KERAS_DIR) + "/graphs/conv_stream/keras3/";
constexpr int32_t kB = 3;


// Steps [t0, t0 + n) of a (B, T, F) row-major tensor.
template <typename T>
std::vector<T> steps(const std::vector<T>& x, int64_t T_all, int64_t F, int64_t t0, int64_t n) {
  std::vector<T> out(static_cast<std::size_t>(kB * n * F));
  for (int64_t b = 0; b < kB; ++b)
    std::copy(x.begin() + (b * T_all + t0) * F, x.begin() + (b * T_all + t0 + n) * F, out.begin() + b * n * F);
  return out;
}

// The model causal_conv_with_ids: x (B, T, 2) float and ids (B, T) int -> (B, T, 2).
struct ConvIds {
  rt::Model model;
  std::vector<float> x;
  std::vector<int32_t> ids;
  static constexpr int64_t T = 7;
  std::vector<float> whole;  // the outputs of one run over all T steps, which a stream's pieces give

  ConvIds() {
    recur_model* m = nullptr;
    EXPECT_EQ(recur_model_open(&m, (kGraphs + "causal_conv_with_ids.keras").c_str()), RECUR_OK) << recur_last_error();
    model.reset(m);
    x = rt::data(kB * T * 2, 0.3f);
    for (int64_t k = 0; k < kB * T; ++k) ids.push_back(static_cast<int32_t>((k * 3 + 1) % 5));
    EXPECT_EQ(step(nullptr, 0, T, whole), RECUR_OK) << recur_last_error();
  }
  // A fresh stream of the model, kB rows (null when it cannot be made).
  rt::Stream stream() const {
    recur_model_state* raw = nullptr;
    EXPECT_RECUR_OK(recur_model_state_create(&raw, model.get(), kB));
    return rt::Stream(raw);
  }
  // The outputs for steps [t0, t0 + n) of the stream (or of one run when st is null); `bad_id`
  // replaces the first id to make the Embedding after the convolution fail.
  recur_status step(recur_model_state* st, int64_t t0, int64_t n, std::vector<float>& y, int32_t bad_id = -1) const {
    std::vector<float> xs = steps(x, T, 2, t0, n);
    std::vector<int32_t> is = steps(ids, T, 1, t0, n);
    if (bad_id >= 0) is[0] = bad_id;
    const recur_tensor in[2] = {rt::tensor("x", RECUR_DTYPE_FLOAT32, xs.data(), xs.size(), {kB, n, 2}),
                                rt::tensor("ids", RECUR_DTYPE_INT32, is.data(), is.size(), {kB, n})};
    y.assign(static_cast<std::size_t>(kB * n * 2), 0.0f);
    recur_output out;
    recur_output_init(&out, RECUR_OUTPUT_VERSION);
    out.name = "dense";
    out.data = y.data();
    out.capacity = y.size();
    return st ? recur_model_state_step_named(st, in, 2, &out, 1, nullptr) : recur_model_run_named(model.get(), in, 2, &out, 1, nullptr);
  }
};

// The (B, n, 2) piece of a stream at steps [t0, t0 + n) against the whole run's (B, T, 2).
void expect_piece(const std::vector<float>& whole, const std::vector<float>& piece, int64_t t0, int64_t n) {
  const std::vector<float> want = steps(whole, ConvIds::T, 2, t0, n);
  ASSERT_EQ(want.size(), piece.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(piece[i], want[i], 1e-6) << "steps " << t0 << ".." << t0 + n << ", value " << i;
}

TEST(CApiConvStream, PiecesGiveTheWholeRun) {
  RECUR_SKIP_WITHOUT_FILES();
  ConvIds c;
  std::vector<float> piece;
  rt::Stream st = c.stream();
  ASSERT_TRUE(st) << recur_last_error();
  for (int64_t t0 : {0, 1, 3, 6}) {
    const int64_t n = t0 == 0 ? 1 : t0 == 1 ? 2 : t0 == 3 ? 3 : 1;
    ASSERT_EQ(c.step(st.get(), t0, n, piece), RECUR_OK) << recur_last_error();
    expect_piece(c.whole, piece, t0, n);
  }
}

TEST(CApiConvStream, ResetRestartsTheHistory) {
  RECUR_SKIP_WITHOUT_FILES();
  ConvIds c;
  std::vector<float> piece;
  rt::Stream st = c.stream();
  ASSERT_TRUE(st) << recur_last_error();
  ASSERT_EQ(c.step(st.get(), 0, 4, piece), RECUR_OK) << recur_last_error();
  ASSERT_RECUR_OK(recur_model_state_reset(st.get()));
  // After a reset the first steps see zeros before them again, as at the sequence's start.
  ASSERT_EQ(c.step(st.get(), 0, 2, piece), RECUR_OK) << recur_last_error();
  expect_piece(c.whole, piece, 0, 2);
  ASSERT_EQ(c.step(st.get(), 2, 5, piece), RECUR_OK) << recur_last_error();
  expect_piece(c.whole, piece, 2, 5);
}

// Steps [0, 3), then [3, 5) with an id out of range (the Embedding fails after the convolution
// has taken these steps into its history), `between`, then [3, 5) and [5, 7): the failure must
// have left nothing behind. `step(t0, n, bad_id)` writes its outputs to `piece`.
template <typename Step, typename Between>
void step_past_a_failure(const ConvIds& c, const std::vector<float>& piece, Step&& step, Between&& between) {
  ASSERT_EQ(step(0, 3, -1), RECUR_OK) << recur_last_error();
  expect_piece(c.whole, piece, 0, 3);
  EXPECT_EQ(step(3, 2, 9), RECUR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(recur_last_error()).find("Embedding"), std::string::npos) << recur_last_error();
  between();
  ASSERT_EQ(step(3, 2, -1), RECUR_OK) << recur_last_error();
  expect_piece(c.whole, piece, 3, 2);
  ASSERT_EQ(step(5, 2, -1), RECUR_OK) << recur_last_error();
  expect_piece(c.whole, piece, 5, 2);
}

TEST(CApiConvStream, FailedStepsLeaveTheHistory) {
  RECUR_SKIP_WITHOUT_FILES();
  ConvIds c;
  std::vector<float> piece;
  rt::Stream st = c.stream();
  ASSERT_TRUE(st) << recur_last_error();
  auto named_step = [&](int64_t t0, int64_t n, int32_t bad_id) { return c.step(st.get(), t0, n, piece, bad_id); };
  step_past_a_failure(c, piece, named_step, [&] {
    // Inputs of the wrong length: refused before any layer runs.
    std::vector<float> xs(5);
    std::vector<int32_t> is(6);
    const recur_tensor bad[2] = {rt::tensor("x", RECUR_DTYPE_FLOAT32, xs.data(), xs.size(), {kB, 2, 2}),
                                 rt::tensor("ids", RECUR_DTYPE_INT32, is.data(), is.size(), {kB, 2})};
    std::vector<float> y(12);
    recur_output out;
    recur_output_init(&out, RECUR_OUTPUT_VERSION);
    out.name = "dense";
    out.data = y.data();
    out.capacity = y.size();
    EXPECT_EQ(recur_model_state_step_named(st.get(), bad, 2, &out, 1, nullptr), RECUR_ERR_SHAPE);
  });
}

// The same through the positional step: its inputs are x's floats, then the ids as floats.
TEST(CApiConvStream, FailedPositionalStepsLeaveTheStream) {
  RECUR_SKIP_WITHOUT_FILES();
  ConvIds c;
  std::vector<float> piece;
  rt::Stream st = c.stream();
  ASSERT_TRUE(st) << recur_last_error();
  auto positional = [&](int64_t t0, int64_t n, int32_t bad_id) {
    std::vector<float> in = steps(c.x, ConvIds::T, 2, t0, n);
    const std::vector<int32_t> is = steps(c.ids, ConvIds::T, 1, t0, n);
    const std::size_t first_id = in.size();
    in.insert(in.end(), is.begin(), is.end());
    if (bad_id >= 0) in[first_id] = static_cast<float>(bad_id);
    size_t in_len = 0, out_len = 0;
    EXPECT_RECUR_OK(recur_model_state_lengths(st.get(), static_cast<int32_t>(n), &in_len, &out_len));
    EXPECT_EQ(in_len, in.size());
    piece.assign(out_len, 0.0f);
    return recur_model_state_step(st.get(), static_cast<int32_t>(n), in.data(), in.size(), nullptr, 0, piece.data(),
                                  piece.size());
  };
  step_past_a_failure(c, piece, positional, [] {});
  // From a reset, a failed first step: the stream starts over as if it had not been tried.
  ASSERT_RECUR_OK(recur_model_state_reset(st.get()));
  EXPECT_EQ(positional(0, 2, 9), RECUR_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(positional(0, 4, -1), RECUR_OK) << recur_last_error();
  expect_piece(c.whole, piece, 0, 4);
}

TEST(CApiConvStream, NonCausalConvIsRefusedByName) {
  RECUR_SKIP_WITHOUT_FILES();
  recur_model* m = nullptr;
  ASSERT_EQ(recur_model_open(&m, (std::string(RECUR_TEST_KERAS_DIR) + "/graphs/keras3/conv1d_padding.keras").c_str()), RECUR_OK)
      << recur_last_error();
  rt::Model model(m);
  const char* why = nullptr;
  ASSERT_RECUR_OK(recur_model_streamable(model.get(), &why));
  EXPECT_NE(std::string(why).find("(Conv1D): padding="), std::string::npos) << why;
  recur_model_state* st = nullptr;
  EXPECT_EQ(recur_model_state_create(&st, model.get(), kB), RECUR_ERR_UNSUPPORTED);
  EXPECT_EQ(st, nullptr);
}

}  // namespace
