// SPDX-License-Identifier: Apache-2.0
// float32 vs bf16 vs int8 weights (recur_layer_set_precision) on one thread, through the C ABI:
// a whole-sequence recur_layer_forward for the batch shapes, one-timestep recur_layer_forward_state
// calls for the streaming shape. Prints wall time and the process's CPU time (getrusage) per call:
// on a machine shared with other work the CPU time is the steadier of the two.
//
//   precision_bench [reps [shape ...]]   (shapes: batch, large, stream256; default all five reps
//                                         of each; RECUR_CPU_KERNELS picks the kernel set)
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <vector>

#include "recur/recur.h"

namespace {

struct Shape {
  const char* name;
  int batch, timesteps, features, units;
  bool stream;
};

double cpu_seconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

void check(recur_status s) {
  if (s != RECUR_OK) {
    std::fprintf(stderr, "recur: %s\n", recur_last_error());
    std::exit(1);
  }
}

struct Timing {
  double wall, cpu;  // seconds per call, the best of the repetitions
};

Timing measure(recur_layer* layer, const Shape& s, long reps) {
  std::vector<float> x(static_cast<std::size_t>(s.batch) * s.timesteps * s.features);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = float((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
  std::vector<float> y(static_cast<std::size_t>(s.batch) * s.units * (s.stream ? 1 : 1));
  recur_state* state = nullptr;
  if (s.stream) check(recur_state_create(&state, layer, s.batch));
  // Streaming: one call steps one timestep; the timed unit is `steps` such calls.
  const int steps = s.stream ? 2000 : 1;
  auto once = [&] {
    if (s.stream) {
      for (int t = 0; t < steps; ++t)
        check(recur_layer_forward_state(layer, state, x.data(), static_cast<std::size_t>(s.batch) * s.features, 1,
                                        nullptr, 0, y.data(), y.size()));
    } else {
      check(recur_layer_forward(layer, x.data(), x.size(), s.batch, s.timesteps, nullptr, 0, nullptr, 0, 0, 0,
                                y.data(), y.size(), nullptr, 0));
    }
  };
  once();  // warm-up: packs, allocations
  Timing best{1e30, 1e30};
  for (long r = 0; r < reps; ++r) {
    const double c0 = cpu_seconds();
    const auto w0 = std::chrono::steady_clock::now();
    once();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    const double cpu = cpu_seconds() - c0;
    best.wall = std::min(best.wall, wall / steps);
    best.cpu = std::min(best.cpu, cpu / steps);
  }
  recur_state_destroy(state);
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const Shape shapes[] = {{"batch", 32, 100, 64, 256, false},
                          {"large", 64, 50, 512, 1024, false},
                          {"stream256", 1, 1, 256, 256, true}};
  char* end = nullptr;
  const long reps = argc > 1 ? std::strtol(argv[1], &end, 10) : 5;
  bool known = true;
  for (int i = 2; i < argc; ++i)
    known = known && std::any_of(std::begin(shapes), std::end(shapes),
                                 [&](const Shape& s) { return std::strcmp(s.name, argv[i]) == 0; });
  if (reps < 1 || reps > 1000 || (argc > 1 && *end != '\0') || !known) {
    std::fprintf(stderr, "usage: precision_bench [reps [shape ...]]: reps 1 to 1000 (default 5); shapes among "
                         "batch, large, stream256 (default all)\n");
    return 2;
  }
  auto wanted = [&](const Shape& s) {
    if (argc <= 2) return true;
    for (int i = 2; i < argc; ++i)
      if (std::strcmp(s.name, argv[i]) == 0) return true;
    return false;
  };
  // The large shape's orthogonal recurrent initializer is a QR past the default init-work limit.
  check(recur_set_limit(RECUR_LIMIT_INIT_WORK, uint64_t(1) << 36));
  std::printf("kernels: %s\n", recur_cpu_kernels());
  std::printf("%-10s %-5s %-8s %12s %12s %9s %9s\n", "shape", "layer", "precision", "wall ms", "cpu ms", "x wall",
              "x cpu");
  for (const Shape& s : shapes)
    if (wanted(s))
    for (int32_t type : {RECUR_LAYER_GRU, RECUR_LAYER_LSTM}) {
      recur_layer_options o;
      check(recur_layer_options_init(&o, RECUR_LAYER_OPTIONS_VERSION));
      o.type = type;
      o.units = s.units;
      o.input_size = s.features;
      o.seed = 1;
      recur_layer* layer = nullptr;
      check(recur_layer_create(&layer, &o));
      Timing base{};
      for (const char* p : {"float32", "bf16", "int8"}) {
        check(recur_layer_set_precision(layer, p));
        const Timing t = measure(layer, s, reps);
        if (std::strcmp(p, "float32") == 0) base = t;
        std::printf("%-10s %-5s %-8s %12.4f %12.4f %9.2f %9.2f\n", s.name, type == RECUR_LAYER_GRU ? "GRU" : "LSTM", p,
                    t.wall * 1e3, t.cpu * 1e3, base.wall / t.wall, base.cpu / t.cpu);
        std::fflush(stdout);
      }
      recur_layer_destroy(layer);
    }
  return 0;
}
