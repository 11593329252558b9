// SPDX-License-Identifier: Apache-2.0
// Where a layer, state or model runs: the device a caller asks for ("cpu", "cuda", "cuda:N",
// "auto") and the placement recur chose for it, with the reason.
#pragma once

#include <string>
#include <string_view>

namespace recur {

struct DeviceRequest {
  enum class Kind { cpu, cuda, automatic };
  Kind kind = Kind::cpu;
  int ordinal = 0;  // cuda:N

  // Throws Error(invalid_argument) naming `what` for anything but cpu, cuda, cuda:N, auto.
  static DeviceRequest parse(std::string_view text, const char* what);
  std::string to_string() const;  // "cpu", "cuda:0", "auto"
};

// The answer to "where does this run, and why".
struct Placement {
  std::string requested = "cpu";  // as the caller asked
  std::string backend = "cpu";    // "cpu" or "cuda:N"
  std::string path = "cpu";       // "cpu", "cudnn" or "kernel"
  std::string reason = "the CPU backend was asked for";
  std::string device_name;        // the GPU's name, "" on the CPU
  bool on_gpu() const { return backend != "cpu"; }
  int ordinal = -1;               // CUDA ordinal when on_gpu()
};

// Number of usable CUDA devices; 0 when the plugin, driver or GPU is missing (never throws).
int gpu_device_count() noexcept;

// Throws Error(unsupported) saying what is missing (plugin, driver, GPU, cuDNN) when `request`
// names a GPU that cannot run now; cpu and auto always pass.
void check_device(const DeviceRequest& request);

}  // namespace recur
