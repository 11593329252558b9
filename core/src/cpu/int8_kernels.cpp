// SPDX-License-Identifier: Apache-2.0
// The int8 GEMM (opt-in reduced precision), compiled once per instruction set like
// gemm_kernels.cpp, and once more with AVX-512 VNNI on x86-64 or with the dot-product extension on
// ARM64 (each chosen at run time when the CPU has it).
// Weights: int8, symmetric, one scale per output column. Activations: each row of a quantized per
// call to unsigned integers with its own scale and zero point; the zero point comes back out
// through the weights' column sums:  sum_k (q_a - zp) w = sum_k q_a w - zp * colsum(w).
// The dot products of four k at once:
//   AVX-512 VNNI: vpdpbusd, activations u8 (0..255);
//   AVX-512BW / AVX2: vpmaddubsw + vpmaddwd. vpmaddubsw adds two u8*s8 products into int16 with
//     saturation: with activations in 0..127 and weights in -127..127 two products are at most
//     2 * 127 * 127 = 32258 < 32767, so nothing saturates (activations lose one bit instead);
//   ARM64 dot product (sdot): s8*s8 only, so activations in 0..127 (u7) to be valid s8;
//   otherwise: portable vector code (plain integer multiply-adds; NEON without sdot too).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#endif
#if defined(__ARM_FEATURE_DOTPROD)
#include <arm_neon.h>
#endif

#include "cpu/kernel_sets.hpp"

namespace recur {
namespace cpu {
namespace RECUR_ISA {
namespace {

#if defined(__AVX512F__)
constexpr int W = 16;
#elif defined(__AVX__)
constexpr int W = 8;
#else
constexpr int W = 4;
#endif
constexpr int NR = 2 * W;

#if defined(__AVX512VNNI__)
constexpr int QMAX = 255;
constexpr const char* kPath = "AVX-512 VNNI vpdpbusd, activations u8";
constexpr int MR = 6;
#elif defined(__AVX512BW__)
constexpr int QMAX = 127;
constexpr const char* kPath = "AVX-512BW vpmaddubsw + vpmaddwd, activations u7 (no int16 saturation)";
constexpr int MR = 6;
#elif defined(__AVX2__)
constexpr int QMAX = 127;
constexpr const char* kPath = "AVX2 vpmaddubsw + vpmaddwd, activations u7 (no int16 saturation)";
constexpr int MR = 4;
#elif defined(__ARM_FEATURE_DOTPROD)
constexpr int QMAX = 127;
constexpr const char* kPath = "NEON sdot (dot product), activations u7";
// 32 vector registers, as with AVX-512: 6 rows x 2 accumulators fit beside the weights.
constexpr int MR = 6;
#else
constexpr int QMAX = 255;
constexpr const char* kPath = "portable integer multiply-adds, activations u8";
constexpr int MR = 4;
#endif
constexpr KIndex MC = 48;

typedef std::int32_t VI __attribute__((vector_size(W * sizeof(std::int32_t))));
typedef float VF __attribute__((vector_size(W * sizeof(float))));

inline VI loadi(const void* p) {
  VI v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline VF loadf(const float* p) {
  VF v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void storef(float* p, VF v) { std::memcpy(p, &v, sizeof v); }
inline VI splati(std::int32_t x) { return VI{} + x; }
inline VF splatf(float x) { return VF{} + x; }

// acc + the dot products of the 4 u8 in each lane of a with the 4 s8 in the same lane of w.
inline VI dot4(VI acc, VI a, VI w) {
#if defined(__AVX512VNNI__)
  return reinterpret_cast<VI>(_mm512_dpbusd_epi32(reinterpret_cast<__m512i>(acc), reinterpret_cast<__m512i>(a),
                                                  reinterpret_cast<__m512i>(w)));
#elif defined(__AVX512BW__)
  const __m512i pairs = _mm512_maddubs_epi16(reinterpret_cast<__m512i>(a), reinterpret_cast<__m512i>(w));
  return acc + reinterpret_cast<VI>(_mm512_madd_epi16(pairs, _mm512_set1_epi16(1)));
#elif defined(__AVX2__)
  const __m256i pairs = _mm256_maddubs_epi16(reinterpret_cast<__m256i>(a), reinterpret_cast<__m256i>(w));
  return acc + reinterpret_cast<VI>(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
#elif defined(__ARM_FEATURE_DOTPROD)
  // a's bytes are at most QMAX = 127, so reading them as s8 changes nothing.
  return reinterpret_cast<VI>(
      vdotq_s32(reinterpret_cast<int32x4_t>(acc), reinterpret_cast<int8x16_t>(a), reinterpret_cast<int8x16_t>(w)));
#else
  // Sign-extend each byte of w by shifts; the u8 of a likewise, zero-extended.
  const VI w0 = (w << 24) >> 24, w1 = (w << 16) >> 24, w2 = (w << 8) >> 24, w3 = w >> 24;
  const VI a0 = a & 0xff, a1 = (a >> 8) & 0xff, a2 = (a >> 16) & 0xff, a3 = (a >> 24) & 0xff;
  return acc + a0 * w0 + a1 * w1 + a2 * w2 + a3 * w3;
#endif
}

void pack_i8(const float* b, KIndex ldb, KIndex k, KIndex n, std::int8_t* dst, float* scales, std::int32_t* colsums) {
  const KIndex panels = (n + NR - 1) / NR, k4 = (k + 3) / 4;
  for (KIndex p = 0; p < panels; ++p)
    for (KIndex j = 0; j < NR; ++j) {
      const KIndex col = p * NR + j;
      float amax = 0.0f;
      if (col < n)
        for (KIndex kk = 0; kk < k; ++kk) amax = std::fmax(amax, std::fabs(b[kk * ldb + col]));
      // A non-finite weight makes the column's outputs NaN, as float32 would make them non-finite.
      const float scale = !std::isfinite(amax) ? NAN : amax > 0.0f ? amax / 127.0f : 1.0f;
      const float inv = amax > 0.0f && std::isfinite(amax) ? 127.0f / amax : 0.0f;
      std::int32_t sum = 0;
      for (KIndex g = 0; g < k4; ++g)
        for (int t = 0; t < 4; ++t) {
          const KIndex kk = g * 4 + t;
          std::int8_t q = 0;
          if (col < n && kk < k) {
            const float v = std::nearbyint(b[kk * ldb + col] * inv);
            q = static_cast<std::int8_t>(v > 127.0f ? 127 : v < -127.0f ? -127 : v);
          }
          dst[(p * k4 + g) * NR * 4 + j * 4 + t] = q;
          sum += q;
        }
      scales[col] = scale;
      colsums[col] = sum;
    }
}

// Each row of a as QMAX-level unsigned integers (k rounded up to 4, padded with zeros, which meet
// zero weights): the row's scale and zero point. A row holding NaN or infinity gets a NaN scale,
// so its outputs are NaN. Vectorised: at a few operations per element this is not small next to
// the integer GEMM of a single step.
void quantize_rows(KIndex m, KIndex k, const float* a, KIndex lda, std::uint8_t* q, KIndex ldq, float* scale,
                   float* zero) {
  // x + 1.5 * 2^23 - 1.5 * 2^23 rounds x to the nearest integer, ties to even, for |x| < 2^22.
  const float magic = 12582912.0f;
  typedef std::int32_t VQ __attribute__((vector_size(W * sizeof(std::int32_t))));
  for (KIndex r = 0; r < m; ++r) {
    const float* x = a + r * lda;
    VF vlo = VF{}, vhi = VF{}, vnan = VF{};
    KIndex kk = 0;
    for (; kk + W <= k; kk += W) {
      const VF v = loadf(x + kk);
      vlo = v < vlo ? v : vlo;
      vhi = v > vhi ? v : vhi;
      vnan += v * 0.0f;  // NaN once any element is NaN or infinite
    }
    float lo = 0.0f, hi = 0.0f, nan = 0.0f;
    for (int l = 0; l < W; ++l) {
      lo = vlo[l] < lo ? vlo[l] : lo;
      hi = vhi[l] > hi ? vhi[l] : hi;
      nan += vnan[l];
    }
    for (; kk < k; ++kk) {
      lo = x[kk] < lo ? x[kk] : lo;
      hi = x[kk] > hi ? x[kk] : hi;
      nan += x[kk] * 0.0f;
    }
    std::uint8_t* qr = q + r * ldq;
    const float range = hi - lo;
    if (nan != 0.0f || !(range > 0.0f) || !std::isfinite(range)) {
      std::memset(qr, 0, static_cast<std::size_t>(ldq));
      scale[r] = nan == 0.0f && range == 0.0f ? 1.0f : NAN;  // an all-zero row: q = 0, zero point 0
      zero[r] = 0.0f;
      continue;
    }
    const float inv = QMAX / range;
    float zp = (-lo * inv + magic) - magic;
    zp = zp < 0.0f ? 0.0f : zp > QMAX ? QMAX : zp;
    const VF vinv = splatf(inv), vzp = splatf(zp), vmagic = splatf(magic), vmax = splatf(float(QMAX)), vzero = VF{};
    kk = 0;
    for (; kk + W <= k; kk += W) {
      VF v = ((loadf(x + kk) * vinv + vmagic) - vmagic) + vzp;
      v = v < vzero ? vzero : v;
      v = v > vmax ? vmax : v;
      const VQ iv = __builtin_convertvector(v, VQ);
      for (int l = 0; l < W; ++l) qr[kk + l] = static_cast<std::uint8_t>(iv[l]);
    }
    for (; kk < k; ++kk) {
      float v = ((x[kk] * inv + magic) - magic) + zp;
      v = v < 0.0f ? 0.0f : v > QMAX ? QMAX : v;
      qr[kk] = static_cast<std::uint8_t>(v);
    }
    for (; kk < ldq; ++kk) qr[kk] = 0;
    scale[r] = range / QMAX;
    zero[r] = zp;
  }
}

// c[R rows, NP panels] = dequantized (qa[R, k4 groups] @ panels) (+ bias).
template <int R, int NP>
inline void tile(KIndex k4, const std::uint8_t* qa, KIndex ldq, const float* sa, const float* za,
                 const std::int8_t* bp, KIndex pstride, const float* scales, const std::int32_t* colsums, float* c,
                 KIndex ldc, const float* bias) {
  VI acc0[R][NP], acc1[R][NP];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < NP; ++q) acc0[r][q] = acc1[r][q] = VI{};
  for (KIndex g = 0; g < k4; ++g) {
    VI w0[NP], w1[NP];
#pragma GCC unroll 4
    for (int q = 0; q < NP; ++q) {
      w0[q] = loadi(bp + q * pstride + g * NR * 4);
      w1[q] = loadi(bp + q * pstride + g * NR * 4 + W * 4);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      std::int32_t four;
      std::memcpy(&four, qa + r * ldq + g * 4, sizeof four);
      const VI ar = splati(four);
#pragma GCC unroll 4
      for (int q = 0; q < NP; ++q) {
        acc0[r][q] = dot4(acc0[r][q], ar, w0[q]);
        acc1[r][q] = dot4(acc1[r][q], ar, w1[q]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
    const VF s = splatf(sa[r]), z = splatf(za[r]);
#pragma GCC unroll 4
    for (int q = 0; q < NP; ++q)
      for (int half = 0; half < 2; ++half) {
        const KIndex off = q * NR + half * W;
        const VI acc = half ? acc1[r][q] : acc0[r][q];
        const VF cs = __builtin_convertvector(loadi(colsums + off), VF);
        VF v = (__builtin_convertvector(acc, VF) - z * cs) * (s * loadf(scales + off));
        if (bias) v = v + loadf(bias + off);
        storef(c + r * ldc + off, v);
      }
  }
}

template <int R, int NP>
void panels_of(KIndex k4, const std::uint8_t* qa, KIndex ldq, const float* sa, const float* za,
               const std::int8_t* packed, KIndex pstride, const float* scales, const std::int32_t* colsums,
               KIndex panels, float* c, KIndex ldc, const float* bias) {
  KIndex p = 0;
  for (; p + NP <= panels; p += NP)
    tile<R, NP>(k4, qa, ldq, sa, za, packed + p * pstride, pstride, scales + p * NR, colsums + p * NR, c + p * NR,
                ldc, bias ? bias + p * NR : nullptr);
  for (; p < panels; ++p)
    tile<R, 1>(k4, qa, ldq, sa, za, packed + p * pstride, pstride, scales + p * NR, colsums + p * NR, c + p * NR, ldc,
               bias ? bias + p * NR : nullptr);
}

// Fewer than MR rows at the end of a block.
void rest_rows(KIndex rows, KIndex k4, const std::uint8_t* qa, KIndex ldq, const float* sa, const float* za,
               const std::int8_t* bp, KIndex pstride, const float* scales, const std::int32_t* colsums, float* c,
               KIndex ldc, const float* bias) {
  switch (rows) {
    case 1: tile<1, 1>(k4, qa, ldq, sa, za, bp, pstride, scales, colsums, c, ldc, bias); break;
    case 2: tile<2, 1>(k4, qa, ldq, sa, za, bp, pstride, scales, colsums, c, ldc, bias); break;
    case 3: tile<3, 1>(k4, qa, ldq, sa, za, bp, pstride, scales, colsums, c, ldc, bias); break;
    case 4: tile<4, 1>(k4, qa, ldq, sa, za, bp, pstride, scales, colsums, c, ldc, bias); break;
    default: tile<5, 1>(k4, qa, ldq, sa, za, bp, pstride, scales, colsums, c, ldc, bias); break;
  }
}

void gemm_i8q(KIndex m, KIndex k, const std::uint8_t* qa, KIndex ldq, const float* sa, const float* za,
              const std::int8_t* packed, const float* scales, const std::int32_t* colsums, KIndex panels, float* c,
              KIndex ldc, const float* bias) {
  if (m <= 0 || panels <= 0) return;
  const KIndex k4 = (k + 3) / 4, pstride = k4 * 4 * NR;
  if (m == 1) return panels_of<1, 4>(k4, qa, ldq, sa, za, packed, pstride, scales, colsums, panels, c, ldc, bias);
  if (m == 2) return panels_of<2, 2>(k4, qa, ldq, sa, za, packed, pstride, scales, colsums, panels, c, ldc, bias);
  for (KIndex m0 = 0; m0 < m; m0 += MC) {
    const KIndex mb = m - m0 < MC ? m - m0 : MC;
    const KIndex full = mb - mb % MR, rest = mb - full;
    for (KIndex p = 0; p < panels; ++p) {
      const std::int8_t* bp = packed + p * pstride;
      const float* pb = bias ? bias + p * NR : nullptr;
      for (KIndex r = m0; r < m0 + full; r += MR)
        tile<MR, 1>(k4, qa + r * ldq, ldq, sa + r, za + r, bp, pstride, scales + p * NR, colsums + p * NR,
                    c + r * ldc + p * NR, ldc, pb);
      if (rest)
        rest_rows(rest, k4, qa + (m0 + full) * ldq, ldq, sa + m0 + full, za + m0 + full, bp, pstride,
                  scales + p * NR, colsums + p * NR, c + (m0 + full) * ldc + p * NR, ldc, pb);
    }
  }
}

void gemm_i8(KIndex m, KIndex k, const float* a, KIndex lda, const std::int8_t* packed, const float* scales,
             const std::int32_t* colsums, KIndex panels, float* c, KIndex ldc, const float* bias) {
  if (m <= 0 || panels <= 0) return;
  const KIndex ldq = (k + 3) / 4 * 4;
  // The quantized rows: per thread, grown to the largest call and then reused.
  thread_local std::vector<std::uint8_t> qbuf;
  thread_local std::vector<float> sbuf, zbuf;
  if (qbuf.size() < static_cast<std::size_t>(m * ldq)) qbuf.resize(static_cast<std::size_t>(m * ldq));
  if (sbuf.size() < static_cast<std::size_t>(m)) {
    sbuf.resize(static_cast<std::size_t>(m));
    zbuf.resize(static_cast<std::size_t>(m));
  }
  quantize_rows(m, k, a, lda, qbuf.data(), ldq, sbuf.data(), zbuf.data());
  gemm_i8q(m, k, qbuf.data(), ldq, sbuf.data(), zbuf.data(), packed, scales, colsums, panels, c, ldc, bias);
}

}  // namespace

void fill_int8(KernelSet& set) {
  set.pack_i8 = pack_i8;
  set.gemm_i8 = gemm_i8;
  set.quantize_rows = quantize_rows;
  set.gemm_i8q = gemm_i8q;
  set.int8_path = kPath;
}

}  // namespace RECUR_ISA
}  // namespace cpu
}  // namespace recur
