// SPDX-License-Identifier: Apache-2.0
// Regularizers and layer losses (keras_semantics.md §11.1, §11.2). Expected penalties are
// computed here in double from the Keras formulas.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "recur/config.hpp"
#include "recur/error.hpp"
#include "recur/keras_json.hpp"
#include "recur/layer.hpp"
#include "recur/limits.hpp"
#include "recur/regularizers.hpp"

namespace {

using recur::Dialect;
using recur::DialectInfo;
using recur::Index;
using recur::LayerConfig;
using recur::LayerKind;
using recur::RegularizerSpec;

const DialectInfo kK2 = DialectInfo::latest(Dialect::keras2);
const DialectInfo kK3 = DialectInfo::latest(Dialect::keras3);

std::vector<float> sample(int n, float scale = 1.0f, unsigned seed = 3) {
  std::vector<float> v;
  unsigned s = seed;
  for (int i = 0; i < n; ++i) {
    s = s * 1103515245u + 12345u;
    v.push_back(scale * (static_cast<float>((s >> 8) % 20001) / 10000.0f - 1.0f));
  }
  return v;
}

double l1_of(const std::vector<float>& x) {
  double s = 0;
  for (float v : x) s += std::fabs(static_cast<double>(v));
  return s;
}
double l2_of(const std::vector<float>& x) {
  double s = 0;
  for (float v : x) s += static_cast<double>(v) * v;
  return s;
}
double l1_of(const float* d, Index n) { return l1_of(std::vector<float>(d, d + n)); }
double l2_of(const float* d, Index n) { return l2_of(std::vector<float>(d, d + n)); }

float penalty(const std::string& text, const DialectInfo& d, const std::vector<float>& x, Index rows, Index cols) {
  return recur::regularization_penalty(recur::parse_regularizer_text(text, d, "kernel_regularizer"), x.data(), rows,
                                       cols);
}

void expect_rel(double want, double got, const std::string& what, double rel = 1e-5) {
  EXPECT_LE(std::fabs(got - want), rel * std::fabs(want) + 1e-12) << what << ": want " << want << " got " << got;
}

// Keras OrthogonalRegularizer: factor * 0.5 * sum|offdiag(gram of L2-normalised rows/columns)| / pairs.
double orthogonal_ref(const std::vector<float>& x, Index rows, Index cols, double factor, bool rows_mode) {
  Eigen::MatrixXd m(rows, cols);
  for (Index i = 0; i < rows; ++i)
    for (Index j = 0; j < cols; ++j) m(i, j) = x[static_cast<std::size_t>(i * cols + j)];
  if (!rows_mode) m.transposeInPlace();
  const Index n = m.rows();
  for (Index i = 0; i < n; ++i) m.row(i) /= m.row(i).norm();
  double off = 0;
  for (Index i = 0; i < n; ++i)
    for (Index j = 0; j < n; ++j)
      if (i != j) off += std::fabs(m.row(i).dot(m.row(j)));
  return factor * 0.5 * off / (static_cast<double>(n) * (n - 1.0) / 2.0);
}

}  // namespace

TEST(Regularizers, L1AndL2Strings) {
  const auto x = sample(60);
  for (const DialectInfo& d : {kK2, kK3}) {
    expect_rel(static_cast<double>(0.01f) * l1_of(x), penalty("l1", d, x, 6, 10), "l1");
    // Keras 2's 2 * l2 * tf.nn.l2_loss(x) and Keras 3's l2 * sum(x²) are the same number.
    expect_rel(static_cast<double>(0.01f) * l2_of(x), penalty("l2", d, x, 6, 10), "l2");
  }
}

TEST(Regularizers, L1L2PerDialect) {
  const auto x = sample(40, 3.0f);
  // Keras 2: the string "l1_l2" is the l1_l2() function with 0.01 / 0.01.
  expect_rel(0.01 * l1_of(x) + 0.01 * l2_of(x), penalty("l1_l2", kK2, x, 4, 10), "K2 l1_l2");
  // Keras 3 does not know the string.
  try {
    recur::parse_regularizer_text("l1_l2", kK3, "recurrent_regularizer");
    ADD_FAILURE() << "Keras 3 must reject 'l1_l2'";
  } catch (const recur::Error& e) {
    EXPECT_EQ(e.code(), recur::Error::Code::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("recurrent_regularizer"), std::string::npos);
  }
  // The class with its defaults has zero factors in both dialects.
  for (const DialectInfo& d : {kK2, kK3}) {
    const RegularizerSpec s = recur::parse_regularizer_text("L1L2", d, "bias_regularizer");
    EXPECT_EQ(s.l1, 0.0f);
    EXPECT_EQ(s.l2, 0.0f);
    EXPECT_EQ(recur::regularization_penalty(s, x.data(), 4, 10), 0.0f);
    expect_rel(0.1 * l1_of(x) + 0.2 * l2_of(x),
               penalty(R"({"class_name": "L1L2", "config": {"l1": 0.1, "l2": 0.2}})", d, x, 4, 10), "L1L2 json");
  }
  expect_rel(0.1 * l1_of(x) + 0.2 * l2_of(x),
             penalty(R"({"module": "keras.regularizers", "class_name": "L1L2", "config": {"l1": 0.1, "l2": 0.2},
                        "registered_name": null})",
                     kK3, x, 4, 10),
             "K3 L1L2 json");
  expect_rel(0.5 * l2_of(x), penalty(R"({"class_name": "L2", "config": {"l2": 0.5}})", kK2, x, 4, 10), "L2 json");
  expect_rel(0.25 * l1_of(x), penalty(R"({"class_name": "L1", "config": {"l1": 0.25}})", kK3, x, 4, 10), "L1 json");
}

TEST(Regularizers, ZeroFactorTermIsSkipped) {
  // x² overflows float32 for 1e20, so an l2 term multiplied by 0 would give NaN or inf.
  const std::vector<float> x{1e20f, -1.0f, 2.0f};
  const float p = penalty(R"({"class_name": "L1L2", "config": {"l1": 0.5, "l2": 0.0}})", kK3, x, 1, 3);
  EXPECT_TRUE(std::isfinite(p));
  expect_rel(0.5 * (1e20 + 3.0), p, "l1 only");
  const std::vector<float> y{std::numeric_limits<float>::quiet_NaN(), 1.0f};
  const float q = penalty(R"({"class_name": "L1L2", "config": {"l1": 0.0, "l2": 0.0}})", kK3, y, 1, 2);
  EXPECT_EQ(q, 0.0f);
}

TEST(Regularizers, InactiveAndUnknown) {
  EXPECT_FALSE(recur::parse_regularizer_text("", kK3, "kernel_regularizer").active());
  const auto x = sample(10);
  EXPECT_EQ(recur::regularization_penalty(RegularizerSpec{}, x.data(), 2, 5), 0.0f);
  for (const char* bad : {"l3", "L2X", R"({"class_name": "Foo", "config": {}})"}) {
    EXPECT_THROW(recur::parse_regularizer_text(bad, kK3, "kernel_regularizer"), recur::Error) << bad;
  }
  // A malformed JSON object is a parse error.
  try {
    recur::parse_regularizer_text(R"({"class_name": "L2", )", kK2, "kernel_regularizer");
    ADD_FAILURE();
  } catch (const recur::Error& e) {
    EXPECT_EQ(e.code(), recur::Error::Code::parse);
  }
}

TEST(Regularizers, OrthogonalRowsAndColumns) {
  const auto x = sample(5 * 8, 1.0f, 17);
  for (const DialectInfo& d : {kK2, kK3}) {
    const float rows = penalty(R"({"class_name": "OrthogonalRegularizer", "config": {"factor": 0.1, "mode": "rows"}})",
                               d, x, 5, 8);
    expect_rel(orthogonal_ref(x, 5, 8, 0.1, true), rows, "rows");
    const float cols = penalty(
        R"({"class_name": "OrthogonalRegularizer", "config": {"factor": 0.3, "mode": "columns"}})", d, x, 5, 8);
    expect_rel(orthogonal_ref(x, 5, 8, 0.3, false), cols, "columns");
    EXPECT_GT(std::fabs(rows / 0.1 - cols / 0.3), 1e-3);  // the two modes differ on this matrix
  }
  // Defaults factor 0.01, rows; rows of an orthogonal matrix give 0 whatever their norms.
  const std::vector<float> orth{2.0f, 0.0f, 0.0f, 0.0f, -3.0f, 0.0f, 0.0f, 0.0f, 0.5f};
  EXPECT_NEAR(penalty(R"({"class_name": "OrthogonalRegularizer", "config": {}})", kK3, orth, 3, 3), 0.0f, 1e-9);
  const std::vector<float> same{1.0f, 1.0f, 2.0f, 2.0f};  // parallel rows: |cos| = 1 for the one pair
  EXPECT_NEAR(penalty(R"({"class_name": "OrthogonalRegularizer", "config": {}})", kK3, same, 2, 2), 0.01 * 0.5 * 2.0,
              1e-7);
}

namespace {

struct CallResult {
  std::vector<float> output, states;
};

CallResult call_layer(recur::Layer& l, Index B, Index T, bool training = false) {
  const LayerConfig& c = l.config();
  const auto input = sample(static_cast<int>(B * T * c.input_size), 1.5f, 29);
  CallResult r;
  r.output.resize(l.output_size(B, T));
  r.states.resize(static_cast<std::size_t>(c.num_states() * B * c.units));
  recur::LayerCall a;
  a.input = input.data();
  a.input_len = input.size();
  a.batch = B;
  a.timesteps = T;
  a.training = training;
  a.output = r.output.data();
  a.output_len = r.output.size();
  a.final_state = r.states.data();
  a.final_state_len = r.states.size();
  l.call(a);
  return r;
}

LayerConfig regularized(LayerKind kind, const DialectInfo& d) {
  LayerConfig c = LayerConfig::defaults(kind, d);
  c.units = 4;
  c.input_size = 3;
  c.seed = 5;
  c.bias_initializer = recur::parse_initializer_text("random_uniform", d, "bias_initializer");
  c.activity_regularizer = recur::parse_regularizer_text("l2", d, "activity_regularizer");
  c.kernel_regularizer = recur::parse_regularizer_text("l1", d, "kernel_regularizer");
  c.recurrent_regularizer = recur::parse_regularizer_text("l2", d, "recurrent_regularizer");
  c.bias_regularizer = recur::parse_regularizer_text(R"({"class_name": "L1L2", "config": {"l1": 0.1, "l2": 0.2}})",
                                                      d, "bias_regularizer");
  return c;
}

void expect_weight_losses(const recur::Layer& l, const std::vector<recur::Loss>& losses, std::size_t first) {
  ASSERT_EQ(losses.size(), first + 3);
  EXPECT_EQ(losses[first].name, "kernel");
  EXPECT_EQ(losses[first + 1].name, "recurrent_kernel");
  EXPECT_EQ(losses[first + 2].name, "bias");
  const auto& k = l.weight(0);
  const auto& u = l.weight(1);
  const auto& b = l.weight(2);
  expect_rel(static_cast<double>(0.01f) * l1_of(k.data(), k.size()), losses[first].value, "kernel l1");
  expect_rel(static_cast<double>(0.01f) * l2_of(u.data(), u.size()), losses[first + 1].value, "recurrent l2");
  expect_rel(static_cast<double>(0.1f) * l1_of(b.data(), b.size()) + static_cast<double>(0.2f) * l2_of(b.data(), b.size()),
             losses[first + 2].value, "bias l1l2");
}

}  // namespace

TEST(LayerLosses, WeightPenaltiesBeforeAnyCall) {
  for (const DialectInfo& d : {kK2, kK3}) {
    recur::Layer l(regularized(LayerKind::gru, d));
    expect_weight_losses(l, l.losses(), 0);
  }
}

TEST(LayerLosses, OrderActivityThenKernelRecurrentBias) {
  for (const DialectInfo& d : {kK2, kK3}) {
    recur::Layer l(regularized(LayerKind::gru, d));
    const Index B = 4;
    const auto r = call_layer(l, B, 3);
    const auto losses = l.losses();
    ASSERT_EQ(losses.size(), 4u);
    EXPECT_EQ(losses[0].name, "activity:output");
    expect_rel(static_cast<double>(0.01f) * l2_of(r.output) / B, losses[0].value, "activity / batch");
    expect_weight_losses(l, losses, 1);
    // A second call replaces the activity loss of the first.
    call_layer(l, 2, 5);
    EXPECT_EQ(l.losses().size(), 4u);
  }
}

TEST(LayerLosses, ActivityDivisionPerKerasVersion) {
  struct Case {
    const char* version;
    bool divided;
  };
  for (const Case& cs : {Case{"3.13.0", false}, Case{"3.0.5", false}, Case{"3.14.0", true}, Case{"3.15.1", true}}) {
    recur::Layer l(regularized(LayerKind::lstm, DialectInfo::parse(Dialect::keras3, cs.version)));
    const Index B = 5;
    const auto r = call_layer(l, B, 2);
    const double raw = static_cast<double>(0.01f) * l2_of(r.output);
    const auto losses = l.losses();
    ASSERT_FALSE(losses.empty());
    EXPECT_EQ(losses[0].name, "activity:output");
    expect_rel(cs.divided ? raw / B : raw, losses[0].value, cs.version);
  }
  recur::Layer k2(regularized(LayerKind::lstm, DialectInfo::parse(Dialect::keras2, "2.15.0")));
  const auto r = call_layer(k2, 5, 2);
  expect_rel(static_cast<double>(0.01f) * l2_of(r.output) / 5, k2.losses()[0].value, "K2 divided");
}

TEST(LayerLosses, ActivityOnSequencesDividesByFirstAxis) {
  LayerConfig c = regularized(LayerKind::gru, kK2);
  c.return_sequences = true;
  recur::Layer l(c);
  const Index B = 3, T = 4;
  const auto r = call_layer(l, B, T);
  expect_rel(static_cast<double>(0.01f) * l2_of(r.output) / B, l.losses()[0].value, "(B,T,u) / B");
  // Keras 2 time_major: the output is (T, B, u), and Keras divides by its first axis, T.
  c.time_major = true;
  recur::Layer tm(c);
  const auto rt = call_layer(tm, B, T);
  expect_rel(static_cast<double>(0.01f) * l2_of(rt.output) / T, tm.losses()[0].value, "(T,B,u) / T");
}

TEST(LayerLosses, ReturnStateRegularizesStatesToo) {
  for (const DialectInfo& d : {kK2, DialectInfo::parse(Dialect::keras3, "3.13.0")}) {
    const bool divide = d.dialect == Dialect::keras2;
    for (LayerKind kind : {LayerKind::gru, LayerKind::lstm}) {
      LayerConfig c = regularized(kind, d);
      c.return_state = true;
      c.return_sequences = true;
      recur::Layer l(c);
      const Index B = 3, T = 2, u = c.units;
      const auto r = call_layer(l, B, T);
      const auto losses = l.losses();
      const std::size_t ns = static_cast<std::size_t>(c.num_states());
      ASSERT_EQ(losses.size(), 1 + ns + 3);
      EXPECT_EQ(losses[0].name, "activity:output");
      EXPECT_EQ(losses[1].name, "activity:state_h");
      const double scale = divide ? 1.0 / B : 1.0;
      expect_rel(0.01 * l2_of(r.output) * scale, losses[0].value, "output");
      expect_rel(static_cast<double>(0.01f) * l2_of(r.states.data(), B * u) * scale, losses[1].value, "state_h");
      if (ns == 2) {
        EXPECT_EQ(losses[2].name, "activity:state_c");
        expect_rel(static_cast<double>(0.01f) * l2_of(r.states.data() + B * u, B * u) * scale, losses[2].value,
                   "state_c");
      }
      expect_weight_losses(l, losses, 1 + ns);
    }
  }
}

TEST(LayerLosses, FrozenLayerDropsWeightPenaltiesOnlyInKeras3) {
  LayerConfig c3 = regularized(LayerKind::gru, kK3);
  c3.trainable = false;
  recur::Layer l3(c3);
  EXPECT_TRUE(l3.losses().empty());
  call_layer(l3, 2, 2);
  const auto after = l3.losses();
  ASSERT_EQ(after.size(), 1u);  // activity losses stay
  EXPECT_EQ(after[0].name, "activity:output");

  LayerConfig c2 = regularized(LayerKind::gru, kK2);
  c2.trainable = false;
  recur::Layer l2(c2);
  expect_weight_losses(l2, l2.losses(), 0);
}

TEST(LayerLosses, NoRegularizersNoLosses) {
  LayerConfig c = LayerConfig::defaults(LayerKind::lstm, kK3);
  c.units = 3;
  c.input_size = 2;
  recur::Layer l(c);
  call_layer(l, 2, 2);
  EXPECT_TRUE(l.losses().empty());
}

// The product of normalized rows is formed a band of rows at a time (512 rows or more take
// several bands); the sum is the same as the whole matrix's.
TEST(Regularizers, OrthogonalOverManyBandsMatchesTheFormula) {
  const auto x = sample(1500 * 3, 1.0f, 41);
  expect_rel(orthogonal_ref(x, 1500, 3, 0.1, true),
             penalty(R"({"class_name": "OrthogonalRegularizer", "config": {"factor": 0.1, "mode": "rows"}})", kK3, x,
                     1500, 3),
             "1500 rows");
  expect_rel(orthogonal_ref(x, 3, 1500, 0.2, false),
             penalty(R"({"class_name": "OrthogonalRegularizer", "config": {"factor": 0.2, "mode": "columns"}})", kK3, x,
                     3, 1500),
             "1500 columns");
  // Rows alternating along two orthogonal directions, g of each: every same-direction pair
  // counts 1 and every other 0, so the penalty is factor * 2g(g-1)/2 / (2g(2g-1)/2). A diagonal
  // counted, or a band's diagonal misplaced, changes it.
  const Index g = 700;
  std::vector<float> two(static_cast<std::size_t>(2 * g * 2), 0.0f);
  for (Index i = 0; i < 2 * g; ++i) two[static_cast<std::size_t>(2 * i + i % 2)] = i % 4 < 2 ? 3.0f : -0.5f;
  expect_rel(0.01 * (g - 1.0) / (2.0 * g - 1.0),
             penalty(R"({"class_name": "OrthogonalRegularizer", "config": {}})", kK3, two, 2 * g, 2), "two directions");
}

namespace {

// Sets a limit for one test and restores the default after it, failed or not.
struct LimitFor {
  recur::Limit which;
  LimitFor(recur::Limit w, std::uint64_t value) : which(w) { recur::set_limit(w, value); }
  ~LimitFor() { recur::set_limit(which, 0); }
};

void expect_limit(const std::function<void()>& f, const std::string& names) {
  try {
    f();
    ADD_FAILURE() << "expected Error(limit) naming " << names;
  } catch (const recur::Error& e) {
    EXPECT_EQ(e.code(), recur::Error::Code::limit) << e.what();
    EXPECT_NE(std::string(e.what()).find(names), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("tensor_bytes"), std::string::npos) << e.what();
  }
}

}  // namespace

// An orthogonal regularizer's work grows with the square of its size (a weight's rows, or a
// call's batch x timesteps rows): a size whose product would be over RECUR_LIMIT_TENSOR_BYTES
// is an Error(limit) before anything changes, and raising the limit lets it through.
TEST(LayerLosses, OrthogonalRegularizerSizeIsLimited) {
  const std::string orth = R"({"class_name": "OrthogonalRegularizer", "config": {"factor": 0.1, "mode": "rows"}})";
  LayerConfig c = LayerConfig::defaults(LayerKind::gru, kK3);
  c.units = 2;
  c.input_size = 600;  // a 600 x 6 kernel: its 600 x 600 product is 1.4 MB as float32
  c.seed = 5;
  c.return_sequences = true;
  c.kernel_regularizer = recur::parse_regularizer_text(orth, kK3, "kernel_regularizer");
  c.activity_regularizer = recur::parse_regularizer_text(orth, kK3, "activity_regularizer");
  recur::Layer l(c);
  const CallResult small = call_layer(l, 2, 3);  // 6 output rows
  const auto before = l.losses();
  ASSERT_EQ(before.size(), 2u);
  {
    LimitFor cap(recur::Limit::tensor_bytes, 1u << 20);
    expect_limit([&] { l.losses(); }, "kernel_regularizer");
    // 30 x 20 = 600 output rows: refused before the call writes its output or its losses.
    const Index B = 30, T = 20;
    const auto input = sample(static_cast<int>(B * T * c.input_size), 1.0f, 7);
    std::vector<float> out(l.output_size(B, T), -7.0f);
    recur::LayerCall a;
    a.input = input.data();
    a.input_len = input.size();
    a.batch = B;
    a.timesteps = T;
    a.output = out.data();
    a.output_len = out.size();
    expect_limit([&] { l.call(a); }, "activity_regularizer on the output");
    EXPECT_EQ(out, std::vector<float>(out.size(), -7.0f));
    // The weights alone are under a 2 MiB cap; the last call's activity penalty is unchanged.
    LimitFor raised(recur::Limit::tensor_bytes, 2u << 20);
    const auto after = l.losses();
    ASSERT_EQ(after.size(), 2u);
    EXPECT_EQ(after[0].value, before[0].value);
    EXPECT_EQ(after[1].value, before[1].value);
  }
  // Under the default limit the large call runs, and its penalty follows the formula.
  const CallResult big = call_layer(l, 30, 20);
  expect_rel(orthogonal_ref(big.output, 600, 2, 0.1, true) / 30, l.losses()[0].value, "activity of 600 rows / B");
  (void)small;

  // A cell's output and states (batch rows) are checked the same way.
  LayerConfig cc = LayerConfig::defaults(LayerKind::gru_cell, kK3);
  cc.units = 2;
  cc.input_size = 3;
  cc.activity_regularizer = c.activity_regularizer;
  recur::Layer cell(cc);
  const Index B = 600;
  const auto x = sample(static_cast<int>(B * cc.input_size));
  const std::vector<float> h0(static_cast<std::size_t>(B * cc.units), 0.5f);
  std::vector<float> out(h0.size(), -7.0f), states(h0.size(), -7.0f);
  LimitFor cap(recur::Limit::tensor_bytes, 1u << 20);
  expect_limit(
      [&] { cell.cell_call(x.data(), x.size(), B, h0.data(), h0.size(), 1, false, out.data(), out.size(), states.data(), states.size()); },
      "activity_regularizer");
  EXPECT_EQ(out, std::vector<float>(out.size(), -7.0f));
}
