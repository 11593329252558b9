// SPDX-License-Identifier: Apache-2.0
// parse_layer_json for a layer entry already parsed (a model file's): writing it out to parse it
// again was a tenth of opening a model. Inside the core only: nlohmann-json is not a dependency of
// what includes recur/keras_json.hpp.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "recur/keras_json.hpp"

namespace recur {

LayerConfig parse_layer_entry(const nlohmann::json& entry, int input_size, std::optional<Dialect> dialect,
                              std::optional<std::string_view> keras_version = std::nullopt);

// obj[key] as a string: `fallback` when obj is not an object or has no such key (or null there);
// a value of another type fails INVALID_ARGUMENT naming "<field>.<key>" (json's own type error
// would name nothing and escape as an internal error).
std::string string_field(const nlohmann::json& obj, const char* key, const std::string& fallback,
                         const std::string& field = std::string());

// The name of a layer config's "dtype": a string, or a DTypePolicy object's config.name (Keras 2's
// Policy too; float32 when it names none); "" when there is no dtype. Fields of the wrong type
// fail INVALID_ARGUMENT naming them ("dtype.config.name: expected a string ...").
std::string dtype_policy_name(const nlohmann::json& cfg);

}  // namespace recur
