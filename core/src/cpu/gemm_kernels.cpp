// SPDX-License-Identifier: Apache-2.0
// The GEMM kernels over packed weights, compiled once per instruction set (RECUR_ISA names it; the
// build passes that set's -m flags). Written with GCC vector extensions, so one source gives SSE2 /
// NEON (4 lanes), AVX2+FMA (8) and AVX-512 (16) code. Weights are packed once into panels of
// nr = 2 vectors of columns; a tile of up to MR (6 or 8) rows x 1 panel (or 1-2 rows x several
// panels, so that single-row steps still have enough independent accumulators) lives in registers
// over a block of k. This TU is built with -ffp-contract=fast: a GEMM sums in its own order anyway.
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <immintrin.h>
#elif defined(__ARM_NEON)
#include <arm_neon.h>
#endif

#include "cpu/bf16_round.hpp"
#include "cpu/kernel_sets.hpp"

namespace recur {
namespace cpu {
namespace RECUR_ISA {
namespace {

#if defined(__AVX512F__)
constexpr int W = 16;
// A recurrent product's weights come from L3 every step: one k block of up to 1024 (two panels
// are then 256 KiB of L2) measured 5-8% faster on Zen 5 than 512 for k = 1024, n = 3072-4096, and
// the same for shorter k.
constexpr KIndex KC = 1024;
// 32 registers: 8 rows x 2 vectors of accumulators, 10 loads per 16 FMAs, and batches (powers of
// two, mostly) split into whole tiles.
constexpr int MR = 8;
#elif defined(__AVX__)
constexpr int W = 8;
constexpr KIndex KC = 1024;  // as for AVX-512: 6-8% faster on Zen 5 at k = 1024, the same below
constexpr int MR = 6;        // 16 registers: 12 accumulators, 2 of weights, 1 broadcast
#else
constexpr int W = 4;
constexpr KIndex KC = 512;
constexpr int MR = 6;
#endif
constexpr int NR = 2 * W;
#if defined(__AVX__) && !defined(__AVX512F__)
// AVX2 reads a block of a through a k-major copy, tile by tile (one stream of a per tile instead of
// six), once k passes 256: a tile's 6 rows of a and its panel's k block then no longer share a
// 32 KB L1. Measured on Zen 4: 9% faster at k = 1024, 3% at 512, 1% slower at 256 and below; the
// AVX-512 set measured the same either way, so it reads a in place.
constexpr KIndex kCopyAFromK = 257;
#else
constexpr KIndex kCopyAFromK = 0;  // never
#endif
// Rows per block of a (at most MC x KC floats, in L2, while the panels stream past). The rows are
// split into equal blocks of whole tiles, so that 64 rows are one block and not 60 + a thin 4 that
// streams the weights again.
constexpr KIndex MC = 16 * MR;

typedef float V __attribute__((vector_size(W * sizeof(float))));

inline V load(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, V v) { std::memcpy(p, &v, sizeof v); }
// (Not V{} + x: 0.0f + x is not x for x = -0.0f, so that would cost an add per broadcast.)
inline V splat(float x) {
#if defined(__AVX512F__)
  return V{x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
#elif defined(__AVX__)
  return V{x, x, x, x, x, x, x, x};
#else
  return V{x, x, x, x};
#endif
}

// bf16 weights are widened in registers: a bfloat16 is the top half of a float32. Written with
// each set's own widening load: the portable __builtin_convertvector compiled to half-width
// widens and a lane insert per vector (5 instructions for 8 floats on AVX2), which made bf16
// streaming steps slower than float32 where they should be faster.
inline V loadw(const float* p) { return load(p); }
inline V loadw(const std::uint16_t* p) {
#if defined(__AVX512F__)
  // (The maskz form and the vector shift: GCC 12 warns that the plain intrinsics' undefined
  // pass-through is uninitialized.)
  typedef std::uint32_t U __attribute__((vector_size(W * sizeof(std::uint32_t))));
  const __m512i w = _mm512_maskz_cvtepu16_epi32(static_cast<__mmask16>(0xFFFF),
                                                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return reinterpret_cast<V>(reinterpret_cast<U>(w) << 16);
#elif defined(__AVX2__)
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return reinterpret_cast<V>(_mm256_slli_epi32(w, 16));
#elif defined(__SSE2__) && !defined(__AVX__)
  // (0, w) pairs of 16 bits are w's float32, little-endian.
  return reinterpret_cast<V>(_mm_unpacklo_epi16(_mm_setzero_si128(), _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
#elif defined(__ARM_NEON) && !defined(__AVX__)
  return reinterpret_cast<V>(vshll_n_u16(vld1_u16(p), 16));
#else
  typedef std::uint16_t H __attribute__((vector_size(W * sizeof(std::uint16_t))));
  typedef std::uint32_t U __attribute__((vector_size(W * sizeof(std::uint32_t))));
  H h;
  std::memcpy(&h, p, sizeof h);
  return reinterpret_cast<V>(__builtin_convertvector(h, U) << 16);
#endif
}

void pack_bf16(const float* b, KIndex ldb, KIndex k, KIndex n, std::uint16_t* dst) {
  const KIndex panels = (n + NR - 1) / NR;
  for (KIndex p = 0; p < panels; ++p)
    for (KIndex kk = 0; kk < k; ++kk) {
      std::uint16_t* d = dst + (p * k + kk) * NR;
      for (KIndex j = 0; j < NR; ++j) {
        const KIndex col = p * NR + j;
        d[j] = col < n ? to_bf16(b[kk * ldb + col]) : 0;
      }
    }
}

void pack(const float* b, KIndex ldb, KIndex k, KIndex n, float* dst) {
  const KIndex panels = (n + NR - 1) / NR;
  for (KIndex p = 0; p < panels; ++p)
    for (KIndex kk = 0; kk < k; ++kk) {
      float* d = dst + (p * k + kk) * NR;
      for (KIndex j = 0; j < NR; ++j) {
        const KIndex col = p * NR + j;
        d[j] = col < n ? b[kk * ldb + col] : 0.0f;
      }
    }
}

// c[R rows, NP panels] (+)= a[R, kb] @ panels; `first` starts from zero, `bias` is added at the end.
// Rows of a are lda apart; with KMAJOR, a is the tile's k-major copy (R floats per k) instead.
template <int R, int NP, typename WT, bool KMAJOR = false>
inline void tile(KIndex kb, const float* a, KIndex lda, const WT* bp, KIndex pstride, float* c,
                 KIndex ldc, bool first, const float* bias) {
  V c0[R][NP], c1[R][NP];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < NP; ++q) c0[r][q] = c1[r][q] = V{};
  for (KIndex kk = 0; kk < kb; ++kk) {
    V b0[NP], b1[NP];
#pragma GCC unroll 4
    for (int q = 0; q < NP; ++q) {
      b0[q] = loadw(bp + q * pstride + kk * NR);
      b1[q] = loadw(bp + q * pstride + kk * NR + W);
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const V ar = splat(KMAJOR ? a[kk * R + r] : a[r * lda + kk]);
#pragma GCC unroll 4
      for (int q = 0; q < NP; ++q) {
        c0[r][q] += ar * b0[q];
        c1[r][q] += ar * b1[q];
      }
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int q = 0; q < NP; ++q) {
      float* cp = c + r * ldc + q * NR;
      V v0 = c0[r][q], v1 = c1[r][q];
      if (!first) {
        v0 = load(cp) + v0;
        v1 = load(cp + W) + v1;
      }
      if (bias) {
        v0 = v0 + load(bias + q * NR);
        v1 = v1 + load(bias + q * NR + W);
      }
      store(cp, v0);
      store(cp + W, v1);
    }
}

// A tile of `rows` (< MR) rows of a, read in place.
template <typename WT>
void row_block(KIndex rows, KIndex kb, const float* a, KIndex lda, const WT* bp, float* c, KIndex ldc, bool first,
               const float* bias) {
  switch (rows) {
    case 1: tile<1, 1>(kb, a, lda, bp, 0, c, ldc, first, bias); break;
    case 2: tile<2, 1>(kb, a, lda, bp, 0, c, ldc, first, bias); break;
    case 3: tile<3, 1>(kb, a, lda, bp, 0, c, ldc, first, bias); break;
    case 4: tile<4, 1>(kb, a, lda, bp, 0, c, ldc, first, bias); break;
    case 5: tile<5, 1>(kb, a, lda, bp, 0, c, ldc, first, bias); break;
    case 6: tile<6, 1>(kb, a, lda, bp, 0, c, ldc, first, bias); break;
    default: tile<7, 1>(kb, a, lda, bp, 0, c, ldc, first, bias); break;
  }
  static_assert(MR <= 8, "row_block handles up to 7 rows");
}

// One or two rows: the weights stream through once, so several panels share each broadcast and
// k is not blocked. `descending` visits the groups of panels from last to first.
template <int R, int NP, typename WT>
void thin(KIndex k, const float* a, KIndex lda, const WT* packed, KIndex panels, float* c, KIndex ldc,
          const float* bias, bool descending) {
  const KIndex pstride = k * NR;
  const KIndex full = panels / NP * NP;
  auto group = [&](KIndex p) {
    tile<R, NP>(k, a, lda, packed + p * pstride, pstride, c + p * NR, ldc, true, bias ? bias + p * NR : nullptr);
  };
  // The last panels together as well: one panel alone is two dependent chains of FMAs.
  auto rest = [&] {
    const WT* bp = packed + full * pstride;
    float* cp = c + full * NR;
    const float* pb = bias ? bias + full * NR : nullptr;
    static_assert(NP <= 4, "the rest is at most 3 panels");
    switch (panels - full) {
      case 1: return tile<R, 1>(k, a, lda, bp, pstride, cp, ldc, true, pb);
      case 2: return tile<R, 2>(k, a, lda, bp, pstride, cp, ldc, true, pb);
      case 3: return tile<R, 3>(k, a, lda, bp, pstride, cp, ldc, true, pb);
      default: return;
    }
  };
  if (descending) {
    rest();
    for (KIndex p = full; p > 0;) group(p -= NP);
  } else {
    for (KIndex p = 0; p < full; p += NP) group(p);
    rest();
  }
}

// Rows [0, mb) of a (rows lda apart) against np (1 or 2) panels of a k block: tiles of TR rows x TP
// panels, then the last rows (too few accumulators to hide the FMA latency) two panels at a time.
// `ak` (or null): the whole tiles' rows of a as copy_a() wrote them, read instead of a.
template <int TR, int TP, typename WT>
void block_rows(KIndex kb, const float* a, KIndex lda, KIndex mb, const WT* bp, KIndex pstride, KIndex np,
                float* c, KIndex ldc, bool first, const float* bias, const float* ak = nullptr) {
  const KIndex full = mb - mb % TR, rest = mb - full;
  if (ak) {
    for (KIndex q = 0; q < np; ++q)
      for (KIndex r = 0; r < full; r += TR)
        tile<TR, 1, WT, true>(kb, ak + r * kb, 0, bp + q * pstride, 0, c + r * ldc + q * NR, ldc, first,
                              bias ? bias + q * NR : nullptr);
  } else if (np == TP) {
    for (KIndex r = 0; r < full; r += TR) tile<TR, TP>(kb, a + r * lda, lda, bp, pstride, c + r * ldc, ldc, first, bias);
  } else {
    for (KIndex q = 0; q < np; ++q)
      for (KIndex r = 0; r < full; r += TR)
        tile<TR, 1>(kb, a + r * lda, lda, bp + q * pstride, 0, c + r * ldc + q * NR, ldc, first,
                    bias ? bias + q * NR : nullptr);
  }
  if (rest == 0) return;
  const float* ap = a + full * lda;
  float* cp = c + full * ldc;
  if (np == 2 && rest == 1)
    tile<1, 2>(kb, ap, lda, bp, pstride, cp, ldc, first, bias);
  else if (np == 2 && rest == 2)
    tile<2, 2>(kb, ap, lda, bp, pstride, cp, ldc, first, bias);
  else if (np == 2 && rest == 3)
    tile<3, 2>(kb, ap, lda, bp, pstride, cp, ldc, first, bias);
#if defined(__AVX512F__)
  else if (np == 2 && rest == 4)
    tile<4, 2>(kb, ap, lda, bp, pstride, cp, ldc, first, bias);
  else if (np == 2 && rest == 5)
    tile<5, 2>(kb, ap, lda, bp, pstride, cp, ldc, first, bias);
#endif
  else
    for (KIndex q = 0; q < np; ++q)
      row_block(rest, kb, ap, lda, bp + q * pstride, cp + q * NR, ldc, first, bias ? bias + q * NR : nullptr);
}

// The whole TR-row tiles of a's block [mb rows, kb] (rows lda apart), each k-major, into the
// calling thread's buffer.
template <int TR>
const float* copy_a(const float* a, KIndex lda, KIndex mb, KIndex kb) {
  static thread_local std::vector<float> buf;
  const KIndex full = mb - mb % TR;
  if (buf.size() < static_cast<std::size_t>(full * kb)) buf.resize(static_cast<std::size_t>(full * kb));
  float* d = buf.data();
  for (KIndex r = 0; r < full; r += TR, d += TR * kb)
    for (KIndex kk = 0; kk < kb; ++kk)
#pragma GCC unroll 8
      for (int i = 0; i < TR; ++i) d[kk * TR + i] = a[(r + i) * lda + kk];
  return buf.data();
}

// `descending` visits the panels (within each k block) from last to first: the same sums in the
// same order, but a cache that just held the end of the weights reads those first.
template <typename WT>
void gemm_t(KIndex m, KIndex k, const float* a, KIndex lda, const WT* packed, KIndex panels, float* c, KIndex ldc,
            const float* bias, bool descending) {
  if (m <= 0 || panels <= 0) return;
  if (k == 0) {
    for (KIndex r = 0; r < m; ++r)
      for (KIndex j = 0; j < panels * NR; ++j) c[r * ldc + j] = bias ? bias[j] : 0.0f;
    return;
  }
  if (m == 1) return thin<1, 4, WT>(k, a, lda, packed, panels, c, ldc, bias, descending);
  if (m == 2) return thin<2, 2, WT>(k, a, lda, packed, panels, c, ldc, bias, descending);
  // a is read in place: its rows are a handful of streams a tile broadcasts from, which costs
  // less than copying them into a k-major block (measured: 10-25% faster on AVX2 and AVX-512).
  const KIndex pstride = k * NR;
  const KIndex blocks = (m + MC - 1) / MC;
  const KIndex mc = ((m + blocks - 1) / blocks + MR - 1) / MR * MR;  // <= MC
#if defined(__AVX512F__)
  // A wide layer's recurrent product (k > 512, tens of rows): 6 rows x 2 panels (24 accumulators,
  // 10 loads per 24 FMAs) measured 3-8% faster than 8 x 1 or 4 x 2 on Zen 5; with fewer rows the
  // tiles of 8 leave no thin remainder.
  const bool wide = k > 512 && m >= 48;
#endif
  for (KIndex k0 = 0; k0 < k; k0 += KC) {
    const KIndex kb = k - k0 < KC ? k - k0 : KC;
    const bool first = k0 == 0, last = k0 + kb >= k;
    for (KIndex m0 = 0; m0 < m; m0 += mc) {
      const KIndex mb = m - m0 < mc ? m - m0 : mc;
      const float* ab = a + m0 * lda + k0;
      const KIndex pairs = (panels + 1) / 2;
      const float* ak = kCopyAFromK > 0 && kb >= kCopyAFromK && mb >= MR ? copy_a<MR>(ab, lda, mb, kb) : nullptr;
      for (KIndex i = 0; i < pairs; ++i) {
        const KIndex p = 2 * (descending ? pairs - 1 - i : i);
        const KIndex np = panels - p < 2 ? panels - p : 2;
        const WT* bp = packed + p * pstride + k0 * NR;
        const float* pb = last && bias ? bias + p * NR : nullptr;
        float* cp = c + m0 * ldc + p * NR;
#if defined(__AVX512F__)
        if (wide) {
          block_rows<6, 2, WT>(kb, ab, lda, mb, bp, pstride, np, cp, ldc, first, pb);
          continue;
        }
#endif
        block_rows<MR, 1, WT>(kb, ab, lda, mb, bp, pstride, np, cp, ldc, first, pb, ak);
      }
    }
  }
}

void gemm(KIndex m, KIndex k, const float* a, KIndex lda, const float* packed, KIndex panels, float* c, KIndex ldc,
          const float* bias) {
  gemm_t<float>(m, k, a, lda, packed, panels, c, ldc, bias, false);
}

void gemm_descending(KIndex m, KIndex k, const float* a, KIndex lda, const float* packed, KIndex panels, float* c,
                     KIndex ldc, const float* bias) {
  gemm_t<float>(m, k, a, lda, packed, panels, c, ldc, bias, true);
}

void gemm_bf16(KIndex m, KIndex k, const float* a, KIndex lda, const std::uint16_t* packed, KIndex panels, float* c,
               KIndex ldc, const float* bias) {
  gemm_t<std::uint16_t>(m, k, a, lda, packed, panels, c, ldc, bias, false);
}

}  // namespace

void fill_gemm(KernelSet& set) {
  set.nr = NR;
  set.pack = pack;
  set.gemm = gemm;
  set.gemm_descending = gemm_descending;
  set.pack_bf16 = pack_bf16;
  set.gemm_bf16 = gemm_bf16;
  set.bf16_k_multiple = 1;
  set.round_rows_bf16 = nullptr;
  set.gemm_bf16r = nullptr;
  set.bf16_path = "bfloat16 widened to float32 in registers";
}

}  // namespace RECUR_ISA
}  // namespace cpu
}  // namespace recur
