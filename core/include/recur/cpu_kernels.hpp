// SPDX-License-Identifier: Apache-2.0
// The CPU kernel sets: the GEMM over packed weights and the fused gate updates, compiled once per
// instruction set (baseline, AVX2+FMA, AVX-512) from one source each and chosen when the library
// loads. This header is plain C++ (no Eigen), so that the per-instruction-set translation units
// share no inline code with the rest of the library.
#pragma once

#include <string>

#include <cstddef>
#include <cstdint>

namespace recur {
namespace cpu {

using KIndex = std::ptrdiff_t;

// An activation as the kernels apply it. Kinds the kernels vectorise themselves are flagged; any
// other kind goes through the scalar definitions in activations.cpp (`scalar`).
struct ActSpec {
  enum Kind { linear, tanh, sigmoid, hard_sigmoid_keras2, hard_sigmoid_keras3_0, hard_sigmoid_keras3, relu, other };
  Kind kind = linear;
  bool rowwise = false;  // softmax-like: normalises over the units of one row (needs the whole row)
  // The activation as activations.hpp names it (Activation and HardSigmoid values), and its
  // scalar definition: applies it in place to `rows` rows of `cols` floats.
  int activation = 0, hard_sigmoid = 0;
  void (*scalar)(int activation, int hard_sigmoid, float* x, KIndex rows, KIndex cols) = nullptr;
};

// One gate update over a range of units [j0, j1) for every row of a batch. Tensors are row-major;
// gate g of row b of the projected input is at xp + b * xp_stride + g * gate_stride, and likewise
// for the recurrent products in `pre` (the kernels overwrite `pre` with activated gates).
struct GateArgs {
  KIndex batch = 0, units = 0, j0 = 0, j1 = 0;
  const float* xp = nullptr;
  KIndex xp_stride = 0;
  float* pre = nullptr;
  KIndex pre_stride = 0;
  KIndex gate_stride = 0;  // padded units per gate, in xp and pre alike
  const float* h = nullptr;  // (batch, units)
  const float* c = nullptr;
  float* h_out = nullptr;
  float* c_out = nullptr;
  const float* bias = nullptr;   // LSTM implementation 2: bias added after x@K + h@U (padded gates)
  const float* hmask = nullptr;  // GRU reset_after=False: recurrent dropout mask of the candidate's h
  float* rh = nullptr;           // GRU reset_after=False: r ⊙ h, (batch, units), the candidate's GEMM input
  bool reset_after = false;
  ActSpec act, ract;
};

struct KernelSet {
  const char* name;
  int nr;  // columns per packed panel
  // Panels that n columns (one gate's units) take: the cell packs by it and the weight limit
  // charges by it, so the two cannot disagree.
  KIndex panels(KIndex n) const { return (n + nr - 1) / nr; }
  // Packs the k x n row-major matrix b (rows ldb apart) into ceil(n / nr) panels of k x nr floats
  // each, zero-padded past column n.
  void (*pack)(const float* b, KIndex ldb, KIndex k, KIndex n, float* dst);
  // c[m, panels * nr] = a[m, k] @ (the packed panels) (+ bias[panels * nr], added after the
  // product). Rows of a are lda apart, rows of c ldc apart.
  void (*gemm)(KIndex m, KIndex k, const float* a, KIndex lda, const float* packed, KIndex panels, float* c,
               KIndex ldc, const float* bias);
  // gemm with the panels visited from last to first (the k blocks still in order): the same
  // numbers. Alternating the two directions from step to step keeps the weights read last in the
  // cache for the next step when they do not all fit (serpentine order).
  void (*gemm_descending)(KIndex m, KIndex k, const float* a, KIndex lda, const float* packed, KIndex panels,
                          float* c, KIndex ldc, const float* bias);
  // GRU: z and r from x + h@U (in pre), and r ⊙ h for reset_after=False.
  void (*gru_gates)(const GateArgs& g);
  // GRU: the candidate and h' = z ⊙ h + (1 - z) ⊙ ĥ (pre's candidate slot holds h@U_h or (r⊙h)@U_h).
  void (*gru_update)(const GateArgs& g);
  // LSTM: all four gates, c' = f ⊙ c + i ⊙ g, h' = o ⊙ act(c').
  void (*lstm_update)(const GateArgs& g);
  // SimpleRNN: h' = act((x@K + b) + h@U), with x@K + b in xp and h@U in pre.
  void (*simple_rnn_update)(const GateArgs& g);
  // y[i] = x[i] ⊙ m[i] for n floats (recurrent dropout of h).
  void (*multiply)(const float* x, const float* m, float* y, KIndex n);

  // --- reduced precision weights (opt-in: recur_layer_set_precision) ---
  // bf16: the weights rounded to bfloat16 (nearest even) in panels of bf16_panel(k) values, and
  // the GEMM over them. Widened to float32 in registers (a stays float32; bf16_k_multiple 1,
  // pack's layout), or with AVX512_BF16 pairs of rows interleaved for vdpbf16ps, which rounds a
  // to bfloat16 too (bf16_k_multiple 2).
  int bf16_k_multiple;
  // With vdpbf16ps, gemm_bf16 in two halves (null otherwise), so that the GEMMs of several gates
  // round their shared rows once: the rows of a as bfloat16 (ldq = k rounded up to even), and the
  // GEMM over them.
  void (*round_rows_bf16)(KIndex m, KIndex k, const float* a, KIndex lda, std::uint16_t* q, KIndex ldq);
  void (*gemm_bf16r)(KIndex m, KIndex k, const std::uint16_t* q, KIndex ldq, const std::uint16_t* packed,
                     KIndex panels, float* c, KIndex ldc, const float* bias);
  KIndex bf16_panel(KIndex k) const { return (k + bf16_k_multiple - 1) / bf16_k_multiple * bf16_k_multiple * nr; }
  void (*pack_bf16)(const float* b, KIndex ldb, KIndex k, KIndex n, std::uint16_t* dst);
  void (*gemm_bf16)(KIndex m, KIndex k, const float* a, KIndex lda, const std::uint16_t* packed, KIndex panels,
                    float* c, KIndex ldc, const float* bias);
  // int8: symmetric per-column weights. Panel p holds k4 = ceil(k / 4) groups; group g holds, for
  // each of the panel's nr columns, the 4 int8 weights of rows 4g..4g+3 (zero past k and n):
  // i8_panel_bytes(k) bytes per panel. scales[j]: the column's scale (max |w| / 127); colsums[j]:
  // the sum of its int8 weights (to take the activations' zero point back out).
  KIndex i8_panel_bytes(KIndex k) const { return (k + 3) / 4 * 4 * nr; }
  void (*pack_i8)(const float* b, KIndex ldb, KIndex k, KIndex n, std::int8_t* dst, float* scales,
                  std::int32_t* colsums);
  // c = a @ W (+ bias) with each row of a quantized to unsigned integers (its own scale and zero
  // point, per call) and integer dot products; k must be at most kMaxInt8Depth.
  void (*gemm_i8)(KIndex m, KIndex k, const float* a, KIndex lda, const std::int8_t* packed, const float* scales,
                  const std::int32_t* colsums, KIndex panels, float* c, KIndex ldc, const float* bias);
  // gemm_i8 in two halves, so that several GEMMs over the same rows quantize them once: each row
  // of a as unsigned integers (ldq = 4 * ceil(k / 4) bytes apart, zero-padded), its scale and zero
  // point; and the GEMM over them.
  void (*quantize_rows)(KIndex m, KIndex k, const float* a, KIndex lda, std::uint8_t* q, KIndex ldq, float* scale,
                        float* zero);
  void (*gemm_i8q)(KIndex m, KIndex k, const std::uint8_t* q, KIndex ldq, const float* scale, const float* zero,
                   const std::int8_t* packed, const float* scales, const std::int32_t* colsums, KIndex panels,
                   float* c, KIndex ldc, const float* bias);
  const char* int8_path;  // which integer instructions gemm_i8 uses
  const char* bf16_path;  // likewise for gemm_bf16
};

// int8 dot products accumulate in int32: 255 * 127 * 65536 < 2^31.
constexpr KIndex kMaxInt8Depth = 65536;

// The set this process uses (see recur_cpu_kernels in recur.h for the choice and its override).
const KernelSet& cpu_kernels();
// Why cpu_kernels() is the set it is (the CPU's features, or RECUR_CPU_KERNELS and its fallback).
std::string cpu_kernels_reason();
// Every set this build has that the CPU can run, best first (for the tests).
const KernelSet* const* runnable_kernel_sets(int* count);
// The same sets as runnable_kernel_sets(), in the same order, without the upgrades that CPU
// extensions give them (int8 with VNNI or sdot, bf16 with AVX512_BF16): the paths a CPU of the
// same set without those extensions runs, for the tests.
const KernelSet* const* plain_kernel_sets(int* count);
// Makes `name` the set cpu_kernels() returns from now on; false when this CPU cannot run it.
// Only for tests: layers made before keep the layout of the set they were made with.
bool select_kernels(const char* name);

}  // namespace cpu
}  // namespace recur
