// SPDX-License-Identifier: Apache-2.0
// Many model streams per tick: the time per stream-step of N streams (batch 1 each) stepped one
// timestep at a time, one call per stream (recur_model_state_step) against one call for all of
// them (recur_model_states_step_named), for N = 1, 16, 256, 4096 by default.
//
// Run: streams_bench [MODEL=bench/cpu/models/streams_gru64_lstm64.keras] [SECONDS=1] [N...]
// The model must stream and have one sequence input, (B, T, F) floats or (B, T) token ids (fed
// ids 1 to 5), and one output. Wall-clock and process
// CPU time are both printed: on a shared machine the CPU time is the steadier of the two. Before
// timing, both ways are stepped a few times on the same inputs and compared (within 1e-5).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "recur/recur.h"

namespace {

void check(recur_status s, const char* what) {
  if (s != RECUR_OK) throw std::runtime_error(std::string(what) + ": " + recur_last_error());
}

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Streams {
  recur_model* model;
  int n;
  int64_t features, out_len;
  bool ids;
  const char *in_name, *out_name;
  std::vector<recur_model_state*> states;
  std::vector<float> y;
  std::vector<std::vector<float>> variants;  // inputs, made before timing
  const float* x = nullptr;
  Streams(recur_model* m, int count, int64_t f, int64_t o, const char* in, const char* out, bool token_ids)
      : model(m), n(count), features(f), out_len(o), ids(token_ids), in_name(in), out_name(out) {
    states.assign(static_cast<size_t>(n), nullptr);
    for (auto& s : states) check(recur_model_state_create(&s, model, 1), "recur_model_state_create");
    y.assign(static_cast<size_t>(n * out_len), 0.0f);
    variants.assign(4, std::vector<float>(static_cast<size_t>(n * features)));
    for (size_t v = 0; v < variants.size(); ++v)
      for (size_t i = 0; i < variants[v].size(); ++i)
        variants[v][i] = ids ? static_cast<float>(1 + (i * 7 + v) % 5)
                             : static_cast<float>(std::sin(0.37 * double(i) + 1.3 * double(v)));
    x = variants[0].data();
  }
  ~Streams() {
    for (auto* s : states) recur_model_state_destroy(s);
  }
  Streams(const Streams&) = delete;
  Streams& operator=(const Streams&) = delete;

  void inputs(int round) { x = variants[static_cast<size_t>(round) % variants.size()].data(); }
  // One step of every stream, one call each.
  void one_by_one() {
    for (int i = 0; i < n; ++i)
      check(recur_model_state_step(states[static_cast<size_t>(i)], 1, x + i * features,
                                   static_cast<size_t>(features), nullptr, 0, y.data() + i * out_len,
                                   static_cast<size_t>(out_len)),
            "recur_model_state_step");
  }
  // One step of every stream, one call for all.
  void batched() {
    recur_tensor in;
    recur_tensor_init(&in, RECUR_TENSOR_VERSION);
    in.name = in_name;
    in.data = x;
    in.length = static_cast<size_t>(n * features);
    in.rank = ids ? 2 : 3;
    in.dims[0] = n;
    in.dims[1] = 1;
    in.dims[2] = features;
    recur_output out;
    recur_output_init(&out, RECUR_OUTPUT_VERSION);
    out.name = out_name;
    out.data = y.data();
    out.capacity = y.size();
    check(recur_model_states_step_named(states.data(), n, &in, 1, &out, 1, nullptr), "recur_model_states_step_named");
  }
};

struct Timing {
  double wall_us, cpu_us;  // per stream-step
};

template <typename F>
Timing measure(int n, double seconds, F&& round) {
  round();  // warm: buffers sized, caches filled
  long rounds = 0;
  const double w0 = wall_seconds(), c0 = cpu_seconds();
  double w = w0;
  while (rounds < 3 || w - w0 < seconds) {
    round();
    ++rounds;
    w = wall_seconds();
  }
  const double c = cpu_seconds();
  const double steps = static_cast<double>(rounds) * n;
  return {1e6 * (w - w0) / steps, 1e6 * (c - c0) / steps};
}

}  // namespace

int main(int argc, char** argv) {
  const std::string file = argc > 1 ? argv[1] : "bench/cpu/models/streams_gru64_lstm64.keras";
  const double seconds = argc > 2 ? std::atof(argv[2]) : 1.0;
  std::vector<int> counts;
  for (int i = 3; i < argc; ++i) counts.push_back(std::atoi(argv[i]));
  if (counts.empty()) counts = {1, 16, 256, 4096};
  if (!(seconds > 0) || std::any_of(counts.begin(), counts.end(), [](int c) { return c < 1; })) {
    std::fprintf(stderr, "usage: %s [MODEL] [SECONDS>0] [N>=1 ...]\n", argv[0]);
    return 2;
  }
  recur_model* model = nullptr;
  int rc = 0;
  try {
    check(recur_model_open(&model, file.c_str()), "recur_model_open");
    check(recur_model_set_num_threads(model, 1), "recur_model_set_num_threads");
    int32_t ni = 0, no = 0, rank = 0;
    check(recur_model_num_inputs(model, &ni), "recur_model_num_inputs");
    check(recur_model_num_outputs(model, &no), "recur_model_num_outputs");
    if (ni != 1 || no != 1) throw std::runtime_error("the model must have one input and one output");
    const char *in_name = nullptr, *out_name = nullptr;
    int64_t dims[RECUR_MAX_RANK];
    int32_t token_ids = 0;
    check(recur_model_input(model, 0, &in_name, &rank, dims, &token_ids), "recur_model_input");
    const bool ids = rank == 2 && token_ids;
    if (!ids && (rank != 3 || dims[2] < 1)) throw std::runtime_error("the input must be (B, T, F) or (B, T) token ids");
    const int64_t features = ids ? 1 : dims[2];
    check(recur_model_output(model, 0, &out_name, &rank, dims), "recur_model_output");
    size_t in_len = 0, out_len = 0;
    {
      recur_model_state* probe = nullptr;
      check(recur_model_state_create(&probe, model, 1), "recur_model_state_create");
      recur_model_state_lengths(probe, 1, &in_len, &out_len);
      recur_model_state_destroy(probe);
    }
    std::printf("recur %s, CPU kernels %s, model %s (input %s (1, 1%s) per stream, %zu outputs), 1 thread\n",
                recur_version_string(), recur_cpu_kernels(), file.c_str(), in_name,
                ids ? "" : (", " + std::to_string(features)).c_str(), out_len);
    // The same numbers both ways first.
    {
      Streams a(model, 5, features, static_cast<int64_t>(out_len), in_name, out_name, ids);
      Streams b(model, 5, features, static_cast<int64_t>(out_len), in_name, out_name, ids);
      double worst = 0;
      for (int r = 0; r < 4; ++r) {
        a.inputs(r);
        b.inputs(r);
        a.one_by_one();
        b.batched();
        for (size_t i = 0; i < a.y.size(); ++i) worst = std::max(worst, double(std::fabs(a.y[i] - b.y[i])));
      }
      std::printf("one by one vs batched, 5 streams x 4 steps: max abs difference %.3g\n", worst);
      if (!(worst <= 1e-5)) throw std::runtime_error("batched steps differ from steps one by one");
    }
    std::printf("\n| streams | one by one: us/stream-step (wall, CPU) | batched: us/stream-step (wall, CPU) | "
                "speedup (wall, CPU) |\n|---:|---:|---:|---:|\n");
    for (int n : counts) {
      Streams one(model, n, features, static_cast<int64_t>(out_len), in_name, out_name, ids);
      Streams all(model, n, features, static_cast<int64_t>(out_len), in_name, out_name, ids);
      int r1 = 0, r2 = 0;
      const Timing t1 = measure(n, seconds, [&] {
        one.inputs(r1++);
        one.one_by_one();
      });
      const Timing t2 = measure(n, seconds, [&] {
        all.inputs(r2++);
        all.batched();
      });
      std::printf("| %d | %.3f, %.3f | %.3f, %.3f | %.1fx, %.1fx |\n", n, t1.wall_us, t1.cpu_us, t2.wall_us, t2.cpu_us,
                  t1.wall_us / t2.wall_us, t1.cpu_us / t2.cpu_us);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    rc = 1;
  }
  recur_model_destroy(model);
  return rc;
}
