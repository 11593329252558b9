// SPDX-License-Identifier: Apache-2.0
// Thread stress through the C ABI, meant to run under ThreadSanitizer as well as in the normal
// build: many states stepping one shared layer, many streams through one shared model, models
// opened and destroyed concurrently, many streams stepped in one call from every thread, errors on every thread at once, and limits read while they
// change. Results are compared with single-threaded runs bit for bit. RECUR_STRESS_STEPS scales
// the work (default 10000 steps per stream on the layer).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "c_api_test_util.hpp"

namespace {

const std::string kModels = RECUR_TEST_MODELS_DIR;
constexpr int kThreads = 16;

int stress_steps() {
  const char* env = std::getenv("RECUR_STRESS_STEPS");
  const int n = env ? std::atoi(env) : 0;
  return n > 0 ? n : 10000;
}

template <typename F>
void on_threads(int n, F&& body) {
  std::vector<std::thread> threads;
  for (int k = 0; k < n; ++k) threads.emplace_back([&body, k] { body(k); });
  for (auto& t : threads) t.join();
}

// Steps one stream of `layer` `steps` times with inputs that depend on `seed`; returns its state.
std::vector<float> stream_layer(const recur_layer* layer, int seed, int steps, std::string& error) {
  constexpr int32_t kBatch = 2, kInput = 4, kUnits = 8;
  recur_state* s = nullptr;
  if (recur_state_create(&s, layer, kBatch) != RECUR_OK) {
    error = recur_last_error();
    return {};
  }
  std::vector<float> x(kBatch * kInput), out(kBatch * kUnits), h(2 * kBatch * kUnits);
  for (int t = 0; t < steps && error.empty(); ++t) {
    for (size_t i = 0; i < x.size(); ++i) x[i] = 0.5f * std::sin(0.01f * static_cast<float>(t * 7 + seed * 13 + static_cast<int>(i)));
    if (recur_layer_forward_state(layer, s, x.data(), x.size(), 1, nullptr, 0, out.data(), out.size()) != RECUR_OK)
      error = recur_last_error();
    // Every few hundred steps the stream starts over, as a game's NPC respawns.
    if (t % 997 == 996 && recur_state_reset(s) != RECUR_OK) error = recur_last_error();
  }
  if (error.empty() && recur_state_get(s, h.data(), h.size()) != RECUR_OK) error = recur_last_error();
  recur_state_destroy(s);
  return h;
}

TEST(CApiStress, SixteenThreadsStepOneLayer) {
  recur_layer_options o = rt::options(RECUR_LAYER_LSTM, 8, 4);
  rt::Layer layer = rt::make(o);
  const int steps = stress_steps();
  std::vector<std::vector<float>> got(kThreads);
  std::vector<std::string> errors(kThreads);
  on_threads(kThreads, [&](int k) { got[static_cast<size_t>(k)] = stream_layer(layer.get(), k % 4, steps, errors[static_cast<size_t>(k)]); });
  for (int k = 0; k < kThreads; ++k) {
    ASSERT_EQ(errors[static_cast<size_t>(k)], "") << "thread " << k;
    std::string e;
    if (k < 4) {
      const std::vector<float> want = stream_layer(layer.get(), k, steps, e);
      ASSERT_EQ(e, "");
      for (int j = k; j < kThreads; j += 4) EXPECT_EQ(got[static_cast<size_t>(j)], want) << "thread " << j;
    }
  }
}

// Streams token ids through the whole model, one step per call.
std::vector<float> stream_model(const recur_model* m, int seed, int steps, std::string& error) {
  recur_model_state* s = nullptr;
  if (recur_model_state_create(&s, m, 1) != RECUR_OK) {
    error = recur_last_error();
    return {};
  }
  size_t in_len = 0, out_len = 0;
  if (recur_model_state_lengths(s, 1, &in_len, &out_len) != RECUR_OK) error = recur_last_error();
  std::vector<float> x(in_len), y(out_len), all;
  for (int t = 0; t < steps && error.empty(); ++t) {
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((t * 3 + seed * 5 + static_cast<int>(i)) % 20);
    if (recur_model_state_step(s, 1, x.data(), x.size(), nullptr, 0, y.data(), y.size()) != RECUR_OK)
      error = recur_last_error();
    all.insert(all.end(), y.begin(), y.end());
  }
  recur_model_state_destroy(s);
  return all;
}

TEST(CApiStress, ManyStreamsThroughOneModel) {
  RECUR_SKIP_WITHOUT_FILES();
  recur_model* m = nullptr;
  ASSERT_RECUR_OK(recur_model_open(&m, (kModels + "/keras3/tokens.keras").c_str()));
  const char* why = nullptr;
  ASSERT_RECUR_OK(recur_model_streamable(m, &why));
  const int steps = std::max(50, stress_steps() / 20);
  std::vector<std::vector<float>> got(kThreads);
  std::vector<std::string> errors(kThreads);
  on_threads(kThreads, [&](int k) { got[static_cast<size_t>(k)] = stream_model(m, k % 4, steps, errors[static_cast<size_t>(k)]); });
  for (int k = 0; k < 4; ++k) {
    std::string e;
    const std::vector<float> want = stream_model(m, k, steps, e);
    ASSERT_EQ(e, "");
    for (int j = k; j < kThreads; j += 4) {
      ASSERT_EQ(errors[static_cast<size_t>(j)], "") << "thread " << j;
      EXPECT_EQ(got[static_cast<size_t>(j)], want) << "thread " << j;
    }
  }
  recur_model_destroy(m);
}

// Steps `n` streams of the model together (recur_model_states_step_named), `steps` calls; returns
// every call's outputs. Every thread's calls share the model's kept batch copies.
std::vector<float> stream_many(const recur_model* m, int seed, int n, int steps, std::string& error) {
  std::vector<recur_model_state*> states(static_cast<size_t>(n), nullptr);
  for (auto& st : states)
    if (error.empty() && recur_model_state_create(&st, m, 1) != RECUR_OK) error = recur_last_error();
  const char *in_name = nullptr, *out_name = nullptr;
  int32_t rank = 0;
  int64_t dims[RECUR_MAX_RANK] = {0};
  if (error.empty() && (recur_model_input(m, 0, &in_name, &rank, dims, nullptr) != RECUR_OK ||
                        recur_model_output(m, 0, &out_name, nullptr, nullptr) != RECUR_OK))
    error = recur_last_error();
  size_t in_len = 0, out_len = 0;
  if (error.empty() && recur_model_state_lengths(states[0], 1, &in_len, &out_len) != RECUR_OK) error = recur_last_error();
  std::vector<float> x(in_len * static_cast<size_t>(n)), y(out_len * static_cast<size_t>(n)), all;
  for (int t = 0; t < steps && error.empty(); ++t) {
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((t * 3 + seed * 5 + static_cast<int>(i)) % 20);
    std::vector<int64_t> d(dims, dims + rank);
    d[0] = n;
    d[1] = 1;
    const recur_tensor in = rt::tensor(in_name, RECUR_DTYPE_FLOAT32, x.data(), x.size(), d);
    recur_output out;
    recur_output_init(&out, RECUR_OUTPUT_VERSION);
    out.name = out_name;
    out.data = y.data();
    out.capacity = y.size();
    if (recur_model_states_step_named(states.data(), n, &in, 1, &out, 1, nullptr) != RECUR_OK) error = recur_last_error();
    all.insert(all.end(), y.begin(), y.end());
  }
  for (auto* st : states) recur_model_state_destroy(st);
  return all;
}

// Threads each stepping a set of streams of one model in one call at a time, all at once (sets of
// 3, 40 and 300 streams: one, one and two batches on the CPU), against the same sets alone.
TEST(CApiStress, ManyStreamCallsFromEveryThreadAtOnce) {
  RECUR_SKIP_WITHOUT_FILES();
  recur_model* m = nullptr;
  ASSERT_RECUR_OK(recur_model_open(&m, (kModels + "/keras3/tokens.keras").c_str()));
  const int sizes[3] = {3, 40, 300};
  const int steps = std::max(20, stress_steps() / 200);
  std::vector<std::vector<float>> got(kThreads);
  std::vector<std::string> errors(kThreads);
  on_threads(kThreads, [&](int k) {
    got[static_cast<size_t>(k)] = stream_many(m, k % 3, sizes[k % 3], steps, errors[static_cast<size_t>(k)]);
  });
  for (int k = 0; k < 3; ++k) {
    std::string e;
    const std::vector<float> want = stream_many(m, k, sizes[k], steps, e);
    ASSERT_EQ(e, "");
    for (int j = k; j < kThreads; j += 3) {
      ASSERT_EQ(errors[static_cast<size_t>(j)], "") << "thread " << j;
      EXPECT_EQ(got[static_cast<size_t>(j)], want) << "thread " << j;
    }
  }
  recur_model_destroy(m);
}

// A model's layer configs are prepared on the first recur_model_layer call; when that first call
// comes from many threads at once, all see the same, complete strings.
TEST(CApiStress, LayerConfigsFirstReadFromEveryThreadAtOnce) {
  RECUR_SKIP_WITHOUT_FILES();
  recur_model* m = nullptr;
  ASSERT_RECUR_OK(recur_model_open(&m, (kModels + "/keras3/tokens.keras").c_str()));
  recur_model_info info;
  info.version = RECUR_MODEL_INFO_VERSION;
  ASSERT_RECUR_OK(recur_model_get_info(m, &info));
  ASSERT_GT(info.num_layers, 1);
  const int n = info.num_layers;
  std::vector<std::vector<const char*>> seen(kThreads, std::vector<const char*>(static_cast<size_t>(n), nullptr));
  std::atomic<int> failures{0};
  on_threads(kThreads, [&](int k) {
    for (int j = 0; j < n; ++j) {
      const int i = (j + k) % n;  // threads start on different layers
      if (recur_model_layer(m, i, nullptr, nullptr, &seen[static_cast<size_t>(k)][static_cast<size_t>(i)], nullptr, nullptr,
                            nullptr) != RECUR_OK)
        failures.fetch_add(1);
    }
  });
  ASSERT_EQ(failures.load(), 0);
  for (int i = 0; i < n; ++i) {
    const char* name = nullptr;
    const char* config = nullptr;
    ASSERT_RECUR_OK(recur_model_layer(m, i, &name, nullptr, &config, nullptr, nullptr, nullptr));
    ASSERT_NE(config, nullptr);
    // The layer's own entry of the model config: a JSON object that names the layer.
    EXPECT_EQ(config[0], '{') << config;
    EXPECT_NE(std::string(config).find(std::string("\"name\":\"") + name + "\""), std::string::npos) << config;
    for (int k = 0; k < kThreads; ++k) EXPECT_EQ(seen[static_cast<size_t>(k)][static_cast<size_t>(i)], config) << "thread " << k;
  }
  recur_model_destroy(m);
}

TEST(CApiStress, ModelsOpenedRunAndDestroyedConcurrently) {
  RECUR_SKIP_WITHOUT_FILES();
  const std::vector<char> keras = rt::file_bytes(kModels + "/keras3/tokens.keras");
  const std::vector<char> h5 = rt::file_bytes(kModels + "/keras3/tokens.h5");
  ASSERT_FALSE(keras.empty());
  ASSERT_FALSE(h5.empty());
  const int rounds = std::max(5, stress_steps() / 500);
  std::atomic<int> failures{0};
  std::vector<std::string> first_error(kThreads);
  on_threads(kThreads, [&](int k) {
    for (int r = 0; r < rounds; ++r) {
      recur_model* m = nullptr;
      const std::vector<char>& bytes = (k + r) % 2 ? keras : h5;
      recur_status st = (k + r) % 3 == 0 ? recur_model_open(&m, (kModels + ((k + r) % 2 ? "/keras3/tokens.keras" : "/keras3/tokens.h5")).c_str())
                                          : recur_model_open_memory(&m, bytes.data(), bytes.size(), "tokens");
      if (st == RECUR_OK) {
        const int32_t steps = 6;
        size_t in_len = 0, out_len = 0;
        st = recur_model_inputs_length(m, 1, &steps, 1, &in_len);
        if (st == RECUR_OK) st = recur_model_outputs_length(m, 1, &steps, 1, &out_len);
        std::vector<float> x(in_len, 3.0f), y(out_len);
        if (st == RECUR_OK)
          st = recur_model_run_inputs(m, 1, &steps, 1, x.data(), x.size(), nullptr, 0, y.data(), y.size());
        recur_model_destroy(m);
      }
      if (st != RECUR_OK && failures.fetch_add(1) == 0) first_error[static_cast<size_t>(k)] = recur_last_error();
    }
  });
  EXPECT_EQ(failures.load(), 0) << [&] {
    std::string all;
    for (const auto& e : first_error) all += e;
    return all;
  }();
}

TEST(CApiStress, ErrorsAndLimitsOnEveryThreadAtOnce) {
  const int rounds = std::max(100, stress_steps() / 10);
  std::atomic<int> wrong{0};
  std::atomic<bool> stop{false};
  // One thread keeps changing a limit that the others read and hit.
  std::thread changer([&] {
    for (uint64_t i = 0; !stop.load(); ++i) recur_set_limit(RECUR_LIMIT_BATCH, i % 2 ? 1000 : 0);
  });
  on_threads(kThreads, [&](int k) {
    rt::Layer layer;
    {
      recur_layer_options o = rt::options(RECUR_LAYER_GRU, 4, 3);
      recur_layer* l = nullptr;
      if (recur_layer_create(&l, &o) != RECUR_OK) {
        wrong.fetch_add(1);
        return;
      }
      layer.reset(l);
    }
    for (int r = 0; r < rounds; ++r) {
      // A distinct error per thread and round: the message must be this thread's own.
      const int32_t batch = -(k * 100000 + r + 1);
      recur_state* s = nullptr;
      if (recur_state_create(&s, layer.get(), batch) != RECUR_ERR_INVALID_ARGUMENT ||
          std::string(recur_last_error()).find(std::to_string(batch)) == std::string::npos)
        wrong.fetch_add(1);
      // Over the batch limit whichever value it has at the moment.
      if (recur_state_create(&s, layer.get(), (1 << 20) + 1) != RECUR_ERR_LIMIT) wrong.fetch_add(1);
      uint64_t v = 0;
      if (recur_get_limit(RECUR_LIMIT_BATCH, &v) != RECUR_OK || (v != 1000 && v != (1u << 20))) wrong.fetch_add(1);
    }
  });
  stop.store(true);
  changer.join();
  recur_set_limit(RECUR_LIMIT_BATCH, 0);
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
