// SPDX-License-Identifier: Apache-2.0
// The layer table and make_op.
#include "model/layers/registry.hpp"

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
    register_recurrent_layers(t);
    register_conv_lstm_layers(t);
    register_wrapper_layers(t);
    register_nested_models(t);
    return t;
  }();
  return table;
}

bool is_sequence_model_class(const std::string& cls) {
  return cls == "Sequential" || cls == "Functional" || cls == "Model";
}

std::shared_ptr<Op> make_op(const json& entry, const BuildContext& ctx, const std::string& object_path) {
  const std::string cls = entry.value("class_name", std::string());
  const json& cfg = entry.at("config");
  std::shared_ptr<Op> op;
  if (entry.value("module", std::string()).find(".ops") != std::string::npos) {
    op = make_keras_op(entry, cls);
  } else if (const OpFactory* make = op_table().find(cls)) {
    op = (*make)(entry, ctx, object_path);
  } else {
    fail(Error::Code::unsupported, "unsupported layer ", cls);
  }
  op->class_name = cls;
  op->name = cfg.value("name", std::string());
  return op;
}

void StreamStates::reset() {  // the next step starts each state afresh
  states.clear();
  history.clear();
}

}  // namespace recur::graph
