// SPDX-License-Identifier: Apache-2.0
// CPU threads per call: the argument checks, and results that are bitwise the same for every
// thread count (threads split units or batch rows, never a sum), including calls that find the pool
// busy. ctest runs the suite again with RECUR_CPU_SPLIT=rows and =units, so that each split is
// checked on every shape.
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "c_api_test_util.hpp"

namespace {

struct Shape {
  int32_t type, units, input, batch, timesteps;
  int32_t reset_after;  // GRU only; RECUR_DEFAULT otherwise
  bool mask, backwards, time_major;
};

rt::Layer make(const Shape& s) {
  // time_major and the CuDNN layers exist in Keras 2 only.
  const bool keras2 = s.time_major || s.type == RECUR_LAYER_CUDNN_GRU || s.type == RECUR_LAYER_CUDNN_LSTM;
  recur_layer_options o = rt::options(s.type, s.units, s.input, keras2 ? RECUR_DIALECT_KERAS2 : RECUR_DIALECT_KERAS3);
  o.return_sequences = 1;
  o.return_state = 1;
  o.go_backwards = s.backwards;
  o.time_major = s.time_major;
  if (s.type == RECUR_LAYER_GRU) o.reset_after = s.reset_after;
  recur_layer* l = nullptr;
  EXPECT_EQ(recur_layer_create(&l, &o), RECUR_OK) << recur_last_error();
  return rt::Layer(l);
}

std::vector<float> values(std::size_t n, unsigned seed) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = std::sin(0.37f * static_cast<float>(i + seed)) * 0.8f;
  return v;
}

// Output followed by the final states, for one forward call with `threads`.
std::vector<float> run(recur_layer* l, const Shape& s, int32_t threads) {
  EXPECT_EQ(recur_layer_set_num_threads(l, threads), RECUR_OK) << recur_last_error();
  const std::size_t rows = static_cast<std::size_t>(s.batch * s.timesteps);
  const std::vector<float> x = values(rows * static_cast<std::size_t>(s.input), 3);
  std::vector<uint8_t> m(rows, 1);
  for (std::size_t i = 0; i < rows; i += 7) m[i] = 0;
  const int ns = s.type == RECUR_LAYER_LSTM ? 2 : 1;
  std::vector<float> y(rows * static_cast<std::size_t>(s.units));
  std::vector<float> st(static_cast<std::size_t>(ns * s.batch * s.units));
  EXPECT_EQ(recur_layer_forward(l, x.data(), x.size(), s.batch, s.timesteps, s.mask ? m.data() : nullptr,
                                s.mask ? m.size() : 0, nullptr, 0, 0, 0, y.data(), y.size(), st.data(), st.size()),
            RECUR_OK)
      << recur_last_error();
  y.insert(y.end(), st.begin(), st.end());
  return y;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

class NumThreads : public ::testing::TestWithParam<Shape> {};

TEST_P(NumThreads, EveryThreadCountGivesBitwiseTheSameNumbers) {
  const Shape s = GetParam();
  rt::Layer l = make(s);
  const std::vector<float> one = run(l.get(), s, 1);
  for (int32_t threads : {2, 3, 0}) EXPECT_TRUE(bitwise_equal(one, run(l.get(), s, threads))) << threads << " threads";
}

TEST_P(NumThreads, StreamsGiveBitwiseTheSameNumbers) {
  const Shape s = GetParam();
  if (s.time_major || s.backwards) GTEST_SKIP() << "streams step forwards, batch-major";
  rt::Layer l = make(s);
  std::vector<std::vector<float>> outs;
  for (int32_t threads : {1, 2}) {
    ASSERT_EQ(recur_layer_set_num_threads(l.get(), threads), RECUR_OK);
    recur_state* st = nullptr;
    ASSERT_EQ(recur_state_create(&st, l.get(), s.batch), RECUR_OK) << recur_last_error();
    const std::vector<float> x = values(static_cast<std::size_t>(s.batch * s.timesteps * s.input), 5);
    std::vector<float> y(static_cast<std::size_t>(s.batch * s.timesteps * s.units));
    ASSERT_EQ(recur_layer_forward_state(l.get(), st, x.data(), x.size(), s.timesteps, nullptr, 0, y.data(), y.size()),
              RECUR_OK)
        << recur_last_error();
    outs.push_back(y);
    recur_state_destroy(st);
  }
  EXPECT_TRUE(bitwise_equal(outs[0], outs[1]));
}

// Shapes large enough that the work is split (units over several kernel panels, enough work per
// step), in every cell type and layout, with masks; batches that split into rows of 8 and more, an
// odd one, and a wide layer (its weights beyond a core's cache: split by units when not forced).
INSTANTIATE_TEST_SUITE_P(
    Shapes, NumThreads,
    ::testing::Values(Shape{RECUR_LAYER_LSTM, 320, 96, 19, 5, RECUR_DEFAULT, true, false, false},
                      Shape{RECUR_LAYER_GRU, 96, 40, 27, 6, 1, true, true, false},
                      Shape{RECUR_LAYER_GRU, 128, 64, 16, 12, 1, false, false, false},
                      Shape{RECUR_LAYER_GRU, 128, 64, 16, 12, 0, true, false, false},
                      Shape{RECUR_LAYER_GRU, 200, 48, 8, 9, 0, true, true, false},
                      Shape{RECUR_LAYER_LSTM, 128, 64, 16, 12, RECUR_DEFAULT, true, false, true},
                      Shape{RECUR_LAYER_LSTM, 100, 32, 32, 7, RECUR_DEFAULT, false, true, false},
                      Shape{RECUR_LAYER_CUDNN_GRU, 128, 64, 16, 12, RECUR_DEFAULT, false, false, false},
                      Shape{RECUR_LAYER_SIMPLE_RNN, 256, 64, 16, 12, RECUR_DEFAULT, true, false, false},
                      Shape{RECUR_LAYER_SIMPLE_RNN, 200, 96, 8, 9, RECUR_DEFAULT, true, true, true}),
    [](const ::testing::TestParamInfo<Shape>& info) {
      const Shape& s = info.param;
      const char* type = s.type == RECUR_LAYER_GRU          ? "gru"
                         : s.type == RECUR_LAYER_LSTM       ? "lstm"
                         : s.type == RECUR_LAYER_SIMPLE_RNN ? "simplernn"
                                                            : "cudnngru";
      std::string name = std::string(type) + std::to_string(s.units) + "_b" + std::to_string(s.batch);
      if (s.type == RECUR_LAYER_GRU) name += s.reset_after ? "_ra" : "_rb";
      if (s.mask) name += "_mask";
      if (s.backwards) name += "_backwards";
      if (s.time_major) name += "_timemajor";
      return name;
    });

TEST(NumThreadsApi, DefaultsToOneAndKeepsWhatIsSet) {
  rt::Layer l = make(Shape{RECUR_LAYER_GRU, 8, 4, 1, 1, 1, false, false, false});
  int32_t n = -7;
  ASSERT_EQ(recur_layer_get_num_threads(l.get(), &n), RECUR_OK);
  EXPECT_EQ(n, 1);
  for (int32_t v : {0, 2, 1024}) {
    ASSERT_EQ(recur_layer_set_num_threads(l.get(), v), RECUR_OK) << recur_last_error();
    ASSERT_EQ(recur_layer_get_num_threads(l.get(), &n), RECUR_OK);
    EXPECT_EQ(n, v);
  }
}

TEST(NumThreadsApi, BadCountsAreRefusedAndChangeNothing) {
  rt::Layer l = make(Shape{RECUR_LAYER_LSTM, 8, 4, 1, 1, RECUR_DEFAULT, false, false, false});
  ASSERT_EQ(recur_layer_set_num_threads(l.get(), 3), RECUR_OK);
  for (int32_t v : {-1, 1025, INT32_MIN}) {
    EXPECT_EQ(recur_layer_set_num_threads(l.get(), v), RECUR_ERR_INVALID_ARGUMENT) << v;
    EXPECT_NE(std::string(recur_last_error()).find("num_threads"), std::string::npos) << recur_last_error();
  }
  int32_t n = 0;
  ASSERT_EQ(recur_layer_get_num_threads(l.get(), &n), RECUR_OK);
  EXPECT_EQ(n, 3);
  EXPECT_EQ(recur_layer_get_num_threads(l.get(), nullptr), RECUR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(recur_last_error()).find("num_threads"), std::string::npos);
  EXPECT_EQ(recur_layer_set_num_threads(nullptr, 1), RECUR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(recur_model_set_num_threads(nullptr, 1), RECUR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(recur_model_get_num_threads(nullptr, &n), RECUR_ERR_INVALID_ARGUMENT);
}

TEST(NumThreadsApi, DestroyedHandlesAreRefused) {
  recur_layer_options o = rt::options(RECUR_LAYER_GRU, 4, 2);
  recur_layer* l = nullptr;
  ASSERT_EQ(recur_layer_create(&l, &o), RECUR_OK);
  recur_layer_destroy(l);
  EXPECT_EQ(recur_layer_set_num_threads(l, 2), RECUR_ERR_STATE);
}

TEST(NumThreadsApi, CpuKernelsNamesASet) {
  const std::string k = recur_cpu_kernels();
  // The platform's default set is "baseline" on x86-64 and "neon" on aarch64.
  EXPECT_TRUE(k == "avx512" || k == "avx2" || k == RECUR_BASELINE_KERNELS_NAME) << k;
}

// Callers on several threads, each asking for two threads: one gets the pool, the others run on
// their own thread; all get the single-thread numbers.
TEST(NumThreadsApi, ConcurrentCallsShareThePoolSafely) {
  const Shape s{RECUR_LAYER_GRU, 128, 64, 16, 12, 1, true, false, false};
  rt::Layer l = make(s);
  const std::vector<float> expected = run(l.get(), s, 1);
  ASSERT_EQ(recur_layer_set_num_threads(l.get(), 2), RECUR_OK);
  const std::size_t rows = static_cast<std::size_t>(s.batch * s.timesteps);
  const std::vector<float> x = values(rows * static_cast<std::size_t>(s.input), 3);
  std::vector<uint8_t> m(rows, 1);
  for (std::size_t i = 0; i < rows; i += 7) m[i] = 0;
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&, c] {
      for (int rep = 0; rep < 10; ++rep) {
        recur_state* st = nullptr;
        if (recur_state_create(&st, l.get(), s.batch) != RECUR_OK) {
          ++mismatches[static_cast<std::size_t>(c)];
          return;
        }
        std::vector<float> y(rows * static_cast<std::size_t>(s.units));
        if (recur_layer_forward_state(l.get(), st, x.data(), x.size(), s.timesteps, m.data(), m.size(), y.data(),
                                      y.size()) != RECUR_OK ||
            std::memcmp(y.data(), expected.data(), y.size() * sizeof(float)) != 0)
          ++mismatches[static_cast<std::size_t>(c)];
        recur_state_destroy(st);
      }
    });
  for (auto& t : callers) t.join();
  for (int c = 0; c < 4; ++c) EXPECT_EQ(mismatches[static_cast<std::size_t>(c)], 0) << "caller " << c;
}

}  // namespace
