// SPDX-License-Identifier: Apache-2.0
#include "recur/gpu_plan.hpp"

#include <string>

namespace recur::gpu {
namespace {

bool is(const ActivationFn& f, Activation a) { return f.kind == a; }

}  // namespace

PathChoice choose_path(const LayerConfig& c) {
  const char* cls = kind_name(c.kind);
  if (c.is_cell()) return {false, std::string(cls) + " steps one timestep per call: recur's kernels"};
  if (c.is_cudnn()) return {true, std::string(cls) + " is cuDNN's own layer"};
  if (c.is_simple_rnn())
    return {false, "SimpleRNN is one GEMM and one element-wise pass per step: recur's kernels (recur has no "
                   "route to cuDNN's RNN_TANH/RNN_RELU modes)"};
  if (c.is_gru() && !c.reset_after)
    return {false, "GRU(reset_after=False) applies the reset gate before the recurrent product; cuDNN's GRU "
                   "applies it after: recur's kernels"};
  if (!is(c.activation, Activation::tanh))
    return {false, "activation=" + activation_name(c.activation.kind, c.dialect.dialect) +
                       ": cuDNN computes tanh only: recur's kernels"};
  if (!is(c.recurrent_activation, Activation::sigmoid))
    return {false, "recurrent_activation=" + activation_name(c.recurrent_activation.kind, c.dialect.dialect) +
                       ": cuDNN computes sigmoid only: recur's kernels"};
  return {true, std::string(cls) + (c.is_gru() ? "(reset_after=True)" : "") +
                    " with tanh/sigmoid is cuDNN's cell (masks with holes or left padding take recur's kernels)"};
}

MaskPlan plan_mask(const std::uint8_t* mask, Index B, Index T, bool time_major) {
  MaskPlan plan;
  if (!mask) {
    plan.all_valid = true;
    return plan;
  }
  plan.right_padded = true;
  plan.all_valid = true;
  plan.lengths.assign(static_cast<std::size_t>(B), 0);
  for (Index b = 0; b < B; ++b) {
    Index len = 0;
    bool padding = false;
    for (Index t = 0; t < T; ++t) {
      const bool valid = mask[time_major ? t * B + b : b * T + t] != 0;
      if (valid && padding) {
        plan.right_padded = false;
        plan.all_valid = false;
        plan.lengths.clear();
        return plan;
      }
      if (valid) ++len;
      else padding = true;
    }
    if (len != T) plan.all_valid = false;
    plan.lengths[static_cast<std::size_t>(b)] = static_cast<std::int32_t>(len);
  }
  return plan;
}

CallRoute choose_call_route(const PathChoice& layer_path, Index timesteps, const MaskPlan* mask, bool per_gate_inputs,
                            bool recurrent_masks, bool unrolled_mask_quirk) {
  CallRoute r;
  if (!layer_path.cudnn || timesteps == 1 || per_gate_inputs || recurrent_masks) return r;
  if (mask && !mask->all_valid) {
    if (!mask->right_padded || unrolled_mask_quirk) return r;
    r.lengths = &mask->lengths;
  }
  r.cudnn = true;
  return r;
}

CudnnWeights pack_cudnn_weights(const LayerConfig& c, const CellParams& p) {
  const Index u = c.units, F = c.input_size;
  const int G = c.gates();
  CudnnWeights w;
  w.params.assign(static_cast<std::size_t>(G * (u * F + u * u + 2 * u)), 0.0f);
  // cuDNN's gate slot -> Keras's column block: GRU (r, z, h) <- (z, r, h); LSTM i, f, c, o as is.
  auto keras_block = [&](int slot) { return c.is_gru() ? (slot == 0 ? 1 : slot == 1 ? 0 : 2) : slot; };
  std::int64_t offset = 0;
  for (int id = 0; id < 2 * G; ++id) {
    const bool on_input = id < G;
    const Index cols = on_input ? F : u;
    const RowMatrix& src = on_input ? p.kernel : p.recurrent;
    const Index block = keras_block(id % G) * u;
    float* dst = w.params.data() + offset;
    // W[j][i] = K[i][block + j]: cuDNN multiplies (hidden x input) matrices from the left.
    for (Index j = 0; j < u; ++j)
      for (Index i = 0; i < cols; ++i) dst[j * cols + i] = src(i, block + j);
    w.regions.push_back({id, 0, offset, u, cols});
    offset += u * cols;
  }
  for (int id = 0; id < 2 * G; ++id) {
    const bool on_input = id < G;
    const Index block = keras_block(id % G) * u;
    // GRU keeps its input and recurrent biases apart (the recurrent h bias sits inside r*(...));
    // an LSTM has one bias, which Keras too places on the recurrent side.
    const RowVector* src = nullptr;
    if (c.is_gru()) src = on_input ? &p.input_bias : &p.recurrent_bias;
    else if (!on_input) src = &p.input_bias;
    float* dst = w.params.data() + offset;
    if (src && src->size() > 0)
      for (Index j = 0; j < u; ++j) dst[j] = (*src)(block + j);
    w.regions.push_back({id, 1, offset, u, 1});
    offset += u;
  }
  return w;
}

}  // namespace recur::gpu
