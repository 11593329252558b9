// SPDX-License-Identifier: Apache-2.0
// Initializers (keras_semantics.md §7, §2.1, §3.1): Keras's shape rules, limits and statistics.
// The random streams of TF/JAX cannot be reproduced, so the tests check limits, moments,
// orthogonality and seeding properties with bounds computed here from the Keras formulas.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <set>
#include <thread>
#include <vector>

#include "recur/config.hpp"
#include "recur/error.hpp"
#include "recur/initializers.hpp"
#include "recur/keras_json.hpp"
#include "recur/layer.hpp"
#include "recur/random.hpp"
#include "recur/specs.hpp"

namespace {

using recur::Dialect;
using recur::DialectInfo;
using recur::Index;
using recur::InitializerSpec;
using recur::LayerConfig;
using recur::LayerKind;
using recur::Tensor;
using K = InitializerSpec::Kind;
using M = InitializerSpec::Mode;
using D = InitializerSpec::Distribution;

constexpr double kTruncStd = 0.87962566103423978;  // stddev of N(0,1) truncated to [-2, 2]

InitializerSpec vs_spec(double scale, M mode, D dist) {
  InitializerSpec s;
  s.kind = K::variance_scaling;
  s.name = "variance_scaling";
  s.scale = scale;
  s.mode = mode;
  s.distribution = dist;
  return s;
}

struct Stats {
  double mean = 0, var = 0, max_abs = 0;
};

Stats stats_of(const Tensor& t) {
  Stats s;
  const Index n = t.size();
  for (Index i = 0; i < n; ++i) s.mean += t.data()[i];
  s.mean /= static_cast<double>(n);
  for (Index i = 0; i < n; ++i) {
    const double d = t.data()[i] - s.mean;
    s.var += d * d;
    s.max_abs = std::max(s.max_abs, std::fabs(static_cast<double>(t.data()[i])));
  }
  s.var /= static_cast<double>(n - 1);
  return s;
}

Tensor filled(const InitializerSpec& spec, std::vector<Index> shape, std::uint64_t rng_seed = 7) {
  Tensor t(std::move(shape));
  recur::Rng rng(rng_seed);
  recur::initialize(spec, t, rng);
  return t;
}

// Uniform on [-L, L]: every value inside, the extremes reached, variance L²/3.
void expect_uniform(const Tensor& t, double limit, const char* what) {
  const Stats s = stats_of(t);
  EXPECT_LE(s.max_abs, limit * (1 + 1e-6)) << what;
  EXPECT_GT(s.max_abs, 0.98 * limit) << what;
  EXPECT_NEAR(s.mean, 0.0, 0.02 * limit) << what;
  EXPECT_NEAR(s.var / (limit * limit / 3.0), 1.0, 0.03) << what;
}

// Truncated normal with parameter sigma (cut at ±2 sigma): variance sigma² * 0.8796².
void expect_truncated(const Tensor& t, double mean, double sigma, const char* what) {
  const Index n = t.size();
  double max_dev = 0;
  for (Index i = 0; i < n; ++i) max_dev = std::max(max_dev, std::fabs(t.data()[i] - mean));
  EXPECT_LE(max_dev, 2.0 * sigma * (1 + 1e-6)) << what;
  EXPECT_GT(max_dev, 1.9 * sigma) << what;
  const Stats s = stats_of(t);
  EXPECT_NEAR(s.mean, mean, 0.02 * sigma) << what;
  EXPECT_NEAR(s.var / (sigma * sigma * kTruncStd * kTruncStd), 1.0, 0.03) << what;
}

LayerConfig config_of(LayerKind kind, Dialect d, int units, int input) {
  LayerConfig c = LayerConfig::defaults(kind, DialectInfo::latest(d));
  c.units = units;
  c.input_size = input;
  c.seed = 1234;
  return c;
}

}  // namespace

TEST(Initializers, FanRule) {
  double fi = 0, fo = 0;
  recur::compute_fans({7}, fi, fo);
  EXPECT_EQ(fi, 7.0);
  EXPECT_EQ(fo, 7.0);
  recur::compute_fans({5, 24}, fi, fo);
  EXPECT_EQ(fi, 5.0);
  EXPECT_EQ(fo, 24.0);
  // rank >= 3: fan_in = shape[-2] * prod(shape[:-2]), fan_out = shape[-1] * prod(shape[:-2])
  recur::compute_fans({3, 4, 5}, fi, fo);
  EXPECT_EQ(fi, 12.0);
  EXPECT_EQ(fo, 15.0);
  recur::compute_fans({2, 3, 4, 5}, fi, fo);
  EXPECT_EQ(fi, 24.0);
  EXPECT_EQ(fo, 30.0);
}

TEST(Initializers, GlorotUniformUsesFusedWidthInLayers) {
  // GRU kernel (F, 3u): L = sqrt(6 / (F + 3u)); LSTM (F, 4u): sqrt(6 / (F + 4u)).
  for (int u : {8, 32}) {
    const int F = 10;
    recur::Layer gru(config_of(LayerKind::gru, Dialect::keras3, u, F));
    const Tensor& k = gru.weight(0);
    ASSERT_EQ(k.shape, (std::vector<Index>{F, 3 * u}));
    const double L = std::sqrt(6.0 / (F + 3.0 * u));
    const Stats s = stats_of(k);
    EXPECT_LE(s.max_abs, L * (1 + 1e-6));
    EXPECT_GT(s.max_abs, 0.9 * L);  // a per-gate (F, u) fan would give a larger limit
    EXPECT_LT(s.max_abs, std::sqrt(6.0 / (F + u)));

    recur::Layer lstm(config_of(LayerKind::lstm, Dialect::keras2, u, F));
    const double L4 = std::sqrt(6.0 / (F + 4.0 * u));
    const Stats s4 = stats_of(lstm.weight(0));
    EXPECT_LE(s4.max_abs, L4 * (1 + 1e-6));
    EXPECT_GT(s4.max_abs, 0.9 * L4);
  }
}

TEST(Initializers, GlorotUniformStatistics) {
  const Tensor t = filled(vs_spec(1.0, M::fan_avg, D::uniform), {200, 300});
  expect_uniform(t, std::sqrt(6.0 / 500.0), "glorot_uniform");
}

TEST(Initializers, HeAndLecunUniform) {
  expect_uniform(filled(vs_spec(2.0, M::fan_in, D::uniform), {200, 300}), std::sqrt(6.0 / 200.0), "he_uniform");
  expect_uniform(filled(vs_spec(1.0, M::fan_in, D::uniform), {200, 300}), std::sqrt(3.0 / 200.0), "lecun_uniform");
}

TEST(Initializers, NamedInitializersParseToKerasSettings) {
  const DialectInfo d = DialectInfo::latest(Dialect::keras3);
  struct Case {
    const char* text;
    double limit_or_sigma;
    bool uniform;
  };
  const double fi = 200, fo = 300;
  const Case cases[] = {
      {"glorot_uniform", std::sqrt(6.0 / (fi + fo)), true},
      {"he_uniform", std::sqrt(6.0 / fi), true},
      {"lecun_uniform", std::sqrt(3.0 / fi), true},
      {"glorot_normal", std::sqrt(2.0 / (fi + fo)) / kTruncStd, false},
      {"he_normal", std::sqrt(2.0 / fi) / kTruncStd, false},
      {"lecun_normal", std::sqrt(1.0 / fi) / kTruncStd, false},
      {R"({"class_name": "GlorotNormal", "config": {"seed": null}})", std::sqrt(2.0 / (fi + fo)) / kTruncStd, false},
      {R"({"module": "keras.initializers", "class_name": "HeUniform", "config": {"seed": null},
           "registered_name": null})",
       std::sqrt(6.0 / fi), true},
  };
  for (const Case& c : cases) {
    const Tensor t = filled(recur::parse_initializer_text(c.text, d, "kernel_initializer"), {200, 300});
    if (c.uniform)
      expect_uniform(t, c.limit_or_sigma, c.text);
    else
      expect_truncated(t, 0.0, c.limit_or_sigma, c.text);
  }
}

TEST(Initializers, TruncatedNormalsStayWithinTwoSigmaWithRightVariance) {
  // variance_scaling truncated: sigma = sqrt(s) / 0.8796 so the variance comes out as s.
  const double s = 2.0 / (200.0 + 300.0);
  const Tensor g = filled(vs_spec(1.0, M::fan_avg, D::truncated_normal), {200, 300});
  expect_truncated(g, 0.0, std::sqrt(s) / kTruncStd, "glorot_normal");
  EXPECT_NEAR(stats_of(g).var / s, 1.0, 0.03);

  InitializerSpec tn;
  tn.kind = K::truncated_normal;
  tn.name = "truncated_normal";
  tn.mean = 0.3;
  tn.stddev = 0.05;
  expect_truncated(filled(tn, {200, 300}), 0.3, 0.05, "truncated_normal");
}

TEST(Initializers, VarianceScalingModesAndDistributions) {
  const double fi = 200, fo = 300;
  for (M mode : {M::fan_in, M::fan_out, M::fan_avg}) {
    const double n = mode == M::fan_in ? fi : (mode == M::fan_out ? fo : (fi + fo) / 2.0);
    const double s = 3.0 / std::max(1.0, n);
    expect_uniform(filled(vs_spec(3.0, mode, D::uniform), {200, 300}), std::sqrt(3.0 * s), "vs uniform");
    expect_truncated(filled(vs_spec(3.0, mode, D::truncated_normal), {200, 300}), 0.0, std::sqrt(s) / kTruncStd,
                     "vs truncated");
    // untruncated: N(0, s); about 4.55% of values lie beyond 2 sigma.
    const Tensor t = filled(vs_spec(3.0, mode, D::untruncated_normal), {200, 300});
    const Stats st = stats_of(t);
    EXPECT_NEAR(st.var / s, 1.0, 0.03);
    Index beyond = 0;
    for (Index i = 0; i < t.size(); ++i) beyond += std::fabs(t.data()[i]) > 2.0 * std::sqrt(s);
    EXPECT_NEAR(static_cast<double>(beyond) / static_cast<double>(t.size()), 0.0455, 0.006);
  }
  // Rank 1 (a bias): fan_in = fan_out = n.
  expect_uniform(filled(vs_spec(1.0, M::fan_out, D::uniform), {40000}), std::sqrt(3.0 / 40000.0), "rank 1");
}

TEST(Initializers, RandomUniformAndNormal) {
  InitializerSpec u;
  u.kind = K::random_uniform;
  u.minval = -0.2;
  u.maxval = 0.6;
  const Tensor t = filled(u, {200, 300});
  const Stats s = stats_of(t);
  for (Index i = 0; i < t.size(); ++i) {
    ASSERT_GE(t.data()[i], -0.2f);
    ASSERT_LE(t.data()[i], 0.6f);
  }
  EXPECT_NEAR(s.mean, 0.2, 0.005);
  EXPECT_NEAR(s.var / (0.8 * 0.8 / 12.0), 1.0, 0.03);

  InitializerSpec nrm;
  nrm.kind = K::random_normal;
  nrm.mean = -1.0;
  nrm.stddev = 0.5;
  const Tensor tn = filled(nrm, {200, 300});
  const Stats sn = stats_of(tn);
  EXPECT_NEAR(sn.mean, -1.0, 0.01);
  EXPECT_NEAR(std::sqrt(sn.var), 0.5, 0.01);
  Index beyond = 0;  // an untruncated normal has about 4.55% of its mass beyond 2 sigma
  for (Index i = 0; i < tn.size(); ++i) beyond += std::fabs(tn.data()[i] + 1.0) > 1.0;
  EXPECT_NEAR(static_cast<double>(beyond) / static_cast<double>(tn.size()), 0.0455, 0.006);
}

namespace {
Eigen::MatrixXd as_matrix(const Tensor& t) { return t.value.cast<double>(); }
}  // namespace

TEST(Initializers, OrthogonalRecurrentKernelHasOrthonormalRows) {
  InitializerSpec o;
  o.kind = K::orthogonal;
  o.name = "orthogonal";
  for (int u : {4, 16}) {
    for (int gates : {3, 4}) {
      const Eigen::MatrixXd m = as_matrix(filled(o, {u, gates * u}));
      const Eigen::MatrixXd g = m * m.transpose();
      EXPECT_LT((g - Eigen::MatrixXd::Identity(u, u)).cwiseAbs().maxCoeff(), 1e-5) << "u=" << u;
      // The per-gate (u, u) blocks are not orthogonal themselves.
      const Eigen::MatrixXd b = m.leftCols(u);
      EXPECT_GT((b.transpose() * b - Eigen::MatrixXd::Identity(u, u)).cwiseAbs().maxCoeff(), 0.05);
    }
  }
  o.gain = 2.5;
  const Eigen::MatrixXd m = as_matrix(filled(o, {8, 24}));
  EXPECT_LT((m * m.transpose() - 6.25 * Eigen::MatrixXd::Identity(8, 8)).cwiseAbs().maxCoeff(), 1e-4);
}

TEST(Initializers, OrthogonalTallAndSquare) {
  InitializerSpec o;
  o.kind = K::orthogonal;
  const Eigen::MatrixXd tall = as_matrix(filled(o, {30, 10}));
  EXPECT_LT((tall.transpose() * tall - Eigen::MatrixXd::Identity(10, 10)).cwiseAbs().maxCoeff(), 1e-5);
  const Eigen::MatrixXd sq = as_matrix(filled(o, {12, 12}));
  EXPECT_LT((sq.transpose() * sq - Eigen::MatrixXd::Identity(12, 12)).cwiseAbs().maxCoeff(), 1e-5);
  EXPECT_LT((sq * sq.transpose() - Eigen::MatrixXd::Identity(12, 12)).cwiseAbs().maxCoeff(), 1e-5);
  // Rank 1 has no orthogonal form.
  Tensor v({5});
  recur::Rng rng(1);
  EXPECT_THROW(recur::initialize(o, v, rng), recur::Error);
}

TEST(Initializers, LayerRecurrentKernelIsOrthogonalAsAWhole) {
  recur::Layer gru(config_of(LayerKind::gru, Dialect::keras3, 6, 3));
  const Eigen::MatrixXd m = as_matrix(gru.weight(1));
  ASSERT_EQ(m.rows(), 6);
  ASSERT_EQ(m.cols(), 18);
  EXPECT_LT((m * m.transpose() - Eigen::MatrixXd::Identity(6, 6)).cwiseAbs().maxCoeff(), 1e-5);
}

TEST(Initializers, ConstantZerosOnesIdentity) {
  InitializerSpec c;
  c.kind = K::constant;
  c.value = 0.37;
  Tensor t = filled(c, {3, 4});
  for (Index i = 0; i < t.size(); ++i) EXPECT_EQ(t.data()[i], 0.37f);
  c.kind = K::ones;
  t = filled(c, {6});
  for (Index i = 0; i < t.size(); ++i) EXPECT_EQ(t.data()[i], 1.0f);
  c.kind = K::zeros;
  t = filled(c, {2, 5});
  for (Index i = 0; i < t.size(); ++i) EXPECT_EQ(t.data()[i], 0.0f);
  InitializerSpec id;
  id.kind = K::identity;
  id.gain = 2.0;
  for (std::vector<Index> shape : {std::vector<Index>{5, 7}, std::vector<Index>{7, 5}}) {
    t = filled(id, shape);
    for (Index i = 0; i < shape[0]; ++i)
      for (Index j = 0; j < shape[1]; ++j) EXPECT_EQ(t.value(i, j), i == j ? 2.0f : 0.0f);
  }
  Tensor v({4});
  recur::Rng rng(1);
  EXPECT_THROW(recur::initialize(id, v, rng), recur::Error);
}

TEST(Initializers, SeededInitializerRepeatsAndSeedsDiffer) {
  for (InitializerSpec spec : {vs_spec(1.0, M::fan_avg, D::uniform), vs_spec(2.0, M::fan_in, D::truncated_normal)}) {
    spec.seed = 42;
    const Tensor a = filled(spec, {20, 30}, 1);
    const Tensor b = filled(spec, {20, 30}, 99);  // the layer generator does not matter
    EXPECT_EQ(a.value, b.value);
    // Repeated calls on one generator return the same values too.
    recur::Rng rng(5);
    Tensor c({20, 30}), d({20, 30});
    recur::initialize(spec, c, rng);
    recur::initialize(spec, d, rng);
    EXPECT_EQ(c.value, d.value);
    spec.seed = 43;
    const Tensor e = filled(spec, {20, 30}, 1);
    EXPECT_NE(a.value, e.value);
  }
  // Unseeded: successive calls continue the generator, so values differ.
  recur::Rng rng(5);
  InitializerSpec u = vs_spec(1.0, M::fan_avg, D::uniform);
  Tensor c({20, 30}), d({20, 30});
  recur::initialize(u, c, rng);
  recur::initialize(u, d, rng);
  EXPECT_NE(c.value, d.value);
}

TEST(Initializers, LstmUnitForgetBias) {
  const int u = 5;
  LayerConfig c = config_of(LayerKind::lstm, Dialect::keras3, u, 3);
  c.bias_initializer.kind = K::constant;
  c.bias_initializer.value = 0.25;
  recur::Layer l(c);
  const Tensor& b = l.weight(2);
  ASSERT_EQ(b.shape, (std::vector<Index>{4 * u}));
  for (int j = 0; j < 4 * u; ++j) EXPECT_EQ(b.data()[j], (j >= u && j < 2 * u) ? 1.0f : 0.25f) << j;

  c.unit_forget_bias = false;
  recur::Layer l2(c);
  for (int j = 0; j < 4 * u; ++j) EXPECT_EQ(l2.weight(2).data()[j], 0.25f);

  // Keras calls the (seeded) bias initializer twice, with shapes (u,) and (2u,): blocks i and c
  // then share their values (§2.1).
  c.unit_forget_bias = true;
  c.bias_initializer = InitializerSpec{};
  c.bias_initializer.kind = K::random_uniform;
  c.bias_initializer.seed = 11;
  recur::Layer l3(c);
  const float* d = l3.weight(2).data();
  for (int j = 0; j < u; ++j) {
    EXPECT_EQ(d[u + j], 1.0f);
    EXPECT_EQ(d[2 * u + j], d[j]);
    EXPECT_LE(std::fabs(d[j]), 0.05f);
  }
  EXPECT_NE(d[0], d[1]);

  // The cell has the same rule; default zeros give [0, 1, 0, 0].
  recur::Layer cell(config_of(LayerKind::lstm_cell, Dialect::keras2, u, 3));
  for (int j = 0; j < 4 * u; ++j) EXPECT_EQ(cell.weight(2).data()[j], (j >= u && j < 2 * u) ? 1.0f : 0.0f);
}

TEST(Initializers, CuDNNLstmOnesInRecurrentForgetBlock) {
  const int u = 4;
  recur::Layer l(config_of(LayerKind::cudnn_lstm, Dialect::keras2, u, 3));
  const Tensor& b = l.weight(2);
  ASSERT_EQ(b.shape, (std::vector<Index>{8 * u}));
  for (int j = 0; j < 8 * u; ++j) EXPECT_EQ(b.data()[j], (j >= 5 * u && j < 6 * u) ? 1.0f : 0.0f) << j;
  LayerConfig c = config_of(LayerKind::cudnn_lstm, Dialect::keras2, u, 3);
  c.unit_forget_bias = false;
  recur::Layer l2(c);
  for (int j = 0; j < 8 * u; ++j) EXPECT_EQ(l2.weight(2).data()[j], 0.0f);
}

TEST(Initializers, WeightShapesPerKind) {
  const int u = 3, F = 5;
  using V = std::vector<Index>;
  struct Case {
    LayerKind kind;
    Dialect d;
    bool reset_after;
    V bias;
    int gates;
  };
  const Case cases[] = {
      {LayerKind::gru, Dialect::keras3, true, V{2, 3 * u}, 3},  {LayerKind::gru, Dialect::keras2, false, V{3 * u}, 3},
      {LayerKind::gru_cell, Dialect::keras3, true, V{2, 3 * u}, 3},
      {LayerKind::gru_cell, Dialect::keras3, false, V{3 * u}, 3}, {LayerKind::lstm, Dialect::keras3, true, V{4 * u}, 4},
      {LayerKind::lstm_cell, Dialect::keras2, true, V{4 * u}, 4}, {LayerKind::cudnn_gru, Dialect::keras2, true, V{6 * u}, 3},
      {LayerKind::cudnn_lstm, Dialect::keras2, true, V{8 * u}, 4},
  };
  for (const Case& cs : cases) {
    LayerConfig c = config_of(cs.kind, cs.d, u, F);
    c.reset_after = cs.reset_after;
    recur::Layer l(c);
    ASSERT_EQ(l.num_weights(), 3u) << recur::kind_name(cs.kind);
    EXPECT_EQ(l.weight(0).shape, (V{F, cs.gates * u})) << recur::kind_name(cs.kind);
    EXPECT_EQ(l.weight(1).shape, (V{u, cs.gates * u})) << recur::kind_name(cs.kind);
    EXPECT_EQ(l.weight(2).shape, cs.bias) << recur::kind_name(cs.kind);
    EXPECT_STREQ(l.weight_spec(0).name, "kernel");
    EXPECT_STREQ(l.weight_spec(1).name, "recurrent_kernel");
    EXPECT_STREQ(l.weight_spec(2).name, "bias");
    EXPECT_EQ(l.weights_size(), static_cast<std::size_t>(F * cs.gates * u + u * cs.gates * u +
                                                         (cs.bias.size() == 2 ? cs.bias[0] * cs.bias[1] : cs.bias[0])));
    if (!c.is_cudnn()) {
      c.use_bias = false;
      recur::Layer nb(c);
      EXPECT_EQ(nb.num_weights(), 2u) << recur::kind_name(cs.kind);
      EXPECT_THROW(nb.weight(2), recur::Error);
    }
  }
}

// Seeds for unseeded layers: distinct on every call.
TEST(Initializers, EntropySeedsAreDistinctAcrossCalls) {
  std::set<std::uint64_t> all;
  for (int i = 0; i < 20000; ++i) all.insert(recur::Rng::entropy());
  EXPECT_EQ(all.size(), 20000u);
  // Two unseeded layers start from different weights.
  LayerConfig c = config_of(LayerKind::gru, Dialect::keras3, 4, 3);
  c.seed.reset();
  recur::Layer a(c), b(c);
  EXPECT_NE(a.weight(0).value, b.weight(0).value);
}

// ... and from any thread (left out under qemu-aarch64, whose threads never join: scripts/cross.sh).
TEST(Initializers, EntropySeedsAreDistinctAcrossThreads) {
  constexpr int kThreads = 4, kCalls = 5000;
  std::vector<std::vector<std::uint64_t>> seeds(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&seeds, t] {
      for (int i = 0; i < kCalls; ++i) seeds[static_cast<std::size_t>(t)].push_back(recur::Rng::entropy());
    });
  for (auto& th : threads) th.join();
  std::set<std::uint64_t> all;
  for (const auto& s : seeds) all.insert(s.begin(), s.end());
  EXPECT_EQ(all.size(), static_cast<std::size_t>(kThreads * kCalls));
}
