// SPDX-License-Identifier: Apache-2.0
// The table of Keras layer classes a model runs (model/layers/registry.cpp) and the page that lists
// them for users (docs/keras-layers.md): every registered class is on the page and every class the
// page says runs is registered.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "model/layers/registry.hpp"

namespace {

// The classes in the second column of the table under "## Layers recur runs".
std::set<std::string> documented_classes(const std::string& path) {
  std::ifstream f(path);
  EXPECT_TRUE(f.good()) << path;
  std::set<std::string> out;
  std::string line;
  bool in_section = false;
  const std::regex code("`([A-Z][A-Za-z0-9]*)`");
  while (std::getline(f, line)) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## Layers recur runs";
    if (!in_section || line.rfind("|", 0) != 0) continue;
    std::istringstream cols(line);
    std::string first, second;
    std::getline(cols, first, '|');  // "" before the first bar
    std::getline(cols, first, '|');
    std::getline(cols, second, '|');
    for (std::sregex_iterator it(second.begin(), second.end(), code), end; it != end; ++it) out.insert((*it)[1]);
  }
  return out;
}

TEST(LayerTable, TheDocsListEveryLayerRecurRuns) {
  const std::set<std::string> docs = documented_classes(std::string(RECUR_DOCS_DIR) + "/keras-layers.md");
  const auto registered = recur::graph::op_table().classes();
  const std::set<std::string> table(registered.begin(), registered.end());
  for (const std::string& c : table) EXPECT_TRUE(docs.count(c)) << c << " runs but docs/keras-layers.md does not list it";
  for (const std::string& c : docs) EXPECT_TRUE(table.count(c)) << "docs/keras-layers.md lists " << c << ", which recur does not register";
  EXPECT_GT(table.size(), 40u);
}

TEST(LayerTable, AnUnknownClassIsRefusedByName) {
  const recur::graph::json entry = {{"class_name", "NoSuchLayer"}, {"config", {{"name", "x"}}}};
  recur::graph::BuildContext ctx;
  try {
    recur::graph::make_op(entry, ctx, "layers/x");
    FAIL() << "NoSuchLayer was made";
  } catch (const recur::Error& e) {
    EXPECT_EQ(e.code(), recur::Error::Code::unsupported);
    EXPECT_NE(std::string(e.what()).find("unsupported layer NoSuchLayer"), std::string::npos) << e.what();
  }
  EXPECT_NE(recur::graph::unsupported_layer_advice(entry).find("docs/keras-layers.md"), std::string::npos);
}

}  // namespace
