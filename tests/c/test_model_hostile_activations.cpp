// SPDX-License-Identifier: Apache-2.0
// Hostile configs of the activation layers in a Keras-saved model: each is refused with a status
// and a message naming the argument, never a crash.
#include "keras_config_edit.hpp"

namespace {

using keras_edit::json;
using keras_edit::expect_refused;

const std::string kKeras = RECUR_TEST_KERAS_DIR;
const std::string kRelu = kKeras + "/graphs/activations/keras3/relu_options.keras";
const std::string kLeaky = kKeras + "/graphs/activations/keras3/leaky_elu_thresholded.keras";
const std::string kLeaky2 = kKeras + "/graphs/activations/keras2/leaky_elu_thresholded.keras";
const std::string kPrelu = kKeras + "/graphs/activations/keras3/prelu_per_step.keras";
const std::string kSoftmax = kKeras + "/graphs/activations/keras3/softmax_axes.keras";
const std::string kMasked = kKeras + "/graphs/activations/keras3/softmax_masked_broadcast.keras";
const std::string kNames = kKeras + "/graphs/activations/keras3/activation_names.keras";

TEST(ModelHostileActivations, TheUneditedFilesRun) {
  for (const std::string& f : {kRelu, kLeaky, kLeaky2, kPrelu, kSoftmax, kMasked, kNames}) {
    const auto r = keras_edit::open_edited(f, [](json&) {});
    EXPECT_EQ(r.status, RECUR_OK) << f << ": " << r.message;
  }
}

TEST(ModelHostileActivations, ReluArguments) {
  expect_refused(kRelu, "re_lu", "max_value", {json(-1.0), json("6")}, "max_value");
  expect_refused(kRelu, "re_lu", "negative_slope", {json(-0.1), json(nullptr), json("0.1")}, "negative_slope");
  expect_refused(kRelu, "re_lu", "threshold", {json(-1.0), json(nullptr), json::array({0.1})}, "threshold");
}

TEST(ModelHostileActivations, LeakyReluEluThresholdedRelu) {
  expect_refused(kLeaky, "leaky_re_lu", "negative_slope", {json(-0.5), json("x"), json(nullptr)}, "negative_slope");
  expect_refused(kLeaky, "elu", "alpha", {json("x"), json(nullptr)}, "alpha");
  expect_refused(kLeaky2, "leaky_re_lu", "alpha", {json("x"), json(nullptr)}, "alpha");
  expect_refused(kLeaky2, "thresholded_re_lu", "theta", {json(-1.0), json("1"), json(nullptr)}, "theta");
}

TEST(ModelHostileActivations, SoftmaxRobustMaskingIsABool) {
  expect_refused(kKeras + "/graphs/activations/keras2/softmax_masked_broadcast.keras", "softmax", "robust_masking",
                 {json("yes"), json(1)}, "robust_masking");
}

TEST(ModelHostileActivations, SoftmaxAxis) {
  expect_refused(kSoftmax, "softmax", "axis", {json(5), json(-4), json("a"), json::array(), json::array({1, 1}), json(1e12)}, "axis");
}

// Keras broadcasts the (batch, timesteps) mask against the input from its last axis: where that
// does not give the input's shape, Keras fails, and so does recur.
TEST(ModelHostileActivations, SoftmaxMaskThatDoesNotBroadcast) {
  const auto r = keras_edit::open_edited(kMasked, [](json& c) {
    keras_edit::layer(c, "x")["config"]["batch_shape"] = json::array({nullptr, 4, 3});
  });
  EXPECT_EQ(r.status, RECUR_ERR_SHAPE) << r.message;
  EXPECT_NE(r.message.find("Softmax"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("mask"), std::string::npos) << r.message;
}

TEST(ModelHostileActivations, PreluSharedAxes) {
  expect_refused(kPrelu, "p_re_lu", "shared_axes", {json(7), json(0), json("x"), json::array({1, "2"})}, "shared_axes");
  // Sharing an axis of the stored (7, 4) alpha (layer p_re_lu_1, without shared_axes): the
  // weights no longer fit.
  const auto r = keras_edit::open_edited(kPrelu, [](json& c) { keras_edit::layer(c, "p_re_lu_1")["config"]["shared_axes"] = json::array({1}); });
  EXPECT_EQ(r.status, RECUR_ERR_IO) << r.message;
  EXPECT_NE(r.message.find("shape"), std::string::npos) << r.message;
}

TEST(ModelHostileActivations, ActivationNamesRecurCannotCompute) {
  for (const char* name : {"glu", "threshold", "no_such_activation"}) {
    const auto r = keras_edit::open_edited(kNames, [&](json& c) { keras_edit::layer(c, "act_relu")["config"]["activation"] = name; });
    EXPECT_NE(r.status, RECUR_OK) << name;
    EXPECT_NE(r.message.find(name), std::string::npos) << name << ": " << r.message;
  }
}

}  // namespace
