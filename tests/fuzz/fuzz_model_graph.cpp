// SPDX-License-Identifier: Apache-2.0
// The model graph builder: the bytes are a .keras config.json (a functional or Sequential model:
// layers, inbound_nodes, input_layers / output_layers, nested models), zipped with a fixture's
// valid metadata.json and model.weights.h5 and opened with recur_model_open_memory. The graph is
// built before any weight is read, so cycles, dangling references and shapes that do not fit
// all reach the builder; the weights come from the fixture model whose layer names the config shares
// most, else from the first, so edits of a fixture's graph also load and run.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_common.hpp"

namespace {

// The names of a fixture config's top-level layers: they say which fixture's weights fit it.
std::set<std::string> layer_names(const nlohmann::json& j) {
  std::set<std::string> out;
  if (!j.is_object() || !j.contains("config") || !j["config"].is_object() || !j["config"].contains("layers") ||
      !j["config"]["layers"].is_array())
    return out;
  for (const auto& l : j["config"]["layers"])
    if (l.is_object() && l.contains("config") && l["config"].is_object() && l["config"].contains("name") &&
        l["config"]["name"].is_string())
      out.insert(l["config"]["name"].get<std::string>());
  return out;
}

// Every string value written as `"name": "..."` in the fuzzed bytes (a scan, not a parse: parsing
// the input here as well as in recur was a sixth of each run).
std::set<std::string> quoted_names(const std::string& text) {
  static const std::string kKey = "\"name\": \"";
  std::set<std::string> out;
  for (std::size_t at = text.find(kKey); at != std::string::npos; at = text.find(kKey, at)) {
    at += kKey.size();
    const std::size_t end = text.find('"', at);
    if (end == std::string::npos) break;
    out.insert(text.substr(at, end - at));
    at = end;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto& bases = recur_fuzz::base_models();
  static const std::vector<std::set<std::string>> names = [&] {
    std::vector<std::set<std::string>> out;
    for (const auto& b : bases) out.push_back(layer_names(nlohmann::json::parse(b.config, nullptr, false)));
    return out;
  }();
  const std::string config(reinterpret_cast<const char*>(data), size);
  // The fixture sharing the most layer names with the config (the first on a tie). Names of nested
  // layers count too; they rarely tip the choice.
  const std::set<std::string> mine = quoted_names(config);
  std::size_t which = 0, best = 0;
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::size_t common = 0;
    for (const std::string& n : mine) common += names[i].count(n);
    if (common > best) best = common, which = i;
  }
  const std::string image = recur_fuzz::zip_store(
      {{"metadata.json", bases[which].metadata}, {"config.json", config}, {"model.weights.h5", bases[which].weights}});
  recur_fuzz::open_and_exercise(image.data(), image.size(), "fuzz_graph.keras");
  return 0;
}
