// SPDX-License-Identifier: Apache-2.0
// librecur_gpu_emulator.so: the GPU plugin table over the host execution policy, for machines (and
// CI) without a GPU. It runs the plugin's own runner, staging and table code; only the policy
// (host memory, loops, Eigen GEMM) and the cuDNN forward (emulated_cudnn.cpp) differ.
#include <string>
#include <type_traits>

#include "host_exec.hpp"
#include "plugin_impl.hpp"

#ifndef RECUR_PLUGIN_BUILD_ID
#error "RECUR_PLUGIN_BUILD_ID must be defined by the build (\"recur <version> abi <N>\")"
#endif

namespace recur::gpu {
namespace {

struct EmulatorPlatform {
  using Exec = HostExec;
  static constexpr const char* kName = "emulator";
  // The CPU backend's budget (16 MiB of projected inputs), so tests reach the chunked path alike.
  static constexpr int64_t kProjectionBudget = int64_t(1) << 22;

  static int probe(int32_t* count, std::string& err) {
    *count = 1;
    err.clear();
    return RECUR_GPU_OK;
  }
  static void check_usable(int32_t) {}
  static std::string device_name(int32_t) { return "recur GPU emulator (host memory, no CUDA)"; }
};

}  // namespace
}  // namespace recur::gpu

extern "C" __attribute__((visibility("default"))) const recur_gpu_plugin* recur_gpu_plugin_entry(
    uint32_t core_abi_version) {
  return recur::gpu::Plugin<recur::gpu::EmulatorPlatform>::table(core_abi_version, RECUR_PLUGIN_BUILD_ID);
}

// The bytes the emulator has copied from the host to its "device" and back since it was loaded:
// tests check with it that a call moves no more than it should (the real plugin has no such count).
extern "C" __attribute__((visibility("default"))) void recur_gpu_emulator_copied(uint64_t* host_to_device,
                                                                                   uint64_t* device_to_host) {
  if (host_to_device) *host_to_device = recur::gpu::HostExec::copied(recur::gpu::Copy::h2d).load();
  if (device_to_host) *device_to_host = recur::gpu::HostExec::copied(recur::gpu::Copy::d2h).load();
}

static_assert(std::is_same_v<decltype(&recur_gpu_plugin_entry), recur_gpu_plugin_entry_fn>,
              "the entry point must match gpu_plugin_abi.h");
