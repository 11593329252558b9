// SPDX-License-Identifier: Apache-2.0
// Device functors of the pooling, convolution and padding layers (pooling over time, Conv1D, ZeroPadding1D, Cropping1D, UpSampling1D), written once for nvcc and the host emulator, with the CPU layers' arithmetic.
#pragma once

#include <cmath>
#include <cstdint>

#include "hd.hpp"
#include "recur/gpu_plugin_abi.h"

namespace recur::gpu {

// One output element per call, looping over its window's steps in order, as the CPU layers
// (pooling.cpp) do, so every sum rounds the same. Windows: [o*strides - pad, + pool) clipped to
// [0, T). Layout (B, T, F), or (B, F, T) when channels_first; the output the same with To steps.
struct PoolTime {
  const float* x;
  float* y;
  const uint8_t* mask;  // (B, mask_len) on the device, for the masked kinds
  int64_t T, F, To, pool, strides, pad, mask_len;
  int32_t kind;  // RECUR_GPU_POOL_*
  bool channels_first;
  RECUR_HD void operator()(int64_t i) const {
    int64_t b, o, f;
    if (channels_first) {
      o = i % To;
      f = (i / To) % F;
      b = i / (To * F);
    } else {
      f = i % F;
      o = (i / F) % To;
      b = i / (F * To);
    }
    int64_t lo = o * strides - pad, hi = o * strides - pad + pool;
    if (lo < 0) lo = 0;
    if (hi > T) hi = T;
    const bool max = kind == RECUR_GPU_POOL_MAX, masked = kind == RECUR_GPU_POOL_MASKED_MULTIPLY || kind == RECUR_GPU_POOL_MASKED_SELECT;
    float acc = max ? -INFINITY : 0.0f, count = 0.0f;
    for (int64_t t = lo; t < hi; ++t) {
      const float v = x[channels_first ? (b * F + f) * T + t : (b * T + t) * F + f];
      if (max) {
        acc = acc < v ? v : acc;  // std::max(acc, v)
      } else if (masked) {
        const bool on = mask[b * mask_len + (mask_len == 1 ? 0 : t)] != 0;
        if (kind == RECUR_GPU_POOL_MASKED_MULTIPLY) acc += v * (on ? 1.0f : 0.0f);
        else if (on) acc += v;
        count += on ? 1.0f : 0.0f;
      } else {
        acc += v;
      }
    }
    y[i] = max ? acc : acc / (masked ? count : static_cast<float>(hi - lo));
  }
};

// A grouped 1D convolution (channels_last), one output element (b, t, o) per call: the CPU's
// Conv1D loop adds v * w over the taps, then each tap's input channels of o's group, in that
// order, into a zero; then the bias. Input step of tap kk: t*strides + kk*dilation - pad (taps
// outside [0, T) are the zero padding and add nothing). kernel (k, Cin/groups, Cout).
struct Conv1dTime {
  const float* x;
  const float* w;
  const float* bias;  // (Cout) or null
  float* y;
  int64_t T, cin, cout, k, groups, strides, dilation, pad, To;
  RECUR_HD void operator()(int64_t i) const {
    const int64_t o = i % cout, t = (i / cout) % To, b = i / (cout * To);
    const int64_t cg = cin / groups, fg = cout / groups, g = o / fg;
    float acc = 0.0f;
    for (int64_t kk = 0; kk < k; ++kk) {
      const int64_t src = t * strides + kk * dilation - pad;
      if (src < 0 || src >= T) continue;
      const float* xi = x + (b * T + src) * cin + g * cg;
      const float* wr = w + kk * cg * cout + o;
      for (int64_t c = 0; c < cg; ++c) acc += xi[c] * wr[c * cout];
    }
    if (bias) acc += bias[o];
    y[i] = acc;
  }
};

// Conv1DTranspose (channels_last), one output element (b, t, f) per call. The CPU scatters input
// step u's tap kk (sum over the input channels in order, from zero) into output step
// u*strides + kk*dilation - pad, for u ascending, then kk; the taps landing on t are visited here
// in that same order (u rises as kk falls), so the output's sum rounds the same. kernel
// (k, filters, Cin).
struct Conv1dTransposeTime {
  const float* x;
  const float* w;
  const float* bias;  // (filters) or null
  float* y;
  int64_t T, cin, filters, k, strides, dilation, pad, To;
  RECUR_HD void operator()(int64_t i) const {
    const int64_t f = i % filters, t = (i / filters) % To, b = i / (filters * To);
    float out = 0.0f;
    for (int64_t kk = k - 1; kk >= 0; --kk) {
      const int64_t num = t + pad - kk * dilation;
      if (num < 0 || num % strides != 0 || num / strides >= T) continue;
      const float* xi = x + (b * T + num / strides) * cin;
      const float* wr = w + (kk * filters + f) * cin;
      float acc = 0.0f;
      for (int64_t c = 0; c < cin; ++c) acc += xi[c] * wr[c];
      out += acc;
    }
    if (bias) out += bias[f];
    y[i] = out;
  }
};

struct FillValue {
  float* p;
  float value;
  RECUR_HD void operator()(int64_t i) const { p[i] = value; }
};

}  // namespace recur::gpu
