// SPDX-License-Identifier: Apache-2.0
// The CPU kernel sets against plain loops: the packed GEMM for shapes that exercise every tile and
// remainder (rows, panels, k blocks), the packing round trip through Cell, and every set this CPU
// runs giving the same gate updates within float rounding.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "recur/cell.hpp"
#include "recur/cpu_kernels.hpp"

namespace recur {
namespace {

std::vector<float> random(std::size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

std::vector<const cpu::KernelSet*> sets() {
  int n = 0;
  const cpu::KernelSet* const* all = cpu::runnable_kernel_sets(&n);
  return {all, all + n};
}

TEST(CpuKernels, TheBaselineSetIsAlwaysRunnableAndTheChosenSetIsOneOfThem) {
  const auto s = sets();
  ASSERT_FALSE(s.empty());
  EXPECT_EQ(std::string(s.back()->name), RECUR_BASELINE_KERNELS_NAME);  // "neon" on aarch64
  bool found = false;
  for (const auto* k : s) found |= k == &cpu::cpu_kernels();
  EXPECT_TRUE(found) << cpu::cpu_kernels().name;
}

TEST(CpuKernels, GemmMatchesPlainLoopsOnEveryShape) {
  const cpu::KIndex ms[] = {1, 2, 3, 5, 6, 7, 13, 32, 51, 64, 125};
  const cpu::KIndex ks[] = {0, 1, 7, 64, 513, 1100};
  const cpu::KIndex ns[] = {1, 5, 16, 33, 100};
  for (const cpu::KernelSet* set : sets()) {
    for (cpu::KIndex m : ms)
      for (cpu::KIndex k : ks)
        for (cpu::KIndex n : ns) {
          const cpu::KIndex panels = (n + set->nr - 1) / set->nr, width = panels * set->nr, ldc = width + 3;
          const auto a = random(static_cast<std::size_t>(m * (k + 2)), 1);  // lda = k + 2
          const auto b = random(static_cast<std::size_t>(k * n), 2);
          const auto bias = random(static_cast<std::size_t>(width), 3);
          std::vector<float> packed(static_cast<std::size_t>(panels * k * set->nr) + 1);
          set->pack(b.data(), n, k, n, packed.data());
          for (bool with_bias : {false, true}) {
            std::vector<float> c(static_cast<std::size_t>(m * ldc), 7.0f);
            set->gemm(m, k, a.data(), k + 2, packed.data(), panels, c.data(), ldc, with_bias ? bias.data() : nullptr);
            for (cpu::KIndex i = 0; i < m; ++i)
              for (cpu::KIndex j = 0; j < width; ++j) {
                double ref = 0.0;
                if (j < n)
                  for (cpu::KIndex kk = 0; kk < k; ++kk) ref += double(a[i * (k + 2) + kk]) * double(b[kk * n + j]);
                if (with_bias) ref += bias[j];
                ASSERT_NEAR(c[i * ldc + j], ref, 1e-4 * (1.0 + std::sqrt(double(k))))
                    << set->name << " m=" << m << " k=" << k << " n=" << n << " at " << i << "," << j;
              }
            // Columns past the panels are left alone.
            for (cpu::KIndex i = 0; i < m; ++i)
              for (cpu::KIndex j = width; j < ldc; ++j) ASSERT_EQ(c[i * ldc + j], 7.0f) << set->name;
            // The panels read from last to first: bitwise the same numbers.
            std::vector<float> d(static_cast<std::size_t>(m * ldc), 7.0f);
            set->gemm_descending(m, k, a.data(), k + 2, packed.data(), panels, d.data(), ldc,
                                 with_bias ? bias.data() : nullptr);
            ASSERT_TRUE(c == d) << set->name << " descending, m=" << m << " k=" << k << " n=" << n;
          }
        }
  }
}

// A row's numbers do not depend on the tile that computes it: whole tiles (which AVX2 reads
// through a k-major copy of a past k = 256), the last rows read in place, or a row alone (the
// one-row path), within one k block.
TEST(CpuKernels, EveryRowGetsTheSameBitsWhicheverTileComputesIt) {
  const cpu::KIndex m = 13, n = 40;
  int compared = 0;
  for (const cpu::KernelSet* set : sets()) {
    for (cpu::KIndex k : {cpu::KIndex(64), cpu::KIndex(300), cpu::KIndex(512)}) {
      const cpu::KIndex panels = (n + set->nr - 1) / set->nr, width = panels * set->nr, lda = k + 5;
      const auto a = random(static_cast<std::size_t>(m * lda), 21);
      const auto b = random(static_cast<std::size_t>(k * n), 22);
      const auto bias = random(static_cast<std::size_t>(width), 23);
      std::vector<float> packed(static_cast<std::size_t>(panels * k * set->nr));
      set->pack(b.data(), n, k, n, packed.data());
      std::vector<float> all(static_cast<std::size_t>(m * width));
      set->gemm(m, k, a.data(), lda, packed.data(), panels, all.data(), width, bias.data());
      for (cpu::KIndex i = 0; i < m; ++i) {
        std::vector<float> one(static_cast<std::size_t>(width));
        set->gemm(1, k, a.data() + i * lda, lda, packed.data(), panels, one.data(), width, bias.data());
        ASSERT_EQ(std::memcmp(one.data(), all.data() + i * width, static_cast<std::size_t>(width) * sizeof(float)), 0)
            << set->name << " k=" << k << " row " << i;
        ++compared;
      }
    }
  }
  EXPECT_EQ(compared, static_cast<int>(sets().size()) * 3 * 13);
}

TEST(CpuKernels, PackedWeightsUnpackExactly) {
  for (LayerKind kind : {LayerKind::gru, LayerKind::lstm, LayerKind::simple_rnn}) {
    LayerConfig c;
    c.kind = kind;
    c.units = 37;
    c.input_size = 19;
    Cell cell(c);
    const int w = cell.width();
    const auto k = random(static_cast<std::size_t>(19 * w), 4), u = random(static_cast<std::size_t>(37 * w), 5);
    const auto bias = random(static_cast<std::size_t>(2 * w), 6);
    cell.set_weights(k.data(), u.data(), bias.data(), bias.data() + w);
    std::vector<float> k2(k.size()), u2(u.size());
    cell.unpack_kernel(k2.data());
    cell.unpack_recurrent(u2.data());
    EXPECT_EQ(k, k2);
    EXPECT_EQ(u, u2);
  }
}

// SimpleRNN's fused update, h' = act((x@K + b) + h@U), on every set: the sum in float as written,
// then the activation; only the units [j0, j1) of each row are written.
TEST(CpuKernels, SimpleRnnUpdateOnEverySet) {
  const cpu::KIndex B = 3, u = 37, gs = 48, xp_stride = 50, pre_stride = 52;
  const auto xp = random(static_cast<std::size_t>(B * xp_stride), 7);
  const auto pre0 = random(static_cast<std::size_t>(B * pre_stride), 8);
  struct Act {
    cpu::ActSpec::Kind kind;
    double (*ref)(double);
    double tol;
  };
  const Act acts[] = {
      {cpu::ActSpec::linear, [](double v) { return v; }, 0.0},
      {cpu::ActSpec::relu, [](double v) { return v > 0 ? v : 0.0; }, 0.0},
      {cpu::ActSpec::tanh, [](double v) { return std::tanh(v); }, 2e-7},
      {cpu::ActSpec::sigmoid, [](double v) { return 1.0 / (1.0 + std::exp(-v)); }, 2e-7},
  };
  for (const cpu::KernelSet* set : sets()) {
    for (const Act& a : acts) {
      for (cpu::KIndex j0 : {cpu::KIndex(0), cpu::KIndex(16)}) {
        const cpu::KIndex j1 = j0 == 0 ? u : 32;
        std::vector<float> pre = pre0, h(static_cast<std::size_t>(B * u), 0.5f);
        std::vector<float> out(static_cast<std::size_t>(B * u), 9.0f);
        cpu::GateArgs g;
        g.batch = B;
        g.units = u;
        g.j0 = j0;
        g.j1 = j1;
        g.xp = xp.data();
        g.xp_stride = xp_stride;
        g.pre = pre.data();
        g.pre_stride = pre_stride;
        g.gate_stride = gs;
        g.h = h.data();
        g.h_out = out.data();
        g.act.kind = a.kind;
        set->simple_rnn_update(g);
        for (cpu::KIndex b = 0; b < B; ++b)
          for (cpu::KIndex j = 0; j < u; ++j) {
            const float got = out[static_cast<std::size_t>(b * u + j)];
            if (j < j0 || j >= j1) {
              ASSERT_EQ(got, 9.0f) << set->name << ": unit " << j << " is outside [" << j0 << ", " << j1 << ")";
              continue;
            }
            const float sum = xp[static_cast<std::size_t>(b * xp_stride + j)] + pre0[static_cast<std::size_t>(b * pre_stride + j)];
            const double want = a.ref(sum);
            if (a.tol == 0.0)
              ASSERT_EQ(got, static_cast<float>(want)) << set->name << " row " << b << " unit " << j;
            else
              ASSERT_NEAR(got, want, a.tol) << set->name << " row " << b << " unit " << j;
          }
      }
    }
  }
}

}  // namespace
}  // namespace recur
