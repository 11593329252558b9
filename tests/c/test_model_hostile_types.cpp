// SPDX-License-Identifier: Apache-2.0
// Fields of the wrong type in a Keras-saved model's config (a dtype policy whose name is a number,
// a module that is not a string): refused with the field's name, never a JSON type error escaping
// as RECUR_ERR_INTERNAL.
#include "keras_config_edit.hpp"

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

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

namespace {

// A copy of `src` with its config edited, left on disk for the caller (removed by the caller).
std::string write_edited(const std::string& src, const std::string& tag, const std::function<void(keras_edit::json&)>& edit) {
  auto members = keras_edit::read_members(src);
  for (auto& [name, data] : members)
    if (name == "config.json") {
      keras_edit::json cfg = keras_edit::json::parse(data);
      edit(cfg);
      data = cfg.dump();
    }
  const std::string path = (std::filesystem::temp_directory_path() / ("recur_types_" + tag + "_" + std::to_string(getpid()) + ".keras")).string();
  keras_edit::write_members(path, members);
  return path;
}

// Every name recur_model_stateful_layer lists goes through states_length, get_states and
// set_states, a layer named with '/' (or with a Bidirectional's "/forward" suffix) included.
TEST(ModelHostileTypes, StatefulLayerNamesWithASlashRoundTrip) {
  const std::string src = kKeras + "/graphs/keras3/stateful_functional_lstm_gru.keras";
  for (const std::string& renamed : {std::string("enc/gru"), std::string("gru/forward"), std::string("a/b/cell_0")}) {
    const std::string path = write_edited(src, "slash", [&](keras_edit::json& c) {
      keras_edit::json& e = keras_edit::layer(c, "gru");
      e["name"] = renamed;
      e["config"]["name"] = renamed;
      keras_edit::layer(c, "dense")["inbound_nodes"][0]["args"][0]["config"]["keras_history"][0] = renamed;
    });
    recur_model* m = nullptr;
    ASSERT_EQ(recur_model_open(&m, path.c_str()), RECUR_OK) << recur_last_error();
    int32_t n = 0;
    ASSERT_EQ(recur_model_num_stateful_layers(m, &n), RECUR_OK);
    ASSERT_EQ(n, 2);
    const char* name = nullptr;
    int32_t states = 0, batch = 0, units = 0;
    ASSERT_EQ(recur_model_stateful_layer(m, 1, &name, &states, &batch, &units), RECUR_OK);
    EXPECT_EQ(std::string(name), renamed);
    size_t len = 0;
    ASSERT_EQ(recur_model_states_length(m, name, &len), RECUR_OK) << renamed << ": " << recur_last_error();
    EXPECT_EQ(len, static_cast<size_t>(states) * static_cast<size_t>(batch) * static_cast<size_t>(units));
    std::vector<float> s(len, 0.25f), back(len, 0.0f);
    EXPECT_EQ(recur_model_set_states(m, name, s.data(), s.size()), RECUR_OK) << recur_last_error();
    EXPECT_EQ(recur_model_get_states(m, name, back.data(), back.size()), RECUR_OK) << recur_last_error();
    EXPECT_EQ(back, s);
    recur_layer* l = nullptr;
    EXPECT_EQ(recur_model_get_layer(m, name, &l), RECUR_OK) << recur_last_error();
    recur_layer_destroy(l);
    // The prefix alone is no layer.
    const std::string prefix = renamed.substr(0, renamed.rfind('/'));
    EXPECT_EQ(recur_model_states_length(m, prefix.c_str(), &len), RECUR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(recur_last_error()).find("the model has no layer '" + prefix + "'"), std::string::npos)
        << recur_last_error();
    recur_model_destroy(m);
    std::filesystem::remove(path);
  }
}

}  // namespace

namespace {

// Range messages say the range (they once said only "n: 2147483647 is out of range").
TEST(ModelHostileTypes, OutOfRangeMessagesSayTheRange) {
  const auto r = keras_edit::open_edited(kKeras + "/graphs/keras3/encoder_decoder_repeat.keras", [&](keras_edit::json& c) {
    keras_edit::layer(c, "repeat_vector")["config"]["n"] = 2147483647;
  });
  EXPECT_EQ(r.status, RECUR_ERR_UNSUPPORTED) << r.message;
  EXPECT_NE(r.message.find("n: 2147483647 is out of range (expected an integer in [-1073741824, 1073741824])"),
            std::string::npos)
      << r.message;
  recur_layer* l = nullptr;
  EXPECT_EQ(recur_layer_create_from_json(&l, R"({"class_name": "GRU", "config": {"units": 3037000500}})", 3,
                                         RECUR_DIALECT_AUTO, nullptr),
            RECUR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(l, nullptr);
  EXPECT_NE(std::string(recur_last_error()).find("units: 3037000500 is out of range (expected an integer in [-2147483648, 2147483647])"),
            std::string::npos)
      << recur_last_error();
  EXPECT_EQ(recur_layer_create_from_json(
                &l, R"({"class_name": "GRU", "config": {"units": 4, "batch_input_shape": [3, 5, 4294967296]}})", 0,
                RECUR_DIALECT_AUTO, nullptr),
            RECUR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(recur_last_error()).find("(expected null or an integer in [-2147483648, 2147483647])"),
            std::string::npos)
      << recur_last_error();
}

}  // namespace
