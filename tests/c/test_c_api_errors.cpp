// SPDX-License-Identifier: Apache-2.0
// Error paths of creation through the C ABI: options, option structs, names of activations,
// initializers, regularizers and constraints, and Keras JSON. Every check looks at the exact
// status code, at recur_last_error() naming the problem, and at *out being NULL afterwards.
#include "c_api_test_util.hpp"

namespace {

using rt::options;

recur_layer* created = nullptr;  // receives *out of failing creates

void expect_option_error(const recur_layer_options& o, recur_status code, const char* needle) {
  EXPECT_CREATE_ERR(created, recur_layer_create(&created, &o), code, needle);
}

void expect_json_error(const std::string& json, recur_status code, const char* needle, int32_t input_size = 3,
                       int32_t dialect = RECUR_DIALECT_AUTO, const char* keras_version = nullptr) {
  SCOPED_TRACE(json);
  EXPECT_CREATE_ERR(created, recur_layer_create_from_json(&created, json.c_str(), input_size, dialect, keras_version),
                    code, needle);
}

// A Keras 2 GRU config with `extra` fields appended inside "config".
std::string k2_gru(const std::string& extra = "") {
  return R"({"class_name": "GRU", "config": {"name": "gru", "trainable": true, "dtype": "float32", )"
         R"("units": 4, "time_major": false, "implementation": 2, "reset_after": true)" +
         extra + "}}";
}

// A Keras 3 GRU config with `extra` fields appended inside "config".
std::string k3_gru(const std::string& extra = "") {
  return R"({"module": "keras.layers", "class_name": "GRU", "config": {"name": "gru", "trainable": true, )"
         R"("dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, )"
         R"("registered_name": null}, "units": 4, "seed": null)" +
         extra + R"(}, "registered_name": null, "build_config": {"input_shape": [null, 5, 3]}})";
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Version, status strings, options_init
// ------------------------------------------------------------------------------------------

TEST(CApiErrors, StatusStringsAreNonEmptyForEveryCode) {
  for (recur_status s : {RECUR_OK, RECUR_ERR_INVALID_ARGUMENT, RECUR_ERR_SHAPE, RECUR_ERR_UNSUPPORTED, RECUR_ERR_PARSE,
                         RECUR_ERR_STATE, RECUR_ERR_OUT_OF_MEMORY, RECUR_ERR_IO, RECUR_ERR_INTERNAL}) {
    ASSERT_NE(recur_status_string(s), nullptr);
    EXPECT_STRNE(recur_status_string(s), "");
    EXPECT_STRNE(recur_status_string(s), "unknown status") << s;
  }
  EXPECT_STREQ(recur_status_string(static_cast<recur_status>(12345)), "unknown status");
  EXPECT_STREQ(recur_status_string(RECUR_OK), "ok");
}

TEST(CApiErrors, OptionsInit) {
  EXPECT_RECUR_ERR(recur_layer_options_init(nullptr, RECUR_LAYER_OPTIONS_VERSION), RECUR_ERR_INVALID_ARGUMENT, "opts");
  recur_layer_options o;
  std::memset(&o, 0x5A, sizeof o);
  const recur_layer_options before = o;
  EXPECT_RECUR_ERR(recur_layer_options_init(&o, 0), RECUR_ERR_UNSUPPORTED, "version");
  EXPECT_RECUR_ERR(recur_layer_options_init(&o, RECUR_LAYER_OPTIONS_VERSION + 1), RECUR_ERR_UNSUPPORTED, "version");
  EXPECT_EQ(std::memcmp(&o, &before, sizeof o), 0) << "a failing options_init must not touch the struct";
}

// ------------------------------------------------------------------------------------------
// recur_layer_create
// ------------------------------------------------------------------------------------------

TEST(CApiErrors, CreateNullArguments) {
  recur_layer_options o = options(RECUR_LAYER_GRU, 4, 3);
  EXPECT_RECUR_ERR(recur_layer_create(nullptr, &o), RECUR_ERR_INVALID_ARGUMENT, "out");
  EXPECT_CREATE_ERR(created, recur_layer_create(&created, nullptr), RECUR_ERR_INVALID_ARGUMENT, "opts");
}

TEST(CApiErrors, CreateWrongOptionsVersion) {
  recur_layer_options o = options(RECUR_LAYER_GRU, 4, 3);
  o.version = 0;
  expect_option_error(o, RECUR_ERR_UNSUPPORTED, "version");
  o.version = RECUR_LAYER_OPTIONS_VERSION + 7;
  expect_option_error(o, RECUR_ERR_UNSUPPORTED, "version");
}

TEST(CApiErrors, CreateTypeAndDialect) {
  for (int32_t type : {0, 9, -1, 100}) {
    recur_layer_options o = options(type, 4, 3);
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "type");
  }
  for (int32_t dialect : {1, 4, -1}) {
    recur_layer_options o = options(RECUR_LAYER_GRU, 4, 3, dialect);
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "dialect");
  }
}

TEST(CApiErrors, CreateKerasVersion) {
  recur_layer_options o = options(RECUR_LAYER_GRU, 4, 3, RECUR_DIALECT_KERAS3);
  o.keras_version = "2.15.0";  // belongs to the other dialect
  expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "keras_version");
  o.keras_version = "not a version";
  expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "keras_version");
  o.keras_version = "";
  expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "keras_version");
  o.keras_version = "3.13.0";
  rt::make(o);
}

TEST(CApiErrors, CreateUnitsAndInputSize) {
  for (int32_t units : {0, -1, -100}) {
    recur_layer_options o = options(RECUR_LAYER_LSTM, units, 3);
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "units");
  }
  for (int32_t input : {0, -3}) {
    recur_layer_options o = options(RECUR_LAYER_GRU, 4, input);
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "input_size");
  }
  // Sizes beyond the resource limits are refused before any allocation is attempted.
  recur_layer_options o = options(RECUR_LAYER_GRU, (1 << 24) + 1, 3);
  expect_option_error(o, RECUR_ERR_LIMIT, "units limit");
  o = options(RECUR_LAYER_LSTM, 20000, 20000);
  expect_option_error(o, RECUR_ERR_LIMIT, "input_size=20000");
  o = options(RECUR_LAYER_GRU, INT32_MAX, INT32_MAX);
  expect_option_error(o, RECUR_ERR_LIMIT, "units");
}

TEST(CApiErrors, CreateFlagsOtherThan01Default) {
  struct Field {
    const char* name;
    int32_t recur_layer_options::*member;
  };
  const Field fields[] = {
      {"use_bias", &recur_layer_options::use_bias},
      {"reset_after", &recur_layer_options::reset_after},
      {"unit_forget_bias", &recur_layer_options::unit_forget_bias},
      {"return_sequences", &recur_layer_options::return_sequences},
      {"return_state", &recur_layer_options::return_state},
      {"go_backwards", &recur_layer_options::go_backwards},
      {"stateful", &recur_layer_options::stateful},
      {"time_major", &recur_layer_options::time_major},
      {"unroll", &recur_layer_options::unroll},
      {"zero_output_for_mask", &recur_layer_options::zero_output_for_mask},
      {"trainable", &recur_layer_options::trainable},
  };
  for (const Field& f : fields) {
    for (int32_t bad : {2, -2, 42}) {
      SCOPED_TRACE(std::string(f.name) + " = " + std::to_string(bad));
      recur_layer_options o = options(RECUR_LAYER_GRU, 4, 3, RECUR_DIALECT_KERAS2);
      o.*(f.member) = bad;
      expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, f.name);
    }
  }
}

TEST(CApiErrors, CreateImplementation) {
  for (int32_t impl : {0, 3, -5}) {
    recur_layer_options o = options(RECUR_LAYER_GRU, 4, 3);
    o.implementation = impl;
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "implementation");
  }
  for (int32_t impl : {1, 2, RECUR_DEFAULT}) {
    recur_layer_options o = options(RECUR_LAYER_GRU, 4, 3);
    o.implementation = impl;
    rt::make(o);
  }
}

TEST(CApiErrors, CreateDropoutNaN) {
  recur_layer_options o = options(RECUR_LAYER_LSTM, 4, 3);
  o.dropout = std::nanf("");
  expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "dropout");
  o = options(RECUR_LAYER_LSTM, 4, 3);
  o.recurrent_dropout = std::nanf("");
  expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "recurrent_dropout");
  // Out-of-range rates are clipped into [0, 1], as Keras does.
  o = options(RECUR_LAYER_LSTM, 4, 3);
  o.dropout = 7.0f;
  o.recurrent_dropout = -1.0f;
  rt::make(o);
}

TEST(CApiErrors, CreateSeed) {
  for (int64_t seed : {int64_t{-2}, int64_t{-100}, INT64_MIN}) {
    recur_layer_options o = options(RECUR_LAYER_GRU, 4, 3);
    o.seed = seed;
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "seed");
  }
  recur_layer_options o = options(RECUR_LAYER_GRU, 4, 3);
  o.seed = -1;  // random
  rt::make(o);
}

TEST(CApiErrors, CreateStatefulNeedsBatchSize) {
  recur_layer_options o = options(RECUR_LAYER_GRU, 4, 3);
  o.stateful = 1;
  o.batch_size = 0;
  expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "batch_size");
  o.batch_size = -2;
  expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "batch_size");
  o = options(RECUR_LAYER_GRU, 4, 3);
  o.batch_size = -1;
  expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "batch_size");
}

TEST(CApiErrors, CreateActivations) {
  recur_layer_options o = options(RECUR_LAYER_GRU, 4, 3, RECUR_DIALECT_KERAS3);
  o.activation = "no_such_activation";
  expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "activation");
  expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "no_such_activation");
  o = options(RECUR_LAYER_LSTM, 4, 3, RECUR_DIALECT_KERAS2);
  o.recurrent_activation = "Sigmoid";  // names are case-sensitive in Keras
  expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "recurrent_activation");

  // Dialect-specific names: these exist only in Keras 3. (relu6, silu, leaky_relu and
  // log_softmax are accepted by Keras 2 too: tf_keras/activations.py exports them as module
  // globals so that deserialize() finds them.)
  for (const char* k3_only : {"hard_silu", "hard_swish", "celu", "log_sigmoid", "sparse_plus", "squareplus",
                              "tanh_shrink", "hard_tanh", "sparsemax"}) {
    SCOPED_TRACE(k3_only);
    o = options(RECUR_LAYER_GRU, 4, 3, RECUR_DIALECT_KERAS2);
    o.activation = k3_only;
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "activation");
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, k3_only);
    o.dialect = RECUR_DIALECT_KERAS3;
    rt::make(o);
  }
  // hard_sigmoid exists in both (with different formulas), swish too.
  for (int32_t d : {RECUR_DIALECT_KERAS2, RECUR_DIALECT_KERAS3}) {
    for (const char* both : {"hard_sigmoid", "swish", "tanh", "linear", "relu", "relu6", "silu", "leaky_relu"}) {
      o = options(RECUR_LAYER_LSTM, 4, 3, d);
      o.activation = both;
      o.recurrent_activation = both;
      rt::make(o);
    }
  }
}

TEST(CApiErrors, CreateCudnnArguments) {
  recur_layer_options o = options(RECUR_LAYER_CUDNN_GRU, 4, 3, RECUR_DIALECT_KERAS3);
  expect_option_error(o, RECUR_ERR_UNSUPPORTED, "CuDNN");
  o = options(RECUR_LAYER_CUDNN_LSTM, 4, 3, RECUR_DIALECT_AUTO);  // AUTO means Keras 3 for options
  expect_option_error(o, RECUR_ERR_UNSUPPORTED, "Keras 3");
  o = options(RECUR_LAYER_CUDNN_GRU, 4, 3, RECUR_DIALECT_KERAS2);
  o.activation = "tanh";
  expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "activation");
  o = options(RECUR_LAYER_CUDNN_LSTM, 4, 3, RECUR_DIALECT_KERAS2);
  o.recurrent_activation = "sigmoid";
  expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "recurrent_activation");
  o = options(RECUR_LAYER_CUDNN_LSTM, 4, 3, RECUR_DIALECT_KERAS2);
  o.dropout = 0.5f;
  expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "dropout");
  o = options(RECUR_LAYER_CUDNN_GRU, 4, 3, RECUR_DIALECT_KERAS2);
  o.use_bias = 0;
  expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "use_bias");
  o = options(RECUR_LAYER_CUDNN_GRU, 4, 3, RECUR_DIALECT_KERAS2);
  o.reset_after = 0;
  expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "reset_after");
  o = options(RECUR_LAYER_CUDNN_GRU, 4, 3, RECUR_DIALECT_KERAS2);
  rt::make(o);
}

TEST(CApiErrors, CreateTimeMajorKeras3) {
  recur_layer_options o = options(RECUR_LAYER_GRU, 4, 3, RECUR_DIALECT_KERAS3);
  o.time_major = 1;
  expect_option_error(o, RECUR_ERR_UNSUPPORTED, "time_major");
  o.dialect = RECUR_DIALECT_KERAS2;
  rt::make(o);
}

TEST(CApiErrors, CreateArgumentOfAnotherKind) {
  recur_layer_options o = options(RECUR_LAYER_LSTM, 4, 3);
  o.reset_after = 0;
  expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "reset_after");
  for (int32_t type : {RECUR_LAYER_GRU_CELL, RECUR_LAYER_LSTM_CELL}) {
    o = options(type, 4, 3);
    o.return_sequences = 1;
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "return_sequences");
    o = options(type, 4, 3);
    o.stateful = 1;
    o.batch_size = 2;
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "stateful");
  }
}

TEST(CApiErrors, CreateInitializers) {
  struct Field {
    const char* name;
    const char* recur_layer_options::*member;
  };
  const Field fields[] = {{"kernel_initializer", &recur_layer_options::kernel_initializer},
                          {"recurrent_initializer", &recur_layer_options::recurrent_initializer},
                          {"bias_initializer", &recur_layer_options::bias_initializer}};
  for (const Field& f : fields) {
    SCOPED_TRACE(f.name);
    recur_layer_options o = options(RECUR_LAYER_GRU, 4, 3);
    o.*(f.member) = "no_such_initializer";
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, f.name);
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "no_such_initializer");
    o.*(f.member) = "";
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, f.name);
    o.*(f.member) = R"({"class_name": "Orthogonal", "config": {"gain": 1.0)";  // truncated JSON
    expect_option_error(o, RECUR_ERR_PARSE, f.name);
    o.*(f.member) = R"({"class_name": "Orthogonal", "config": {"gain": 1.0, "bogus": 2}})";
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "bogus");
    o.*(f.member) = R"({"class_name": "Constant", "config": {"value": "big"}})";
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "value");
    o.*(f.member) = R"({"config": {}})";
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "class_name");
    o.*(f.member) = R"({"class_name": "RandomUniform", "config": {"seed": -4}})";
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "seed");
    o.*(f.member) = R"({"class_name": "VarianceScaling", "config": {"mode": "fan_sideways"}})";
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "mode");
    // Both spellings are accepted.
    o.*(f.member) = "glorot_uniform";
    rt::make(o);
    o.*(f.member) = R"({"class_name": "GlorotUniform", "config": {"seed": 3}})";
    rt::make(o);
  }
}

TEST(CApiErrors, CreateRegularizers) {
  struct Field {
    const char* name;
    const char* recur_layer_options::*member;
  };
  const Field fields[] = {{"kernel_regularizer", &recur_layer_options::kernel_regularizer},
                          {"recurrent_regularizer", &recur_layer_options::recurrent_regularizer},
                          {"bias_regularizer", &recur_layer_options::bias_regularizer},
                          {"activity_regularizer", &recur_layer_options::activity_regularizer}};
  for (const Field& f : fields) {
    SCOPED_TRACE(f.name);
    recur_layer_options o = options(RECUR_LAYER_LSTM, 4, 3);
    o.*(f.member) = "l3";
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, f.name);
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "l3");
    o.*(f.member) = "{\"class_name\": ";
    expect_option_error(o, RECUR_ERR_PARSE, f.name);
    o.*(f.member) = R"({"class_name": "L2", "config": {"l2": -0.5}})";
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, f.name);
    o.*(f.member) = R"({"class_name": "L2", "config": {"l1": 0.5}})";
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "l1");
    o.*(f.member) = R"({"class_name": "L1L2", "config": {"l1": "x"}})";
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "l1");
    // "l1_l2" by name: Keras 2 only.
    o.*(f.member) = "l1_l2";
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "l1_l2");
    o.dialect = RECUR_DIALECT_KERAS2;
    rt::make(o);
    o.dialect = RECUR_DIALECT_KERAS3;
    o.*(f.member) = R"({"class_name": "L1L2", "config": {"l1": 0.1, "l2": 0.2}})";
    rt::make(o);
  }
}

TEST(CApiErrors, CreateConstraints) {
  struct Field {
    const char* name;
    const char* recur_layer_options::*member;
  };
  const Field fields[] = {{"kernel_constraint", &recur_layer_options::kernel_constraint},
                          {"recurrent_constraint", &recur_layer_options::recurrent_constraint},
                          {"bias_constraint", &recur_layer_options::bias_constraint}};
  for (const Field& f : fields) {
    SCOPED_TRACE(f.name);
    recur_layer_options o = options(RECUR_LAYER_GRU, 4, 3);
    o.*(f.member) = "max_normal";
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, f.name);
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "max_normal");
    o.*(f.member) = R"({"class_name": "MaxNorm", "config": {"max_value": 2.0,)";
    expect_option_error(o, RECUR_ERR_PARSE, f.name);
    o.*(f.member) = R"({"class_name": "MaxNorm", "config": {"max_value": 2.0, "axis": "rows"}})";
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "axis");
    o.*(f.member) = R"({"class_name": "NonNeg", "config": {"strict": true}})";
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "strict");
    o.*(f.member) = R"(["max_norm"])";
    expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, f.name);
    o.*(f.member) = "non_neg";
    rt::make(o);
  }
}

// ------------------------------------------------------------------------------------------
// recur_layer_create_from_json
// ------------------------------------------------------------------------------------------

TEST(CApiErrors, JsonNullArguments) {
  const std::string j = k2_gru();
  EXPECT_RECUR_ERR(recur_layer_create_from_json(nullptr, j.c_str(), 3, RECUR_DIALECT_AUTO, nullptr),
                   RECUR_ERR_INVALID_ARGUMENT, "out");
  EXPECT_CREATE_ERR(created, recur_layer_create_from_json(&created, nullptr, 3, RECUR_DIALECT_AUTO, nullptr),
                    RECUR_ERR_INVALID_ARGUMENT, "json");
}

TEST(CApiErrors, JsonValidConfigsLoad) {
  rt::Layer a = rt::make_json(k2_gru(), 3);
  rt::Layer b = rt::make_json(k3_gru());  // input size from build_config
  recur_layer_info info;
  info.version = RECUR_LAYER_INFO_VERSION;
  ASSERT_RECUR_OK(recur_layer_get_info(a.get(), &info));
  EXPECT_EQ(info.dialect, RECUR_DIALECT_KERAS2);
  ASSERT_RECUR_OK(recur_layer_get_info(b.get(), &info));
  EXPECT_EQ(info.dialect, RECUR_DIALECT_KERAS3);
  EXPECT_EQ(info.input_size, 3);
}

TEST(CApiErrors, JsonMalformed) {
  expect_json_error("", RECUR_ERR_PARSE, "json");
  expect_json_error("{", RECUR_ERR_PARSE, "json");
  expect_json_error(k2_gru() + "}", RECUR_ERR_PARSE, "json");
  expect_json_error(R"({"class_name": "GRU", "config": {"units": 4,}})", RECUR_ERR_PARSE, "json");
  expect_json_error("[1, 2, 3]", RECUR_ERR_PARSE, "json");
  expect_json_error("\"GRU\"", RECUR_ERR_PARSE, "json");
}

TEST(CApiErrors, JsonMissingParts) {
  expect_json_error(R"({"config": {"units": 4}})", RECUR_ERR_PARSE, "class_name");
  expect_json_error(R"({"class_name": 7, "config": {"units": 4}})", RECUR_ERR_PARSE, "class_name");
  expect_json_error(R"({"class_name": "GRU"})", RECUR_ERR_PARSE, "config");
  expect_json_error(R"({"class_name": "GRU", "config": [1]})", RECUR_ERR_PARSE, "config");
  expect_json_error(R"({"class_name": "GRU", "config": {"name": "g"}})", RECUR_ERR_INVALID_ARGUMENT, "units");
}

TEST(CApiErrors, JsonUnknownClassName) {
  expect_json_error(R"({"class_name": "Dense", "config": {"units": 4}})", RECUR_ERR_UNSUPPORTED, "Dense");
  expect_json_error(R"({"class_name": "ConvLSTM1D", "config": {"units": 4}})", RECUR_ERR_UNSUPPORTED, "class_name");
  expect_json_error(R"({"class_name": "Bidirectional", "config": {}})", RECUR_ERR_UNSUPPORTED, "class_name");
}

TEST(CApiErrors, JsonUnknownField) {
  expect_json_error(k2_gru(R"(, "frobnicate": 1)"), RECUR_ERR_INVALID_ARGUMENT, "frobnicate");
  expect_json_error(k3_gru(R"(, "frobnicate": 1)"), RECUR_ERR_INVALID_ARGUMENT, "frobnicate");
  // An argument of another kind: unit_forget_bias is an LSTM argument.
  expect_json_error(k2_gru(R"(, "unit_forget_bias": true)"), RECUR_ERR_INVALID_ARGUMENT, "unit_forget_bias");
  // A GRUCell has no return_sequences.
  expect_json_error(R"({"class_name": "GRUCell", "config": {"units": 4, "return_sequences": true}})",
                    RECUR_ERR_INVALID_ARGUMENT, "return_sequences");
}

// SimpleRNN and SimpleRNNCell take what Keras's classes take: no recurrent_activation, reset_after,
// unit_forget_bias or use_cudnn; Keras 2 drops `implementation`, Keras 3 rejects it; Keras 2's
// SimpleRNN rejects `seed` (its cell and Keras 3 take it).
TEST(CApiErrors, SimpleRnnArguments) {
  for (int32_t type : {RECUR_LAYER_SIMPLE_RNN, RECUR_LAYER_SIMPLE_RNN_CELL}) {
    for (int32_t dialect : {RECUR_DIALECT_KERAS2, RECUR_DIALECT_KERAS3}) {
      recur_layer_options o = options(type, 4, 3, dialect);
      o.recurrent_activation = "sigmoid";
      expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "recurrent_activation");
      o = options(type, 4, 3, dialect);
      o.reset_after = 1;
      expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "reset_after");
      o = options(type, 4, 3, dialect);
      o.unit_forget_bias = 0;
      expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "unit_forget_bias");
      o = options(type, 4, 3, dialect);
      o.implementation = 1;
      if (dialect == RECUR_DIALECT_KERAS3) {
        expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "implementation");
      } else {
        rt::Layer l = rt::make(o);  // Keras 2 drops it
        recur_layer_info info;
        info.version = RECUR_LAYER_INFO_VERSION;
        ASSERT_EQ(recur_layer_get_info(l.get(), &info), RECUR_OK) << recur_last_error();
        EXPECT_EQ(info.implementation, 0);
        EXPECT_EQ(info.num_states, 1);
        EXPECT_EQ(info.type, type);
        o.implementation = 3;
        expect_option_error(o, RECUR_ERR_INVALID_ARGUMENT, "implementation");
      }
    }
  }
  const std::string k2 = R"({"class_name": "SimpleRNN", "config": {"units": 4, "time_major": false)";
  const std::string k3 = R"({"module": "keras.layers", "class_name": "SimpleRNN", "config": {"units": 4)";
  const std::string k3_end = R"(}, "registered_name": null, "build_config": {"input_shape": [null, 5, 3]}})";
  for (const char* field : {R"("recurrent_activation": "sigmoid")", R"("reset_after": true)",
                            R"("unit_forget_bias": true)"}) {
    expect_json_error(k2 + ", " + field + "}}", RECUR_ERR_INVALID_ARGUMENT, "has no argument");
    expect_json_error(k3 + ", " + field + k3_end, RECUR_ERR_INVALID_ARGUMENT, "has no argument");
  }
  expect_json_error(k2 + R"(, "seed": 3}})", RECUR_ERR_INVALID_ARGUMENT, "'seed'");
  expect_json_error(k3 + R"(, "implementation": 2)" + k3_end, RECUR_ERR_INVALID_ARGUMENT, "'implementation'");
  expect_json_error(k3 + R"(, "use_cudnn": "auto")" + k3_end, RECUR_ERR_INVALID_ARGUMENT, "'use_cudnn'");
  expect_json_error(R"({"class_name": "SimpleRNNCell", "config": {"units": 4, "return_sequences": true}})",
                    RECUR_ERR_INVALID_ARGUMENT, "return_sequences");
  // Accepted: Keras 2's implementation (dropped), the Keras 2 cell's seed, Keras 3's seed.
  rt::make_json(k2 + R"(, "implementation": 1}})", 3);
  rt::make_json(R"({"class_name": "SimpleRNNCell", "config": {"units": 4, "seed": 5, "implementation": 2}})", 3,
                RECUR_DIALECT_KERAS2);
  rt::make_json(k3 + R"(, "seed": 7)" + k3_end);
}

TEST(CApiErrors, JsonWrongValueTypes) {
  expect_json_error(k2_gru(R"(, "return_sequences": "yes")"), RECUR_ERR_INVALID_ARGUMENT, "return_sequences");
  expect_json_error(R"({"class_name": "GRU", "config": {"units": "four"}})", RECUR_ERR_INVALID_ARGUMENT, "units");
  expect_json_error(R"({"class_name": "GRU", "config": {"units": 4.5}})", RECUR_ERR_INVALID_ARGUMENT, "units");
  expect_json_error(R"({"class_name": "GRU", "config": {"units": 0}})", RECUR_ERR_INVALID_ARGUMENT, "units");
  expect_json_error(R"({"class_name": "GRU", "config": {"units": 99999999999}})", RECUR_ERR_INVALID_ARGUMENT,
                    "units");
  expect_json_error(k2_gru(R"(, "activation": {"class_name": "MyAct"})"), RECUR_ERR_INVALID_ARGUMENT, "activation");
  expect_json_error(k2_gru(R"(, "activation": "hard_silu")"), RECUR_ERR_INVALID_ARGUMENT, "hard_silu");
  expect_json_error(k2_gru(R"(, "activation": "gelu_new")"), RECUR_ERR_INVALID_ARGUMENT, "gelu_new");
  expect_json_error(k2_gru(R"(, "dropout": "half")"), RECUR_ERR_INVALID_ARGUMENT, "dropout");
  expect_json_error(R"({"class_name": "GRU", "config": {"units": 4, "implementation": 3}})",
                    RECUR_ERR_INVALID_ARGUMENT, "implementation");
  expect_json_error(k2_gru(R"(, "kernel_initializer": {"class_name": "Nope", "config": {}})"),
                    RECUR_ERR_INVALID_ARGUMENT, "kernel_initializer");
  expect_json_error(k2_gru(R"(, "kernel_initializer": null)"), RECUR_ERR_INVALID_ARGUMENT, "kernel_initializer");
  expect_json_error(k2_gru(R"(, "bias_regularizer": {"class_name": "L3", "config": {}})"),
                    RECUR_ERR_INVALID_ARGUMENT, "bias_regularizer");
  expect_json_error(k2_gru(R"(, "recurrent_constraint": {"class_name": "Clip", "config": {}})"),
                    RECUR_ERR_INVALID_ARGUMENT, "recurrent_constraint");
  expect_json_error(k2_gru(R"(, "dtype": 32)"), RECUR_ERR_INVALID_ARGUMENT, "dtype");
}

// A message names the field and quotes the value, but a value of megabytes is quoted in part, and
// control bytes (a newline in a field name) are escaped: messages end up in logs.
TEST(CApiErrors, JsonMessagesQuoteHugeValuesInPart) {
  const std::string big(1 << 20, 'x');
  std::string list = "[0";
  for (int i = 1; i < 100000; ++i) list += "," + std::to_string(i);
  list += "]";
  const struct {
    std::string json;
    recur_status code;
    const char* needle;
  } cases[] = {
      {R"({"class_name": "GRU", "config": {"units": )" + list + "}}", RECUR_ERR_INVALID_ARGUMENT, "units"},
      {R"({"class_name": ")" + big + R"(", "config": {"units": 4}})", RECUR_ERR_UNSUPPORTED, "class_name"},
      {k2_gru(R"(, ")" + big + R"(": 1)"), RECUR_ERR_INVALID_ARGUMENT, "has no argument"},
      {k2_gru(R"(, "activation": ")" + big + R"(")"), RECUR_ERR_INVALID_ARGUMENT, "unknown activation"},
      {k2_gru(R"(, "activation": {"class_name": ")" + big + R"("})"), RECUR_ERR_INVALID_ARGUMENT, "activation"},
      {k2_gru(R"(, "kernel_initializer": ")" + big + R"(")"), RECUR_ERR_INVALID_ARGUMENT, "kernel_initializer"},
      {k2_gru(R"(, "kernel_constraint": {"class_name": ")" + big + R"("})"), RECUR_ERR_INVALID_ARGUMENT,
       "kernel_constraint"},
      {k2_gru(R"(, "kernel_regularizer": {"class_name": "L2", "config": {")" + big + R"(": 1}})"),
       RECUR_ERR_INVALID_ARGUMENT, "kernel_regularizer"},
      {k2_gru(R"(, "dtype": ")" + big + R"(")"), RECUR_ERR_UNSUPPORTED, "dtype"},
      {k2_gru(R"(, "reset_after": [")" + big + R"("])"), RECUR_ERR_INVALID_ARGUMENT, "reset_after"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.json.substr(0, 80));
    EXPECT_CREATE_ERR(created, recur_layer_create_from_json(&created, c.json.c_str(), 3, RECUR_DIALECT_AUTO, nullptr),
                      c.code, c.needle);
    const std::string m = recur_last_error();
    EXPECT_LE(m.size(), 1024u) << m.substr(0, 200);
    EXPECT_NE(m.find("..."), std::string::npos) << m.substr(0, 200);
  }
  EXPECT_CREATE_ERR(created,
                    recur_layer_create_from_json(&created, k2_gru(R"(, "a\u0001\nb": 1)").c_str(), 3,
                                                 RECUR_DIALECT_AUTO, nullptr),
                    RECUR_ERR_INVALID_ARGUMENT, "has no argument 'a\\x01\\x0Ab'");
}

TEST(CApiErrors, JsonKeras3RejectsKeras2Arguments) {
  // time_major in a Keras 3 config.
  expect_json_error(R"({"class_name": "GRU", "config": {"units": 4, "time_major": false}})", RECUR_ERR_UNSUPPORTED,
                    "time_major", 3, RECUR_DIALECT_KERAS3);
  expect_json_error(k3_gru(R"(, "time_major": true)"), RECUR_ERR_UNSUPPORTED, "time_major");
  // CuDNN layers in Keras 3.
  expect_json_error(R"({"class_name": "CuDNNGRU", "config": {"units": 4}})", RECUR_ERR_UNSUPPORTED, "CuDNN", 3,
                    RECUR_DIALECT_KERAS3);
  expect_json_error(R"({"class_name": "CuDNNLSTM", "config": {"units": 4}})", RECUR_ERR_UNSUPPORTED, "Keras 3", 3,
                    RECUR_DIALECT_KERAS3);
  // The same CuDNN config loads as Keras 2 (detected from the class name).
  rt::make_json(R"({"class_name": "CuDNNGRU", "config": {"units": 4}})", 3);
  // "l1_l2" by name in a Keras 3 config.
  expect_json_error(k3_gru(R"(, "kernel_regularizer": "l1_l2")"), RECUR_ERR_INVALID_ARGUMENT, "l1_l2");
  rt::make_json(k2_gru(R"(, "kernel_regularizer": "l1_l2")"), 3);
}

TEST(CApiErrors, JsonNonFloat32Dtype) {
  expect_json_error(k2_gru().replace(k2_gru().find("\"float32\""), 9, "\"float16\""), RECUR_ERR_UNSUPPORTED, "dtype");
  expect_json_error(R"({"class_name": "LSTM", "config": {"units": 4, "dtype": "float64"}})", RECUR_ERR_UNSUPPORTED,
                    "float64");
  expect_json_error(
      R"({"class_name": "LSTM", "config": {"units": 4, "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "mixed_float16"}, "registered_name": null}}})",
      RECUR_ERR_UNSUPPORTED, "mixed_float16");
}

// A field of the wrong type inside a dtype policy, an initializer or a regularizer is the config's
// error, named by its path (it was once a JSON type error escaping as RECUR_ERR_INTERNAL).
TEST(CApiErrors, JsonNestedFieldsOfTheWrongType) {
  auto k3_dtype = [](const std::string& policy) {
    std::string j = k3_gru();
    const std::string from = R"({"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null})";
    return j.replace(j.find(from), from.size(), policy);
  };
  expect_json_error(k3_dtype(R"({"module": "keras", "class_name": "DTypePolicy", "config": {"name": 32}})"),
                    RECUR_ERR_INVALID_ARGUMENT, "dtype.config.name: expected a string");
  expect_json_error(k3_dtype(R"({"class_name": "DTypePolicy", "config": {"name": ["float32"]}})"),
                    RECUR_ERR_INVALID_ARGUMENT, "dtype.config.name");
  expect_json_error(k3_dtype(R"({"class_name": "DTypePolicy", "config": "float32"})"), RECUR_ERR_INVALID_ARGUMENT,
                    "dtype.config: expected an object");
  expect_json_error(k3_dtype(R"({"class_name": 7, "config": {"name": "float32"}})"), RECUR_ERR_INVALID_ARGUMENT,
                    "dtype.class_name: expected a string");
  // Keras's DTypePolicy(name=None) is the global policy, float32.
  rt::make_json(k3_dtype(R"({"class_name": "DTypePolicy", "config": {"name": null}})"), 3);
  expect_json_error(k2_gru(R"(, "kernel_initializer": {"class_name": "VarianceScaling", "config": {"mode": 1}})"),
                    RECUR_ERR_INVALID_ARGUMENT, "kernel_initializer.mode: expected a string");
  expect_json_error(
      k2_gru(R"(, "kernel_initializer": {"class_name": "VarianceScaling", "config": {"distribution": false}})"),
      RECUR_ERR_INVALID_ARGUMENT, "kernel_initializer.distribution: expected a string");
  expect_json_error(k2_gru(R"(, "kernel_regularizer": {"class_name": "OrthogonalRegularizer", "config": {"mode": 2}})"),
                    RECUR_ERR_INVALID_ARGUMENT, "kernel_regularizer.mode: expected a string");
}

TEST(CApiErrors, JsonInputSizeAndDialectArguments) {
  const std::string no_shape = R"({"class_name": "LSTM", "config": {"units": 4}})";
  expect_json_error(no_shape, RECUR_ERR_INVALID_ARGUMENT, "input_size", 0);
  expect_json_error(no_shape, RECUR_ERR_INVALID_ARGUMENT, "input_size", -5);
  // build_config records 3 features; 7 disagrees.
  expect_json_error(k3_gru(), RECUR_ERR_SHAPE, "input_size", 7);
  expect_json_error(no_shape, RECUR_ERR_INVALID_ARGUMENT, "dialect", 3, 1);
  expect_json_error(no_shape, RECUR_ERR_INVALID_ARGUMENT, "dialect", 3, 9);
  expect_json_error(no_shape, RECUR_ERR_INVALID_ARGUMENT, "keras_version", 3, RECUR_DIALECT_KERAS2, "3.1.0");
  expect_json_error(no_shape, RECUR_ERR_INVALID_ARGUMENT, "keras_version", 3, RECUR_DIALECT_KERAS3, "x.y");
}

TEST(CApiErrors, JsonStatefulNeedsBatchSize) {
  expect_json_error(R"({"class_name": "GRU", "config": {"units": 4, "stateful": true}})", RECUR_ERR_INVALID_ARGUMENT,
                    "batch_size", 3, RECUR_DIALECT_KERAS3);
  expect_json_error(k2_gru(R"(, "stateful": true, "batch_input_shape": [null, 5, 3])"), RECUR_ERR_INVALID_ARGUMENT,
                    "batch_size");
  rt::make_json(k2_gru(R"(, "stateful": true, "batch_input_shape": [2, 5, 3])"));
}

TEST(CApiErrors, JsonNumConstantsUnsupported) {
  expect_json_error(k2_gru(R"(, "num_constants": 1)"), RECUR_ERR_UNSUPPORTED, "num_constants");
}
