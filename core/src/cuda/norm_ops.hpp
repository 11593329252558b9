// SPDX-License-Identifier: Apache-2.0
// Device functors of the normalization layers and the activation layers with arguments
// (LayerNormalization, RMSNormalization, UnitNormalization, GroupNormalization, BatchNormalization,
// ReLU, LeakyReLU, ELU, ThresholdedReLU, Softmax, PReLU), written once for nvcc and the host
// emulator, with the CPU layers' arithmetic (core/src/model/layers/normalization.cpp and
// activations.cpp): the same float and double operations in the same order, so the builds without
// contraction round every result as the CPU does.
#pragma once

#include <cmath>
#include <cstdint>

#include "gpu_math.hpp"
#include "hd.hpp"
#include "recur/gpu_plugin_abi.h"

namespace recur::gpu {

// ---- normalize: statistics per group, then one pass per element --------------------------------

// x is (batch, positions, channels); a group is one sample's `per` consecutive channels (channels /
// groups of them) at every position, visited positions outer, channels inner, as the CPU loops.
struct NormLayout {
  int64_t positions, channels, groups, per;
  // The first element of group i (sample i / groups, channel block i % groups).
  RECUR_HD int64_t base(int64_t i) const { return (i / groups) * positions * channels + (i % groups) * per; }
  RECUR_HD int64_t count() const { return positions * per; }
  // The group of element k.
  RECUR_HD int64_t group_of(int64_t k) const {
    return (k / (positions * channels)) * groups + (k % channels) / per;
  }
};

// One thread per group: stats[2*i] and stats[2*i+1] get what the element pass needs (the float
// mean and inverse deviation; or 0 and the scale factor for RMS / unit norm).
struct NormStats {
  const float* x;
  float* stats;
  NormLayout l;
  int32_t kind;
  float eps;
  RECUR_HD void operator()(int64_t i) const {
    const float* g = x + l.base(i);
    float m = 0.0f, f = 0.0f;
    if (kind == RECUR_GPU_NORM_LAYER || kind == RECUR_GPU_NORM_GROUP) {
      // Mean and variance accumulate in double, as the CPU does, then round to float.
      double mean = 0;
      for (int64_t r = 0; r < l.positions; ++r)
        for (int64_t j = 0; j < l.per; ++j) mean += g[r * l.channels + j];
      mean /= static_cast<double>(l.count());
      double var = 0;
      for (int64_t r = 0; r < l.positions; ++r)
        for (int64_t j = 0; j < l.per; ++j) {
          const double d = g[r * l.channels + j] - mean;
          var += d * d;
        }
      var /= static_cast<double>(l.count());
      m = static_cast<float>(mean);
      f = 1.0f / sqrtf(static_cast<float>(var) + eps);
    } else {
      float ss = 0.0f;
      for (int64_t r = 0; r < l.positions; ++r)
        for (int64_t j = 0; j < l.per; ++j) {
          const float v = g[r * l.channels + j];
          ss += v * v;
        }
      if (kind == RECUR_GPU_NORM_RMS) f = 1.0f / sqrtf(ss / static_cast<float>(l.count()) + eps);
      else if (kind == RECUR_GPU_NORM_UNIT_KERAS3) f = fmin_(1.0f / sqrtf(ss), 1e12f);
      else f = 1.0f / sqrtf(fmax_(ss, 1e-12f));
    }
    stats[2 * i] = m;
    stats[2 * i + 1] = f;
  }
};

// One element: its group's statistics with the channel's gamma and beta (NULL: scale / center off).
struct NormApply {
  const float* x;
  float* y;
  const float* stats;
  const float* gamma;
  const float* beta;
  NormLayout l;
  int32_t kind;
  RECUR_HD void operator()(int64_t k) const {
    const int64_t i = l.group_of(k), c = k % l.channels;
    const float m = stats[2 * i], f = stats[2 * i + 1];
    const float v = x[k];
    switch (kind) {
      case RECUR_GPU_NORM_LAYER: {
        const float inv = gamma ? f * gamma[c] : f;
        float res = -m * inv;
        if (beta) res += beta[c];
        y[k] = v * inv + res;
        break;
      }
      case RECUR_GPU_NORM_GROUP: {
        const float inv = gamma ? f * gamma[c] : f;
        const float res = (beta ? beta[c] : 0.0f) - m * inv;
        y[k] = v * inv + res;
        break;
      }
      case RECUR_GPU_NORM_RMS: y[k] = v * f * gamma[c]; break;
      default: y[k] = v * f; break;  // unit norm
    }
  }
};

// ---- per-element ops with a parameter broadcast over the tensor -------------------------------

constexpr int kMaxBroadcastRank = kMaxStridedRank;

// y[k] from x[k] and the parameters at k's broadcast index: sum over axes of index * stride, the
// strides 0 along the axes the parameters do not vary over.
struct BroadcastOp {
  const float* x;
  float* y;
  const float* p;
  const float* q;
  int64_t dims[kMaxBroadcastRank];
  int64_t strides[kMaxBroadcastRank];
  int32_t rank, kind;
  RECUR_HD void operator()(int64_t k) const {
    const int64_t a = strided_offset(k, rank, dims, strides);
    const float v = x[k];
    if (kind == RECUR_GPU_BCAST_AFFINE) y[k] = v * p[a] + q[a];
    else y[k] = fmax_(v, 0.0f) + -p[a] * fmax_(-v, 0.0f);  // PReLU
  }
};

// ---- element-wise activations with arguments -------------------------------------------------

// Keras's relu(x, negative_slope, max_value, threshold) in float32, step for step as ReluParams in
// activations.cpp.
RECUR_HD inline float relu_args(float x, float slope, float threshold, float max_value, bool has_max) {
  if (slope != 0.0f && !has_max && threshold == 0.0f) return x > 0.0f ? x : x * slope;  // leaky_relu
  const float neg = slope != 0.0f ? fmax_(threshold != 0.0f ? -x + threshold : -x, 0.0f) : 0.0f;
  float y;
  bool clip_max = has_max;
  if (threshold != 0.0f) {
    y = x > threshold ? x : 0.0f;
  } else if (has_max && max_value == 6.0f) {
    y = clip(x, 0.0f, 6.0f);
    clip_max = false;
  } else {
    y = fmax_(x, 0.0f);
  }
  if (clip_max) y = clip(y, 0.0f, max_value);
  if (slope != 0.0f) y -= slope * neg;
  return y;
}

struct ArgActivation {
  const float* x;
  float* y;
  int32_t kind, flags;
  float a, b, c;
  RECUR_HD void operator()(int64_t k) const {
    const float v = x[k];
    switch (kind) {
      case RECUR_GPU_ACT_RELU: y[k] = relu_args(v, a, b, c, (flags & RECUR_GPU_ACT_HAS_MAX) != 0); break;
      case RECUR_GPU_ACT_ELU: {
        const float e = v > 0.0f ? v : expm1f(v);
        y[k] = a == 1.0f || v > 0.0f ? e : a * e;
        break;
      }
      default: y[k] = v > a ? v : 0.0f; break;  // thresholded relu
    }
  }
};

// ---- softmax over one axis, with Keras's mask rules ------------------------------------------

// One row: the n values along the axis (or adjacent axes) at (outer o, inner q) of x (outer, n,
// inner), `inner` apart.
// A mask (mask_rows, mask_cols) broadcasts against the input from its last axis (last, prev: the
// input's last two sizes); masked values become -1e9 (or get it added: Keras 2 without
// robust_masking) before the softmax, and Keras 3 zeroes them after.
struct SoftmaxAxis {
  const float* x;
  float* y;
  const uint8_t* mask;
  int64_t n, inner, mask_rows, mask_cols, last, prev;
  int32_t mode;
  bool log_sum_exp;
  RECUR_HD bool keep(int64_t flat) const {
    const int64_t j = flat % last, r = (flat / last) % prev;
    return mask[(mask_rows == 1 ? 0 : r) * mask_cols + (mask_cols == 1 ? 0 : j)] != 0;
  }
  RECUR_HD void operator()(int64_t i) const {
    const int64_t o = i / inner, q = i % inner, first = o * n * inner + q;
    float* row = y + first;
    for (int64_t j = 0; j < n; ++j) {
      const int64_t at = j * inner;
      float v = x[first + at];
      if (mask && !keep(first + at)) v = mode == RECUR_GPU_SOFTMAX_MASK_ADD ? v + -1e9f : -1e9f;
      row[at] = v;
    }
    if (log_sum_exp) {
      float mx = -INFINITY;
      for (int64_t j = 0; j < n; ++j) mx = fmax_(mx, row[j * inner]);
      float sum = 0.0f;
      for (int64_t j = 0; j < n; ++j) {
        row[j * inner] = row[j * inner] - mx;
        sum += expf(row[j * inner]);
      }
      const float lse = logf(sum);
      for (int64_t j = 0; j < n; ++j) row[j * inner] = expf(row[j * inner] - lse);
    } else {
      softmax_row(row, n, inner, false);
    }
    if (mask && mode == RECUR_GPU_SOFTMAX_MASK_REPLACE_ZERO)
      for (int64_t j = 0; j < n; ++j)
        if (!keep(first + j * inner)) row[j * inner] = 0.0f;
  }
};

}  // namespace recur::gpu
