// SPDX-License-Identifier: Apache-2.0
// Fields of the wrong type in a Keras-saved model's config (a dtype policy whose name is a number,
// a module that is not a string): refused with the field's name, never a JSON type error escaping
// as RECUR_ERR_INTERNAL.
#include "keras_config_edit.hpp"

#include <string>

namespace {

const std::string kKeras = RECUR_TEST_KERAS_DIR;
const std::string kFile = kKeras + "/graphs/keras3/masking_sequential.keras";

TEST(ModelHostileTypes, DtypePolicyNameOfTheWrongType) {
  for (const char* layer : {"lstm", "masking"}) {
    const auto r = keras_edit::open_edited(kFile, [&](keras_edit::json& c) {
      keras_edit::layer(c, layer)["config"]["dtype"]["config"]["name"] = 32;
    });
    EXPECT_EQ(r.status, RECUR_ERR_UNSUPPORTED) << layer << ": " << r.message;
    EXPECT_NE(r.message.find("dtype.config.name: expected a string"), std::string::npos) << layer << ": " << r.message;
    EXPECT_NE(r.message.find(std::string("'") + layer + "'"), std::string::npos) << r.message;
  }
}

TEST(ModelHostileTypes, DtypePolicyConfigOfTheWrongType) {
  const auto r = keras_edit::open_edited(kFile, [&](keras_edit::json& c) {
    keras_edit::layer(c, "lstm")["config"]["dtype"]["config"] = "float32";
  });
  EXPECT_EQ(r.status, RECUR_ERR_UNSUPPORTED) << r.message;
  EXPECT_NE(r.message.find("dtype.config: expected an object"), std::string::npos) << r.message;
}

TEST(ModelHostileTypes, InputDtypePolicyNameOfTheWrongType) {
  const auto r = keras_edit::open_edited(kFile, [&](keras_edit::json& c) {
    keras_edit::layer(c, "input_layer")["config"]["dtype"] =
        keras_edit::json{{"class_name", "DTypePolicy"}, {"config", {{"name", 5}}}};
  });
  EXPECT_NE(r.status, RECUR_OK);
  EXPECT_NE(r.status, RECUR_ERR_INTERNAL) << r.message;
  EXPECT_NE(r.message.find("dtype.config.name: expected a string"), std::string::npos) << r.message;
}

TEST(ModelHostileTypes, ModuleOfTheWrongType) {
  const auto r = keras_edit::open_edited(kFile, [&](keras_edit::json& c) { keras_edit::layer(c, "masking")["module"] = 3; });
  EXPECT_NE(r.status, RECUR_OK);
  EXPECT_NE(r.status, RECUR_ERR_INTERNAL) << r.message;
  EXPECT_NE(r.message.find("module: expected a string"), std::string::npos) << r.message;
}

TEST(ModelHostileTypes, InitializerModeOfTheWrongType) {
  const auto r = keras_edit::open_edited(kFile, [&](keras_edit::json& c) {
    keras_edit::layer(c, "lstm")["config"]["kernel_initializer"] =
        keras_edit::json{{"class_name", "VarianceScaling"}, {"config", {{"mode", 1}}}};
  });
  EXPECT_EQ(r.status, RECUR_ERR_UNSUPPORTED) << r.message;
  EXPECT_NE(r.message.find("kernel_initializer.mode: expected a string"), std::string::npos) << r.message;
}

}  // namespace

namespace {

// A declared axis past int32 (2^31 was once accepted, then reported as -2147483648 by
// recur_model_get_info and `recur info`) is refused at open, with the limit.
TEST(ModelHostileTypes, DeclaredAxisPastInt32) {
  for (const keras_edit::json& big : {keras_edit::json(std::int64_t(1) << 31), keras_edit::json(std::int64_t(3037000500)),
                                      keras_edit::json((std::int64_t(1) << 32) + 4)}) {
    const auto r = keras_edit::open_edited(kFile, [&](keras_edit::json& c) {
      keras_edit::layer(c, "input_layer")["config"]["batch_shape"] = keras_edit::json::array({nullptr, 7, big});
    });
    EXPECT_EQ(r.status, RECUR_ERR_IO) << big.dump() << ": " << r.message;
    EXPECT_NE(r.message.find("input_layer"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("an integer in [0, 2147483647], got " + big.dump()), std::string::npos) << r.message;
  }
}

// The largest int32 axis is not refused as a dimension: what refuses it is the layer's own limit,
// and recur_model_get_info never reports a negative size.
TEST(ModelHostileTypes, DeclaredAxisAtInt32IsNotNarrowed) {
  const auto r = keras_edit::open_edited(kFile, [&](keras_edit::json& c) {
    keras_edit::layer(c, "input_layer")["config"]["batch_shape"] = keras_edit::json::array({nullptr, 7, 2147483647});
  });
  EXPECT_NE(r.status, RECUR_OK);
  EXPECT_EQ(r.message.find("a dimension must be"), std::string::npos) << r.message;
  EXPECT_EQ(r.message.find("-2147483648"), std::string::npos) << r.message;
}

}  // namespace
