// SPDX-License-Identifier: Apache-2.0
// Layer names are data: Keras accepts any name without '/', so a model file can hold names with
// terminal escapes, newlines, path parts, an empty name or a NUL byte. recur opens the first kind
// (they are shown escaped and made safe as file names by the CLI) and refuses the last two at open,
// naming the layer's index and why: no caller could ask for an empty name, and a C string cuts one
// with a NUL short.
#include "keras_config_edit.hpp"

#include "c_api_test_util.hpp"

namespace {

using keras_edit::json;

const std::string kTokens = std::string(RECUR_TEST_MODELS_DIR) + "/keras3/tokens.keras";

// Every string in the config equal to `from` (the layer's name and every reference to it) becomes `to`.
void rename(json& node, const std::string& from, const std::string& to) {
  if (node.is_string() && node.get<std::string>() == from) node = to;
  else if (node.is_array() || node.is_object())
    for (auto& child : node) rename(child, from, to);
}

TEST(HostileNames, EmptyLayerNameIsRefusedAtOpenWithItsIndex) {
  RECUR_SKIP_WITHOUT_FILES();
  const keras_edit::Opened r = keras_edit::open_edited(kTokens, [](json& c) { rename(c, "gru", ""); });
  EXPECT_EQ(r.status, RECUR_ERR_IO) << r.message;
  EXPECT_NE(r.message.find("layer 3 (GRU) has an empty name"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("name the layer in Keras"), std::string::npos) << r.message;
}

TEST(HostileNames, LayerNameWithNulIsRefusedAtOpenWithItsIndex) {
  RECUR_SKIP_WITHOUT_FILES();
  const std::string nul_name("gr\0u", 4);
  const keras_edit::Opened r = keras_edit::open_edited(kTokens, [&](json& c) { rename(c, "gru", nul_name); });
  EXPECT_EQ(r.status, RECUR_ERR_IO) << r.message;
  EXPECT_NE(r.message.find("layer 3 (GRU) is named 'gr\\x00u'"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("NUL byte"), std::string::npos) << r.message;
}

TEST(HostileNames, NamesWithEscapesNewlinesAndPathPartsOpenAndRun) {
  RECUR_SKIP_WITHOUT_FILES();
  for (const std::string& name : {std::string("\x1b[31mred\nrecur: spoofed"), std::string("a/../b"), std::string("a\\b"),
                                 std::string(".."), std::string("CON")}) {
    SCOPED_TRACE(name);
    const keras_edit::Opened r = keras_edit::open_edited(kTokens, [&](json& c) { rename(c, "gru", name); });
    EXPECT_EQ(r.status, RECUR_OK) << r.message;
  }
}

}  // namespace

namespace {

std::vector<std::string>* g_log_lines = nullptr;

void keep_line(void*, int32_t, const char* message) { g_log_lines->push_back(message); }

TEST(HostileNames, TheLogQuotesNamesEscaped) {
  RECUR_SKIP_WITHOUT_FILES();
  std::vector<std::string> lines;
  g_log_lines = &lines;
  ASSERT_RECUR_OK(recur_set_log_callback(keep_line, nullptr, 0));
  const keras_edit::Opened r =
      keras_edit::open_edited(kTokens, [](json& c) { rename(c, "gru", "\x1b[31mred\nrecur: spoofed"); });
  // A layer put on the device ("auto" here) logs its name.
  const std::string json_cfg = R"({"class_name": "GRU", "config": {"name": "\u001b[2Jx\ny", "units": 2}})";
  rt::Layer l = rt::make_json(json_cfg, 2);
  if (l) {
    EXPECT_RECUR_OK(recur_layer_set_device(l.get(), "auto"));
  }
  recur_set_log_callback(nullptr, nullptr, 0);
  g_log_lines = nullptr;
  EXPECT_EQ(r.status, RECUR_OK) << r.message;
  bool quoted = false;
  for (const std::string& line : lines) {
    for (unsigned char c : line) EXPECT_TRUE(c >= 0x20 && c != 0x7F) << "raw control byte in: " << line;
    quoted = quoted || line.find("\\x1B[2Jx\\x0Ay") != std::string::npos;
  }
  EXPECT_TRUE(quoted) << "no log line names the layer";
}

}  // namespace
