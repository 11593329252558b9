// SPDX-License-Identifier: Apache-2.0
// Unit tests of the CLI's text and JSON printing of outputs (cli/results.cpp).
#include "results.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
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
