// SPDX-License-Identifier: Apache-2.0
// Hostile configs of the core layers in a Keras-saved model: each is refused with a status and a
// message naming the layer's argument, never a crash or an allocation past the limits.
#include "keras_config_edit.hpp"

#include <functional>
#include <string>
#include <vector>

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
      {[](keras_edit::json& d) { d["class_name"] = "Conv3DTranspose"; }, "recur does not run this Keras layer"},
  };
  for (const Case& c : cases) {
    const auto r = keras_edit::open_edited(file, [&](keras_edit::json& cfg) { c.edit(keras_edit::layer(cfg, "dense")); });
    EXPECT_EQ(r.status, RECUR_ERR_UNSUPPORTED) << r.message;
    EXPECT_NE(r.message.find(c.says), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("at dense"), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("docs/keras-layers.md"), std::string::npos) << r.message;
  }
}

// A config error makes the layer unbuildable: the open succeeds (the file's recurrent layers stay
// usable) and the run reports the layer and the argument.
struct Bad {
  keras_edit::json value;
  const char* says;
};

void expect_refused_each(const std::string& file, const std::string& layer, const char* key, const std::vector<Bad>& bads) {
  for (const Bad& b : bads) {
    const auto r = keras_edit::open_edited(file, [&](keras_edit::json& c) { keras_edit::layer(c, layer)["config"][key] = b.value; });
    EXPECT_EQ(r.status, RECUR_ERR_UNSUPPORTED) << key << "=" << b.value.dump() << ": " << r.message;
    EXPECT_NE(r.message.find(b.says), std::string::npos) << key << "=" << b.value.dump() << ": " << r.message;
  }
}

TEST(ModelHostileCore, DotAxes) {
  const std::string file = kKeras + "/graphs/merging/keras3/dot_luong_attention.keras";
  expect_refused_each(file, "dot", "axes",
                 {{"x", "axes: expected an integer or a list of two integers"},
                  {keras_edit::json::array({1, 2, 3}), "a list of two integers"},
                  {keras_edit::json::array({0, 0}), "not a non-batch axis"},
                  {keras_edit::json::array({1, 2}), "differ in size"},
                  {nullptr, "config has no 'axes'"}});
}

TEST(ModelHostileCore, NormalizationAxesAndEpsilon) {
  expect_refused_each(kKeras + "/graphs/normalization/keras3/unit_norm_masked.keras", "unit_normalization", "axis",
                 {{5, "axis 5 of a rank-3 tensor"},
                  {1, "trailing axes"},
                  {"last", "axis: expected an integer or a list of integers"}});
  expect_refused_each(kKeras + "/graphs/normalization/keras3/rms_norm.keras", "rms_normalization", "epsilon",
                 {{-1.0, "epsilon: expected a number >= 0"},
                  {"small", "epsilon"}});
}

// Keras's mask of ids shaped (B, T, 1) has that shape; recur carries (B, T) masks, so it refuses
// rather than give a mask of another shape.
TEST(ModelHostileCore, EmbeddingMaskZeroOnIdsWithAFeatureAxis) {
  const std::string file = kKeras + "/graphs/embedding/keras3/embedding_ids_t1.keras";
  const auto ok = keras_edit::open_edited(file, [](keras_edit::json&) {});
  EXPECT_EQ(ok.status, RECUR_OK) << ok.message;
  const auto r = keras_edit::open_edited(file, [](keras_edit::json& c) { keras_edit::layer(c, "embedding")["config"]["mask_zero"] = true; });
  EXPECT_EQ(r.status, RECUR_ERR_UNSUPPORTED) << r.message;
  EXPECT_NE(r.message.find("mask_zero=True on ids of shape (None, 6, 1)"), std::string::npos) << r.message;
}

TEST(ModelHostileCore, TheUneditedFileRuns) {
  const auto r = keras_edit::open_edited(kKeras + "/graphs/keras3/masking_sequential.keras", [](keras_edit::json&) {});
  EXPECT_EQ(r.status, RECUR_OK) << r.message;
}

}  // namespace
