// SPDX-License-Identifier: Apache-2.0
// Dropout and recurrent dropout (keras_semantics.md §8, §9, §1.3): mask values and statistics,
// caching, counts per dialect/implementation, inference equivalence, and the per-gate masked cell
// equations checked against an independent double-precision implementation.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <string>
#include <vector>

#include "recur/config.hpp"
#include "recur/error.hpp"
#include "recur/layer.hpp"

namespace {

using recur::Dialect;
using recur::DialectInfo;
using recur::Index;
using recur::LayerConfig;
using recur::LayerKind;
using recur::RowMatrix;

const DialectInfo kK2 = DialectInfo::latest(Dialect::keras2);
const DialectInfo kK3 = DialectInfo::latest(Dialect::keras3);

std::vector<float> sample(std::size_t n, float scale, unsigned seed) {
  std::vector<float> v;
  unsigned s = seed;
  for (std::size_t i = 0; i < n; ++i) {
    s = s * 1103515245u + 12345u;
    v.push_back(scale * (static_cast<float>((s >> 8) % 20001) / 10000.0f - 1.0f));
  }
  return v;
}

LayerConfig cell_config(LayerKind kind, const DialectInfo& d, int units, int input, float dropout, float rdropout,
                        int impl = 2) {
  LayerConfig c = LayerConfig::defaults(kind, d);
  c.units = units;
  c.input_size = input;
  c.dropout = dropout;
  c.recurrent_dropout = rdropout;
  c.implementation = impl;
  c.seed = 2024;
  return c;
}

// Random weights (including a non-zero bias) set through set_weights.
void randomize(recur::Layer& l, unsigned seed) {
  const auto w = sample(l.weights_size(), 0.6f, seed);
  l.set_weights(w.data(), w.size());
}

void expect_mask_values(const RowMatrix& m, float rate) {
  const double keep = 1.0 / (1.0 - static_cast<double>(rate));
  for (Index i = 0; i < m.size(); ++i) {
    const double v = m.data()[i];
    ASSERT_TRUE(v == 0.0 || std::fabs(v - keep) <= 1e-6 * keep) << "mask value " << v;
  }
}

double kept_fraction(const RowMatrix& m) {
  Index kept = 0;
  for (Index i = 0; i < m.size(); ++i) kept += m.data()[i] != 0.0f;
  return static_cast<double>(kept) / static_cast<double>(m.size());
}

struct CellOut {
  std::vector<float> out, states;
};

CellOut cell_step(recur::Layer& l, const std::vector<float>& x, Index B, const std::vector<float>& states,
                  bool training) {
  const auto& c = l.config();
  CellOut r;
  r.out.resize(static_cast<std::size_t>(B * c.units));
  r.states.resize(static_cast<std::size_t>(c.num_states() * B * c.units));
  l.cell_call(x.data(), x.size(), B, states.data(), states.size(), c.num_states(), training, r.out.data(), r.out.size(),
              r.states.data(), r.states.size());
  return r;
}

std::vector<float> layer_call(recur::Layer& l, const std::vector<float>& x, Index B, Index T, bool training) {
  std::vector<float> out(l.output_size(B, T));
  recur::LayerCall a;
  a.input = x.data();
  a.input_len = x.size();
  a.batch = B;
  a.timesteps = T;
  a.training = training;
  a.output = out.data();
  a.output_len = out.size();
  l.call(a);
  return out;
}

}  // namespace

TEST(Dropout, MaskValuesAndKeptFraction) {
  const Index B = 100;
  for (float rate : {0.3f, 0.75f}) {
    recur::Layer l(cell_config(LayerKind::gru_cell, kK3, 300, 300, rate, rate));
    const auto masks = l.dropout_mask(B, true);
    ASSERT_EQ(masks.size(), 3u);  // recurrent_dropout forces implementation 1
    const auto rmasks = l.recurrent_dropout_mask(B, true);
    ASSERT_EQ(rmasks.size(), 3u);
    for (const auto* set : {&masks, &rmasks})
      for (const RowMatrix& m : *set) {
        ASSERT_EQ(m.rows(), B);
        ASSERT_EQ(m.cols(), 300);
        expect_mask_values(m, rate);
        // 30000 Bernoulli(1 - rate) draws: standard deviation below 0.003.
        EXPECT_NEAR(kept_fraction(m), 1.0 - rate, 0.015);
      }
    // Per-gate masks are independent draws.
    EXPECT_NE(masks[0], masks[1]);
    EXPECT_NE(masks[1], masks[2]);
    EXPECT_NE(rmasks[0], rmasks[2]);
    EXPECT_NE(masks[0], rmasks[0]);
  }
}

TEST(Dropout, MasksAreCachedUntilReset) {
  recur::Layer l(cell_config(LayerKind::lstm_cell, kK3, 16, 8, 0.5f, 0.5f));
  const auto a = l.dropout_mask(4, true);
  const auto b = l.dropout_mask(4, true);
  ASSERT_EQ(a.size(), 4u);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]);
  const auto ra = l.recurrent_dropout_mask(4, true);
  const auto rb = l.recurrent_dropout_mask(4, true);
  for (std::size_t i = 0; i < ra.size(); ++i) EXPECT_EQ(ra[i], rb[i]);
  // A cached mask was made for one batch size.
  EXPECT_THROW(l.dropout_mask(5, true), recur::Error);
  // Resetting one cache leaves the other.
  l.reset_dropout_mask();
  const auto c = l.dropout_mask(4, true);
  EXPECT_NE(a[0], c[0]);
  const auto rc = l.recurrent_dropout_mask(4, true);
  EXPECT_EQ(ra[0], rc[0]);
  l.reset_recurrent_dropout_mask();
  EXPECT_NE(ra[0], l.recurrent_dropout_mask(4, true)[0]);
  // After a reset the batch size may change.
  l.reset_dropout_mask();
  EXPECT_EQ(l.dropout_mask(5, true)[0].rows(), 5);
  // The cell call uses the cached masks: two training calls give the same result until reset.
  const auto x = sample(5 * 8, 1.0f, 3);
  const std::vector<float> st(2 * 5 * 16, 0.1f);
  l.reset_dropout_mask();
  l.reset_recurrent_dropout_mask();
  const auto o1 = cell_step(l, x, 5, st, true);
  const auto o2 = cell_step(l, x, 5, st, true);
  EXPECT_EQ(o1.out, o2.out);
  l.reset_dropout_mask();
  l.reset_recurrent_dropout_mask();
  const auto o3 = cell_step(l, x, 5, st, true);
  EXPECT_NE(o1.out, o3.out);
}

TEST(Dropout, NoMasksWithoutRate) {
  recur::Layer l(cell_config(LayerKind::gru_cell, kK3, 4, 3, 0.0f, 0.0f));
  EXPECT_TRUE(l.dropout_mask(2, true).empty());
  EXPECT_TRUE(l.recurrent_dropout_mask(2, true).empty());
  recur::Layer d(cell_config(LayerKind::gru_cell, kK3, 4, 3, 0.5f, 0.0f));
  EXPECT_THROW(d.dropout_mask(0, true), recur::Error);
}

TEST(Dropout, OutsideTrainingKeras2GivesOnesKeras3Samples) {
  recur::Layer k2(cell_config(LayerKind::gru_cell, kK2, 32, 32, 0.5f, 0.5f));
  const auto m2 = k2.dropout_mask(8, false);
  const auto r2 = k2.recurrent_dropout_mask(8, false);
  for (const auto* set : {&m2, &r2}) {
    ASSERT_EQ(set->size(), 3u);
    for (const RowMatrix& m : *set) EXPECT_TRUE((m.array() == 1.0f).all());
  }
  recur::Layer k3(cell_config(LayerKind::gru_cell, kK3, 32, 32, 0.5f, 0.5f));
  const auto m3 = k3.dropout_mask(8, false);
  ASSERT_EQ(m3.size(), 3u);
  EXPECT_TRUE((m3[0].array() == 0.0f).any());
  expect_mask_values(m3[0], 0.5f);
  const auto r3 = k3.recurrent_dropout_mask(8, false);
  EXPECT_TRUE((r3[0].array() == 0.0f).any());
}

TEST(Dropout, MaskCountPerDialectAndImplementation) {
  struct Case {
    LayerKind kind;
    const DialectInfo* d;
    int impl;
    float rd;
    std::size_t count;
  };
  const Case cases[] = {
      {LayerKind::gru_cell, &kK2, 2, 0.0f, 3},  {LayerKind::gru_cell, &kK2, 1, 0.0f, 3},
      {LayerKind::lstm_cell, &kK2, 2, 0.0f, 4}, {LayerKind::lstm_cell, &kK2, 1, 0.0f, 4},
      {LayerKind::gru_cell, &kK3, 1, 0.0f, 3},  {LayerKind::gru_cell, &kK3, 2, 0.0f, 1},
      {LayerKind::lstm_cell, &kK3, 1, 0.0f, 4}, {LayerKind::lstm_cell, &kK3, 2, 0.0f, 1},
      {LayerKind::gru_cell, &kK3, 2, 0.2f, 3},  {LayerKind::lstm_cell, &kK3, 2, 0.2f, 4},
      // SimpleRNNCell: one input mask and one recurrent mask in both dialects.
      {LayerKind::simple_rnn_cell, &kK2, 2, 0.2f, 1}, {LayerKind::simple_rnn_cell, &kK3, 2, 0.2f, 1},
      {LayerKind::simple_rnn_cell, &kK3, 2, 0.0f, 1},
  };
  for (const Case& cs : cases) {
    recur::Layer l(cell_config(cs.kind, *cs.d, 5, 4, 0.3f, cs.rd, cs.impl));
    EXPECT_EQ(l.dropout_mask(2, true).size(), cs.count)
        << recur::kind_name(cs.kind) << " " << cs.d->name() << " impl " << cs.impl << " rd " << cs.rd;
    if (cs.rd > 0) {
      EXPECT_EQ(l.recurrent_dropout_mask(2, true).size(), static_cast<std::size_t>(l.config().gates()));
    }
  }
}

TEST(Dropout, RecurrentDropoutForcesImplementation1) {
  LayerConfig c = cell_config(LayerKind::gru, kK3, 4, 3, 0.0f, 0.0f, 2);
  EXPECT_EQ(c.effective_implementation(), 2);
  c.recurrent_dropout = 0.1f;
  EXPECT_EQ(c.effective_implementation(), 1);
  c.implementation = 1;
  c.recurrent_dropout = 0.0f;
  EXPECT_EQ(c.effective_implementation(), 1);
  c.dropout = 0.5f;  // input dropout alone does not change the implementation
  c.implementation = 2;
  EXPECT_EQ(c.effective_implementation(), 2);
}

TEST(Dropout, InferenceIgnoresDropoutExactly) {
  const Index B = 3, T = 5, F = 4;
  const auto x = sample(static_cast<std::size_t>(B * T * F), 1.2f, 11);
  for (const DialectInfo* d : {&kK2, &kK3}) {
    for (LayerKind kind : {LayerKind::gru, LayerKind::lstm, LayerKind::simple_rnn}) {
      for (float rd : {0.0f, 0.4f}) {
        LayerConfig c = cell_config(kind, *d, 6, F, 0.5f, rd);
        c.return_sequences = true;
        recur::Layer with(c);
        randomize(with, 5);
        LayerConfig p = c;
        p.dropout = p.recurrent_dropout = 0.0f;
        p.implementation = c.effective_implementation();  // same association order
        recur::Layer plain(p);
        randomize(plain, 5);
        const auto a = layer_call(with, x, B, T, false);
        const auto b = layer_call(plain, x, B, T, false);
        EXPECT_EQ(a, b) << d->name() << " " << recur::kind_name(kind) << " rd " << rd;
        // And training does change it.
        EXPECT_NE(layer_call(with, x, B, T, true), b);
      }
    }
  }
}

TEST(Dropout, ZeroRatesTrainingEqualsInference) {
  const Index B = 2, T = 4, F = 3;
  const auto x = sample(static_cast<std::size_t>(B * T * F), 1.0f, 12);
  for (const DialectInfo* d : {&kK2, &kK3}) {
    recur::Layer l(cell_config(LayerKind::lstm, *d, 5, F, 0.0f, 0.0f));
    randomize(l, 8);
    EXPECT_EQ(layer_call(l, x, B, T, true), layer_call(l, x, B, T, false));
  }
}

TEST(Dropout, GruCellImpl2TrainingEqualsInferenceOnMaskedInput) {
  const Index B = 6, F = 7, u = 5;
  for (const DialectInfo* d : {&kK2, &kK3}) {
    for (bool reset_after : {true, false}) {
      LayerConfig c = cell_config(LayerKind::gru_cell, *d, u, F, 0.4f, 0.0f, 2);
      c.reset_after = reset_after;
      recur::Layer l(c);
      randomize(l, 21);
      const auto x = sample(static_cast<std::size_t>(B * F), 1.0f, 4);
      const auto h = sample(static_cast<std::size_t>(B * u), 0.8f, 5);
      const auto trained = cell_step(l, x, B, h, true);
      const auto masks = l.dropout_mask(B, true);  // the cached masks the call used
      ASSERT_FALSE(masks.empty());
      std::vector<float> xm(x.size());
      for (Index b = 0; b < B; ++b)
        for (Index j = 0; j < F; ++j) xm[b * F + j] = x[b * F + j] * masks[0](b, j);
      const auto inferred = cell_step(l, xm, B, h, false);
      EXPECT_EQ(trained.out, inferred.out) << d->name() << " reset_after " << reset_after;
      EXPECT_EQ(trained.states, inferred.states);
      EXPECT_NE(trained.out, cell_step(l, x, B, h, false).out);
    }
  }
}

namespace {

double sig(double v) { return 1.0 / (1.0 + std::exp(-v)); }

Eigen::MatrixXd to_d(const float* p, Index r, Index c) {
  Eigen::MatrixXd m(r, c);
  for (Index i = 0; i < r; ++i)
    for (Index j = 0; j < c; ++j) m(i, j) = p[i * c + j];
  return m;
}
Eigen::MatrixXd to_d(const RowMatrix& m) { return m.cast<double>(); }

// Keras GRUCell.call, implementation 1, with per-gate input and recurrent masks (§1.2, §8):
// x_g = x * m_g, h_g = h * mr_g, the update uses the undropped h.
Eigen::MatrixXd gru_impl1_ref(const recur::Layer& l, const Eigen::MatrixXd& x, const Eigen::MatrixXd& h,
                              const std::vector<RowMatrix>& m, const std::vector<RowMatrix>& mr) {
  const auto& c = l.config();
  const Index u = c.units, F = c.input_size;
  const Eigen::MatrixXd K = to_d(l.weight(0).data(), F, 3 * u);
  const Eigen::MatrixXd U = to_d(l.weight(1).data(), u, 3 * u);
  Eigen::RowVectorXd bi = Eigen::RowVectorXd::Zero(3 * u), br = Eigen::RowVectorXd::Zero(3 * u);
  const float* b = l.weight(2).data();
  for (Index j = 0; j < 3 * u; ++j) {
    bi(j) = b[j];
    if (c.reset_after) br(j) = b[3 * u + j];
  }
  auto xg = [&](int g) {
    Eigen::MatrixXd xp = x.cwiseProduct(to_d(m[static_cast<std::size_t>(g)])) * K.middleCols(g * u, u);
    return Eigen::MatrixXd(xp.rowwise() + bi.segment(g * u, u));
  };
  auto hg = [&](int g) { return Eigen::MatrixXd(h.cwiseProduct(to_d(mr[static_cast<std::size_t>(g)]))); };
  const Eigen::MatrixXd xz = xg(0), xr = xg(1), xh = xg(2);
  Eigen::MatrixXd z, r, hh;
  if (c.reset_after) {
    const Eigen::MatrixXd rz = (hg(0) * U.middleCols(0, u)).rowwise() + br.segment(0, u);
    const Eigen::MatrixXd rr = (hg(1) * U.middleCols(u, u)).rowwise() + br.segment(u, u);
    const Eigen::MatrixXd rh = (hg(2) * U.middleCols(2 * u, u)).rowwise() + br.segment(2 * u, u);
    z = (xz + rz).unaryExpr(&sig);
    r = (xr + rr).unaryExpr(&sig);
    hh = (xh + r.cwiseProduct(rh)).unaryExpr([](double v) { return std::tanh(v); });
  } else {
    z = (xz + hg(0) * U.middleCols(0, u)).unaryExpr(&sig);
    r = (xr + hg(1) * U.middleCols(u, u)).unaryExpr(&sig);
    hh = (xh + r.cwiseProduct(hg(2)) * U.middleCols(2 * u, u)).unaryExpr([](double v) { return std::tanh(v); });
  }
  return z.cwiseProduct(h) + (Eigen::MatrixXd::Ones(z.rows(), z.cols()) - z).cwiseProduct(hh);
}

// Keras LSTMCell.call, implementation 1, with per-gate masks: returns [h', c'].
std::pair<Eigen::MatrixXd, Eigen::MatrixXd> lstm_impl1_ref(const recur::Layer& l, const Eigen::MatrixXd& x,
                                                           const Eigen::MatrixXd& h, const Eigen::MatrixXd& cst,
                                                           const std::vector<RowMatrix>& m,
                                                           const std::vector<RowMatrix>& mr) {
  const auto& c = l.config();
  const Index u = c.units, F = c.input_size;
  const Eigen::MatrixXd K = to_d(l.weight(0).data(), F, 4 * u);
  const Eigen::MatrixXd U = to_d(l.weight(1).data(), u, 4 * u);
  const Eigen::RowVectorXd b = to_d(l.weight(2).data(), 1, 4 * u);
  std::vector<Eigen::MatrixXd> pre;
  for (int g = 0; g < 4; ++g) {
    Eigen::MatrixXd p = x.cwiseProduct(to_d(m[static_cast<std::size_t>(g)])) * K.middleCols(g * u, u);
    p.rowwise() += b.segment(g * u, u);
    p += h.cwiseProduct(to_d(mr[static_cast<std::size_t>(g)])) * U.middleCols(g * u, u);
    pre.push_back(p);
  }
  auto th = [](double v) { return std::tanh(v); };
  const Eigen::MatrixXd i = pre[0].unaryExpr(&sig), f = pre[1].unaryExpr(&sig), g = pre[2].unaryExpr(th),
                        o = pre[3].unaryExpr(&sig);
  const Eigen::MatrixXd c2 = f.cwiseProduct(cst) + i.cwiseProduct(g);
  return {o.cwiseProduct(c2.unaryExpr(th)), c2};
}

}  // namespace

TEST(Dropout, GruCellImpl1PerGateMasksMatchEquations) {
  const Index B = 4, F = 6, u = 5;
  for (const DialectInfo* d : {&kK2, &kK3}) {
    for (bool reset_after : {true, false}) {
      LayerConfig c = cell_config(LayerKind::gru_cell, *d, u, F, 0.35f, 0.45f, 2);  // forced to impl 1
      c.reset_after = reset_after;
      recur::Layer l(c);
      randomize(l, 31);
      const auto x = sample(static_cast<std::size_t>(B * F), 1.0f, 6);
      const auto h = sample(static_cast<std::size_t>(B * u), 0.9f, 7);
      const auto got = cell_step(l, x, B, h, true);
      const auto m = l.dropout_mask(B, true);
      const auto mr = l.recurrent_dropout_mask(B, true);
      ASSERT_EQ(m.size(), 3u);
      ASSERT_EQ(mr.size(), 3u);
      const Eigen::MatrixXd want = gru_impl1_ref(l, to_d(x.data(), B, F), to_d(h.data(), B, u), m, mr);
      double worst = 0;
      for (Index b = 0; b < B; ++b)
        for (Index j = 0; j < u; ++j) {
          worst = std::max(worst, std::fabs(got.out[b * u + j] - want(b, j)));
          EXPECT_EQ(got.out[b * u + j], got.states[b * u + j]);
        }
      EXPECT_LT(worst, 1e-5) << d->name() << " reset_after " << reset_after;
      // A single shared mask (the Keras 3.0-3.7 form) would give something else.
      const std::vector<RowMatrix> shared_m(3, m[0]), shared_mr(3, mr[0]);
      const Eigen::MatrixXd other = gru_impl1_ref(l, to_d(x.data(), B, F), to_d(h.data(), B, u), shared_m, shared_mr);
      EXPECT_GT((other - want).cwiseAbs().maxCoeff(), 1e-3);
    }
  }
}

TEST(Dropout, LstmCellImpl1PerGateMasksMatchEquations) {
  const Index B = 3, F = 5, u = 4;
  for (const DialectInfo* d : {&kK2, &kK3}) {
    recur::Layer l(cell_config(LayerKind::lstm_cell, *d, u, F, 0.3f, 0.3f, 1));
    randomize(l, 41);
    const auto x = sample(static_cast<std::size_t>(B * F), 1.0f, 8);
    const auto hc = sample(static_cast<std::size_t>(2 * B * u), 0.9f, 9);
    const auto got = cell_step(l, x, B, hc, true);
    const auto m = l.dropout_mask(B, true);
    const auto mr = l.recurrent_dropout_mask(B, true);
    ASSERT_EQ(m.size(), 4u);
    ASSERT_EQ(mr.size(), 4u);
    const auto want =
        lstm_impl1_ref(l, to_d(x.data(), B, F), to_d(hc.data(), B, u), to_d(hc.data() + B * u, B, u), m, mr);
    for (Index b = 0; b < B; ++b)
      for (Index j = 0; j < u; ++j) {
        EXPECT_NEAR(got.out[b * u + j], want.first(b, j), 1e-5);
        EXPECT_NEAR(got.states[B * u + b * u + j], want.second(b, j), 1e-5);
      }
  }
}

TEST(Dropout, SeededLayerRepeatsTrainingOutput) {
  const Index B = 4, T = 6, F = 5;
  const auto x = sample(static_cast<std::size_t>(B * T * F), 1.0f, 13);
  for (const DialectInfo* d : {&kK2, &kK3}) {
    for (float rd : {0.0f, 0.3f}) {
      LayerConfig c = cell_config(LayerKind::gru, *d, 7, F, 0.3f, rd);
      c.return_sequences = true;
      c.seed = 77;
      recur::Layer a(c), b(c);
      const auto oa = layer_call(a, x, B, T, true);
      const auto ob = layer_call(b, x, B, T, true);
      EXPECT_EQ(oa, ob);
      // Masks are drawn again for every call.
      EXPECT_NE(layer_call(a, x, B, T, true), oa);
      // Another seed gives other weights and masks; with equal weights, other masks.
      c.seed = 78;
      recur::Layer e(c);
      std::vector<float> w(a.weights_size());
      recur::Layer a2(LayerConfig{a.config()});
      for (std::size_t i = 0, off = 0; i < a2.num_weights(); ++i) {
        a2.get_weight(i, w.data() + off, static_cast<std::size_t>(a2.weight(i).size()));
        off += static_cast<std::size_t>(a2.weight(i).size());
      }
      e.set_weights(w.data(), w.size());
      EXPECT_NE(layer_call(e, x, B, T, true), oa);
    }
  }
}

TEST(Dropout, Keras2FusedPathPredicate) {
  LayerConfig c = cell_config(LayerKind::gru, kK2, 4, 3, 0.2f, 0.0f);
  EXPECT_TRUE(c.keras2_fused_path());
  LayerConfig l = cell_config(LayerKind::lstm, kK2, 4, 3, 0.2f, 0.0f);
  EXPECT_TRUE(l.keras2_fused_path());
  LayerConfig x = c;
  x.reset_after = false;
  EXPECT_FALSE(x.keras2_fused_path());
  x = c;
  x.recurrent_dropout = 0.1f;
  EXPECT_FALSE(x.keras2_fused_path());
  x = c;
  x.unroll = true;
  EXPECT_FALSE(x.keras2_fused_path());
  x = c;
  x.use_bias = false;
  EXPECT_FALSE(x.keras2_fused_path());
  x = c;
  x.activation = recur::parse_activation("relu", kK2, "activation");
  EXPECT_FALSE(x.keras2_fused_path());
  x = l;
  x.recurrent_activation = recur::parse_activation("hard_sigmoid", kK2, "recurrent_activation");
  EXPECT_FALSE(x.keras2_fused_path());
  EXPECT_FALSE(cell_config(LayerKind::gru, kK3, 4, 3, 0.2f, 0.0f).keras2_fused_path());
  EXPECT_FALSE(cell_config(LayerKind::gru_cell, kK2, 4, 3, 0.2f, 0.0f).keras2_fused_path());
  // Keras 2's SimpleRNN always runs the generic loop.
  EXPECT_FALSE(cell_config(LayerKind::simple_rnn, kK2, 4, 3, 0.2f, 0.0f).keras2_fused_path());
}

TEST(Dropout, RateOneOnKeras2FusedPathThrowsElsewhereNoOp) {
  const Index B = 2, T = 3, F = 4;
  const auto x = sample(static_cast<std::size_t>(B * T * F), 1.0f, 14);
  for (LayerKind kind : {LayerKind::gru, LayerKind::lstm}) {
    LayerConfig c = cell_config(kind, kK2, 5, F, 1.0f, 0.0f);
    ASSERT_TRUE(c.keras2_fused_path());
    recur::Layer fused(c);
    EXPECT_THROW(layer_call(fused, x, B, T, true), recur::Error);
    EXPECT_NO_THROW(layer_call(fused, x, B, T, false));  // inference is unaffected

    LayerConfig g = c;
    g.activation = recur::parse_activation("relu", kK2, "activation");
    ASSERT_FALSE(g.keras2_fused_path());
    recur::Layer generic(g);
    EXPECT_EQ(layer_call(generic, x, B, T, true), layer_call(generic, x, B, T, false));
  }
  // The generic cell treats recurrent_dropout = 1.0 as a no-op too.
  LayerConfig r = cell_config(LayerKind::gru, kK2, 5, F, 0.0f, 1.0f, 1);
  recur::Layer rl(r);
  EXPECT_EQ(layer_call(rl, x, B, T, true), layer_call(rl, x, B, T, false));
}

TEST(Dropout, Keras2FusedPathMasksEachTimestep) {
  // On the Keras 2 fused path the input mask is drawn over the whole (B, T, F) input, so a sample
  // keeps its input at some steps and loses it at others. Keras 3 draws one (B, F) mask per call,
  // constant in time. With a constant input and a layer whose steps reveal whether x_t was dropped,
  // count per row how many steps kept their input.
  const Index B = 64, T = 8, F = 1, u = 1;
  LayerConfig c = cell_config(LayerKind::gru, kK2, u, F, 0.5f, 0.0f);
  c.return_sequences = true;
  ASSERT_TRUE(c.keras2_fused_path());
  recur::Layer l(c);
  // kernel (1, 3) = [0, 0, 1]: z = 0.5, r = 0.5; recurrent kernel 0; bias 0 -> h_t = 0.5 h + 0.5 tanh(x_t).
  const std::vector<float> w{0.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  l.set_weights(w.data(), w.size());
  const std::vector<float> x(static_cast<std::size_t>(B * T), 0.5f);
  const auto out = layer_call(l, x, B, T, true);
  // Recover which steps were dropped: h_t - 0.5 h_{t-1} is 0 (dropped) or 0.5 tanh(1.0) (kept, x*2).
  int mixed_rows = 0;
  for (Index b = 0; b < B; ++b) {
    int kept = 0;
    float prev = 0.0f;
    for (Index t = 0; t < T; ++t) {
      const float cur = out[static_cast<std::size_t>(b * T + t)];
      kept += std::fabs(cur - 0.5f * prev) > 0.1f;
      prev = cur;
    }
    mixed_rows += kept > 0 && kept < T;
  }
  // A mask constant in time would give kept == 0 or T for every row.
  EXPECT_GT(mixed_rows, B / 2);

  // The Keras 3 form (one mask per call, constant in time) gives all-or-nothing rows.
  LayerConfig c3 = c;
  c3.dialect = kK3;
  recur::Layer l3(c3);
  l3.set_weights(w.data(), w.size());
  const auto out3 = layer_call(l3, x, B, T, true);
  for (Index b = 0; b < B; ++b) {
    int kept = 0;
    float prev = 0.0f;
    for (Index t = 0; t < T; ++t) {
      const float cur = out3[static_cast<std::size_t>(b * T + t)];
      kept += std::fabs(cur - 0.5f * prev) > 0.1f;
      prev = cur;
    }
    EXPECT_TRUE(kept == 0 || kept == T) << "row " << b << " kept " << kept;
  }
}

// Keras SimpleRNNCell.call (keras_semantics.md §8 for the masks; Keras 2 and 3 alike):
// h' = act(((x * m) @ K + b) + (h * mr) @ U), one input mask and one recurrent mask, new state = h'.
TEST(Dropout, SimpleRnnCellMasksMatchEquations) {
  const Index B = 4, F = 6, u = 5;
  for (const DialectInfo* d : {&kK2, &kK3}) {
    recur::Layer l(cell_config(LayerKind::simple_rnn_cell, *d, u, F, 0.35f, 0.45f));
    randomize(l, 51);
    const auto x = sample(static_cast<std::size_t>(B * F), 1.0f, 10);
    const auto h = sample(static_cast<std::size_t>(B * u), 0.9f, 11);
    const auto got = cell_step(l, x, B, h, true);
    const auto m = l.dropout_mask(B, true);
    const auto mr = l.recurrent_dropout_mask(B, true);
    ASSERT_EQ(m.size(), 1u);
    ASSERT_EQ(mr.size(), 1u);
    const Eigen::MatrixXd K = to_d(l.weight(0).data(), F, u), U = to_d(l.weight(1).data(), u, u);
    const Eigen::RowVectorXd b = to_d(l.weight(2).data(), 1, u);
    Eigen::MatrixXd pre = to_d(x.data(), B, F).cwiseProduct(to_d(m[0])) * K;
    pre.rowwise() += b;
    pre += to_d(h.data(), B, u).cwiseProduct(to_d(mr[0])) * U;
    const Eigen::MatrixXd want = pre.unaryExpr([](double v) { return std::tanh(v); });
    for (Index i = 0; i < B; ++i)
      for (Index j = 0; j < u; ++j) {
        EXPECT_NEAR(got.out[i * u + j], want(i, j), 1e-5) << d->name();
        EXPECT_EQ(got.out[i * u + j], got.states[i * u + j]);
      }
    // Without training the same call ignores both masks.
    pre = to_d(x.data(), B, F) * K;
    pre.rowwise() += b;
    pre += to_d(h.data(), B, u) * U;
    const auto plain = cell_step(l, x, B, h, false);
    for (Index i = 0; i < B; ++i)
      for (Index j = 0; j < u; ++j) EXPECT_NEAR(plain.out[i * u + j], std::tanh(pre(i, j)), 1e-5);
  }
}

// A SimpleRNN layer samples its masks once per call, constant in time, in both dialects (Keras 2
// has no fused SimpleRNN path): every timestep of a sample keeps or drops its input and its h alike.
TEST(Dropout, SimpleRnnLayerMasksAreConstantInTime) {
  const Index B = 64, T = 8;
  for (const DialectInfo* d : {&kK2, &kK3}) {
    for (bool recurrent : {false, true}) {
      LayerConfig c = cell_config(LayerKind::simple_rnn, *d, 1, 1, recurrent ? 0.0f : 0.5f, recurrent ? 0.5f : 0.0f);
      c.return_sequences = true;
      c.activation = recur::parse_activation("linear", *d, "activation");
      recur::Layer l(c);
      // Input dropout: h_t = x_t * m (kernel 1, recurrent 0): 1.0 kept, 0 dropped. Recurrent dropout:
      // h_t = x_t + h_{t-1} * mr (kernel 1, recurrent 1): with mr = 0 every output is x_t = 0.5, with
      // mr = 2 the outputs after the first grow.
      const std::vector<float> w{1.0f, recurrent ? 1.0f : 0.0f, 0.0f};
      l.set_weights(w.data(), w.size());
      const std::vector<float> x(static_cast<std::size_t>(B * T), 0.5f);
      const auto out = layer_call(l, x, B, T, true);
      int kept_rows = 0;
      for (Index b = 0; b < B; ++b) {
        int kept = 0;
        for (Index t = recurrent ? 1 : 0; t < T; ++t) {
          const float y = out[static_cast<std::size_t>(b * T + t)];
          kept += recurrent ? std::fabs(y - 0.5f) > 0.1f : y > 0.1f;
        }
        const int steps = recurrent ? static_cast<int>(T) - 1 : static_cast<int>(T);
        EXPECT_TRUE(kept == 0 || kept == steps) << d->name() << (recurrent ? " recurrent" : " input") << " row " << b
                                                << " kept " << kept;
        kept_rows += kept == steps;
      }
      EXPECT_GT(kept_rows, B / 8);
      EXPECT_LT(kept_rows, B - B / 8);
    }
  }
}
