// SPDX-License-Identifier: Apache-2.0
// The bf16 GEMM with AVX512_BF16's vdpbf16ps, in its own objects (built with -mavx512bf16) and
// used by the avx512 set only where the CPU reports avx512bf16 (dispatch.cpp). vdpbf16ps
// multiplies pairs of bfloat16, so the rows of a are rounded to bfloat16 too (nearest even, per
// call), as oneDNN's bf16 RNNs do; the products accumulate in float32. Elsewhere gemm_kernels.cpp
// widens the bf16 weights to float32 and keeps a in float32.
#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "cpu/bf16_round.hpp"
#include "cpu/kernel_sets.hpp"

namespace recur {
namespace cpu {
namespace avx512bf16 {
namespace {

constexpr int W = 16;
constexpr int NR = 2 * W;
// 8 rows x 2 vectors: 16 accumulators, measured 13-15% faster than 6 rows on Zen 5 (about 2.1x
// the float32 GEMM's speed on the same shapes).
constexpr int MR = 8;
constexpr KIndex MC = 96;

// Panel p holds k2 = ceil(k / 2) pairs of rows; pair g holds, for each of the NR columns, the
// bfloat16 weights of rows 2g and 2g+1 (zero past k and n): 2 * k2 * NR values per panel.
void pack(const float* b, KIndex ldb, KIndex k, KIndex n, std::uint16_t* dst) {
  const KIndex panels = (n + NR - 1) / NR, k2 = (k + 1) / 2;
  for (KIndex p = 0; p < panels; ++p)
    for (KIndex g = 0; g < k2; ++g)
      for (KIndex j = 0; j < NR; ++j)
        for (int t = 0; t < 2; ++t) {
          const KIndex col = p * NR + j, kk = 2 * g + t;
          dst[((p * k2 + g) * NR + j) * 2 + t] = col < n && kk < k ? to_bf16(b[kk * ldb + col]) : 0;
        }
}

// Rows of a as bfloat16, ldq values apart (k rounded up to even, zero-padded).
void round_rows(KIndex m, KIndex k, const float* a, KIndex lda, std::uint16_t* q, KIndex ldq) {
  for (KIndex r = 0; r < m; ++r) {
    const float* x = a + r * lda;
    std::uint16_t* qr = q + r * ldq;
    KIndex kk = 0;
    for (; kk + W <= k; kk += W) {
      const __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(x + kk));
      std::memcpy(qr + kk, &h, sizeof h);
    }
    for (; kk < k; ++kk) qr[kk] = to_bf16(x[kk]);
    for (; kk < ldq; ++kk) qr[kk] = 0;
  }
}

template <int R, int NP>
inline void tile(KIndex k2, const std::uint16_t* qa, KIndex ldq, const std::uint16_t* bp, KIndex pstride, float* c,
                 KIndex ldc, const float* bias) {
  __m512 acc0[R][NP], acc1[R][NP];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < NP; ++q) acc0[r][q] = acc1[r][q] = _mm512_setzero_ps();
  for (KIndex g = 0; g < k2; ++g) {
    __m512bh w0[NP], w1[NP];
#pragma GCC unroll 4
    for (int q = 0; q < NP; ++q) {
      w0[q] = (__m512bh)_mm512_loadu_si512(bp + q * pstride + g * NR * 2);
      w1[q] = (__m512bh)_mm512_loadu_si512(bp + q * pstride + g * NR * 2 + W * 2);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      std::int32_t pair;
      std::memcpy(&pair, qa + r * ldq + 2 * g, sizeof pair);
      const __m512bh ar = (__m512bh)_mm512_set1_epi32(pair);
#pragma GCC unroll 4
      for (int q = 0; q < NP; ++q) {
        acc0[r][q] = _mm512_dpbf16_ps(acc0[r][q], ar, w0[q]);
        acc1[r][q] = _mm512_dpbf16_ps(acc1[r][q], ar, w1[q]);
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < NP; ++q) {
      __m512 v0 = acc0[r][q], v1 = acc1[r][q];
      if (bias) {
        v0 = _mm512_add_ps(v0, _mm512_loadu_ps(bias + q * NR));
        v1 = _mm512_add_ps(v1, _mm512_loadu_ps(bias + q * NR + W));
      }
      _mm512_storeu_ps(c + r * ldc + q * NR, v0);
      _mm512_storeu_ps(c + r * ldc + q * NR + W, v1);
    }
}

template <int R, int NP>
void panels_of(KIndex k2, const std::uint16_t* qa, KIndex ldq, const std::uint16_t* packed, KIndex pstride,
               KIndex panels, float* c, KIndex ldc, const float* bias) {
  KIndex p = 0;
  for (; p + NP <= panels; p += NP)
    tile<R, NP>(k2, qa, ldq, packed + p * pstride, pstride, c + p * NR, ldc, bias ? bias + p * NR : nullptr);
  for (; p < panels; ++p)
    tile<R, 1>(k2, qa, ldq, packed + p * pstride, pstride, c + p * NR, ldc, bias ? bias + p * NR : nullptr);
}

void rest_rows(KIndex rows, KIndex k2, const std::uint16_t* qa, KIndex ldq, const std::uint16_t* bp, KIndex pstride,
               float* c, KIndex ldc, const float* bias) {
  switch (rows) {
    case 1: tile<1, 1>(k2, qa, ldq, bp, pstride, c, ldc, bias); break;
    case 2: tile<2, 1>(k2, qa, ldq, bp, pstride, c, ldc, bias); break;
    case 3: tile<3, 1>(k2, qa, ldq, bp, pstride, c, ldc, bias); break;
    case 4: tile<4, 1>(k2, qa, ldq, bp, pstride, c, ldc, bias); break;
    case 5: tile<5, 1>(k2, qa, ldq, bp, pstride, c, ldc, bias); break;
    case 6: tile<6, 1>(k2, qa, ldq, bp, pstride, c, ldc, bias); break;
    default: tile<7, 1>(k2, qa, ldq, bp, pstride, c, ldc, bias); break;
  }
  static_assert(MR <= 8, "rest_rows handles up to 7 rows");
}

void gemm_rounded(KIndex m, KIndex k, const std::uint16_t* qa, KIndex ldq, const std::uint16_t* packed, KIndex panels,
                  float* c, KIndex ldc, const float* bias) {
  if (m <= 0 || panels <= 0) return;
  const KIndex k2 = (k + 1) / 2, pstride = k2 * NR * 2;
  if (m == 1) return panels_of<1, 4>(k2, qa, ldq, packed, pstride, panels, c, ldc, bias);
  if (m == 2) return panels_of<2, 2>(k2, qa, ldq, packed, pstride, panels, c, ldc, bias);
  for (KIndex m0 = 0; m0 < m; m0 += MC) {
    const KIndex mb = m - m0 < MC ? m - m0 : MC;
    const KIndex full = mb - mb % MR, rest = mb - full;
    for (KIndex p = 0; p < panels; ++p) {
      const std::uint16_t* bp = packed + p * pstride;
      const float* pb = bias ? bias + p * NR : nullptr;
      for (KIndex r = m0; r < m0 + full; r += MR)
        tile<MR, 1>(k2, qa + r * ldq, ldq, bp, pstride, c + r * ldc + p * NR, ldc, pb);
      if (rest) rest_rows(rest, k2, qa + (m0 + full) * ldq, ldq, bp, pstride, c + (m0 + full) * ldc + p * NR, ldc, pb);
    }
  }
}

void gemm(KIndex m, KIndex k, const float* a, KIndex lda, const std::uint16_t* packed, KIndex panels, float* c,
          KIndex ldc, const float* bias) {
  if (m <= 0 || panels <= 0) return;
  const KIndex ldq = (k + 1) / 2 * 2;
  thread_local std::vector<std::uint16_t> qbuf;
  if (qbuf.size() < static_cast<std::size_t>(m * ldq)) qbuf.resize(static_cast<std::size_t>(m * ldq));
  round_rows(m, k, a, lda, qbuf.data(), ldq);
  gemm_rounded(m, k, qbuf.data(), ldq, packed, panels, c, ldc, bias);
}

}  // namespace

void fill_bf16(KernelSet& set) {
  set.pack_bf16 = pack;
  set.gemm_bf16 = gemm;
  set.bf16_k_multiple = 2;
  set.round_rows_bf16 = round_rows;
  set.gemm_bf16r = gemm_rounded;
  set.bf16_path = "AVX512_BF16 vdpbf16ps, activations rounded to bfloat16 in the product";
}

}  // namespace avx512bf16
}  // namespace cpu
}  // namespace recur
