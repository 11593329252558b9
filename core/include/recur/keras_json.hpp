// SPDX-License-Identifier: Apache-2.0
// Keras JSON: layer configs as Keras serializes them (both dialects), and the initializer,
// regularizer and constraint settings inside them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "recur/config.hpp"
#include "recur/specs.hpp"

namespace recur {

// Parses {"class_name": "GRU", "config": {...}} as written by Keras 2 (tf.keras / tf-keras,
// including CuDNNGRU/CuDNNLSTM) or Keras 3 (with module/registered_name/build_config).
// `input_size` <= 0 takes it from batch_input_shape (Keras 2) or build_config (Keras 3).
// Without `dialect` the dialect is detected from the fields (Keras 3 when nothing tells).
// Throws Error(parse) for malformed JSON and Error(invalid_argument/unsupported) naming the field.
LayerConfig parse_layer_json(std::string_view json, int input_size, std::optional<Dialect> dialect,
                             std::optional<std::string_view> keras_version = std::nullopt);

// The layer kind of a Keras class name parse_layer_json accepts ("GRU", "LSTMV1", "SimpleRNN",
// "GRUCell", ...), or nothing for any other class.
std::optional<LayerKind> layer_kind_of_class(std::string_view class_name);

// Text forms accepted where a config takes an initializer, regularizer or constraint: a Keras
// name ("glorot_uniform", "l2", "max_norm") or a Keras JSON object
// ({"class_name": "Orthogonal", "config": {"gain": 2.0}}). An empty text means "none"
// (for initializers: invalid). `field` names the argument in error messages.
InitializerSpec parse_initializer_text(std::string_view text, const DialectInfo& dialect, const char* field);
RegularizerSpec parse_regularizer_text(std::string_view text, const DialectInfo& dialect, const char* field);
ConstraintSpec parse_constraint_text(std::string_view text, const DialectInfo& dialect, const char* field);

// The deepest nesting of arrays and objects in a JSON text (strings skipped), counted without
// parsing. Texts nested deeper than kMaxJsonDepth are refused before parsing: printing or walking
// them would recurse that deep. Keras configs, nested models included, stay far below it.
constexpr int kMaxJsonDepth = 256;
int json_nesting_depth(std::string_view text);

}  // namespace recur
