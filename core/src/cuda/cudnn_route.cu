// SPDX-License-Identifier: Apache-2.0
// The cuDNN route of the GPU plugin (cudnn_route.hpp): cudnnRNNForward through cuDNN 9's v8 API,
// followed by the kernels of cudnn_post.hpp that turn cuDNN's results into Keras's.
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cudnn_post.hpp"
#include "cudnn_route.hpp"

namespace recur::cuda {
namespace {

namespace post = cudnn_post;

// "cudnnRNNForward(handle, ...)" -> "cudnnRNNForward"
std::string call_name(const char* call) {
  const char* paren = std::strchr(call, '(');
  return paren ? std::string(call, paren) : std::string(call);
}

int cuda_failed(cudaError_t e, const char* call, std::string& err) {
  err = call_name(call) + " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
  return e == cudaErrorMemoryAllocation ? RECUR_GPU_ERR_OUT_OF_MEMORY : RECUR_GPU_ERR_CUDA;
}

int cudnn_failed(cudnnStatus_t s, const char* call, std::string& err) {
  char reason[512] = {0};
  cudnnGetLastErrorString(reason, sizeof reason);
  err = call_name(call) + " failed: " + cudnnGetErrorString(s);
  if (reason[0]) err += std::string(": ") + reason;
  return s == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
                 s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED
             ? RECUR_GPU_ERR_OUT_OF_MEMORY
             : RECUR_GPU_ERR_CUDA;
}

// Both return from the enclosing function, which has a std::string& err in scope.
#define CR_CUDA(call)                                              \
  do {                                                             \
    const cudaError_t cr_e = (call);                               \
    if (cr_e != cudaSuccess) return cuda_failed(cr_e, #call, err); \
  } while (0)
#define CR_CUDNN(call)                                                       \
  do {                                                                       \
    const cudnnStatus_t cr_s = (call);                                       \
    if (cr_s != CUDNN_STATUS_SUCCESS) return cudnn_failed(cr_s, #call, err); \
  } while (0)

// ---- Post-processing kernels: one thread per element, grid-stride ----

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(std::min<int64_t>((n + kThreads - 1) / kThreads, int64_t(1) << 16));
}

__global__ void reverse_inputs_kernel(post::PostArgs a, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    post::reverse_input_element(a, i);
}

__global__ void outputs_kernel(post::PostArgs a, int64_t n, bool padded_only) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    post::output_element(a, i, padded_only);
}

__global__ void finish_kernel(post::PostArgs a, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    post::finish_element(a, i);
}

// ---- Devices, handles and per-thread scratch ----

// Makes `device` current for a scope and restores the caller's device after.
class DeviceGuard {
 public:
  DeviceGuard() = default;
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  ~DeviceGuard() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  int enter(int device, std::string& err) {
    int current = 0;
    CR_CUDA(cudaGetDevice(&current));
    if (current != device) {
      CR_CUDA(cudaSetDevice(device));
      previous_ = current;
    }
    return RECUR_GPU_OK;
  }

 private:
  int previous_ = -1;
};

// cudnnCreate costs milliseconds and a handle serves one thread at a time: each thread keeps one
// handle per device, taken from this pool and given back when the thread exits, so threads that
// come and go reuse them. Handles are never destroyed, and the pool is never freed: at process exit
// CUDA may already be torn down when the last thread-local destructors run.
class HandlePool {
 public:
  static HandlePool& instance() {
    static HandlePool* pool = new HandlePool;
    return *pool;
  }
  // `device` must be current.
  int take(int device, cudnnHandle_t& handle, std::string& err) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto& idle = idle_[device];
      if (!idle.empty()) {
        handle = idle.back();
        idle.pop_back();
        return RECUR_GPU_OK;
      }
    }
    CR_CUDNN(cudnnCreate(&handle));
    return RECUR_GPU_OK;
  }
  void give_back(int device, cudnnHandle_t handle) {
    std::lock_guard<std::mutex> lock(mu_);
    idle_[device].push_back(handle);
  }

 private:
  std::mutex mu_;
  std::unordered_map<int, std::vector<cudnnHandle_t>> idle_;
};

// One thread's handle, descriptors and scratch on one device. The descriptors capture B, T and the
// lengths of a call, so they are per thread. Runs on a thread are sequential, but a run's GPU work
// may still be in flight when the next starts, possibly on another stream: the next run's stream
// waits for `done`, recorded after each run's last use of the scratch.
struct ThreadDevice {
  int device = -1;
  cudnnHandle_t handle = nullptr;
  cudnnRNNDataDescriptor_t x_desc = nullptr;
  cudnnRNNDataDescriptor_t y_desc = nullptr;
  cudnnTensorDescriptor_t h_desc = nullptr;
  cudaEvent_t done = nullptr;
  cudaStream_t last_stream = nullptr;
  bool used = false;      // `done` has been recorded
  void* arena = nullptr;  // grow-only scratch; the lengths always sit at its start
  size_t arena_bytes = 0;
  std::vector<int32_t> uploaded;  // the lengths the arena holds now
  post::RunPlan plan;             // reused so steady-state runs do not allocate
  // What the descriptors and temp sizes were last set up for: a repeated call shape skips the
  // set-up and cudnnGetRNNTempSpaceSizes.
  struct Shape {
    cudnnRNNDescriptor_t rnn = nullptr;
    int gru = 0, batch = 0, timesteps = 0, features = 0, units = 0, time_major = 0;
    bool operator==(const Shape& o) const {
      // The layer's whole configuration, not just the descriptor's address (which a new route may reuse).
      return rnn == o.rnn && gru == o.gru && batch == o.batch && timesteps == o.timesteps && features == o.features &&
             units == o.units && time_major == o.time_major;
    }
  };
  Shape shape;
  std::vector<int32_t> shape_lengths;
  bool shape_valid = false;
  size_t work_bytes = 0, reserve_bytes = 0;

  ThreadDevice() = default;
  ThreadDevice(const ThreadDevice&) = delete;
  ThreadDevice& operator=(const ThreadDevice&) = delete;
  ~ThreadDevice() {
    if (device >= 0) cudaSetDevice(device);
    if (used) cudaEventSynchronize(done);  // the handle may serve another thread next
    if (arena) cudaFree(arena);
    if (done) cudaEventDestroy(done);
    if (h_desc) cudnnDestroyTensorDescriptor(h_desc);
    if (y_desc) cudnnDestroyRNNDataDescriptor(y_desc);
    if (x_desc) cudnnDestroyRNNDataDescriptor(x_desc);
    if (handle) HandlePool::instance().give_back(device, handle);
  }

  // `device` must be current.
  int init(int dev, std::string& err) {
    device = dev;
    if (int rc = HandlePool::instance().take(dev, handle, err)) return rc;
    CR_CUDNN(cudnnCreateRNNDataDescriptor(&x_desc));
    CR_CUDNN(cudnnCreateRNNDataDescriptor(&y_desc));
    CR_CUDNN(cudnnCreateTensorDescriptor(&h_desc));
    CR_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    return RECUR_GPU_OK;
  }

  int reserve(size_t bytes, std::string& err) {
    if (bytes <= arena_bytes) return RECUR_GPU_OK;
    const size_t grown = std::max(bytes, arena_bytes + arena_bytes / 2);
    if (arena) {
      if (used) CR_CUDA(cudaEventSynchronize(done));
      CR_CUDA(cudaFree(arena));
      arena = nullptr;
      arena_bytes = 0;
      uploaded.clear();
    }
    CR_CUDA(cudaMalloc(&arena, grown));
    arena_bytes = grown;
    return RECUR_GPU_OK;
  }
};

// `device` must be current.
int thread_device(int device, ThreadDevice*& out, std::string& err) {
  thread_local std::vector<std::unique_ptr<ThreadDevice>> devices;
  for (auto& d : devices)
    if (d->device == device) {
      out = d.get();
      return RECUR_GPU_OK;
    }
  auto d = std::make_unique<ThreadDevice>();
  if (int rc = d->init(device, err)) return rc;
  out = d.get();
  devices.push_back(std::move(d));
  return RECUR_GPU_OK;
}

// Records the thread's `done` event when a run leaves, on success or error, once work may have
// been queued on the stream.
class RecordOnExit {
 public:
  RecordOnExit(ThreadDevice& td, cudaStream_t stream) : td_(td), stream_(stream) {}
  RecordOnExit(const RecordOnExit&) = delete;
  RecordOnExit& operator=(const RecordOnExit&) = delete;
  ~RecordOnExit() {
    if (cudaEventRecord(td_.done, stream_) == cudaSuccess) {
      td_.used = true;
      td_.last_stream = stream_;
    } else {
      cudaStreamSynchronize(stream_);  // nothing to wait on later: drain now
      td_.used = false;
    }
  }

 private:
  ThreadDevice& td_;
  cudaStream_t stream_;
};

// Splits the arena into 256-byte-aligned pieces.
struct Carve {
  size_t used = 0;
  size_t take(size_t bytes) {
    const size_t at = used;
    used += (bytes + 255) & ~size_t(255);
    return at;
  }
};

// An RNN descriptor and the dropout descriptor it points to (no dropout).
struct RnnDesc {
  cudnnDropoutDescriptor_t dropout = nullptr;
  cudnnRNNDescriptor_t rnn = nullptr;
};

// Destroys a descriptor pair that was not handed over (a failed set-up).
struct OwnedRnnDesc {
  RnnDesc d;
  OwnedRnnDesc() = default;
  OwnedRnnDesc(const OwnedRnnDesc&) = delete;
  OwnedRnnDesc& operator=(const OwnedRnnDesc&) = delete;
  ~OwnedRnnDesc() {
    if (d.rnn) cudnnDestroyRNNDescriptor(d.rnn);
    if (d.dropout) cudnnDestroyDropoutDescriptor(d.dropout);
  }
};

class CudnnRouteImpl final : public CudnnRoute {
 public:
  explicit CudnnRouteImpl(const recur_gpu_layer_desc& desc) : desc_(desc) {}
  CudnnRouteImpl(const CudnnRouteImpl&) = delete;
  CudnnRouteImpl& operator=(const CudnnRouteImpl&) = delete;

  ~CudnnRouteImpl() override {
    DeviceGuard guard;
    std::string ignored;
    guard.enter(desc_.device, ignored);
    if (weights_) cudaFree(weights_);  // waits for runs still reading it
    for (auto& entry : descs_) {
      cudnnDestroyRNNDescriptor(entry.second.rnn);
      cudnnDestroyDropoutDescriptor(entry.second.dropout);
    }
  }

  // Builds the calling thread's descriptor once, so a configuration cuDNN refuses fails here.
  int init(std::string& err) {
    DeviceGuard guard;
    if (int rc = guard.enter(desc_.device, err)) return rc;
    ThreadDevice* td = nullptr;
    if (int rc = thread_device(desc_.device, td, err)) return rc;
    cudnnRNNDescriptor_t rnn = nullptr;
    return rnn_for(td->handle, rnn, err);
  }

  int set_weights(const recur_gpu_weights& w, std::string& err) override {
    weights_ready_ = false;
    if (!w.cudnn_params || w.cudnn_params_len <= 0) {
      err = "the cuDNN route needs the packed cuDNN weight space (cudnn_params)";
      return RECUR_GPU_ERR_INVALID;
    }
    DeviceGuard guard;
    if (int rc = guard.enter(desc_.device, err)) return rc;
    ThreadDevice* td = nullptr;
    if (int rc = thread_device(desc_.device, td, err)) return rc;
    cudnnRNNDescriptor_t rnn = nullptr;
    if (int rc = rnn_for(td->handle, rnn, err)) return rc;

    size_t bytes = 0;
    CR_CUDNN(cudnnGetRNNWeightSpaceSize(td->handle, rnn, &bytes));
    const size_t packed = static_cast<size_t>(w.cudnn_params_len) * sizeof(float);
    if (bytes != packed) {
      err = "cuDNN's weight space for this layer is " + std::to_string(bytes) + " bytes (" +
            std::to_string(bytes / sizeof(float)) + " floats), recur packed " + std::to_string(w.cudnn_params_len) +
            " floats (" + std::to_string(packed) + " bytes)";
      return RECUR_GPU_ERR_INVALID;
    }
    if (!weights_) {
      CR_CUDA(cudaMalloc(&weights_, bytes));
      weight_bytes_ = bytes;
    } else {
      CR_CUDA(cudaDeviceSynchronize());  // runs still in flight may be reading the old weights
    }

    TensorDesc m, b;
    CR_CUDNN(cudnnCreateTensorDescriptor(&m.d));
    CR_CUDNN(cudnnCreateTensorDescriptor(&b.d));
    auto query = [&](int id, post::ParamPlace& matrix, post::ParamPlace& bias, std::string& e) {
      return place_of(td->handle, rnn, id, m.d, b.d, matrix, bias, e);
    };
    if (int rc = post::check_regions(desc_, w, query, err)) return rc;
    CR_CUDA(cudaMemcpy(weights_, w.cudnn_params, bytes, cudaMemcpyHostToDevice));
    weights_ready_ = true;
    return RECUR_GPU_OK;
  }

  int run(const recur_gpu_run& r, void* stream_ptr, std::string& err) override {
    if (!weights_ready_) {
      err = "the cuDNN route ran before its weights were set";
      return RECUR_GPU_ERR_INVALID;
    }
    DeviceGuard guard;
    if (int rc = guard.enter(desc_.device, err)) return rc;
    ThreadDevice* td = nullptr;
    if (int rc = thread_device(desc_.device, td, err)) return rc;
    post::RunPlan& p = td->plan;
    if (int rc = post::plan_run(r, p, err)) return rc;
    if (r.batch == 0) return RECUR_GPU_OK;
    cudnnRNNDescriptor_t rnn = nullptr;
    if (int rc = rnn_for(td->handle, rnn, err)) return rc;

    const auto stream = static_cast<cudaStream_t>(stream_ptr);
    if (td->used && td->last_stream != stream) CR_CUDA(cudaStreamWaitEvent(stream, td->done, 0));
    RecordOnExit record(*td, stream);

    const int B = static_cast<int>(r.batch), T = static_cast<int>(r.timesteps);
    const int u = desc_.units, F = desc_.input_size, ns = desc_.cell == RECUR_GPU_CELL_GRU ? 1 : 2;
    ThreadDevice::Shape shape;
    shape.rnn = rnn;
    shape.gru = desc_.cell == RECUR_GPU_CELL_GRU;
    shape.batch = B;
    shape.timesteps = T;
    shape.features = F;
    shape.units = u;
    shape.time_major = r.time_major;
    if (T > 0 && !(td->shape_valid && td->shape == shape && td->shape_lengths == p.lengths)) {
      td->shape_valid = false;
      const int32_t* cudnn_lengths = p.lengths.data() + B;
      float padding_fill = 0.0f;  // cuDNN's value at padded outputs, as in TF
      const cudnnRNNDataLayout_t layout =
          r.time_major ? CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED : CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED;
      CR_CUDNN(cudnnSetRNNDataDescriptor(td->x_desc, CUDNN_DATA_FLOAT, layout, T, B, F, cudnn_lengths, &padding_fill));
      CR_CUDNN(cudnnSetRNNDataDescriptor(td->y_desc, CUDNN_DATA_FLOAT, layout, T, B, u, cudnn_lengths, &padding_fill));
      const int dims[3] = {1, B, u}, strides[3] = {B * u, u, 1};
      CR_CUDNN(cudnnSetTensorNdDescriptor(td->h_desc, CUDNN_DATA_FLOAT, 3, dims, strides));
      CR_CUDNN(cudnnGetRNNTempSpaceSizes(td->handle, rnn, CUDNN_FWD_MODE_INFERENCE, td->x_desc, &td->work_bytes,
                                         &td->reserve_bytes));
      td->shape = shape;
      td->shape_lengths = p.lengths;
      td->shape_valid = true;
    }
    const size_t work_bytes = T > 0 ? td->work_bytes : 0, reserve_bytes = T > 0 ? td->reserve_bytes : 0;

    const int64_t rows = int64_t(B) * T, plane = int64_t(B) * u;
    Carve carve;
    const size_t at_lengths = carve.take(p.lengths.size() * sizeof(int32_t));
    const size_t at_hy = carve.take(size_t(ns) * plane * sizeof(float));
    const size_t at_y = carve.take(T > 0 && !p.direct ? size_t(rows) * u * sizeof(float) : 0);
    const size_t at_x = carve.take(T > 0 && r.go_backwards ? size_t(rows) * F * sizeof(float) : 0);
    const size_t at_work = carve.take(work_bytes);
    const size_t at_reserve = carve.take(reserve_bytes);
    if (int rc = td->reserve(carve.used, err)) return rc;
    char* base = static_cast<char*>(td->arena);
    auto* d_lengths = reinterpret_cast<int32_t*>(base + at_lengths);
    auto* hy = reinterpret_cast<float*>(base + at_hy);
    if (td->uploaded != p.lengths) {
      CR_CUDA(cudaMemcpyAsync(d_lengths, p.lengths.data(), p.lengths.size() * sizeof(int32_t), cudaMemcpyHostToDevice,
                              stream));
      td->uploaded = p.lengths;
    }

    post::PostArgs a = post::post_args(r, desc_, d_lengths, hy);
    if (T > 0) {
      const float* x = r.inputs[0];
      if (r.go_backwards) {
        a.x = x;
        a.x_rev = reinterpret_cast<float*>(base + at_x);
        reverse_inputs_kernel<<<blocks_for(rows * F), kThreads, 0, stream>>>(a, rows * F);
        CR_CUDA(cudaGetLastError());
        x = a.x_rev;
      }
      float* y = p.direct ? r.sequence_output : reinterpret_cast<float*>(base + at_y);
      CR_CUDNN(cudnnSetStream(td->handle, stream));
      // hx/cx are the states and hy/cy a temporary: cuDNN does not document hx == hy as allowed.
      CR_CUDNN(cudnnRNNForward(td->handle, rnn, CUDNN_FWD_MODE_INFERENCE, d_lengths + B, td->x_desc, x, td->y_desc, y,
                               td->h_desc, r.zero_states ? nullptr : r.states, hy, td->h_desc,
                               ns == 2 && !r.zero_states ? r.states + plane : nullptr,
                               ns == 2 ? hy + plane : nullptr, weight_bytes_, weights_, work_bytes,
                               work_bytes ? base + at_work : nullptr, reserve_bytes,
                               reserve_bytes ? base + at_reserve : nullptr));
      a.y = y;
      a.out = r.sequence_output;
      if (p.fill_padded || p.scatter) {
        outputs_kernel<<<blocks_for(rows * u), kThreads, 0, stream>>>(a, rows * u, p.fill_padded);
        CR_CUDA(cudaGetLastError());
      }
    }
    finish_kernel<<<blocks_for(plane), kThreads, 0, stream>>>(a, plane);
    CR_CUDA(cudaGetLastError());
    return RECUR_GPU_OK;
  }

 private:
  struct TensorDesc {
    cudnnTensorDescriptor_t d = nullptr;
    ~TensorDesc() {
      if (d) cudnnDestroyTensorDescriptor(d);
    }
  };

  // The RNN descriptor for `handle`. A handle is used by one thread at a time, so each descriptor
  // is too, and its dropout descriptor was set with the handle that runs it.
  int rnn_for(cudnnHandle_t handle, cudnnRNNDescriptor_t& out, std::string& err) {
    std::lock_guard<std::mutex> lock(descs_mu_);
    auto found = descs_.find(handle);
    if (found != descs_.end()) {
      out = found->second.rnn;
      return RECUR_GPU_OK;
    }
    OwnedRnnDesc made;
    RnnDesc& d = made.d;
    CR_CUDNN(cudnnCreateDropoutDescriptor(&d.dropout));
    CR_CUDNN(cudnnSetDropoutDescriptor(d.dropout, handle, 0.0f, nullptr, 0, 0));
    CR_CUDNN(cudnnCreateRNNDescriptor(&d.rnn));
    CR_CUDNN(cudnnSetRNNDescriptor_v8(d.rnn, CUDNN_RNN_ALGO_STANDARD, desc_.cell == RECUR_GPU_CELL_GRU ? CUDNN_GRU : CUDNN_LSTM,
                                      CUDNN_RNN_DOUBLE_BIAS, CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT,
                                      CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, desc_.input_size, desc_.units, desc_.units, 1,
                                      d.dropout, CUDNN_RNN_PADDED_IO_ENABLED));
    out = d.rnn;
    descs_[handle] = d;
    made.d = RnnDesc{};  // the route owns it now
    return RECUR_GPU_OK;
  }

  // Where cuDNN puts linLayerID `id`'s matrix and bias, as offsets into weights_.
  int place_of(cudnnHandle_t handle, cudnnRNNDescriptor_t rnn, int id, cudnnTensorDescriptor_t m,
               cudnnTensorDescriptor_t b, post::ParamPlace& matrix, post::ParamPlace& bias, std::string& err) {
    void* m_addr = nullptr;
    void* b_addr = nullptr;
    CR_CUDNN(cudnnGetRNNWeightParams(handle, rnn, 0, weight_bytes_, weights_, id, m, &m_addr, b, &b_addr));
    if (int rc = read_place(m, m_addr, id, false, matrix, err)) return rc;
    return read_place(b, b_addr, id, true, bias, err);
  }

  // A matrix is described as (1, rows, cols) and a bias as `rows` values in some (1, rows, 1)-like
  // shape; both must be packed row-major floats inside weights_.
  int read_place(cudnnTensorDescriptor_t d, const void* addr, int id, bool is_bias, post::ParamPlace& out,
                 std::string& err) {
    const std::string name = "linLayerID " + std::to_string(id) + (is_bias ? " bias" : " matrix");
    if (!addr) {
      err = "cuDNN's weight space has no " + name;
      return RECUR_GPU_ERR_CUDA;
    }
    cudnnDataType_t type = CUDNN_DATA_FLOAT;
    int nb = 0, dims[8] = {0}, strides[8] = {0};
    CR_CUDNN(cudnnGetTensorNdDescriptor(d, 8, &type, &nb, dims, strides));
    nb = std::min(nb, 8);
    int64_t count = 1;
    bool packed = true;
    for (int k = nb - 1; k >= 0; --k) {
      if (dims[k] > 1 && strides[k] != count) packed = false;  // a size-1 axis's stride is irrelevant
      count *= dims[k];
    }
    const ptrdiff_t offset = static_cast<const char*>(addr) - static_cast<const char*>(weights_);
    const int64_t rows = is_bias ? count : nb >= 2 ? dims[nb - 2] : 0, cols = is_bias ? 1 : nb >= 2 ? dims[nb - 1] : 0;
    if (type != CUDNN_DATA_FLOAT || !packed || rows * cols != count || offset < 0 ||
        offset % ptrdiff_t(sizeof(float)) != 0) {
      std::string shape, stride;
      for (int k = 0; k < nb; ++k) {
        shape += (k ? ", " : "") + std::to_string(dims[k]);
        stride += (k ? ", " : "") + std::to_string(strides[k]);
      }
      err = "cuDNN describes " + name + " as a tensor of type " + std::to_string(int(type)) + ", dims (" + shape +
            "), strides (" + stride + ") at byte " + std::to_string(offset) +
            ", not a packed row-major float (1, rows, cols) block";
      return RECUR_GPU_ERR_CUDA;
    }
    out.offset = offset / ptrdiff_t(sizeof(float));
    out.rows = rows;
    out.cols = cols;
    return RECUR_GPU_OK;
  }

  recur_gpu_layer_desc desc_;
  void* weights_ = nullptr;
  size_t weight_bytes_ = 0;
  bool weights_ready_ = false;
  std::mutex descs_mu_;
  std::unordered_map<cudnnHandle_t, RnnDesc> descs_;
};

}  // namespace

std::unique_ptr<CudnnRoute> make_cudnn_route(const recur_gpu_layer_desc& desc, std::string& err) {
  if (!post::route_supports(desc, err)) return nullptr;
  auto route = std::make_unique<CudnnRouteImpl>(desc);
  if (route->init(err) != RECUR_GPU_OK) return nullptr;
  return route;
}

}  // namespace recur::cuda
