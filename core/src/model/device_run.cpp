// SPDX-License-Identifier: Apache-2.0
#include "model/device_run.hpp"

#include <algorithm>
#include <utility>

#include "model/graph.hpp"
#include "model/layers/layer_util.hpp"
#include "recur/error.hpp"

namespace recur::graph {

namespace {
// What the pool keeps between runs at most; a larger run's extra buffers are freed at its end.
constexpr std::int64_t kPoolKeepFloats = std::int64_t(1) << 28;  // 1 GiB
}  // namespace

std::shared_ptr<gpu::DeviceBuffer> DevicePool::take(std::int64_t floats) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // The smallest kept buffer that fits, unless it is more than twice the size asked for.
    auto it = free_.lower_bound(floats);
    if (it != free_.end() && it->first <= 2 * floats + 4096) {
      auto b = std::move(it->second);
      kept_floats_ -= it->first;
      free_.erase(it);
      return b;
    }
  }
  // Rounded up so that buffers of nearby sizes serve each other.
  const std::int64_t rounded = (std::max<std::int64_t>(floats, 1) + 255) / 256 * 256;
  return std::make_shared<gpu::DeviceBuffer>(ordinal_, rounded);
}

void DevicePool::give_back(std::vector<std::shared_ptr<gpu::DeviceBuffer>>& buffers) {
  std::vector<std::shared_ptr<gpu::DeviceBuffer>> drop;  // freed outside the lock
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& b : buffers) {
      if (!b || b.use_count() > 1) continue;  // still viewed by a Value the caller holds
      if (kept_floats_ + b->size() > kPoolKeepFloats) {
        drop.push_back(std::move(b));
        continue;
      }
      kept_floats_ += b->size();
      free_.emplace(b->size(), std::move(b));
    }
  }
  buffers.clear();
}

void DevicePool::keep_weights(const void* owner, std::shared_ptr<gpu::DeviceBuffer> buffer) {
  std::shared_ptr<gpu::DeviceBuffer> old;  // freed outside the lock
  std::lock_guard<std::mutex> lock(mutex_);
  old = std::exchange(weights_[owner], std::move(buffer));
}

DeviceRun::DeviceRun(std::shared_ptr<DevicePool> pool)
    : pool_(std::move(pool)), table_(gpu::require_device(pool_->ordinal())) {}

DeviceRun::~DeviceRun() {
  // A run that failed may have work in flight on these buffers: freeing them (cudaFree waits for
  // the device) is safe, handing them to another run is not.
  if (!finished_) taken_.clear();
}

void DeviceRun::finish() {
  finished_ = true;
  pool_->give_back(taken_);
}

Value DeviceRun::make(std::vector<Index> shape, const char* what) {
  Value v;
  v.shape = alloc_shape(std::move(shape), what);
  const std::int64_t n = static_cast<std::int64_t>(product(v.shape));
  auto buffer = pool_->take(n);
  taken_.push_back(buffer);
  auto a = std::make_shared<DeviceArray>();
  a->buffer = std::move(buffer);
  a->floats = n;
  v.device = std::move(a);
  return v;
}

Value DeviceRun::clone(const Value& v, const char* what) {
  Value out = make(v.shape, what);
  const float* src = v.device->data();
  float* dst = out.device->data();
  call(std::string("copying a tensor for ") + what, [&](char* err, std::size_t len) {
    return table_.copy2d(ordinal(), src, v.device->floats, dst, v.device->floats, 1, v.device->floats, err, len);
  });
  out.mask = v.mask;
  out.ids = v.ids;
  return out;
}

std::optional<Value> DeviceRun::gather(const Value& x, const std::vector<Index>& dims, const std::vector<Index>& strides,
                                       Index base, std::vector<Index> shape, const std::string& what) {
  if (dims.empty() || dims.size() > RECUR_GPU_MAX_RANK || dims.size() != strides.size()) return std::nullopt;
  Value y = make(std::move(shape), what.c_str());
  const std::vector<std::int64_t> d(dims.begin(), dims.end()), s(strides.begin(), strides.end());
  call(what, [&](char* err, std::size_t len) {
    return table_.gather_strided(ordinal(), x.device->data(), x.device->floats, base, static_cast<std::int32_t>(d.size()),
                                 d.data(), s.data(), y.device->data(), err, len);
  });
  return y;
}

Value DeviceRun::view(const Value& v, std::int64_t offset, std::vector<Index> shape) {
  Value out;
  out.shape = std::move(shape);
  auto a = std::make_shared<DeviceArray>(*v.device);
  a->offset += offset;
  a->floats = static_cast<std::int64_t>(product(out.shape));
  if (offset < 0 || offset + a->floats > v.device->floats)
    fail(Error::Code::state, "a device view outside its tensor");
  out.device = std::move(a);
  return out;
}

void DeviceRun::to_device(Value& v, const std::string& why) {
  if (v.device && v.device->buffer->ordinal() == ordinal()) return;
  if (v.device) {  // on another GPU (a stream's past, kept since the model moved): through the host
    download_to_host(v);
    v.device.reset();
  }
  if (v.strings) fail(Error::Code::unsupported, why, ": strings cannot go to the GPU");
  Value d = make(v.shape, "an upload to the GPU");
  if (d.device->floats != static_cast<std::int64_t>(v.data.size()))
    fail(Error::Code::state, why, ": a tensor of shape ", shape_string(v.shape), " holds ", v.data.size(), " floats");
  if (!v.data.empty()) d.device->buffer->upload(d.device->offset, v.data.data(), d.device->floats);
  v.device = d.device;
  uploads.push_back(why);
}

void DeviceRun::to_host(Value& v, const std::string& why) {
  if (!on_device_only(v)) return;
  download_to_host(v);
  downloads.push_back(why);
}

void DeviceRun::check(int rc, const char* err, const std::string& what) {
  if (rc != RECUR_GPU_OK) gpu::raise(rc, err, what);
}

bool on_device_only(const Value& v) {
  return v.device && static_cast<std::int64_t>(v.data.size()) != v.device->floats;
}

void download_to_host(Value& v) {
  if (!on_device_only(v)) return;
  v.data.resize(static_cast<std::size_t>(v.device->floats));
  if (!v.data.empty()) v.device->buffer->download(v.device->offset, v.data.data(), v.device->floats);
}

std::vector<const float*> DeviceWeights::on(const DeviceRun& dev, const std::vector<Array>& arrays) const {
  Copy& c = *copy_;
  std::lock_guard<std::mutex> lock(c.mutex);
  std::shared_ptr<gpu::DeviceBuffer> buffer = c.buffer.lock();
  if (!buffer || c.pool != &dev.pool() || c.offsets.size() != arrays.size()) {
    std::vector<std::int64_t> offsets;
    std::int64_t total = 0;
    for (const Array& a : arrays) {
      offsets.push_back(total);
      total += (static_cast<std::int64_t>(a.floats) + 63) / 64 * 64;  // each array 256-byte aligned
    }
    buffer = std::make_shared<gpu::DeviceBuffer>(dev.ordinal(), std::max<std::int64_t>(total, 1));
    for (std::size_t i = 0; i < arrays.size(); ++i)
      if (arrays[i].floats) buffer->upload(offsets[i], arrays[i].data, static_cast<std::int64_t>(arrays[i].floats));
    dev.pool().keep_weights(&c, buffer);
    c.buffer = buffer;
    c.pool = &dev.pool();
    c.offsets = std::move(offsets);
  }
  // The pool keeps the buffer alive for the run (the run holds the pool).
  std::vector<const float*> out;
  for (std::int64_t o : c.offsets) out.push_back(buffer->data() + o);
  return out;
}

void DeviceWeights::reset() {
  std::lock_guard<std::mutex> lock(copy_->mutex);
  copy_->buffer.reset();
  copy_->pool = nullptr;
}

}  // namespace recur::graph
