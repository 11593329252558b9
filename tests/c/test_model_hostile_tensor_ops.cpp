// SPDX-License-Identifier: Apache-2.0
// Hostile configs of Keras 2's TFOpLambda / SlicingOpLambda layers and of the node indices that
// name a nested model's or shared layer's calls: each is refused with a status and a message naming
// the layer and the argument, never a crash or a read past the calls.
#include "keras_config_edit.hpp"

namespace {

using keras_edit::json;

const std::string kKeras = RECUR_TEST_KERAS_DIR;
const std::string kOps = kKeras + "/graphs/tensor_ops/keras2/";
const std::string kRegressions = kKeras + "/graphs/regressions/keras2/";

bool has(const std::string& message, const std::string& part) { return message.find(part) != std::string::npos; }

// The kwargs of a TFOpLambda called on one tensor: inbound_nodes [[name, node, tensor, kwargs]].
json& kwargs_of(json& config, const std::string& layer) { return keras_edit::layer(config, layer)["inbound_nodes"][0][3]; }

TEST(ModelHostileTensorOps, TheUneditedFilesRun) {
  for (const char* f : {"ops_arithmetic", "ops_reduce", "ops_slicing", "ops_shapes"}) {
    const auto r = keras_edit::open_edited(kOps + f + ".keras", [](json&) {});
    EXPECT_EQ(r.status, RECUR_OK) << f << ": " << r.message;
  }
  const auto r = keras_edit::open_edited(kRegressions + "nested_encoder_two_calls.keras", [](json&) {});
  EXPECT_EQ(r.status, RECUR_OK) << r.message;
}

TEST(ModelHostileTensorOps, AnUnknownFunctionIsRefusedByName) {
  const auto r = keras_edit::open_edited(kOps + "ops_arithmetic.keras", [](json& c) {
    keras_edit::layer(c, "tf.math.multiply")["config"]["function"] = "math.cumsum";
  });
  EXPECT_EQ(r.status, RECUR_ERR_UNSUPPORTED) << r.message;
  EXPECT_TRUE(has(r.message, "TFOpLambda 'tf.math.cumsum' (layer 'tf.math.multiply') is not supported")) << r.message;
}

TEST(ModelHostileTensorOps, AFunctionThatIsNotAString) {
  for (const json& bad : {json(5), json(nullptr), json::array({"math.add"})}) {
    const auto r = keras_edit::open_edited(kOps + "ops_arithmetic.keras", [&](json& c) {
      keras_edit::layer(c, "tf.math.multiply")["config"]["function"] = bad;
    });
    EXPECT_NE(r.status, RECUR_OK) << bad.dump();
    EXPECT_TRUE(has(r.message, "'function'") && has(r.message, "tf.math.multiply")) << bad.dump() << ": " << r.message;
  }
}

TEST(ModelHostileTensorOps, ABadAxis) {
  for (const json& bad : {json(7), json(-9), json("2"), json::array({2, 2}), json(1e12)}) {
    const auto r = keras_edit::open_edited(kOps + "ops_reduce.keras", [&](json& c) { kwargs_of(c, "tf.math.reduce_max")["axis"] = bad; });
    EXPECT_NE(r.status, RECUR_OK) << bad.dump();
    EXPECT_TRUE(has(r.message, "axis") && has(r.message, "tf.math.reduce_max")) << bad.dump() << ": " << r.message;
  }
  // Over the batch axis, or every axis: refused, not a result without its batch.
  for (const json& bad : {json(0), json(nullptr)}) {
    const auto r = keras_edit::open_edited(kOps + "ops_reduce.keras", [&](json& c) { kwargs_of(c, "tf.math.reduce_max")["axis"] = bad; });
    EXPECT_EQ(r.status, RECUR_ERR_UNSUPPORTED) << bad.dump() << ": " << r.message;
    EXPECT_TRUE(has(r.message, "batch axis")) << r.message;
  }
}

TEST(ModelHostileTensorOps, ABadPermutation) {
  for (const json& bad : {json::array({0, 0, 1}), json::array({0, 1}), json("0,2,1"), json::array({1, 0, 2})}) {
    const auto r = keras_edit::open_edited(kOps + "ops_transpose_time.keras", [&](json& c) {
      kwargs_of(c, "tf.compat.v1.transpose")["perm"] = bad;
    });
    EXPECT_NE(r.status, RECUR_OK) << bad.dump();
    EXPECT_TRUE(has(r.message, "perm") || has(r.message, "batch axis")) << bad.dump() << ": " << r.message;
  }
}

TEST(ModelHostileTensorOps, ASliceSpecOfTheWrongType) {
  const json bad_specs[] = {json("::2"), json::array({json::object({{"start", "a"}, {"stop", nullptr}, {"step", nullptr}})}),
                            json::array({json::object({{"start", nullptr}, {"stop", nullptr}, {"step", 0}})}),
                            json::array({1.5}), json::array({json::object({{"class_name", "__ellipsis__"}}),
                                                             json::object({{"class_name", "__ellipsis__"}})}),
                            json::array({json::object({{"start", nullptr}, {"stop", nullptr}, {"step", nullptr}}), 1, 2, 3})};
  for (const json& bad : bad_specs) {
    const auto r = keras_edit::open_edited(kOps + "ops_slicing.keras", [&](json& c) {
      kwargs_of(c, "tf.__operators__.getitem")["slice_spec"] = bad;
    });
    EXPECT_NE(r.status, RECUR_OK) << bad.dump();
    EXPECT_TRUE(has(r.message, "tf.__operators__.getitem")) << bad.dump() << ": " << r.message;
  }
  // An index past the axis, a slice of the batch axis.
  for (const json& bad : {json::array({json::object({{"start", nullptr}, {"stop", nullptr}, {"step", nullptr}}), 9}), json(1)}) {
    const auto r = keras_edit::open_edited(kOps + "ops_slicing.keras", [&](json& c) {
      kwargs_of(c, "tf.__operators__.getitem")["slice_spec"] = bad;
    });
    EXPECT_NE(r.status, RECUR_OK) << bad.dump();
    EXPECT_TRUE(has(r.message, "out of range") || has(r.message, "batch axis")) << bad.dump() << ": " << r.message;
  }
}

TEST(ModelHostileTensorOps, AnOperandThatIsNeitherTensorNorNumber) {
  const auto r = keras_edit::open_edited(kOps + "ops_arithmetic.keras", [](json& c) {
    kwargs_of(c, "tf.math.multiply")["y"] = "half";
  });
  EXPECT_NE(r.status, RECUR_OK);
  EXPECT_TRUE(has(r.message, "'y'")) << r.message;
}

TEST(ModelHostileTensorOps, ANodeIndexPastTheCallsOfANestedModel) {
  // The encoder is called twice; Keras 2 numbers its calls 1 and 2.
  for (int bad : {0, 3, 1000000}) {
    const auto r = keras_edit::open_edited(kRegressions + "nested_encoder_two_calls.keras", [&](json& c) {
      keras_edit::layer(c, "concatenate_1")["inbound_nodes"][0][1][1] = bad;
    });
    EXPECT_EQ(r.status, RECUR_ERR_IO) << bad;
    EXPECT_TRUE(has(r.message, "'enc'") && has(r.message, "call " + std::to_string(bad))) << bad << ": " << r.message;
  }
}

TEST(ModelHostileTensorOps, ANodeIndexPastTheCallsOfASharedLayer) {
  for (int bad : {2, 77}) {
    const auto r = keras_edit::open_edited(kRegressions + "shared_layers_two_calls.keras", [&](json& c) {
      json& node = keras_edit::layer(c, "concatenate")["inbound_nodes"][0];
      for (json& t : node)
        if (t[0] == "shared_dense") t[1] = bad;
    });
    EXPECT_EQ(r.status, RECUR_ERR_IO) << bad;
    EXPECT_TRUE(has(r.message, "'shared_dense'") && has(r.message, "which has 2")) << bad << ": " << r.message;
  }
}

TEST(ModelHostileTensorOps, AnOpLayerCalledTwice) {
  const auto r = keras_edit::open_edited(kOps + "ops_arithmetic.keras", [](json& c) {
    json& nodes = keras_edit::layer(c, "tf.math.multiply")["inbound_nodes"];
    nodes.push_back(nodes[0]);
  });
  EXPECT_NE(r.status, RECUR_OK);
  EXPECT_TRUE(has(r.message, "called 2 times")) << r.message;
}

TEST(ModelHostileTensorOps, AConstantThatIsNotANumber) {
  // 1 - y: ["_CONSTANT_VALUE", -1, 1.0, {"y": [...]}]
  const auto r = keras_edit::open_edited(kOps + "ops_shapes.keras", [](json& c) {
    keras_edit::layer(c, "tf.math.subtract")["inbound_nodes"][0][2] = "one";
  });
  EXPECT_NE(r.status, RECUR_OK);
  EXPECT_TRUE(has(r.message, "constant") && has(r.message, "tf.math.subtract")) << r.message;
}

TEST(ModelHostileTensorOps, JoinsAndNewAxesOutOfRange) {
  // concat and stack: [[[name, node, tensor, {"axis": -1}], ...]]; the last entry's kwargs count.
  auto set_axis = [](json& c, const std::string& name, const json& axis) {
    for (json& t : keras_edit::layer(c, name)["inbound_nodes"][0]) {
      if (axis.is_null()) t[3].erase("axis");
      else t[3]["axis"] = axis;
    }
  };
  struct Edit {
    const char* layer;
    json axis;
    const char* says;
  };
  const Edit edits[] = {{"tf.concat", json(5), "axis 5"},      {"tf.concat", json(0), "batch axis"},
                        {"tf.concat", json(nullptr), "'axis'"}, {"tf.concat", json("x"), "axis"},
                        {"tf.stack", json(-6), "axis -6"},      {"tf.stack", json(0), "batch axis"}};
  for (const Edit& e : edits) {
    const auto r = keras_edit::open_edited(kOps + "ops_shapes.keras", [&](json& c) { set_axis(c, e.layer, e.axis); });
    EXPECT_NE(r.status, RECUR_OK) << e.layer << " " << e.axis.dump();
    EXPECT_TRUE(has(r.message, e.says) && has(r.message, e.layer)) << e.layer << " " << e.axis.dump() << ": " << r.message;
  }
  for (const json& bad : {json(0), json(9), json(nullptr)}) {
    const auto r = keras_edit::open_edited(kOps + "ops_shapes.keras", [&](json& c) {
      if (bad.is_null()) kwargs_of(c, "tf.expand_dims").erase("axis");
      else kwargs_of(c, "tf.expand_dims")["axis"] = bad;
    });
    EXPECT_NE(r.status, RECUR_OK) << bad.dump();
    EXPECT_TRUE(has(r.message, "tf.expand_dims")) << bad.dump() << ": " << r.message;
  }
  // Squeezing an axis whose size is not 1.
  const auto r = keras_edit::open_edited(kOps + "ops_shapes.keras", [](json& c) { kwargs_of(c, "tf.compat.v1.squeeze")["axis"] = 3; });
  EXPECT_NE(r.status, RECUR_OK);
  EXPECT_TRUE(has(r.message, "not 1")) << r.message;
}

TEST(ModelHostileTensorOps, KwargsThatAreNotAnObject) {
  const auto r = keras_edit::open_edited(kOps + "ops_reduce.keras", [](json& c) {
    keras_edit::layer(c, "tf.math.reduce_max")["inbound_nodes"][0][3] = json::array({2});
  });
  EXPECT_NE(r.status, RECUR_OK);
  EXPECT_TRUE(has(r.message, "kwargs") && has(r.message, "tf.math.reduce_max")) << r.message;
}

}  // namespace
