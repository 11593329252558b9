// SPDX-License-Identifier: Apache-2.0
// Constraints (keras_semantics.md §11.3): the projections the optimizer applies after an update.
// Expected values are computed here in double from the Keras formulas with epsilon = 1e-7.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "recur/config.hpp"
#include "recur/constraints.hpp"
#include "recur/error.hpp"
#include "recur/keras_json.hpp"
#include "recur/layer.hpp"

namespace {

using recur::ConstraintSpec;
using recur::Dialect;
using recur::DialectInfo;
using recur::Index;
using recur::Tensor;

constexpr double kEps = 1e-7;

Tensor make(std::vector<Index> shape, unsigned seed = 1, float scale = 1.0f) {
  Tensor t(std::move(shape));
  unsigned s = seed;
  for (Index i = 0; i < t.size(); ++i) {
    s = s * 1664525u + 1013904223u;
    t.data()[i] = scale * (static_cast<float>((s >> 9) % 20001) / 10000.0f - 1.0f);
  }
  return t;
}

ConstraintSpec spec_of(ConstraintSpec::Kind kind, std::vector<int> axis, float max_value = 2.0f, float min_value = 0.0f,
                       float rate = 1.0f) {
  ConstraintSpec s;
  s.kind = kind;
  s.axis = std::move(axis);
  s.max_value = max_value;
  s.min_value = min_value;
  s.rate = rate;
  return s;
}

// Reference: norms over the reduced axes of a rank-1/2 tensor, then w * desired(n) / (eps + n).
std::vector<double> reference(const Tensor& w, const ConstraintSpec& s) {
  const int rank = static_cast<int>(w.shape.size());
  const Index rows = w.shape[0], cols = rank == 2 ? w.shape[1] : 1;
  bool red[2] = {false, false};
  for (int a : s.axis) red[a < 0 ? a + rank : a] = true;
  auto group = [&](Index i, Index j) -> std::pair<Index, Index> {
    return {red[0] ? -1 : i, (rank == 2 && red[1]) ? -1 : j};
  };
  std::vector<double> out(static_cast<std::size_t>(w.size()));
  for (Index i = 0; i < rows; ++i)
    for (Index j = 0; j < cols; ++j) {
      const auto g = group(i, j);
      double sq = 0;
      for (Index a = 0; a < rows; ++a)
        for (Index b = 0; b < cols; ++b)
          if (group(a, b) == g) sq += static_cast<double>(w.data()[a * cols + b]) * w.data()[a * cols + b];
      const double n = std::sqrt(sq);
      double desired = n;
      if (s.kind == ConstraintSpec::Kind::max_norm) desired = std::min(std::max(n, 0.0), static_cast<double>(s.max_value));
      if (s.kind == ConstraintSpec::Kind::unit_norm) desired = 1.0;
      if (s.kind == ConstraintSpec::Kind::min_max_norm)
        desired = s.rate * std::min(std::max(n, static_cast<double>(s.min_value)), static_cast<double>(s.max_value)) +
                  (1.0 - s.rate) * n;
      out[static_cast<std::size_t>(i * cols + j)] = w.data()[i * cols + j] * desired / (kEps + n);
    }
  return out;
}

void expect_matches(const Tensor& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(static_cast<std::size_t>(got.size()), want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got.data()[i], want[i], 2e-6 * std::max(1.0, std::fabs(want[i]))) << what << " at " << i;
}

void check(const ConstraintSpec& s, Tensor w, Dialect d, const std::string& what) {
  const auto want = reference(w, s);
  recur::apply_constraint(s, w, d, "kernel_constraint");
  expect_matches(w, want, what);
}

double column_norm(const Tensor& w, Index j) {
  double sq = 0;
  for (Index i = 0; i < w.shape[0]; ++i) sq += static_cast<double>(w.value(i, j)) * w.value(i, j);
  return std::sqrt(sq);
}

}  // namespace

TEST(Constraints, MaxNormAxis0IsPerColumnOfFusedKernel) {
  // GRU kernel (F, 3u) with columns of mixed norms (scale 1.5 over 6 rows puts some above 2).
  Tensor w = make({6, 12}, 3, 1.5f);
  int above = 0;
  for (Index j = 0; j < 12; ++j) above += column_norm(w, j) > 2.0;
  ASSERT_GT(above, 0);
  ASSERT_LT(above, 12);
  const ConstraintSpec s = spec_of(ConstraintSpec::Kind::max_norm, {0}, 2.0f);
  const Tensor before = w;
  check(s, w, Dialect::keras3, "max_norm");
  recur::apply_constraint(s, w, Dialect::keras3, "kernel_constraint");
  for (Index j = 0; j < 12; ++j) {
    const double n0 = column_norm(before, j);
    EXPECT_NEAR(column_norm(w, j), std::min(n0, 2.0) * n0 / (kEps + n0), 1e-5);
  }
}

TEST(Constraints, MaxNormAxes) {
  for (Dialect d : {Dialect::keras2, Dialect::keras3}) {
    check(spec_of(ConstraintSpec::Kind::max_norm, {1}, 1.0f), make({5, 9}, 4), d, "axis 1");
    check(spec_of(ConstraintSpec::Kind::max_norm, {-1}, 1.0f), make({5, 9}, 4), d, "axis -1");
    check(spec_of(ConstraintSpec::Kind::max_norm, {-2}, 1.0f), make({5, 9}, 4), d, "axis -2");
    check(spec_of(ConstraintSpec::Kind::max_norm, {0, 1}, 3.0f), make({5, 9}, 4), d, "axis [0, 1]");
    check(spec_of(ConstraintSpec::Kind::max_norm, {0}, 1.0f), make({24}, 5), d, "bias axis 0");
    check(spec_of(ConstraintSpec::Kind::max_norm, {-1}, 1.0f), make({24}, 5), d, "bias axis -1");
  }
  // axis -1 is axis 1 on a rank-2 weight, and differs from axis 0.
  Tensor a = make({5, 9}, 4), b = make({5, 9}, 4), c = make({5, 9}, 4);
  recur::apply_constraint(spec_of(ConstraintSpec::Kind::max_norm, {-1}, 0.5f), a, Dialect::keras3, "k");
  recur::apply_constraint(spec_of(ConstraintSpec::Kind::max_norm, {1}, 0.5f), b, Dialect::keras3, "k");
  recur::apply_constraint(spec_of(ConstraintSpec::Kind::max_norm, {0}, 0.5f), c, Dialect::keras3, "k");
  EXPECT_EQ(a.value, b.value);
  EXPECT_NE(a.value, c.value);
}

TEST(Constraints, UnitNorm) {
  Tensor w = make({7, 8}, 6);
  check(spec_of(ConstraintSpec::Kind::unit_norm, {0}), w, Dialect::keras2, "unit_norm axis 0");
  recur::apply_constraint(spec_of(ConstraintSpec::Kind::unit_norm, {0}), w, Dialect::keras2, "k");
  for (Index j = 0; j < 8; ++j) EXPECT_NEAR(column_norm(w, j), 1.0, 1e-6);
  check(spec_of(ConstraintSpec::Kind::unit_norm, {1}), make({7, 8}, 6), Dialect::keras3, "unit_norm axis 1");
  check(spec_of(ConstraintSpec::Kind::unit_norm, {0}), make({16}, 2), Dialect::keras3, "unit_norm rank 1");
}

TEST(Constraints, EpsilonInDenominator) {
  // A column of norm 5e-8: w / (1e-7 + 5e-8) = w / 1.5e-7, far from unit norm. A zero column stays 0.
  Tensor w({2, 2});
  w.value << 3e-8f, 0.0f, 4e-8f, 0.0f;
  recur::apply_constraint(spec_of(ConstraintSpec::Kind::unit_norm, {0}), w, Dialect::keras3, "k");
  EXPECT_NEAR(w.value(0, 0), 3e-8 / 1.5e-7, 1e-6);
  EXPECT_NEAR(w.value(1, 0), 4e-8 / 1.5e-7, 1e-6);
  EXPECT_EQ(w.value(0, 1), 0.0f);
  EXPECT_EQ(w.value(1, 1), 0.0f);
  // max_norm on a column of norm max_value: scale = 2 / (1e-7 + 2) (1 in float32, as in Keras).
  Tensor m({2, 1});
  m.value << 1.2f, 1.6f;
  recur::apply_constraint(spec_of(ConstraintSpec::Kind::max_norm, {0}, 2.0f), m, Dialect::keras3, "k");
  EXPECT_NEAR(m.value(0, 0), 1.2 * 2.0 / (2.0 + 1e-7), 3e-7);
}

TEST(Constraints, MinMaxNormWithRate) {
  for (float rate : {1.0f, 0.5f, 0.0f}) {
    const ConstraintSpec s = spec_of(ConstraintSpec::Kind::min_max_norm, {0}, 1.2f, 0.8f, rate);
    check(s, make({6, 10}, 8, 0.6f), Dialect::keras3, "min_max_norm rate " + std::to_string(rate));
  }
  // rate 1: every column norm ends inside [min, max].
  Tensor w = make({6, 10}, 8, 0.6f);
  recur::apply_constraint(spec_of(ConstraintSpec::Kind::min_max_norm, {0}, 1.2f, 0.8f, 1.0f), w, Dialect::keras2, "k");
  for (Index j = 0; j < 10; ++j) {
    EXPECT_GE(column_norm(w, j), 0.8 - 1e-5);
    EXPECT_LE(column_norm(w, j), 1.2 + 1e-5);
  }
}

TEST(Constraints, NonNegPerDialect) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor k2({6});
  k2.value << -1.5f, 2.0f, -0.0f, 0.0f, 3e-30f, -3e-30f;
  Tensor k3 = k2;
  const ConstraintSpec s = spec_of(ConstraintSpec::Kind::non_neg, {0});
  recur::apply_constraint(s, k2, Dialect::keras2, "bias_constraint");
  recur::apply_constraint(s, k3, Dialect::keras3, "bias_constraint");
  // Keras 2: w * cast(w >= 0): negatives become -0.0.
  EXPECT_EQ(k2.value(0, 0), 0.0f);
  EXPECT_TRUE(std::signbit(k2.value(0, 0)));
  EXPECT_EQ(k2.value(0, 1), 2.0f);
  EXPECT_TRUE(std::signbit(k2.value(0, 2)));  // -0.0 >= 0, so it stays -0.0
  EXPECT_EQ(k2.value(0, 4), 3e-30f);
  EXPECT_TRUE(std::signbit(k2.value(0, 5)));
  // Keras 3: max(w, 0): negatives become +0.0.
  EXPECT_EQ(k3.value(0, 0), 0.0f);
  EXPECT_FALSE(std::signbit(k3.value(0, 0)));
  EXPECT_EQ(k3.value(0, 1), 2.0f);
  EXPECT_EQ(k3.value(0, 4), 3e-30f);
  EXPECT_FALSE(std::signbit(k3.value(0, 5)));
  // Keras 2 propagates NaN (NaN * 0).
  Tensor n({2});
  n.value << nan, -1.0f;
  recur::apply_constraint(s, n, Dialect::keras2, "bias_constraint");
  EXPECT_TRUE(std::isnan(n.value(0, 0)));
}

TEST(Constraints, AxisOutOfRange) {
  for (int axis : {2, -3, 5}) {
    Tensor w = make({3, 4});
    try {
      recur::apply_constraint(spec_of(ConstraintSpec::Kind::max_norm, {axis}), w, Dialect::keras3,
                              "recurrent_constraint");
      ADD_FAILURE() << "axis " << axis;
    } catch (const recur::Error& e) {
      EXPECT_EQ(e.code(), recur::Error::Code::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("recurrent_constraint"), std::string::npos) << e.what();
    }
  }
  Tensor b = make({4});
  EXPECT_THROW(recur::apply_constraint(spec_of(ConstraintSpec::Kind::unit_norm, {1}), b, Dialect::keras2, "b"),
               recur::Error);
  EXPECT_THROW(recur::apply_constraint(spec_of(ConstraintSpec::Kind::unit_norm, {-2}), b, Dialect::keras2, "b"),
               recur::Error);
}

TEST(Constraints, InactiveIsNoOp) {
  Tensor w = make({3, 4});
  const Tensor before = w;
  recur::apply_constraint(ConstraintSpec{}, w, Dialect::keras3, "k");
  EXPECT_EQ(w.value, before.value);
}

TEST(Constraints, ParsedFromKerasConfigs) {
  const DialectInfo k3 = DialectInfo::latest(Dialect::keras3);
  const DialectInfo k2 = DialectInfo::latest(Dialect::keras2);
  ConstraintSpec s = recur::parse_constraint_text(
      R"({"module": "keras.constraints", "class_name": "MaxNorm", "config": {"max_value": 3.0, "axis": [0, 1]},
          "registered_name": null})",
      k3, "kernel_constraint");
  EXPECT_EQ(s.kind, ConstraintSpec::Kind::max_norm);
  EXPECT_EQ(s.max_value, 3.0f);
  EXPECT_EQ(s.axis, (std::vector<int>{0, 1}));
  s = recur::parse_constraint_text("max_norm", k2, "kernel_constraint");
  EXPECT_EQ(s.max_value, 2.0f);
  EXPECT_EQ(s.axis, (std::vector<int>{0}));
  s = recur::parse_constraint_text(R"({"class_name": "MinMaxNorm", "config": {"min_value": 0.1, "rate": 0.3, "axis": -1}})",
                                   k2, "kernel_constraint");
  EXPECT_EQ(s.kind, ConstraintSpec::Kind::min_max_norm);
  EXPECT_FLOAT_EQ(s.min_value, 0.1f);
  EXPECT_FLOAT_EQ(s.max_value, 1.0f);
  EXPECT_FLOAT_EQ(s.rate, 0.3f);
  EXPECT_EQ(s.axis, (std::vector<int>{-1}));
  EXPECT_EQ(recur::parse_constraint_text("non_neg", k3, "c").kind, ConstraintSpec::Kind::non_neg);
  EXPECT_EQ(recur::parse_constraint_text("NonNeg", k3, "c").kind, ConstraintSpec::Kind::non_neg);
  EXPECT_EQ(recur::parse_constraint_text("unit_norm", k3, "c").kind, ConstraintSpec::Kind::unit_norm);
  EXPECT_FALSE(recur::parse_constraint_text("", k3, "c").active());
  EXPECT_THROW(recur::parse_constraint_text("clip", k3, "c"), recur::Error);
  EXPECT_THROW(recur::parse_constraint_text(R"({"class_name": "MaxNorm", "config": {"maxvalue": 1}})", k3, "c"),
               recur::Error);
}

TEST(Constraints, LayerApplyConstraintsProjectsEveryWeightAndUpdatesTheCell) {
  for (Dialect d : {Dialect::keras2, Dialect::keras3}) {
    const DialectInfo info = DialectInfo::latest(d);
    recur::LayerConfig c = recur::LayerConfig::defaults(recur::LayerKind::gru, info);
    c.units = 4;
    c.input_size = 3;
    c.seed = 9;
    c.kernel_initializer = recur::parse_initializer_text(
        R"({"class_name": "RandomUniform", "config": {"minval": -2.0, "maxval": 2.0}})", info, "kernel_initializer");
    c.bias_initializer = recur::parse_initializer_text("random_normal", info, "bias_initializer");
    c.kernel_constraint = spec_of(ConstraintSpec::Kind::max_norm, {0}, 1.0f);
    c.recurrent_constraint = spec_of(ConstraintSpec::Kind::unit_norm, {1});
    c.bias_constraint = spec_of(ConstraintSpec::Kind::non_neg, {0});
    recur::Layer l(c);
    const Tensor k0 = l.weight(0), u0 = l.weight(1), b0 = l.weight(2);
    l.apply_constraints();
    expect_matches(l.weight(0), reference(k0, c.kernel_constraint), "kernel");
    expect_matches(l.weight(1), reference(u0, c.recurrent_constraint), "recurrent");
    for (Index i = 0; i < b0.size(); ++i)
      EXPECT_EQ(l.weight(2).data()[i], b0.data()[i] >= 0 ? b0.data()[i] : 0.0f);

    // The forward pass uses the projected weights: same output as a fresh layer given them.
    recur::LayerConfig plain = c;
    plain.kernel_constraint = plain.recurrent_constraint = plain.bias_constraint = ConstraintSpec{};
    recur::Layer fresh(plain);
    std::vector<float> all;
    for (std::size_t i = 0; i < 3; ++i)
      all.insert(all.end(), l.weight(i).data(), l.weight(i).data() + l.weight(i).size());
    fresh.set_weights(all.data(), all.size());
    const std::vector<float> x{0.5f, -1.0f, 2.0f, 0.1f, 0.3f, -0.7f};
    std::vector<float> out1(4), out2(4);
    recur::LayerCall a;
    a.input = x.data();
    a.input_len = x.size();
    a.batch = 1;
    a.timesteps = 2;
    a.output = out1.data();
    a.output_len = out1.size();
    l.call(a);
    a.output = out2.data();
    fresh.call(a);
    EXPECT_EQ(out1, out2);
    // Forward never applies constraints itself.
    recur::Layer untouched(c);
    std::vector<float> out3(4);
    a.output = out3.data();
    untouched.call(a);
    EXPECT_NE(out1, out3);
  }
}
