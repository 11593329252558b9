// SPDX-License-Identifier: Apache-2.0
// The layer table and make_op.
#include "model/layers/registry.hpp"

#include <climits>

#include "io/keras_entry.hpp"
#include "model/device_run.hpp"
#include "recur/error.hpp"

namespace recur::graph {

void OpTable::add(std::initializer_list<const char*> classes, OpFactory make) {
  for (const char* c : classes)
    if (!table_.emplace(c, make).second) fail(Error::Code::state, "layer class ", c, " registered twice");
}

const OpFactory* OpTable::find(const std::string& cls) const {
  const auto it = table_.find(cls);
  return it == table_.end() ? nullptr : &it->second;
}

std::vector<std::string> OpTable::classes() const {
  std::vector<std::string> out;
  for (const auto& [name, make] : table_) out.push_back(name);
  return out;
}

const OpTable& op_table() {
  // Filled once, by the first caller (function-local statics are thread-safe); a static library
  // keeps every family because this list names them.
  static const OpTable table = [] {
    OpTable t;
    register_core_layers(t);
    register_activation_layers(t);
    register_merging_layers(t);
    register_reshaping_layers(t);
    register_normalization_layers(t);
    register_pooling_layers(t);
    register_convolutional_layers(t);
    register_preprocessing_layers(t);
    register_recurrent_layers(t);
    register_conv_lstm_layers(t);
    register_wrapper_layers(t);
    register_attention_layers(t);
    register_nested_models(t);
    register_tf_op_lambda_layers(t);
    register_text_layers(t);
    return t;
  }();
  return table;
}

std::string unsupported_layer_advice(const json& entry) {
  const std::string cls = string_field(entry, "class_name", "");
  const json* reg = entry.contains("registered_name") ? &entry["registered_name"] : nullptr;
  const std::string module = entry.contains("module") && entry["module"].is_string() ? entry["module"].get<std::string>() : "";
  const bool keras_module = module.empty() || module.rfind("keras", 0) == 0 || module.rfind("tf_keras", 0) == 0;
  if (cls == "Lambda")
    return "a Lambda layer holds Python code, which runs only in Python; rebuild the model with built-in layers "
           "(docs/keras-layers.md lists those recur runs)";
  if ((reg && reg->is_string() && reg->get<std::string>().find('>') != std::string::npos) || !keras_module)
    return "a custom layer (its code is the user's, not Keras's); recur runs Keras's built-in layers "
           "(docs/keras-layers.md lists them)";
  return "recur does not run this Keras layer; docs/keras-layers.md lists the layers it runs";
}

bool is_sequence_model_class(const std::string& cls) {
  return cls == "Sequential" || cls == "Functional" || cls == "Model";
}

std::shared_ptr<Op> make_op(const json& entry, const BuildContext& ctx, const std::string& object_path) {
  const std::string cls = string_field(entry, "class_name", "");
  const json& cfg = entry.at("config");
  dtype_policy_name(cfg);  // its fields' types, for every layer (recurrent ones check the name too)
  std::shared_ptr<Op> op;
  if (string_field(entry, "module", "").find(".ops") != std::string::npos) {
    op = make_keras_op(entry, cls);
  } else if (const OpFactory* make = op_table().find(cls)) {
    op = (*make)(entry, ctx, object_path);
  } else {
    fail(Error::Code::unsupported, "unsupported layer ", cls);
  }
  op->class_name = cls;
  op->name = string_field(cfg, "name", "");
  return op;
}

void StreamStates::reset() {  // the next step starts each state afresh
  states.clear();
  history.clear();
}

void StreamStates::history_to_host() {
  for (auto& [key, v] : history) download_to_host(v);
}

int StreamStates::scope(const Op* model, int site, std::size_t nodes) {
  const auto it = scopes_.find({model, site});
  if (it != scopes_.end()) return it->second;
  if (nodes > static_cast<std::size_t>(INT_MAX - next_base_))
    fail(Error::Code::limit, "model '", model->name, "': its nested calls have more call sites than a stream can key");
  const int base = next_base_;
  next_base_ += static_cast<int>(nodes);
  scopes_.emplace(std::make_pair(model, site), base);
  return base;
}

}  // namespace recur::graph
