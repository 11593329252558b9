// SPDX-License-Identifier: Apache-2.0
// Positive behaviour through the C ABI: options, info, weights, losses, constraints, states,
// streaming, cells, versions and the thread-local error message.
#include <cstdio>
#include <thread>

#include "c_api_test_util.hpp"

namespace {

using rt::options;

recur_layer_info info_of(const recur_layer* l) {
  recur_layer_info info;
  std::memset(&info, 0, sizeof info);
  info.version = RECUR_LAYER_INFO_VERSION;
  EXPECT_EQ(recur_layer_get_info(l, &info), RECUR_OK) << recur_last_error();
  return info;
}

double sum_sq(const std::vector<float>& v) {
  double s = 0.0;
  for (float x : v) s += static_cast<double>(x) * static_cast<double>(x);
  return s;
}

double sum_abs(const std::vector<float>& v) {
  double s = 0.0;
  for (float x : v) s += std::fabs(static_cast<double>(x));
  return s;
}

}  // namespace

TEST(CApiLifecycle, Versions) {
  EXPECT_EQ(recur_version_number(), static_cast<uint32_t>(RECUR_VERSION_NUMBER));
  char expected[32];
  std::snprintf(expected, sizeof expected, "%d.%d.%d", RECUR_VERSION_MAJOR, RECUR_VERSION_MINOR, RECUR_VERSION_PATCH);
  ASSERT_NE(recur_version_string(), nullptr);
  EXPECT_STREQ(recur_version_string(), expected);
  EXPECT_EQ(recur_version_string(), recur_version_string()) << "the version string is static";
}

TEST(CApiLifecycle, LastErrorIsEmptyOnAFreshThread) {
  std::string seen = "unset";
  std::thread t([&] {
    const char* e = recur_last_error();
    seen = e ? e : "NULL";
  });
  t.join();
  EXPECT_EQ(seen, "");
}

TEST(CApiLifecycle, LastErrorIsThreadLocal) {
  // This thread fails one way, another thread fails another way; neither sees the other's message.
  EXPECT_EQ(recur_layer_options_init(nullptr, RECUR_LAYER_OPTIONS_VERSION), RECUR_ERR_INVALID_ARGUMENT);
  const std::string mine = recur_last_error();
  ASSERT_NE(mine.find("opts"), std::string::npos);
  std::string theirs_before, theirs_after, theirs_final;
  std::thread t([&] {
    theirs_before = recur_last_error();
    size_t n = 0;
    EXPECT_EQ(recur_layer_output_length(nullptr, 1, 1, &n), RECUR_ERR_INVALID_ARGUMENT);
    theirs_after = recur_last_error();
  });
  t.join();
  EXPECT_EQ(theirs_before, "");
  EXPECT_NE(theirs_after.find("recur_layer_output_length"), std::string::npos) << theirs_after;
  EXPECT_EQ(mine, recur_last_error()) << "another thread's error changed this thread's message";
  // And a successful call here does not erase the message of the last failure.
  recur_layer_options o;
  ASSERT_EQ(recur_layer_options_init(&o, RECUR_LAYER_OPTIONS_VERSION), RECUR_OK);
  EXPECT_EQ(mine, recur_last_error());
  (void)theirs_final;
}

TEST(CApiLifecycle, OptionsInitDefaults) {
  recur_layer_options o;
  std::memset(&o, 0x7F, sizeof o);
  ASSERT_RECUR_OK(recur_layer_options_init(&o, RECUR_LAYER_OPTIONS_VERSION));
  EXPECT_EQ(o.version, static_cast<uint32_t>(RECUR_LAYER_OPTIONS_VERSION));
  EXPECT_EQ(o.type, 0);  // required: the caller sets it
  EXPECT_EQ(o.dialect, RECUR_DIALECT_AUTO);
  EXPECT_EQ(o.keras_version, nullptr);
  EXPECT_EQ(o.name, nullptr);
  EXPECT_EQ(o.units, 0);
  EXPECT_EQ(o.input_size, 0);
  EXPECT_EQ(o.activation, nullptr);
  EXPECT_EQ(o.recurrent_activation, nullptr);
  for (int32_t f : {o.use_bias, o.reset_after, o.implementation, o.unit_forget_bias, o.return_sequences,
                    o.return_state, o.go_backwards, o.stateful, o.time_major, o.unroll, o.zero_output_for_mask,
                    o.trainable})
    EXPECT_EQ(f, RECUR_DEFAULT);
  EXPECT_EQ(o.dropout, 0.0f);
  EXPECT_EQ(o.recurrent_dropout, 0.0f);
  EXPECT_EQ(o.batch_size, 0);
  for (const char* s : {o.kernel_initializer, o.recurrent_initializer, o.bias_initializer, o.kernel_regularizer,
                        o.recurrent_regularizer, o.bias_regularizer, o.activity_regularizer, o.kernel_constraint,
                        o.recurrent_constraint, o.bias_constraint})
    EXPECT_EQ(s, nullptr);
  EXPECT_EQ(o.seed, -1);
}

TEST(CApiLifecycle, GetInfoResolvesDefaults) {
  recur_layer_options o = options(RECUR_LAYER_GRU, 5, 3, RECUR_DIALECT_AUTO);
  rt::Layer g = rt::make(o);
  recur_layer_info i = info_of(g.get());
  EXPECT_EQ(i.type, RECUR_LAYER_GRU);
  EXPECT_EQ(i.dialect, RECUR_DIALECT_KERAS3);
  EXPECT_EQ(i.units, 5);
  EXPECT_EQ(i.input_size, 3);
  EXPECT_EQ(i.num_states, 1);
  EXPECT_EQ(i.num_weights, 3);
  EXPECT_EQ(i.return_sequences, 0);
  EXPECT_EQ(i.return_state, 0);
  EXPECT_EQ(i.go_backwards, 0);
  EXPECT_EQ(i.stateful, 0);
  EXPECT_EQ(i.time_major, 0);
  EXPECT_EQ(i.batch_size, 0);
  EXPECT_EQ(i.implementation, 2);
  EXPECT_EQ(i.reset_after, 1);

  o = options(RECUR_LAYER_LSTM, 4, 2, RECUR_DIALECT_KERAS2);
  o.use_bias = 0;
  o.return_sequences = 1;
  o.return_state = 1;
  o.go_backwards = 1;
  o.stateful = 1;
  o.batch_size = 6;
  o.time_major = 1;
  o.implementation = 1;
  rt::Layer l = rt::make(o);
  i = info_of(l.get());
  EXPECT_EQ(i.type, RECUR_LAYER_LSTM);
  EXPECT_EQ(i.dialect, RECUR_DIALECT_KERAS2);
  EXPECT_EQ(i.num_states, 2);
  EXPECT_EQ(i.num_weights, 2);
  EXPECT_EQ(i.return_sequences, 1);
  EXPECT_EQ(i.return_state, 1);
  EXPECT_EQ(i.go_backwards, 1);
  EXPECT_EQ(i.stateful, 1);
  EXPECT_EQ(i.time_major, 1);
  EXPECT_EQ(i.batch_size, 6);
  EXPECT_EQ(i.implementation, 1);
  EXPECT_EQ(i.reset_after, 0);  // not a GRU

  // recurrent_dropout forces implementation 1, as Keras does.
  o = options(RECUR_LAYER_GRU, 4, 2);
  o.recurrent_dropout = 0.3f;
  o.reset_after = 0;
  rt::Layer r = rt::make(o);
  i = info_of(r.get());
  EXPECT_EQ(i.implementation, 1);
  EXPECT_EQ(i.reset_after, 0);

  rt::Layer c = rt::make(options(RECUR_LAYER_LSTM_CELL, 4, 2));
  EXPECT_EQ(info_of(c.get()).type, RECUR_LAYER_LSTM_CELL);
}

TEST(CApiLifecycle, OutputLength) {
  recur_layer_options o = options(RECUR_LAYER_GRU, 5, 3);
  rt::Layer last = rt::make(o);
  o.return_sequences = 1;
  rt::Layer seq = rt::make(o);
  size_t n = 0;
  ASSERT_RECUR_OK(recur_layer_output_length(last.get(), 4, 7, &n));
  EXPECT_EQ(n, 4u * 5u);
  ASSERT_RECUR_OK(recur_layer_output_length(seq.get(), 4, 7, &n));
  EXPECT_EQ(n, 4u * 7u * 5u);
}

TEST(CApiLifecycle, WeightShapesNamesAndRoundTrip) {
  struct Case {
    int32_t type, dialect, reset_after;
    std::vector<std::vector<int64_t>> shapes;
  };
  const int64_t u = 4, F = 3;
  const Case cases[] = {
      {RECUR_LAYER_GRU, RECUR_DIALECT_KERAS3, 1, {{F, 3 * u}, {u, 3 * u}, {2, 3 * u}}},
      {RECUR_LAYER_GRU, RECUR_DIALECT_KERAS3, 0, {{F, 3 * u}, {u, 3 * u}, {3 * u}}},
      {RECUR_LAYER_LSTM, RECUR_DIALECT_KERAS3, RECUR_DEFAULT, {{F, 4 * u}, {u, 4 * u}, {4 * u}}},
      {RECUR_LAYER_CUDNN_GRU, RECUR_DIALECT_KERAS2, RECUR_DEFAULT, {{F, 3 * u}, {u, 3 * u}, {6 * u}}},
      {RECUR_LAYER_CUDNN_LSTM, RECUR_DIALECT_KERAS2, RECUR_DEFAULT, {{F, 4 * u}, {u, 4 * u}, {8 * u}}},
      {RECUR_LAYER_GRU_CELL, RECUR_DIALECT_KERAS2, 1, {{F, 3 * u}, {u, 3 * u}, {2, 3 * u}}},
      {RECUR_LAYER_LSTM_CELL, RECUR_DIALECT_KERAS2, RECUR_DEFAULT, {{F, 4 * u}, {u, 4 * u}, {4 * u}}},
      {RECUR_LAYER_SIMPLE_RNN, RECUR_DIALECT_KERAS3, RECUR_DEFAULT, {{F, u}, {u, u}, {u}}},
      {RECUR_LAYER_SIMPLE_RNN_CELL, RECUR_DIALECT_KERAS2, RECUR_DEFAULT, {{F, u}, {u, u}, {u}}},
  };
  const char* names[] = {"kernel", "recurrent_kernel", "bias"};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.type * 10 + c.reset_after);
    recur_layer_options o = options(c.type, static_cast<int32_t>(u), static_cast<int32_t>(F), c.dialect);
    o.reset_after = c.reset_after;
    rt::Layer l = rt::make(o);
    int32_t count = 0;
    ASSERT_RECUR_OK(recur_layer_num_weights(l.get(), &count));
    ASSERT_EQ(count, 3);
    size_t total = 0;
    std::vector<float> flat;
    for (int32_t i = 0; i < count; ++i) {
      int64_t dims[2] = {-1, -1};
      int32_t nd = 0;
      ASSERT_RECUR_OK(recur_layer_weight_shape(l.get(), i, dims, &nd));
      ASSERT_EQ(std::vector<int64_t>(dims, dims + nd), c.shapes[static_cast<size_t>(i)]);
      const char* name = nullptr;
      ASSERT_RECUR_OK(recur_layer_weight_name(l.get(), i, &name));
      EXPECT_STREQ(name, names[i]);
      size_t n = 1;
      for (int32_t d = 0; d < nd; ++d) n *= static_cast<size_t>(dims[d]);
      total += n;
      // Set a new value with the shape checked, read it back.
      const std::vector<float> v = rt::data(n, static_cast<float>(i) + 0.25f);
      ASSERT_RECUR_OK(recur_layer_set_weight(l.get(), i, v.data(), v.size(), dims, nd));
      EXPECT_EQ(rt::weight(l.get(), i), v);
      // Without dims only the length is checked.
      ASSERT_RECUR_OK(recur_layer_set_weight(l.get(), i, v.data(), v.size(), nullptr, 0));
      flat.insert(flat.end(), v.begin(), v.end());
    }
    size_t len = 0;
    ASSERT_RECUR_OK(recur_layer_weights_length(l.get(), &len));
    EXPECT_EQ(len, total);
    EXPECT_EQ(rt::all_weights(l.get()), flat) << "get_weights is the concatenation in get_weights order";
    // set_weights / get_weights are identities.
    const std::vector<float> other = rt::data(total, 9.0f, 0.3f);
    ASSERT_RECUR_OK(recur_layer_set_weights(l.get(), other.data(), other.size()));
    EXPECT_EQ(rt::all_weights(l.get()), other);
  }
}

TEST(CApiLifecycle, WeightsChangeTheOutput) {
  recur_layer_options o = options(RECUR_LAYER_GRU, 4, 3);
  rt::Layer l = rt::make(o);
  const std::vector<float> x = rt::data(2 * 5 * 3);
  std::vector<float> a(8), b(8);
  ASSERT_RECUR_OK(
      recur_layer_forward(l.get(), x.data(), x.size(), 2, 5, nullptr, 0, nullptr, 0, 0, 0, a.data(), 8, nullptr, 0));
  std::vector<float> w = rt::all_weights(l.get());
  for (float& v : w) v *= 0.5f;
  ASSERT_RECUR_OK(recur_layer_set_weights(l.get(), w.data(), w.size()));
  ASSERT_RECUR_OK(
      recur_layer_forward(l.get(), x.data(), x.size(), 2, 5, nullptr, 0, nullptr, 0, 0, 0, b.data(), 8, nullptr, 0));
  EXPECT_NE(a, b);
}

TEST(CApiLifecycle, SeededLayersAreReproducible) {
  recur_layer_options o = options(RECUR_LAYER_LSTM, 4, 3);
  o.seed = 77;
  rt::Layer a = rt::make(o);
  rt::Layer b = rt::make(o);
  EXPECT_EQ(rt::all_weights(a.get()), rt::all_weights(b.get()));
  o.seed = 78;
  rt::Layer c = rt::make(o);
  EXPECT_NE(rt::all_weights(a.get()), rt::all_weights(c.get()));
  // unit_forget_bias: the forget block of the bias is ones.
  const std::vector<float> bias = rt::weight(a.get(), 2);
  for (int j = 4; j < 8; ++j) EXPECT_EQ(bias[static_cast<size_t>(j)], 1.0f);
}

TEST(CApiLifecycle, WeightRegularizerLosses) {
  recur_layer_options o = options(RECUR_LAYER_LSTM, 4, 3);
  o.kernel_regularizer = R"({"class_name": "L2", "config": {"l2": 0.25}})";
  o.recurrent_regularizer = "l1";  // default 0.01
  o.bias_regularizer = R"({"class_name": "L1L2", "config": {"l1": 0.5, "l2": 0.125}})";
  rt::Layer l = rt::make(o);
  std::vector<float> bias = rt::data(16, 0.1f);
  ASSERT_RECUR_OK(recur_layer_set_weight(l.get(), 2, bias.data(), bias.size(), nullptr, 0));

  int32_t count = -1;
  ASSERT_RECUR_OK(recur_layer_get_losses(l.get(), nullptr, 0, &count));  // count query
  ASSERT_EQ(count, 3);
  std::vector<float> losses(3);
  ASSERT_RECUR_OK(recur_layer_get_losses(l.get(), losses.data(), losses.size(), &count));
  const char* expected_names[] = {"kernel", "recurrent_kernel", "bias"};
  for (int32_t i = 0; i < count; ++i) {
    const char* name = nullptr;
    ASSERT_RECUR_OK(recur_layer_loss_name(l.get(), i, &name));
    EXPECT_STREQ(name, expected_names[i]);
  }
  const std::vector<float> k = rt::weight(l.get(), 0), r = rt::weight(l.get(), 1);
  EXPECT_NEAR(losses[0], 0.25 * sum_sq(k), 1e-5 * (0.25 * sum_sq(k)));
  EXPECT_NEAR(losses[1], 0.01 * sum_abs(r), 1e-5 * (0.01 * sum_abs(r)));
  const double b = 0.5 * sum_abs(bias) + 0.125 * sum_sq(bias);
  EXPECT_NEAR(losses[2], b, 1e-5 * b);

  // A bigger buffer is fine; count says how many were written.
  std::vector<float> big(10, -1.0f);
  ASSERT_RECUR_OK(recur_layer_get_losses(l.get(), big.data(), big.size(), &count));
  EXPECT_EQ(count, 3);
  EXPECT_EQ(big[3], -1.0f);
}

TEST(CApiLifecycle, ActivityRegularizerLosses) {
  recur_layer_options o = options(RECUR_LAYER_LSTM, 4, 3);
  o.activity_regularizer = R"({"class_name": "L2", "config": {"l2": 0.5}})";
  o.kernel_regularizer = "l2";
  o.return_state = 1;
  rt::Layer l = rt::make(o);
  int32_t count = 0;
  ASSERT_RECUR_OK(recur_layer_get_losses(l.get(), nullptr, 0, &count));
  EXPECT_EQ(count, 1) << "no call yet: only the kernel penalty";

  const int32_t B = 2, T = 5;
  const std::vector<float> x = rt::data(static_cast<size_t>(B * T * 3));
  std::vector<float> out(static_cast<size_t>(B * 4)), fin(static_cast<size_t>(2 * B * 4));
  ASSERT_RECUR_OK(recur_layer_forward(l.get(), x.data(), x.size(), B, T, nullptr, 0, nullptr, 0, 0, 0, out.data(),
                                      out.size(), fin.data(), fin.size()));
  std::vector<float> losses(8);
  ASSERT_RECUR_OK(recur_layer_get_losses(l.get(), losses.data(), losses.size(), &count));
  ASSERT_EQ(count, 4);  // output, state_h, state_c, kernel
  const char* expected[] = {"activity:output", "activity:state_h", "activity:state_c", "kernel"};
  for (int32_t i = 0; i < count; ++i) {
    const char* name = nullptr;
    ASSERT_RECUR_OK(recur_layer_loss_name(l.get(), i, &name));
    EXPECT_STREQ(name, expected[i]);
  }
  // Keras 3 (latest) divides activity penalties by the batch size.
  const double out_pen = 0.5 * sum_sq(out) / B;
  EXPECT_NEAR(losses[0], out_pen, 1e-5 * out_pen + 1e-7);
  const std::vector<float> c(fin.begin() + B * 4, fin.end());
  const double c_pen = 0.5 * sum_sq(c) / B;
  EXPECT_NEAR(losses[2], c_pen, 1e-5 * c_pen + 1e-7);
}

// Keras 3's SimpleRNN takes activity_regularizer and drops it; Keras 2's applies it, and so do
// both dialects' SimpleRNNCell.
TEST(CApiLifecycle, SimpleRnnActivityRegularizerFollowsKeras) {
  struct Case {
    int32_t type, dialect, activity_losses;
  } cases[] = {{RECUR_LAYER_SIMPLE_RNN, RECUR_DIALECT_KERAS3, 0},
               {RECUR_LAYER_SIMPLE_RNN, RECUR_DIALECT_KERAS2, 2},  // output, state_h
               {RECUR_LAYER_SIMPLE_RNN_CELL, RECUR_DIALECT_KERAS3, 2},
               {RECUR_LAYER_SIMPLE_RNN_CELL, RECUR_DIALECT_KERAS2, 2}};
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.type) + " in Keras " + std::to_string(c.dialect));
    recur_layer_options o = options(c.type, 4, 3, c.dialect);
    o.activity_regularizer = "l2";
    o.kernel_regularizer = "l1";
    if (c.type == RECUR_LAYER_SIMPLE_RNN) o.return_state = 1;
    rt::Layer l = rt::make(o);
    const int32_t B = 2, T = 3;
    std::vector<float> out(static_cast<size_t>(B * 4)), fin(out.size());
    if (c.type == RECUR_LAYER_SIMPLE_RNN) {
      const std::vector<float> x = rt::data(static_cast<size_t>(B * T * 3));
      ASSERT_RECUR_OK(recur_layer_forward(l.get(), x.data(), x.size(), B, T, nullptr, 0, nullptr, 0, 0, 0, out.data(),
                                          out.size(), fin.data(), fin.size()));
    } else {
      const std::vector<float> x = rt::data(static_cast<size_t>(B * 3)), h(static_cast<size_t>(B * 4), 0.1f);
      ASSERT_RECUR_OK(recur_cell_call(l.get(), x.data(), x.size(), B, h.data(), h.size(), 1, 0, out.data(), out.size(),
                                      fin.data(), fin.size()));
    }
    int32_t count = -1;
    ASSERT_RECUR_OK(recur_layer_get_losses(l.get(), nullptr, 0, &count));
    EXPECT_EQ(count, c.activity_losses + 1);  // + the kernel penalty
    const char* last = nullptr;
    ASSERT_RECUR_OK(recur_layer_loss_name(l.get(), count - 1, &last));
    EXPECT_STREQ(last, "kernel");
  }
}

TEST(CApiLifecycle, Keras3FrozenLayerHasNoWeightPenalties) {
  recur_layer_options o = options(RECUR_LAYER_GRU, 4, 3);
  o.kernel_regularizer = "l2";
  o.trainable = 0;
  rt::Layer k3 = rt::make(o);
  int32_t count = -1;
  ASSERT_RECUR_OK(recur_layer_get_losses(k3.get(), nullptr, 0, &count));
  EXPECT_EQ(count, 0);
  o.dialect = RECUR_DIALECT_KERAS2;
  rt::Layer k2 = rt::make(o);
  ASSERT_RECUR_OK(recur_layer_get_losses(k2.get(), nullptr, 0, &count));
  EXPECT_EQ(count, 1);
}

TEST(CApiLifecycle, ApplyConstraintsNonNeg) {
  recur_layer_options o = options(RECUR_LAYER_GRU, 4, 3);
  o.kernel_constraint = "non_neg";
  o.recurrent_constraint = R"({"class_name": "NonNeg", "config": {}})";
  o.bias_constraint = "non_neg";
  rt::Layer l = rt::make(o);
  std::vector<float> w = rt::data(rt::all_weights(l.get()).size());  // plenty of negatives
  ASSERT_RECUR_OK(recur_layer_set_weights(l.get(), w.data(), w.size()));
  ASSERT_RECUR_OK(recur_layer_apply_constraints(l.get()));
  const std::vector<float> after = rt::all_weights(l.get());
  ASSERT_EQ(after.size(), w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    EXPECT_GE(after[i], 0.0f) << i;
    if (w[i] >= 0.0f) {
      EXPECT_EQ(after[i], w[i]) << i;
    }
  }
}

TEST(CApiLifecycle, ApplyConstraintsMaxNormAndNoConstraints) {
  recur_layer_options o = options(RECUR_LAYER_LSTM, 4, 3);
  o.kernel_constraint = R"({"class_name": "MaxNorm", "config": {"max_value": 0.1, "axis": 0}})";
  rt::Layer l = rt::make(o);
  const std::vector<float> before = rt::all_weights(l.get());
  ASSERT_RECUR_OK(recur_layer_apply_constraints(l.get()));
  const std::vector<float> k = rt::weight(l.get(), 0);  // (3, 16): every column's norm <= 0.1
  for (int col = 0; col < 16; ++col) {
    double s = 0.0;
    for (int row = 0; row < 3; ++row) s += static_cast<double>(k[static_cast<size_t>(row * 16 + col)]) * k[static_cast<size_t>(row * 16 + col)];
    EXPECT_LE(std::sqrt(s), 0.1 + 1e-6);
  }
  // The recurrent kernel and bias have no constraint and are unchanged.
  EXPECT_EQ(rt::weight(l.get(), 1), std::vector<float>(before.begin() + 48, before.begin() + 48 + 64));

  rt::Layer plain = rt::make(options(RECUR_LAYER_GRU, 4, 3));
  const std::vector<float> w = rt::all_weights(plain.get());
  ASSERT_RECUR_OK(recur_layer_apply_constraints(plain.get()));
  EXPECT_EQ(rt::all_weights(plain.get()), w);
}

TEST(CApiLifecycle, StateCreateGetSetResetShape) {
  rt::Layer l = rt::make(options(RECUR_LAYER_LSTM, 4, 3));
  rt::State s = rt::make_state(l.get(), 3);
  int32_t n = 0, b = 0, u = 0;
  ASSERT_RECUR_OK(recur_state_shape(s.get(), &n, &b, &u));
  EXPECT_EQ(n, 2);
  EXPECT_EQ(b, 3);
  EXPECT_EQ(u, 4);
  ASSERT_RECUR_OK(recur_state_shape(s.get(), nullptr, nullptr, nullptr));  // every out may be NULL
  ASSERT_RECUR_OK(recur_state_shape(s.get(), nullptr, &b, nullptr));
  std::vector<float> v(24, 5.0f);
  ASSERT_RECUR_OK(recur_state_get(s.get(), v.data(), v.size()));
  for (float x : v) EXPECT_EQ(x, 0.0f) << "a new state is zero";
  const std::vector<float> vals = rt::data(24);
  ASSERT_RECUR_OK(recur_state_set(s.get(), vals.data(), vals.size(), 2));
  ASSERT_RECUR_OK(recur_state_get(s.get(), v.data(), v.size()));
  EXPECT_EQ(v, vals);
  ASSERT_RECUR_OK(recur_state_reset(s.get()));
  ASSERT_RECUR_OK(recur_state_get(s.get(), v.data(), v.size()));
  for (float x : v) EXPECT_EQ(x, 0.0f);

  rt::Layer g = rt::make(options(RECUR_LAYER_GRU, 6, 3));
  rt::State gs = rt::make_state(g.get(), 1);
  ASSERT_RECUR_OK(recur_state_shape(gs.get(), &n, &b, &u));
  EXPECT_EQ(n, 1);
  EXPECT_EQ(b, 1);
  EXPECT_EQ(u, 6);
}

TEST(CApiLifecycle, ForwardStateEqualsForward) {
  for (int32_t type : {RECUR_LAYER_GRU, RECUR_LAYER_LSTM}) {
    SCOPED_TRACE(type);
    const int32_t B = 3, T = 7, F = 5, U = 6;
    recur_layer_options o = options(type, U, F);
    o.return_sequences = 1;
    rt::Layer l = rt::make(o);
    const int32_t ns = type == RECUR_LAYER_GRU ? 1 : 2;
    const std::vector<float> x = rt::data(static_cast<size_t>(B * T * F), 0.3f);
    const std::vector<float> h0 = rt::data(static_cast<size_t>(ns * B * U), 2.0f, 0.5f);
    std::vector<uint8_t> mask(static_cast<size_t>(B * T), 1);
    mask[1 * T + 2] = 0;  // a hole
    mask[2 * T + 5] = mask[2 * T + 6] = 0;  // trailing padding

    std::vector<float> out(static_cast<size_t>(B * T * U)), fin(static_cast<size_t>(ns * B * U));
    ASSERT_RECUR_OK(recur_layer_forward(l.get(), x.data(), x.size(), B, T, mask.data(), mask.size(), h0.data(),
                                        h0.size(), ns, 0, out.data(), out.size(), fin.data(), fin.size()));

    rt::State s = rt::make_state(l.get(), B);
    ASSERT_RECUR_OK(recur_state_set(s.get(), h0.data(), h0.size(), ns));
    std::vector<float> out2(out.size()), fin2(fin.size());
    ASSERT_RECUR_OK(recur_layer_forward_state(l.get(), s.get(), x.data(), x.size(), T, mask.data(), mask.size(),
                                              out2.data(), out2.size()));
    ASSERT_RECUR_OK(recur_state_get(s.get(), fin2.data(), fin2.size()));
    EXPECT_EQ(out, out2);
    EXPECT_EQ(fin, fin2);

    // Streaming one step at a time gives the same states, and the same outputs at valid steps.
    // (A masked step repeats the previous output *of the same call*, as Keras does, so a
    // one-step call whose only step is masked outputs zeros, not the carried h.)
    ASSERT_RECUR_OK(recur_state_set(s.get(), h0.data(), h0.size(), ns));
    std::vector<float> xt(static_cast<size_t>(B * F)), ot(static_cast<size_t>(B * U));
    std::vector<uint8_t> mt(static_cast<size_t>(B));
    for (int32_t t = 0; t < T; ++t) {
      for (int32_t b = 0; b < B; ++b) {
        std::memcpy(&xt[static_cast<size_t>(b * F)], &x[static_cast<size_t>((b * T + t) * F)], F * sizeof(float));
        mt[static_cast<size_t>(b)] = mask[static_cast<size_t>(b * T + t)];
      }
      ASSERT_RECUR_OK(recur_layer_forward_state(l.get(), s.get(), xt.data(), xt.size(), 1, mt.data(), mt.size(),
                                                ot.data(), ot.size()));
      for (int32_t b = 0; b < B; ++b) {
        if (!mt[static_cast<size_t>(b)]) continue;
        for (int32_t j = 0; j < U; ++j)
          EXPECT_NEAR(ot[static_cast<size_t>(b * U + j)], out[static_cast<size_t>((b * T + t) * U + j)], 1e-6)
              << "t=" << t << " b=" << b << " j=" << j;
      }
    }
    ASSERT_RECUR_OK(recur_state_get(s.get(), fin2.data(), fin2.size()));
    for (size_t i = 0; i < fin.size(); ++i) EXPECT_NEAR(fin2[i], fin[i], 1e-6) << i;
  }
}

TEST(CApiLifecycle, MaskedStepCarriesTheState) {
  const int32_t B = 1, T = 3, F = 2, U = 3;
  recur_layer_options o = options(RECUR_LAYER_GRU, U, F);
  o.return_sequences = 1;
  rt::Layer l = rt::make(o);
  const std::vector<float> x = rt::data(static_cast<size_t>(B * T * F));
  const uint8_t mask[3] = {1, 0, 1};
  std::vector<float> out(static_cast<size_t>(B * T * U));
  ASSERT_RECUR_OK(recur_layer_forward(l.get(), x.data(), x.size(), B, T, mask, 3, nullptr, 0, 0, 0, out.data(),
                                      out.size(), nullptr, 0));
  for (int j = 0; j < U; ++j) EXPECT_EQ(out[static_cast<size_t>(U + j)], out[static_cast<size_t>(j)]);
}

TEST(CApiLifecycle, StatefulLayerKeepsItsStates) {
  const int32_t B = 2, T = 4, F = 3, U = 5;
  recur_layer_options o = options(RECUR_LAYER_LSTM, U, F);
  o.stateful = 1;
  o.batch_size = B;
  rt::Layer sf = rt::make(o);
  o.stateful = RECUR_DEFAULT;
  o.batch_size = 0;
  rt::Layer plain = rt::make(o);
  const std::vector<float> x = rt::data(static_cast<size_t>(B * 2 * T * F));
  // Two halves through the stateful layer equal one call over the whole sequence.
  std::vector<float> x1, x2;
  for (int32_t b = 0; b < B; ++b) {
    const auto row = x.begin() + b * 2 * T * F;
    x1.insert(x1.end(), row, row + T * F);
    x2.insert(x2.end(), row + T * F, row + 2 * T * F);
  }
  std::vector<float> out(static_cast<size_t>(B * U)), whole(out.size()), fin(static_cast<size_t>(2 * B * U));
  ASSERT_RECUR_OK(recur_layer_forward(sf.get(), x1.data(), x1.size(), B, T, nullptr, 0, nullptr, 0, 0, 0, out.data(),
                                      out.size(), nullptr, 0));
  ASSERT_RECUR_OK(recur_layer_forward(sf.get(), x2.data(), x2.size(), B, T, nullptr, 0, nullptr, 0, 0, 0, out.data(),
                                      out.size(), nullptr, 0));
  ASSERT_RECUR_OK(recur_layer_forward(plain.get(), x.data(), x.size(), B, 2 * T, nullptr, 0, nullptr, 0, 0, 0,
                                      whole.data(), whole.size(), fin.data(), fin.size()));
  for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], whole[i], 1e-6);
  std::vector<float> st(fin.size());
  ASSERT_RECUR_OK(recur_layer_get_states(sf.get(), st.data(), st.size()));
  for (size_t i = 0; i < st.size(); ++i) EXPECT_NEAR(st[i], fin[i], 1e-6);
  ASSERT_RECUR_OK(recur_layer_reset_states(sf.get()));
  ASSERT_RECUR_OK(recur_layer_get_states(sf.get(), st.data(), st.size()));
  for (float v : st) EXPECT_EQ(v, 0.0f);
  ASSERT_RECUR_OK(recur_layer_set_states(sf.get(), fin.data(), fin.size(), 2));
  ASSERT_RECUR_OK(recur_layer_get_states(sf.get(), st.data(), st.size()));
  EXPECT_EQ(st, fin);
}

TEST(CApiLifecycle, CellStepsEqualTheSequenceLayer) {
  for (int32_t kinds : {0, 1, 2}) {
    const int32_t seq_type = kinds == 0 ? RECUR_LAYER_GRU : kinds == 1 ? RECUR_LAYER_LSTM : RECUR_LAYER_SIMPLE_RNN;
    const int32_t cell_type =
        kinds == 0 ? RECUR_LAYER_GRU_CELL : kinds == 1 ? RECUR_LAYER_LSTM_CELL : RECUR_LAYER_SIMPLE_RNN_CELL;
    const int32_t ns = kinds == 1 ? 2 : 1;
    SCOPED_TRACE(seq_type);
    const int32_t B = 2, T = 4, F = 3, U = 4;
    recur_layer_options o = options(seq_type, U, F);
    o.return_sequences = 1;
    rt::Layer seq = rt::make(o);
    rt::Layer c = rt::make(options(cell_type, U, F));
    const std::vector<float> w = rt::all_weights(seq.get());
    ASSERT_RECUR_OK(recur_layer_set_weights(c.get(), w.data(), w.size()));
    const std::vector<float> x = rt::data(static_cast<size_t>(B * T * F));
    std::vector<float> out(static_cast<size_t>(B * T * U));
    ASSERT_RECUR_OK(recur_layer_forward(seq.get(), x.data(), x.size(), B, T, nullptr, 0, nullptr, 0, 0, 0, out.data(),
                                        out.size(), nullptr, 0));
    std::vector<float> states(static_cast<size_t>(ns * B * U), 0.0f), next(states.size());
    std::vector<float> xt(static_cast<size_t>(B * F)), ot(static_cast<size_t>(B * U));
    for (int32_t t = 0; t < T; ++t) {
      for (int32_t b = 0; b < B; ++b)
        std::memcpy(&xt[static_cast<size_t>(b * F)], &x[static_cast<size_t>((b * T + t) * F)], F * sizeof(float));
      ASSERT_RECUR_OK(recur_cell_call(c.get(), xt.data(), xt.size(), B, states.data(), states.size(), ns, 0, ot.data(),
                                      ot.size(), next.data(), next.size()));
      for (int32_t b = 0; b < B; ++b)
        for (int32_t j = 0; j < U; ++j)
          EXPECT_NEAR(ot[static_cast<size_t>(b * U + j)], out[static_cast<size_t>((b * T + t) * U + j)], 1e-6);
      for (size_t i = 0; i < ot.size(); ++i) EXPECT_EQ(ot[i], next[i]) << "output is the new h";
      states = next;
    }
    // new_states may be NULL.
    EXPECT_RECUR_OK(recur_cell_call(c.get(), xt.data(), xt.size(), B, states.data(), states.size(), ns, 0, ot.data(),
                                    ot.size(), nullptr, 0));
  }
}

TEST(CApiLifecycle, CellDropoutMasks) {
  recur_layer_options o = options(RECUR_LAYER_GRU_CELL, 4, 3);
  o.dropout = 0.5f;
  rt::Layer c = rt::make(o);
  int32_t count = -1;
  ASSERT_RECUR_OK(recur_cell_get_dropout_mask(c.get(), 2, 1, nullptr, 0, &count));
  ASSERT_EQ(count, 1);  // Keras 3, implementation 2: one mask
  std::vector<float> m(static_cast<size_t>(count * 2 * 3)), again(m.size());
  ASSERT_RECUR_OK(recur_cell_get_dropout_mask(c.get(), 2, 1, m.data(), m.size(), &count));
  for (float v : m) EXPECT_TRUE(v == 0.0f || v == 2.0f) << v;
  ASSERT_RECUR_OK(recur_cell_get_dropout_mask(c.get(), 2, 1, again.data(), again.size(), &count));
  EXPECT_EQ(m, again) << "the mask is cached until reset";
  // No recurrent dropout: no masks.
  ASSERT_RECUR_OK(recur_cell_get_recurrent_dropout_mask(c.get(), 2, 1, nullptr, 0, &count));
  EXPECT_EQ(count, 0);
  ASSERT_RECUR_OK(recur_cell_reset_dropout_mask(c.get()));
  ASSERT_RECUR_OK(recur_cell_reset_recurrent_dropout_mask(c.get()));

  // Training with dropout is reproducible for a seeded layer, inference ignores dropout.
  const std::vector<float> x = rt::data(6), h(8, 0.0f);
  std::vector<float> inf(8), plain(8);
  ASSERT_RECUR_OK(recur_cell_call(c.get(), x.data(), 6, 2, h.data(), 8, 1, 0, inf.data(), 8, nullptr, 0));
  rt::Layer nod = rt::make(options(RECUR_LAYER_GRU_CELL, 4, 3));
  const std::vector<float> w = rt::all_weights(c.get());
  ASSERT_RECUR_OK(recur_layer_set_weights(nod.get(), w.data(), w.size()));
  ASSERT_RECUR_OK(recur_cell_call(nod.get(), x.data(), 6, 2, h.data(), 8, 1, 0, plain.data(), 8, nullptr, 0));
  EXPECT_EQ(inf, plain);
}

TEST(CApiLifecycle, JsonLayerRuns) {
  const char* json =
      R"({"class_name": "LSTM", "config": {"name": "lstm", "trainable": true, "dtype": "float32", )"
      R"("batch_input_shape": [null, null, 3], "return_sequences": false, "return_state": false, )"
      R"("go_backwards": false, "stateful": false, "unroll": false, "time_major": false, "units": 4, )"
      R"("activation": "tanh", "recurrent_activation": "sigmoid", "use_bias": true, )"
      R"("kernel_initializer": {"class_name": "GlorotUniform", "config": {"seed": 5}}, )"
      R"("recurrent_initializer": {"class_name": "Orthogonal", "config": {"gain": 1.0, "seed": 6}}, )"
      R"("bias_initializer": {"class_name": "Zeros", "config": {}}, "unit_forget_bias": true, )"
      R"("kernel_regularizer": null, "recurrent_regularizer": null, "bias_regularizer": null, )"
      R"("activity_regularizer": null, "kernel_constraint": null, "recurrent_constraint": null, )"
      R"("bias_constraint": null, "dropout": 0.0, "recurrent_dropout": 0.0, "implementation": 2}})";
  rt::Layer l = rt::make_json(json);
  const recur_layer_info i = info_of(l.get());
  EXPECT_EQ(i.type, RECUR_LAYER_LSTM);
  EXPECT_EQ(i.dialect, RECUR_DIALECT_KERAS2);
  EXPECT_EQ(i.input_size, 3);
  EXPECT_EQ(i.units, 4);
  const std::vector<float> x = rt::data(2 * 5 * 3);
  std::vector<float> out(8);
  ASSERT_RECUR_OK(
      recur_layer_forward(l.get(), x.data(), x.size(), 2, 5, nullptr, 0, nullptr, 0, 0, 0, out.data(), 8, nullptr, 0));
  for (float v : out) {
    EXPECT_TRUE(std::isfinite(v));
    EXPECT_LT(std::fabs(v), 1.0f);
  }
  // Seeded initializers: a second load gives the same weights.
  rt::Layer again = rt::make_json(json);
  EXPECT_EQ(rt::all_weights(l.get()), rt::all_weights(again.get()));
}

TEST(CApiLifecycle, ManyHandlesCreatedAndDestroyed) {
  // Handles are independent; destroying them in any order is fine and leaks nothing.
  std::vector<recur_layer*> layers;
  std::vector<recur_state*> states;
  for (int i = 0; i < 20; ++i) {
    recur_layer_options o = options(i % 2 ? RECUR_LAYER_GRU : RECUR_LAYER_LSTM, 2 + i % 3, 1 + i % 4);
    recur_layer* l = nullptr;
    ASSERT_RECUR_OK(recur_layer_create(&l, &o));
    layers.push_back(l);
    recur_state* s = nullptr;
    ASSERT_RECUR_OK(recur_state_create(&s, l, 1 + i % 5));
    states.push_back(s);
  }
  for (size_t i = 0; i < layers.size(); i += 2) recur_layer_destroy(layers[i]);
  for (recur_state* s : states) recur_state_destroy(s);
  for (size_t i = 1; i < layers.size(); i += 2) recur_layer_destroy(layers[i]);
}

// Every handle kind is counted from create to destroy, and NULL skips a count. (Other tests in
// this process may hold handles, so counts are compared with those read just before.)
TEST(CApiLifecycle, LiveHandlesCountEachKind) {
  RECUR_SKIP_WITHOUT_FILES();
  uint64_t l0 = 0, s0 = 0, m0 = 0, ms0 = 0;
  ASSERT_RECUR_OK(recur_live_handles(&l0, &s0, &m0, &ms0));
  recur_layer_options o = options(RECUR_LAYER_GRU, 3, 2);
  recur_layer* layer = nullptr;
  ASSERT_RECUR_OK(recur_layer_create(&layer, &o));
  recur_state* state = nullptr;
  ASSERT_RECUR_OK(recur_state_create(&state, layer, 2));
  recur_model* model = nullptr;
  ASSERT_RECUR_OK(recur_model_open(&model, RECUR_TEST_MODELS_DIR "/keras3/tokens.keras"));
  recur_model_state* stream = nullptr;
  ASSERT_RECUR_OK(recur_model_state_create(&stream, model, 1));
  uint64_t l = 0, s = 0, m = 0, ms = 0;
  ASSERT_RECUR_OK(recur_live_handles(&l, &s, &m, &ms));
  EXPECT_EQ(l, l0 + 1);
  EXPECT_EQ(s, s0 + 1);
  EXPECT_EQ(m, m0 + 1);
  EXPECT_EQ(ms, ms0 + 1);
  // A failed create adds nothing.
  recur_layer* bad = nullptr;
  o.units = 0;
  EXPECT_EQ(recur_layer_create(&bad, &o), RECUR_ERR_INVALID_ARGUMENT);
  ASSERT_RECUR_OK(recur_live_handles(&l, nullptr, nullptr, nullptr));
  EXPECT_EQ(l, l0 + 1);
  recur_model_state_destroy(stream);
  recur_model_destroy(model);
  recur_state_destroy(state);
  recur_layer_destroy(layer);
  ASSERT_RECUR_OK(recur_live_handles(&l, &s, &m, &ms));
  EXPECT_EQ(l, l0);
  EXPECT_EQ(s, s0);
  EXPECT_EQ(m, m0);
  EXPECT_EQ(ms, ms0);
  ASSERT_RECUR_OK(recur_live_handles(nullptr, nullptr, nullptr, nullptr));
}
