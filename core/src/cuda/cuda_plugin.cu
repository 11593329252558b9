// SPDX-License-Identifier: Apache-2.0
// librecur_cuda.so: the plugin table over the CUDA execution policy. The only exported symbol is
// recur_gpu_plugin_entry; everything else is hidden (-fvisibility=hidden).
#include <cudnn.h>
#include <dlfcn.h>

#include <mutex>
#include <string>
#include <type_traits>

#include "cuda_exec.cuh"
#include "plugin_impl.hpp"

#ifndef RECUR_PLUGIN_BUILD_ID
#error "RECUR_PLUGIN_BUILD_ID must be defined by the build (\"recur <version> abi <N>\")"
#endif

namespace recur::gpu {
namespace {

struct ProbeResult {
  int code = RECUR_GPU_OK;
  int32_t count = 0;
  std::string message;
};

std::string cudnn_version_string(std::size_t v) {
  // cuDNN 9 encodes its version as major*10000 + minor*100 + patch.
  return std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) + "." + std::to_string(v % 100);
}

ProbeResult probe_once() {
  ProbeResult r;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  const std::string runtime_name = std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
  if (e == cudaErrorNoDevice || (e == cudaSuccess && count == 0)) {
    r.code = RECUR_GPU_ERR_NO_DEVICE;
    r.message = "the CUDA driver is present but reports no GPU";
    return r;
  }
  if (e != cudaSuccess) {
    // cudaErrorInsufficientDriver means no libcuda.so.1 or one older than the runtime; say which.
    r.code = RECUR_GPU_ERR_NO_DRIVER;
    void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (driver) dlclose(driver);
    int driver_version = 0;
    cudaDriverGetVersion(&driver_version);
    const std::string what =
        !driver ? "no NVIDIA driver (libcuda.so.1 not found)"
        : e == cudaErrorInsufficientDriver
            ? "the NVIDIA driver supports CUDA " + std::to_string(driver_version / 1000) + "." +
                  std::to_string(driver_version % 1000 / 10) + " only"
            : "the CUDA driver failed to initialise";
    r.message = what + " (" + cudaGetErrorName(e) + ": " + cudaGetErrorString(e) +
                "); the GPU plugin needs a driver for CUDA " + runtime_name + " or newer";
    return r;
  }
  const std::size_t cudnn = cudnnGetVersion();
  if (cudnn / 10000 != 9) {
    r.code = RECUR_GPU_ERR_NO_CUDNN;
    r.message = "cuDNN 9 is required, but the loaded libcudnn is version " + cudnn_version_string(cudnn);
    return r;
  }
  r.count = count;
  return r;
}

struct CudaPlatform {
  using Exec = CudaExec;
  static constexpr const char* kName = "cuda";
  // Floats of projected inputs held at once (64 MiB, in each calling thread's scratch): four
  // times the CPU's, as larger projection GEMMs keep the device busy.
  static constexpr int64_t kProjectionBudget = int64_t(1) << 24;

  static int probe(int32_t* count, std::string& err) {
    static std::once_flag once;
    static ProbeResult result;
    std::call_once(once, [] { result = probe_once(); });
    *count = result.count;
    err = result.message;
    return result.code;
  }

  static void check_usable(int32_t device) {
    int major = 0, minor = 0;
    check_cuda(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute");
    check_cuda(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), "cudaDeviceGetAttribute");
    // The plugin carries sm_90 code and compute_90 PTX, which older GPUs cannot run.
    if (major < 9)
      fail(RECUR_GPU_ERR_NO_DEVICE, "GPU " + std::to_string(device) + " has compute capability " +
                                        std::to_string(major) + "." + std::to_string(minor) +
                                        "; this plugin is built for 9.0 and newer");
  }

  static std::string device_name(int32_t device) {
    cudaDeviceProp p{};
    check_cuda(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
    return std::string(p.name) + ", compute " + std::to_string(p.major) + "." + std::to_string(p.minor) + ", cuDNN " +
           cudnn_version_string(cudnnGetVersion());
  }
};

}  // namespace
}  // namespace recur::gpu

extern "C" __attribute__((visibility("default"))) const recur_gpu_plugin* recur_gpu_plugin_entry(
    uint32_t core_abi_version) {
  return recur::gpu::Plugin<recur::gpu::CudaPlatform>::table(core_abi_version, RECUR_PLUGIN_BUILD_ID);
}
static_assert(std::is_same_v<decltype(&recur_gpu_plugin_entry), recur_gpu_plugin_entry_fn>,
              "the entry point must match gpu_plugin_abi.h");
