// SPDX-License-Identifier: Apache-2.0
// The CUDA execution policy of the runner (see runner.hpp): cuBLAS in pedantic math (no TF32,
// no reduced-precision reductions), one generic grid-stride kernel for element-wise work, and a
// per-thread, per-device stream, cuBLAS handle and scratch block, so runs from many threads on one
// layer share no mutable state.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "call_profile.hpp"
#include "gpu_common.hpp"
#include "gpu_math.hpp"
#include "replay_cache.hpp"

namespace recur::gpu {

inline void check_cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  const int code = e == cudaErrorMemoryAllocation ? RECUR_GPU_ERR_OUT_OF_MEMORY : RECUR_GPU_ERR_CUDA;
  fail(code, std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

inline void check_cublas(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  const int code = s == CUBLAS_STATUS_ALLOC_FAILED ? RECUR_GPU_ERR_OUT_OF_MEMORY : RECUR_GPU_ERR_CUDA;
  fail(code, std::string(what) + ": " + cublasGetStatusName(s) + " (" + cublasGetStatusString(s) + ")");
}

template <class F>
__global__ void for_each_kernel(int64_t n, F f) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) f(i);
}

// Row-major C = A @ B with each element summed over k in order, each product rounded before it is
// added (ordered_dots1 in gpu_math.hpp, which says why): the order of TensorFlow's CPU products,
// where cuBLAS sums in blocks of its own (and splits k across threads on small shapes).
struct OrderedGemm {
  int64_t n, k;
  const float* a;
  int64_t lda;
  const float* b;
  int64_t ldb;
  float* c;
  int64_t ldc;
  __device__ void operator()(int64_t idx) const {
    const int64_t i = idx / n, col[1] = {idx % n};
    float acc = 0.0f;
    ordered_dots1<1>(a + i * lda, k, b, ldb, col, &acc);
    c[i * ldc + col[0]] = acc;
  }
};

// A FusedStep pass (runner.hpp) over B rows as a tiled kernel: a block takes kTileRows rows and
// kTileUnits units and walks the recurrent product's terms kTileK at a time through shared memory,
// so each weight is read once per block rather than once per row and each thread waits on memory
// once per kTileK terms. Each element still sums its terms in order (one rounded product added at a
// time), so the results equal the pass's own f(i) bit for bit; the gates are f's.
constexpr int kTileRows = 8, kTileUnits = 32, kTileK = 32;

template <int G, class Step>
__global__ void __launch_bounds__(kTileRows * kTileUnits) tiled_step_kernel(Step f, int64_t B) {
  __shared__ float h_tile[kTileRows][kTileK];
  __shared__ float w_tile[G][kTileK][kTileUnits];
  const int tx = threadIdx.x % kTileUnits, ty = threadIdx.x / kTileUnits;
  const int64_t u = f.s.u, W = f.s.W, c0 = f.first_column();
  const int64_t j0 = int64_t(blockIdx.x) * kTileUnits, b0 = int64_t(blockIdx.y) * kTileRows;
  const int64_t j = j0 + tx, b = b0 + ty;
  const float* left = f.left();
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int64_t k0 = 0; k0 < u; k0 += kTileK) {
    const int kn = static_cast<int>(u - k0 < kTileK ? u - k0 : kTileK);
    h_tile[ty][tx] = (b < B && tx < kn) ? left[b * u + k0 + tx] : 0.0f;
    for (int e = threadIdx.x; e < G * kTileK * kTileUnits; e += blockDim.x) {
      const int g = e / (kTileK * kTileUnits), kk = (e / kTileUnits) % kTileK, jj = e % kTileUnits;
      w_tile[g][kk][jj] = (kk < kn && j0 + jj < u) ? f.U[(k0 + kk) * W + c0 + g * u + j0 + jj] : 0.0f;
    }
    __syncthreads();
    for (int kk = 0; kk < kn; ++kk) {
      const float hv = h_tile[ty][kk];
#pragma unroll
      for (int g = 0; g < G; ++g) acc[g] = acc[g] + hv * w_tile[g][kk][tx];
    }
    __syncthreads();
  }
  if (b < B && j < u) {
    float xs[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int g = 0; g < G; ++g) xs[g] = f.input_term(b, c0 + g * u + j, 0.0f);
    f.finish_from(b * u + j, xs, acc);
  }
}

// RECUR_CUDA_TILED=0 (read once): fused passes run per element instead of tiled (for measuring).
inline bool tiled_off() {
  static const bool off = env_is("RECUR_CUDA_TILED", "0");
  return off;
}

// RECUR_CUDA_GRAPHS=0 (read once): no CUDA graphs; every call queues its operations one by one.
inline bool graphs_off() {
  static const bool off = env_is("RECUR_CUDA_GRAPHS", "0");
  return off;
}

// What one thread keeps for one device. Destroyed at thread exit; errors there are ignored, as
// the runtime may already be shutting down.
struct ThreadDevice {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  void* scratch = nullptr;
  std::size_t capacity = 0;
  cudaEvent_t scratch_done = nullptr;  // recorded after the last call that used the scratch
  cudaStream_t scratch_stream = nullptr;
  void* staging = nullptr;  // pinned host memory for uploads made of many small pieces
  std::size_t staging_capacity = 0;
  cudaEvent_t marks[4] = {nullptr, nullptr, nullptr, nullptr};  // RECUR_CUDA_PROFILE's stage events
  // Steady-state calls replayed as CUDA graphs (see CudaExec::replay).
  ReplayCache<cudaGraphExec_t> graphs;

  explicit ThreadDevice(int32_t device) {
    try {
      check_cuda(cudaSetDevice(device), "cudaSetDevice");
      check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
      check_cuda(cudaEventCreateWithFlags(&scratch_done, cudaEventDisableTiming), "cudaEventCreate");
      check_cublas(cublasCreate(&blas), "cublasCreate");
      // Pedantic: no TF32 and no reduced-precision reductions, whatever the GPU offers.
      check_cublas(cublasSetMathMode(blas, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
    } catch (...) {
      release();
      throw;
    }
  }
  ThreadDevice(const ThreadDevice&) = delete;
  ThreadDevice& operator=(const ThreadDevice&) = delete;
  ~ThreadDevice() { release(); }

 private:
  void release() {
    graphs.clear([](cudaGraphExec_t g) { cudaGraphExecDestroy(g); });
    for (cudaEvent_t& e : marks)
      if (e) cudaEventDestroy(e);
    if (staging) cudaFreeHost(staging);
    if (scratch) cudaFree(scratch);
    if (blas) cublasDestroy(blas);
    if (scratch_done) cudaEventDestroy(scratch_done);
    if (stream) cudaStreamDestroy(stream);
  }
};

class CudaExec {
 public:
  CudaExec(int32_t device, void* stream) : dev_(enter(device)) {
    stream_ = stream ? static_cast<cudaStream_t>(stream) : dev_.stream;
    // Work this thread queued on its own stream (buffer copies, model ops) comes first.
    if (stream_ != dev_.stream) check_cuda(cudaStreamSynchronize(dev_.stream), "cudaStreamSynchronize");
    check_cublas(cublasSetStream(dev_.blas, stream_), "cublasSetStream");
  }
  CudaExec(const CudaExec&) = delete;
  CudaExec& operator=(const CudaExec&) = delete;
  ~CudaExec() {
    if (used_scratch_ && cudaEventRecord(dev_.scratch_done, stream_) == cudaSuccess) dev_.scratch_stream = stream_;
  }

  static void* alloc(int32_t device, std::size_t bytes) {
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
    void* p = nullptr;
    check_cuda(cudaMalloc(&p, std::max<std::size_t>(bytes, 1)), "cudaMalloc");
    return p;
  }
  static void release(void* p) { cudaFree(p); }

  // Whether host memory is page-locked (cudaMallocHost or cudaHostRegister): such arrays are
  // copied straight from and to the caller's memory instead of through the staging block.
  static bool is_pinned(const void* p) {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
      cudaGetLastError();  // clears the error it leaves behind
      return false;
    }
    return a.type == cudaMemoryTypeHost;
  }

  // The thread's scratch block. Work from an earlier call on another stream may still use it, so
  // this stream waits for that call's event; growing it waits for all of its users.
  void* scratch(std::size_t bytes) {
    if (dev_.scratch_stream && dev_.scratch_stream != stream_)
      check_cuda(cudaStreamWaitEvent(stream_, dev_.scratch_done, 0), "cudaStreamWaitEvent");
    if (bytes > dev_.capacity) {
      const std::size_t grown = std::max(bytes, dev_.capacity + dev_.capacity / 2);
      if (dev_.scratch) {
        check_cuda(cudaEventSynchronize(dev_.scratch_done), "cudaEventSynchronize");
        check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
        check_cuda(cudaFree(dev_.scratch), "cudaFree");
        dev_.scratch = nullptr;
        dev_.capacity = 0;
      }
      check_cuda(cudaMalloc(&dev_.scratch, grown), "cudaMalloc (scratch)");
      dev_.capacity = grown;
    }
    used_scratch_ = true;
    return dev_.scratch;
  }

  // The thread's pinned host block, for assembling one upload. The caller synchronizes before it
  // returns, so the block is free again at the next call on this thread.
  void* host_staging(std::size_t bytes) {
    if (bytes > dev_.staging_capacity) {
      const std::size_t grown = std::max(bytes, dev_.staging_capacity + dev_.staging_capacity / 2);
      if (dev_.staging) check_cuda(cudaFreeHost(dev_.staging), "cudaFreeHost");
      dev_.staging = nullptr;
      dev_.staging_capacity = 0;
      check_cuda(cudaMallocHost(&dev_.staging, grown), "cudaMallocHost");
      dev_.staging_capacity = grown;
    }
    return dev_.staging;
  }

  // The staging block (cudaMallocHost memory, mapped) as kernels address it.
  static void* device_view(void* staging) {
    void* d = nullptr;
    check_cuda(cudaHostGetDevicePointer(&d, staging, 0), "cudaHostGetDevicePointer");
    return d;
  }

  void copy(void* dst, const void* src, std::size_t bytes, Copy kind) {
    if (bytes == 0 || dst == src) return;
    const cudaMemcpyKind k = kind == Copy::h2d   ? cudaMemcpyHostToDevice
                             : kind == Copy::d2h ? cudaMemcpyDeviceToHost
                                                 : cudaMemcpyDeviceToDevice;
    check_cuda(cudaMemcpyAsync(dst, src, bytes, k, stream_), "cudaMemcpyAsync");
  }

  // Row-major C = A @ B is column-major C^T = B^T @ A^T: cuBLAS sees B first.
  void gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
            int64_t ldc) {
    if (m == 0 || n == 0) return;
    if (k == 0) {
      check_cuda(cudaMemset2DAsync(c, static_cast<std::size_t>(ldc) * sizeof(float), 0,
                                   static_cast<std::size_t>(n) * sizeof(float), static_cast<std::size_t>(m), stream_),
                 "cudaMemset2DAsync");
      return;
    }
    if (use_ordered_gemm(m, n, k)) {
      // Small blocks spread a small product's reads of B over many multiprocessors.
      for_each(m * n, OrderedGemm{n, k, a, lda, b, ldb, c, ldc}, m * n <= 8192 ? 32 : 128);
      return;
    }
    const float one = 1.0f, zero = 0.0f;
    check_cublas(cublasSgemm_v2_64(dev_.blas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, ldb, a, lda, &zero, c, ldc),
                 "cublasSgemm");
  }

  template <class F>
  void for_each(int64_t n, const F& f, int threads = 256) {
    if (n <= 0) return;
    const int64_t blocks = std::min<int64_t>((n + threads - 1) / threads, int64_t(1) << 20);
    for_each_kernel<<<static_cast<unsigned>(blocks), threads, 0, stream_>>>(n, f);
    check_cuda(cudaGetLastError(), "kernel launch");
  }

  // A FusedStep pass: the tiled kernel, except for a pass that also projects the step's input or
  // adds split sums up (then f(i) per element, as for_each runs it).
  template <class S>
  void fused_step(const S& f, int64_t B, int threads) {
    const int64_t u = f.s.u;
    if (B * u <= 0) return;
    if (f.x || f.ph || tiled_off()) {
      for_each(B * u, f, threads);
      return;
    }
    const dim3 grid(static_cast<unsigned>((u + kTileUnits - 1) / kTileUnits),
                    static_cast<unsigned>((B + kTileRows - 1) / kTileRows));
    constexpr unsigned kThreads = kTileRows * kTileUnits;
    switch (f.gates()) {
      case 1: tiled_step_kernel<1><<<grid, kThreads, 0, stream_>>>(f, B); break;
      case 2: tiled_step_kernel<2><<<grid, kThreads, 0, stream_>>>(f, B); break;
      case 3: tiled_step_kernel<3><<<grid, kThreads, 0, stream_>>>(f, B); break;
      default: tiled_step_kernel<4><<<grid, kThreads, 0, stream_>>>(f, B); break;
    }
    check_cuda(cudaGetLastError(), "kernel launch");
  }

  void sync() { check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }
  void* stream() const { return stream_; }

  // RECUR_CUDA_PROFILE: an event at the end of stage `i` (0: before the uploads, 1: after them,
  // 2: after the compute, 3: after the downloads); device_times reads them after a sync.
  void mark(int i) {
    if (!CallProfile::on() || capturing_) return;
    cudaEvent_t& e = dev_.marks[i];
    if (!e && cudaEventCreate(&e) != cudaSuccess) {
      e = nullptr;
      return;
    }
    if (cudaEventRecord(e, stream_) == cudaSuccess) marked_ |= 1 << i;
  }
  void device_times(CallTimes& t) const {
    auto between = [&](int a, int b) {
      float ms = 0.0f;
      if ((marked_ >> a & 1) && (marked_ >> b & 1) && cudaEventElapsedTime(&ms, dev_.marks[a], dev_.marks[b]) == cudaSuccess)
        return 1000.0 * ms;
      return -1.0;
    };
    t.device_us = between(0, 3);
    t.upload_us = between(0, 1);
    t.compute_us = between(1, 2);
    t.download_us = between(2, 3);
    t.replayed = replayed_;
  }

  // Queues `enqueue`'s operations, or replays them. A call whose key (everything its operations
  // depend on: the layer and its weights, shapes, flags and every pointer, the thread's scratch
  // and staging blocks included) came before on this thread is captured once as a CUDA graph and
  // from then on launched as one graph instead of one operation at a time: a stream's step queues
  // one launch instead of several. Which keys get graphs: replay_cache.hpp. A capture that fails
  // (an operation a graph cannot hold) runs the call as it is.
  template <class F>
  void replay(const std::vector<uint64_t>& key, const F& enqueue) {
    if (graphs_off()) {
      enqueue();
      return;
    }
    const auto decision = dev_.graphs.decide(key);
    if (decision.action == ReplayCache<cudaGraphExec_t>::Action::replay) {
      check_cuda(cudaGraphLaunch(decision.handle, stream_), "cudaGraphLaunch");
      replayed_ = true;
      return;
    }
    if (decision.action == ReplayCache<cudaGraphExec_t>::Action::run ||
        cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
      cudaGetLastError();
      enqueue();
      return;
    }
    capturing_ = true;
    bool queued = true;
    try {
      enqueue();
    } catch (...) {
      queued = false;
    }
    capturing_ = false;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
    if (!queued || ended != cudaSuccess || !graph || cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) {
      cudaGetLastError();
      if (graph) cudaGraphDestroy(graph);
      enqueue();  // nothing ran while capturing
      return;
    }
    cudaGraphDestroy(graph);
    dev_.graphs.store(key, exec, [](cudaGraphExec_t g) { cudaGraphExecDestroy(g); });
    check_cuda(cudaGraphLaunch(exec, stream_), "cudaGraphLaunch");
    replayed_ = true;
  }

 private:
  static ThreadDevice& enter(int32_t device) {
    check_cuda(cudaSetDevice(device), "cudaSetDevice");
    thread_local std::vector<std::unique_ptr<ThreadDevice>> devices;
    if (static_cast<std::size_t>(device) >= devices.size()) devices.resize(static_cast<std::size_t>(device) + 1);
    auto& d = devices[static_cast<std::size_t>(device)];
    if (!d) d = std::make_unique<ThreadDevice>(device);
    return *d;
  }

  ThreadDevice& dev_;
  cudaStream_t stream_ = nullptr;
  bool used_scratch_ = false;
  int marked_ = 0;
  bool capturing_ = false;
  bool replayed_ = false;
};

}  // namespace recur::gpu
