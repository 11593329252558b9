// SPDX-License-Identifier: Apache-2.0
// Hostile configs of the generic RNN layer (its cell, StackedRNNCells) and of ConvLSTM1D/2D in a
// Keras-saved model: each is refused with a status and a message naming the argument, never a crash
// or an allocation past the limits.
#include "keras_config_edit.hpp"

namespace {

using keras_edit::json;

const std::string kKeras = RECUR_TEST_KERAS_DIR;
const std::string kSingle = kKeras + "/graphs/rnn_cells/keras3/rnn_gru_cell.keras";
const std::string kStacked = kKeras + "/graphs/rnn_cells/keras3/rnn_stacked.keras";

// Opens the file with `edit` applied to layer `name`, expects a failure whose message holds `word`.
void expect_refused(const std::string& file, const std::string& name, const std::function<void(json&)>& edit,
                    const std::string& word, const std::string& what) {
  keras_edit::expect_refused(file, name, edit, std::vector<std::string>{word}, what);
}

TEST(ModelHostileRnn, TheUneditedFilesRun) {
  for (const std::string& f : {kSingle, kStacked}) {
    const auto r = keras_edit::open_edited(f, [](json&) {});
    EXPECT_EQ(r.status, RECUR_OK) << f << ": " << r.message;
  }
}

TEST(ModelHostileRnn, UnknownCellClass) {
  expect_refused(kSingle, "rnn", [](json& l) { l["config"]["cell"]["class_name"] = "MyCustomCell"; }, "MyCustomCell",
                 "a custom cell");
  expect_refused(kStacked, "rnn", [](json& l) { l["config"]["cell"]["config"]["cells"][1]["class_name"] = "PeepholeLSTMCell"; },
                 "PeepholeLSTMCell", "a custom cell in a stack");
}

TEST(ModelHostileRnn, CellOfTheWrongType) {
  for (const json& bad : {json(5), json("GRUCell"), json(nullptr), json::array()})
    expect_refused(kSingle, "rnn", [&](json& l) { l["config"]["cell"] = bad; }, "cell", bad.dump());
  expect_refused(kSingle, "rnn", [](json& l) { l["config"].erase("cell"); }, "cell", "no cell");
}

TEST(ModelHostileRnn, StackedCellsListWithANonObject) {
  for (const json& bad : {json(5), json("gru"), json(nullptr), json::array({1})})
    expect_refused(kStacked, "rnn", [&](json& l) { l["config"]["cell"]["config"]["cells"][1] = bad; }, "cells[1]", bad.dump());
  expect_refused(kStacked, "rnn", [](json& l) { l["config"]["cell"]["config"]["cells"] = "gru_cell"; }, "cells",
                 "cells not a list");
}

TEST(ModelHostileRnn, StackedCellsEmpty) {
  expect_refused(kStacked, "rnn", [](json& l) { l["config"]["cell"]["config"]["cells"] = json::array(); }, "empty",
                 "no cells");
}

TEST(ModelHostileRnn, NestedStackRefusedByName) {
  expect_refused(kStacked, "rnn", [](json& l) {
    json& cells = l["config"]["cell"]["config"]["cells"];
    json inner = l["config"]["cell"];
    cells[0] = inner;
  }, "nested", "a stack inside a stack");
}

TEST(ModelHostileRnn, UnitsNegativeHugeOrNotAnInteger) {
  for (const json& bad : {json(-3), json(0), json(1e12), json(3000000000LL), json("4")}) {
    expect_refused(kSingle, "rnn", [&](json& l) { l["config"]["cell"]["config"]["units"] = bad; }, "units",
                   "single " + bad.dump());
    expect_refused(kStacked, "rnn", [&](json& l) { l["config"]["cell"]["config"]["cells"][2]["config"]["units"] = bad; },
                   "units", "stacked " + bad.dump());
  }
}

TEST(ModelHostileRnn, UnitsPastTheLimit) {
  expect_refused(kSingle, "rnn", [](json& l) { l["config"]["cell"]["config"]["units"] = 1 << 28; }, "units", "2^28 units");
}

TEST(ModelHostileRnn, StackOptionsRecurDoesNotRun) {
  expect_refused(kStacked, "rnn", [](json& l) { l["config"]["cell"]["config"]["reverse_state_order"] = true; },
                 "reverse_state_order", "reversed state order");
  expect_refused(kStacked, "rnn", [](json& l) { l["config"]["cell"]["config"]["cells"][0].erase("config"); }, "cells[0]",
                 "a cell without config");
}

TEST(ModelHostileRnn, ConstantsAndUnknownArguments) {
  expect_refused(kSingle, "rnn", [](json& l) { l["config"]["num_constants"] = 1; }, "num_constants", "constants");
  expect_refused(kSingle, "rnn", [](json& l) { l["config"]["peepholes"] = true; }, "peepholes", "unknown RNN argument");
  expect_refused(kSingle, "rnn", [](json& l) { l["config"]["return_sequences"] = "yes"; }, "return_sequences",
                 "return_sequences not a bool");
  expect_refused(kSingle, "rnn", [](json& l) { l["config"]["time_major"] = true; }, "time_major", "Keras 2's time_major");
}

const std::string kConv1 = kKeras + "/graphs/conv_lstm/keras3/convlstm1d_basic.keras";
const std::string kConv2 = kKeras + "/graphs/conv_lstm/keras3/convlstm2d_basic.keras";

TEST(ModelHostileConvLstm, TheUneditedFilesRun) {
  for (const std::string& f : {kConv1, kConv2}) {
    const auto r = keras_edit::open_edited(f, [](json&) {});
    EXPECT_EQ(r.status, RECUR_OK) << f << ": " << r.message;
  }
}

TEST(ModelHostileConvLstm, FiltersZeroNegativeHugeOrNotAnInteger) {
  for (const json& bad : {json(0), json(-2), json(1e12), json(3000000000LL), json("3"), json(nullptr)}) {
    expect_refused(kConv1, "conv_lstm1d", [&](json& l) { l["config"]["filters"] = bad; }, "filters", "1D " + bad.dump());
    expect_refused(kConv2, "conv_lstm2d", [&](json& l) { l["config"]["filters"] = bad; }, "filters", "2D " + bad.dump());
  }
  // Within the integer range but past the limits: refused before anything is allocated.
  expect_refused(kConv1, "conv_lstm1d", [](json& l) { l["config"]["filters"] = 1 << 29; }, "filters", "1D 2^29");
}

TEST(ModelHostileConvLstm, KernelSizeZeroNegativeHugeOrOfTheWrongRank) {
  for (const json& bad : {json(0), json(-3), json::array({0}), json(1 << 30), json("3"), json::array({3, 3})})
    expect_refused(kConv1, "conv_lstm1d", [&](json& l) { l["config"]["kernel_size"] = bad; }, "kernel_size", "1D " + bad.dump());
  for (const json& bad : {json::array({3, 0}), json::array({-1, 2}), json::array({3}), json::array({3, 2, 1})})
    expect_refused(kConv2, "conv_lstm2d", [&](json& l) { l["config"]["kernel_size"] = bad; }, "kernel_size", "2D " + bad.dump());
  // Huge kernels with 'same' padding fit the input, but not the weight limit.
  expect_refused(kConv2, "conv_lstm2d", [](json& l) { l["config"]["kernel_size"] = json::array({1 << 30, 1 << 30}); },
                 "kernel_size", "2D huge same");
}

TEST(ModelHostileConvLstm, KernelLargerThanTheInputWithValidPadding) {
  expect_refused(kConv1, "conv_lstm1d", [](json& l) {
    l["config"]["kernel_size"] = json::array({9});
    l["config"]["padding"] = "valid";
  }, "kernel", "1D kernel 9 over 7 positions");
  expect_refused(kConv1, "conv_lstm1d", [](json& l) { l["config"]["dilation_rate"] = json::array({4}); }, "kernel",
                 "1D dilated kernel over 7 positions");
}

TEST(ModelHostileConvLstm, StatefulWithoutAFixedBatch) {
  expect_refused(kKeras + "/graphs/conv_lstm/keras3/convlstm1d_stateful.keras", "x",
                 [](json& l) { l["config"]["batch_shape"][0] = nullptr; }, "batch", "stateful, batch unknown");
}

TEST(ModelHostileConvLstm, StridesDilationPaddingAndDataFormat) {
  for (const json& bad : {json("channels_middle"), json(1), json("NHWC")})
    expect_refused(kConv1, "conv_lstm1d", [&](json& l) { l["config"]["data_format"] = bad; }, "data_format", bad.dump());
  for (const json& bad : {json("causal"), json("full"), json(0)})
    expect_refused(kConv1, "conv_lstm1d", [&](json& l) { l["config"]["padding"] = bad; }, "padding", bad.dump());
  for (const json& bad : {json(0), json(-1), json::array({0, 1})})
    expect_refused(kConv2, "conv_lstm2d", [&](json& l) { l["config"]["strides"] = bad; }, "strides", bad.dump());
  expect_refused(kConv2, "conv_lstm2d", [](json& l) {
    l["config"]["strides"] = json::array({2, 1});
    l["config"]["dilation_rate"] = json::array({1, 2});
  }, "dilation_rate", "strides with dilation");
  expect_refused(kConv1, "conv_lstm1d", [](json& l) { l["config"]["peepholes"] = true; }, "peepholes", "unknown argument");
  expect_refused(kConv1, "conv_lstm1d", [](json& l) { l["config"]["activation"] = json{{"class_name", "Custom"}}; },
                 "activation", "custom activation");
}

// Not hostile, but it needs the fixtures this file reads: a stateful RNN over a stack of cells
// names its states per cell, and they are read, set and reset through the model.
TEST(ModelRnnCells, StackedStatefulLayersAreNamedPerCell) {
  recur_model* m = nullptr;
  ASSERT_EQ(recur_model_open(&m, (kKeras + "/graphs/rnn_cells/keras2/rnn_stateful_stacked.keras").c_str()), RECUR_OK)
      << recur_last_error();
  int32_t count = 0;
  ASSERT_EQ(recur_model_num_stateful_layers(m, &count), RECUR_OK);
  ASSERT_EQ(count, 2);
  const char* name = nullptr;
  int32_t ns = 0, batch = 0, units = 0;
  ASSERT_EQ(recur_model_stateful_layer(m, 0, &name, &ns, &batch, &units), RECUR_OK);
  EXPECT_EQ(std::string(name), "rnn/cell_0");
  EXPECT_EQ(ns, 1);  // GRUCell(3)
  EXPECT_EQ(units, 3);
  ASSERT_EQ(recur_model_stateful_layer(m, 1, &name, &ns, &batch, &units), RECUR_OK);
  EXPECT_EQ(std::string(name), "rnn/cell_1");
  EXPECT_EQ(ns, 2);  // LSTMCell(2)
  EXPECT_EQ(units, 2);
  size_t len = 0;
  ASSERT_EQ(recur_model_states_length(m, "rnn/cell_1", &len), RECUR_OK);
  EXPECT_EQ(len, static_cast<size_t>(2 * batch * 2));
  std::vector<float> v(len, 0.25f), back(len);
  ASSERT_EQ(recur_model_set_states(m, "rnn/cell_1", v.data(), v.size()), RECUR_OK);
  ASSERT_EQ(recur_model_get_states(m, "rnn/cell_1", back.data(), back.size()), RECUR_OK);
  EXPECT_EQ(back, v);
  ASSERT_EQ(recur_model_reset_states(m), RECUR_OK);
  ASSERT_EQ(recur_model_get_states(m, "rnn/cell_1", back.data(), back.size()), RECUR_OK);
  EXPECT_EQ(back, std::vector<float>(len, 0.0f));
  int32_t rec = 0;
  recur_model_info info;
  info.version = RECUR_MODEL_INFO_VERSION;
  ASSERT_EQ(recur_model_get_info(m, &info), RECUR_OK);
  for (int32_t i = 0; i < info.num_layers; ++i) {
    const char* cls = nullptr;
    ASSERT_EQ(recur_model_layer(m, i, nullptr, &cls, nullptr, nullptr, nullptr, &rec), RECUR_OK);
    if (std::string(cls) == "RNN") {
      EXPECT_EQ(rec, 1);
    }
  }
  recur_layer* cell = nullptr;
  ASSERT_EQ(recur_model_get_layer(m, "rnn/cell_1", &cell), RECUR_OK) << recur_last_error();
  recur_layer_destroy(cell);
  EXPECT_NE(recur_model_states_length(m, "rnn", &len), RECUR_OK);
  EXPECT_NE(std::string(recur_last_error()).find("rnn/cell_0"), std::string::npos) << recur_last_error();
  recur_model_destroy(m);
}

}  // namespace
