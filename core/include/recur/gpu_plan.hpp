// SPDX-License-Identifier: Apache-2.0
// Host-side planning for the GPU backend, kept out of the plugin so it is tested everywhere:
// which route a layer and a call take (cuDNN or recur's kernels) and why, what a mask means to
// cuDNN (per-row lengths when it is right-padded), and the cuDNN weight space built from Keras
// weights.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "recur/cell.hpp"
#include "recur/config.hpp"
#include "recur/gpu_plugin_abi.h"

namespace recur::gpu {

struct PathChoice {
  bool cudnn = false;
  std::string reason;
};

// The route of a layer's plain calls (no mask, inference).
PathChoice choose_path(const LayerConfig& config);

// A mask as cuDNN can take it: `right_padded` when every row is [1]*len + [0]*(T - len); the
// lengths are then per row (zeros allowed). An all-valid mask is `all_valid` (cuDNN needs none).
struct MaskPlan {
  bool all_valid = false;
  bool right_padded = false;
  std::vector<std::int32_t> lengths;  // B values when right_padded
};
MaskPlan plan_mask(const std::uint8_t* mask, Index batch, Index timesteps, bool time_major);

// The route one call takes: cuDNN only for a cuDNN layer with no mask or a right-padded one,
// one input (no per-gate dropout), no recurrent dropout and no unroll masking quirk, over more than
// one timestep (a single step, as a stream takes, is faster in recur's fused kernel than through
// cuDNN's per-call setup).
struct CallRoute {
  bool cudnn = false;
  const std::vector<std::int32_t>* lengths = nullptr;  // into the MaskPlan, when cudnn with a mask
};
CallRoute choose_call_route(const PathChoice& layer_path, Index timesteps, const MaskPlan* mask, bool per_gate_inputs,
                            bool recurrent_masks, bool unrolled_mask_quirk);

// The cuDNN weight space of one unidirectional layer (recur's layout model: every matrix in
// linLayerID order, then every bias), filled from the weights in the form the cell uses.
struct CudnnWeights {
  std::vector<float> params;
  std::vector<recur_gpu_cudnn_region> regions;
};
CudnnWeights pack_cudnn_weights(const LayerConfig& config, const CellParams& params);

}  // namespace recur::gpu
