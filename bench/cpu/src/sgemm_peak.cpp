// SPDX-License-Identifier: Apache-2.0
// The SGEMM peak the recurrent layers are measured against: 1024^3 single-precision GEMM through
// oneDNN, OpenBLAS (when built with it) and Eigen, at each thread count asked for. Kept out of
// the contender processes so that no BLAS thread pool lives beside them.
//
//   sgemm_peak SECONDS THREADS...   prints "LIBRARY THREADS GFLOPS" lines (best of 3 runs)
#include <omp.h>

#include <Eigen/Core>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <dnnl.h>
#ifdef BENCH_HAVE_OPENBLAS
#include <cblas.h>
extern "C" void openblas_set_num_threads(int);
#endif

#include "common.hpp"

namespace {

constexpr int N = 1024;

// Best GFLOP/s over 3 runs of at least `seconds` / 3 each, after a warm-up call.
double measure(const std::function<void()> &gemm, double seconds) {
  gemm();
  const double flops = 2.0 * N * N * N;
  double best = 0;
  for (int r = 0; r < 3; ++r) {
    long iters = 0;
    const double t0 = bench::now_s();
    double dt = 0;
    do {
      gemm();
      ++iters;
      dt = bench::now_s() - t0;
    } while (dt < seconds / 3);
    best = std::max(best, flops * iters / dt / 1e9);
  }
  return best;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: sgemm_peak SECONDS THREADS...\n");
    return 2;
  }
  const double seconds = std::atof(argv[1]);
  std::vector<float> a(size_t(N) * N), b(size_t(N) * N), c(size_t(N) * N, 0.0f);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = float((i * 7919) % 1000) / 1000.0f - 0.5f;
    b[i] = float((i * 104729) % 1000) / 1000.0f - 0.5f;
  }
  Eigen::Map<const Eigen::MatrixXf> ea(a.data(), N, N), eb(b.data(), N, N);
  Eigen::Map<Eigen::MatrixXf> ec(c.data(), N, N);

  for (int i = 2; i < argc; ++i) {
    const int threads = std::atoi(argv[i]);
    omp_set_num_threads(threads);  // oneDNN's OpenMP pool
    std::printf("onednn %d %.2f\n", threads, measure([&] {
                  dnnl_sgemm('N', 'N', N, N, N, 1.0f, a.data(), N, b.data(), N, 0.0f, c.data(), N);
                }, seconds));
#ifdef BENCH_HAVE_OPENBLAS
    openblas_set_num_threads(threads);
    std::printf("openblas %d %.2f\n", threads, measure([&] {
                  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1.0f, a.data(), N, b.data(), N,
                              0.0f, c.data(), N);
                }, seconds));
    openblas_set_num_threads(1);  // let its threads sleep while the others run
#endif
    Eigen::setNbThreads(threads);
    std::printf("eigen %d %.2f\n", threads, measure([&] { ec.noalias() = ea * eb; }, seconds));
    std::fflush(stdout);
  }
  return 0;
}
