// SPDX-License-Identifier: Apache-2.0
// Error paths of every C ABI function that takes a layer or a state: NULL and destroyed handles,
// NULL pointers, wrong lengths and counts, calls the object cannot do. After each failure the
// objects and the caller's buffers must be unchanged.
#include <cmath>
#include <functional>
#include <vector>

#include "c_api_test_util.hpp"

namespace {

using rt::options;

constexpr float kSentinel = -12345.0f;

// A layer call with valid arguments; each test breaks one of them.
struct Forward {
  recur_layer* layer;
  int32_t batch, timesteps;
  std::vector<float> x, init, out, fin;
  std::vector<uint8_t> m;
  const float* input;
  size_t input_len;
  const uint8_t* mask = nullptr;
  size_t mask_len = 0;
  const float* initial_state;
  size_t initial_state_len;
  int32_t num_initial_states;
  int32_t training = 0;
  float* output;
  size_t output_len;
  float* final_state;
  size_t final_state_len;

  Forward(recur_layer* l, int32_t B, int32_t T) : layer(l), batch(B), timesteps(T) {
    recur_layer_info info;
    info.version = RECUR_LAYER_INFO_VERSION;
    EXPECT_EQ(recur_layer_get_info(l, &info), RECUR_OK) << recur_last_error();
    size_t n = 0;
    EXPECT_EQ(recur_layer_output_length(l, B, T, &n), RECUR_OK) << recur_last_error();
    const size_t su = static_cast<size_t>(B) * static_cast<size_t>(info.units);
    x = rt::data(static_cast<size_t>(B * T * info.input_size));
    init = rt::data(su * static_cast<size_t>(info.num_states), 1.0f, 0.3f);
    out.assign(n, kSentinel);
    fin.assign(su * static_cast<size_t>(info.num_states), kSentinel);
    m.assign(static_cast<size_t>(B * T), 1);
    input = x.data();
    input_len = x.size();
    initial_state = init.data();
    initial_state_len = init.size();
    num_initial_states = info.num_states;
    output = out.data();
    output_len = out.size();
    final_state = fin.data();
    final_state_len = fin.size();
  }
  void use_mask() {
    mask = m.data();
    mask_len = m.size();
  }
  recur_status run() const {
    return recur_layer_forward(layer, input, input_len, batch, timesteps, mask, mask_len, initial_state,
                               initial_state_len, num_initial_states, training, output, output_len, final_state,
                               final_state_len);
  }
  bool untouched() const {
    for (float v : out)
      if (v != kSentinel) return false;
    for (float v : fin)
      if (v != kSentinel) return false;
    return true;
  }
};

rt::Layer gru(int32_t units = 3, int32_t input = 2, int32_t dialect = RECUR_DIALECT_KERAS3) {
  recur_layer_options o = options(RECUR_LAYER_GRU, units, input, dialect);
  o.return_sequences = 1;
  return rt::make(o);
}

rt::Layer lstm(int32_t units = 3, int32_t input = 2) { return rt::make(options(RECUR_LAYER_LSTM, units, input)); }

rt::Layer cell(int32_t type = RECUR_LAYER_GRU_CELL, float dropout = 0.0f, float recurrent_dropout = 0.0f) {
  recur_layer_options o = options(type, 3, 2);
  o.dropout = dropout;
  o.recurrent_dropout = recurrent_dropout;
  return rt::make(o);
}

// Every function that takes a layer first, called with otherwise valid arguments.
struct LayerFn {
  const char* name;
  std::function<recur_status(recur_layer*)> call;
};

std::vector<LayerFn> layer_functions() {
  static float buf[4096];
  static uint8_t mask[64];
  static int64_t dims[2];
  static int32_t i32;
  static size_t sz;
  static const char* str;
  static recur_state* st;
  static recur_layer_info info;
  info.version = RECUR_LAYER_INFO_VERSION;
  return {
      {"recur_layer_get_info", [](recur_layer* l) { return recur_layer_get_info(l, &info); }},
      {"recur_layer_output_length", [](recur_layer* l) { return recur_layer_output_length(l, 1, 1, &sz); }},
      {"recur_layer_forward",
       [](recur_layer* l) {
         return recur_layer_forward(l, buf, 6, 1, 3, mask, 3, nullptr, 0, 0, 0, buf + 100, 3, nullptr, 0);
       }},
      {"recur_layer_reset_states", [](recur_layer* l) { return recur_layer_reset_states(l); }},
      {"recur_layer_set_states", [](recur_layer* l) { return recur_layer_set_states(l, buf, 3, 1); }},
      {"recur_layer_get_states", [](recur_layer* l) { return recur_layer_get_states(l, buf, 3); }},
      {"recur_layer_get_initial_state", [](recur_layer* l) { return recur_layer_get_initial_state(l, 1, buf, 3); }},
      {"recur_state_create", [](recur_layer* l) { return recur_state_create(&st, l, 1); }},
      {"recur_layer_forward_state",
       [](recur_layer* l) {
         return recur_layer_forward_state(l, reinterpret_cast<recur_state*>(buf), buf, 6, 3, nullptr, 0, buf + 100,
                                          3);
       }},
      {"recur_cell_call",
       [](recur_layer* l) { return recur_cell_call(l, buf, 2, 1, buf, 3, 1, 0, buf + 100, 3, nullptr, 0); }},
      {"recur_cell_get_dropout_mask",
       [](recur_layer* l) { return recur_cell_get_dropout_mask(l, 1, 1, nullptr, 0, &i32); }},
      {"recur_cell_get_recurrent_dropout_mask",
       [](recur_layer* l) { return recur_cell_get_recurrent_dropout_mask(l, 1, 1, nullptr, 0, &i32); }},
      {"recur_cell_reset_dropout_mask", [](recur_layer* l) { return recur_cell_reset_dropout_mask(l); }},
      {"recur_cell_reset_recurrent_dropout_mask",
       [](recur_layer* l) { return recur_cell_reset_recurrent_dropout_mask(l); }},
      {"recur_layer_num_weights", [](recur_layer* l) { return recur_layer_num_weights(l, &i32); }},
      {"recur_layer_weight_shape", [](recur_layer* l) { return recur_layer_weight_shape(l, 0, dims, &i32); }},
      {"recur_layer_weight_name", [](recur_layer* l) { return recur_layer_weight_name(l, 0, &str); }},
      {"recur_layer_get_weight", [](recur_layer* l) { return recur_layer_get_weight(l, 0, buf, 18); }},
      {"recur_layer_set_weight", [](recur_layer* l) { return recur_layer_set_weight(l, 0, buf, 18, nullptr, 0); }},
      {"recur_layer_weights_length", [](recur_layer* l) { return recur_layer_weights_length(l, &sz); }},
      {"recur_layer_get_weights", [](recur_layer* l) { return recur_layer_get_weights(l, buf, 63); }},
      {"recur_layer_set_weights", [](recur_layer* l) { return recur_layer_set_weights(l, buf, 63); }},
      {"recur_layer_get_losses", [](recur_layer* l) { return recur_layer_get_losses(l, buf, 8, &i32); }},
      {"recur_layer_loss_name", [](recur_layer* l) { return recur_layer_loss_name(l, 0, &str); }},
      {"recur_layer_apply_constraints", [](recur_layer* l) { return recur_layer_apply_constraints(l); }},
  };
}

struct StateFn {
  const char* name;
  std::function<recur_status(recur_state*)> call;
};

std::vector<StateFn> state_functions(const recur_layer* layer) {
  static float buf[256];
  static int32_t a, b, c;
  return {
      {"recur_state_shape", [](recur_state* s) { return recur_state_shape(s, &a, &b, &c); }},
      {"recur_state_get", [](recur_state* s) { return recur_state_get(s, buf, 3); }},
      {"recur_state_set", [](recur_state* s) { return recur_state_set(s, buf, 3, 1); }},
      {"recur_state_reset", [](recur_state* s) { return recur_state_reset(s); }},
      {"recur_layer_forward_state",
       [layer](recur_state* s) { return recur_layer_forward_state(layer, s, buf, 2, 1, nullptr, 0, buf + 100, 3); }},
  };
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Handles
// ------------------------------------------------------------------------------------------

TEST(CApiCallErrors, NullLayerHandleEverywhere) {
  for (const LayerFn& f : layer_functions()) {
    SCOPED_TRACE(f.name);
    EXPECT_RECUR_ERR(f.call(nullptr), RECUR_ERR_INVALID_ARGUMENT, "layer is NULL");
    EXPECT_RECUR_ERR(f.call(nullptr), RECUR_ERR_INVALID_ARGUMENT, f.name);
  }
}

TEST(CApiCallErrors, DestroyedLayerHandleEverywhere) {
  recur_layer_options o = options(RECUR_LAYER_GRU, 3, 2);
  recur_layer* l = nullptr;
  ASSERT_RECUR_OK(recur_layer_create(&l, &o));
  recur_layer_destroy(l);
  // The registry knows `l` is gone; nothing is created in between, so the address is not reused.
  for (const LayerFn& f : layer_functions()) {
    SCOPED_TRACE(f.name);
    EXPECT_RECUR_ERR(f.call(l), RECUR_ERR_STATE, "not a live handle");
    EXPECT_RECUR_ERR(f.call(l), RECUR_ERR_STATE, f.name);
  }
  recur_layer_destroy(l);  // a second destroy is a no-op
}

TEST(CApiCallErrors, NullAndDestroyedStateHandleEverywhere) {
  rt::Layer layer = gru();
  recur_state* s = nullptr;
  ASSERT_RECUR_OK(recur_state_create(&s, layer.get(), 1));
  recur_state_destroy(s);
  for (const StateFn& f : state_functions(layer.get())) {
    SCOPED_TRACE(f.name);
    EXPECT_RECUR_ERR(f.call(nullptr), RECUR_ERR_INVALID_ARGUMENT, "state is NULL");
    EXPECT_RECUR_ERR(f.call(s), RECUR_ERR_STATE, "not a live handle");
    EXPECT_RECUR_ERR(f.call(s), RECUR_ERR_STATE, f.name);
  }
  recur_state_destroy(s);  // a second destroy is a no-op
}

TEST(CApiCallErrors, DestroyNullIsNoOp) {
  const std::string before = rt::prime_error();
  recur_layer_destroy(nullptr);
  recur_state_destroy(nullptr);
  EXPECT_EQ(before, recur_last_error());  // no error recorded either
}

TEST(CApiCallErrors, StateOutlivesItsLayer) {
  recur_layer_options o = options(RECUR_LAYER_LSTM, 3, 2);
  recur_layer* l = nullptr;
  ASSERT_RECUR_OK(recur_layer_create(&l, &o));
  recur_state* s = nullptr;
  ASSERT_RECUR_OK(recur_state_create(&s, l, 2));
  recur_layer_destroy(l);
  int32_t n = 0, b = 0, u = 0;
  EXPECT_RECUR_OK(recur_state_shape(s, &n, &b, &u));
  EXPECT_EQ(n, 2);
  EXPECT_EQ(b, 2);
  EXPECT_EQ(u, 3);
  recur_state_destroy(s);
}

// ------------------------------------------------------------------------------------------
// recur_layer_get_info, recur_layer_output_length
// ------------------------------------------------------------------------------------------

TEST(CApiCallErrors, GetInfo) {
  rt::Layer l = gru();
  EXPECT_RECUR_ERR(recur_layer_get_info(l.get(), nullptr), RECUR_ERR_INVALID_ARGUMENT, "info");
  recur_layer_info info;
  std::memset(&info, 0, sizeof info);
  info.version = 0;
  EXPECT_RECUR_ERR(recur_layer_get_info(l.get(), &info), RECUR_ERR_UNSUPPORTED, "version");
  info.version = RECUR_LAYER_INFO_VERSION + 1;
  EXPECT_RECUR_ERR(recur_layer_get_info(l.get(), &info), RECUR_ERR_UNSUPPORTED, "version");
  EXPECT_EQ(info.units, 0) << "a failing get_info must not fill the struct";
}

TEST(CApiCallErrors, OutputLength) {
  rt::Layer l = gru();
  size_t n = 777;
  EXPECT_RECUR_ERR(recur_layer_output_length(l.get(), 2, 3, nullptr), RECUR_ERR_INVALID_ARGUMENT, "out_len");
  EXPECT_RECUR_ERR(recur_layer_output_length(l.get(), 0, 3, &n), RECUR_ERR_INVALID_ARGUMENT, "batch");
  EXPECT_RECUR_ERR(recur_layer_output_length(l.get(), -1, 3, &n), RECUR_ERR_INVALID_ARGUMENT, "batch");
  EXPECT_RECUR_ERR(recur_layer_output_length(l.get(), 2, 0, &n), RECUR_ERR_INVALID_ARGUMENT, "timesteps");
  EXPECT_EQ(n, 777u);
}

// ------------------------------------------------------------------------------------------
// recur_layer_forward
// ------------------------------------------------------------------------------------------

TEST(CApiCallErrors, ForwardBatchAndTimesteps) {
  rt::Layer l = gru();
  Forward f(l.get(), 2, 4);
  ASSERT_RECUR_OK(f.run());
  std::fill(f.out.begin(), f.out.end(), kSentinel);
  std::fill(f.fin.begin(), f.fin.end(), kSentinel);
  Forward g = f;
  g.output = g.out.data();
  g.final_state = g.fin.data();
  g.batch = 0;
  EXPECT_RECUR_ERR(g.run(), RECUR_ERR_INVALID_ARGUMENT, "batch");
  g.batch = -2;
  EXPECT_RECUR_ERR(g.run(), RECUR_ERR_INVALID_ARGUMENT, "batch");
  g.batch = 2;
  g.timesteps = 0;
  EXPECT_RECUR_ERR(g.run(), RECUR_ERR_INVALID_ARGUMENT, "timesteps");
  g.timesteps = -1;
  EXPECT_RECUR_ERR(g.run(), RECUR_ERR_INVALID_ARGUMENT, "timesteps");
  // Dimensions whose product overflows are rejected, not wrapped around.
  g.batch = INT32_MAX;
  g.timesteps = INT32_MAX;
  EXPECT_RECUR_ERR(g.run(), RECUR_ERR_INVALID_ARGUMENT, "too large");
  size_t n = 0;
  EXPECT_RECUR_ERR(recur_layer_output_length(l.get(), INT32_MAX, INT32_MAX, &n), RECUR_ERR_INVALID_ARGUMENT,
                   "too large");
  // The message says the limit and what to do.
  EXPECT_NE(std::string(recur_last_error()).find("over 2^40 (1099511627776) entries; use a smaller batch or fewer timesteps"),
            std::string::npos)
      << recur_last_error();
  EXPECT_TRUE(g.untouched());
}

TEST(CApiCallErrors, ForwardInput) {
  rt::Layer l = gru();
  Forward f(l.get(), 2, 4);
  f.input = nullptr;
  EXPECT_RECUR_ERR(f.run(), RECUR_ERR_INVALID_ARGUMENT, "input");
  f.input = f.x.data();
  for (size_t bad : {size_t{0}, f.x.size() - 1, f.x.size() + 1}) {
    f.input_len = bad;
    EXPECT_RECUR_ERR(f.run(), RECUR_ERR_SHAPE, "input");
  }
  EXPECT_TRUE(f.untouched());
}

TEST(CApiCallErrors, ForwardMask) {
  rt::Layer l = gru();
  Forward f(l.get(), 2, 4);
  f.use_mask();
  ASSERT_RECUR_OK(f.run());
  Forward g(l.get(), 2, 4);
  g.use_mask();
  for (size_t bad : {size_t{0}, size_t{7}, size_t{9}}) {
    g.mask_len = bad;
    EXPECT_RECUR_ERR(g.run(), RECUR_ERR_SHAPE, "mask");
  }
  EXPECT_TRUE(g.untouched());
}

TEST(CApiCallErrors, ForwardMaskOnCudnnLayer) {
  for (int32_t type : {RECUR_LAYER_CUDNN_GRU, RECUR_LAYER_CUDNN_LSTM}) {
    rt::Layer l = rt::make(options(type, 3, 2, RECUR_DIALECT_KERAS2));
    Forward f(l.get(), 2, 4);
    ASSERT_RECUR_OK(f.run());  // without a mask it runs
    Forward g(l.get(), 2, 4);
    g.use_mask();
    EXPECT_RECUR_ERR(g.run(), RECUR_ERR_UNSUPPORTED, "Masking is not supported for CuDNN RNNs.");
    EXPECT_TRUE(g.untouched());
    // forward_state rejects it too.
    rt::State s = rt::make_state(l.get(), 2);
    EXPECT_RECUR_ERR(recur_layer_forward_state(l.get(), s.get(), g.x.data(), g.x.size(), 4, g.m.data(), g.m.size(),
                                               g.out.data(), 6),
                     RECUR_ERR_UNSUPPORTED, "Masking is not supported for CuDNN RNNs.");
  }
}

TEST(CApiCallErrors, ForwardOutput) {
  rt::Layer l = gru();
  Forward f(l.get(), 2, 4);
  f.output = nullptr;
  EXPECT_RECUR_ERR(f.run(), RECUR_ERR_INVALID_ARGUMENT, "output");
  f.output = f.out.data();
  for (size_t bad : {size_t{0}, f.out.size() - 1, f.out.size() + 3, size_t{2 * 3}}) {
    f.output_len = bad;
    EXPECT_RECUR_ERR(f.run(), RECUR_ERR_SHAPE, "output");
  }
  EXPECT_TRUE(f.untouched());
}

TEST(CApiCallErrors, ForwardFinalState) {
  rt::Layer l = lstm();
  Forward f(l.get(), 2, 4);
  for (size_t bad : {size_t{0}, size_t{6}, size_t{13}}) {
    f.final_state_len = bad;
    EXPECT_RECUR_ERR(f.run(), RECUR_ERR_SHAPE, "final_state");
  }
  EXPECT_TRUE(f.untouched());
  f.final_state = nullptr;  // NULL final_state is allowed
  f.final_state_len = 0;
  EXPECT_RECUR_OK(f.run());
}

TEST(CApiCallErrors, ForwardInitialStateCounts) {
  rt::Layer l = lstm();
  Forward f(l.get(), 2, 4);
  ASSERT_EQ(f.num_initial_states, 2);
  // LSTM given only h.
  f.num_initial_states = 1;
  f.initial_state_len = 6;
  EXPECT_RECUR_ERR(f.run(), RECUR_ERR_SHAPE, "initial_state");
  EXPECT_RECUR_ERR(f.run(), RECUR_ERR_SHAPE, "but was passed 1");
  f.num_initial_states = 3;
  f.initial_state_len = 18;
  EXPECT_RECUR_ERR(f.run(), RECUR_ERR_SHAPE, "initial_state");
  EXPECT_TRUE(f.untouched());

  rt::Layer g = gru();
  Forward h(g.get(), 2, 4);
  ASSERT_EQ(h.num_initial_states, 1);
  std::vector<float> two = rt::data(12);
  h.initial_state = two.data();
  h.initial_state_len = two.size();
  h.num_initial_states = 2;  // GRU given h and c
  EXPECT_RECUR_ERR(h.run(), RECUR_ERR_SHAPE, "initial_state");
  EXPECT_RECUR_ERR(h.run(), RECUR_ERR_SHAPE, "but was passed 2");
  h.num_initial_states = -1;
  EXPECT_RECUR_ERR(h.run(), RECUR_ERR_SHAPE, "initial_state");
  EXPECT_TRUE(h.untouched());
}

TEST(CApiCallErrors, ForwardInitialStateLengthAndNull) {
  rt::Layer l = lstm();
  Forward f(l.get(), 2, 4);
  for (size_t bad : {size_t{0}, size_t{11}, size_t{13}}) {
    f.initial_state_len = bad;
    EXPECT_RECUR_ERR(f.run(), RECUR_ERR_SHAPE, "initial_state");
  }
  f.initial_state = nullptr;
  f.initial_state_len = 12;
  EXPECT_RECUR_ERR(f.run(), RECUR_ERR_INVALID_ARGUMENT, "initial_state");
  // A pointer with a count of 0 is a count mismatch, not "no initial state".
  f.initial_state = f.init.data();
  f.num_initial_states = 0;
  EXPECT_RECUR_ERR(f.run(), RECUR_ERR_SHAPE, "initial_state");
  EXPECT_TRUE(f.untouched());
  // No initial state at all is fine.
  f.initial_state = nullptr;
  f.initial_state_len = 0;
  EXPECT_RECUR_OK(f.run());
}

TEST(CApiCallErrors, ForwardOnCell) {
  rt::Layer c = cell();
  float x[6] = {0}, out[3] = {0};
  EXPECT_RECUR_ERR(recur_layer_forward(c.get(), x, 6, 1, 3, nullptr, 0, nullptr, 0, 0, 0, out, 3, nullptr, 0),
                   RECUR_ERR_STATE, "cell");
  rt::State s = rt::make_state(c.get(), 1);
  EXPECT_RECUR_ERR(recur_layer_forward_state(c.get(), s.get(), x, 6, 3, nullptr, 0, out, 3), RECUR_ERR_STATE, "cell");
  EXPECT_RECUR_ERR(recur_layer_reset_states(c.get()), RECUR_ERR_STATE, "cell");
  EXPECT_RECUR_ERR(recur_layer_set_states(c.get(), out, 3, 1), RECUR_ERR_STATE, "cell");
  EXPECT_RECUR_ERR(recur_layer_get_states(c.get(), out, 3), RECUR_ERR_STATE, "cell");
}

TEST(CApiCallErrors, ForwardKeras2FusedDropoutOne) {
  recur_layer_options o = options(RECUR_LAYER_GRU, 3, 2, RECUR_DIALECT_KERAS2);
  o.dropout = 1.0f;
  rt::Layer l = rt::make(o);
  Forward f(l.get(), 2, 4);
  EXPECT_RECUR_OK(f.run());  // inference ignores dropout
  Forward g(l.get(), 2, 4);
  g.training = 1;
  EXPECT_RECUR_ERR(g.run(), RECUR_ERR_INVALID_ARGUMENT, "dropout");
  EXPECT_TRUE(g.untouched());
}

// ------------------------------------------------------------------------------------------
// Stateful layers
// ------------------------------------------------------------------------------------------

TEST(CApiCallErrors, StatefulBatchMismatch) {
  recur_layer_options o = options(RECUR_LAYER_LSTM, 3, 2);
  o.stateful = 1;
  o.batch_size = 2;
  rt::Layer l = rt::make(o);
  Forward ok(l.get(), 2, 4);
  ASSERT_RECUR_OK(ok.run());
  std::vector<float> before(12);
  ASSERT_RECUR_OK(recur_layer_get_states(l.get(), before.data(), before.size()));
  Forward f(l.get(), 3, 4);
  EXPECT_RECUR_ERR(f.run(), RECUR_ERR_SHAPE, "batch");
  EXPECT_TRUE(f.untouched());
  std::vector<float> after(12);
  ASSERT_RECUR_OK(recur_layer_get_states(l.get(), after.data(), after.size()));
  EXPECT_EQ(before, after) << "a failing call must not change the stored states";
}

TEST(CApiCallErrors, NotStateful) {
  rt::Layer l = gru();
  float buf[6] = {0};
  EXPECT_RECUR_ERR(recur_layer_reset_states(l.get()), RECUR_ERR_STATE, "Layer must be stateful.");
  EXPECT_RECUR_ERR(recur_layer_set_states(l.get(), buf, 3, 1), RECUR_ERR_STATE, "Layer must be stateful.");
  EXPECT_RECUR_ERR(recur_layer_get_states(l.get(), buf, 3), RECUR_ERR_STATE, "Layer must be stateful.");
}

TEST(CApiCallErrors, SetAndGetStates) {
  recur_layer_options o = options(RECUR_LAYER_LSTM, 3, 2);
  o.stateful = 1;
  o.batch_size = 2;
  rt::Layer l = rt::make(o);
  std::vector<float> v = rt::data(12), got(12, kSentinel);
  ASSERT_RECUR_OK(recur_layer_set_states(l.get(), v.data(), v.size(), 2));
  std::vector<float> h_only = rt::data(6, 2.0f);
  EXPECT_RECUR_ERR(recur_layer_set_states(l.get(), h_only.data(), h_only.size(), 1), RECUR_ERR_SHAPE, "states");
  EXPECT_RECUR_ERR(recur_layer_set_states(l.get(), h_only.data(), h_only.size(), 1), RECUR_ERR_SHAPE,
                   "expects 2 states, but it received 1");
  EXPECT_RECUR_ERR(recur_layer_set_states(l.get(), v.data(), v.size(), 3), RECUR_ERR_SHAPE, "states");
  EXPECT_RECUR_ERR(recur_layer_set_states(l.get(), nullptr, 12, 2), RECUR_ERR_INVALID_ARGUMENT, "states");
  EXPECT_RECUR_ERR(recur_layer_set_states(l.get(), v.data(), 11, 2), RECUR_ERR_SHAPE, "states");
  EXPECT_RECUR_ERR(recur_layer_set_states(l.get(), v.data(), 13, 2), RECUR_ERR_SHAPE, "states");
  EXPECT_RECUR_ERR(recur_layer_get_states(l.get(), nullptr, 12), RECUR_ERR_INVALID_ARGUMENT, "out");
  EXPECT_RECUR_ERR(recur_layer_get_states(l.get(), got.data(), 6), RECUR_ERR_SHAPE, "out");
  EXPECT_EQ(got[0], kSentinel);
  ASSERT_RECUR_OK(recur_layer_get_states(l.get(), got.data(), got.size()));
  EXPECT_EQ(got, v) << "failed set_states calls must not change the states";
}

TEST(CApiCallErrors, GetInitialState) {
  rt::Layer l = lstm();
  std::vector<float> out(12, kSentinel);
  EXPECT_RECUR_ERR(recur_layer_get_initial_state(l.get(), 0, out.data(), 12), RECUR_ERR_INVALID_ARGUMENT, "batch");
  EXPECT_RECUR_ERR(recur_layer_get_initial_state(l.get(), 2, nullptr, 12), RECUR_ERR_INVALID_ARGUMENT, "out");
  EXPECT_RECUR_ERR(recur_layer_get_initial_state(l.get(), 2, out.data(), 6), RECUR_ERR_SHAPE, "out");
  EXPECT_EQ(out[0], kSentinel);
  ASSERT_RECUR_OK(recur_layer_get_initial_state(l.get(), 2, out.data(), 12));
  for (float v : out) EXPECT_EQ(v, 0.0f);
}

// ------------------------------------------------------------------------------------------
// States
// ------------------------------------------------------------------------------------------

TEST(CApiCallErrors, StateCreate) {
  rt::Layer l = gru();
  recur_state* s = nullptr;
  EXPECT_RECUR_ERR(recur_state_create(nullptr, l.get(), 1), RECUR_ERR_INVALID_ARGUMENT, "out");
  EXPECT_CREATE_ERR(s, recur_state_create(&s, nullptr, 1), RECUR_ERR_INVALID_ARGUMENT, "layer");
  EXPECT_CREATE_ERR(s, recur_state_create(&s, l.get(), 0), RECUR_ERR_INVALID_ARGUMENT, "batch");
  EXPECT_CREATE_ERR(s, recur_state_create(&s, l.get(), -4), RECUR_ERR_INVALID_ARGUMENT, "batch");
}

TEST(CApiCallErrors, StateGetSet) {
  rt::Layer l = lstm();
  rt::State s = rt::make_state(l.get(), 2);
  std::vector<float> v = rt::data(12), got(12, kSentinel);
  ASSERT_RECUR_OK(recur_state_set(s.get(), v.data(), v.size(), 2));
  EXPECT_RECUR_ERR(recur_state_set(s.get(), v.data(), 6, 1), RECUR_ERR_SHAPE, "values");
  EXPECT_RECUR_ERR(recur_state_set(s.get(), v.data(), v.size(), 3), RECUR_ERR_SHAPE, "values");
  EXPECT_RECUR_ERR(recur_state_set(s.get(), nullptr, 12, 2), RECUR_ERR_INVALID_ARGUMENT, "values");
  EXPECT_RECUR_ERR(recur_state_set(s.get(), v.data(), 11, 2), RECUR_ERR_SHAPE, "values");
  EXPECT_RECUR_ERR(recur_state_get(s.get(), nullptr, 12), RECUR_ERR_INVALID_ARGUMENT, "out");
  EXPECT_RECUR_ERR(recur_state_get(s.get(), got.data(), 13), RECUR_ERR_SHAPE, "out");
  EXPECT_EQ(got[0], kSentinel);
  ASSERT_RECUR_OK(recur_state_get(s.get(), got.data(), got.size()));
  EXPECT_EQ(got, v);
}

TEST(CApiCallErrors, ForwardStateArguments) {
  rt::Layer l = gru();  // units 3, input 2, return_sequences
  rt::State s = rt::make_state(l.get(), 2);
  std::vector<float> x = rt::data(2 * 4 * 2), out(2 * 4 * 3, kSentinel);
  std::vector<uint8_t> m(8, 1);
  ASSERT_RECUR_OK(recur_layer_forward_state(l.get(), s.get(), x.data(), x.size(), 4, m.data(), m.size(), out.data(),
                                            out.size()));
  std::vector<float> h(6), h_after(6);
  ASSERT_RECUR_OK(recur_state_get(s.get(), h.data(), h.size()));
  std::fill(out.begin(), out.end(), kSentinel);
  auto call = [&](const float* in, size_t in_len, int32_t T, const uint8_t* mk, size_t mk_len, float* o, size_t o_len) {
    return recur_layer_forward_state(l.get(), s.get(), in, in_len, T, mk, mk_len, o, o_len);
  };
  EXPECT_RECUR_ERR(call(x.data(), x.size(), 0, nullptr, 0, out.data(), out.size()), RECUR_ERR_INVALID_ARGUMENT,
                   "timesteps");
  EXPECT_RECUR_ERR(call(nullptr, x.size(), 4, nullptr, 0, out.data(), out.size()), RECUR_ERR_INVALID_ARGUMENT, "input");
  EXPECT_RECUR_ERR(call(x.data(), x.size() - 2, 4, nullptr, 0, out.data(), out.size()), RECUR_ERR_SHAPE, "input");
  EXPECT_RECUR_ERR(call(x.data(), x.size(), 4, m.data(), 7, out.data(), out.size()), RECUR_ERR_SHAPE, "mask");
  EXPECT_RECUR_ERR(call(x.data(), x.size(), 4, nullptr, 0, nullptr, out.size()), RECUR_ERR_INVALID_ARGUMENT, "output");
  EXPECT_RECUR_ERR(call(x.data(), x.size(), 4, nullptr, 0, out.data(), 6), RECUR_ERR_SHAPE, "output");
  for (float v : out) EXPECT_EQ(v, kSentinel);
  ASSERT_RECUR_OK(recur_state_get(s.get(), h_after.data(), h_after.size()));
  EXPECT_EQ(h, h_after) << "failed forward_state calls must not advance the state";
}

TEST(CApiCallErrors, ForwardStateWithAStateOfAnotherLayer) {
  rt::Layer g = gru();           // 1 state of 3 units
  rt::Layer l = lstm();          // 2 states of 3 units
  rt::Layer wide = gru(5, 2);    // 1 state of 5 units
  rt::State lstm_state = rt::make_state(l.get(), 2);
  rt::State wide_state = rt::make_state(wide.get(), 2);
  std::vector<float> x = rt::data(2 * 4 * 2), out(2 * 4 * 3);
  EXPECT_RECUR_ERR(recur_layer_forward_state(g.get(), lstm_state.get(), x.data(), x.size(), 4, nullptr, 0, out.data(),
                                             out.size()),
                   RECUR_ERR_SHAPE, "state");
  EXPECT_RECUR_ERR(recur_layer_forward_state(g.get(), wide_state.get(), x.data(), x.size(), 4, nullptr, 0, out.data(),
                                             out.size()),
                   RECUR_ERR_SHAPE, "units");
  rt::State gru_state = rt::make_state(g.get(), 2);
  std::vector<float> out_l(6);
  EXPECT_RECUR_ERR(recur_layer_forward_state(l.get(), gru_state.get(), x.data(), x.size(), 4, nullptr, 0, out_l.data(),
                                             out_l.size()),
                   RECUR_ERR_SHAPE, "state");
}

// ------------------------------------------------------------------------------------------
// Cells
// ------------------------------------------------------------------------------------------

TEST(CApiCallErrors, CellCallOnSequenceLayer) {
  rt::Layer l = gru();
  float x[4] = {0}, h[6] = {0}, out[6];
  EXPECT_RECUR_ERR(recur_cell_call(l.get(), x, 4, 2, h, 6, 1, 0, out, 6, nullptr, 0), RECUR_ERR_STATE,
                   "not a cell");
}

TEST(CApiCallErrors, CellCallArguments) {
  rt::Layer c = cell(RECUR_LAYER_LSTM_CELL);  // units 3, input 2, states [h, c]
  std::vector<float> x = rt::data(4), st = rt::data(12, 0.5f), out(6, kSentinel), ns(12, kSentinel);
  auto call = [&](const float* in, size_t in_len, int32_t B, const float* s, size_t s_len, int32_t n, float* o,
                  size_t o_len, float* nst, size_t nst_len) {
    return recur_cell_call(c.get(), in, in_len, B, s, s_len, n, 0, o, o_len, nst, nst_len);
  };
  ASSERT_RECUR_OK(call(x.data(), 4, 2, st.data(), 12, 2, out.data(), 6, ns.data(), 12));
  std::fill(out.begin(), out.end(), kSentinel);
  std::fill(ns.begin(), ns.end(), kSentinel);
  EXPECT_RECUR_ERR(call(x.data(), 4, 0, st.data(), 12, 2, out.data(), 6, ns.data(), 12), RECUR_ERR_INVALID_ARGUMENT,
                   "batch");
  EXPECT_RECUR_ERR(call(nullptr, 4, 2, st.data(), 12, 2, out.data(), 6, ns.data(), 12), RECUR_ERR_INVALID_ARGUMENT,
                   "input");
  EXPECT_RECUR_ERR(call(x.data(), 3, 2, st.data(), 12, 2, out.data(), 6, ns.data(), 12), RECUR_ERR_SHAPE, "input");
  EXPECT_RECUR_ERR(call(x.data(), 4, 2, st.data(), 6, 1, out.data(), 6, ns.data(), 12), RECUR_ERR_SHAPE, "states");
  EXPECT_RECUR_ERR(call(x.data(), 4, 2, nullptr, 12, 2, out.data(), 6, ns.data(), 12), RECUR_ERR_INVALID_ARGUMENT,
                   "states");
  EXPECT_RECUR_ERR(call(x.data(), 4, 2, st.data(), 11, 2, out.data(), 6, ns.data(), 12), RECUR_ERR_SHAPE, "states");
  EXPECT_RECUR_ERR(call(x.data(), 4, 2, st.data(), 12, 2, nullptr, 6, ns.data(), 12), RECUR_ERR_INVALID_ARGUMENT,
                   "output");
  EXPECT_RECUR_ERR(call(x.data(), 4, 2, st.data(), 12, 2, out.data(), 5, ns.data(), 12), RECUR_ERR_SHAPE, "output");
  EXPECT_RECUR_ERR(call(x.data(), 4, 2, st.data(), 12, 2, out.data(), 6, ns.data(), 6), RECUR_ERR_SHAPE,
                   "new_states");
  for (float v : out) EXPECT_EQ(v, kSentinel);
  for (float v : ns) EXPECT_EQ(v, kSentinel);
}

TEST(CApiCallErrors, DropoutMaskFunctionsOnNonCell) {
  rt::Layer l = lstm();
  int32_t count = -7;
  EXPECT_RECUR_ERR(recur_cell_get_dropout_mask(l.get(), 1, 1, nullptr, 0, &count), RECUR_ERR_STATE, "not a cell");
  EXPECT_RECUR_ERR(recur_cell_get_recurrent_dropout_mask(l.get(), 1, 1, nullptr, 0, &count), RECUR_ERR_STATE,
                   "not a cell");
  EXPECT_RECUR_ERR(recur_cell_reset_dropout_mask(l.get()), RECUR_ERR_STATE, "not a cell");
  EXPECT_RECUR_ERR(recur_cell_reset_recurrent_dropout_mask(l.get()), RECUR_ERR_STATE, "not a cell");
  EXPECT_EQ(count, -7);
}

TEST(CApiCallErrors, DropoutMaskArguments) {
  rt::Layer c = cell(RECUR_LAYER_GRU_CELL, 0.5f, 0.25f);
  int32_t count = 0;
  EXPECT_RECUR_ERR(recur_cell_get_dropout_mask(c.get(), 2, 1, nullptr, 0, nullptr), RECUR_ERR_INVALID_ARGUMENT,
                   "count");
  EXPECT_RECUR_ERR(recur_cell_get_recurrent_dropout_mask(c.get(), 2, 1, nullptr, 0, nullptr),
                   RECUR_ERR_INVALID_ARGUMENT, "count");
  EXPECT_RECUR_ERR(recur_cell_get_dropout_mask(c.get(), 0, 1, nullptr, 0, &count), RECUR_ERR_INVALID_ARGUMENT,
                   "batch");
  EXPECT_RECUR_ERR(recur_cell_get_recurrent_dropout_mask(c.get(), -1, 1, nullptr, 0, &count),
                   RECUR_ERR_INVALID_ARGUMENT, "batch");
  ASSERT_RECUR_OK(recur_cell_get_dropout_mask(c.get(), 2, 1, nullptr, 0, &count));
  ASSERT_GE(count, 1);
  std::vector<float> buf(static_cast<size_t>(count) * 2 * 2 + 1);
  EXPECT_RECUR_ERR(recur_cell_get_dropout_mask(c.get(), 2, 1, buf.data(), buf.size(), &count), RECUR_ERR_SHAPE, "out");
  // The cached mask was made for batch 2.
  EXPECT_RECUR_ERR(recur_cell_get_dropout_mask(c.get(), 3, 1, nullptr, 0, &count), RECUR_ERR_SHAPE, "batch");
  ASSERT_RECUR_OK(recur_cell_get_recurrent_dropout_mask(c.get(), 2, 1, nullptr, 0, &count));
  EXPECT_EQ(count, 3);
  EXPECT_RECUR_ERR(recur_cell_get_recurrent_dropout_mask(c.get(), 2, 1, buf.data(), 5, &count), RECUR_ERR_SHAPE,
                   "out");
  EXPECT_RECUR_ERR(recur_cell_get_recurrent_dropout_mask(c.get(), 4, 1, nullptr, 0, &count), RECUR_ERR_SHAPE,
                   "batch");
  // After a reset, another batch is fine.
  ASSERT_RECUR_OK(recur_cell_reset_dropout_mask(c.get()));
  ASSERT_RECUR_OK(recur_cell_reset_recurrent_dropout_mask(c.get()));
  EXPECT_RECUR_OK(recur_cell_get_dropout_mask(c.get(), 3, 1, nullptr, 0, &count));
  EXPECT_RECUR_OK(recur_cell_get_recurrent_dropout_mask(c.get(), 4, 1, nullptr, 0, &count));
}

// ------------------------------------------------------------------------------------------
// Weights
// ------------------------------------------------------------------------------------------

TEST(CApiCallErrors, WeightIndexOutOfRange) {
  rt::Layer l = gru();  // 3 weights
  int64_t dims[2] = {-9, -9};
  int32_t nd = -9;
  const char* name = nullptr;
  std::vector<float> buf(64, 1.0f);
  for (int32_t bad : {-1, -100, 3, 4, 1000}) {
    SCOPED_TRACE(bad);
    const recur_status want = RECUR_ERR_INVALID_ARGUMENT;
    EXPECT_RECUR_ERR(recur_layer_weight_shape(l.get(), bad, dims, &nd), want, "index");
    EXPECT_RECUR_ERR(recur_layer_weight_name(l.get(), bad, &name), want, "index");
    EXPECT_RECUR_ERR(recur_layer_get_weight(l.get(), bad, buf.data(), 18), want, "index");
    EXPECT_RECUR_ERR(recur_layer_set_weight(l.get(), bad, buf.data(), 18, nullptr, 0), want, "index");
  }
  EXPECT_EQ(nd, -9);
  EXPECT_EQ(name, nullptr);
  rt::Layer nobias = [] {
    recur_layer_options o = options(RECUR_LAYER_LSTM, 3, 2);
    o.use_bias = 0;
    return rt::make(o);
  }();
  EXPECT_RECUR_ERR(recur_layer_weight_name(nobias.get(), 2, &name), RECUR_ERR_INVALID_ARGUMENT, "2 weights");
}

TEST(CApiCallErrors, WeightNullPointers) {
  rt::Layer l = gru();
  int64_t dims[2];
  int32_t nd;
  EXPECT_RECUR_ERR(recur_layer_num_weights(l.get(), nullptr), RECUR_ERR_INVALID_ARGUMENT, "count");
  EXPECT_RECUR_ERR(recur_layer_weight_shape(l.get(), 0, nullptr, &nd), RECUR_ERR_INVALID_ARGUMENT, "dims");
  EXPECT_RECUR_ERR(recur_layer_weight_shape(l.get(), 0, dims, nullptr), RECUR_ERR_INVALID_ARGUMENT, "ndims");
  EXPECT_RECUR_ERR(recur_layer_weight_name(l.get(), 0, nullptr), RECUR_ERR_INVALID_ARGUMENT, "name");
  EXPECT_RECUR_ERR(recur_layer_get_weight(l.get(), 0, nullptr, 18), RECUR_ERR_INVALID_ARGUMENT, "out");
  EXPECT_RECUR_ERR(recur_layer_set_weight(l.get(), 0, nullptr, 18, nullptr, 0), RECUR_ERR_INVALID_ARGUMENT, "data");
  EXPECT_RECUR_ERR(recur_layer_weights_length(l.get(), nullptr), RECUR_ERR_INVALID_ARGUMENT, "len");
  EXPECT_RECUR_ERR(recur_layer_get_weights(l.get(), nullptr, 63), RECUR_ERR_INVALID_ARGUMENT, "out");
  EXPECT_RECUR_ERR(recur_layer_set_weights(l.get(), nullptr, 63), RECUR_ERR_INVALID_ARGUMENT, "data");
}

TEST(CApiCallErrors, GetWeightWrongLength) {
  rt::Layer l = gru();  // kernel (2, 9) = 18 floats
  std::vector<float> buf(40, kSentinel);
  EXPECT_RECUR_ERR(recur_layer_get_weight(l.get(), 0, buf.data(), 17), RECUR_ERR_SHAPE, "kernel");
  EXPECT_RECUR_ERR(recur_layer_get_weight(l.get(), 0, buf.data(), 19), RECUR_ERR_SHAPE, "(2, 9)");
  EXPECT_RECUR_ERR(recur_layer_get_weight(l.get(), 2, buf.data(), 9), RECUR_ERR_SHAPE, "bias");
  EXPECT_EQ(buf[0], kSentinel);
  size_t n = 0;
  ASSERT_RECUR_OK(recur_layer_weights_length(l.get(), &n));
  ASSERT_EQ(n, 18u + 27u + 18u);
  std::vector<float> all(n + 1, kSentinel);
  EXPECT_RECUR_ERR(recur_layer_get_weights(l.get(), all.data(), n - 1), RECUR_ERR_SHAPE, "out");
  EXPECT_RECUR_ERR(recur_layer_get_weights(l.get(), all.data(), n + 1), RECUR_ERR_SHAPE, "out");
  EXPECT_EQ(all[0], kSentinel);
}

TEST(CApiCallErrors, SetWeightWrongShapeLosesNothing) {
  // GRU reset_after=True: bias is (2, 3u). A CuDNN-style (6u,) bias has the right length but the
  // wrong shape; Keras rejects it and so does recur.
  rt::Layer l = gru();  // units 3 -> bias (2, 9)
  const std::vector<float> before = rt::all_weights(l.get());
  const std::vector<float> bias = rt::data(18, 3.0f);
  const int64_t cudnn_dims[1] = {18};
  EXPECT_RECUR_ERR(recur_layer_set_weight(l.get(), 2, bias.data(), 18, cudnn_dims, 1), RECUR_ERR_SHAPE, "bias");
  EXPECT_RECUR_ERR(recur_layer_set_weight(l.get(), 2, bias.data(), 18, cudnn_dims, 1), RECUR_ERR_SHAPE, "(2, 9)");
  EXPECT_RECUR_ERR(recur_layer_set_weight(l.get(), 2, bias.data(), 18, cudnn_dims, 1), RECUR_ERR_SHAPE, "(18,)");
  const int64_t transposed[2] = {9, 2};
  EXPECT_RECUR_ERR(recur_layer_set_weight(l.get(), 2, bias.data(), 18, transposed, 2), RECUR_ERR_SHAPE, "bias");
  const int64_t kernel_t[2] = {9, 2};
  EXPECT_RECUR_ERR(recur_layer_set_weight(l.get(), 0, bias.data(), 18, kernel_t, 2), RECUR_ERR_SHAPE, "kernel");
  const int64_t rank3[3] = {2, 9, 1};
  EXPECT_RECUR_ERR(recur_layer_set_weight(l.get(), 2, bias.data(), 18, rank3, 3), RECUR_ERR_SHAPE, "bias");
  EXPECT_RECUR_ERR(recur_layer_set_weight(l.get(), 2, bias.data(), 18, rank3, -1), RECUR_ERR_SHAPE, "rank");
  // A huge rank must not make the library read past the dims the caller has.
  EXPECT_RECUR_ERR(recur_layer_set_weight(l.get(), 2, bias.data(), 18, rank3, 1 << 30), RECUR_ERR_SHAPE, "bias");
  // Right dims, wrong length; and no dims with the wrong length.
  const int64_t right[2] = {2, 9};
  EXPECT_RECUR_ERR(recur_layer_set_weight(l.get(), 2, bias.data(), 17, right, 2), RECUR_ERR_SHAPE, "bias");
  EXPECT_RECUR_ERR(recur_layer_set_weight(l.get(), 2, bias.data(), 17, nullptr, 0), RECUR_ERR_SHAPE, "bias");
  EXPECT_RECUR_ERR(recur_layer_set_weight(l.get(), 1, bias.data(), 18, nullptr, 0), RECUR_ERR_SHAPE,
                   "recurrent_kernel");
  EXPECT_EQ(rt::all_weights(l.get()), before) << "a rejected set_weight must leave every weight unchanged";
  // And the right shape is accepted.
  ASSERT_RECUR_OK(recur_layer_set_weight(l.get(), 2, bias.data(), 18, right, 2));
  EXPECT_EQ(rt::weight(l.get(), 2), bias);
}

TEST(CApiCallErrors, CudnnLayerRejectsKerasShapedBias) {
  rt::Layer l = rt::make(options(RECUR_LAYER_CUDNN_GRU, 3, 2, RECUR_DIALECT_KERAS2));  // bias (18,)
  const std::vector<float> before = rt::all_weights(l.get());
  const std::vector<float> bias = rt::data(18);
  const int64_t keras_dims[2] = {2, 9};
  EXPECT_RECUR_ERR(recur_layer_set_weight(l.get(), 2, bias.data(), 18, keras_dims, 2), RECUR_ERR_SHAPE, "(18,)");
  EXPECT_EQ(rt::all_weights(l.get()), before);
}

TEST(CApiCallErrors, SetWeightsWrongTotalLosesNothing) {
  rt::Layer l = lstm();
  const std::vector<float> before = rt::all_weights(l.get());
  std::vector<float> w = rt::data(before.size() + 1, 1.5f);
  EXPECT_RECUR_ERR(recur_layer_set_weights(l.get(), w.data(), before.size() - 1), RECUR_ERR_SHAPE, "weights");
  EXPECT_RECUR_ERR(recur_layer_set_weights(l.get(), w.data(), before.size() + 1), RECUR_ERR_SHAPE, "kernel");
  EXPECT_RECUR_ERR(recur_layer_set_weights(l.get(), w.data(), 0), RECUR_ERR_SHAPE, "weights");
  EXPECT_EQ(rt::all_weights(l.get()), before);
}

// ------------------------------------------------------------------------------------------
// Losses and constraints
// ------------------------------------------------------------------------------------------

TEST(CApiCallErrors, Losses) {
  recur_layer_options o = options(RECUR_LAYER_GRU, 3, 2);
  o.kernel_regularizer = "l2";
  o.recurrent_regularizer = "l1";
  rt::Layer l = rt::make(o);
  const char* name = nullptr;
  // Names need no earlier get_losses call: they are static and in get_losses order.
  ASSERT_RECUR_OK(recur_layer_loss_name(l.get(), 0, &name));
  EXPECT_STREQ(name, "kernel");
  ASSERT_RECUR_OK(recur_layer_loss_name(l.get(), 1, &name));
  EXPECT_STREQ(name, "recurrent_kernel");
  name = nullptr;
  int32_t count = -1;
  EXPECT_RECUR_ERR(recur_layer_get_losses(l.get(), nullptr, 0, nullptr), RECUR_ERR_INVALID_ARGUMENT, "count");
  float out[4] = {kSentinel, kSentinel, kSentinel, kSentinel};
  EXPECT_RECUR_ERR(recur_layer_get_losses(l.get(), out, 1, &count), RECUR_ERR_SHAPE, "losses");
  EXPECT_EQ(out[0], kSentinel);
  EXPECT_EQ(count, -1);
  ASSERT_RECUR_OK(recur_layer_get_losses(l.get(), out, 4, &count));
  ASSERT_EQ(count, 2);
  EXPECT_RECUR_ERR(recur_layer_loss_name(l.get(), 2, &name), RECUR_ERR_INVALID_ARGUMENT, "index");
  EXPECT_RECUR_ERR(recur_layer_loss_name(l.get(), -1, &name), RECUR_ERR_INVALID_ARGUMENT, "index");
  EXPECT_RECUR_ERR(recur_layer_loss_name(l.get(), 0, nullptr), RECUR_ERR_INVALID_ARGUMENT, "name");
}

TEST(CApiCallErrors, ApplyConstraintsFailureChangesNothing) {
  // The kernel constraint is fine; the bias constraint reduces over an axis a 1-D bias does not
  // have. The failure must not leave the kernel constrained and the bias not.
  recur_layer_options o = options(RECUR_LAYER_LSTM, 3, 2);
  o.kernel_constraint = "non_neg";
  o.bias_constraint = R"({"class_name": "MaxNorm", "config": {"max_value": 0.5, "axis": 1}})";
  rt::Layer l = rt::make(o);
  const std::vector<float> before = rt::all_weights(l.get());
  bool any_negative = false;
  for (float v : rt::weight(l.get(), 0)) any_negative = any_negative || v < 0.0f;
  ASSERT_TRUE(any_negative);
  EXPECT_RECUR_ERR(recur_layer_apply_constraints(l.get()), RECUR_ERR_INVALID_ARGUMENT, "bias_constraint");
  EXPECT_RECUR_ERR(recur_layer_apply_constraints(l.get()), RECUR_ERR_INVALID_ARGUMENT, "axis");
  EXPECT_EQ(rt::all_weights(l.get()), before);
}

// An initializer that fails at the first use (Keras: when the layer builds) fails every later use
// with the same error, and giving every weight makes the layer usable.
TEST(CApiCallErrors, FailedInitializerFailsEveryUseUntilWeightsAreGiven) {
  recur_layer_options o = rt::options(RECUR_LAYER_LSTM, 61, 63);
  o.kernel_initializer = "orthogonal";
  o.recurrent_initializer = "orthogonal";
  o.bias_initializer = "orthogonal";  // a bias is rank 1
  rt::Layer l = rt::make(o);
  std::vector<float> x(2 * 63, 0.5f), out(61);
  for (int attempt = 0; attempt < 2; ++attempt)
    EXPECT_RECUR_ERR(recur_layer_forward(l.get(), x.data(), x.size(), 1, 2, nullptr, 0, nullptr, 0, 0, 0, out.data(),
                                         out.size(), nullptr, 0),
                     RECUR_ERR_INVALID_ARGUMENT, "orthogonal initializer needs a rank-2 shape");
  std::size_t n = 0;
  ASSERT_RECUR_OK(recur_layer_weights_length(l.get(), &n));
  const std::vector<float> w(n, 0.01f);
  ASSERT_RECUR_OK(recur_layer_set_weights(l.get(), w.data(), w.size()));
  ASSERT_RECUR_OK(recur_layer_forward(l.get(), x.data(), x.size(), 1, 2, nullptr, 0, nullptr, 0, 0, 0, out.data(),
                                      out.size(), nullptr, 0));
  EXPECT_TRUE(std::isfinite(out[0]));
}
