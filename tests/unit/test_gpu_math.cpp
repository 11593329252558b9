// SPDX-License-Identifier: Apache-2.0
// The GPU backend's math (core/src/cuda/gpu_math.hpp) against the CPU activations, and the
// plugin's KERNEL-route runner (core/src/cuda/runner.hpp) run with the host policy against the CPU
// backend over random GRU/LSTM configurations: the same source the CUDA plugin compiles.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "../../core/src/cuda/host_copy.hpp"
#include "../../core/src/cuda/host_exec.hpp"
#include "../../core/src/cuda/runner.hpp"
#include "recur/activations.hpp"
#include "recur/backend.hpp"
#include "recur/cell.hpp"
#include "recur/config.hpp"

namespace recur {
namespace {

namespace g = recur::gpu;

// The ABI passes recur::Activation and recur::HardSigmoid values as gpu::Act / HardSigmoidForm.
#define RECUR_SAME_CODE(a, b) static_assert(static_cast<int>(Activation::a) == g::b, #a)
RECUR_SAME_CODE(linear, kLinear);
RECUR_SAME_CODE(tanh, kTanh);
RECUR_SAME_CODE(sigmoid, kSigmoid);
RECUR_SAME_CODE(hard_sigmoid, kHardSigmoid);
RECUR_SAME_CODE(relu, kRelu);
RECUR_SAME_CODE(relu6, kRelu6);
RECUR_SAME_CODE(leaky_relu, kLeakyRelu);
RECUR_SAME_CODE(elu, kElu);
RECUR_SAME_CODE(selu, kSelu);
RECUR_SAME_CODE(celu, kCelu);
RECUR_SAME_CODE(softplus, kSoftplus);
RECUR_SAME_CODE(softsign, kSoftsign);
RECUR_SAME_CODE(exponential, kExponential);
RECUR_SAME_CODE(silu, kSilu);
RECUR_SAME_CODE(hard_silu, kHardSilu);
RECUR_SAME_CODE(gelu, kGelu);
RECUR_SAME_CODE(mish, kMish);
RECUR_SAME_CODE(log_sigmoid, kLogSigmoid);
RECUR_SAME_CODE(sparse_plus, kSparsePlus);
RECUR_SAME_CODE(squareplus, kSquareplus);
RECUR_SAME_CODE(tanh_shrink, kTanhShrink);
RECUR_SAME_CODE(hard_tanh, kHardTanh);
RECUR_SAME_CODE(soft_shrink, kSoftShrink);
RECUR_SAME_CODE(hard_shrink, kHardShrink);
RECUR_SAME_CODE(sparse_sigmoid, kSparseSigmoid);
RECUR_SAME_CODE(softmax, kSoftmax);
RECUR_SAME_CODE(log_softmax, kLogSoftmax);
RECUR_SAME_CODE(sparsemax, kSparsemax);
#undef RECUR_SAME_CODE
static_assert(static_cast<int>(Activation::sparsemax) + 1 == g::kActCount, "gpu::Act covers every activation");
static_assert(static_cast<int>(HardSigmoid::keras2) == g::kKeras2 &&
                  static_cast<int>(HardSigmoid::keras3_0) == g::kKeras3_0 &&
                  static_cast<int>(HardSigmoid::keras3) == g::kKeras3,
              "hard_sigmoid variants");

using Vec = std::vector<float>;

Vec random_vec(std::size_t n, std::mt19937& gen, float scale) {
  std::normal_distribution<float> dist(0.0f, scale);
  Vec v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

// Values around every threshold of activations.cpp and Eigen's approximations, plus a dense grid.
Vec probe_values() {
  Vec v = {0.0f, -0.0f, 1e-8f, -1e-8f, 0.0003999f, 0.0004f, 0.0004001f, -0.0004f, 0.5f, -0.5f, 0.5000001f,
           -0.5000001f, 1.0f, -1.0f, 0.9999999f, -0.9999999f, 2.5f, -2.5f, 3.0f, -3.0f, 6.0f, -6.0f, 7.9053111f,
           -7.9053111f, 8.0f, -8.0f, -9.0f, -9.0000005f, -8.9999995f, 13.942385f, -13.942385f, 13.942386f,
           -13.942386f, 15.643771f, 15.7f, 20.0f, -20.0f, 40.0f, -40.0f, 80.0f, -80.0f, -100.0f};
  for (float x = -30.0f; x <= 30.0f; x += 0.01171875f) v.push_back(x);
  std::mt19937 gen(11);
  const Vec r = random_vec(2000, gen, 4.0f);
  v.insert(v.end(), r.begin(), r.end());
  return v;
}

// Eigen's FMA forms (NEON on aarch64, x86 builds with FMA flags) round a few ulps away from the
// device's unfused copies; the baseline x86 build has the same unfused forms.
#if defined(EIGEN_VECTORIZE_FMA) || (defined(EIGEN_VECTORIZE_NEON) && defined(__ARM_FEATURE_FMA))
constexpr float kActivationTolerance = 6e-7f;
#else
constexpr float kActivationTolerance = 2e-7f;
#endif

TEST(GpuMath, ElementwiseActivationsMatchCpu) {
  const Vec xs = probe_values();
  for (int a = 0; a < g::kActCount; ++a) {
    if (g::is_row_activation(a)) continue;
    for (int hs = 0; hs < g::kHardSigmoidFormCount; ++hs) {
      ActivationFn fn{static_cast<Activation>(a), static_cast<HardSigmoid>(hs)};
      Vec cpu = xs;
      apply_activation(fn, cpu.data(), 1, static_cast<Index>(cpu.size()));
      for (std::size_t i = 0; i < xs.size(); ++i) {
        const float gpu = g::activate(a, hs, xs[i]);
        ASSERT_FALSE(std::isnan(gpu)) << "activation " << a << " at " << xs[i];
        // Identical formulas; only libm's exp/log/erf may differ from Eigen's in the last bit.
        const float tol = kActivationTolerance * std::max(1.0f, std::fabs(cpu[i]));
        ASSERT_NEAR(gpu, cpu[i], tol) << "activation " << a << " variant " << hs << " at x = " << xs[i];
      }
    }
  }
}

TEST(GpuMath, TanhAndSigmoidAreEigensApproximations) {
  // The CPU's tanh and sigmoid are Eigen's rational approximations, not libm's; gpu_math copies them
  // without FMA (the device builds with --fmad=false), which is the CPU build's form unless
  // RECUR_ARCH_FLAGS enables FMA.
#if defined(EIGEN_VECTORIZE_FMA) || (defined(EIGEN_VECTORIZE_NEON) && defined(__ARM_FEATURE_FMA))
  // (Eigen's NEON pmadd is vfmaq_f32 wherever the target has FMA, as every aarch64 CPU does.)
  GTEST_SKIP() << "this build's Eigen uses FMA forms of tanh and sigmoid";
#endif
  const Vec xs = probe_values();
  Vec t = xs, s = xs;
  apply_activation({Activation::tanh, HardSigmoid::keras3}, t.data(), 1, static_cast<Index>(t.size()));
  apply_activation({Activation::sigmoid, HardSigmoid::keras3}, s.data(), 1, static_cast<Index>(s.size()));
  std::size_t tanh_exact = 0, sigmoid_exact = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    tanh_exact += g::eigen_tanh(xs[i]) == t[i];
    sigmoid_exact += g::eigen_sigmoid(xs[i]) == s[i];
  }
  EXPECT_GT(tanh_exact, xs.size() * 9 / 10);
  EXPECT_GT(sigmoid_exact, xs.size() * 9 / 10);
}

TEST(GpuMath, HardSigmoidVariants) {
  for (float x : probe_values()) {
    for (int hs = 0; hs < g::kHardSigmoidFormCount; ++hs) {
      float cpu = x;
      apply_activation({Activation::hard_sigmoid, static_cast<HardSigmoid>(hs)}, &cpu, 1, 1);
      ASSERT_EQ(g::hard_sigmoid(x, hs), cpu) << "variant " << hs << " at " << x;
    }
  }
}

TEST(GpuMath, RowActivationsMatchCpu) {
  std::mt19937 gen(5);
  for (int a : {g::kSoftmax, g::kLogSoftmax, g::kSparsemax}) {
    for (int n : {1, 2, 3, 5, 8, 17, 64}) {
      for (int rep = 0; rep < 20; ++rep) {
        Vec row = random_vec(static_cast<std::size_t>(n), gen, rep % 2 ? 3.0f : 0.7f);
        if (rep % 4 == 3)  // ties: sparsemax walks equal values in a defined order
          for (auto& x : row) x = std::round(x);
        Vec cpu = row;
        apply_activation({static_cast<Activation>(a), HardSigmoid::keras3}, cpu.data(), 1, n);
        // Strided, as the runner's gate blocks are.
        Vec strided(static_cast<std::size_t>(2 * n), 99.0f);
        for (int j = 0; j < n; ++j) strided[static_cast<std::size_t>(2 * j)] = row[static_cast<std::size_t>(j)];
        g::activate_row(a, g::kKeras3, strided.data(), n, 2);
        for (int j = 0; j < n; ++j) {
          ASSERT_NEAR(strided[static_cast<std::size_t>(2 * j)], cpu[static_cast<std::size_t>(j)], 1e-6)
              << "activation " << a << " n " << n << " rep " << rep << " j " << j;
          ASSERT_EQ(strided[static_cast<std::size_t>(2 * j + 1)], 99.0f);
        }
      }
    }
  }
}

// ---- the runner against the CPU backend --------------------------------------------------------

struct Case {
  bool gru = true;
  bool simple = false;  // SimpleRNN (gru is then false)
  bool reset_after = true;
  bool use_bias = true;
  int implementation = 2;  // LSTM: 2 adds the bias after x@K + h@U
  ActivationFn act{Activation::tanh, HardSigmoid::keras3};
  ActivationFn ract{Activation::sigmoid, HardSigmoid::keras3};
  int B = 2, T = 5, u = 3, F = 4;
  int mask_kind = 0;  // 0 none, 1 random holes, 2 + an all-masked row, 3 leading masked steps
  bool go_backwards = false;
  bool zero_output_for_mask = false;
  bool unrolled_quirk = false;
  bool time_major = false;
  bool carried = false;
  bool per_gate = false;  // num_inputs == G with recurrent masks (Keras implementation 1 dropout)
  Index budget = Index(1) << 22;
  unsigned seed = 1;

  // cell: 0 GRU reset_after, 1 GRU reset_after=False, 2 LSTM implementation 2, 3 LSTM
  // implementation 1, 4 SimpleRNN.
  void set_cell(int cell) {
    simple = cell == 4;
    gru = cell < 2;
    reset_after = cell == 0;
    implementation = cell == 3 ? 1 : 2;
  }

  std::string describe() const {
    return std::string(simple ? "SimpleRNN" : (gru ? "GRU" : "LSTM")) + " reset_after=" + std::to_string(reset_after) +
           " bias=" + std::to_string(use_bias) + " impl=" + std::to_string(implementation) +
           " act=" + std::to_string(static_cast<int>(act.kind)) + "/" + std::to_string(static_cast<int>(ract.kind)) +
           " B=" + std::to_string(B) + " T=" + std::to_string(T) + " u=" + std::to_string(u) +
           " F=" + std::to_string(F) + " mask=" + std::to_string(mask_kind) + " back=" + std::to_string(go_backwards) +
           " zero=" + std::to_string(zero_output_for_mask) + " quirk=" + std::to_string(unrolled_quirk) +
           " tm=" + std::to_string(time_major) + " carried=" + std::to_string(carried) +
           " per_gate=" + std::to_string(per_gate) + " budget=" + std::to_string(budget) +
           " seed=" + std::to_string(seed);
  }
};

void run_case(const Case& k) {
  SCOPED_TRACE(k.describe());
  std::mt19937 gen(k.seed);
  const LayerKind kind = k.simple ? LayerKind::simple_rnn : (k.gru ? LayerKind::gru : LayerKind::lstm);
  LayerConfig cfg = LayerConfig::defaults(kind, DialectInfo::latest(Dialect::keras3));
  cfg.units = k.u;
  cfg.input_size = k.F;
  cfg.use_bias = k.use_bias;
  cfg.reset_after = k.reset_after || !k.gru;
  cfg.implementation = k.implementation;
  cfg.activation = k.act;
  cfg.recurrent_activation = k.ract;
  Cell cell(cfg);
  const int G = cell.gates(), ns = cell.num_states();
  const Index W = cell.width(), B = k.B, T = k.T, u = k.u, F = k.F, rows = B * T;

  CellParams p;
  p.kernel = Eigen::Map<const RowMatrix>(random_vec(static_cast<std::size_t>(F * W), gen, 0.5f).data(), F, W);
  // A SimpleRNN with large recurrent weights is chaotic: the two backends' GEMM rounding would grow
  // without bound. Keep its recurrent map contractive (spectral radius about 0.8).
  const float rscale = k.simple ? 0.8f / std::sqrt(static_cast<float>(u)) : 0.5f;
  p.recurrent = Eigen::Map<const RowMatrix>(random_vec(static_cast<std::size_t>(u * W), gen, rscale).data(), u, W);
  if (k.use_bias) {
    p.input_bias = Eigen::Map<const RowVector>(random_vec(static_cast<std::size_t>(W), gen, 0.3f).data(), W);
    if (k.gru && k.reset_after)
      p.recurrent_bias = Eigen::Map<const RowVector>(random_vec(static_cast<std::size_t>(W), gen, 0.3f).data(), W);
  }
  cell.set_params(p);

  const int n_in = k.per_gate ? G : 1;
  std::vector<Vec> inputs;
  std::vector<const float*> input_ptrs;
  for (int i = 0; i < n_in; ++i) inputs.push_back(random_vec(static_cast<std::size_t>(rows * F), gen, 1.0f));
  for (auto& x : inputs) input_ptrs.push_back(x.data());
  auto row_index = [&](Index b, Index t) { return k.time_major ? t * B + b : b * T + t; };

  std::vector<std::uint8_t> mask;
  if (k.mask_kind > 0) {
    std::bernoulli_distribution keep(0.7);
    mask.resize(static_cast<std::size_t>(rows));
    for (auto& m : mask) m = keep(gen) ? 1 : 0;
    if (k.mask_kind >= 2 && B > 1)
      for (Index t = 0; t < T; ++t) mask[static_cast<std::size_t>(row_index(1, t))] = 0;
    if (k.mask_kind == 3)
      for (Index b = 0; b < B; ++b)
        for (Index t = 0; t < std::min<Index>(2, T); ++t) mask[static_cast<std::size_t>(row_index(b, t))] = 0;
  }
  std::vector<RowMatrix> rec_masks;
  Vec rec_masks_flat;
  if (k.per_gate) {
    std::bernoulli_distribution keep(0.6);
    for (int gi = 0; gi < G; ++gi) {
      RowMatrix m(B, u);
      for (Index i = 0; i < m.size(); ++i) m.data()[i] = keep(gen) ? 1.0f / 0.6f : 0.0f;
      rec_masks.push_back(m);
      rec_masks_flat.insert(rec_masks_flat.end(), m.data(), m.data() + m.size());
    }
  }
  const Vec h0 = random_vec(static_cast<std::size_t>(ns * B * u), gen, 0.5f);
  const Vec carried0 = random_vec(static_cast<std::size_t>(B * u), gen, 0.5f);

  // CPU backend.
  std::vector<RowMatrix> cpu_states(static_cast<std::size_t>(ns));
  for (int s = 0; s < ns; ++s)
    cpu_states[static_cast<std::size_t>(s)] = Eigen::Map<const RowMatrix>(h0.data() + s * B * u, B, u);
  RowMatrix cpu_carried = Eigen::Map<const RowMatrix>(carried0.data(), B, u);
  Vec cpu_seq(static_cast<std::size_t>(rows * u), -7.0f), cpu_last(static_cast<std::size_t>(B * u), -7.0f);
  SequenceJob job;
  job.inputs = input_ptrs.data();
  job.num_inputs = n_in;
  job.batch = B;
  job.timesteps = T;
  job.time_major = k.time_major;
  job.go_backwards = k.go_backwards;
  job.mask = mask.empty() ? nullptr : mask.data();
  job.zero_output_for_mask = k.zero_output_for_mask;
  job.unrolled_mask_quirk = k.unrolled_quirk;
  job.recurrent_masks = k.per_gate ? &rec_masks : nullptr;
  job.states = cpu_states.data();
  job.carried_output = k.carried ? &cpu_carried : nullptr;
  job.sequence_output = cpu_seq.data();
  job.last_output = cpu_last.data();
  SequenceWorkspace ws;
  ws.projection_budget = k.budget;
  cpu_backend().run_sequence(cell, job, ws);

  // The plugin's runner with the host policy.
  recur_gpu_layer_desc d{};
  d.cell = k.simple ? RECUR_GPU_CELL_SIMPLE_RNN : (k.gru ? RECUR_GPU_CELL_GRU : RECUR_GPU_CELL_LSTM);
  d.units = k.u;
  d.input_size = k.F;
  d.reset_after = k.reset_after;
  d.use_bias = k.use_bias;
  d.bias_in_projection = k.use_bias && (k.gru || k.simple || k.implementation == 1);
  d.activation = static_cast<int32_t>(k.act.kind);
  d.activation_hard_sigmoid = static_cast<int32_t>(k.act.hard_sigmoid);
  d.recurrent_activation = static_cast<int32_t>(k.ract.kind);
  d.recurrent_activation_hard_sigmoid = static_cast<int32_t>(k.ract.hard_sigmoid);
  const g::LayerSpec spec = g::make_spec(d);
  g::DeviceWeights w;
  w.kernel = p.kernel.data();
  w.recurrent = p.recurrent.data();
  w.input_bias = k.use_bias ? p.input_bias.data() : nullptr;
  w.recurrent_bias = p.recurrent_bias.size() ? p.recurrent_bias.data() : nullptr;

  Vec states = h0, carried = carried0;
  Vec seq(static_cast<std::size_t>(rows * u), -7.0f), last(static_cast<std::size_t>(B * u), -7.0f);
  Vec carried_out(static_cast<std::size_t>(B * u), -7.0f);
  g::SequenceArgs a;
  a.inputs = input_ptrs.data();
  a.num_inputs = n_in;
  a.batch = B;
  a.timesteps = T;
  a.time_major = k.time_major;
  a.go_backwards = k.go_backwards;
  a.mask = mask.empty() ? nullptr : mask.data();
  a.zero_output_for_mask = k.zero_output_for_mask;
  a.unrolled_mask_quirk = k.unrolled_quirk;
  a.recurrent_masks = k.per_gate ? rec_masks_flat.data() : nullptr;
  a.states = states.data();
  a.carried_in = k.carried ? carried.data() : nullptr;
  a.carried_out = carried_out.data();
  a.sequence_output = seq.data();
  a.last_output = last.data();
  g::HostExec ex(0, nullptr);
  g::Arena measure;
  g::carve_run(measure, spec, B, T, n_in, k.per_gate, k.budget);
  g::Arena arena(static_cast<char*>(ex.scratch(measure.size())));
  const g::RunBuffers rb = g::carve_run(arena, spec, B, T, n_in, k.per_gate, k.budget);
  g::run_sequence(ex, spec, w, a, rb);

  // The two GEMMs sum in different orders, so unbounded activations (exponential, relu) that
  // reach large values differ by a few float ulps of the value: relative beyond 1.
  auto tol = [](float ref) { return 1e-5f * std::max(1.0f, std::fabs(ref)); };
  for (std::size_t i = 0; i < seq.size(); ++i) ASSERT_NEAR(seq[i], cpu_seq[i], tol(cpu_seq[i])) << "sequence output " << i;
  for (std::size_t i = 0; i < last.size(); ++i) ASSERT_NEAR(last[i], cpu_last[i], tol(cpu_last[i])) << "last output " << i;
  for (int s = 0; s < ns; ++s)
    for (Index i = 0; i < B * u; ++i) {
      const float ref = cpu_states[static_cast<std::size_t>(s)].data()[i];
      ASSERT_NEAR(states[static_cast<std::size_t>(s * B * u + i)], ref, tol(ref)) << "state " << s << " at " << i;
    }
  // Without a carried output the CPU's last output is what a stream would carry.
  for (Index i = 0; i < B * u; ++i) {
    const float ref = k.carried ? cpu_carried.data()[i] : cpu_last[static_cast<std::size_t>(i)];
    ASSERT_NEAR(carried_out[static_cast<std::size_t>(i)], ref, tol(ref)) << "carried output " << i;
  }
}

struct ActPair {
  ActivationFn act, ract;
};

std::vector<ActPair> activation_pairs() {
  auto f = [](Activation a, HardSigmoid h = HardSigmoid::keras3) { return ActivationFn{a, h}; };
  return {
      {f(Activation::tanh), f(Activation::sigmoid)},
      {f(Activation::relu), f(Activation::hard_sigmoid, HardSigmoid::keras2)},
      {f(Activation::gelu), f(Activation::hard_sigmoid, HardSigmoid::keras3_0)},
      {f(Activation::selu), f(Activation::hard_sigmoid, HardSigmoid::keras3)},
      {f(Activation::softsign), f(Activation::sparse_sigmoid)},
      {f(Activation::linear), f(Activation::hard_silu)},
      {f(Activation::mish), f(Activation::log_sigmoid)},
      {f(Activation::softmax), f(Activation::sigmoid)},        // row-wise activation
      {f(Activation::tanh), f(Activation::softmax)},           // row-wise recurrent activation
      {f(Activation::sparsemax), f(Activation::log_softmax)},  // both row-wise
      {f(Activation::log_softmax), f(Activation::sparsemax)},
  };
}

TEST(GpuRunner, MatchesCpuOverActivationsAndCells) {
  unsigned seed = 100;
  unsigned simple_seed = 20100;  // SimpleRNN cases leave the others' seeds as they were
  for (const ActPair& ap : activation_pairs()) {
    for (int cell = 0; cell < 5; ++cell) {  // GRU reset_after, GRU v1, LSTM impl 2, LSTM impl 1, SimpleRNN
      for (bool bias : {true, false}) {
        Case k;
        k.set_cell(cell);
        k.use_bias = bias;
        k.act = ap.act;
        k.ract = ap.ract;
        k.seed = k.simple ? simple_seed++ : seed++;
        run_case(k);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(GpuRunner, MatchesCpuWithMasksAndLayouts) {
  unsigned seed = 500;
  unsigned simple_seed = 20500;  // SimpleRNN cases leave the others' seeds as they were
  for (int cell = 0; cell < 5; ++cell) {
    for (int mask_kind = 0; mask_kind < 4; ++mask_kind) {
      for (int flags = 0; flags < 16; ++flags) {
        Case k;
        k.set_cell(cell);
        k.mask_kind = mask_kind;
        k.go_backwards = flags & 1;
        k.zero_output_for_mask = flags & 2;
        k.unrolled_quirk = (flags & 4) && k.go_backwards;
        k.time_major = flags & 8;
        k.carried = (flags + mask_kind) % 2;
        k.B = 3;
        k.T = 6;
        k.seed = k.simple ? simple_seed++ : seed++;
        run_case(k);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(GpuRunner, MatchesCpuWithPerGateInputsAndRecurrentMasks) {
  unsigned seed = 900;
  unsigned simple_seed = 20900;  // SimpleRNN cases leave the others' seeds as they were
  for (const ActPair& ap : activation_pairs()) {
    for (int cell = 0; cell < 5; ++cell) {
      Case k;
      k.set_cell(cell);
      k.implementation = 1;  // Keras forces implementation 1 with recurrent dropout
      k.act = ap.act;
      k.ract = ap.ract;
      k.per_gate = true;
      k.mask_kind = 1 + cell % 3;
      k.go_backwards = cell % 2;
      k.seed = k.simple ? simple_seed++ : seed++;
      run_case(k);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(GpuRunner, MatchesCpuWhenChunked) {
  // A budget of a few rows' projections forces chunks of 1, 2 and 3 timesteps (and a short last one).
  unsigned seed = 1300;
  unsigned simple_seed = 21300;  // SimpleRNN cases leave the others' seeds as they were
  for (int cell = 0; cell < 5; ++cell) {
    for (Index steps : {1, 2, 3}) {
      for (bool per_gate : {false, true}) {
        Case k;
        k.set_cell(cell);
        if (per_gate) k.implementation = 1;
        k.per_gate = per_gate;
        k.B = 3;
        k.T = 11;
        k.budget = steps * k.B * (k.simple ? 1 : (k.gru ? 3 : 4)) * k.u;
        k.mask_kind = 1;
        k.go_backwards = steps % 2;
        k.time_major = per_gate;
        k.seed = k.simple ? simple_seed++ : seed++;
        run_case(k);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(GpuRunner, MatchesCpuOnTinyAndEmptyShapes) {
  unsigned seed = 1700;
  unsigned simple_seed = 21700;  // SimpleRNN cases leave the others' seeds as they were
  for (int cell = 0; cell < 5; ++cell) {
    for (auto shape : {std::vector<int>{1, 1, 1, 1}, {1, 0, 2, 3}, {0, 4, 2, 3}, {2, 1, 1, 5}, {1, 40, 1, 1}}) {
      for (int mask_kind : {0, 1}) {
        Case k;
        k.set_cell(cell);
        k.B = shape[0];
        k.T = shape[1];
        k.u = shape[2];
        k.F = shape[3];
        k.mask_kind = mask_kind;
        k.carried = true;
        k.seed = k.simple ? simple_seed++ : seed++;
        run_case(k);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// A case of cell `cell` (as Case::set_cell) and this shape with a mask, its seed the next of
// `seed`, or of `simple_seed` for SimpleRNN (so SimpleRNN cases leave the others' seeds as they were).
Case shaped_case(int cell, int B, int T, int u, int F, unsigned& seed, unsigned& simple_seed) {
  Case k;
  k.set_cell(cell);
  k.B = B;
  k.T = T;
  k.u = u;
  k.F = F;
  k.mask_kind = 1;
  k.seed = k.simple ? simple_seed++ : seed++;
  return k;
}

TEST(GpuRunner, MatchesCpuOnWiderLayers) {
  unsigned seed = 2100, simple_seed = 22100;
  for (int cell = 0; cell < 5; ++cell) {
    run_case(shaped_case(cell, 16, 12, 48, 24, seed, simple_seed));
    if (HasFatalFailure()) return;
  }
}

// Above the fused-step limit a step is the recurrent GEMM and the gate kernels (GRU
// reset_after=False's small candidate product still fused), and the GEMMs are the library's.
TEST(GpuRunner, MatchesCpuAboveTheFusedStepLimit) {
  unsigned seed = 2300, simple_seed = 22300;
  for (int cell = 0; cell < 5; ++cell) {
    const Case k = shaped_case(cell, 96, 3, 192, 32, seed, simple_seed);
    if (!k.simple) {
      ASSERT_GT(int64_t(k.B) * k.u * k.u * 3, gpu::kFusedStepWork);
    }
    run_case(k);
    if (HasFatalFailure()) return;
  }
}

// A small batch's sums are split into chunks (the last one short) and updated in place, over one
// step (the input projected in the same passes) and several.
TEST(GpuRunner, MatchesCpuWithSplitSums) {
  unsigned seed = 2500, simple_seed = 22500;
  for (int T : {1, 5}) {
    for (int cell = 0; cell < 5; ++cell) {
      const Case k = shaped_case(cell, 3, T, 100, 150, seed, simple_seed);
      if (cell != 1) {  // GRU reset_after=False is not split
        gpu::LayerSpec spec;
        spec.cell = k.simple ? RECUR_GPU_CELL_SIMPLE_RNN : (k.gru ? RECUR_GPU_CELL_GRU : RECUR_GPU_CELL_LSTM);
        spec.reset_after = k.gru && k.reset_after;
        spec.units = k.u;
        spec.input_size = k.F;
        EXPECT_GT(gpu::plan_steps(spec, k.B, k.T, 1, false).chunks, 1) << "cell " << cell << " T " << T;
      }
      run_case(k);
      if (HasFatalFailure()) return;
    }
  }
}

// Large staging copies split over threads land byte for byte, whatever the split.
TEST(GpuHostCopy, SplitCopiesAreExact) {
  // 0 and 1 byte, and 5 MiB + 4093 (over two threads' share, not a whole number of pages).
  for (std::size_t n : {std::size_t(0), std::size_t(1), (std::size_t(5) << 20) + 4093}) {
    std::vector<unsigned char> src(n), dst(n, 0xAB);
    for (std::size_t i = 0; i < n; ++i) src[i] = static_cast<unsigned char>(i * 2654435761u >> 13);
    for (std::size_t threads : {std::size_t(1), std::size_t(3), std::size_t(8)}) {
      std::fill(dst.begin(), dst.end(), static_cast<unsigned char>(0xAB));
      gpu::host_copy(dst.data(), src.data(), n, threads);
      EXPECT_TRUE(dst == src) << n << " bytes over " << threads << " threads";
    }
  }
}

}  // namespace
}  // namespace recur
