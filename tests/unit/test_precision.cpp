// SPDX-License-Identifier: Apache-2.0
// Reduced precision weights (bf16, int8) on every kernel set this CPU runs: the GEMMs against
// double-precision loops within bounds derived from the rounding, and GRU (both reset_after),
// LSTM and SimpleRNN layers against their float32 outputs; float32 unchanged by the option.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "recur/cell.hpp"
#include "recur/cpu_kernels.hpp"
#include "recur/error.hpp"
#include "recur/layer.hpp"

#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#endif

namespace recur {
namespace {

using Vec = std::vector<float>;

Vec random_vec(std::size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  Vec v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

std::vector<const cpu::KernelSet*> sets() {
  int n = 0;
  const cpu::KernelSet* const* all = cpu::runnable_kernel_sets(&n);
  return {all, all + n};
}

// The same, and each set again without its extensions' upgrades where it has any: the bf16
// widening and portable int8 GEMMs of CPUs without AVX512_BF16, VNNI or sdot.
std::vector<const cpu::KernelSet*> gemm_sets() {
  std::vector<const cpu::KernelSet*> out = sets();
  int n = 0;
  const cpu::KernelSet* const* plain = cpu::plain_kernel_sets(&n);
  const cpu::KernelSet* const* all = cpu::runnable_kernel_sets(&n);
  for (int i = 0; i < n; ++i)
    if (plain[i]->gemm_bf16 != all[i]->gemm_bf16 || plain[i]->gemm_i8 != all[i]->gemm_i8) out.push_back(plain[i]);
  return out;
}

float bf16_round(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  u += 0x7fffu + ((u >> 16) & 1u);
  u &= 0xffff0000u;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// Rows: every remainder of the tiles (6 and 8 rows) and a second block of rows (96 for bf16).
const cpu::KIndex kMs[] = {1, 2, 3, 4, 6, 7, 13, 50, 100};
const cpu::KIndex kKs[] = {1, 3, 17, 64, 301};
const cpu::KIndex kNs[] = {1, 5, 33, 70};

// bf16: the products of the rounded weights (and, with vdpbf16ps, rounded rows of a), exactly as a
// float32 GEMM over them would give.
TEST(Precision, Bf16GemmIsTheFloatGemmOfTheRoundedWeights) {
  for (const cpu::KernelSet* set : gemm_sets())
    for (cpu::KIndex m : kMs)
      for (cpu::KIndex k : kKs)
        for (cpu::KIndex n : kNs) {
          const cpu::KIndex panels = set->panels(n), width = panels * set->nr, ldc = width + 1;
          const Vec a = random_vec(static_cast<std::size_t>(m * k), 1), b = random_vec(static_cast<std::size_t>(k * n), 2);
          const Vec bias = random_vec(static_cast<std::size_t>(width), 3);
          std::vector<std::uint16_t> packed(static_cast<std::size_t>(panels * set->bf16_panel(k)));
          set->pack_bf16(b.data(), n, k, n, packed.data());
          Vec c(static_cast<std::size_t>(m * ldc), 7.0f);
          set->gemm_bf16(m, k, a.data(), k, packed.data(), panels, c.data(), ldc, bias.data());
          for (cpu::KIndex i = 0; i < m; ++i)
            for (cpu::KIndex j = 0; j < n; ++j) {
              double ref = bias[j], mag = std::fabs(bias[j]);
              for (cpu::KIndex kk = 0; kk < k; ++kk) {
                // vdpbf16ps rounds a to bfloat16 too (bf16_k_multiple 2).
                const float ak = set->bf16_k_multiple == 2 ? bf16_round(a[i * k + kk]) : a[i * k + kk];
                ref += double(ak) * bf16_round(b[kk * n + j]);
                mag += std::fabs(double(a[i * k + kk]) * b[kk * n + j]);
              }
              // Only float32 summation error remains.
              ASSERT_NEAR(c[i * ldc + j], ref, 1e-6 * (mag + 1.0) * std::sqrt(double(k)))
                  << set->name << " (" << set->bf16_path << ") m=" << m << " k=" << k << " n=" << n;
            }
          for (cpu::KIndex i = 0; i < m; ++i) ASSERT_EQ(c[i * ldc + width], 7.0f) << set->name;
          if (set->gemm_bf16r) {  // the two halves give what the whole gives
            const cpu::KIndex ldq = (k + 1) / 2 * 2;
            std::vector<std::uint16_t> q(static_cast<std::size_t>(m * ldq));
            set->round_rows_bf16(m, k, a.data(), k, q.data(), ldq);
            Vec c2(c.size(), 7.0f);
            set->gemm_bf16r(m, k, q.data(), ldq, packed.data(), panels, c2.data(), ldc, bias.data());
            ASSERT_EQ(c2, c) << set->name << " m=" << m << " k=" << k << " n=" << n;
          }
        }
}

// int8: the error of each output is bounded by the two roundings. With a = sa (qa - z) + ea,
// |ea| <= sa / 2, and w = sw qw + ew, |ew| <= sw / 2:
//   |a.w - (a - ea).(w - ew)| <= sum |ea||w| + |a||ew| + |ea||ew|
//                             <= sa/2 sum|w| + sw/2 sum|a| + k sa sw / 4,
// where sa = (max(a, 0) - min(a, 0)) / 127 at worst (255 on VNNI and portable code) and
// sw = max|w| / 127; plus float32 rounding of the dequantization.
TEST(Precision, Int8GemmIsWithinTheQuantizationBound) {
  for (const cpu::KernelSet* set : gemm_sets())
    for (cpu::KIndex m : kMs)
      for (cpu::KIndex k : kKs)
        for (cpu::KIndex n : kNs) {
          const cpu::KIndex panels = set->panels(n), width = panels * set->nr, ldc = width + 1;
          const Vec a = random_vec(static_cast<std::size_t>(m * k), 4), b = random_vec(static_cast<std::size_t>(k * n), 5);
          const Vec bias = random_vec(static_cast<std::size_t>(width), 6);
          std::vector<std::int8_t> packed(static_cast<std::size_t>(panels * set->i8_panel_bytes(k)));
          Vec scales(static_cast<std::size_t>(width));
          std::vector<std::int32_t> colsums(static_cast<std::size_t>(width));
          set->pack_i8(b.data(), n, k, n, packed.data(), scales.data(), colsums.data());
          Vec c(static_cast<std::size_t>(m * ldc), 7.0f);
          set->gemm_i8(m, k, a.data(), k, packed.data(), scales.data(), colsums.data(), panels, c.data(), ldc,
                       bias.data());
          for (cpu::KIndex i = 0; i < m; ++i) {
            double lo = 0.0, hi = 0.0, sum_a = 0.0;
            for (cpu::KIndex kk = 0; kk < k; ++kk) {
              lo = std::min(lo, double(a[i * k + kk]));
              hi = std::max(hi, double(a[i * k + kk]));
              sum_a += std::fabs(a[i * k + kk]);
            }
            const double sa = (hi - lo) / 127.0;
            for (cpu::KIndex j = 0; j < n; ++j) {
              double ref = bias[j], sum_w = 0.0, wmax = 0.0, mag = std::fabs(bias[j]);
              for (cpu::KIndex kk = 0; kk < k; ++kk) {
                ref += double(a[i * k + kk]) * b[kk * n + j];
                sum_w += std::fabs(b[kk * n + j]);
                wmax = std::max(wmax, double(std::fabs(b[kk * n + j])));
                mag += std::fabs(double(a[i * k + kk]) * b[kk * n + j]);
              }
              const double sw = wmax / 127.0;
              const double bound = sa / 2 * sum_w + sw / 2 * sum_a + double(k) * sa * sw / 4 + 1e-5 * (mag + 1.0);
              ASSERT_NEAR(c[i * ldc + j], ref, bound) << set->name << " (" << set->int8_path << ") m=" << m << " k=" << k << " n=" << n;
            }
          }
          for (cpu::KIndex i = 0; i < m; ++i) ASSERT_EQ(c[i * ldc + width], 7.0f) << set->name;
        }
}

TEST(Precision, Int8GemmGivesNaNForNonFiniteInputsAndZerosForZeroRows) {
  for (const cpu::KernelSet* set : gemm_sets()) {
    const cpu::KIndex k = 5, n = 3, panels = set->panels(n), width = panels * set->nr;
    const Vec b = random_vec(static_cast<std::size_t>(k * n), 7);
    std::vector<std::int8_t> packed(static_cast<std::size_t>(panels * set->i8_panel_bytes(k)));
    Vec scales(static_cast<std::size_t>(width));
    std::vector<std::int32_t> colsums(static_cast<std::size_t>(width));
    set->pack_i8(b.data(), n, k, n, packed.data(), scales.data(), colsums.data());
    Vec a(static_cast<std::size_t>(2 * k), 0.0f);
    a[k + 2] = NAN;
    Vec c(static_cast<std::size_t>(2 * width));
    set->gemm_i8(2, k, a.data(), k, packed.data(), scales.data(), colsums.data(), panels, c.data(), width, nullptr);
    for (cpu::KIndex j = 0; j < n; ++j) {
      EXPECT_EQ(c[j], 0.0f) << set->name;
      EXPECT_TRUE(std::isnan(c[width + j])) << set->name;
    }
  }
}

// The integer half of one set's int8 GEMM against plain loops over its own quantized rows and
// packed weights (the layout cpu_kernels.hpp describes): with unit scales and no zero point each
// output is the integer sum itself (below 2^24, so exact in float32), whichever instructions sum it
// (an sdot path given a byte above 127 would read it as negative); with the real scales and zero
// points, the dequantization within float rounding; and gemm_i8 is the two halves.
void expect_int8_sums_exact(const cpu::KernelSet& set) {
  for (cpu::KIndex m : kMs)
    for (cpu::KIndex k : kKs)
      for (cpu::KIndex n : kNs) {
        const cpu::KIndex panels = set.panels(n), width = panels * set.nr, ldc = width + 1;
        const cpu::KIndex k4 = (k + 3) / 4, ldq = k4 * 4;
        const Vec a = random_vec(static_cast<std::size_t>(m * k), 8);
        const Vec b = random_vec(static_cast<std::size_t>(k * n), 9);
        const Vec bias = random_vec(static_cast<std::size_t>(width), 10);
        std::vector<std::int8_t> packed(static_cast<std::size_t>(panels * set.i8_panel_bytes(k)));
        Vec scales(static_cast<std::size_t>(width));
        std::vector<std::int32_t> colsums(static_cast<std::size_t>(width));
        set.pack_i8(b.data(), n, k, n, packed.data(), scales.data(), colsums.data());
        std::vector<std::uint8_t> q(static_cast<std::size_t>(m * ldq));
        Vec sa(static_cast<std::size_t>(m)), za(sa.size());
        set.quantize_rows(m, k, a.data(), k, q.data(), ldq, sa.data(), za.data());
        const Vec ones(static_cast<std::size_t>(std::max(m, width)), 1.0f), zeros(static_cast<std::size_t>(m), 0.0f);
        Vec sums(static_cast<std::size_t>(m * ldc), 7.0f), c(sums.size(), 7.0f), whole(sums.size(), 7.0f);
        set.gemm_i8q(m, k, q.data(), ldq, ones.data(), zeros.data(), packed.data(), ones.data(), colsums.data(),
                     panels, sums.data(), ldc, nullptr);
        set.gemm_i8q(m, k, q.data(), ldq, sa.data(), za.data(), packed.data(), scales.data(), colsums.data(), panels,
                     c.data(), ldc, bias.data());
        set.gemm_i8(m, k, a.data(), k, packed.data(), scales.data(), colsums.data(), panels, whole.data(), ldc,
                    bias.data());
        const std::string what = std::string(set.name) + " (" + set.int8_path + ") m=" + std::to_string(m) +
                                 " k=" + std::to_string(k) + " n=" + std::to_string(n);
        for (cpu::KIndex i = 0; i < m; ++i)
          for (cpu::KIndex j = 0; j < width; ++j) {
            const cpu::KIndex p = j / set.nr, jj = j % set.nr;
            std::int64_t ref = 0;
            for (cpu::KIndex kk = 0; kk < k; ++kk)
              ref += std::int64_t(q[i * ldq + kk]) * packed[(p * k4 + kk / 4) * set.nr * 4 + jj * 4 + kk % 4];
            ASSERT_EQ(sums[i * ldc + j], float(ref)) << what << " at " << i << "," << j;
            const double zcs = double(za[i]) * colsums[j], s = double(sa[i]) * scales[j];
            const double deq = (double(ref) - zcs) * s + bias[j];
            ASSERT_NEAR(c[i * ldc + j], deq,
                        1e-6 * ((std::fabs(double(ref)) + std::fabs(zcs)) * std::fabs(s) + std::fabs(bias[j])))
                << what << " at " << i << "," << j;
          }
        for (cpu::KIndex i = 0; i < m; ++i) ASSERT_EQ(sums[i * ldc + width], 7.0f) << what;
        ASSERT_EQ(whole, c) << what;
      }
}

TEST(Precision, Int8GemmSumsTheQuantizedRowsExactlyOnEverySet) {
  for (const cpu::KernelSet* set : gemm_sets()) expect_int8_sums_exact(*set);
}

// ARM64 with the dot-product extension (asimddp; qemu-aarch64's default CPU has it) runs the neon
// set's int8 GEMM with sdot, which multiplies s8 by s8: its activations must stay in 0..127.
TEST(Precision, NeonInt8UsesSdotWhereTheCpuHasDotProducts) {
#if defined(__aarch64__) && defined(__linux__)
  if (!(getauxval(AT_HWCAP) & HWCAP_ASIMDDP))
    GTEST_SKIP() << "this CPU has no dot-product extension (no asimddp in AT_HWCAP): the neon set keeps the "
                    "portable int8 path";
  const cpu::KernelSet* neon = nullptr;
  for (const cpu::KernelSet* set : sets())
    if (std::string(set->name) == "neon") neon = set;
  ASSERT_NE(neon, nullptr);
  EXPECT_NE(std::string(neon->int8_path).find("sdot"), std::string::npos) << neon->int8_path;
  // Every quantized byte at most 127, and a row's range spans about that many levels (the two ends
  // round on their own, so the top may land on 126).
  const cpu::KIndex m = 3, k = 37, ldq = 40;
  const Vec a = random_vec(static_cast<std::size_t>(m * k), 13);
  std::vector<std::uint8_t> q(static_cast<std::size_t>(m * ldq));
  Vec sa(static_cast<std::size_t>(m)), za(sa.size());
  neon->quantize_rows(m, k, a.data(), k, q.data(), ldq, sa.data(), za.data());
  for (cpu::KIndex i = 0; i < m; ++i) {
    const auto row = q.begin() + i * ldq;
    const int top = *std::max_element(row, row + k);
    EXPECT_LE(top, 127) << "row " << i;
    EXPECT_GE(top, 126) << "row " << i;
  }
  expect_int8_sums_exact(*neon);
#else
  GTEST_SKIP() << "the sdot int8 path is built for ARM64 Linux only";
#endif
}

// ---- layers ----

struct Case {
  LayerKind kind;
  bool reset_after;
  int units, input;
};

LayerConfig config(const Case& k) {
  LayerConfig c = LayerConfig::defaults(k.kind, DialectInfo::latest(Dialect::keras3));
  c.units = k.units;
  c.input_size = k.input;
  c.reset_after = k.reset_after;
  c.return_sequences = true;
  c.seed = 3;
  return c;
}

// Keras-like weights: kernels glorot-sized, so pre-activations are of order 1.
void set_weights(Layer& layer, unsigned seed) {
  for (std::size_t i = 0; i < layer.num_weights(); ++i) {
    const WeightSpec& spec = layer.weight_spec(i);
    const Index rows = spec.shape.size() == 2 ? spec.shape[0] : 1;
    const Vec w = random_vec(layer.weight_length(i), seed + static_cast<unsigned>(i),
                             spec.shape.size() == 2 ? 1.0f / std::sqrt(float(rows)) : 0.1f);
    layer.set_weight(i, w.data(), w.size(), nullptr, 0);
  }
}

Vec run(Layer& layer, const Vec& x, Index B, Index T) {
  Vec out(layer.output_size(B, T));
  LayerCall c;
  c.input = x.data();
  c.input_len = x.size();
  c.batch = B;
  c.timesteps = T;
  c.output = out.data();
  c.output_len = out.size();
  layer.call(c);
  return out;
}

double max_abs_diff(const Vec& a, const Vec& b) {
  double d = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, double(std::fabs(a[i] - b[i])));
  return d;
}

const Case kCases[] = {
    {LayerKind::gru, true, 37, 19},  {LayerKind::gru, false, 37, 19}, {LayerKind::lstm, true, 45, 33},
    {LayerKind::simple_rnn, true, 13, 7}, {LayerKind::gru, true, 64, 64}, {LayerKind::lstm, true, 5, 3},
};

// The bounds: a step's pre-activations err by about 2^-9 (bf16) or 1/127 (int8) of the sum of
// |x_k w_k| (of order 1 with glorot-sized weights), the gates' slopes are at most 1, and the
// recurrence does not amplify errors with these weights; outputs are within [-1, 1] (tanh), so
// the bounds are relative to that scale: 0.02 for bf16, 0.08 for int8 over T = 9 steps.
constexpr double kBf16Bound = 0.02, kInt8Bound = 0.08;

TEST(Precision, LayersStayCloseToFloat32OnEveryKernelSet) {
  const std::string start = cpu::cpu_kernels().name;
  for (const cpu::KernelSet* set : sets()) {
    ASSERT_TRUE(cpu::select_kernels(set->name));
    double worst_bf = 0.0, worst_i8 = 0.0;
    for (const Case& k : kCases)
      for (Index B : {1, 8}) {
        const Index T = 9;
        Layer f32(config(k)), bf(config(k)), i8(config(k));
        for (Layer* l : {&f32, &bf, &i8}) set_weights(*l, 11);
        bf.set_precision(Precision::bf16);
        i8.set_precision(Precision::int8);
        const Vec x = random_vec(static_cast<std::size_t>(B * T * k.input), 12);
        const Vec ref = run(f32, x, B, T);
        const double ebf = max_abs_diff(run(bf, x, B, T), ref), ei8 = max_abs_diff(run(i8, x, B, T), ref);
        const std::string what = std::string(set->name) + " " + kind_name(k.kind) + " units=" +
                                 std::to_string(k.units) + " input=" + std::to_string(k.input) +
                                 (k.reset_after ? "" : " reset_after=False") + " B=" + std::to_string(B);
        EXPECT_LT(ebf, kBf16Bound) << what;
        EXPECT_LT(ei8, kInt8Bound) << what;
        EXPECT_GT(ebf, 0.0) << what << ": bf16 changed nothing";
        EXPECT_GT(ei8, 0.0) << what << ": int8 changed nothing";
        worst_bf = std::max(worst_bf, ebf);
        worst_i8 = std::max(worst_i8, ei8);
      }
    std::printf("[ measured ] %s: largest difference from float32: bf16 %.3e (%s), int8 %.3e (%s)\n", set->name,
                worst_bf, set->bf16_path, worst_i8, set->int8_path);
  }
  ASSERT_TRUE(cpu::select_kernels(start.c_str()));
}

TEST(Precision, Float32IsUnchangedAndSwitchingBackIsExact) {
  for (const Case& k : kCases) {
    Layer plain(config(k)), switched(config(k));
    set_weights(plain, 21);
    set_weights(switched, 21);
    const Vec x = random_vec(static_cast<std::size_t>(4 * 6 * k.input), 22);
    const Vec ref = run(plain, x, 4, 6);
    switched.set_precision(Precision::float32);
    EXPECT_EQ(run(switched, x, 4, 6), ref) << "float32 set explicitly";
    switched.set_precision(Precision::int8);
    EXPECT_NE(run(switched, x, 4, 6), ref);
    // The float32 weights are kept: get_weights is what was set.
    for (std::size_t i = 0; i < plain.num_weights(); ++i) {
      Vec a(plain.weight_length(i)), b(a.size());
      plain.get_weight(i, a.data(), a.size());
      switched.get_weight(i, b.data(), b.size());
      EXPECT_EQ(a, b) << "weight " << i;
    }
    switched.set_precision(Precision::bf16);
    switched.set_precision(Precision::float32);
    EXPECT_EQ(run(switched, x, 4, 6), ref) << "back to float32";
    EXPECT_EQ(switched.precision(), Precision::float32);
  }
}

TEST(Precision, WeightsSetLaterAreRepacked) {
  const Case k{LayerKind::gru, true, 20, 9};
  Layer early(config(k)), late(config(k));
  early.set_precision(Precision::int8);  // before any weight is set
  set_weights(early, 31);
  set_weights(late, 31);
  late.set_precision(Precision::int8);
  const Vec x = random_vec(static_cast<std::size_t>(3 * 5 * k.input), 32);
  EXPECT_EQ(run(early, x, 3, 5), run(late, x, 3, 5));
}

TEST(Precision, StatefulStepsStayCloseToFloat32) {
  for (Precision p : {Precision::bf16, Precision::int8}) {
    const Case k{LayerKind::lstm, true, 29, 11};
    LayerConfig c = config(k);
    Layer whole(c);
    c.stateful = true;
    c.batch_size = 2;
    Layer stepped(c);
    set_weights(whole, 41);
    set_weights(stepped, 41);
    stepped.set_precision(p);
    const Index T = 8;
    const Vec x = random_vec(static_cast<std::size_t>(2 * T * k.input), 42);
    const Vec ref = run(whole, x, 2, T);
    for (Index t = 0; t < T; ++t) {
      Vec xs;
      for (Index b = 0; b < 2; ++b)
        xs.insert(xs.end(), x.begin() + (b * T + t) * k.input, x.begin() + (b * T + t + 1) * k.input);
      const Vec out = run(stepped, xs, 2, 1);
      for (Index b = 0; b < 2; ++b)
        for (int j = 0; j < k.units; ++j)
          EXPECT_NEAR(out[static_cast<std::size_t>(b * k.units + j)],
                      ref[static_cast<std::size_t>((b * T + t) * k.units + j)],
                      p == Precision::bf16 ? kBf16Bound : kInt8Bound)
              << precision_name(p) << " step " << t;
    }
  }
}

TEST(Precision, NamesParseAndUnknownNamesListTheValidOnes) {
  EXPECT_EQ(parse_precision("float32", "x"), Precision::float32);
  EXPECT_EQ(parse_precision("bf16", "x"), Precision::bf16);
  EXPECT_EQ(parse_precision("int8", "x"), Precision::int8);
  for (const char* bad : {"", "fp16", "INT8", "float64"}) {
    try {
      parse_precision(bad, "set_precision");
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Error::Code::invalid_argument);
      const std::string m = e.what();
      EXPECT_NE(m.find("set_precision"), std::string::npos) << m;
      EXPECT_NE(m.find("\"float32\""), std::string::npos) << m;
      EXPECT_NE(m.find("\"bf16\""), std::string::npos) << m;
      EXPECT_NE(m.find("\"int8\""), std::string::npos) << m;
    }
  }
}

}  // namespace
}  // namespace recur
