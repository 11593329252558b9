// SPDX-License-Identifier: Apache-2.0
// Pieces the runner, the execution policies and the plugin table share: the error type that
// carries an ABI code to the table boundary, copy directions, and the scratch carver.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "recur/gpu_plugin_abi.h"

namespace recur::gpu {

// Thrown inside the plugin; the table boundary turns it into `code` and the message.
class GpuError : public std::runtime_error {
 public:
  GpuError(int code, const std::string& message) : std::runtime_error(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

[[noreturn]] inline void fail(int code, const std::string& message) { throw GpuError(code, message); }
inline void check(bool ok, const std::string& message) {
  if (!ok) fail(RECUR_GPU_ERR_INVALID, message);
}

enum class Copy { h2d, d2h, d2d };

// Multiply-adds up to which a GEMM of the plugin's own kernels is summed in order, element by
// element (OrderedGemm on the device, the same loop on the host): there both it and cuBLAS are
// bound by launch and latency rather than arithmetic, and the ordered sums round like TensorFlow's
// CPU products. RECUR_CUDA_GEMM=ordered takes the ordered sums for every size, RECUR_CUDA_GEMM=cublas
// the library's GEMM (cuBLAS; Eigen on the host) for every size, RECUR_CUDA_ORDERED_WORK=N moves
// the limit (for measuring); each read once.
constexpr int64_t kOrderedGemmWork = int64_t(1) << 22;

// Whether environment variable `name` is set to `value`.
inline bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, value) == 0;
}

// RECUR_CUDA_ZERO_COPY=1 (read once): a stream's step from host memory lets its kernels read the
// input from the thread's pinned staging block and write the outputs there, with no copy queued
// for them (for measuring against the copies; off by default).
inline bool zero_copy_steps() {
  static const bool on = env_is("RECUR_CUDA_ZERO_COPY", "1");
  return on;
}

// Reads a size limit from the environment once per variable (a positive integer), else `fallback`.
inline int64_t env_limit(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  return end && *end == '\0' && n > 0 ? static_cast<int64_t>(n) : fallback;
}

inline bool use_ordered_gemm(int64_t m, int64_t n, int64_t k) {
  enum Choice { by_size, ordered, library };
  static const Choice choice = env_is("RECUR_CUDA_GEMM", "ordered")  ? ordered
                               : env_is("RECUR_CUDA_GEMM", "cublas") ? library
                                                                     : by_size;
  static const int64_t limit = env_limit("RECUR_CUDA_ORDERED_WORK", kOrderedGemmWork);
  return choice == ordered || (choice == by_size && m * n * k <= limit);
}

// Hands out aligned pieces of one scratch block. A call carves twice: once with no base to learn
// the size, then over the block the policy returns, so a call asks for scratch memory once.
class Arena {
 public:
  explicit Arena(char* base = nullptr) : base_(base) {}
  template <class T>
  T* take(int64_t count) {
    offset_ = (offset_ + kAlign - 1) / kAlign * kAlign;
    T* p = base_ ? reinterpret_cast<T*>(base_ + offset_) : nullptr;
    offset_ += static_cast<std::size_t>(count) * sizeof(T);
    return p;
  }
  std::size_t size() const { return offset_; }

 private:
  static constexpr std::size_t kAlign = 256;  // cuBLAS and vector loads like aligned rows
  char* base_;
  std::size_t offset_ = 0;
};

}  // namespace recur::gpu
