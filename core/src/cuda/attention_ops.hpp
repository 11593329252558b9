// SPDX-License-Identifier: Apache-2.0
// Device functors of the attention layers (Attention, AdditiveAttention, MultiHeadAttention),
// written once for nvcc and the host emulator with the CPU layers' arithmetic
// (core/src/model/layers/attention.cpp): the same serial sums in double, in the same order, so that
// a build without contraction rounds every result as the CPU does.
#pragma once

#include <cmath>
#include <cstdint>

#include "hd.hpp"
#include "recur/gpu_plugin_abi.h"

namespace recur::gpu {

// y[r, o] = float(sum over i of double(x[r, i]) * w[i, o]) (+ b[o]): one thread per element.
struct ProjectRows {
  const float* x;
  const float* w;
  const float* b;
  float* y;
  int64_t c, n, y_stride;
  RECUR_HD void operator()(int64_t k) const {
    const int64_t r = k / n, o = k % n;
    const float* xr = x + r * c;
    double acc = 0;
    for (int64_t i = 0; i < c; ++i) acc += double(xr[i]) * w[i * n + o];
    float v = static_cast<float>(acc);
    if (b) v += b[o];
    y[r * y_stride + o] = v;
  }
};

// What the three passes of one call share: the call's arguments, with the host masks replaced by
// their device copies.
struct AttentionCall {
  recur_gpu_attention a;
  const uint8_t* q_mask;
  const uint8_t* v_mask;

  RECUR_HD bool has(int32_t flag) const { return (a.flags & flag) != 0; }
  RECUR_HD bool query_kept(int64_t b, int64_t i) const { return !q_mask || q_mask[b * a.q_steps + i] != 0; }
  // Whether logit j of query i of batch row b is kept (every mask and the causal rule).
  RECUR_HD bool kept(int64_t b, int64_t i, int64_t j) const {
    if (v_mask && !v_mask[b * a.v_steps + j]) return false;
    if (has(RECUR_GPU_ATTN_CAUSAL) && j > i + (has(RECUR_GPU_ATTN_CAUSAL_LAST) ? a.v_steps - a.q_steps : 0)) return false;
    if (a.attention_mask && a.attention_mask[(b * a.q_steps + i) * a.v_steps + j] == 0.0f) return false;
    return !has(RECUR_GPU_ATTN_QUERY_MASKS_SCORES) || query_kept(b, i);
  }
  RECUR_HD float* row(int64_t b, int64_t h, int64_t i) const { return a.scores + ((b * a.heads + h) * a.q_steps + i) * a.v_steps; }
};

// One thread per logit (b, h, i, j), written to the scores.
struct AttentionLogits {
  AttentionCall call;
  RECUR_HD void operator()(int64_t k) const {
    const recur_gpu_attention& a = call.a;
    const int64_t j = k % a.v_steps, i = (k / a.v_steps) % a.q_steps, h = (k / (a.v_steps * a.q_steps)) % a.heads,
                  b = k / (a.v_steps * a.q_steps * a.heads);
    const float* q = a.query + (b * a.q_steps + i) * a.query_stride + h * a.key_dim;
    const float* kj = a.key + (b * a.v_steps + j) * a.key_stride + h * a.key_dim;
    double acc = 0;
    float x;
    if (a.score == RECUR_GPU_ATTN_ADDITIVE) {
      for (int64_t c = 0; c < a.key_dim; ++c) acc += double(a.feature_scale[c] * tanhf(q[c] + kj[c]));
      x = static_cast<float>(acc);
    } else if (a.score == RECUR_GPU_ATTN_CONCAT) {
      const bool scaled = call.has(RECUR_GPU_ATTN_SCALE_LOGITS);
      for (int64_t c = 0; c < a.key_dim; ++c) {
        const float s = q[c] + kj[c];
        acc += tanhf(scaled ? a.scale * s : s);
      }
      x = a.concat_weight * static_cast<float>(acc);
    } else {
      const bool pre = call.has(RECUR_GPU_ATTN_PRESCALE_QUERY);
      for (int64_t c = 0; c < a.key_dim; ++c) acc += double(pre ? q[c] * a.scale : q[c]) * kj[c];
      x = static_cast<float>(acc);
      if (call.has(RECUR_GPU_ATTN_SCALE_LOGITS)) x *= a.scale;
    }
    if (!call.kept(b, i, j)) x = call.has(RECUR_GPU_ATTN_REPLACE_MASKED) ? -1.0e9f : x - 1.0e9f;
    call.row(b, h, i)[j] = x;
  }
};

// One thread per row (b, h, i): the softmax in double, then the masked weights zeroed if asked.
struct AttentionSoftmax {
  AttentionCall call;
  RECUR_HD void operator()(int64_t k) const {
    const recur_gpu_attention& a = call.a;
    const int64_t i = k % a.q_steps, h = (k / a.q_steps) % a.heads, b = k / (a.q_steps * a.heads);
    float* x = call.row(b, h, i);
    const int64_t n = a.v_steps;
    if (n == 0) return;
    double m = x[0];
    for (int64_t j = 1; j < n; ++j) m = m < double(x[j]) ? double(x[j]) : m;  // std::max's order
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += exp(double(x[j]) - m);
    for (int64_t j = 0; j < n; ++j) x[j] = static_cast<float>(exp(double(x[j]) - m) / sum);
    if (call.has(RECUR_GPU_ATTN_ZERO_MASKED))
      for (int64_t j = 0; j < n; ++j)
        if (!call.kept(b, i, j)) x[j] = 0.0f;
  }
};

// One thread per output element (b, i, h, c): the weights times the values, summed over the steps.
struct AttentionOutput {
  AttentionCall call;
  RECUR_HD void operator()(int64_t k) const {
    const recur_gpu_attention& a = call.a;
    const int64_t c = k % a.value_dim, h = (k / a.value_dim) % a.heads, i = (k / (a.value_dim * a.heads)) % a.q_steps,
                  b = k / (a.value_dim * a.heads * a.q_steps);
    float* out = a.output + (b * a.q_steps + i) * a.output_stride + h * a.value_dim + c;
    if (!call.has(RECUR_GPU_ATTN_QUERY_MASKS_SCORES) && !call.query_kept(b, i)) {
      *out = 0.0f;  // Keras zeroes a masked query's output
      return;
    }
    const float* w = call.row(b, h, i);
    const float* v = a.value + b * a.v_steps * a.value_stride + h * a.value_dim + c;
    double acc = 0;
    for (int64_t j = 0; j < a.v_steps; ++j) acc += double(w[j]) * v[j * a.value_stride];
    *out = static_cast<float>(acc);
  }
};

}  // namespace recur::gpu
