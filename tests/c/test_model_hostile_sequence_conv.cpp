// SPDX-License-Identifier: Apache-2.0
// Hostile configs of the depthwise and separable convolutions and EinsumDense in Keras-saved
// models: each is refused with a status and a message naming the argument, never a crash or an
// allocation past the limits.
#include "keras_config_edit.hpp"

#include <string>
#include <vector>

namespace {

const std::string kGraphs = std::string(RECUR_TEST_KERAS_DIR) + "/graphs/sequence_conv/";

struct Bad {
  keras_edit::json value;
  const char* says;
};

// A bad config leaves the open working (the recurrent layers stay usable); the run refuses it.
void expect_refused(const std::string& file, const std::string& layer, const char* key, const std::vector<Bad>& bads) {
  for (const Bad& b : bads) {
    const auto r = keras_edit::open_edited(file, [&](keras_edit::json& c) { keras_edit::layer(c, layer)["config"][key] = b.value; });
    EXPECT_EQ(r.status, RECUR_ERR_UNSUPPORTED) << key << "=" << b.value.dump() << ": " << r.message;
    EXPECT_NE(r.message.find(b.says), std::string::npos) << key << "=" << b.value.dump() << ": " << r.message;
  }
}

TEST(ModelHostileSequenceConv, DepthwiseConv1DArguments) {
  const std::string file = kGraphs + "keras3/depthwise_conv_lstm.keras";
  expect_refused(file, "depthwise_conv1d", "depth_multiplier",
                 {{0, "depth_multiplier must be positive"}, {"2", "depth_multiplier: expected an integer"}, {1e12, "depth_multiplier"}});
  expect_refused(file, "depthwise_conv1d", "padding",
                 {{"causal", "padding='causal'"}, {"full", "padding: expected 'valid', 'same' or 'causal'"}, {3, "padding: expected a string"}});
  expect_refused(file, "depthwise_conv1d", "kernel_size", {{-1, "kernel_size"}, {keras_edit::json::array({3, 3}), "kernel_size"}});
  expect_refused(file, "depthwise_conv1d", "data_format", {{"channels_first", "data_format='channels_first'"}});
  expect_refused(file, "depthwise_conv1d_1", "dilation_rate", {{4, "strides > 1 with dilation_rate > 1"}});
  expect_refused(file, "depthwise_conv1d", "use_bias", {{"yes", "use_bias: expected true or false"}});
}

TEST(ModelHostileSequenceConv, SeparableConv1DArguments) {
  const std::string file = kGraphs + "keras3/separable_conv_lstm.keras";
  expect_refused(file, "separable_conv1d", "filters", {{0, "filters"}, {nullptr, "filters"}, {"4", "filters: expected an integer"}});
  expect_refused(file, "separable_conv1d", "depth_multiplier", {{-2, "depth_multiplier must be positive"}});
  // Keras 3 refuses causal padding on SeparableConv1D; Keras 2 takes it (separable_conv_causal_gru).
  expect_refused(file, "separable_conv1d", "padding", {{"causal", "padding='causal'"}});
  expect_refused(file, "separable_conv1d", "activation", {{"no_such_activation", "no_such_activation"}});
}

// A kernel far larger than the file's weights is refused before it is allocated.
TEST(ModelHostileSequenceConv, SeparableConv1DHugeKernelIsRefusedBeforeAllocating) {
  const auto r = keras_edit::open_edited(kGraphs + "keras3/separable_conv_lstm.keras", [](keras_edit::json& c) {
    keras_edit::layer(c, "separable_conv1d")["config"]["depth_multiplier"] = 1 << 29;
  });
  EXPECT_NE(r.status, RECUR_OK);
  EXPECT_NE(r.message.find("depth_multiplier"), std::string::npos) << r.message;
}

TEST(ModelHostileSequenceConv, WrongWeightShapesAreRefused) {
  // The model's weights were saved for depth_multiplier 2: 1 gives other shapes.
  const auto r = keras_edit::open_edited(kGraphs + "keras3/separable_conv_lstm.keras", [](keras_edit::json& c) {
    keras_edit::layer(c, "separable_conv1d")["config"]["depth_multiplier"] = 1;
  });
  EXPECT_NE(r.status, RECUR_OK);
  EXPECT_NE(r.message.find("shape"), std::string::npos) << r.message;
}

TEST(ModelHostileSequenceConv, EinsumDenseEquation) {
  const std::string file = kGraphs + "keras3/einsum_dense_lstm.keras";
  expect_refused(file, "einsum_dense", "equation",
                 {{"abc,cd", "is not of the form 'ab,bc->ac'"},
                  {"abc,cd->abz", "output axis 'z' is in neither the input nor the kernel"},
                  {"abc,cdz->abd", "kernel axis 'z' is in neither the input nor the output"},
                  {"abb,bd->abd", "repeats 'b'"},
                  {"abc,cd->abd...", "recur takes 'ab,bc->ac'"},
                  {"a1c,cd->a1d", "recur takes 'ab,bc->ac'"},
                  {"abcd,ce->abde", "does not fit an input of shape"},
                  {7, "equation: expected a string"},
                  {nullptr, "equation is missing"}});
}

TEST(ModelHostileSequenceConv, EinsumDenseShapesAndOptions) {
  const std::string file = kGraphs + "keras3/einsum_dense_lstm.keras";
  expect_refused(file, "einsum_dense", "output_shape",
                 {{keras_edit::json::array({nullptr, -4}), "output_shape: expected positive integers"},
                  {"4", "output_shape: expected positive integers"},
                  {keras_edit::json::array({nullptr, 4, 5}), "output_shape: expected 2 sizes"},
                  {keras_edit::json::array({nullptr, nullptr}), "the size of output axis 'd' is null"},
                  {keras_edit::json::array({5, 4}), "output_shape gives 5 for axis 'b'"},
                  {nullptr, "output_shape is missing"}});
  expect_refused(file, "einsum_dense", "bias_axes", {{"z", "bias_axes 'z'"}, {3, "bias_axes: expected a string"}});
  expect_refused(file, "einsum_dense", "lora_rank", {{4, "lora_rank=4"}});
  expect_refused(file, "einsum_dense", "quantization_config", {{keras_edit::json::object({{"mode", "int8"}}), "quantization_config"}});
}

TEST(ModelHostileSequenceConv, GroupNormalizationArguments) {
  const std::string file = kGraphs + "keras3/group_norm_lstm.keras";
  expect_refused(file, "group_normalization", "groups",
                 {{3, "not a multiple of groups=3"},
                  {0, "groups must be positive"},
                  {-5, "groups must be positive"},
                  {8, "groups=8 is more than the 4 channels"},
                  {"2", "groups: expected an integer"}});
  expect_refused(file, "group_normalization", "axis", {{1, "axis 1"}, {keras_edit::json::array({1, 2}), "one axis"}});
  expect_refused(file, "group_normalization", "epsilon", {{-1.0, "epsilon must be"}, {"small", "epsilon: expected a number"}});
}

TEST(ModelHostileSequenceConv, AdaptivePoolingArguments) {
  const std::string file = kGraphs + "keras3/adaptive_pooling_lstm.keras";
  expect_refused(file, "adaptive_average_pooling1d", "output_size",
                 {{0, "output_size: expected a positive integer"},
                  {keras_edit::json::array({3, 3}), "output_size: expected an integer"},
                  {"3", "output_size: expected an integer"},
                  {nullptr, "output_size: expected a positive integer"}});
  expect_refused(file, "adaptive_max_pooling1d", "data_format", {{"channels_middle", "data_format"}});
}

TEST(ModelHostileSequenceConv, Conv1DTransposeArguments) {
  const std::string file = kGraphs + "keras3/conv_transpose_output_padding.keras";
  expect_refused(file, "conv1d_transpose", "output_padding",
                 {{2, "output_padding must be at least 0 and less than strides=2"},
                  {-3, "output_padding must be at least 0"},
                  {"1", "output_padding: expected an integer"}});
  expect_refused(file, "conv1d_transpose", "padding", {{"causal", "padding: expected 'valid' or 'same'"}});
  expect_refused(file, "conv1d_transpose", "dilation_rate", {{2, "strides > 1 with dilation_rate > 1"}});
  expect_refused(file, "conv1d_transpose", "filters", {{0, "filters"}, {keras_edit::json::object(), "filters: expected an integer"}});
  expect_refused(file, "conv1d_transpose", "data_format", {{"channels_first", "data_format='channels_first'"}});
}

}  // namespace
