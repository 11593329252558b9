// SPDX-License-Identifier: Apache-2.0
// The RNN wrapper semantics of keras_semantics.md §4 (masks, go_backwards, states, stateful,
// time_major, unroll) and the cell equations of §1.2/§2.2, checked against an independent
// double-precision implementation of the equations and against properties that must hold.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "recur/error.hpp"
#include "recur/layer.hpp"

namespace recur {
namespace {

using Vec = std::vector<float>;

LayerConfig make(LayerKind kind, int units, int input, Dialect d = Dialect::keras3) {
  LayerConfig c = LayerConfig::defaults(kind, DialectInfo::latest(d));
  c.units = units;
  c.input_size = input;
  c.seed = 7;
  return c;
}

Vec random_vec(std::size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  Vec v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

void randomize_weights(Layer& layer, unsigned seed, float scale = 0.5f) {
  for (std::size_t i = 0; i < layer.num_weights(); ++i) {
    const Vec w = random_vec(static_cast<std::size_t>(layer.weight(i).size()), seed + static_cast<unsigned>(i), scale);
    layer.set_weight(i, w.data(), w.size(), nullptr, 0);
  }
}

struct Result {
  Vec output;
  Vec states;
};

Result run(Layer& layer, const Vec& x, Index B, Index T, const std::vector<std::uint8_t>* mask = nullptr,
           const Vec* h0 = nullptr) {
  LayerCall c;
  c.input = x.data();
  c.input_len = x.size();
  c.batch = B;
  c.timesteps = T;
  if (mask) {
    c.mask = mask->data();
    c.mask_len = mask->size();
  }
  if (h0) {
    c.initial_state = h0->data();
    c.initial_state_len = h0->size();
    c.num_initial_states = layer.num_states();
  }
  Result r;
  r.output.resize(layer.output_size(B, T));
  r.states.resize(static_cast<std::size_t>(layer.num_states() * B * layer.config().units));
  c.output = r.output.data();
  c.output_len = r.output.size();
  c.final_state = r.states.data();
  c.final_state_len = r.states.size();
  layer.call(c);
  return r;
}

void expect_near(const Vec& a, const Vec& b, double tol, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tol) << what << " at " << i;
}

// ---- an independent double-precision reference of the equations ----

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// One GRU/LSTM/SimpleRNN step for one sample; weights in Keras layout; activations tanh/sigmoid.
void reference_step(const LayerConfig& c, const std::vector<Vec>& w, const float* x, std::vector<double>& h,
                    std::vector<double>& cs) {
  const int u = c.units, F = c.input_size, G = c.gates();
  auto K = [&](int i, int j) { return static_cast<double>(w[0][static_cast<std::size_t>(i * G * u + j)]); };
  auto U = [&](int i, int j) { return static_cast<double>(w[1][static_cast<std::size_t>(i * G * u + j)]); };
  std::vector<double> xk(static_cast<std::size_t>(G * u), 0.0), hu(static_cast<std::size_t>(G * u), 0.0);
  for (int j = 0; j < G * u; ++j) {
    for (int i = 0; i < F; ++i) xk[static_cast<std::size_t>(j)] += x[i] * K(i, j);
    for (int i = 0; i < u; ++i) hu[static_cast<std::size_t>(j)] += h[static_cast<std::size_t>(i)] * U(i, j);
  }
  const bool bias = c.use_bias;
  if (c.is_simple_rnn()) {
    // h' = tanh((x@K + b) + h@U)
    for (int j = 0; j < u; ++j) h[j] = std::tanh(xk[j] + (bias ? w[2][static_cast<std::size_t>(j)] : 0.0) + hu[j]);
    return;
  }
  if (c.is_gru()) {
    std::vector<double> bi(3 * u, 0.0), br(3 * u, 0.0);
    if (bias)
      for (int j = 0; j < 3 * u; ++j) {
        bi[j] = w[2][static_cast<std::size_t>(j)];
        if (c.reset_after) br[j] = w[2][static_cast<std::size_t>(3 * u + j)];
      }
    std::vector<double> hn(static_cast<std::size_t>(u));
    std::vector<double> r(static_cast<std::size_t>(u));
    for (int j = 0; j < u; ++j) r[j] = sigmoid(xk[u + j] + bi[u + j] + hu[u + j] + br[u + j]);
    for (int j = 0; j < u; ++j) {
      const double z = sigmoid(xk[j] + bi[j] + hu[j] + br[j]);
      double cand;
      if (c.reset_after) {
        cand = std::tanh(xk[2 * u + j] + bi[2 * u + j] + r[j] * (hu[2 * u + j] + br[2 * u + j]));
      } else {
        double rh = 0.0;
        for (int i = 0; i < u; ++i) rh += r[i] * h[i] * U(i, 2 * u + j);
        cand = std::tanh(xk[2 * u + j] + bi[2 * u + j] + rh);
      }
      hn[j] = z * h[j] + (1 - z) * cand;
    }
    h = hn;
  } else {
    for (int j = 0; j < u; ++j) {
      auto pre = [&](int g) { return xk[g * u + j] + hu[g * u + j] + (bias ? w[2][static_cast<std::size_t>(g * u + j)] : 0.0); };
      const double i = sigmoid(pre(0)), f = sigmoid(pre(1)), g = std::tanh(pre(2)), o = sigmoid(pre(3));
      cs[j] = f * cs[j] + i * g;
      h[j] = o * std::tanh(cs[j]);
    }
  }
}

struct Combo {
  LayerKind kind;
  bool reset_after;
  bool use_bias;
  int implementation;
};

class EquationTest : public ::testing::TestWithParam<Combo> {};

TEST_P(EquationTest, MatchesIndependentReference) {
  const Combo p = GetParam();
  LayerConfig c = make(p.kind, 5, 3);
  c.reset_after = p.kind == LayerKind::gru ? p.reset_after : true;
  c.use_bias = p.use_bias;
  c.implementation = p.implementation;
  c.return_sequences = true;
  Layer layer(c);
  randomize_weights(layer, 11);
  const Index B = 3, T = 6;
  const Vec x = random_vec(static_cast<std::size_t>(B * T * 3), 5);
  const Result r = run(layer, x, B, T);
  std::vector<Vec> w;
  for (std::size_t i = 0; i < layer.num_weights(); ++i)
    w.emplace_back(layer.weight(i).data(), layer.weight(i).data() + layer.weight(i).size());
  for (Index b = 0; b < B; ++b) {
    std::vector<double> h(5, 0.0), cs(5, 0.0);
    for (Index t = 0; t < T; ++t) {
      reference_step(c, w, x.data() + (b * T + t) * 3, h, cs);
      for (int j = 0; j < 5; ++j) ASSERT_NEAR(r.output[static_cast<std::size_t>((b * T + t) * 5 + j)], h[j], 2e-6);
    }
    for (int j = 0; j < 5; ++j) EXPECT_NEAR(r.states[static_cast<std::size_t>(b * 5 + j)], h[j], 2e-6);
    if (c.is_lstm()) {
      for (int j = 0; j < 5; ++j) EXPECT_NEAR(r.states[static_cast<std::size_t>(B * 5 + b * 5 + j)], cs[j], 2e-6);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, EquationTest,
                         ::testing::Values(Combo{LayerKind::gru, true, true, 2}, Combo{LayerKind::gru, true, true, 1},
                                           Combo{LayerKind::gru, false, true, 2}, Combo{LayerKind::gru, false, true, 1},
                                           Combo{LayerKind::gru, true, false, 2}, Combo{LayerKind::gru, false, false, 1},
                                           Combo{LayerKind::lstm, true, true, 2}, Combo{LayerKind::lstm, true, true, 1},
                                           Combo{LayerKind::lstm, true, false, 2},
                                           Combo{LayerKind::simple_rnn, true, true, 2},
                                           Combo{LayerKind::simple_rnn, true, false, 2}));

// ---- §4.2 go_backwards ----

TEST(Sequence, GoBackwardsEqualsForwardOnReversedInputAndKeepsProcessingOrder) {
  for (LayerKind kind : {LayerKind::gru, LayerKind::lstm, LayerKind::simple_rnn}) {
    LayerConfig c = make(kind, 4, 3);
    c.return_sequences = true;
    Layer fwd(c);
    c.go_backwards = true;
    Layer bwd(c);
    randomize_weights(fwd, 3);
    randomize_weights(bwd, 3);
    const Index B = 2, T = 5;
    const Vec x = random_vec(static_cast<std::size_t>(B * T * 3), 9);
    Vec reversed(x.size());
    for (Index b = 0; b < B; ++b)
      for (Index t = 0; t < T; ++t)
        for (int f = 0; f < 3; ++f)
          reversed[static_cast<std::size_t>((b * T + t) * 3 + f)] = x[static_cast<std::size_t>((b * T + (T - 1 - t)) * 3 + f)];
    const Result a = run(bwd, x, B, T), e = run(fwd, reversed, B, T);
    expect_near(a.output, e.output, 0.0, "outputs stay in processing order");
    expect_near(a.states, e.states, 0.0, "final states");
  }
}

// ---- §4.6 masking ----

TEST(Sequence, RightPaddedMaskCarriesStateAndLastOutput) {
  LayerConfig c = make(LayerKind::lstm, 4, 3);
  c.return_sequences = true;
  Layer layer(c);
  randomize_weights(layer, 21);
  const Index B = 1, T = 5, valid = 3;
  const Vec x = random_vec(static_cast<std::size_t>(T * 3), 4);
  const std::vector<std::uint8_t> mask{1, 1, 1, 0, 0};
  const Result m = run(layer, x, B, T, &mask);
  const Vec head(x.begin(), x.begin() + valid * 3);
  const Result t = run(layer, head, B, valid);
  expect_near(m.states, t.states, 0.0, "state after the padding equals the unpadded state");
  for (Index k = valid; k < T; ++k)
    for (int j = 0; j < 4; ++j)
      EXPECT_EQ(m.output[static_cast<std::size_t>(k * 4 + j)], t.output[static_cast<std::size_t>((valid - 1) * 4 + j)]);
}

TEST(Sequence, LeadingMaskedStepsOutputZeroEvenWithNonZeroInitialState) {
  LayerConfig c = make(LayerKind::gru, 3, 2);
  c.return_sequences = true;
  Layer layer(c);
  randomize_weights(layer, 5);
  const Vec x = random_vec(8, 6);
  const Vec h0{0.5f, -0.25f, 0.75f};
  const std::vector<std::uint8_t> mask{0, 0, 1, 1};
  const Result m = run(layer, x, 1, 4, &mask, &h0);
  for (int k = 0; k < 2; ++k)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(m.output[static_cast<std::size_t>(k * 3 + j)], 0.0f) << "step " << k;
  const Vec tail(x.begin() + 4, x.end());
  const Result t = run(layer, tail, 1, 2, nullptr, &h0);
  expect_near(m.states, t.states, 0.0, "the valid steps start from h0");
  expect_near(Vec(m.output.begin() + 6, m.output.end()), t.output, 0.0, "valid outputs");
}

TEST(Sequence, HolesCarryStateAcrossMaskedSteps) {
  LayerConfig c = make(LayerKind::lstm, 3, 2);
  Layer layer(c);
  randomize_weights(layer, 8);
  const Vec x = random_vec(12, 3);
  const std::vector<std::uint8_t> mask{1, 0, 0, 1, 0, 1};
  const Result m = run(layer, x, 1, 6, &mask);
  Vec kept;
  for (int t = 0; t < 6; ++t)
    if (mask[static_cast<std::size_t>(t)]) kept.insert(kept.end(), x.begin() + t * 2, x.begin() + t * 2 + 2);
  const Result k = run(layer, kept, 1, 3);
  expect_near(m.states, k.states, 0.0, "states");
  expect_near(m.output, k.output, 0.0, "last output is the last valid output");
}

TEST(Sequence, FullyMaskedRowKeepsInitialStateAndOutputsZero) {
  LayerConfig c = make(LayerKind::gru, 3, 2);
  c.return_sequences = true;
  Layer layer(c);
  randomize_weights(layer, 2);
  const Vec x = random_vec(2 * 3 * 2, 1);
  const Vec h0 = random_vec(6, 12);
  const std::vector<std::uint8_t> mask{1, 1, 1, 0, 0, 0};
  const Result m = run(layer, x, 2, 3, &mask, &h0);
  for (int j = 0; j < 3; ++j) EXPECT_EQ(m.states[static_cast<std::size_t>(3 + j)], h0[static_cast<std::size_t>(3 + j)]);
  for (int k = 0; k < 3; ++k)
    for (int j = 0; j < 3; ++j) EXPECT_EQ(m.output[static_cast<std::size_t>((3 + k) * 3 + j)], 0.0f);
}

TEST(Sequence, ZeroOutputForMaskWritesZerosAtMaskedSteps) {
  LayerConfig c = make(LayerKind::gru, 3, 2);
  c.return_sequences = true;
  c.zero_output_for_mask = true;
  Layer zero(c);
  c.zero_output_for_mask = false;
  Layer carry(c);
  randomize_weights(zero, 4);
  randomize_weights(carry, 4);
  const Vec x = random_vec(10, 2);
  const std::vector<std::uint8_t> mask{1, 0, 1, 1, 0};
  const Result z = run(zero, x, 1, 5, &mask), k = run(carry, x, 1, 5, &mask);
  for (int t = 0; t < 5; ++t)
    for (int j = 0; j < 3; ++j) {
      const auto i = static_cast<std::size_t>(t * 3 + j);
      if (mask[static_cast<std::size_t>(t)])
        EXPECT_EQ(z.output[i], k.output[i]);
      else
        EXPECT_EQ(z.output[i], 0.0f);
    }
  expect_near(z.states, k.states, 0.0, "states do not depend on zero_output_for_mask");
}

TEST(Sequence, UnrolledZeroOutputWithGoBackwardsUsesUnreversedMask) {
  // Keras's unrolled loop zeroes the stacked outputs with the mask in input order (§4.6, §12.15).
  LayerConfig c = make(LayerKind::gru, 2, 2);
  c.return_sequences = true;
  c.zero_output_for_mask = true;
  c.go_backwards = true;
  Layer loop(c);
  c.unroll = true;
  Layer unrolled(c);
  c.unroll = false;
  c.zero_output_for_mask = false;
  Layer carry(c);
  for (Layer* l : {&loop, &unrolled, &carry}) randomize_weights(*l, 6);
  const Vec x = random_vec(8, 3);
  const std::vector<std::uint8_t> mask{1, 1, 1, 0};  // processing order is t = 3, 2, 1, 0
  const Result a = run(loop, x, 1, 4, &mask), u = run(unrolled, x, 1, 4, &mask), k = run(carry, x, 1, 4, &mask);
  for (int j = 0; j < 2; ++j) {
    EXPECT_EQ(a.output[static_cast<std::size_t>(j)], 0.0f) << "loop: first processed step (t=3) is masked";
    EXPECT_EQ(u.output[static_cast<std::size_t>(j)], k.output[static_cast<std::size_t>(j)])
        << "unrolled: position 0 uses mask[0] = valid, so the carried output (0 here) stays";
    EXPECT_EQ(u.output[static_cast<std::size_t>(3 * 2 + j)], 0.0f) << "unrolled: position 3 uses mask[3] = masked";
    EXPECT_NE(a.output[static_cast<std::size_t>(3 * 2 + j)], 0.0f) << "loop: position 3 is t=0, valid";
  }
  expect_near(a.states, u.states, 0.0, "states agree");
}

// ---- §4.3 time_major ----

TEST(Sequence, TimeMajorEqualsTransposedBatchMajor) {
  LayerConfig c = make(LayerKind::lstm, 3, 2, Dialect::keras2);
  c.return_sequences = true;
  Layer bm(c);
  c.time_major = true;
  Layer tm(c);
  randomize_weights(bm, 9);
  randomize_weights(tm, 9);
  const Index B = 3, T = 4, F = 2, u = 3;
  const Vec x = random_vec(static_cast<std::size_t>(B * T * F), 17);
  Vec xt(x.size());
  for (Index b = 0; b < B; ++b)
    for (Index t = 0; t < T; ++t)
      for (Index f = 0; f < F; ++f) xt[static_cast<std::size_t>((t * B + b) * F + f)] = x[static_cast<std::size_t>((b * T + t) * F + f)];
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(B * T), 1), mask_t(mask.size(), 1);
  mask[static_cast<std::size_t>(1 * T + 3)] = 0;
  mask_t[static_cast<std::size_t>(3 * B + 1)] = 0;
  const Result a = run(bm, x, B, T, &mask), b2 = run(tm, xt, B, T, &mask_t);
  expect_near(a.states, b2.states, 0.0, "states");
  for (Index b = 0; b < B; ++b)
    for (Index t = 0; t < T; ++t)
      for (Index j = 0; j < u; ++j)
        EXPECT_EQ(a.output[static_cast<std::size_t>((b * T + t) * u + j)], b2.output[static_cast<std::size_t>((t * B + b) * u + j)]);
}

// ---- §4.4 stateful ----

TEST(Sequence, StatefulCallsContinueWhereTheLastStopped) {
  for (Dialect d : {Dialect::keras2, Dialect::keras3}) {
    LayerConfig c = make(LayerKind::lstm, 3, 2, d);
    Layer whole(c);
    c.stateful = true;
    c.batch_size = 2;
    Layer stateful(c);
    randomize_weights(whole, 13);
    randomize_weights(stateful, 13);
    const Vec x = random_vec(2 * 6 * 2, 8);
    const Result w = run(whole, x, 2, 6);
    Result part;
    for (int chunk = 0; chunk < 3; ++chunk) {
      Vec xs;
      for (int b = 0; b < 2; ++b) xs.insert(xs.end(), x.begin() + (b * 6 + chunk * 2) * 2, x.begin() + (b * 6 + chunk * 2 + 2) * 2);
      part = run(stateful, xs, 2, 2);
    }
    expect_near(part.states, w.states, 1e-6, "three stateful calls equal one call");
    expect_near(part.output, w.output, 1e-6, "last output");
    Vec stored(part.states.size());
    stateful.get_states(stored.data(), stored.size());
    expect_near(stored, part.states, 0.0, "the layer keeps the final states");
    stateful.reset_states();
    stateful.get_states(stored.data(), stored.size());
    for (float v : stored) EXPECT_EQ(v, 0.0f);
  }
}

TEST(Sequence, StatefulInitialStatePrecedenceFollowsDialect) {
  const Vec h0{0.3f, -0.2f, 0.1f};
  for (Dialect d : {Dialect::keras2, Dialect::keras3}) {
    LayerConfig c = make(LayerKind::gru, 3, 2, d);
    c.stateful = true;
    c.batch_size = 1;
    Layer layer(c);
    c.stateful = false;
    c.batch_size = 0;
    Layer plain(c);
    randomize_weights(layer, 1);
    randomize_weights(plain, 1);
    const Vec x = random_vec(4, 2);
    // Stored states are zero: both dialects use the passed initial state.
    const Result first = run(layer, x, 1, 2, nullptr, &h0);
    expect_near(first.states, run(plain, x, 1, 2, nullptr, &h0).states, 0.0, "first call uses initial_state");
    // Stored states are non-zero now.
    const Result second = run(layer, x, 1, 2, nullptr, &h0);
    const Vec expected = d == Dialect::keras2 ? run(plain, x, 1, 2, nullptr, &first.states).states
                                              : run(plain, x, 1, 2, nullptr, &h0).states;
    expect_near(second.states, expected, 0.0, d == Dialect::keras2 ? "Keras 2: stored states win" : "Keras 3: initial_state wins");
  }
}

TEST(Sequence, StatefulErrors) {
  LayerConfig c = make(LayerKind::gru, 3, 2);
  Layer plain(c);
  EXPECT_THROW(plain.reset_states(), Error);
  c.stateful = true;
  EXPECT_THROW(Layer{c}, Error) << "stateful without batch size";
  c.batch_size = 2;
  Layer layer(c);
  const Vec x = random_vec(3 * 2 * 2, 1);
  EXPECT_THROW(run(layer, x, 3, 2), Error) << "batch mismatch";
  const Vec wrong(5, 0.0f);
  EXPECT_THROW(layer.reset_states(wrong.data(), wrong.size(), 1), Error);
  EXPECT_THROW(layer.reset_states(wrong.data(), wrong.size(), 2), Error);
}

// ---- states: streaming equals one call ----

TEST(Sequence, StreamingStepsEqualOneCall) {
  for (LayerKind kind : {LayerKind::gru, LayerKind::simple_rnn}) {
    SCOPED_TRACE(kind_name(kind));
    LayerConfig c = make(kind, 6, 4);
    Layer layer(c);
    randomize_weights(layer, 31);
    const Index B = 3, T = 7;
    const Vec x = random_vec(static_cast<std::size_t>(B * T * 4), 30);
    const Result whole = run(layer, x, B, T);
    State state(1, B, 6);
    Vec out(static_cast<std::size_t>(B * 6));
    for (Index t = 0; t < T; ++t) {
      Vec step;
      for (Index b = 0; b < B; ++b) step.insert(step.end(), x.begin() + (b * T + t) * 4, x.begin() + (b * T + t + 1) * 4);
      layer.call_state(state, step.data(), step.size(), 1, nullptr, 0, out.data(), out.size());
    }
    Vec s(whole.states.size());
    state.get(s.data(), s.size());
    expect_near(s, whole.states, 1e-6, "streamed state");
    expect_near(out, whole.output, 1e-6, "streamed last output");
  }
}

TEST(Sequence, SimpleRnnStatefulCallsAndInitialStates) {
  for (Dialect d : {Dialect::keras2, Dialect::keras3}) {
    LayerConfig c = make(LayerKind::simple_rnn, 3, 2, d);
    c.return_sequences = true;
    Layer whole(c);
    c.stateful = true;
    c.batch_size = 2;
    Layer stateful(c);
    randomize_weights(whole, 23);
    randomize_weights(stateful, 23);
    const Vec x = random_vec(2 * 6 * 2, 18);
    const Vec h0 = random_vec(2 * 3, 19, 0.5f);
    const Result w = run(whole, x, 2, 6, nullptr, &h0);
    Result part;
    for (int chunk = 0; chunk < 3; ++chunk) {
      Vec xs;
      for (int b = 0; b < 2; ++b) xs.insert(xs.end(), x.begin() + (b * 6 + chunk * 2) * 2, x.begin() + (b * 6 + chunk * 2 + 2) * 2);
      // The first call starts from h0 (the stored states are zero, so both dialects take it).
      part = run(stateful, xs, 2, 2, nullptr, chunk == 0 ? &h0 : nullptr);
    }
    expect_near(part.states, w.states, 1e-6, "three stateful calls equal one call");
    ASSERT_EQ(part.states.size(), 2u * 3u) << "SimpleRNN has one state";
    for (int b = 0; b < 2; ++b)
      for (int j = 0; j < 3; ++j)
        EXPECT_NEAR(part.output[static_cast<std::size_t>((b * 2 + 1) * 3 + j)],
                    w.output[static_cast<std::size_t>((b * 6 + 5) * 3 + j)], 1e-6);
  }
}

TEST(Sequence, ChunkedProjectionOfLongSequencesGivesTheSameResult) {
  for (bool backwards : {false, true}) {
    LayerConfig c = make(LayerKind::lstm, 4, 3);
    c.return_sequences = true;
    c.go_backwards = backwards;
    Layer layer(c);
    randomize_weights(layer, 41);
    const Index B = 2, T = 23;
    const Vec x = random_vec(static_cast<std::size_t>(B * T * 3), 40);
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(B * T), 1);
    mask[5] = mask[30] = mask[31] = 0;
    State whole(2, B, 4), chunked(2, B, 4);
    chunked.workspace().projection_budget = B * layer.cell().padded_width() * 3;  // 3 timesteps per chunk
    Vec a(layer.output_size(B, T)), b(a.size());
    layer.call_state(whole, x.data(), x.size(), T, mask.data(), mask.size(), a.data(), a.size());
    layer.call_state(chunked, x.data(), x.size(), T, mask.data(), mask.size(), b.data(), b.size());
    expect_near(a, b, 1e-6, "outputs");
    Vec sa(static_cast<std::size_t>(whole.size())), sb(sa.size());
    whole.get(sa.data(), sa.size());
    chunked.get(sb.data(), sb.size());
    expect_near(sa, sb, 1e-6, "states");
  }
}

// Threads share the gathering and projection of each chunk (split by units for a batch of 12,
// by rows for 24): bitwise the same as one thread.
TEST(Sequence, ChunkedProjectionOnSeveralThreadsGivesBitwiseTheSameResult) {
  for (Index B : {Index(12), Index(24)}) {
    LayerConfig c = make(LayerKind::gru, 96, 40);
    c.return_sequences = true;
    Layer layer(c);
    randomize_weights(layer, 43);
    const Index T = 23;
    const Vec x = random_vec(static_cast<std::size_t>(B * T * 40), 44);
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(B * T), 1);
    mask[7] = mask[40] = 0;
    Vec first, first_states;
    for (int threads : {1, 2, 3}) {
      layer.set_num_threads(threads);
      State st(1, B, 96);
      st.workspace().projection_budget = B * layer.cell().padded_width() * 3;  // 3 timesteps per chunk
      Vec out(layer.output_size(B, T));
      layer.call_state(st, x.data(), x.size(), T, mask.data(), mask.size(), out.data(), out.size());
      Vec states(static_cast<std::size_t>(st.size()));
      st.get(states.data(), states.size());
      if (threads == 1) {
        first = out;
        first_states = states;
        continue;
      }
      EXPECT_TRUE(out == first) << "batch " << B << ", " << threads << " threads: outputs";
      EXPECT_TRUE(states == first_states) << "batch " << B << ", " << threads << " threads: states";
    }
  }
}

// Steps read the weights in alternate directions, continuing from the last call over the same
// weights (Cell::begin_descending): a stream whose first step reads them backwards gives bitwise
// the numbers of one whose first step reads them forwards, on one row (the GEMM's GEMV path), two,
// several, and split by units between threads.
TEST(Sequence, StepsGiveBitwiseTheSameNumbersWhicheverWayTheyReadTheWeights) {
  struct Kind {
    LayerKind kind;
    bool reset_after;
  };
  for (Kind k : {Kind{LayerKind::gru, true}, Kind{LayerKind::gru, false}, Kind{LayerKind::lstm, true},
                 Kind{LayerKind::simple_rnn, true}})
    for (Index B : {Index(1), Index(2), Index(5), Index(24)}) {
      LayerConfig c = make(k.kind, 100, 70);
      c.reset_after = k.reset_after;
      Layer forwards(c), backwards(c);
      randomize_weights(forwards, 61);
      randomize_weights(backwards, 61);
      if (B == 24) {
        forwards.set_num_threads(2);
        backwards.set_num_threads(2);
      }
      const Index ns = k.kind == LayerKind::lstm ? 2 : 1, T = 5;
      const Vec x = random_vec(static_cast<std::size_t>(B * T * 70), 62);
      {
        // One call of one step turns the direction the next run over `backwards` starts with.
        State other(ns, B, 100);
        Vec out(backwards.output_size(B, 1));
        backwards.call_state(other, x.data(), static_cast<std::size_t>(B * 70), 1, nullptr, 0, out.data(), out.size());
      }
      // (Asking with an even count of steps leaves the direction as it is.)
      ASSERT_NE(forwards.cell().begin_descending(2), backwards.cell().begin_descending(2))
          << static_cast<int>(k.kind) << " batch " << B;
      State a(ns, B, 100), b(ns, B, 100);
      for (Index t = 0; t < T; ++t) {
        Vec xt;
        for (Index r = 0; r < B; ++r)
          xt.insert(xt.end(), x.begin() + (r * T + t) * 70, x.begin() + (r * T + t + 1) * 70);
        Vec oa(forwards.output_size(B, 1)), ob(oa.size());
        forwards.call_state(a, xt.data(), xt.size(), 1, nullptr, 0, oa.data(), oa.size());
        backwards.call_state(b, xt.data(), xt.size(), 1, nullptr, 0, ob.data(), ob.size());
        ASSERT_TRUE(oa == ob) << "batch " << B << ", step " << t;
      }
      // And a whole sequence in one call, whose steps alternate too.
      Vec oa(forwards.output_size(B, T)), ob(oa.size());
      forwards.call_state(a, x.data(), x.size(), T, nullptr, 0, oa.data(), oa.size());
      backwards.call_state(b, x.data(), x.size(), T, nullptr, 0, ob.data(), ob.size());
      EXPECT_TRUE(oa == ob) << "batch " << B << ": a sequence";
      Vec sa(static_cast<std::size_t>(a.size())), sb(sa.size());
      a.get(sa.data(), sa.size());
      b.get(sb.data(), sb.size());
      EXPECT_TRUE(sa == sb) << "batch " << B << ": states";
    }
}

TEST(Sequence, StreamingMaskedStepsOneAtATimeEqualOneCall) {
  LayerConfig c = make(LayerKind::lstm, 3, 2);
  c.return_sequences = true;
  Layer layer(c);
  randomize_weights(layer, 51);
  const Index T = 6;
  const Vec x = random_vec(static_cast<std::size_t>(T * 2), 50);
  const std::vector<std::uint8_t> mask{1, 0, 0, 1, 0, 1};
  State whole(2, 1, 3), streamed(2, 1, 3);
  Vec all(layer.output_size(1, T));
  layer.call_state(whole, x.data(), x.size(), T, mask.data(), mask.size(), all.data(), all.size());
  for (Index t = 0; t < T; ++t) {
    Vec out(3);
    layer.call_state(streamed, x.data() + t * 2, 2, 1, mask.data() + t, 1, out.data(), out.size());
    // A masked step repeats the stream's last output, as it does inside one call.
    expect_near(out, Vec(all.begin() + t * 3, all.begin() + (t + 1) * 3), 0.0, "streamed step");
  }
  streamed.reset();
  Vec out(3);
  layer.call_state(streamed, x.data() + 2, 2, 1, mask.data() + 1, 1, out.data(), out.size());
  for (float v : out) EXPECT_EQ(v, 0.0f) << "a reset stream starts from a zero output";
}

TEST(Sequence, InitialStateCountAndLengthAreChecked) {
  Layer lstm(make(LayerKind::lstm, 3, 2));
  const Vec x = random_vec(4, 1), one(3, 0.0f);
  LayerCall c;
  Vec out(3);
  c.input = x.data();
  c.input_len = x.size();
  c.batch = 1;
  c.timesteps = 2;
  c.output = out.data();
  c.output_len = out.size();
  c.initial_state = one.data();
  c.initial_state_len = one.size();
  c.num_initial_states = 1;
  try {
    lstm.call(c);
    FAIL() << "an LSTM needs two initial states";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Error::Code::shape);
    EXPECT_NE(std::string(e.what()).find("initial_state"), std::string::npos);
  }
}

}  // namespace
}  // namespace recur
