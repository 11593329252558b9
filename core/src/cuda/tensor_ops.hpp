// SPDX-License-Identifier: Apache-2.0
// Device functors of the tensor layers that move, mask, combine or multiply whole tensors (Permute
// and slices, Masking, merges and Keras 3's op nodes, reductions, Dot), written once for nvcc and
// the host emulator with the CPU layers' arithmetic (core/src/model/layers/): the same float
// operations in the same order.
#pragma once

#include <cmath>
#include <cstdint>

#include "gpu_math.hpp"
#include "hd.hpp"

namespace recur::gpu {

// y[k] = x[the offset of k's index along each axis times that axis's stride].
struct GatherStrided {
  const float* x;
  float* y;
  int64_t dims[kMaxStridedRank];
  int64_t strides[kMaxStridedRank];
  int32_t rank;
  RECUR_HD void operator()(int64_t k) const { y[k] = x[strided_offset(k, rank, dims, strides)]; }
};

// Masking: one thread per row, keep[r] = whether any float differs from the mask value.
struct MaskRowFlags {
  const float* x;
  uint8_t* keep;
  int64_t width;
  float value;
  RECUR_HD void operator()(int64_t r) const {
    bool any = false;
    for (int64_t j = 0; j < width; ++j) any = any || x[r * width + j] != value;
    keep[r] = any ? 1 : 0;
  }
};

// Masking: the rows not kept become zeros (Keras multiplies by the mask).
struct MaskRowValues {
  const float* x;
  float* y;
  const uint8_t* keep;
  int64_t width;
  RECUR_HD void operator()(int64_t k) const { y[k] = keep[k / width] ? x[k] : 0.0f; }
};

// An elementwise op over broadcast inputs, folded left to right (recur_gpu_elementwise), with the
// CPU's merge and op-node arithmetic (merging.cpp, keras_ops.cpp).
struct ElementwiseFold {
  static constexpr int kMaxInputs = RECUR_GPU_MAX_FOLD_INPUTS;
  const float* in[kMaxInputs];
  float constant[kMaxInputs];
  int64_t strides[kMaxInputs][kMaxStridedRank];
  const uint8_t* mask[kMaxInputs];  // device bytes per (i_0, i_1), or null
  int64_t dims[kMaxStridedRank];
  int32_t rank, n, op;
  bool masked;
  float* out;

  RECUR_HD static float unary(int32_t op, float a) {
    switch (op) {
      case RECUR_GPU_OP_LOGICAL_NOT: return a == 0.0f ? 1.0f : 0.0f;
      case RECUR_GPU_OP_ABS: return fabsf(a);
      case RECUR_GPU_OP_NEGATIVE: return -a;
      case RECUR_GPU_OP_SQUARE: return a * a;
      case RECUR_GPU_OP_SQRT: return sqrtf(a);
      case RECUR_GPU_OP_TO_BOOL: return a != 0.0f ? 1.0f : 0.0f;
      case RECUR_GPU_OP_TRUNC: return truncf(a);
      default: return a;  // COPY
    }
  }
  RECUR_HD float at(int k, int64_t e) const {
    return in[k] ? in[k][strided_offset(e, rank, dims, strides[k])] : constant[k];
  }
  // Input k's mask at element e: -1 unmasked, else 0 or 1.
  RECUR_HD int valid(int k, int64_t e) const {
    if (!mask[k]) return -1;
    int64_t bt = e;  // i_0 * dims[1] + i_1: e without the axes after the first two
    for (int32_t d = rank; d-- > 2;) bt /= dims[d];
    return mask[k][bt] ? 1 : 0;
  }
  RECUR_HD void operator()(int64_t e) const {
    if (n == 1) {
      out[e] = unary(op, at(0, e));
      return;
    }
    float acc = at(0, e);
    if (!masked) {
      for (int k = 1; k < n; ++k) acc = pair_op(op, acc, at(k, e));
    } else {
      // Keras 3's _apply_merge_op_and_or_mask, as MergeOp::forward computes it.
      const bool mul = op == RECUR_GPU_OP_MUL;
      int acc_valid = valid(0, e);
      bool all_masked = acc_valid >= 0, any_valid = acc_valid == 1;
      if (mul && acc_valid == 0) acc = 1.0f;
      for (int k = 1; k < n; ++k) {
        float b = at(k, e);
        const int bv = valid(k, e);
        all_masked = all_masked && bv >= 0;
        any_valid = any_valid || bv == 1;
        if (mul) {
          if (bv == 0) b = 1.0f;
        } else {
          if (bv == 0) b = acc;
          if (acc_valid == 0) acc = b;
          acc_valid = bv >= 0 && acc_valid >= 0 ? (bv || acc_valid) : -1;
        }
        acc = pair_op(op, acc, b);
      }
      if (mul && all_masked && !any_valid) acc = 0.0f;
    }
    if (op == RECUR_GPU_OP_AVERAGE) acc = acc / static_cast<float>(n);
    out[e] = acc;
  }
};

// A reduction over the axes in `axes` (bit d: axis d): one thread per output element, folding its
// inputs in row-major order of the reduced axes, as the CPU's reduce_values visits them.
struct Reduce {
  const float* x;
  float* y;
  int64_t kept_size[kMaxStridedRank], kept_stride[kMaxStridedRank];
  int64_t red_size[kMaxStridedRank], red_stride[kMaxStridedRank];
  int32_t kept, reduced, kind;
  int64_t count;  // the product of the reduced sizes
  RECUR_HD void operator()(int64_t e) const {
    const int64_t base = strided_offset(e, kept, kept_size, kept_stride);
    float acc = kind == RECUR_GPU_REDUCE_ALL ? 1.0f
                : kind == RECUR_GPU_REDUCE_MAX ? -INFINITY
                : kind == RECUR_GPU_REDUCE_MIN ? INFINITY
                                               : 0.0f;
    for (int64_t s = 0; s < count; ++s) {
      const float v = x[base + strided_offset(s, reduced, red_size, red_stride)];
      switch (kind) {
        case RECUR_GPU_REDUCE_ANY: acc = (acc != 0.0f) || (v != 0.0f) ? 1.0f : 0.0f; break;
        case RECUR_GPU_REDUCE_ALL: acc = (acc != 0.0f) && (v != 0.0f) ? 1.0f : 0.0f; break;
        case RECUR_GPU_REDUCE_MAX: acc = acc < v ? v : acc; break;
        case RECUR_GPU_REDUCE_MIN: acc = v < acc ? v : acc; break;
        default: acc += v;
      }
    }
    if (kind == RECUR_GPU_REDUCE_MEAN) acc = acc / static_cast<float>(count);
    y[e] = acc;
  }
};

// Dot: out[b, i, j, p, q] = the float sum over k, in order, of x[b, i, k, j] * y[b, p, k, q].
struct DotBatched {
  const float* x;
  const float* y;
  float* out;
  int64_t xo, k, xi, yo, yi;
  RECUR_HD void operator()(int64_t n) const {
    const int64_t q = n % yi, p = (n / yi) % yo, j = (n / (yi * yo)) % xi, i = (n / (yi * yo * xi)) % xo,
                  b = n / (yi * yo * xi * xo);
    const float* xr = x + ((b * xo + i) * k) * xi + j;
    const float* yr = y + ((b * yo + p) * k) * yi + q;
    float acc = 0.0f;
    for (int64_t c = 0; c < k; ++c) acc += xr[c * xi] * yr[c * yi];
    out[n] = acc;
  }
};

// EinsumDense: one thread per output element, summing over the other letters in row-major order.
struct Einsum {
  static constexpr int kMaxLetters = RECUR_GPU_MAX_EINSUM_LETTERS;
  const float* x;
  const float* kernel;
  const float* bias;
  float* y;
  int64_t size[kMaxLetters], sx[kMaxLetters], sk[kMaxLetters], sb[kMaxLetters];
  int32_t letters, out_letters;
  int64_t summed;  // the product of the summed letters' sizes
  RECUR_HD void operator()(int64_t e) const {
    int64_t ox = 0, ok = 0, ob = 0, rest = e;
    for (int32_t j = out_letters; j-- > 0;) {
      const int64_t i = rest % size[j];
      rest /= size[j];
      ox += i * sx[j], ok += i * sk[j], ob += i * sb[j];
    }
    float acc = 0.0f;
    for (int64_t s = 0; s < summed; ++s) {
      int64_t px = ox, pk = ok, r = s;
      for (int32_t j = letters; j-- > out_letters;) {
        const int64_t i = r % size[j];
        r /= size[j];
        px += i * sx[j], pk += i * sk[j];
      }
      acc += x[px] * kernel[pk];
    }
    y[e] = bias ? acc + bias[ob] : acc;
  }
};

}  // namespace recur::gpu
