// SPDX-License-Identifier: Apache-2.0
// Device functors of the tensor layers that move, mask or multiply whole tensors (Permute and
// slices, Masking, Dot), written once for nvcc and the host emulator with the CPU layers'
// arithmetic (core/src/model/layers/): the same float operations in the same order.
#pragma once

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
