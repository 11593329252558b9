// SPDX-License-Identifier: Apache-2.0
// A fixed-timestep game loop: one model shared by every NPC, one stream state per NPC, the NPCs
// stepped each tick by a small pool of worker threads.
//
// The model is the bundled sentiment model (Embedding -> GRU -> LSTM -> Dense); each NPC "hears"
// one token per tick and its mood is the model's output so far. The C ABI's thread rules make
// this safe without locks around recur: a model is only read while it runs, so any number of
// threads may step it at once, each recur_model_state used by one thread at a time (recur.h,
// "Threads" and recur_model_state_create). Steady-state steps do not allocate.
//
// Two ways to step them: "each" steps every NPC's state with its own call
// (recur_model_state_step); "batched" gives each worker a slice of the NPCs and steps the slice's
// states in one call (recur_model_states_step_named: one matrix product per layer for the whole
// slice instead of one per NPC). "both" (the default) runs one after the other, each with its own
// NPC states.
//
// It prints the time the pool takes to step every NPC, per tick (mean, p99, max), against the
// tick's budget, and the mean time per NPC step. The timings are printed, never checked. What it
// does check: NPC 0's streamed mood after the last tick equals recur_model_run over its whole
// token history (within 1e-5), in each mode.
//
// Run: recur_example_game_loop examples/models [npcs=256] [threads=4] [ticks=300] [hz=60] [each|batched|both]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "recur/recur.h"

namespace {

void check(recur_status s, const char* what) {
  if (s != RECUR_OK) throw std::runtime_error(std::string(what) + ": " + recur_last_error());
}

// The token NPC `npc` hears at tick `tick`: deterministic, 1..19 (0 is the model's padding id).
float token(int npc, int tick) {
  unsigned x = static_cast<unsigned>(npc) * 2654435761u ^ static_cast<unsigned>(tick) * 40503u;
  x ^= x >> 13;
  x *= 0x5bd1e995u;
  x ^= x >> 15;
  return static_cast<float>(1 + x % 19);
}

struct Npc {
  recur_model_state* state = nullptr;
  float mood[2] = {0, 0};  // the model's two softmax outputs after the latest tick
};

// A worker's share of the NPCs in batched mode, with its buffers (reused every tick).
struct Slice {
  int first = 0, count = 0;
  std::vector<recur_model_state*> states;
  std::vector<float> tokens, moods;
};

// The model's input and output names, for the named many-state call.
struct Io {
  const char* input = nullptr;
  const char* output = nullptr;
};

// Workers wait for a tick, take NPCs off a shared counter, and report when all are stepped.
class Pool {
 public:
  // slices empty: each NPC stepped alone; else each slice's NPCs in one call.
  Pool(int threads, std::vector<Npc>& npcs, std::vector<Slice>& slices, Io io) : npcs_(npcs), slices_(slices), io_(io) {
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }
  // Steps every NPC once for `tick`; returns when all are done. Throws the first error.
  void step_all(int tick) {
    {
      // A worker still inside the previous tick (it found no NPC left) must leave before the
      // counter restarts, or it would step an NPC of this tick with the previous tick's token.
      std::unique_lock<std::mutex> lock(mu_);
      done_.wait(lock, [this] { return active_ == 0; });
      tick_ = tick;
      next_.store(0);
      pending_ = static_cast<int>(slices_.empty() ? npcs_.size() : slices_.size());
      ++generation_;
    }
    wake_.notify_all();
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return pending_ == 0; });
    if (!error_.empty()) throw std::runtime_error(error_);
  }

 private:
  void work() {
    unsigned long seen = 0;
    for (;;) {
      int tick;
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        tick = tick_;
        ++active_;
      }
      int finished = 0;
      std::string error;
      if (slices_.empty()) {
        for (int i; (i = next_.fetch_add(1)) < static_cast<int>(npcs_.size()); ++finished) {
          float input = token(i, tick);
          recur_status s = recur_model_state_step(npcs_[i].state, 1, &input, 1, nullptr, 0, npcs_[i].mood, 2);
          if (s != RECUR_OK && error.empty()) error = std::string("recur_model_state_step: ") + recur_last_error();
        }
      } else {
        for (int k; (k = next_.fetch_add(1)) < static_cast<int>(slices_.size()); ++finished) {
          recur_status s = step_slice(slices_[static_cast<size_t>(k)], tick);
          if (s != RECUR_OK && error.empty()) error = std::string("recur_model_states_step_named: ") + recur_last_error();
        }
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (!error.empty() && error_.empty()) error_ = error;
      pending_ -= finished;
      --active_;
      if (pending_ == 0 || active_ == 0) done_.notify_all();
    }
  }

  // One call for the slice: its NPCs' tokens as a (count, 1) batch, one row per NPC state.
  recur_status step_slice(Slice& sl, int tick) {
    for (int j = 0; j < sl.count; ++j) sl.tokens[static_cast<size_t>(j)] = token(sl.first + j, tick);
    recur_tensor in;
    recur_tensor_init(&in, RECUR_TENSOR_VERSION);
    in.name = io_.input;
    in.data = sl.tokens.data();
    in.length = sl.tokens.size();
    in.rank = 2;
    in.dims[0] = sl.count;
    in.dims[1] = 1;
    recur_output out;
    recur_output_init(&out, RECUR_OUTPUT_VERSION);
    out.name = io_.output;
    out.data = sl.moods.data();
    out.capacity = sl.moods.size();
    recur_status s = recur_model_states_step_named(sl.states.data(), sl.count, &in, 1, &out, 1, nullptr);
    if (s == RECUR_OK)
      for (int j = 0; j < sl.count; ++j) {
        npcs_[static_cast<size_t>(sl.first + j)].mood[0] = sl.moods[static_cast<size_t>(2 * j)];
        npcs_[static_cast<size_t>(sl.first + j)].mood[1] = sl.moods[static_cast<size_t>(2 * j + 1)];
      }
    return s;
  }

  std::vector<Npc>& npcs_;
  std::vector<Slice>& slices_;
  Io io_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  std::atomic<int> next_{0};
  int tick_ = 0, pending_ = 0, active_ = 0;
  unsigned long generation_ = 0;
  bool stop_ = false;
  std::string error_;
};

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

// Prints the window's tick times; returns their mean.
double report(const char* label, const std::vector<double>& us, double budget_us, int npcs) {
  double mean = 0, max = 0;
  for (double v : us) mean += v, max = std::max(max, v);
  mean /= static_cast<double>(us.size());
  std::printf("%s: %zu ticks, step time mean %.1f us, p99 %.1f us, max %.1f us (%.1f%% of the %.0f us tick), "
              "%.2f us per NPC step\n",
              label, us.size(), mean, percentile(us, 0.99), max, 100.0 * mean / budget_us, budget_us, mean / npcs);
  return mean;
}

// Runs the loop with fresh NPC states in one mode; checks NPC 0 against a whole-sequence run and
// returns the mean time per NPC step (us).
double run_loop(recur_model* model, bool batched, int npc_count, int threads, int ticks, int hz) {
  std::vector<Npc> npcs(static_cast<size_t>(npc_count));
  struct Cleanup {
    std::vector<Npc>& npcs;
    ~Cleanup() {
      for (auto& npc : npcs) recur_model_state_destroy(npc.state);
    }
  } cleanup{npcs};
  for (auto& npc : npcs) check(recur_model_state_create(&npc.state, model, 1), "recur_model_state_create");
  Io io;
  check(recur_model_input(model, 0, &io.input, nullptr, nullptr, nullptr), "recur_model_input");
  check(recur_model_output(model, 0, &io.output, nullptr, nullptr), "recur_model_output");
  std::vector<Slice> slices;
  if (batched) {
    const int n = std::min(threads, npc_count), per = (npc_count + n - 1) / n;
    for (int first = 0; first < npc_count; first += per) {
      Slice sl;
      sl.first = first;
      sl.count = std::min(per, npc_count - first);
      for (int j = 0; j < sl.count; ++j) sl.states.push_back(npcs[static_cast<size_t>(first + j)].state);
      sl.tokens.assign(static_cast<size_t>(sl.count), 0.0f);
      sl.moods.assign(static_cast<size_t>(2 * sl.count), 0.0f);
      slices.push_back(std::move(sl));
    }
  }
  const char* mode = batched ? "batched" : "each";
  std::printf("mode %s: %s\n", mode,
              batched ? "each worker steps its slice of the NPCs in one recur_model_states_step_named call"
                      : "each NPC stepped with its own recur_model_state_step call");
  Pool pool(threads, npcs, slices, io);
  const auto period = std::chrono::nanoseconds(1000000000 / hz);
  const double budget_us = 1e6 / hz;
  std::vector<double> all, window;
  auto next = std::chrono::steady_clock::now();
  for (int tick = 0; tick < ticks; ++tick) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.step_all(tick);
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    all.push_back(us);
    window.push_back(us);
    if (window.size() == static_cast<size_t>(hz) || tick + 1 == ticks) {
      char label[80];
      std::snprintf(label, sizeof label, "%s ticks %d-%d", mode, tick + 1 - static_cast<int>(window.size()), tick);
      report(label, window, budget_us, npc_count);
      window.clear();
    }
    // Game logic, rendering, ... would run here; then wait for the next tick (no catch-up burst
    // after an overrun: the schedule restarts from now).
    next += period;
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now;
    std::this_thread::sleep_until(next);
  }
  char label[32];
  std::snprintf(label, sizeof label, "%s all", mode);
  const double mean = report(label, all, budget_us, npc_count);
  std::printf("%s: NPC 0 mood after %d ticks: %.6f %.6f\n", mode, ticks, npcs[0].mood[0], npcs[0].mood[1]);

  // The streamed result must be the whole-sequence result: NPC 0's tokens through recur_model_run.
  std::vector<float> history(static_cast<size_t>(ticks));
  for (int t = 0; t < ticks; ++t) history[static_cast<size_t>(t)] = token(0, t);
  size_t n = 0;
  check(recur_model_output_length(model, 1, ticks, &n), "recur_model_output_length");
  std::vector<float> whole(n);
  check(recur_model_run(model, history.data(), history.size(), 1, ticks, nullptr, 0, whole.data(), whole.size()),
        "recur_model_run");
  const double diff = std::max(std::fabs(whole[0] - npcs[0].mood[0]), std::fabs(whole[1] - npcs[0].mood[1]));
  std::printf("%s: NPC 0 streamed vs one recur_model_run over its %d tokens: max abs difference %.3g\n", mode, ticks,
              diff);
  if (!(diff <= 1e-5)) throw std::runtime_error("streamed outputs differ from the whole-sequence run");
  return mean / npc_count;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "examples/models";
  const int npc_count = argc > 2 ? std::atoi(argv[2]) : 256;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 4;
  const int ticks = argc > 4 ? std::atoi(argv[4]) : 300;
  const int hz = argc > 5 ? std::atoi(argv[5]) : 60;
  const std::string mode = argc > 6 ? argv[6] : "both";
  if (npc_count < 1 || threads < 1 || ticks < 1 || hz < 1 || (mode != "each" && mode != "batched" && mode != "both")) {
    std::fprintf(stderr, "usage: %s MODELS_DIR [npcs>=1] [threads>=1] [ticks>=1] [hz>=1] [each|batched|both]\n", argv[0]);
    return 2;
  }
  recur_model* model = nullptr;
  int rc = 0;
  try {
    const std::string file = dir + "/sentiment_keras3.keras";
    check(recur_model_open(&model, file.c_str()), "recur_model_open");
    const char* why = nullptr;
    check(recur_model_streamable(model, &why), "recur_model_streamable");
    if (*why) throw std::runtime_error(std::string("the model does not stream: ") + why);
    std::printf("recur %s: %d NPCs, %d worker threads, %d ticks at %d Hz, model %s\n", recur_version_string(),
                npc_count, threads, ticks, hz, file.c_str());
    double each = 0, batched = 0;
    if (mode != "batched") each = run_loop(model, false, npc_count, threads, ticks, hz);
    if (mode != "each") batched = run_loop(model, true, npc_count, threads, ticks, hz);
    if (each > 0 && batched > 0)
      std::printf("per NPC step: each %.2f us, batched %.2f us (%.1fx)\n", each, batched, each / batched);
    std::printf("example finished\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    rc = 1;
  }
  recur_model_destroy(model);
  return rc;
}
