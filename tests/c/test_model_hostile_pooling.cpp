// SPDX-License-Identifier: Apache-2.0
// Hostile configs of the pooling layers in a Keras-saved model: each is refused with a status and
// a message naming the layer's argument, never a crash or an allocation past the limits.
#include "keras_config_edit.hpp"

namespace {

using keras_edit::json;
using keras_edit::expect_refused;

const std::string kKeras = RECUR_TEST_KERAS_DIR;
const std::string kWindows = kKeras + "/graphs/pooling/keras3/pool1d_windows.keras";
const std::string kGlobal = kKeras + "/graphs/pooling/keras3/global_pool_keepdims_channels_first.keras";

TEST(ModelHostilePooling, TheUneditedFilesRun) {
  for (const std::string& f : {kWindows, kGlobal}) {
    const auto r = keras_edit::open_edited(f, [](json&) {});
    EXPECT_EQ(r.status, RECUR_OK) << f << ": " << r.message;
  }
}

TEST(ModelHostilePooling, PoolSizeMustBeAPositiveInteger) {
  expect_refused(kWindows, "max_pooling1d", "pool_size", {json(0), json(-2), json("2"), json(1e12), json::array({0}), json(2.5)},
                 "pool_size");
  expect_refused(kWindows, "average_pooling1d", "pool_size", {json(0), json::array({-1}), json(std::int64_t(1) << 40)}, "pool_size");
}

TEST(ModelHostilePooling, PoolSizeLongerThanTheStepsWithValidPadding) {
  const auto r = keras_edit::open_edited(kWindows, [](json& c) {
    keras_edit::layer(c, "max_pooling1d_2")["config"]["pool_size"] = json::array({100});
  });
  EXPECT_EQ(r.status, RECUR_ERR_UNSUPPORTED) << r.message;
  EXPECT_NE(r.message.find("pool_size=100"), std::string::npos) << r.message;
}

// A time axis of unknown length: a window longer than the steps fails at run time.
TEST(ModelHostilePooling, PoolSizeLongerThanTheStepsAtRunTime) {
  const auto r = keras_edit::open_edited(kKeras + "/graphs/pooling/keras3/pool1d_variable_length.keras", [](json& c) {
    keras_edit::layer(c, "average_pooling1d")["config"]["pool_size"] = json::array({50});
  });
  EXPECT_EQ(r.status, RECUR_ERR_SHAPE) << r.message;
  EXPECT_NE(r.message.find("pool_size=50"), std::string::npos) << r.message;
}

TEST(ModelHostilePooling, StridesMustBeAPositiveInteger) {
  expect_refused(kWindows, "max_pooling1d_1", "strides", {json(0), json::array({0}), json(-1), json("x"), json::array({1, 2})},
                 "strides");
}

TEST(ModelHostilePooling, NullStridesAreThePoolSize) {
  const auto r = keras_edit::open_edited(kWindows, [](json& c) { keras_edit::layer(c, "average_pooling1d_2")["config"]["strides"] = nullptr; });
  EXPECT_EQ(r.status, RECUR_OK) << r.message;
}

TEST(ModelHostilePooling, PaddingAndDataFormat) {
  expect_refused(kWindows, "max_pooling1d", "padding", {json("causal"), json("full"), json(3)}, "padding");
  expect_refused(kWindows, "average_pooling1d", "data_format", {json("channels_middle"), json(1)}, "data_format");
  expect_refused(kGlobal, "global_average_pooling1d", "data_format", {json("NCW")}, "data_format");
}

TEST(ModelHostilePooling, GlobalPoolingKeepdimsIsABool) {
  expect_refused(kGlobal, "global_max_pooling1d", "keepdims", {json("yes"), json(1)}, "keepdims");
}

}  // namespace
