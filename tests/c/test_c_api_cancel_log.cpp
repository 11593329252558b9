// SPDX-License-Identifier: Apache-2.0
// Cancelling named runs and steps from another thread (recur_run_options), and the log callback
// (recur_set_log_callback): what arrives, levels, turning it off, and many threads at once.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "c_api_test_util.hpp"

namespace {

const std::string kKeras = RECUR_TEST_KERAS_DIR;

using Model = rt::Model;
using Options = rt::RunOptions;
using Stream = rt::Stream;

std::string graph_path(const std::string& name) { return kKeras + "/graphs/keras3/" + name + ".keras"; }

Model open(const std::string& name) {
  recur_model* m = nullptr;
  EXPECT_RECUR_OK(recur_model_open(&m, graph_path(name).c_str()));
  return Model(m);
}

Options make_options() {
  recur_run_options* o = nullptr;
  EXPECT_RECUR_OK(recur_run_options_create(&o));
  return Options(o);
}

recur_tensor tensor(const char* name, const float* data, size_t length, std::vector<int64_t> dims) {
  return rt::tensor(name, RECUR_DTYPE_FLOAT32, data, length, std::move(dims));
}

recur_output output(const char* name, std::vector<float>& buf) {
  recur_output o;
  EXPECT_RECUR_OK(recur_output_init(&o, RECUR_OUTPUT_VERSION));
  o.name = name;
  o.data = buf.data();
  o.capacity = buf.size();
  return o;
}

// Runs stateful_sequential_gru (batch 3) for T steps of `x` (T*9 floats) into y.
recur_status run_gru(const recur_model* m, const std::vector<float>& x, int64_t T, std::vector<float>& y,
                     const recur_run_options* options) {
  const recur_tensor in = tensor("input_layer", x.data(), static_cast<size_t>(3 * T * 3), {3, T, 3});
  y.assign(static_cast<size_t>(3 * T * 2), 0.0f);
  recur_output out = output("dense", y);
  return recur_model_run_named(m, &in, 1, &out, 1, options);
}

std::vector<float> states_of(const recur_model* m) {
  const char* name = nullptr;
  EXPECT_RECUR_OK(recur_model_stateful_layer(m, 0, &name, nullptr, nullptr, nullptr));
  size_t n = 0;
  EXPECT_RECUR_OK(recur_model_states_length(m, name, &n));
  std::vector<float> s(n);
  EXPECT_RECUR_OK(recur_model_get_states(m, name, s.data(), s.size()));
  return s;
}

std::vector<float> inputs(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 0.1f * static_cast<float>(static_cast<int>(i % 13) - 6);
  return v;
}

TEST(CApiRunOptions, LifecycleAndErrors) {
  uint64_t live = 0, now = 0;
  ASSERT_RECUR_OK(recur_live_run_options(&live));
  Options o = make_options();
  ASSERT_RECUR_OK(recur_live_run_options(&now));
  EXPECT_EQ(now, live + 1);
  EXPECT_EQ(recur_live_run_options(nullptr), RECUR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(recur_last_error()).find("recur_live_run_options: count is NULL"), std::string::npos);
  int32_t c = -1;
  EXPECT_RECUR_OK(recur_run_options_is_cancelled(o.get(), &c));
  EXPECT_EQ(c, 0);
  EXPECT_RECUR_OK(recur_run_options_cancel(o.get()));
  EXPECT_RECUR_OK(recur_run_options_is_cancelled(o.get(), &c));
  EXPECT_EQ(c, 1);
  EXPECT_RECUR_OK(recur_run_options_reset(o.get()));
  EXPECT_RECUR_OK(recur_run_options_is_cancelled(o.get(), &c));
  EXPECT_EQ(c, 0);
  EXPECT_EQ(recur_run_options_create(nullptr), RECUR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(recur_last_error()).find("out is NULL"), std::string::npos) << recur_last_error();
  EXPECT_EQ(recur_run_options_cancel(nullptr), RECUR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(recur_last_error()).find("recur_run_options_cancel: options is NULL"), std::string::npos);
  EXPECT_EQ(recur_run_options_reset(nullptr), RECUR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(recur_last_error()).find("recur_run_options_reset: options is NULL"), std::string::npos);
  EXPECT_EQ(recur_run_options_is_cancelled(o.get(), nullptr), RECUR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(recur_last_error()).find("cancelled is NULL"), std::string::npos);
  recur_run_options* gone = nullptr;
  ASSERT_EQ(recur_run_options_create(&gone), RECUR_OK);
  recur_run_options_destroy(gone);
  recur_run_options_destroy(nullptr);
  ASSERT_RECUR_OK(recur_live_run_options(&now));
  EXPECT_EQ(now, live + 1) << "destroy frees the handle";
  EXPECT_EQ(recur_run_options_cancel(gone), RECUR_ERR_STATE);
  EXPECT_NE(std::string(recur_last_error()).find("not a live handle"), std::string::npos);
  RECUR_SKIP_WITHOUT_FILES();
  Model m = open("multi_io");
  std::vector<float> x(14 * 4), y;
  const recur_tensor in[2] = {tensor("seq", x.data(), 56, {2, 7, 4}), tensor("static", x.data(), 10, {2, 5})};
  EXPECT_EQ(recur_model_run_named(m.get(), in, 2, nullptr, 0, gone), RECUR_ERR_STATE);
  EXPECT_NE(std::string(recur_last_error()).find("recur_model_run_named: options is not a live handle"), std::string::npos);
}

// Options cancelled before the call stop it at once; the model's states stay; reset reuses them.
TEST(CApiRunOptions, CancelledBeforeTheCall) {
  RECUR_SKIP_WITHOUT_FILES();
  Model m = open("stateful_sequential_gru");
  Model twin = open("stateful_sequential_gru");
  const std::vector<float> x = inputs(3 * 5 * 3);
  std::vector<float> y, y_twin;
  ASSERT_EQ(run_gru(m.get(), x, 5, y, nullptr), RECUR_OK) << recur_last_error();
  ASSERT_EQ(run_gru(twin.get(), x, 5, y_twin, nullptr), RECUR_OK) << recur_last_error();
  const std::vector<float> before = states_of(m.get());
  Options o = make_options();
  ASSERT_RECUR_OK(recur_run_options_cancel(o.get()));
  std::vector<float> out;
  EXPECT_EQ(run_gru(m.get(), x, 5, out, o.get()), RECUR_ERR_CANCELLED);
  EXPECT_NE(std::string(recur_last_error()).find("cancelled"), std::string::npos) << recur_last_error();
  EXPECT_EQ(states_of(m.get()), before);
  ASSERT_RECUR_OK(recur_run_options_reset(o.get()));
  ASSERT_EQ(run_gru(m.get(), x, 5, y, o.get()), RECUR_OK) << recur_last_error();
  ASSERT_EQ(run_gru(twin.get(), x, 5, y_twin, nullptr), RECUR_OK) << recur_last_error();
  EXPECT_EQ(y, y_twin) << "the cancelled call changed nothing the next call sees";
}

// A cancelled stream step leaves the stream as it was: the next steps equal an uncancelled stream.
TEST(CApiRunOptions, CancelledStreamStepLeavesTheStream) {
  RECUR_SKIP_WITHOUT_FILES();
  Model m = open("multi_io");
  recur_model_state *a = nullptr, *b = nullptr;
  ASSERT_EQ(recur_model_state_create(&a, m.get(), 2), RECUR_OK) << recur_last_error();
  ASSERT_EQ(recur_model_state_create(&b, m.get(), 2), RECUR_OK) << recur_last_error();
  Stream sa(a), sb(b);
  const std::vector<float> seq = inputs(2 * 2 * 4), stat = inputs(10);
  const recur_tensor in[2] = {tensor("seq", seq.data(), seq.size(), {2, 2, 4}), tensor("static", stat.data(), 10, {2, 5})};
  std::vector<float> ya(6), yb(6);
  recur_output oa = output("probs", ya), ob = output("probs", yb);
  ASSERT_EQ(recur_model_state_step_named(a, in, 2, &oa, 1, nullptr), RECUR_OK) << recur_last_error();
  ASSERT_EQ(recur_model_state_step_named(b, in, 2, &ob, 1, nullptr), RECUR_OK) << recur_last_error();
  Options o = make_options();
  ASSERT_RECUR_OK(recur_run_options_cancel(o.get()));
  EXPECT_EQ(recur_model_state_step_named(a, in, 2, &oa, 1, o.get()), RECUR_ERR_CANCELLED);
  ASSERT_RECUR_OK(recur_run_options_reset(o.get()));
  for (int k = 0; k < 2; ++k) {
    ASSERT_EQ(recur_model_state_step_named(a, in, 2, &oa, 1, o.get()), RECUR_OK) << recur_last_error();
    ASSERT_EQ(recur_model_state_step_named(b, in, 2, &ob, 1, nullptr), RECUR_OK) << recur_last_error();
    EXPECT_EQ(ya, yb) << "step " << k;
  }
}

// A long run cancelled from a second thread returns CANCELLED soon after, with the states as they
// were; the same options, reset, run again. (Under TSan in CI, with the thread suites.)
TEST(CApiThreads, CancelLongNamedRunFromAnotherThread) {
  RECUR_SKIP_WITHOUT_FILES();
  Model m = open("stateful_sequential_gru");
  const std::vector<float> warm = inputs(3 * 4 * 3);
  std::vector<float> y;
  ASSERT_EQ(run_gru(m.get(), warm, 4, y, nullptr), RECUR_OK) << recur_last_error();
  const std::vector<float> before = states_of(m.get());
  const int64_t T = 1000000;  // about a second of work: far longer than the wait before the cancel
  const std::vector<float> x = inputs(static_cast<size_t>(3 * T * 3));
  Options o = make_options();
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    std::atomic<bool> started{false};
    std::thread canceller([&] {
      while (!started.load()) std::this_thread::yield();
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      EXPECT_RECUR_OK(recur_run_options_cancel(o.get()));
    });
    started = true;
    const recur_status st = run_gru(m.get(), x, T, y, o.get());
    canceller.join();
    ASSERT_EQ(st, RECUR_ERR_CANCELLED) << recur_last_error();
    // How soon it stops depends on the machine, so no time is asserted here; that the loop stops
    // between timesteps is shown exactly in the core's tests (Cancel.*: the last step's output is
    // never written).
    EXPECT_EQ(states_of(m.get()), before) << "a cancelled run leaves the states as they were";
    ASSERT_RECUR_OK(recur_run_options_reset(o.get()));
  }
  ASSERT_EQ(run_gru(m.get(), warm, 4, y, o.get()), RECUR_OK) << recur_last_error();
}

// Many threads run with their own options while one is cancelled: only its run stops.
TEST(CApiThreads, CancellingOneOptionsStopsOnlyItsRuns) {
  RECUR_SKIP_WITHOUT_FILES();
  Model m = open("multi_io");  // stateless: runs go concurrently
  const std::vector<float> seq = inputs(2 * 7 * 4), stat = inputs(10);
  const recur_tensor in[2] = {tensor("seq", seq.data(), seq.size(), {2, 7, 4}), tensor("static", stat.data(), 10, {2, 5})};
  Options keep = make_options(), stop = make_options();
  ASSERT_RECUR_OK(recur_run_options_cancel(stop.get()));
  std::atomic<int> ok{0}, cancelled{0}, other{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::vector<float> y(6);
      recur_output out = output("probs", y);
      for (int k = 0; k < 20; ++k) {
        const recur_status s = recur_model_run_named(m.get(), in, 2, &out, 1, t % 2 ? stop.get() : keep.get());
        (s == RECUR_OK ? ok : s == RECUR_ERR_CANCELLED ? cancelled : other)++;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 40);
  EXPECT_EQ(cancelled.load(), 40);
  EXPECT_EQ(other.load(), 0);
}

// ---- the log callback ----

struct Collector {
  std::mutex mutex;
  std::vector<std::pair<int32_t, std::string>> messages;
  static void callback(void* user_data, int32_t level, const char* message) {
    auto* c = static_cast<Collector*>(user_data);
    std::lock_guard<std::mutex> lock(c->mutex);
    c->messages.emplace_back(level, message);
  }
  size_t count(const std::string& needle, int32_t min_level = RECUR_LOG_DEBUG) {
    std::lock_guard<std::mutex> lock(mutex);
    size_t n = 0;
    for (const auto& [level, text] : messages) n += level >= min_level && text.find(needle) != std::string::npos;
    return n;
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mutex);
    return messages.size();
  }
};

// Turns logging off at the end of a test, whatever happens in it.
struct LogOff {
  ~LogOff() { recur_set_log_callback(nullptr, nullptr, 0); }
};

TEST(CApiLog, MessagesArriveAndStopWhenTurnedOff) {
  LogOff off;
  Collector c;
  ASSERT_RECUR_OK(recur_set_log_callback(&Collector::callback, &c, RECUR_LOG_DEBUG));
  EXPECT_EQ(c.count(std::string("CPU kernels: ") + recur_cpu_kernels()), 1u) << "the kernel set, when installed";
  uint64_t v = 0;
  ASSERT_RECUR_OK(recur_get_limit(RECUR_LIMIT_TENSOR_BYTES, &v));
  ASSERT_RECUR_OK(recur_set_limit(RECUR_LIMIT_TENSOR_BYTES, v * 2));
  ASSERT_RECUR_OK(recur_set_limit(RECUR_LIMIT_TENSOR_BYTES, 0));
  EXPECT_EQ(c.count("limit 'tensor_bytes' set to " + std::to_string(v * 2), RECUR_LOG_INFO), 1u);
  EXPECT_EQ(c.count("(its default)"), 1u);
  recur_layer_options opts;
  ASSERT_RECUR_OK(recur_layer_options_init(&opts, RECUR_LAYER_OPTIONS_VERSION));
  opts.type = RECUR_LAYER_GRU;
  opts.units = 4;
  opts.input_size = 3;
  opts.name = "logged_gru";
  rt::Layer layer = rt::make(opts);
  ASSERT_RECUR_OK(recur_layer_set_device(layer.get(), "cpu"));
  EXPECT_EQ(c.count("layer 'logged_gru' (GRU): device cpu -> cpu, route cpu: the CPU backend was asked for"), 1u);
  int32_t gpus = 0;
  ASSERT_RECUR_OK(recur_device_count(&gpus));
  ASSERT_RECUR_OK(recur_layer_set_device(layer.get(), "auto"));
  if (gpus == 0) {
    EXPECT_EQ(c.count("layer 'logged_gru' (GRU): device auto -> cpu", RECUR_LOG_WARNING), 1u) << "a fallback warns";
  } else {
    EXPECT_EQ(c.count("layer 'logged_gru' (GRU): device auto -> cuda:0", RECUR_LOG_INFO), 1u);
  }
  if (RECUR_TEST_WITH_FILES) {
    Model m = open("multi_io");
    EXPECT_EQ(c.count("opened model '" + graph_path("multi_io") + "'", RECUR_LOG_INFO), 1u);
    EXPECT_EQ(c.count("inputs: 'seq' (-1, 7, 4) float32, 'static' (-1, 5) float32; outputs: 'probs'"), 1u);
    ASSERT_RECUR_OK(recur_model_set_device(m.get(), "cpu"));
    EXPECT_EQ(c.count("model '" + graph_path("multi_io") + "': device cpu -> cpu"), 1u);
  }
  ASSERT_RECUR_OK(recur_set_log_callback(nullptr, nullptr, 0));
  const size_t n = c.size();
  ASSERT_RECUR_OK(recur_set_limit(RECUR_LIMIT_TENSOR_BYTES, 0));
  ASSERT_RECUR_OK(recur_layer_set_device(layer.get(), "cpu"));
  if (RECUR_TEST_WITH_FILES) Model again = open("multi_io");
  EXPECT_EQ(c.size(), n) << "no message after the callback is turned off";
}

TEST(CApiLog, MinLevelFiltersAndBadLevelsAreRefused) {
  LogOff off;
  Collector c;
  ASSERT_RECUR_OK(recur_set_log_callback(&Collector::callback, &c, RECUR_LOG_WARNING));
  ASSERT_RECUR_OK(recur_set_limit(RECUR_LIMIT_TENSOR_BYTES, 0));  // info: filtered
  EXPECT_EQ(c.size(), 0u);
  EXPECT_EQ(recur_set_log_callback(&Collector::callback, &c, 4), RECUR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(recur_last_error()).find("min_level must be a recur_log_level"), std::string::npos);
  EXPECT_NE(std::string(recur_last_error()).find("got 4"), std::string::npos);
  EXPECT_EQ(recur_set_log_callback(&Collector::callback, &c, -1), RECUR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(recur_last_error()).find("got -1"), std::string::npos);
  // The refused calls left the callback as it was: warnings still arrive, infos do not.
  ASSERT_RECUR_OK(recur_set_limit(RECUR_LIMIT_TENSOR_BYTES, 0));
  EXPECT_EQ(c.size(), 0u);
}

// Threads log while another swaps the callback: every message reaches a live callback.
TEST(CApiThreads, LogCallbackSwappedWhileThreadsLog) {
  LogOff off;
  Collector a, b;
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&] {
      while (!done.load()) recur_set_limit(RECUR_LIMIT_UNITS, 0);
    });
  // Swap at least 200 times, and until both callbacks have heard the threads (bounded).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int k = 0; k < 200 || a.count("limit 'units'") == 0 || b.count("limit 'units'") == 0; ++k) {
    if (std::chrono::steady_clock::now() > deadline) break;
    EXPECT_RECUR_OK(recur_set_log_callback(&Collector::callback, k % 2 ? &a : &b, RECUR_LOG_INFO));
    if (k % 50 == 0) {
      EXPECT_RECUR_OK(recur_set_log_callback(nullptr, nullptr, 0));
    }
    std::this_thread::yield();
  }
  done = true;
  for (auto& th : threads) th.join();
  ASSERT_RECUR_OK(recur_set_log_callback(nullptr, nullptr, 0));
  EXPECT_GT(a.count("limit 'units'"), 0u);
  EXPECT_GT(b.count("limit 'units'"), 0u);
}

}  // namespace
