// SPDX-License-Identifier: Apache-2.0
// The GPU plugin as the core sees it: loaded on first use with dlopen, checked, never unloaded.
// Nothing here includes or links CUDA; every device operation goes through the plugin's table.
#pragma once

#include <cstdint>
#include <string>

#include "recur/gpu_plugin_abi.h"

namespace recur::gpu {

// The outcome of loading one plugin file.
struct PluginLoad {
  const recur_gpu_plugin* table = nullptr;  // null when refused; `why` then says what is missing
  std::string path;
  std::string why;
  int device_count = 0;  // from probe(); 0 with `why` when no driver or GPU
};

// The build id a plugin must report: the same recur version and plugin ABI as this library.
const char* expected_build_id();

// Loads, checks and probes the plugin at `path` (tests use this on purpose-built files).
PluginLoad load_plugin(const std::string& path);

// The process-wide plugin: $RECUR_CUDA_PLUGIN, else librecur_cuda.so next to the library that
// holds this code. Loaded once, thread-safe.
const PluginLoad& plugin();

// Throws Error(unsupported) saying why device `ordinal` cannot run; returns the table otherwise.
const recur_gpu_plugin& require_device(int ordinal);

// "NVIDIA H100 ..., cuDNN 9.x" for placements and reports.
std::string device_name(int ordinal);

// Turns a plugin failure into an Error with the plugin's message; `context` says what recur was
// doing ("uploading the weights of GRU 'gru'").
[[noreturn]] void raise(int code, const char* message, const std::string& context);

// A buffer of floats in device memory.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(int ordinal, std::int64_t floats);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  float* data() const;  // device pointer
  std::int64_t size() const { return floats_; }
  int ordinal() const { return ordinal_; }
  void upload(std::int64_t offset, const float* src, std::int64_t floats);
  void download(std::int64_t offset, float* dst, std::int64_t floats) const;

 private:
  void* handle_ = nullptr;
  std::int64_t floats_ = 0;
  int ordinal_ = -1;
};

}  // namespace recur::gpu
