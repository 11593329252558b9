// SPDX-License-Identifier: Apache-2.0
// Activations (keras_semantics.md §6.1): every name per dialect against its formula, the three
// hard_sigmoid forms exactly (float ops as Keras writes them), name acceptance per dialect, and the
// row-wise ones. Expected values are computed here in double precision (or with the exact float
// operation sequence Keras uses), never by recur.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "recur/activations.hpp"
#include "recur/dialect.hpp"
#include "recur/error.hpp"

namespace {

using recur::Activation;
using recur::ActivationFn;
using recur::Dialect;
using recur::DialectInfo;

const DialectInfo kK2 = DialectInfo::latest(Dialect::keras2);
const DialectInfo kK3 = DialectInfo::latest(Dialect::keras3);

std::vector<float> run(const std::string& name, const DialectInfo& d, std::vector<float> x, Eigen::Index rows = 1) {
  const ActivationFn fn = recur::parse_activation(name, d, "activation");
  recur::apply_activation(fn, x.data(), rows, static_cast<Eigen::Index>(x.size()) / rows);
  return x;
}

// Inputs around both hard_sigmoid breakpoint pairs (±2.5, ±3), zero, the shrink thresholds (±0.5),
// the sparse_* knots (±1) and some larger magnitudes.
std::vector<float> probe_inputs() {
  std::vector<float> xs{-12.0f, -7.0f, -4.0f, -3.0001f, -3.0f, -2.9999f, -2.75f, -2.5001f, -2.5f, -2.4999f, -2.0f,
                        -1.0001f, -1.0f, -0.9999f, -0.75f, -0.5001f, -0.5f, -0.4999f, -0.2f, -1e-3f, -1e-6f, 0.0f,
                        1e-6f, 1e-3f, 0.2f, 0.4999f, 0.5f, 0.5001f, 0.75f, 0.9999f, 1.0f, 1.0001f, 1.5f, 2.0f,
                        2.4999f, 2.5f, 2.5001f, 2.75f, 2.9999f, 3.0f, 3.0001f, 4.0f, 7.0f, 12.0f};
  for (float b : {-3.0f, -2.5f, 2.5f, 3.0f}) {
    xs.push_back(std::nextafter(b, -100.0f));
    xs.push_back(std::nextafter(b, 100.0f));
  }
  return xs;
}

double softplus_d(double x) { return x > 30 ? x : std::log1p(std::exp(x)); }
double sigmoid_d(double x) { return 1.0 / (1.0 + std::exp(-x)); }

struct Formula {
  const char* name;
  std::function<double(double)> f;
};

const double kSeluAlpha = 1.6732632423543772848170429916717;
const double kSeluScale = 1.0507009873554804934193349852946;

// Element-wise Keras 3 definitions (keras/src/activations/activations.py), in double.
std::vector<Formula> elementwise_k3() {
  return {
      {"linear", [](double x) { return x; }},
      {"relu", [](double x) { return x > 0 ? x : 0.0; }},
      {"relu6", [](double x) { return std::min(std::max(x, 0.0), 6.0); }},
      {"leaky_relu", [](double x) { return x >= 0 ? x : 0.2 * x; }},
      {"elu", [](double x) { return x > 0 ? x : std::expm1(x); }},
      {"selu", [](double x) { return x > 0 ? kSeluScale * x : kSeluScale * kSeluAlpha * std::expm1(x); }},
      {"celu", [](double x) { return x >= 0 ? x : std::expm1(x); }},
      {"softplus", softplus_d},
      {"softsign", [](double x) { return x / (1.0 + std::fabs(x)); }},
      {"exponential", [](double x) { return std::exp(x); }},
      {"silu", [](double x) { return x * sigmoid_d(x); }},
      {"swish", [](double x) { return x * sigmoid_d(x); }},
      {"hard_silu", [](double x) { return x * std::min(std::max(x + 3.0, 0.0), 6.0) / 6.0; }},
      {"hard_swish", [](double x) { return x * std::min(std::max(x + 3.0, 0.0), 6.0) / 6.0; }},
      {"gelu", [](double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }},
      {"mish", [](double x) { return x * std::tanh(softplus_d(x)); }},
      {"log_sigmoid", [](double x) { return -softplus_d(-x); }},
      {"sparse_plus",
       [](double x) { return x <= -1.0 ? 0.0 : (x >= 1.0 ? x : (x + 1.0) * (x + 1.0) / 4.0); }},
      {"squareplus", [](double x) { return (x + std::sqrt(x * x + 4.0)) / 2.0; }},
      {"tanh_shrink", [](double x) { return x - std::tanh(x); }},
      {"hard_tanh", [](double x) { return std::min(std::max(x, -1.0), 1.0); }},
      {"soft_shrink", [](double x) { return x > 0.5 ? x - 0.5 : (x < -0.5 ? x + 0.5 : 0.0); }},
      {"hard_shrink", [](double x) { return std::fabs(x) > 0.5 ? x : 0.0; }},
      {"sparse_sigmoid", [](double x) { return x <= -1.0 ? 0.0 : (x >= 1.0 ? 1.0 : 0.5 * (x + 1.0)); }},
  };
}

// Names tf.keras / tf-keras resolve (keras/activations.py functions plus the extra module globals
// leaky_relu, log_softmax, relu6, silu that tf_keras/activations.py adds for deserialize()).
const std::vector<std::string> kBothDialects = {
    "linear", "tanh",  "sigmoid", "hard_sigmoid", "relu",    "elu",         "selu",  "softplus", "softsign",
    "exponential", "swish", "gelu", "mish",      "softmax", "log_softmax", "relu6", "leaky_relu", "silu"};
const std::vector<std::string> kKeras3Only = {"hard_silu",   "hard_swish",  "celu",      "log_sigmoid",
                                              "sparse_plus", "squareplus",  "tanh_shrink", "hard_tanh",
                                              "soft_shrink", "hard_shrink", "sparse_sigmoid", "sparsemax"};

void expect_close(double want, float got, double rel, double abs, const std::string& what) {
  const double tol = abs + rel * std::fabs(want);
  EXPECT_LE(std::fabs(static_cast<double>(got) - want), tol) << what << ": want " << want << " got " << got;
}

}  // namespace

TEST(Activations, ElementwiseKeras3MatchFormulas) {
  const auto xs = probe_inputs();
  for (const auto& f : elementwise_k3()) {
    const auto got = run(f.name, kK3, xs);
    ASSERT_EQ(got.size(), xs.size());
    for (std::size_t i = 0; i < xs.size(); ++i)
      expect_close(f.f(xs[i]), got[i], 2e-6, 1e-6, std::string(f.name) + "(" + std::to_string(xs[i]) + ")");
  }
}

TEST(Activations, ElementwiseKeras2MatchFormulas) {
  const auto xs = probe_inputs();
  for (const auto& f : elementwise_k3()) {
    if (std::find(kBothDialects.begin(), kBothDialects.end(), f.name) == kBothDialects.end()) continue;
    const auto got = run(f.name, kK2, xs);
    for (std::size_t i = 0; i < xs.size(); ++i)
      expect_close(f.f(xs[i]), got[i], 2e-6, 1e-6, std::string("K2 ") + f.name + "(" + std::to_string(xs[i]) + ")");
  }
}

TEST(Activations, ShrinkAndKnotValuesAreExact) {
  // Thresholds are strict or inclusive exactly as in Keras 3.
  EXPECT_EQ(run("soft_shrink", kK3, {0.5f, -0.5f})[0], 0.0f);
  EXPECT_EQ(run("hard_shrink", kK3, {0.5f})[0], 0.0f);
  EXPECT_EQ(run("hard_shrink", kK3, {0.5001f})[0], 0.5001f);
  EXPECT_EQ(run("sparse_plus", kK3, {-1.0f})[0], 0.0f);
  EXPECT_EQ(run("sparse_plus", kK3, {1.0f})[0], 1.0f);
  EXPECT_EQ(run("sparse_sigmoid", kK3, {1.0f})[0], 1.0f);
  EXPECT_EQ(run("sparse_sigmoid", kK3, {-1.0f})[0], 0.0f);
  EXPECT_EQ(run("relu", kK3, {-0.0f, -3.0f})[1], 0.0f);
  EXPECT_EQ(run("relu6", kK3, {7.0f})[0], 6.0f);
  EXPECT_EQ(run("leaky_relu", kK3, {-1.0f})[0], -0.2f);
}

// recur uses Eigen's vectorised float tanh/logistic on purpose: they are the approximations
// TensorFlow's CPU kernels use (§6.3). Their worst error against the exact function is about
// 3.9e-7 (tanh, ~6.6 ulp near |y| = 1, including the clamp at |x| = 7.905) and 2.05e-7 (sigmoid),
// so the bounds are 4e-7 and 2.5e-7 absolute rather than 2e-7.
TEST(Activations, TanhAndSigmoidCloseToDouble) {
  std::vector<float> xs;
  for (int i = -2000; i <= 2000; ++i) xs.push_back(static_cast<float>(i) * 0.005f);
  for (float v : {1e-8f, -1e-8f, 3e-4f, -3e-4f, 5e-4f, 15.0f, -15.0f, 30.0f, -30.0f, 88.0f, -88.0f}) xs.push_back(v);
  for (const DialectInfo& d : {kK2, kK3}) {
    const auto th = run("tanh", d, xs);
    const auto sg = run("sigmoid", d, xs);
    for (std::size_t i = 0; i < xs.size(); ++i) {
      EXPECT_NEAR(th[i], std::tanh(static_cast<double>(xs[i])), 4e-7) << "tanh(" << xs[i] << ")";
      EXPECT_NEAR(sg[i], sigmoid_d(xs[i]), 2.5e-7) << "sigmoid(" << xs[i] << ")";
      if (std::fabs(xs[i]) <= 2.0f) {
        EXPECT_NEAR(sg[i], sigmoid_d(xs[i]), 2e-7) << "sigmoid(" << xs[i] << ")";
      }
    }
  }
}

namespace {
// The exact float operation sequences of the three hard_sigmoid forms. volatile keeps each
// rounding step separate whatever the compiler's contraction setting is.
float hs_keras2(float x) {
  volatile float y = x * 0.2f;
  volatile float z = y + 0.5f;
  return std::min(std::max(static_cast<float>(z), 0.0f), 1.0f);
}
float hs_keras3_0(float x) {
  volatile float y = x / 6.0f;
  volatile float z = y + 0.5f;
  return std::min(std::max(static_cast<float>(z), 0.0f), 1.0f);
}
float hs_keras3(float x) {
  volatile float y = x + 3.0f;
  const float r = std::min(std::max(static_cast<float>(y), 0.0f), 6.0f);
  volatile float q = r / 6.0f;
  return q;
}
std::vector<float> dense_grid(float lo, float hi, int n) {
  std::vector<float> v;
  for (int i = 0; i <= n; ++i) v.push_back(lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(n));
  return v;
}
}  // namespace

TEST(Activations, HardSigmoidKeras2IsClipOfTwoFloatOps) {
  auto xs = probe_inputs();
  const auto grid = dense_grid(-3.5f, 3.5f, 20000);
  xs.insert(xs.end(), grid.begin(), grid.end());
  const auto got = run("hard_sigmoid", kK2, xs);
  for (std::size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(got[i], hs_keras2(xs[i])) << "x=" << xs[i];
  // Breakpoints ±2.5.
  const auto b = run("hard_sigmoid", kK2, {-2.5f, 2.5f, -2.6f, 2.6f, 0.0f, 1.0f});
  EXPECT_EQ(b[0], 0.0f);
  EXPECT_EQ(b[1], 1.0f);
  EXPECT_EQ(b[2], 0.0f);
  EXPECT_EQ(b[3], 1.0f);
  EXPECT_EQ(b[4], 0.5f);
  EXPECT_NEAR(b[5], 0.7f, 1e-7);
  EXPECT_LT(run("hard_sigmoid", kK2, {2.4999f})[0], 1.0f);
  EXPECT_GT(run("hard_sigmoid", kK2, {-2.4999f})[0], 0.0f);
}

TEST(Activations, HardSigmoidKeras2IsNotFused) {
  // Find inputs where a fused multiply-add rounds differently from the two separate ops; recur
  // must give the two-op value there.
  std::vector<float> witnesses;
  for (float x : dense_grid(-2.5f, 2.5f, 200000)) {
    const float fused = std::fma(x, 0.2f, 0.5f);
    if (fused != hs_keras2(x) && fused > 0.0f && fused < 1.0f) witnesses.push_back(x);
  }
  ASSERT_FALSE(witnesses.empty());
  const auto got = run("hard_sigmoid", kK2, witnesses);
  for (std::size_t i = 0; i < witnesses.size(); ++i) EXPECT_EQ(got[i], hs_keras2(witnesses[i]));
}

TEST(Activations, HardSigmoidKeras3IsRelu6Form) {
  auto xs = probe_inputs();
  const auto grid = dense_grid(-4.0f, 4.0f, 20000);
  xs.insert(xs.end(), grid.begin(), grid.end());
  for (const char* v : {"3.1.0", "3.13.0", "3.15.1"}) {
    const auto got = run("hard_sigmoid", DialectInfo::parse(Dialect::keras3, v), xs);
    for (std::size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(got[i], hs_keras3(xs[i])) << v << " x=" << xs[i];
  }
  const auto b = run("hard_sigmoid", kK3, {-3.0f, 3.0f, 2.6f, -2.6f, 1.0f});
  EXPECT_EQ(b[0], 0.0f);
  EXPECT_EQ(b[1], 1.0f);
  EXPECT_LT(b[2], 1.0f);  // Keras 2 would saturate here
  EXPECT_GT(b[3], 0.0f);
  EXPECT_NEAR(b[4], 4.0 / 6.0, 1e-7);
  EXPECT_LT(run("hard_sigmoid", kK3, {2.9999f})[0], 1.0f);
}

TEST(Activations, HardSigmoidKeras30IsDivideThenAdd) {
  const DialectInfo k30 = DialectInfo::parse(Dialect::keras3, "3.0.5");
  auto xs = probe_inputs();
  const auto grid = dense_grid(-4.0f, 4.0f, 20000);
  xs.insert(xs.end(), grid.begin(), grid.end());
  const auto got = run("hard_sigmoid", k30, xs);
  for (std::size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(got[i], hs_keras3_0(xs[i])) << "x=" << xs[i];
  // The two Keras 3 forms round differently on some inputs: each version must give its own.
  std::vector<float> witnesses;
  for (float x : grid)
    if (hs_keras3_0(x) != hs_keras3(x)) witnesses.push_back(x);
  ASSERT_FALSE(witnesses.empty());
  const auto g30 = run("hard_sigmoid", k30, witnesses);
  const auto g31 = run("hard_sigmoid", DialectInfo::parse(Dialect::keras3, "3.1.0"), witnesses);
  for (std::size_t i = 0; i < witnesses.size(); ++i) {
    EXPECT_EQ(g30[i], hs_keras3_0(witnesses[i]));
    EXPECT_EQ(g31[i], hs_keras3(witnesses[i]));
  }
}

TEST(Activations, HardSiluUsesSixthSlope) {
  const auto got = run("hard_silu", kK3, {-3.0f, -1.0f, 0.0f, 1.0f, 3.0f, 4.0f});
  const double want[] = {0.0, -1.0 * 2.0 / 6.0, 0.0, 4.0 / 6.0, 3.0, 4.0};
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(got[i], want[i], 1e-6);
}

TEST(Activations, NamesAcceptedPerDialect) {
  for (const auto& n : kBothDialects) {
    EXPECT_NO_THROW(recur::parse_activation(n, kK2, "activation")) << n;
    EXPECT_NO_THROW(recur::parse_activation(n, kK3, "activation")) << n;
  }
  for (const auto& n : kKeras3Only) {
    EXPECT_NO_THROW(recur::parse_activation(n, kK3, "activation")) << n;
    try {
      recur::parse_activation(n, kK2, "recurrent_activation");
      ADD_FAILURE() << n << " must be rejected by Keras 2";
    } catch (const recur::Error& e) {
      EXPECT_EQ(e.code(), recur::Error::Code::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("recurrent_activation"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
    }
  }
}

TEST(Activations, UnknownNamesRejected) {
  for (const char* n : {"foo", "Tanh", "TANH", "tanh ", "threshold_relu", "hardsigmoid", "swish2"}) {
    for (const DialectInfo& d : {kK2, kK3}) {
      try {
        recur::parse_activation(n, d, "activation");
        ADD_FAILURE() << "'" << n << "' must be rejected in " << d.name();
      } catch (const recur::Error& e) {
        EXPECT_EQ(e.code(), recur::Error::Code::invalid_argument);
        EXPECT_NE(std::string(e.what()).find("activation"), std::string::npos);
      }
    }
  }
}

TEST(Activations, NoneAndEmptyAreLinear) {
  for (const DialectInfo& d : {kK2, kK3}) {
    EXPECT_EQ(recur::parse_activation("None", d, "activation").kind, Activation::linear);
    EXPECT_EQ(recur::parse_activation("", d, "activation").kind, Activation::linear);
    const std::vector<float> xs{-5.0f, -0.5f, 0.0f, 2.0f, 100.0f};
    EXPECT_EQ(run("None", d, xs), xs);
    EXPECT_EQ(run("", d, xs), xs);
  }
}

TEST(Activations, SwishIsSiluInBothAndKeras3SerializesSilu) {
  EXPECT_EQ(recur::parse_activation("swish", kK2, "activation").kind, Activation::silu);
  EXPECT_EQ(recur::parse_activation("swish", kK3, "activation").kind, Activation::silu);
  EXPECT_EQ(recur::activation_name(Activation::silu, Dialect::keras3), "silu");
  EXPECT_EQ(recur::activation_name(Activation::silu, Dialect::keras2), "swish");
  EXPECT_EQ(recur::activation_name(Activation::hard_sigmoid, Dialect::keras2), "hard_sigmoid");
}

TEST(Activations, HardSigmoidFormFollowsDialect) {
  EXPECT_EQ(recur::parse_activation("hard_sigmoid", kK2, "a").hard_sigmoid, recur::HardSigmoid::keras2);
  EXPECT_EQ(recur::parse_activation("hard_sigmoid", kK3, "a").hard_sigmoid, recur::HardSigmoid::keras3);
  EXPECT_EQ(recur::parse_activation("hard_sigmoid", DialectInfo::parse(Dialect::keras3, "3.0.5"), "a").hard_sigmoid,
            recur::HardSigmoid::keras3_0);
}

namespace {
std::vector<double> softmax_ref(const std::vector<double>& r, bool log) {
  const double mx = *std::max_element(r.begin(), r.end());
  double s = 0;
  for (double v : r) s += std::exp(v - mx);
  std::vector<double> out;
  for (double v : r) out.push_back(log ? v - mx - std::log(s) : std::exp(v - mx) / s);
  return out;
}
// Keras 3's TensorFlow-backend sparsemax (keras/src/backend/tensorflow/nn.py), written out:
// support_j = sorted_j - (cumsum_j - 1) / j > 0, k = |support|, and tau sums the cumulative sums of
// every supported position: tau = (sum_{j in support} cumsum_j - 1) / k. (This is what Keras
// computes, not the textbook simplex projection; the two agree when k == 1.)
std::vector<double> sparsemax_ref(const std::vector<double>& z) {
  std::vector<double> s = z;
  std::sort(s.begin(), s.end(), std::greater<double>());
  double cum = 0, support_cum = 0, k = 0;
  for (std::size_t j = 0; j < s.size(); ++j) {
    cum += s[j];
    if (s[j] - (cum - 1.0) / static_cast<double>(j + 1) > 0) {
      support_cum += cum;
      k += 1;
    }
  }
  const double tau = (support_cum - 1.0) / k;
  std::vector<double> out;
  for (double v : z) out.push_back(std::max(v - tau, 0.0));
  return out;
}
}  // namespace

TEST(Activations, RowWiseSoftmaxLogSoftmaxSparsemax) {
  const std::vector<std::vector<double>> rows{{0.1, -2.0, 3.0, 0.5, 0.0},
                                              {100.0, 101.0, 99.0, 100.5, 98.0},
                                              {0.2, 0.2, 0.2, 0.2, 0.2},
                                              {-1.0, 5.0, -3.0, 0.0, 0.3},
                                              {0.6, 0.55, 0.1, -0.3, 0.58}};
  std::vector<float> flat;
  for (const auto& r : rows)
    for (double v : r) flat.push_back(static_cast<float>(v));
  const auto rcount = static_cast<Eigen::Index>(rows.size());
  for (const DialectInfo& d : {kK2, kK3}) {
    const auto sm = run("softmax", d, flat, rcount);
    const auto lsm = run("log_softmax", d, flat, rcount);
    for (std::size_t r = 0; r < rows.size(); ++r) {
      std::vector<double> rf;
      for (int j = 0; j < 5; ++j) rf.push_back(flat[r * 5 + j]);
      const auto want = softmax_ref(rf, false);
      const auto wantl = softmax_ref(rf, true);
      double sum = 0;
      for (int j = 0; j < 5; ++j) {
        EXPECT_NEAR(sm[r * 5 + j], want[j], 1e-6) << "softmax row " << r;
        EXPECT_NEAR(lsm[r * 5 + j], wantl[j], 2e-6) << "log_softmax row " << r;
        sum += sm[r * 5 + j];
      }
      EXPECT_NEAR(sum, 1.0, 1e-6);  // normalised per row, not over the whole block
    }
  }
  const auto spm = run("sparsemax", kK3, flat, rcount);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::vector<double> rf;
    for (int j = 0; j < 5; ++j) rf.push_back(flat[r * 5 + j]);
    const auto want = sparsemax_ref(rf);
    for (int j = 0; j < 5; ++j) EXPECT_NEAR(spm[r * 5 + j], want[j], 2e-5) << "sparsemax row " << r << " col " << j;
  }
  // A row with one dominant value: support of 1, a one-hot output.
  const auto one_hot = run("sparsemax", kK3, {-1.0f, 0.0f, 1.0f});
  EXPECT_NEAR(one_hot[0], 0.0, 1e-7);
  EXPECT_NEAR(one_hot[1], 0.0, 1e-7);
  EXPECT_NEAR(one_hot[2], 1.0, 1e-7);
  // A single row of the same values normalised as one block would differ: 25 values, not 5.
  const auto whole = run("softmax", kK3, flat, 1);
  EXPECT_GT(std::fabs(whole[0] - run("softmax", kK3, flat, rcount)[0]), 1e-3);
}
