// SPDX-License-Identifier: Apache-2.0
// The host execution policy: "device" memory is host memory, kernels are loops and the GEMM is
// Eigen's (the CPU backend's). The emulator plugin and the unit tests run the runner with it.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "call_profile.hpp"
#include "gpu_common.hpp"
#include "gpu_math.hpp"

namespace recur::gpu {

class HostExec {
 public:
  // `device` and `stream` only matter to the CUDA policy; host work is done when a call returns.
  HostExec(int32_t /*device*/, void* /*stream*/) {}

  static void* alloc(int32_t /*device*/, std::size_t bytes) {
    // Aligned operator new rather than std::aligned_alloc, which Windows' C runtime lacks.
    void* p = ::operator new(std::max<std::size_t>(bytes, 1), std::align_val_t(256), std::nothrow);
    if (!p) fail(RECUR_GPU_ERR_OUT_OF_MEMORY, "host allocation of " + std::to_string(bytes) + " bytes failed");
    return p;
  }
  static void release(void* p) { ::operator delete(p, std::align_val_t(256)); }
  // Host memory is all alike here: every array goes through the staging block.
  static bool is_pinned(const void*) { return false; }

  // One growing block per thread, like the CUDA policy's.
  void* scratch(std::size_t bytes) {
    thread_local std::vector<char> block;
    if (block.size() < bytes + 256) block.resize(bytes + 256);
    const auto base = reinterpret_cast<std::uintptr_t>(block.data());
    return block.data() + ((256 - base % 256) % 256);
  }

  void* host_staging(std::size_t bytes) {
    thread_local std::vector<char> block;
    if (block.size() < bytes) block.resize(bytes);
    return block.data();
  }

  // The staging block as kernels address it: here the same memory.
  static void* device_view(void* staging) { return staging; }

  void copy(void* dst, const void* src, std::size_t bytes, Copy kind) {
    if (kind != Copy::d2d) copied(kind).fetch_add(bytes, std::memory_order_relaxed);
    if (bytes && dst != src) std::memmove(dst, src, bytes);
  }

  // Bytes copied so far from host to "device" and back, for tests that check what crosses.
  static std::atomic<std::uint64_t>& copied(Copy kind) {
    static std::atomic<std::uint64_t> up{0}, down{0};
    return kind == Copy::h2d ? up : down;
  }

  void gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
            int64_t ldc) {
    using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    using In = Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>>;
    using Out = Eigen::Map<RowMatrix, 0, Eigen::OuterStride<>>;
    if (m == 0 || n == 0) return;
    Out cm(c, m, n, Eigen::OuterStride<>(ldc));
    if (k == 0) {
      cm.setZero();
      return;
    }
    if (use_ordered_gemm(m, n, k)) {
      // The device's OrderedGemm: each element over k in order, the product rounded first.
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          const int64_t col[1] = {j};
          float acc = 0.0f;
          ordered_dots1<1>(a + i * lda, k, b, ldb, col, &acc);
          c[i * ldc + j] = acc;
        }
      return;
    }
    cm.noalias() = In(a, m, k, Eigen::OuterStride<>(lda)) * In(b, k, n, Eigen::OuterStride<>(ldb));
  }

  template <class F>
  void for_each(int64_t n, const F& f, int /*threads*/ = 256) {
    for (int64_t i = 0; i < n; ++i) f(i);
  }

  template <class S>
  void fused_step(const S& f, int64_t B, int threads) {
    for_each(B * f.s.u, f, threads);
  }

  void sync() {}
  void* stream() const { return nullptr; }
  // No device stages here: a profile of the emulator has host stages only.
  void mark(int) {}
  void device_times(CallTimes&) const {}
  // No graphs here: the operations run as they are queued.
  template <class F>
  void replay(const std::vector<uint64_t>&, const F& enqueue) {
    enqueue();
  }
};

}  // namespace recur::gpu
