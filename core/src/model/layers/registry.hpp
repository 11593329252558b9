// SPDX-License-Identifier: Apache-2.0
// The table of the Keras layer classes a model runs: each family file (layers/<family>.cpp)
// registers its classes through one function listed in registry.cpp.
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/graph.hpp"

namespace recur::graph {

// Makes the op of one layer entry ({"class_name", "config", ...}); `object_path` is its .keras path.
using OpFactory = std::function<std::shared_ptr<Op>(const json& entry, const BuildContext& ctx, const std::string& object_path)>;

class OpTable {
 public:
  // Registers `classes` (a class and its aliases); a class registered twice is a programming error.
  void add(std::initializer_list<const char*> classes, OpFactory make);
  const OpFactory* find(const std::string& cls) const;
  std::vector<std::string> classes() const;

 private:
  std::map<std::string, OpFactory> table_;
};

// The one table, filled on first use.
const OpTable& op_table();

// One per family file.
void register_core_layers(OpTable& t);
void register_activation_layers(OpTable& t);
void register_merging_layers(OpTable& t);
void register_reshaping_layers(OpTable& t);
void register_normalization_layers(OpTable& t);
void register_pooling_layers(OpTable& t);
void register_convolutional_layers(OpTable& t);
void register_preprocessing_layers(OpTable& t);
void register_recurrent_layers(OpTable& t);
void register_conv_lstm_layers(OpTable& t);
void register_wrapper_layers(OpTable& t);
void register_attention_layers(OpTable& t);
void register_nested_models(OpTable& t);
void register_tf_op_lambda_layers(OpTable& t);  // Keras 2 TFOpLambda, SlicingOpLambda
void register_text_layers(OpTable& t);          // StringLookup, TextVectorization

// What to tell a user whose model has a layer no family registers (a Lambda, a custom layer, a
// Keras layer recur lacks).
std::string unsupported_layer_advice(const json& entry);

// Keras 3 op nodes (keras.ops.*) are found by their module, not their class (layers/keras_ops.cpp).
std::shared_ptr<Op> make_keras_op(const json& entry, const std::string& cls);

}  // namespace recur::graph
