// SPDX-License-Identifier: Apache-2.0
// The cuDNN route of the GPU plugin: cudnnRNNForward for the layers cuDNN computes exactly
// (GRU reset_after=True and LSTM with tanh/sigmoid, CuDNNGRU, CuDNNLSTM), plus the kernels that
// turn cuDNN's results into Keras's masking semantics. The plugin's runner stages host buffers
// and hands this route device pointers only.
#pragma once

#include <memory>
#include <string>

#include "recur/gpu_plugin_abi.h"

namespace recur::cuda {

class CudnnRoute {
 public:
  virtual ~CudnnRoute() = default;
  // Places w.cudnn_params on the device as w.regions describe, after checking each region
  // against cudnnGetRNNWeightParams (a mismatch is an error naming the region).
  virtual int set_weights(const recur_gpu_weights& w, std::string& err) = 0;
  // Runs `r` (route CUDNN): every tensor pointer is a device pointer; r.mask is null and
  // r.lengths (host, may hold zeros) describes a right-padded mask, or is null for all T.
  // `stream` is the cudaStream_t to order the work on.
  virtual int run(const recur_gpu_run& r, void* stream, std::string& err) = 0;
};

// The real plugin defines this with cuDNN; the CPU-only emulator with a host model of
// cudnnRNNForward that reads the same weight space.
std::unique_ptr<CudnnRoute> make_cudnn_route(const recur_gpu_layer_desc& desc, std::string& err);

}  // namespace recur::cuda
