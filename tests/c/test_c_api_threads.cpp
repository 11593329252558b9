// SPDX-License-Identifier: Apache-2.0
// Thread safety through the C ABI: one read-only layer shared by many threads, each with its own
// state (the "500 NPCs" use), and concurrent non-stateful inference calls. The math is
// deterministic, so every thread's result must equal a single-threaded run bit for bit.
#include <atomic>
#include <thread>

#include "c_api_test_util.hpp"

namespace {

using rt::options;

constexpr int kThreads = 8;
constexpr int kSteps = 200;
constexpr int32_t kUnits = 64, kInput = 32, kBatch = 4;

// Input of step `t` for the streams of thread `k`: (kBatch, kInput).
std::vector<float> step_input(int k, int t) {
  return rt::data(static_cast<size_t>(kBatch * kInput), 0.11f * static_cast<float>(k) + 0.013f * static_cast<float>(t),
                  0.9f);
}

struct StreamResult {
  std::vector<float> outputs;  // every step's output, concatenated
  std::vector<float> final_state;
  recur_status status = RECUR_OK;
  std::string error;
};

// Steps a fresh state of `layer` through kSteps single-step calls with thread k's inputs.
StreamResult run_stream(const recur_layer* layer, int k) {
  StreamResult r;
  recur_state* s = nullptr;
  r.status = recur_state_create(&s, layer, kBatch);
  if (r.status != RECUR_OK) {
    r.error = recur_last_error();
    return r;
  }
  std::vector<float> out(static_cast<size_t>(kBatch * kUnits));
  // A mask with a few holes, different per thread.
  std::vector<uint8_t> mask(static_cast<size_t>(kBatch));
  for (int t = 0; t < kSteps; ++t) {
    const std::vector<float> x = step_input(k, t);
    for (int b = 0; b < kBatch; ++b) mask[static_cast<size_t>(b)] = ((t + b + k) % 7) != 0;
    r.status = recur_layer_forward_state(layer, s, x.data(), x.size(), 1, mask.data(), mask.size(), out.data(),
                                         out.size());
    if (r.status != RECUR_OK) {
      r.error = recur_last_error();
      break;
    }
    r.outputs.insert(r.outputs.end(), out.begin(), out.end());
  }
  if (r.status == RECUR_OK) {
    r.final_state.resize(static_cast<size_t>(kBatch * kUnits));
    r.status = recur_state_get(s, r.final_state.data(), r.final_state.size());
    if (r.status != RECUR_OK) r.error = recur_last_error();
  }
  recur_state_destroy(s);
  return r;
}

}  // namespace

TEST(CApiThreads, SharedLayerPerThreadStatesMatchSingleThreaded) {
  recur_layer_options o = options(RECUR_LAYER_GRU, kUnits, kInput);
  rt::Layer layer = rt::make(o);
  ASSERT_NE(layer, nullptr);

  std::vector<StreamResult> reference;
  for (int k = 0; k < kThreads; ++k) {
    reference.push_back(run_stream(layer.get(), k));
    ASSERT_EQ(reference.back().status, RECUR_OK) << reference.back().error;
  }

  std::vector<StreamResult> results(kThreads);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < kThreads; ++k)
    threads.emplace_back([&, k] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();  // start together
      results[static_cast<size_t>(k)] = run_stream(layer.get(), k);
    });
  for (auto& t : threads) t.join();

  for (int k = 0; k < kThreads; ++k) {
    SCOPED_TRACE(k);
    const StreamResult& r = results[static_cast<size_t>(k)];
    ASSERT_EQ(r.status, RECUR_OK) << r.error;
    ASSERT_EQ(r.outputs.size(), static_cast<size_t>(kSteps * kBatch * kUnits));
    EXPECT_TRUE(r.outputs == reference[static_cast<size_t>(k)].outputs) << "outputs differ from the single-threaded run";
    EXPECT_TRUE(r.final_state == reference[static_cast<size_t>(k)].final_state);
    // Where the last step was valid, the last output is the final h.
    for (int b = 0; b < kBatch; ++b) {
      if ((kSteps - 1 + b + k) % 7 == 0) continue;
      const auto last = r.outputs.end() - (kBatch - b) * kUnits;
      EXPECT_TRUE(std::vector<float>(last, last + kUnits) ==
                  std::vector<float>(r.final_state.begin() + b * kUnits, r.final_state.begin() + (b + 1) * kUnits));
    }
  }
  // Different inputs give different streams (the test would be vacuous otherwise).
  EXPECT_NE(results[0].final_state, results[1].final_state);
}

TEST(CApiThreads, ConcurrentStatelessForwardMatchesSequential) {
  for (int32_t type : {RECUR_LAYER_GRU, RECUR_LAYER_LSTM}) {
    SCOPED_TRACE(type);
    const int32_t B = 3, T = 12, F = 16, U = 24;
    recur_layer_options o = options(type, U, F);
    o.return_sequences = 1;
    rt::Layer layer = rt::make(o);
    const int32_t ns = type == RECUR_LAYER_GRU ? 1 : 2;
    constexpr int kWorkers = 6, kCalls = 15;

    auto input = [&](int w, int c) {
      return rt::data(static_cast<size_t>(B * T * F), 0.5f * static_cast<float>(w) + 0.07f * static_cast<float>(c));
    };
    auto call = [&](int w, int c, std::vector<float>& out, std::vector<float>& fin) {
      const std::vector<float> x = input(w, c);
      std::vector<uint8_t> mask(static_cast<size_t>(B * T), 1);
      mask[static_cast<size_t>((w + c) % (B * T))] = 0;
      out.assign(static_cast<size_t>(B * T * U), 0.0f);
      fin.assign(static_cast<size_t>(ns * B * U), 0.0f);
      return recur_layer_forward(layer.get(), x.data(), x.size(), B, T, mask.data(), mask.size(), nullptr, 0, 0, 0,
                                 out.data(), out.size(), fin.data(), fin.size());
    };

    std::vector<std::vector<float>> ref_out(kWorkers * kCalls), ref_fin(kWorkers * kCalls);
    for (int w = 0; w < kWorkers; ++w)
      for (int c = 0; c < kCalls; ++c)
        ASSERT_EQ(call(w, c, ref_out[static_cast<size_t>(w * kCalls + c)], ref_fin[static_cast<size_t>(w * kCalls + c)]),
                  RECUR_OK)
            << recur_last_error();

    std::vector<std::vector<float>> out(kWorkers * kCalls), fin(kWorkers * kCalls);
    std::vector<recur_status> status(kWorkers * kCalls, RECUR_ERR_INTERNAL);
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int w = 0; w < kWorkers; ++w)
      threads.emplace_back([&, w] {
        ready.fetch_add(1);
        while (ready.load() < kWorkers) std::this_thread::yield();
        for (int c = 0; c < kCalls; ++c) {
          const size_t i = static_cast<size_t>(w * kCalls + c);
          status[i] = call(w, c, out[i], fin[i]);
        }
      });
    for (auto& t : threads) t.join();

    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_EQ(status[i], RECUR_OK) << i;
      EXPECT_TRUE(out[i] == ref_out[i]) << "call " << i << ": output differs from the sequential run";
      EXPECT_TRUE(fin[i] == ref_fin[i]) << "call " << i << ": final state differs from the sequential run";
    }
  }
}

TEST(CApiThreads, ErrorsOnManyThreadsStayOnTheirThread) {
  // Each thread fails with its own message and must read back exactly that message.
  rt::Layer layer = rt::make(options(RECUR_LAYER_GRU, 4, 3));
  constexpr int kWorkers = 8;
  std::vector<int> mismatches(kWorkers, 0);
  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w)
    threads.emplace_back([&, w] {
      for (int i = 0; i < 200; ++i) {
        // Thread w asks for weight index 10 + w: the message names that index.
        int64_t dims[2];
        int32_t nd;
        const recur_status s = recur_layer_weight_shape(layer.get(), 10 + w, dims, &nd);
        const std::string msg = recur_last_error();
        if (s != RECUR_ERR_INVALID_ARGUMENT || msg.find("weight " + std::to_string(10 + w) + " ") == std::string::npos)
          ++mismatches[static_cast<size_t>(w)];
      }
    });
  for (auto& t : threads) t.join();
  for (int w = 0; w < kWorkers; ++w) EXPECT_EQ(mismatches[static_cast<size_t>(w)], 0) << "thread " << w;
}

TEST(CApiThreads, CreateAndDestroyFromManyThreads) {
  // The handle registry is shared; creating, using and destroying handles from many threads at
  // once must neither crash nor leak nor confuse handles.
  constexpr int kWorkers = 8;
  std::vector<int> failures(kWorkers, 0);
  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w)
    threads.emplace_back([&, w] {
      for (int i = 0; i < 25; ++i) {
        recur_layer_options o;
        recur_layer_options_init(&o, RECUR_LAYER_OPTIONS_VERSION);
        o.type = (i + w) % 2 ? RECUR_LAYER_GRU : RECUR_LAYER_LSTM;
        o.units = 3;
        o.input_size = 2;
        o.seed = w;
        recur_layer* l = nullptr;
        if (recur_layer_create(&l, &o) != RECUR_OK) {
          ++failures[static_cast<size_t>(w)];
          continue;
        }
        recur_state* s = nullptr;
        if (recur_state_create(&s, l, 2) != RECUR_OK) ++failures[static_cast<size_t>(w)];
        float x[2 * 2 * 2] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f}, out[6];
        if (recur_layer_forward_state(l, s, x, 8, 2, nullptr, 0, out, 6) != RECUR_OK) ++failures[static_cast<size_t>(w)];
        recur_state_destroy(s);
        recur_layer_destroy(l);
      }
    });
  for (auto& t : threads) t.join();
  for (int w = 0; w < kWorkers; ++w) EXPECT_EQ(failures[static_cast<size_t>(w)], 0) << "thread " << w;
}
