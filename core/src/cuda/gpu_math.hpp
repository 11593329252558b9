// SPDX-License-Identifier: Apache-2.0
// The scalar math of the GPU backend, written once for the device (nvcc) and the host (g++, the
// emulator and the unit tests): every activation of recur::Activation with the formulas and
// thresholds of core/src/activations.cpp, the row-wise ones as serial row functions, the
// per-element GRU/LSTM updates, and the in-order sums of the kernel route's small products. Builds
// use -ffp-contract=off (host) and --fmad=false (device), so each expression rounds as written,
// like the CPU build.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>

#include "hd.hpp"

namespace recur::gpu {

// recur::Activation and recur::HardSigmoid by value (the ABI passes these codes); the unit tests
// check that both enums agree.
enum Act : int32_t {
  kLinear,
  kTanh,
  kSigmoid,
  kHardSigmoid,
  kRelu,
  kRelu6,
  kLeakyRelu,
  kElu,
  kSelu,
  kCelu,
  kSoftplus,
  kSoftsign,
  kExponential,
  kSilu,
  kHardSilu,
  kGelu,
  kMish,
  kLogSigmoid,
  kSparsePlus,
  kSquareplus,
  kTanhShrink,
  kHardTanh,
  kSoftShrink,
  kHardShrink,
  kSparseSigmoid,
  kSoftmax,
  kLogSoftmax,
  kSparsemax,
  kActCount
};
enum HardSigmoidForm : int32_t { kKeras2, kKeras3_0, kKeras3, kHardSigmoidFormCount };

// Softmax-like activations normalise over a row (the units of one gate), so they need a row pass.
RECUR_HD inline bool is_row_activation(int32_t a) { return a == kSoftmax || a == kLogSoftmax || a == kSparsemax; }

// std::min / std::max exactly (which argument a tie or a signed zero returns matters for parity).
RECUR_HD inline float fmin_(float a, float b) { return (b < a) ? b : a; }
RECUR_HD inline float fmax_(float a, float b) { return (a < b) ? b : a; }
// std::min(std::max(x, lo), hi).
RECUR_HD inline float clip(float x, float lo, float hi) { return fmin_(fmax_(x, lo), hi); }

// Eigen's float tanh (generic_fast_tanh_float without FMA), which the CPU backend and TensorFlow's
// CPU kernels use: a 13/6 rational approximation on [-7.905, 7.905], x itself below 4e-4.
RECUR_HD inline float eigen_tanh(float a) {
  const float x = clip(a, -7.90531110763549805f, 7.90531110763549805f);
  if (fabsf(a) < 0.0004f) return x;
  const float x2 = x * x;
  float p = x2 * -2.76076847742355e-16f + 2.00018790482477e-13f;
  p = x2 * p + -8.60467152213735e-11f;
  p = x2 * p + 5.12229709037114e-08f;
  p = x2 * p + 1.48572235717979e-05f;
  p = x2 * p + 6.37261928875436e-04f;
  p = x2 * p + 4.89352455891786e-03f;
  p = x * p;
  float q = x2 * 1.19825839466702e-06f + 1.18534705686654e-04f;
  q = x2 * q + 2.26843463243900e-03f;
  q = x2 * q + 4.89352518554385e-03f;
  return p / q;
}

// Eigen's float logistic (scalar_logistic_op<float> without FMA): a 9/10 rational approximation
// of 1/(1+exp(-x)) - 0.5 shifted up, exp(x) below -9.
RECUR_HD inline float eigen_sigmoid(float a) {
  if (a < -9.0f) return expf(a);
  const float x = fmin_(a, 15.6437711715698242f);
  const float x2 = x * x;
  float p = x2 * 4.37031012579801e-11f + 1.15627324459942e-07f;
  p = x2 * p + 6.08574864600143e-05f;
  p = x2 * p + 8.51377133304701e-03f;
  p = x2 * p + 2.48287947061529e-01f;
  p = x * p;
  float q = x2 * 6.10247389755681e-13f + 5.76102136993427e-09f;
  q = x2 * q + 6.29106785017040e-06f;
  q = x2 * q + 1.70198817374094e-03f;
  q = x2 * q + 1.16817656904453e-01f;
  q = x2 * q + 9.93151921023180e-01f;
  return p / q + 0.5f;
}

// TensorFlow's Softplus kernel thresholds: log(FLT_EPSILON) + 2.
RECUR_HD inline float softplus(float x) {
  const float threshold = static_cast<float>(-15.942385152878742) + 2.0f;
  if (x > -threshold) return x;
  if (x < threshold) return expf(x);
  return log1pf(expf(x));
}

RECUR_HD inline float hard_sigmoid(float x, int32_t form) {
  if (form == kKeras2) {
    float y = x * 0.2f;
    y = y + 0.5f;
    return clip(y, 0.0f, 1.0f);
  }
  if (form == kKeras3_0) {
    float y = x / 6.0f;
    y = y + 0.5f;
    return clip(y, 0.0f, 1.0f);
  }
  return clip(x + 3.0f, 0.0f, 6.0f) / 6.0f;
}

// One element of an element-wise activation (row activations are handled by activate_row).
RECUR_HD inline float activate(int32_t a, int32_t hs, float x) {
  constexpr float kSeluAlpha = 1.6732632423543772848170429916717f;
  constexpr float kSeluScale = 1.0507009873554804934193349852946f;
  switch (a) {
    case kTanh: return eigen_tanh(x);
    case kSigmoid: return eigen_sigmoid(x);
    case kHardSigmoid: return hard_sigmoid(x, hs);
    case kRelu: return x > 0.0f ? x : 0.0f;
    case kRelu6: return clip(x, 0.0f, 6.0f);
    case kLeakyRelu: return x >= 0.0f ? x : 0.2f * x;
    case kElu: return x > 0.0f ? x : expm1f(x);
    case kSelu: return x > 0.0f ? kSeluScale * x : kSeluScale * (kSeluAlpha * expm1f(x));
    case kCelu: return fmax_(x, 0.0f) + fmin_(0.0f, expm1f(x));
    case kSoftplus: return softplus(x);
    case kSoftsign: return x / (1.0f + fabsf(x));
    case kExponential: return expf(x);
    case kSilu: return x * (1.0f / (1.0f + expf(-x)));
    case kHardSilu: return x * hard_sigmoid(x, kKeras3);
    case kGelu: return 0.5f * x * (1.0f + erff(x / 1.41421356237309504880f));
    case kMish: return x * tanhf(softplus(x));
    case kLogSigmoid: return -softplus(-x);
    case kSparsePlus:
      if (x <= -1.0f) return 0.0f;
      if (x >= 1.0f) return x;
      return (x + 1.0f) * (x + 1.0f) / 4.0f;
    case kSquareplus: return (x + sqrtf(x * x + 4.0f)) / 2.0f;
    case kTanhShrink: return x - tanhf(x);
    case kHardTanh: return clip(x, -1.0f, 1.0f);
    case kSoftShrink: return x > 0.5f ? x - 0.5f : (x < -0.5f ? x + 0.5f : 0.0f);
    case kHardShrink: return fabsf(x) > 0.5f ? x : 0.0f;
    case kSparseSigmoid:
      if (x <= -1.0f) return 0.0f;
      if (x >= 1.0f) return 1.0f;
      return 0.5f * (x + 1.0f);
    default: return x;  // linear (row activations never reach here)
  }
}

// softmax / log_softmax of one row of n values `stride` floats apart, as the CPU computes it.
RECUR_HD inline void softmax_row(float* row, int64_t n, int64_t stride, bool log) {
  float mx = -INFINITY;
  for (int64_t j = 0; j < n; ++j) mx = fmax_(mx, row[j * stride]);
  float sum = 0.0f;
  for (int64_t j = 0; j < n; ++j) sum += expf(row[j * stride] - mx);
  if (log) {
    const float lse = logf(sum);
    for (int64_t j = 0; j < n; ++j) row[j * stride] = row[j * stride] - mx - lse;
  } else {
    for (int64_t j = 0; j < n; ++j) row[j * stride] = expf(row[j * stride] - mx) / sum;
  }
}

// Keras 3's TensorFlow-backend sparsemax, as the CPU computes it (support sorted_j - (cumsum_j -
// 1)/j > 0, tau from the sum of the cumulative sums over the support). The descending order is
// walked by selection (largest first, equal values by index) instead of sorting a copy, so a
// device thread needs no scratch memory; the sums see the same values in the same order.
RECUR_HD inline void sparsemax_row(float* row, int64_t n, int64_t stride) {
  float cumsum = 0.0f, support_cumsum = 0.0f, k = 0.0f;
  float prev_v = 0.0f;
  int64_t prev_i = -1;
  for (int64_t j = 0; j < n; ++j) {
    // The next element in (value descending, index ascending) order after (prev_v, prev_i).
    int64_t best = -1;
    float best_v = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
      const float v = row[i * stride];
      const bool after_prev = prev_i < 0 || v < prev_v || (v == prev_v && i > prev_i);
      if (after_prev && (best < 0 || v > best_v)) {
        best = i;
        best_v = v;
      }
    }
    prev_v = best_v;
    prev_i = best;
    cumsum += best_v;
    if (best_v - (cumsum - 1.0f) / static_cast<float>(j + 1) > 0.0f) {
      support_cumsum += cumsum;
      k += 1.0f;
    }
  }
  const float tau = (support_cumsum - 1.0f) / k;
  for (int64_t j = 0; j < n; ++j) row[j * stride] = fmax_(row[j * stride] - tau, 0.0f);
}

// Any activation over one row of n values `stride` floats apart.
RECUR_HD inline void activate_row(int32_t a, int32_t hs, float* row, int64_t n, int64_t stride) {
  if (a == kSoftmax || a == kLogSoftmax) {
    softmax_row(row, n, stride, a == kLogSoftmax);
  } else if (a == kSparsemax) {
    sparsemax_row(row, n, stride);
  } else if (a != kLinear) {
    for (int64_t j = 0; j < n; ++j) row[j * stride] = activate(a, hs, row[j * stride]);
  }
}

// h' = z*h + (1-z)*ĥ, in Keras's association.
RECUR_HD inline float gru_update(float z, float h, float cand) { return z * h + (1.0f - z) * cand; }
// c' = f*c + i*g.
RECUR_HD inline float lstm_cell(float f, float c, float i, float g) { return f * c + i * g; }
// h' = o * act(c').
RECUR_HD inline float lstm_hidden(float o, float act_c) { return o * act_c; }

// acc[g] = acc[g] + a[k] * m[k*ld + col[g]] over k in order, the product rounded before the sum (no
// fused multiply-add: the builds keep contraction off). That is how TensorFlow's CPU matrix product
// rounds a Keras layer's small products, and measurably the closest to Keras on the parity cases
// (an LSTM with a linear recurrent activation, whose errors grow with every step: 3.8e-6 from
// Keras this way, 6.1e-5 with FMA, 7.6e-5 when summed exactly in double). Loads go ahead of the
// sums in groups, so a device thread has several in flight rather than one per term.
template <int G>
RECUR_HD inline void ordered_dots(const float* a, int64_t n, const float* m, int64_t ld, const int64_t* col,
                                  float* acc, int64_t k = 0) {
  for (; k < n; ++k)
    for (int g = 0; g < G; ++g) acc[g] = acc[g] + a[k] * m[k * ld + col[g]];
}

// Two such sums at once (x@K and h@U of one step), each in its own order: their loads go out
// together, 16 terms of each gate column at a time, so a device thread waits on memory once per 16
// terms of both instead of once per term.
template <int G>
RECUR_HD inline void ordered_dots2(const float* a1, int64_t n1, const float* m1, const float* a2, int64_t n2,
                                   const float* m2, int64_t ld, const int64_t* col, float* acc1, float* acc2) {
  constexpr int kGroup = 16;
  const int64_t both = n1 < n2 ? n1 : n2;
  int64_t k = 0;
  for (; k + kGroup <= both; k += kGroup) {
    float a1v[kGroup], a2v[kGroup], m1v[G][kGroup], m2v[G][kGroup];
    for (int q = 0; q < kGroup; ++q) {
      a1v[q] = a1[k + q];
      a2v[q] = a2[k + q];
      for (int g = 0; g < G; ++g) {
        m1v[g][q] = m1[(k + q) * ld + col[g]];
        m2v[g][q] = m2[(k + q) * ld + col[g]];
      }
    }
    for (int q = 0; q < kGroup; ++q)
      for (int g = 0; g < G; ++g) {
        acc1[g] = acc1[g] + a1v[q] * m1v[g][q];
        acc2[g] = acc2[g] + a2v[q] * m2v[g][q];
      }
  }
  ordered_dots<G>(a1, n1, m1, ld, col, acc1, k);
  ordered_dots<G>(a2, n2, m2, ld, col, acc2, k);
}

// One sum, its loads in groups as above.
template <int G>
RECUR_HD inline void ordered_dots1(const float* a, int64_t n, const float* m, int64_t ld, const int64_t* col,
                                   float* acc) {
  constexpr int kGroup = 16;
  int64_t k = 0;
  for (; k + kGroup <= n; k += kGroup) {
    float av[kGroup], mv[G][kGroup];
    for (int q = 0; q < kGroup; ++q) {
      av[q] = a[k + q];
      for (int g = 0; g < G; ++g) mv[g][q] = m[(k + q) * ld + col[g]];
    }
    for (int q = 0; q < kGroup; ++q)
      for (int g = 0; g < G; ++g) acc[g] = acc[g] + av[q] * mv[g][q];
  }
  ordered_dots<G>(a, n, m, ld, col, acc, k);
}

// a (op) b for a two-operand RECUR_GPU_OP_* (binary, elementwise): float operations as the CPU's
// merges and op nodes compute them; AVERAGE adds (its caller divides).
RECUR_HD inline float pair_op(int32_t op, float a, float b) {
  switch (op) {
    case RECUR_GPU_OP_ADD: case RECUR_GPU_OP_AVERAGE: return a + b;
    case RECUR_GPU_OP_SUB: return a - b;
    case RECUR_GPU_OP_MUL: return a * b;
    case RECUR_GPU_OP_DIV: return a / b;
    case RECUR_GPU_OP_MAX: return a < b ? b : a;
    case RECUR_GPU_OP_MIN: return b < a ? b : a;
    case RECUR_GPU_OP_NOT_EQUAL: return a != b ? 1.0f : 0.0f;
    case RECUR_GPU_OP_EQUAL: return a == b ? 1.0f : 0.0f;
    case RECUR_GPU_OP_GREATER: return a > b ? 1.0f : 0.0f;
    case RECUR_GPU_OP_GREATER_EQUAL: return a >= b ? 1.0f : 0.0f;
    case RECUR_GPU_OP_LESS: return a < b ? 1.0f : 0.0f;
    case RECUR_GPU_OP_LESS_EQUAL: return a <= b ? 1.0f : 0.0f;
    case RECUR_GPU_OP_LOGICAL_AND: return (a != 0.0f) && (b != 0.0f) ? 1.0f : 0.0f;
    case RECUR_GPU_OP_LOGICAL_OR: return (a != 0.0f) || (b != 0.0f) ? 1.0f : 0.0f;
    default: return (a != 0.0f) != (b != 0.0f) ? 1.0f : 0.0f;  // LOGICAL_XOR
  }
}

// The offset of flat element k of a row-major tensor of `rank` sizes `dims`: the sum over axes of
// k's index along the axis times `strides` (broadcast parameters, strided reads).
constexpr int kMaxStridedRank = RECUR_GPU_MAX_RANK;
RECUR_HD inline int64_t strided_offset(int64_t k, int32_t rank, const int64_t* dims, const int64_t* strides) {
  int64_t off = 0;
  for (int32_t d = rank; d-- > 0;) {
    off += (k % dims[d]) * strides[d];
    k /= dims[d];
  }
  return off;
}

}  // namespace recur::gpu
