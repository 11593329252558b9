// SPDX-License-Identifier: Apache-2.0
// Layer configs: Keras JSON in both dialects (keras_semantics.md §10.4), dialect detection,
// input/batch size from the recorded shapes, validation errors, defaults per dialect (§1.4, §2.3).
// The JSON samples are written by hand in the shape Keras serializes them.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <stdexcept>
#include <vector>
#include <string>

#include "recur/config.hpp"
#include "recur/error.hpp"
#include "recur/keras_json.hpp"

namespace {

using recur::Dialect;
using recur::DialectInfo;
using recur::Error;
using recur::InitializerSpec;
using recur::LayerConfig;
using recur::LayerKind;
using Code = recur::Error::Code;

// tf.keras 2.x `model.to_json()` / h5 `model_config` layer entry: no module/registered_name,
// batch_input_shape on the first layer, time_major and implementation present.
const char* kKeras2Gru = R"({
  "class_name": "GRU",
  "config": {
    "name": "gru", "trainable": true, "batch_input_shape": [null, 10, 8], "dtype": "float32",
    "return_sequences": true, "return_state": false, "go_backwards": false, "stateful": false,
    "unroll": false, "time_major": false, "units": 16, "activation": "tanh",
    "recurrent_activation": "sigmoid", "use_bias": true,
    "kernel_initializer": {"class_name": "GlorotUniform", "config": {"seed": null}},
    "recurrent_initializer": {"class_name": "Orthogonal", "config": {"gain": 1.0, "seed": null}},
    "bias_initializer": {"class_name": "Zeros", "config": {}},
    "kernel_regularizer": null, "recurrent_regularizer": null, "bias_regularizer": null,
    "activity_regularizer": null, "kernel_constraint": null, "recurrent_constraint": null,
    "bias_constraint": null, "dropout": 0.0, "recurrent_dropout": 0.0, "implementation": 2,
    "reset_after": true
  }
})";

// A tf.compat.v1-style GRU as tf.keras writes it: hard_sigmoid, reset_after=False, impl 1.
const char* kKeras2GruV1 = R"({
  "class_name": "GRU",
  "config": {
    "name": "gru_1", "trainable": true, "batch_input_shape": [null, null, 3], "dtype": "float32",
    "return_sequences": false, "return_state": true, "go_backwards": true, "stateful": false,
    "unroll": false, "time_major": false, "units": 4, "activation": "tanh",
    "recurrent_activation": "hard_sigmoid", "use_bias": true,
    "kernel_initializer": {"class_name": "VarianceScaling",
                           "config": {"scale": 2.0, "mode": "fan_out", "distribution": "uniform", "seed": 7}},
    "recurrent_initializer": {"class_name": "Orthogonal", "config": {"gain": 0.5, "seed": null}},
    "bias_initializer": {"class_name": "Constant", "config": {"value": 0.1}},
    "kernel_regularizer": {"class_name": "L1L2", "config": {"l1": 0.0, "l2": 0.001}},
    "recurrent_regularizer": null, "bias_regularizer": null, "activity_regularizer": null,
    "kernel_constraint": {"class_name": "MaxNorm", "config": {"max_value": 3, "axis": 0}},
    "recurrent_constraint": null, "bias_constraint": null,
    "dropout": 0.25, "recurrent_dropout": 0.0, "implementation": 1, "reset_after": false
  }
})";

// Keras 3 `.keras` config.json layer entry: module/registered_name, DTypePolicy object, seed,
// build_config; no implementation or time_major.
const char* kKeras3Gru = R"({
  "module": "keras.layers",
  "class_name": "GRU",
  "config": {
    "name": "gru", "trainable": true,
    "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"},
              "registered_name": null},
    "return_sequences": false, "return_state": false, "go_backwards": false, "stateful": false,
    "unroll": false, "zero_output_for_mask": false, "units": 32, "activation": "tanh",
    "recurrent_activation": "sigmoid", "use_bias": true,
    "kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform",
                           "config": {"seed": null}, "registered_name": null},
    "recurrent_initializer": {"module": "keras.initializers", "class_name": "Orthogonal",
                              "config": {"gain": 1.0, "seed": null}, "registered_name": null},
    "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {},
                         "registered_name": null},
    "kernel_regularizer": null, "recurrent_regularizer": null, "bias_regularizer": null,
    "activity_regularizer": {"module": "keras.regularizers", "class_name": "L2", "config": {"l2": 0.02},
                             "registered_name": null},
    "kernel_constraint": null, "recurrent_constraint": null, "bias_constraint": null,
    "dropout": 0.1, "recurrent_dropout": 0.2, "reset_after": true, "seed": 1234
  },
  "registered_name": null,
  "build_config": {"input_shape": [null, 10, 8]}
})";

const char* kKeras2CudnnLstm = R"({
  "class_name": "CuDNNLSTM",
  "config": {
    "name": "cu_dnnlstm", "trainable": true, "batch_input_shape": [null, 5, 6], "dtype": "float32",
    "units": 12,
    "kernel_initializer": {"class_name": "GlorotUniform", "config": {"seed": null}},
    "recurrent_initializer": {"class_name": "Orthogonal", "config": {"gain": 1.0, "seed": null}},
    "bias_initializer": {"class_name": "Zeros", "config": {}},
    "unit_forget_bias": true, "kernel_regularizer": null, "recurrent_regularizer": null,
    "bias_regularizer": null, "activity_regularizer": null, "kernel_constraint": null,
    "recurrent_constraint": null, "bias_constraint": null, "return_sequences": true,
    "return_state": false, "go_backwards": false, "stateful": false, "time_major": false
  }
})";

// Replaces the first occurrence of `from` (which must exist) in `json`.
std::string with(std::string json, const std::string& from, const std::string& to) {
  const auto pos = json.find(from);
  if (pos == std::string::npos) throw std::logic_error("test sample lacks: " + from);
  return json.replace(pos, from.size(), to);
}

// Expects parse_layer_json to throw `code` with every `needle` in the message.
void expect_error(const std::string& json, Code code, std::initializer_list<const char*> needles,
                  std::optional<Dialect> dialect = std::nullopt, int input_size = 0) {
  try {
    recur::parse_layer_json(json, input_size, dialect);
    ADD_FAILURE() << "no error for: " << json.substr(0, 200);
  } catch (const Error& e) {
    EXPECT_EQ(static_cast<int>(e.code()), static_cast<int>(code)) << e.what();
    for (const char* n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

void expect_glorot_uniform(const InitializerSpec& s) {
  EXPECT_EQ(s.kind, InitializerSpec::Kind::variance_scaling);
  EXPECT_EQ(s.scale, 1.0);
  EXPECT_EQ(s.mode, InitializerSpec::Mode::fan_avg);
  EXPECT_EQ(s.distribution, InitializerSpec::Distribution::uniform);
  EXPECT_FALSE(s.seed.has_value());
}

}  // namespace

TEST(ConfigJson, Keras2GruParses) {
  const LayerConfig c = recur::parse_layer_json(kKeras2Gru, 0, std::nullopt);
  EXPECT_EQ(c.dialect.dialect, Dialect::keras2);
  EXPECT_EQ(c.kind, LayerKind::gru);
  EXPECT_EQ(c.name, "gru");
  EXPECT_TRUE(c.trainable);
  EXPECT_EQ(c.units, 16);
  EXPECT_EQ(c.input_size, 8);  // from batch_input_shape
  EXPECT_TRUE(c.return_sequences);
  EXPECT_FALSE(c.return_state);
  EXPECT_FALSE(c.time_major);
  EXPECT_EQ(c.activation.kind, recur::Activation::tanh);
  EXPECT_EQ(c.recurrent_activation.kind, recur::Activation::sigmoid);
  EXPECT_TRUE(c.reset_after);
  EXPECT_TRUE(c.use_bias);
  EXPECT_EQ(c.implementation, 2);
  EXPECT_EQ(c.dropout, 0.0f);
  EXPECT_EQ(c.batch_size, 0);
  expect_glorot_uniform(c.kernel_initializer);
  EXPECT_EQ(c.recurrent_initializer.kind, InitializerSpec::Kind::orthogonal);
  EXPECT_EQ(c.recurrent_initializer.gain, 1.0);
  EXPECT_EQ(c.bias_initializer.kind, InitializerSpec::Kind::zeros);
  EXPECT_FALSE(c.kernel_regularizer.active());
  EXPECT_FALSE(c.activity_regularizer.active());
  EXPECT_FALSE(c.kernel_constraint.active());
  EXPECT_FALSE(c.seed.has_value());
  EXPECT_TRUE(c.keras2_fused_path());
}

TEST(ConfigJson, Keras2GruV1StyleParses) {
  const LayerConfig c = recur::parse_layer_json(kKeras2GruV1, 0, std::nullopt);
  EXPECT_EQ(c.dialect.dialect, Dialect::keras2);
  EXPECT_EQ(c.units, 4);
  EXPECT_EQ(c.input_size, 3);
  EXPECT_EQ(c.recurrent_activation.kind, recur::Activation::hard_sigmoid);
  EXPECT_EQ(c.recurrent_activation.hard_sigmoid, recur::HardSigmoid::keras2);
  EXPECT_FALSE(c.reset_after);
  EXPECT_EQ(c.implementation, 1);
  EXPECT_TRUE(c.return_state);
  EXPECT_TRUE(c.go_backwards);
  EXPECT_FLOAT_EQ(c.dropout, 0.25f);
  EXPECT_EQ(c.kernel_initializer.kind, InitializerSpec::Kind::variance_scaling);
  EXPECT_EQ(c.kernel_initializer.scale, 2.0);
  EXPECT_EQ(c.kernel_initializer.mode, InitializerSpec::Mode::fan_out);
  EXPECT_EQ(c.kernel_initializer.distribution, InitializerSpec::Distribution::uniform);
  ASSERT_TRUE(c.kernel_initializer.seed.has_value());
  EXPECT_EQ(*c.kernel_initializer.seed, 7u);
  EXPECT_EQ(c.recurrent_initializer.gain, 0.5);
  EXPECT_EQ(c.bias_initializer.kind, InitializerSpec::Kind::constant);
  EXPECT_DOUBLE_EQ(c.bias_initializer.value, 0.1);
  EXPECT_EQ(c.kernel_regularizer.kind, recur::RegularizerSpec::Kind::l1l2);
  EXPECT_EQ(c.kernel_regularizer.l1, 0.0f);
  EXPECT_FLOAT_EQ(c.kernel_regularizer.l2, 0.001f);
  EXPECT_EQ(c.kernel_constraint.kind, recur::ConstraintSpec::Kind::max_norm);
  EXPECT_EQ(c.kernel_constraint.max_value, 3.0f);
  EXPECT_FALSE(c.keras2_fused_path());
}

TEST(ConfigJson, Keras3GruParses) {
  const LayerConfig c = recur::parse_layer_json(kKeras3Gru, 0, std::nullopt);
  EXPECT_EQ(c.dialect.dialect, Dialect::keras3);
  EXPECT_EQ(c.dialect.major, 3);
  EXPECT_EQ(c.kind, LayerKind::gru);
  EXPECT_EQ(c.units, 32);
  EXPECT_EQ(c.input_size, 8);  // from build_config
  EXPECT_FALSE(c.return_sequences);
  ASSERT_TRUE(c.seed.has_value());
  EXPECT_EQ(*c.seed, 1234u);
  EXPECT_FLOAT_EQ(c.dropout, 0.1f);
  EXPECT_FLOAT_EQ(c.recurrent_dropout, 0.2f);
  EXPECT_EQ(c.implementation, 2);  // not serialized by Keras 3
  EXPECT_EQ(c.effective_implementation(), 1);
  expect_glorot_uniform(c.kernel_initializer);
  EXPECT_EQ(c.activity_regularizer.kind, recur::RegularizerSpec::Kind::l1l2);
  EXPECT_FLOAT_EQ(c.activity_regularizer.l2, 0.02f);
  EXPECT_EQ(c.activity_regularizer.l1, 0.0f);
  EXPECT_EQ(c.recurrent_activation.hard_sigmoid, recur::HardSigmoid::keras3);
}

TEST(ConfigJson, Keras2CudnnLstmParses) {
  const LayerConfig c = recur::parse_layer_json(kKeras2CudnnLstm, 0, std::nullopt);
  EXPECT_EQ(c.dialect.dialect, Dialect::keras2);
  EXPECT_EQ(c.kind, LayerKind::cudnn_lstm);
  EXPECT_EQ(c.units, 12);
  EXPECT_EQ(c.input_size, 6);
  EXPECT_TRUE(c.unit_forget_bias);
  EXPECT_TRUE(c.return_sequences);
  EXPECT_EQ(c.activation.kind, recur::Activation::tanh);
  EXPECT_EQ(c.recurrent_activation.kind, recur::Activation::sigmoid);
  // CuDNN layers have no activation or dropout arguments.
  expect_error(with(kKeras2CudnnLstm, R"("units": 12,)", R"("units": 12, "activation": "relu",)"),
               Code::invalid_argument, {"activation"});
  expect_error(with(kKeras2CudnnLstm, R"("units": 12,)", R"("units": 12, "dropout": 0.5,)"), Code::invalid_argument,
               {"dropout"});
}

TEST(ConfigJson, DialectDetectionAndOverride) {
  // Nothing tells: Keras 3.
  const std::string bare = R"({"class_name": "LSTM", "config": {"units": 3}})";
  EXPECT_EQ(recur::parse_layer_json(bare, 2, std::nullopt).dialect.dialect, Dialect::keras3);
  EXPECT_EQ(recur::parse_layer_json(bare, 2, Dialect::keras2).dialect.dialect, Dialect::keras2);
  // A Keras 2-only field.
  EXPECT_EQ(recur::parse_layer_json(R"({"class_name": "LSTM", "config": {"units": 3, "time_major": false}})", 2,
                                    std::nullopt)
                .dialect.dialect,
            Dialect::keras2);
  EXPECT_EQ(
      recur::parse_layer_json(R"({"class_name": "GRU", "config": {"units": 3, "implementation": 1}})", 2, std::nullopt)
          .dialect.dialect,
      Dialect::keras2);
  // Keras 3 markers.
  EXPECT_EQ(recur::parse_layer_json(R"({"class_name": "GRU", "config": {"units": 3, "seed": 5}})", 2, std::nullopt)
                .dialect.dialect,
            Dialect::keras3);
  // An explicit Keras version picks the formulas inside the dialect.
  const LayerConfig v = recur::parse_layer_json(bare, 2, Dialect::keras3, std::string_view("3.0.5"));
  EXPECT_EQ(v.dialect.minor, 0);
  const LayerConfig hs = recur::parse_layer_json(
      R"({"class_name": "GRU", "config": {"units": 3, "recurrent_activation": "hard_sigmoid"}})", 2, Dialect::keras3,
      std::string_view("3.0.5"));
  EXPECT_EQ(hs.recurrent_activation.hard_sigmoid, recur::HardSigmoid::keras3_0);
  EXPECT_THROW(recur::parse_layer_json(bare, 2, Dialect::keras3, std::string_view("2.15.0")), Error);
}

TEST(ConfigJson, InputSizeArgument) {
  // Given explicitly when the config records no shape.
  EXPECT_EQ(recur::parse_layer_json(R"({"class_name": "GRU", "config": {"units": 3}})", 5, std::nullopt).input_size, 5);
  // Agreeing with the recorded shape is fine; disagreeing is a shape error.
  EXPECT_EQ(recur::parse_layer_json(kKeras2Gru, 8, std::nullopt).input_size, 8);
  expect_error(kKeras2Gru, Code::shape, {"input_size"}, std::nullopt, 9);
  expect_error(kKeras3Gru, Code::shape, {"input_size"}, std::nullopt, 7);
  // Neither given nor recorded.
  expect_error(R"({"class_name": "GRU", "config": {"units": 3}})", Code::invalid_argument, {"input_size"});
  expect_error(with(kKeras2Gru, "[null, 10, 8]", "[null, 10, null]"), Code::invalid_argument, {"input_size"});
}

TEST(ConfigJson, StatefulBatchSizeFromShape) {
  std::string k2 = with(kKeras2Gru, R"("stateful": false)", R"("stateful": true)");
  k2 = with(k2, "[null, 10, 8]", "[4, 10, 8]");
  EXPECT_EQ(recur::parse_layer_json(k2, 0, std::nullopt).batch_size, 4);
  // time_major: the recorded shape is (T, B, F), so the batch is axis 1.
  std::string tm = with(k2, R"("time_major": false)", R"("time_major": true)");
  tm = with(tm, "[4, 10, 8]", "[10, 4, 8]");
  const LayerConfig t = recur::parse_layer_json(tm, 0, std::nullopt);
  EXPECT_TRUE(t.time_major);
  EXPECT_EQ(t.batch_size, 4);
  // Keras 3: build_config.
  std::string k3 = with(kKeras3Gru, R"("stateful": false)", R"("stateful": true)");
  k3 = with(k3, "[null, 10, 8]", "[6, 10, 8]");
  EXPECT_EQ(recur::parse_layer_json(k3, 0, std::nullopt).batch_size, 6);
  // Not stateful: the batch size is not kept.
  EXPECT_EQ(recur::parse_layer_json(with(kKeras2Gru, "[null, 10, 8]", "[4, 10, 8]"), 0, std::nullopt).batch_size, 0);
  // Stateful without a known batch size.
  expect_error(with(kKeras2Gru, R"("stateful": false)", R"("stateful": true)"), Code::invalid_argument,
               {"batch_size"});
}

TEST(ConfigJson, UnknownFieldRejected) {
  expect_error(with(kKeras2Gru, R"("units": 16,)", R"("units": 16, "foo": 1,)"), Code::invalid_argument,
               {"foo", "GRU"});
  expect_error(with(kKeras3Gru, R"("units": 32,)", R"("units": 32, "bar": true,)"), Code::invalid_argument, {"bar"});
  // LSTM has no reset_after; GRU has no unit_forget_bias.
  expect_error(R"({"class_name": "LSTM", "config": {"units": 3, "reset_after": true}})", Code::invalid_argument,
               {"reset_after"}, std::nullopt, 2);
  expect_error(R"({"class_name": "GRU", "config": {"units": 3, "unit_forget_bias": true}})", Code::invalid_argument,
               {"unit_forget_bias"}, std::nullopt, 2);
}

TEST(ConfigJson, Keras3RejectsKeras2Arguments) {
  // time_major (even False) and batch_input_shape break Keras 3 loading (keras#20750, keras#20106).
  expect_error(with(kKeras3Gru, R"("units": 32,)", R"("units": 32, "time_major": false,)"), Code::unsupported,
               {"time_major"});
  expect_error(with(kKeras3Gru, R"("units": 32,)", R"("units": 32, "time_major": true,)"), Code::unsupported,
               {"time_major"});
  expect_error(kKeras2Gru, Code::unsupported, {}, Dialect::keras3);
  expect_error(with(kKeras3Gru, R"("units": 32,)", R"("units": 32, "batch_input_shape": [null, 10, 8],)"),
               Code::unsupported, {"batch_input_shape"});
}

TEST(ConfigJson, CudnnRejectedInKeras3) {
  expect_error(kKeras2CudnnLstm, Code::unsupported, {"CuDNNLSTM"}, Dialect::keras3);
  expect_error(R"({"class_name": "CuDNNGRU", "config": {"units": 3}})", Code::unsupported, {"CuDNNGRU"},
               Dialect::keras3, 2);
  EXPECT_EQ(recur::parse_layer_json(R"({"class_name": "CuDNNGRU", "config": {"units": 3}})", 2, std::nullopt).kind,
            LayerKind::cudnn_gru);
}

TEST(ConfigJson, DtypeChecks) {
  expect_error(with(kKeras2Gru, R"("dtype": "float32")", R"("dtype": "float16")"), Code::unsupported, {"dtype"});
  expect_error(with(kKeras3Gru, R"("config": {"name": "float32"})", R"("config": {"name": "mixed_float16"})"),
               Code::unsupported, {"dtype", "mixed_float16"});
  expect_error(with(kKeras2Gru, R"("dtype": "float32")", R"("dtype": 32)"), Code::invalid_argument, {"dtype"});
  EXPECT_NO_THROW(recur::parse_layer_json(with(kKeras2Gru, R"("dtype": "float32")", R"("dtype": null)"), 0,
                                          std::nullopt));
}

TEST(ConfigJson, UnitsErrors) {
  expect_error(with(kKeras2Gru, R"("units": 16)", R"("units": 0)"), Code::invalid_argument, {"units"});
  expect_error(with(kKeras3Gru, R"("units": 32)", R"("units": -4)"), Code::invalid_argument, {"units"});
  expect_error(with(kKeras3Gru, R"("units": 32)", R"("units": 2.5)"), Code::invalid_argument, {"units"});
  expect_error(with(kKeras3Gru, R"("units": 32)", R"("units": "32")"), Code::invalid_argument, {"units"});
  expect_error(R"({"class_name": "GRU", "config": {"name": "g"}})", Code::invalid_argument, {"units"}, std::nullopt,
               3);
  EXPECT_EQ(recur::parse_layer_json(with(kKeras3Gru, R"("units": 32)", R"("units": 32.0)"), 0, std::nullopt).units, 32);
}

TEST(ConfigJson, MalformedJsonIsParseError) {
  for (const char* bad : {"", "{", R"({"class_name": "GRU", "config": {"units": 3,}})", "[1, 2]", "null",
                          R"({"config": {"units": 3}})", R"({"class_name": "GRU"})",
                          R"({"class_name": "GRU", "config": [1]})"}) {
    try {
      recur::parse_layer_json(bad, 3, std::nullopt);
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Code::parse) << bad << ": " << e.what();
    }
  }
  expect_error(R"({"class_name": "Dense", "config": {"units": 3}})", Code::unsupported, {"Dense"}, std::nullopt, 3);
}

TEST(ConfigJson, DropoutClippedToUnitInterval) {
  const auto c1 = recur::parse_layer_json(
      with(with(kKeras2Gru, R"("dropout": 0.0)", R"("dropout": 1.5)"), R"("recurrent_dropout": 0.0)",
           R"("recurrent_dropout": -0.3)"),
      0, std::nullopt);
  EXPECT_EQ(c1.dropout, 1.0f);
  EXPECT_EQ(c1.recurrent_dropout, 0.0f);
  const auto c2 = recur::parse_layer_json(with(kKeras3Gru, R"("dropout": 0.1)", R"("dropout": -2)"), 0, std::nullopt);
  EXPECT_EQ(c2.dropout, 0.0f);
  expect_error(with(kKeras3Gru, R"("dropout": 0.1)", R"("dropout": "high")"), Code::invalid_argument, {"dropout"});
  // validate() refuses NaN rates set directly.
  LayerConfig c = LayerConfig::defaults(LayerKind::gru, DialectInfo::latest(Dialect::keras3));
  c.units = 2;
  c.input_size = 2;
  c.dropout = std::nanf("");
  EXPECT_THROW(c.validate(), Error);
}

TEST(ConfigJson, ImplementationZeroIsOneInKeras2) {
  const auto c = recur::parse_layer_json(with(kKeras2Gru, R"("implementation": 2)", R"("implementation": 0)"), 0,
                                         std::nullopt);
  EXPECT_EQ(c.implementation, 1);
  expect_error(with(kKeras2Gru, R"("implementation": 2)", R"("implementation": 3)"), Code::invalid_argument,
               {"implementation"});
}

TEST(ConfigJson, NullActivationIsLinear) {
  const auto c = recur::parse_layer_json(
      with(with(kKeras2Gru, R"("activation": "tanh")", R"("activation": null)"), R"("recurrent_activation": "sigmoid")",
           R"("recurrent_activation": null)"),
      0, std::nullopt);
  EXPECT_EQ(c.activation.kind, recur::Activation::linear);
  EXPECT_EQ(c.recurrent_activation.kind, recur::Activation::linear);
  expect_error(with(kKeras3Gru, R"("activation": "tanh")", R"("activation": "celu_x")"), Code::invalid_argument,
               {"activation", "celu_x"});
  // A Keras 3-only activation in a Keras 2 config.
  expect_error(with(kKeras2Gru, R"("activation": "tanh")", R"("activation": "hard_silu")"), Code::invalid_argument,
               {"activation", "hard_silu"});
  expect_error(with(kKeras3Gru, R"("activation": "tanh")", R"("activation": {"class_name": "Foo"})"),
               Code::invalid_argument, {"activation"});
}

TEST(ConfigJson, BadValueTypesAndSeeds) {
  expect_error(with(kKeras2Gru, R"("return_sequences": true)", R"("return_sequences": "yes")"),
               Code::invalid_argument, {"return_sequences"});
  expect_error(with(kKeras3Gru, R"("seed": 1234)", R"("seed": -1)"), Code::invalid_argument, {"seed"});
  expect_error(with(kKeras3Gru, R"("class_name": "Orthogonal",
                              "config": {"gain": 1.0, "seed": null})",
                    R"("class_name": "Orthogonal", "config": {"gain": 1.0, "seed": null, "scale": 2})"),
               Code::invalid_argument, {"recurrent_initializer"});
  expect_error(with(kKeras2Gru, R"({"class_name": "Zeros", "config": {}})", R"({"class_name": "Foo", "config": {}})"),
               Code::invalid_argument, {"bias_initializer", "Foo"});
  expect_error(with(kKeras2Gru, R"("bias_initializer": {"class_name": "Zeros", "config": {}})",
                    R"("bias_initializer": null)"),
               Code::invalid_argument, {"bias_initializer"});
  expect_error(R"({"class_name": "GRU", "config": {"units": 3, "num_constants": 1}})", Code::unsupported,
               {"num_constants"}, Dialect::keras2, 2);
}

TEST(ConfigJson, CellsRejectLayerArguments) {
  const std::string cell = R"({"class_name": "GRUCell", "config": {"units": 3, "reset_after": false}})";
  const LayerConfig c = recur::parse_layer_json(cell, 2, std::nullopt);
  EXPECT_EQ(c.kind, LayerKind::gru_cell);
  EXPECT_FALSE(c.reset_after);
  for (const char* arg : {"return_sequences", "return_state", "go_backwards", "stateful", "unroll"}) {
    const std::string j = std::string(R"({"class_name": "LSTMCell", "config": {"units": 3, ")") + arg + R"(": true}})";
    expect_error(j, Code::invalid_argument, {arg}, std::nullopt, 2);
  }
  // The same rule in validate(), for configs built in code.
  for (int flag = 0; flag < 5; ++flag) {
    LayerConfig k = LayerConfig::defaults(LayerKind::lstm_cell, DialectInfo::latest(Dialect::keras2));
    k.units = 3;
    k.input_size = 2;
    EXPECT_NO_THROW(k.validate());
    (flag == 0 ? k.return_sequences : flag == 1 ? k.return_state : flag == 2 ? k.go_backwards
                                                          : flag == 3 ? k.unroll
                                                                      : k.zero_output_for_mask) = true;
    EXPECT_THROW(k.validate(), Error) << flag;
  }
}

TEST(ConfigJson, DefaultsPerDialect) {
  for (Dialect d : {Dialect::keras2, Dialect::keras3}) {
    for (LayerKind kind : {LayerKind::gru, LayerKind::lstm, LayerKind::gru_cell, LayerKind::lstm_cell}) {
      const LayerConfig c = LayerConfig::defaults(kind, DialectInfo::latest(d));
      EXPECT_EQ(c.dialect.dialect, d);
      EXPECT_EQ(c.activation.kind, recur::Activation::tanh);
      EXPECT_EQ(c.recurrent_activation.kind, recur::Activation::sigmoid);
      EXPECT_TRUE(c.use_bias);
      EXPECT_TRUE(c.reset_after);
      EXPECT_EQ(c.implementation, 2);
      EXPECT_TRUE(c.unit_forget_bias);
      EXPECT_EQ(c.dropout, 0.0f);
      EXPECT_EQ(c.recurrent_dropout, 0.0f);
      EXPECT_FALSE(c.return_sequences || c.return_state || c.go_backwards || c.stateful || c.time_major || c.unroll ||
                   c.zero_output_for_mask);
      expect_glorot_uniform(c.kernel_initializer);
      EXPECT_EQ(c.recurrent_initializer.kind, InitializerSpec::Kind::orthogonal);
      EXPECT_EQ(c.recurrent_initializer.gain, 1.0);
      EXPECT_EQ(c.bias_initializer.kind, InitializerSpec::Kind::zeros);
      EXPECT_FALSE(c.kernel_regularizer.active() || c.recurrent_regularizer.active() || c.bias_regularizer.active() ||
                   c.activity_regularizer.active());
      EXPECT_FALSE(c.kernel_constraint.active() || c.recurrent_constraint.active() || c.bias_constraint.active());
    }
  }
  // A parsed minimal config equals the defaults where it says nothing.
  const LayerConfig p = recur::parse_layer_json(R"({"class_name": "LSTM", "config": {"units": 3}})", 2, Dialect::keras2);
  EXPECT_EQ(p.implementation, 2);
  EXPECT_TRUE(p.unit_forget_bias);
  expect_glorot_uniform(p.kernel_initializer);
  EXPECT_EQ(DialectInfo::latest(Dialect::keras2).major, 2);
  EXPECT_EQ(DialectInfo::latest(Dialect::keras3).major, 3);
}

TEST(ConfigJson, ValidateErrorsNameTheField) {
  auto base = [](LayerKind kind, Dialect d) {
    LayerConfig c = LayerConfig::defaults(kind, DialectInfo::latest(d));
    c.units = 3;
    c.input_size = 2;
    return c;
  };
  struct Case {
    std::function<void(LayerConfig&)> edit;
    LayerKind kind;
    Dialect d;
    Code code;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {[](LayerConfig& c) { c.units = 0; }, LayerKind::gru, Dialect::keras3, Code::invalid_argument, "units"},
      {[](LayerConfig& c) { c.input_size = 0; }, LayerKind::gru, Dialect::keras3, Code::invalid_argument,
       "input_size"},
      {[](LayerConfig& c) { c.time_major = true; }, LayerKind::gru, Dialect::keras3, Code::unsupported, "time_major"},
      {[](LayerConfig&) {}, LayerKind::cudnn_gru, Dialect::keras3, Code::unsupported, "CuDNNGRU"},
      {[](LayerConfig& c) { c.implementation = 0; }, LayerKind::lstm, Dialect::keras3, Code::invalid_argument,
       "implementation"},
      {[](LayerConfig& c) { c.reset_after = false; }, LayerKind::lstm, Dialect::keras3, Code::invalid_argument,
       "reset_after"},
      {[](LayerConfig& c) { c.stateful = true; }, LayerKind::gru, Dialect::keras2, Code::invalid_argument,
       "batch_size"},
      {[](LayerConfig& c) { c.batch_size = -1; }, LayerKind::gru, Dialect::keras2, Code::invalid_argument,
       "batch_size"},
      {[](LayerConfig& c) { c.use_bias = false; }, LayerKind::cudnn_lstm, Dialect::keras2, Code::invalid_argument,
       "use_bias"},
      {[](LayerConfig& c) { c.reset_after = false; }, LayerKind::cudnn_gru, Dialect::keras2, Code::invalid_argument,
       "reset_after"},
  };
  for (const Case& cs : cases) {
    LayerConfig c = base(cs.kind, cs.d);
    cs.edit(c);
    try {
      c.validate();
      ADD_FAILURE() << "accepted: " << cs.needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), cs.code) << e.what();
      EXPECT_NE(std::string(e.what()).find(cs.needle), std::string::npos) << e.what();
    }
  }
  // time_major is fine in Keras 2, and a stateful layer with a batch size validates.
  LayerConfig ok = base(LayerKind::gru, Dialect::keras2);
  ok.time_major = true;
  ok.stateful = true;
  ok.batch_size = 4;
  EXPECT_NO_THROW(ok.validate());
}

// SimpleRNN / SimpleRNNCell as Keras 3.15 serializes them (keras.layers.serialize) and as tf_keras 2.21
// writes them in a legacy .h5 model_config (no module / registered_name).
namespace {

const char* kKeras2SimpleRnn = R"({"class_name": "SimpleRNN", "config": {
  "name": "simple_rnn", "trainable": true, "dtype": "float32", "batch_input_shape": [null, 6, 5],
  "return_sequences": false, "return_state": false, "go_backwards": false, "stateful": false, "unroll": false,
  "time_major": false, "units": 3, "activation": "tanh", "use_bias": true,
  "kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform", "config": {"seed": null},
                         "registered_name": null},
  "recurrent_initializer": {"module": "keras.initializers", "class_name": "Orthogonal",
                            "config": {"gain": 1.0, "seed": null}, "registered_name": null},
  "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name": null},
  "kernel_regularizer": null, "recurrent_regularizer": null, "bias_regularizer": null,
  "activity_regularizer": {"module": "keras.regularizers", "class_name": "L2", "config": {"l2": 0.02},
                           "registered_name": null},
  "kernel_constraint": null, "recurrent_constraint": null, "bias_constraint": null, "dropout": 0.0,
  "recurrent_dropout": 0.0}})";

const char* kKeras3SimpleRnn = R"({"module": "keras.layers", "class_name": "SimpleRNN", "config": {
  "name": "simple_rnn", "trainable": true,
  "dtype": {"module": "keras", "class_name": "DTypePolicy", "config": {"name": "float32"}, "registered_name": null},
  "return_sequences": true, "return_state": false, "go_backwards": false, "stateful": false, "unroll": false,
  "zero_output_for_mask": false, "units": 3, "activation": "relu", "use_bias": false,
  "kernel_initializer": {"module": "keras.initializers", "class_name": "GlorotUniform",
                         "config": {"seed": null, "input_axes": null, "output_axes": null}, "registered_name": null},
  "recurrent_initializer": {"module": "keras.initializers", "class_name": "Orthogonal",
                            "config": {"seed": null, "gain": 1.0}, "registered_name": null},
  "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros", "config": {}, "registered_name": null},
  "kernel_regularizer": null, "recurrent_regularizer": null, "bias_regularizer": null,
  "activity_regularizer": null, "kernel_constraint": null, "recurrent_constraint": null, "bias_constraint": null,
  "dropout": 0.25, "recurrent_dropout": 0.5}, "registered_name": null,
  "build_config": {"input_shape": [null, 6, 4]}})";

}  // namespace

TEST(ConfigJson, SimpleRnnBothDialects) {
  const LayerConfig k2 = recur::parse_layer_json(kKeras2SimpleRnn, 0, Dialect::keras2);
  EXPECT_EQ(k2.kind, LayerKind::simple_rnn);
  EXPECT_STREQ(recur::kind_name(k2.kind), "SimpleRNN");
  EXPECT_EQ(k2.input_size, 5);
  EXPECT_EQ(k2.units, 3);
  EXPECT_EQ(k2.gates(), 1);
  EXPECT_EQ(k2.num_states(), 1);
  EXPECT_TRUE(k2.use_bias);
  EXPECT_EQ(k2.activation.kind, recur::Activation::tanh);
  EXPECT_TRUE(k2.activity_regularizer.active());  // Keras 2's SimpleRNN keeps it
  EXPECT_FALSE(k2.keras2_fused_path());
  // Detected as Keras 2 from time_major / batch_input_shape.
  EXPECT_EQ(recur::parse_layer_json(kKeras2SimpleRnn, 0, std::nullopt).dialect.dialect, Dialect::keras2);

  const LayerConfig k3 = recur::parse_layer_json(kKeras3SimpleRnn, 0, std::nullopt);
  EXPECT_EQ(k3.dialect.dialect, Dialect::keras3);
  EXPECT_EQ(k3.kind, LayerKind::simple_rnn);
  EXPECT_EQ(k3.input_size, 4);
  EXPECT_TRUE(k3.return_sequences);
  EXPECT_FALSE(k3.use_bias);
  EXPECT_EQ(k3.activation.kind, recur::Activation::relu);
  EXPECT_FLOAT_EQ(k3.dropout, 0.25f);
  EXPECT_FLOAT_EQ(k3.recurrent_dropout, 0.5f);
  // Keras 3's SimpleRNN drops an activity_regularizer passed to it: recur does too.
  const LayerConfig dropped = recur::parse_layer_json(
      with(kKeras3SimpleRnn, R"("activity_regularizer": null)", R"("activity_regularizer": "l2")"), 0, std::nullopt);
  EXPECT_FALSE(dropped.activity_regularizer.active());

  const LayerConfig cell = recur::parse_layer_json(
      R"({"class_name": "SimpleRNNCell", "config": {"units": 4, "activation": "sigmoid", "seed": 3}})", 2,
      Dialect::keras3);
  EXPECT_EQ(cell.kind, LayerKind::simple_rnn_cell);
  EXPECT_TRUE(cell.is_cell());
  EXPECT_STREQ(recur::kind_name(cell.kind), "SimpleRNNCell");
  EXPECT_EQ(cell.seed, std::optional<std::uint64_t>(3));
}

TEST(ConfigJson, SimpleRnnRejectsWhatKerasRejects) {
  for (const char* field : {R"("recurrent_activation": "sigmoid")", R"("reset_after": true)",
                            R"("unit_forget_bias": true)"}) {
    expect_error(with(kKeras2SimpleRnn, R"("units": 3)", std::string(R"("units": 3, )") + field),
                 Code::invalid_argument, {"SimpleRNN", "has no argument"});
    expect_error(with(kKeras3SimpleRnn, R"("units": 3)", std::string(R"("units": 3, )") + field),
                 Code::invalid_argument, {"SimpleRNN", "has no argument"});
  }
  // Keras 2's SimpleRNN has no seed (its cell has); Keras 3 has no implementation or use_cudnn.
  expect_error(with(kKeras2SimpleRnn, R"("units": 3)", R"("units": 3, "seed": 1)"), Code::invalid_argument, {"seed"});
  expect_error(with(kKeras3SimpleRnn, R"("units": 3)", R"("units": 3, "implementation": 1)"), Code::invalid_argument,
               {"implementation"});
  expect_error(with(kKeras3SimpleRnn, R"("units": 3)", R"("units": 3, "use_cudnn": false)"), Code::invalid_argument,
               {"use_cudnn"});
  expect_error(with(kKeras3SimpleRnn, R"("units": 3)", R"("units": 3, "time_major": false)"), Code::unsupported,
               {"time_major"});
  expect_error(R"({"class_name": "SimpleRNNCell", "config": {"units": 3, "go_backwards": true}})",
               Code::invalid_argument, {"go_backwards"}, Dialect::keras2, 2);
  // Keras 2 drops `implementation` (with a deprecation warning).
  const LayerConfig k2 =
      recur::parse_layer_json(with(kKeras2SimpleRnn, R"("units": 3)", R"("units": 3, "implementation": 1)"), 0,
                              Dialect::keras2);
  EXPECT_EQ(k2.implementation, 2);
  // validate() on configs built in code.
  LayerConfig c = LayerConfig::defaults(LayerKind::simple_rnn, DialectInfo::latest(Dialect::keras3));
  c.units = 3;
  c.input_size = 2;
  EXPECT_NO_THROW(c.validate());
  c.reset_after = false;
  EXPECT_THROW(c.validate(), Error);
  c.reset_after = true;
  c.unit_forget_bias = false;
  EXPECT_THROW(c.validate(), Error);
}
