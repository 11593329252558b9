// SPDX-License-Identifier: Apache-2.0
// parse_layer_json for a layer entry already parsed (a model file's): writing it out to parse it
// again was a tenth of opening a model. Inside the core only: nlohmann-json is not a dependency of
// what includes recur/keras_json.hpp.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string_view>

#include "recur/keras_json.hpp"

namespace recur {

LayerConfig parse_layer_entry(const nlohmann::json& entry, int input_size, std::optional<Dialect> dialect,
                              std::optional<std::string_view> keras_version = std::nullopt);

}  // namespace recur
