// SPDX-License-Identifier: Apache-2.0
// The read rate a streaming step is measured against: a step reads every weight of the layer once
// (two matrix-vector products) and does little else, so its time is bounded by how fast the cores
// read that many bytes from wherever they live (L2, L3 or memory). This reads a buffer of the same
// size again and again, split evenly across the threads (as a step's units are), each thread its
// own part, first touched by that thread.
//
//   read_peak SECONDS THREADS BYTES...   prints "read THREADS BYTES GB/S" lines (best round)
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common.hpp"

namespace {

// 64-byte vectors: one AVX-512 register, two AVX2 ones (built with -march=native).
typedef float V __attribute__((vector_size(64)));
constexpr std::size_t kLanes = sizeof(V) / sizeof(float);

// Best time of one pass over every thread's part, over rounds of several passes, after a warm-up pass, for at
// least `seconds`.
double best_round_s(std::size_t bytes, int threads, double seconds) {
  const std::size_t per = (bytes / sizeof(float) / threads + 8 * kLanes - 1) / (8 * kLanes) * (8 * kLanes);
  const int passes = static_cast<int>(std::max<std::size_t>(1, (std::size_t(8) << 20) / bytes));
  double best = 1e30;
  float sink = 0;
  bool more = true;  // shared: the master decides, after a barrier everyone reads it
  const double t_end = bench::now_s() + seconds;
#pragma omp parallel num_threads(threads) reduction(+ : sink)
  {
    V* part = static_cast<V*>(std::aligned_alloc(64, per * sizeof(float)));
    for (std::size_t i = 0; i < per / kLanes; ++i) {
      V v;
      for (std::size_t j = 0; j < kLanes; ++j) v[j] = 1e-9f * float(i + j);
      part[i] = v;
    }
    V s[8] = {};
    for (long round = 0;; ++round) {
      double t0 = 0;
#pragma omp barrier
#pragma omp master
      t0 = bench::now_s();
      // Eight independent sums, so that the loads and not the additions set the pace; a round of
      // several passes over a small part, so that the barriers and clock reads do not.
      for (int pass = 0; pass < passes; ++pass)
        for (std::size_t i = 0; i < per / kLanes; i += 8)
          for (int q = 0; q < 8; ++q) s[q] += part[i + q];
#pragma omp barrier
#pragma omp master
      {
        const double now = bench::now_s();
        if (round > 0) best = std::min(best, (now - t0) / passes);
        more = now < t_end || round < 3;
      }
#pragma omp barrier
      if (!more) break;
    }
    for (int q = 0; q < 8; ++q)
      for (std::size_t j = 0; j < kLanes; ++j) sink += s[q][j];
    std::free(part);
  }
  if (sink == 12345.0f) std::fprintf(stderr, "(never)\n");  // keeps the sums, and so the reads
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: read_peak SECONDS THREADS BYTES...\n");
    return 2;
  }
  const double seconds = std::atof(argv[1]);
  const int threads = std::atoi(argv[2]);
  if (!(seconds > 0) || threads < 1) {
    std::fprintf(stderr, "read_peak: SECONDS must be > 0 and THREADS >= 1\n");
    return 2;
  }
  for (int i = 3; i < argc; ++i) {
    const std::size_t bytes = std::strtoull(argv[i], nullptr, 10);
    if (bytes < 1024) {
      std::fprintf(stderr, "read_peak: BYTES must be at least 1024, got '%s'\n", argv[i]);
      return 2;
    }
    const double s = best_round_s(bytes, threads, seconds);
    std::printf("read %d %zu %.2f\n", threads, bytes, double(bytes) / s / 1e9);
    std::fflush(stdout);
  }
  return 0;
}
