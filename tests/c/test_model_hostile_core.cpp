// SPDX-License-Identifier: Apache-2.0
// Hostile configs of the core layers in a Keras-saved model: each is refused with a status and a
// message naming the layer's argument, never a crash or an allocation past the limits.
#include "keras_config_edit.hpp"

namespace {

const std::string kKeras = RECUR_TEST_KERAS_DIR;

TEST(ModelHostileCore, DenseUnitsOfTheWrongSizeOrType) {
  const std::string file = kKeras + "/graphs/keras3/masking_sequential.keras";
  for (const keras_edit::json& bad : {keras_edit::json(-3), keras_edit::json("3"), keras_edit::json(1e12)}) {
    const auto r = keras_edit::open_edited(file, [&](keras_edit::json& c) { keras_edit::layer(c, "dense")["config"]["units"] = bad; });
    EXPECT_NE(r.status, RECUR_OK) << bad.dump();
    EXPECT_NE(r.message.find("units"), std::string::npos) << bad.dump() << ": " << r.message;
  }
}

TEST(ModelHostileCore, TheUneditedFileRuns) {
  const auto r = keras_edit::open_edited(kKeras + "/graphs/keras3/masking_sequential.keras", [](keras_edit::json&) {});
  EXPECT_EQ(r.status, RECUR_OK) << r.message;
}

}  // namespace
