// SPDX-License-Identifier: Apache-2.0
// Hostile configs of the core layers in a Keras-saved model: each is refused with a status and a
// message naming the layer's argument, never a crash or an allocation past the limits.
#include "keras_config_edit.hpp"

#include <functional>
#include <string>

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

// A layer recur lacks is refused at run time with what to do: a Lambda's Python code, a custom
// layer, or a Keras layer recur does not run.
TEST(ModelHostileCore, UnsupportedLayersSayWhatToDo) {
  const std::string file = kKeras + "/graphs/keras3/masking_sequential.keras";
  struct Case {
    std::function<void(keras_edit::json&)> edit;
    const char* says;
  };
  const Case cases[] = {
      {[](keras_edit::json& d) { d["class_name"] = "Lambda"; }, "a Lambda layer holds Python code"},
      {[](keras_edit::json& d) {
         d["class_name"] = "Thing";
         d["module"] = "my_package.layers";
         d["registered_name"] = "MyPackage>Thing";
       },
       "a custom layer"},
      {[](keras_edit::json& d) { d["class_name"] = "EinsumDense"; }, "recur does not run this Keras layer"},
  };
  for (const Case& c : cases) {
    const auto r = keras_edit::open_edited(file, [&](keras_edit::json& cfg) { c.edit(keras_edit::layer(cfg, "dense")); });
    EXPECT_EQ(r.status, RECUR_ERR_UNSUPPORTED) << r.message;
    EXPECT_NE(r.message.find(c.says), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("at dense"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("docs/keras-layers.md"), std::string::npos) << r.message;
  }
}

TEST(ModelHostileCore, TheUneditedFileRuns) {
  const auto r = keras_edit::open_edited(kKeras + "/graphs/keras3/masking_sequential.keras", [](keras_edit::json&) {});
  EXPECT_EQ(r.status, RECUR_OK) << r.message;
}

}  // namespace
