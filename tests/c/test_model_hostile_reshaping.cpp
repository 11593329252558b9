// SPDX-License-Identifier: Apache-2.0
// Hostile configs of ZeroPadding1D, Cropping1D and UpSampling1D in a Keras-saved model: each is
// refused with a status and a message naming the argument; sizes past the tensor limit are
// Error(limit) before anything is allocated.
#include "keras_config_edit.hpp"

namespace {

using keras_edit::json;
using keras_edit::expect_refused;

const std::string kKeras = RECUR_TEST_KERAS_DIR;
const std::string kPad = kKeras + "/graphs/reshaping/keras3/pad_crop_masked.keras";
const std::string kUp = kKeras + "/graphs/reshaping/keras3/upsampling_masked.keras";
// Its output is the last LSTM state: a huge padding stays inside the model.
const std::string kPadVar = kKeras + "/graphs/reshaping/keras3/pad_crop_variable_length.keras";

TEST(ModelHostileReshaping, TheUneditedFilesRun) {
  for (const std::string& f : {kPad, kUp}) {
    const auto r = keras_edit::open_edited(f, [](json&) {});
    EXPECT_EQ(r.status, RECUR_OK) << f << ": " << r.message;
  }
}

TEST(ModelHostileReshaping, ZeroPaddingIsOneOrTwoNonNegativeIntegers) {
  expect_refused(kPad, "zero_padding1d", "padding",
                 {json(-1), json::array({1}), json::array({1, 2, 3}), json("2"), json::array({1, -1}), json(1e12), json(1.5)},
                 "padding");
  expect_refused(kPad, "zero_padding1d", "data_format", {json("channels_middle")}, "data_format");
}

TEST(ModelHostileReshaping, ZeroPaddingPastTheTensorLimit) {
  const auto r = keras_edit::open_edited(kPadVar, [](json& c) {
    keras_edit::layer(c, "zero_padding1d")["config"]["padding"] = json::array({1 << 30, 1 << 30});
  });
  EXPECT_EQ(r.status, RECUR_ERR_LIMIT) << r.message;
  EXPECT_NE(r.message.find("ZeroPadding1D"), std::string::npos) << r.message;
}

TEST(ModelHostileReshaping, CroppingMustLeaveSteps) {
  expect_refused(kPad, "cropping1d", "cropping", {json(-1), json::array({1}), json("1"), json::array({0, -2})}, "cropping");
  const auto r = keras_edit::open_edited(kPad, [](json& c) { keras_edit::layer(c, "cropping1d")["config"]["cropping"] = json::array({5, 5}); });
  EXPECT_NE(r.status, RECUR_OK);
  EXPECT_NE(r.message.find("cropping (5, 5)"), std::string::npos) << r.message;
}

// A time axis of unknown length: the cropping is checked when the steps are known, at run time
// (4 steps, padded to 7, cropped by 8).
TEST(ModelHostileReshaping, CroppingPastTheStepsAtRunTime) {
  const auto r = keras_edit::open_edited(kPadVar, [](json& c) { keras_edit::layer(c, "cropping1d")["config"]["cropping"] = json::array({4, 4}); });
  EXPECT_EQ(r.status, RECUR_ERR_SHAPE) << r.message;
  EXPECT_NE(r.message.find("cropping (4, 4)"), std::string::npos) << r.message;
}

TEST(ModelHostileReshaping, UpSamplingSizeIsAPositiveInteger) {
  expect_refused(kUp, "up_sampling1d", "size", {json(0), json(-2), json("2"), json(2.5), json(1e12)}, "size");
}

TEST(ModelHostileReshaping, UpSamplingPastTheTensorLimit) {
  // The second UpSampling1D repeats the first's output: the LSTM after it keeps the outputs small
  // (the Dense output, as long, is dropped).
  const auto r = keras_edit::open_edited(kUp, [](json& c) {
    keras_edit::layer(c, "up_sampling1d")["config"]["size"] = 1 << 28;
    c["config"]["output_layers"].erase(0);
  });
  EXPECT_EQ(r.status, RECUR_ERR_LIMIT) << r.message;
  EXPECT_NE(r.message.find("UpSampling1D"), std::string::npos) << r.message;
}

}  // namespace
