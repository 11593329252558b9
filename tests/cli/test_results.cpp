// SPDX-License-Identifier: Apache-2.0
// Unit tests of the CLI's text and JSON printing of outputs (cli/results.cpp).
#include "results.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cctype>
#include <cmath>
#include <set>
#include <cstdlib>
#include <limits>

using recur_cli::Array;
using recur_cli::NamedArrays;

namespace {

Array array(std::vector<std::int64_t> shape, std::vector<float> data) {
  Array a;
  a.shape = std::move(shape);
  a.data = std::move(data);
  a.dtype = "<f4";
  return a;
}

TEST(Results, ValuesReadBackExactly) {
  for (float v : {0.1f, 1.0f / 3.0f, -2.5e-20f, 3.4028235e38f, 1.17549435e-38f, 0.0f}) {
    const std::string s = recur_cli::format_value(v);
    EXPECT_EQ(std::strtof(s.c_str(), nullptr), v) << s;
  }
  EXPECT_EQ(recur_cli::format_value(0.5f), "0.5");
}

TEST(Results, TextRowsPerBatchItem) {
  NamedArrays a;
  a.emplace_back("probs", array({2, 3}, {1, 2, 3, 4, 5, 6}));
  a.emplace_back("seq", array({2, 2, 1}, {0.5f, 1.5f, 2.5f, 3.5f}));
  a.emplace_back("flat", array({2}, {7, 8}));
  EXPECT_EQ(recur_cli::text_of(a),
            "probs: (2, 3)\n  [0]  1 2 3\n  [1]  4 5 6\n"
            "seq: (2, 2, 1)\n  [0, 0]  0.5\n  [0, 1]  1.5\n  [1, 0]  2.5\n  [1, 1]  3.5\n"
            "flat: (2,)\n  [0]  7\n  [1]  8\n");
  NamedArrays many;  // indices padded so the values line up
  many.emplace_back("y", array({11, 1}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  const std::string text = recur_cli::text_of(many);
  EXPECT_NE(text.find("\n  [9]   9\n  [10]  10\n"), std::string::npos) << text;
  NamedArrays empty;
  empty.emplace_back("none", array({0, 3}, {}));
  EXPECT_EQ(recur_cli::text_of(empty), "none: (0, 3)\n");
}

TEST(Results, JsonNestedLikeTheDims) {
  NamedArrays a;
  a.emplace_back("y", array({2, 1, 2}, {1, 2, 3, std::numeric_limits<float>::quiet_NaN()}));
  a.emplace_back("z\"q", array({1}, {-std::numeric_limits<float>::infinity()}));
  const std::string text = recur_cli::json_of(a);
  EXPECT_EQ(text, "{\"y\": {\"dims\": [2, 1, 2], \"values\": [[[1, 2]], [[3, null]]]}, "
                  "\"z\\\"q\": {\"dims\": [1], \"values\": [null]}}");
  const auto j = nlohmann::json::parse(text);  // valid JSON: NaN and infinities are null
  EXPECT_TRUE(j["y"]["values"][1][0][1].is_null());
}

}  // namespace

// ------------------------------------------------------------------------- names as file names

bool safe_on_every_os(const std::string& n) {
  if (n.empty() || n.size() > recur_cli::kMaxFileNameBytes || n[0] == '.' || n.back() == '.' || n.back() == ' ')
    return false;
  for (unsigned char c : n)
    if (c < 0x20 || c == 0x7F || std::string("/\\:*?\"<>|").find(static_cast<char>(c)) != std::string::npos) return false;
  return true;
}

TEST(SafeFileNames, HostileNamesBecomeSafeAndDistinct) {
  const std::vector<std::string> names = {"\x1b[31mred\nrecur: spoofed", "..", ".", "a/../../b", "a\\b", "",
                                          std::string("nul\0byte", 8), "con", "CON.txt", "end. ", std::string(300, 'x'),
                                          "a_b", "a/b", "A/B", "\xff\xfe", "caf\xc3\xa9"};
  const std::vector<std::string> got = recur_cli::safe_file_names(names);
  ASSERT_EQ(got.size(), names.size());
  std::set<std::string> folded;
  for (std::size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_TRUE(safe_on_every_os(got[i])) << got[i];
    std::string f = got[i];
    for (char& c : f) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_TRUE(folded.insert(f).second) << got[i] << " is given twice";
  }
  EXPECT_EQ(got[0], "_[31mred_recur_ spoofed");
  EXPECT_EQ(got[1], "__");
  EXPECT_EQ(got[2], "_");
  EXPECT_EQ(got[3], "a_.._.._b");
  EXPECT_EQ(got[4], "a_b");
  EXPECT_EQ(got[5], "output");
  EXPECT_EQ(got[6], "nul_byte");
  EXPECT_EQ(got[7], "_con");
  EXPECT_EQ(got[8], "_CON.txt");
  EXPECT_EQ(got[9], "end__");
  EXPECT_EQ(got[10], std::string(recur_cli::kMaxFileNameBytes, 'x'));
  EXPECT_EQ(got[11], "a_b_1");  // numbered after the names it meets
  EXPECT_EQ(got[12], "a_b_2");
  EXPECT_EQ(got[13], "A_B_3");  // equal ignoring case, as Windows and macOS compare
  EXPECT_EQ(got[14], "___1");   // bytes that are not UTF-8 ("__" is taken by "..")
  EXPECT_EQ(got[15], "caf\xc3\xa9");  // characters that are kept whole
}

TEST(SafeFileNames, NumberedNamesStayWithinTheCap) {
  const std::vector<std::string> got = recur_cli::safe_file_names({std::string(500, 'y'), std::string(400, 'y')});
  EXPECT_EQ(got[0], std::string(recur_cli::kMaxFileNameBytes, 'y'));
  EXPECT_EQ(got[1], std::string(recur_cli::kMaxFileNameBytes - 2, 'y') + "_1");
}

TEST(Results, TextEscapesNamesFromTheModel) {
  recur_cli::NamedArrays arrays;
  recur_cli::Array a;
  a.shape = {1, 1};
  a.data = {1.0f};
  a.dtype = "<f4";
  arrays.emplace_back("\x1b[2Jevil\nrecur: spoofed", a);
  const std::string text = recur_cli::text_of(arrays);
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.rfind("\\x1B[2Jevil\\x0Arecur: spoofed: (1, 1)\n", 0), 0u) << text;
}
