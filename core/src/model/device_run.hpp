// SPDX-License-Identifier: Apache-2.0
// A model run on a GPU: the tensors between layers stay in device memory. The model inputs go up
// once, the outputs come down once, and a layer without a GPU kernel is the only other place a
// tensor crosses (its inputs down, its outputs up when a GPU layer reads them). Everything goes
// through the plugin's table; nothing here includes CUDA.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "gpu/runtime.hpp"
#include "recur/tensor.hpp"

namespace recur::graph {

struct Value;

// A tensor's floats in device memory: a view into a buffer that several Values may share (a
// Reshape, a recurrent layer's final states carved from one buffer).
struct DeviceArray {
  std::shared_ptr<gpu::DeviceBuffer> buffer;
  std::int64_t offset = 0;
  std::int64_t floats = 0;
  float* data() const { return buffer->data() + offset; }
};

// Device buffers a model keeps between its runs, so that a steady run allocates nothing. A run
// takes what it needs and gives everything back at its end, once its work on the device is done.
class DevicePool {
 public:
  explicit DevicePool(int ordinal) : ordinal_(ordinal) {}
  int ordinal() const { return ordinal_; }
  std::shared_ptr<gpu::DeviceBuffer> take(std::int64_t floats);
  void give_back(std::vector<std::shared_ptr<gpu::DeviceBuffer>>& buffers);
  // Holds an op's weights on the device (replacing what `owner` held before), so that they are
  // freed with the pool when the model leaves the GPU.
  void keep_weights(const void* owner, std::shared_ptr<gpu::DeviceBuffer> buffer);

 private:
  int ordinal_;
  std::mutex mutex_;
  std::multimap<std::int64_t, std::shared_ptr<gpu::DeviceBuffer>> free_;  // by size
  std::int64_t kept_floats_ = 0;
  std::map<const void*, std::shared_ptr<gpu::DeviceBuffer>> weights_;
};

// One run's GPU: where its tensors live and what crossed to the host and why.
class DeviceRun {
 public:
  explicit DeviceRun(std::shared_ptr<DevicePool> pool);
  ~DeviceRun();
  DeviceRun(const DeviceRun&) = delete;
  DeviceRun& operator=(const DeviceRun&) = delete;

  int ordinal() const { return pool_->ordinal(); }
  DevicePool& pool() const { return *pool_; }
  const recur_gpu_plugin& table() const { return table_; }
  // A device Value of this shape (zeros not promised), checked against the tensor limit.
  Value make(std::vector<Index> shape, const char* what);
  // A device copy of device Value v (its mask and ids kept).
  Value clone(const Value& v, const char* what);
  // A device Value of `shape` gathered from device Value x: element k of the row-major `dims` reads
  // x at base + its index along each axis times that axis's stride; null (nothing made) when
  // `dims` has more axes than the GPU op takes (RECUR_GPU_MAX_RANK).
  std::optional<Value> gather(const Value& x, const std::vector<Index>& dims, const std::vector<Index>& strides,
                              Index base, std::vector<Index> shape, const std::string& what);
  // A view of `floats` floats at `offset` of v's device array, with this shape.
  static Value view(const Value& v, std::int64_t offset, std::vector<Index> shape);
  // Puts v's floats on the device (an upload when it has none there yet, or has them on another GPU).
  void to_device(Value& v, const std::string& why);
  // Puts v's floats on the host (a download when they live only on the device).
  void to_host(Value& v, const std::string& why);
  // Throws Error with the plugin's message when rc is not RECUR_GPU_OK.
  static void check(int rc, const char* err, const std::string& what);
  // Calls a plugin op f(err, err_len) and checks its code; `what` says what recur was doing.
  template <class F>
  void call(const std::string& what, F&& f) const {
    char err[512] = {0};
    check(f(err, sizeof err), err, what);
  }

  // Host<->device copies this run made, each with the layer it was made for ("input 'x'",
  // "layer 'masking' (Masking): no GPU kernel"), in order.
  std::vector<std::string> uploads, downloads;
  // Why an op's forward_device declined its call, when it says (the run records it, then clears it).
  std::string declined;
  // Called when the run's work is done (its outputs are downloaded): buffers go back to the pool.
  void finish();

 private:
  std::shared_ptr<DevicePool> pool_;
  const recur_gpu_plugin& table_;
  std::vector<std::shared_ptr<gpu::DeviceBuffer>> taken_;
  bool finished_ = false;
};

bool on_device_only(const Value& v);
// Puts a device-only Value's floats on the host outside any run (what a stream keeps between
// steps, before the host reads it); its device copy stays valid.
void download_to_host(Value& v);

// An op's weights on the GPU: uploaded at its first device call, again for another model pool
// (the model moved) or after reset() (the op loaded new weights). The pool owns the device copy,
// so it goes when the model leaves the GPU. Safe for concurrent runs.
class DeviceWeights {
 public:
  struct Array {
    const float* data;
    std::size_t floats;
  };
  // Device pointers to `arrays` (host floats, in this order) on dev's GPU.
  std::vector<const float*> on(const DeviceRun& dev, const std::vector<Array>& arrays) const;
  void reset();

 private:
  struct Copy {
    std::mutex mutex;
    std::weak_ptr<gpu::DeviceBuffer> buffer;  // owned by `pool`
    const DevicePool* pool = nullptr;
    std::vector<std::int64_t> offsets;
  };
  std::shared_ptr<Copy> copy_ = std::make_shared<Copy>();
};

}  // namespace recur::graph
