// SPDX-License-Identifier: Apache-2.0
// Building a model graph from a Keras model config (Sequential or functional, Keras 2 and Keras 3
// node formats, nested models), running it, loading its weights, and deciding whether it streams.
#include "model/graph.hpp"
#include "model/device_run.hpp"
#include "model/layers/registry.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <set>

#include "io/json_int.hpp"
#include "io/keras_entry.hpp"
#include "io/printable.hpp"
#include "model/layers/layer_util.hpp"
#include "recur/cancel.hpp"
#include "recur/error.hpp"

namespace recur::graph {
namespace {

using Code = Error::Code;

constexpr std::size_t kMaxLayers = 10000;
constexpr std::size_t kMaxNodes = kMaxGraphNodes;

// Keras's to_snake_case: drop non-word characters, then "_" before each capitalised word that
// follows any character and between a lower-case and an upper-case letter, then lower-case.
// Written out (ASCII classes, as the regex it replaces) because compiling std::regex per call
// cost more than the rest of opening a model.
std::string snake_case(const std::string& name) {
  auto upper = [](char c) { return c >= 'A' && c <= 'Z'; };
  auto lower = [](char c) { return c >= 'a' && c <= 'z'; };
  std::string w;
  for (char c : name)
    if (lower(c) || upper(c) || (c >= '0' && c <= '9') || c == '_') w += c;
  std::string a;  // (.)([A-Z][a-z]+) -> \1_\2, matches taken left to right without overlap
  for (std::size_t i = 0; i < w.size();) {
    if (i + 2 < w.size() && upper(w[i + 1]) && lower(w[i + 2])) {
      std::size_t j = i + 3;
      while (j < w.size() && lower(w[j])) ++j;
      a += w[i];
      a += '_';
      a.append(w, i + 1, j - i - 1);
      i = j;
    } else {
      a += w[i++];
    }
  }
  std::string s;  // ([a-z])([A-Z]) -> \1_\2
  for (std::size_t i = 0; i < a.size();) {
    if (i + 1 < a.size() && lower(a[i]) && upper(a[i + 1])) {
      s += a[i];
      s += '_';
      s += a[i + 1];
      i += 2;
    } else {
      s += a[i++];
    }
  }
  for (auto& c : s)
    if (upper(c)) c = static_cast<char>(c - 'A' + 'a');
  return s;
}

struct TensorRef {
  std::string layer;
  int node = 0;
  int tensor = 0;
};

bool is_k3_tensor(const json& v) {
  return v.is_object() && string_field(v, "class_name", "") == "__keras_tensor__" && v.contains("config") &&
         v["config"].is_object() && v["config"].contains("keras_history");
}

int small_int(const json& v, const std::string& where) {
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > 1000000)
    fail(Code::io, where, ": expected an integer in [0, 1000000], got ", io::excerpt(v));
  return v.get<int>();
}

TensorRef ref_of_history(const json& h, const std::string& where) {
  if (!h.is_array() || h.size() < 3 || !h[0].is_string())
    fail(Code::io, where, ": a tensor reference must be [layer name, node index, tensor index], got ", io::excerpt(h));
  return {h[0].get<std::string>(), small_int(h[1], where), small_int(h[2], where)};
}

// Every Keras 3 tensor inside `v`, in order.
void k3_tensors(const json& v, std::vector<TensorRef>& out, const std::string& where, int depth = 0) {
  if (depth > 64) fail(Code::io, where, ": arguments nested too deeply");
  if (is_k3_tensor(v)) {
    out.push_back(ref_of_history(v["config"]["keras_history"], where));
  } else if (v.is_array()) {
    for (const auto& x : v) k3_tensors(x, out, where, depth + 1);
  } else if (v.is_object()) {
    for (const auto& item : v.items()) k3_tensors(item.value(), out, where, depth + 1);
  }
}

struct CallSpec {
  std::vector<TensorRef> main, init;
  bool explicit_mask = false;  // Keras 3: the call names a mask tensor
  TensorRef mask;
  std::shared_ptr<CallArgs> args;  // made when the call has more than positional tensors
  CallArgs& arguments() {
    if (!args) args = std::make_shared<CallArgs>();
    return *args;
  }
};

// Tensors a layer takes by keyword as further main inputs (MultiHeadAttention's value, key and
// attention_mask), after the positional ones; the op tells them apart by CallArgs::roles.
bool named_main(const std::string& key) {
  return key == "query" || key == "value" || key == "key" || key == "attention_mask";
}

// Keras 2's tensors passed by keyword: [layer name, node, tensor] (or a Keras 3 tensor), or lists.
void k2_refs(const json& v, std::vector<TensorRef>& out, const std::string& where, int depth = 0) {
  if (depth > 64) fail(Code::io, where, ": arguments nested too deeply");
  if (is_k3_tensor(v)) out.push_back(ref_of_history(v["config"]["keras_history"], where));
  else if (v.is_array() && v.size() >= 3 && v[0].is_string()) out.push_back(ref_of_history(v, where));
  else if (v.is_array())
    for (const auto& x : v) k2_refs(x, out, where, depth + 1);
}

CallSpec parse_call(const json& node, bool recurrent, bool op_layer, const std::string& where) {
  CallSpec c;
  auto add_main = [&](const TensorRef& r, const std::string& role) {
    c.main.push_back(r);
    if (!role.empty() || c.args) {
      CallArgs& a = c.arguments();
      a.roles.resize(c.main.size() - 1);
      a.roles.push_back(role);
    }
  };
  if (op_layer && node.is_array()) {
    // Keras 2 TFOpLambda: the first argument's tensors (constants are the op's to read), then the
    // tensors among the kwargs, in key order (TFOpLambda's op takes them in the same order).
    const std::vector<const json*> entries = keras2_node_entries(node, where);
    for (const json* t : entries)
      if ((*t)[0] != "_CONSTANT_VALUE") add_main(ref_of_history(*t, where), "");
    if (!entries.empty() && entries.back()->size() > 3) {
      std::vector<const json*> refs;
      keras2_kwarg_refs((*entries.back())[3], refs, where);
      for (const json* r : refs) add_main(ref_of_history(*r, where), "");
    }
  } else if (node.is_array()) {  // Keras 2: [[name, node, tensor, kwargs], ...]; extra tensors are initial states
    // A stack of cells' initial states come as nested lists of references: [[h1], [[h2], [c2]]].
    std::vector<const json*> flat;
    std::function<void(const json&, int)> walk = [&](const json& t, int depth) {
      if (depth > 64) fail(Code::io, where, ": arguments nested too deeply");
      if (t.is_array() && !t.empty() && t[0].is_array()) {
        for (const auto& x : t) walk(x, depth + 1);
      } else {
        flat.push_back(&t);
      }
    };
    for (const auto& t : node) walk(t, 0);
    for (const json* tp : flat) {
      const json& t = *tp;
      if (!t.is_array()) fail(Code::io, where, ": an inbound node entry must be a list, got ", io::excerpt(t));
      TensorRef r = ref_of_history(t, where);
      if (recurrent && !c.main.empty()) c.init.push_back(r);
      else add_main(r, "");
      if (t.size() > 3 && t[3].is_object()) {
        std::vector<TensorRef> extra;
        k3_tensors(t[3].contains("initial_state") ? t[3]["initial_state"] : json(), extra, where);
        for (auto& e : extra) c.init.push_back(e);
        if (&t != &node[0] || recurrent) continue;  // a list call repeats the same arguments by each tensor
        for (const auto& [key, value] : t[3].items()) {
          if (key == "initial_state" || key == "mask" || value.is_null()) continue;
          std::vector<TensorRef> refs;
          k2_refs(value, refs, where);
          if (refs.empty()) c.arguments().kwargs[key] = value;
          else if (named_main(key))
            for (auto& x : refs) add_main(x, key);
        }
      }
    }
  } else if (node.is_object()) {  // Keras 3: {"args": [...], "kwargs": {...}}
    const json args = node.value("args", json::array());
    if (!args.is_array()) fail(Code::io, where, ": 'args' must be a list");
    for (std::size_t i = 0; i < args.size(); ++i) {
      std::vector<TensorRef> t;
      k3_tensors(args[i], t, where);
      for (auto& r : t) {
        if (recurrent && i > 0) c.init.push_back(r);
        else add_main(r, "");
      }
    }
    if (node.contains("kwargs") && node["kwargs"].is_object()) {
      for (const auto& [key, value] : node["kwargs"].items()) {
        std::vector<TensorRef> t;
        k3_tensors(value, t, where);
        if (key == "mask") {  // the mask Keras computed for it: recur propagates the same one
          c.explicit_mask = t.size() == 1;
          if (c.explicit_mask) c.mask = t[0];
          continue;
        }
        if (t.empty()) {
          if (!value.is_null()) c.arguments().kwargs[key] = value;
          continue;
        }
        if (key == "initial_state" && recurrent) {
          for (auto& r : t) c.init.push_back(r);
        } else if (named_main(key) && !recurrent) {
          for (auto& r : t) add_main(r, key);
        } else {
          fail(Code::unsupported, where, ": a tensor passed as '", key, "'");
        }
      }
    }
  } else {
    fail(Code::io, where, ": an inbound node must be a list or an object, got ", io::excerpt(node));
  }
  if (c.args) c.args->roles.resize(c.main.size());
  return c;
}

// input_layers / output_layers: [[name, node, tensor], ...], one [name, node, tensor], or a dict.
std::vector<TensorRef> endpoint_refs(const json& v, const std::string& where) {
  std::vector<TensorRef> out;
  if (v.is_array() && v.size() >= 3 && v[0].is_string()) {
    out.push_back(ref_of_history(v, where));
  } else if (v.is_array()) {
    for (const auto& x : v) {
      auto sub = endpoint_refs(x, where);
      out.insert(out.end(), sub.begin(), sub.end());
    }
  } else if (v.is_object()) {
    for (const auto& item : v.items()) {
      auto sub = endpoint_refs(item.value(), where);
      out.insert(out.end(), sub.begin(), sub.end());
    }
  } else {
    fail(Code::io, where, ": expected tensor references, got ", io::excerpt(v));
  }
  return out;
}

Spec spec_of_shape(const json& shape, bool ids, const std::string& where) {
  if (!shape.is_array() || shape.empty() || shape.size() > RECUR_MAX_RANK_CORE)
    fail(Code::io, where, ": expected a batch shape list of 1..", RECUR_MAX_RANK_CORE, " axes, got ", io::excerpt(shape));
  Spec s;
  s.ids = ids;
  for (const auto& d : shape) {
    if (d.is_null()) s.dims.push_back(-1);
    // Within int32: the C ABI reports sizes of axes as int32_t (recur_model_get_info).
    else if (int x = 0; io::int_in(d, 0, io::kIntMax, x))
      s.dims.push_back(x);
    else fail(Code::io, where, ": a dimension must be null or an integer in [0, ", io::kIntMax, "], got ",
              io::excerpt(d), " (fix the model's declared input shape)");
  }
  return s;
}

bool int_dtype(const json& cfg) {
  const std::string name = dtype_policy_name(cfg);
  return name.rfind("int", 0) == 0 || name.rfind("uint", 0) == 0;
}

bool string_dtype(const json& cfg) {
  return cfg.contains("dtype") && cfg["dtype"].is_string() && cfg["dtype"].get<std::string>() == "string";
}

// An input's spec from its batch shape and its config's dtype.
Spec input_spec(const json& shape, const json& cfg, const std::string& where) {
  Spec s = spec_of_shape(shape, int_dtype(cfg), where);
  s.strings = string_dtype(cfg);
  return s;
}

// The recorded input shape of a layer entry (build_config or batch_input_shape), when it has one.
const json* recorded_shape(const json& e) {
  if (e.contains("build_config") && e["build_config"].is_object() && e["build_config"].contains("input_shape")) {
    // Keras 2 records a call with initial_state tensors as a list of shapes, the input's first.
    const json& s = e["build_config"]["input_shape"];
    return s.is_array() && !s.empty() && s[0].is_array() ? &s[0] : &s;
  }
  if (e["config"].contains("batch_input_shape")) return &e["config"]["batch_input_shape"];
  if (e["config"].contains("batch_shape")) return &e["config"]["batch_shape"];
  return nullptr;
}

bool is_op_entry(const json& e) {
  const std::string module = string_field(e, "module", "");
  return module.find(".ops") != std::string::npos;
}

// Keras 2 (tf_keras's _should_skip_first_node): a nested functional model, or a nested
// Sequential whose first layer is an InputLayer or has an input shape, was called once when it was
// built; that call is not saved, so the saved calls are numbered from 1.
bool keras2_skips_first_call(const json& e) {
  const std::string cls = string_field(e, "class_name", "");
  if (cls == "Functional" || cls == "Model") return true;
  if (cls != "Sequential") return false;
  const json& cfg = e["config"];
  if (!cfg.contains("layers") || !cfg["layers"].is_array() || cfg["layers"].empty() || !cfg["layers"][0].is_object())
    return false;
  const json& first = cfg["layers"][0];
  if (string_field(first, "class_name", "") == "InputLayer") return true;
  return first.contains("config") && first["config"].is_object() &&
         (first["config"].contains("batch_input_shape") || first["config"].contains("batch_shape"));
}

}  // namespace

std::unique_ptr<Graph> Graph::build(const json& model_config, const BuildContext& ctx, const std::string& object_path,
                                    const std::vector<Spec>* input_specs) {
  auto g = std::make_unique<Graph>();
  g->object_path = object_path;
  g->context = ctx;
  const std::string& file = ctx.file;
  if (!model_config.is_object() || !model_config.contains("class_name") || !model_config.contains("config"))
    fail(Code::io, file, ": model_config: expected {\"class_name\": ..., \"config\": {...}}");
  const std::string cls = model_config["class_name"].is_string() ? model_config["class_name"].get<std::string>() : "";
  if (!is_sequence_model_class(cls))
    fail(Code::unsupported, file, ": model class '", io::printable(cls), "' (recur reads Sequential and Functional models)");
  const json& cfg = model_config["config"];
  if (!cfg.is_object() || !cfg.contains("layers") || !cfg["layers"].is_array())
    fail(Code::io, file, ": model_config: ", cls, " has no layer list");
  const json& entries = cfg["layers"];
  if (entries.size() > kMaxLayers) fail(Code::io, file, ": model_config: too many layers (", entries.size(), ")");
  g->sequential = cls == "Sequential";
  std::map<std::string, int> by_name;
  std::map<std::string, int> used;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const json& e = entries[i];
    if (!e.is_object() || !e.contains("class_name") || !e["class_name"].is_string() || !e.contains("config") ||
        !e["config"].is_object())
      fail(Code::io, file, ": model_config: layer ", i, " is not {\"class_name\": ..., \"config\": {...}}");
    if (e["config"].contains("name") && !e["config"]["name"].is_string())
      fail(Code::io, file, ": model_config: layer ", i, ": 'name' must be a string, got ", io::excerpt(e["config"]["name"]));
    LayerEntry le;
    le.class_name = e["class_name"].get<std::string>();
    le.name = e["config"].contains("name") && e["config"]["name"].is_string() ? e["config"]["name"].get<std::string>()
              : e.contains("name") && e["name"].is_string()                   ? e["name"].get<std::string>()
                                                                              : "layer_" + std::to_string(i);
    // Keras accepts any name without '/', but recur's callers pick layers, outputs and states by
    // name through C strings: an empty name cannot be asked for and one with a NUL byte is cut there.
    if (le.name.empty())
      fail(Code::io, file, ": model_config: layer ", i, " (", io::printable(le.class_name),
           ") has an empty name, which no caller could ask for by name; name the layer in Keras (name=\"...\") and "
           "save the model again");
    if (le.name.find('\0') != std::string::npos)
      fail(Code::io, file, ": model_config: layer ", i, " (", io::printable(le.class_name), ") is named '",
           io::printable(le.name), "', which holds a NUL byte that C strings cut short; rename the layer in Keras and "
           "save the model again");
    le.entry = &e;
    le.is_op = is_op_entry(e);
    if (by_name.count(le.name)) fail(Code::io, file, ": model_config: two layers are named '", io::printable(le.name), "'");
    by_name[le.name] = static_cast<int>(i);
    if (!le.is_op && !(le.class_name == "InputLayer" && g->sequential)) {
      // .keras object paths: layers/<snake_case class name, uniquified> over the model's layers.
      const std::string base = snake_case(le.class_name);
      std::string unique = base;
      if (used.count(base)) unique = base + "_" + std::to_string(++used[base]);
      else used[base] = 0;
      le.object_path = (object_path.empty() ? "" : object_path + "/") + "layers/" + unique;
    }
    g->layers.push_back(std::move(le));
  }

  auto add_node = [&](int layer) {
    if (g->nodes.size() >= kMaxNodes) fail(Code::io, file, ": model_config: too many layer calls");
    Node n;
    n.layer = layer;
    g->nodes.push_back(n);
    const int id = static_cast<int>(g->nodes.size()) - 1;
    if (layer >= 0) g->layers[static_cast<std::size_t>(layer)].nodes.push_back(id);
    return id;
  };
  auto input_spec_of = [&](const json& e, std::size_t index) {
    if (input_specs) {
      if (index >= input_specs->size())
        fail(Code::shape, file, ": model '", object_path, "' has more inputs than its caller gives");
      return (*input_specs)[index];
    }
    const json& ic = e["config"];
    const json shape = ic.contains("batch_shape") ? ic["batch_shape"] : ic.value("batch_input_shape", json());
    return input_spec(shape, ic, file + ": model_config: InputLayer '" + io::printable(string_field(ic, "name", "")) + "'");
  };

  if (g->sequential) {
    int prev = -1;
    std::size_t first = 0;
    if (!entries.empty() && g->layers[0].class_name == "InputLayer") {
      prev = add_node(0);
      g->nodes[static_cast<std::size_t>(prev)].is_input = true;
      g->nodes[static_cast<std::size_t>(prev)].out = {input_spec_of(entries[0], 0)};
      g->input_names.push_back(g->layers[0].name);
      first = 1;
    } else {
      Spec s;
      if (input_specs && !input_specs->empty()) {
        s = (*input_specs)[0];
      } else {
        const json* shape = nullptr;
        if (model_config.contains("build_config") && model_config["build_config"].is_object() &&
            model_config["build_config"].contains("input_shape"))
          shape = &model_config["build_config"]["input_shape"];
        else if (!entries.empty())
          shape = recorded_shape(entries[0]);
        if (!shape) fail(Code::io, file, ": model_config: the Sequential model records no input shape");
        s = entries.empty() ? spec_of_shape(*shape, false, file + ": model_config: input shape")
                            : input_spec(*shape, entries[0]["config"], file + ": model_config: input shape");
      }
      prev = add_node(-1);
      g->nodes[static_cast<std::size_t>(prev)].is_input = true;
      g->nodes[static_cast<std::size_t>(prev)].out = {s};
      g->input_names.push_back(entries.empty() ? "input" : g->layers[0].name + "_input");
    }
    g->input_nodes.push_back(prev);
    g->nodes[static_cast<std::size_t>(prev)].input_index = 0;
    for (std::size_t i = first; i < entries.size(); ++i) {
      const int id = add_node(static_cast<int>(i));
      g->nodes[static_cast<std::size_t>(id)].main = {Ref{prev, 0}};
      prev = id;
    }
    g->outputs = {Ref{prev, -1}};  // every output of the last layer, resolved after the build
  } else {
    // Call sites, then their references.
    std::vector<std::vector<CallSpec>> calls(g->layers.size());
    for (std::size_t i = 0; i < g->layers.size(); ++i) {
      LayerEntry& le = g->layers[i];
      const std::string where = file + ": model_config: layer '" + io::printable(le.name) + "'";
      if (le.class_name == "InputLayer") {
        const int id = add_node(static_cast<int>(i));
        g->nodes[static_cast<std::size_t>(id)].is_input = true;
        continue;
      }
      const json& e = *le.entry;
      if (!e.contains("inbound_nodes") || !e["inbound_nodes"].is_array())
        fail(Code::io, where, ": no inbound_nodes");
      const bool recurrent = le.class_name == "GRU" || le.class_name == "LSTM" || le.class_name == "SimpleRNN" ||
                             le.class_name == "CuDNNGRU" || le.class_name == "CuDNNLSTM" || le.class_name == "Bidirectional" ||
                             le.class_name == "RNN" || le.class_name.rfind("ConvLSTM", 0) == 0;
      for (const auto& node : e["inbound_nodes"]) {
        calls[i].push_back(parse_call(node, recurrent, le.class_name == "TFOpLambda" || le.class_name == "SlicingOpLambda", where));
        add_node(static_cast<int>(i));
      }
    }
    // Keras 2 numbers the calls of a nested model that has its own InputLayer from 1: its call 0
    // is the one that built it, which the config leaves out (tf_keras's
    // _should_skip_first_node). Every reference to such a model is one above its call's place
    // in inbound_nodes. Plain layers (shared ones included) and Keras 3 number from 0.
    std::vector<int> first_call(g->layers.size(), 0);
    if (ctx.dialect.dialect == Dialect::keras2)
      for (std::size_t i = 0; i < g->layers.size(); ++i)
        first_call[i] = keras2_skips_first_call(*g->layers[i].entry) ? 1 : 0;
    auto resolve = [&](const TensorRef& r, const std::string& where) {
      auto it = by_name.find(r.layer);
      if (it == by_name.end())
        fail(Code::io, where, ": refers to layer '", io::printable(r.layer), "', which the model does not have");
      const LayerEntry& target = g->layers[static_cast<std::size_t>(it->second)];
      const auto& sites = target.nodes;
      const int base = first_call[static_cast<std::size_t>(it->second)];
      if (r.node < base)
        fail(Code::io, where, ": refers to call ", r.node, " of model '", io::printable(r.layer),
             "', which Keras 2 numbers from ", base, " (call 0 built it and is not in the config)");
      const std::size_t k = static_cast<std::size_t>(r.node - base);
      if (k >= sites.size())
        fail(Code::io, where, ": refers to call ", r.node, " of layer '", io::printable(r.layer), "', which has ",
             sites.size(), base ? " (numbered from 1)" : "");
      return Ref{sites[k], r.tensor};
    };
    for (std::size_t i = 0; i < g->layers.size(); ++i) {
      const std::string where = file + ": model_config: layer '" + io::printable(g->layers[i].name) + "'";
      for (std::size_t k = 0; k < calls[i].size(); ++k) {
        Node& n = g->nodes[static_cast<std::size_t>(g->layers[i].nodes[k])];
        for (const auto& r : calls[i][k].main) n.main.push_back(resolve(r, where));
        for (const auto& r : calls[i][k].init) n.initial_state.push_back(resolve(r, where));
        // Keras 3 fills in the inputs' mask only for a call with one tensor argument: a recurrent
        // layer called with initial_state tensors runs unmasked unless the call names a mask.
        n.drop_mask = ctx.dialect.dialect == Dialect::keras3 && !calls[i][k].init.empty() && !calls[i][k].explicit_mask;
        if (calls[i][k].explicit_mask) n.mask = resolve(calls[i][k].mask, where);
        n.call = calls[i][k].args;
        if (n.main.empty()) fail(Code::io, where, ": a call with no input tensor");
      }
    }
    const std::string where = file + ": model_config";
    bool any_input = false;
    for (const LayerEntry& le : g->layers) any_input = any_input || le.class_name == "InputLayer";
    if (!any_input) fail(Code::io, where, ": the functional model has no InputLayer");
    if (!cfg.contains("input_layers") || !cfg.contains("output_layers"))
      fail(Code::io, where, ": the functional model has no input_layers/output_layers");
    for (const auto& r : endpoint_refs(cfg["input_layers"], where + ": input_layers")) {
      const Ref ref = resolve(r, where + ": input_layers");
      if (!g->nodes[static_cast<std::size_t>(ref.node)].is_input)
        fail(Code::io, where, ": input_layers names '", io::printable(r.layer), "', which is not an InputLayer");
      g->nodes[static_cast<std::size_t>(ref.node)].input_index = static_cast<int>(g->input_nodes.size());
      g->nodes[static_cast<std::size_t>(ref.node)].out = {
          input_spec_of(*g->layers[static_cast<std::size_t>(g->nodes[static_cast<std::size_t>(ref.node)].layer)].entry,
                        g->input_nodes.size())};
      g->input_nodes.push_back(ref.node);
      g->input_names.push_back(r.layer);
    }
    if (g->input_nodes.empty()) fail(Code::io, where, ": the functional model has no InputLayer");
    for (const auto& r : endpoint_refs(cfg["output_layers"], where + ": output_layers"))
      g->outputs.push_back(resolve(r, where + ": output_layers"));
    if (g->outputs.empty()) fail(Code::io, where, ": the model has no outputs");
  }

  // The nodes the outputs need, in an order that runs each after its inputs (a cycle is an error).
  {
    const std::size_t N = g->nodes.size();
    std::vector<char> needed(N, 0);
    std::vector<int> stack;
    // Required: what the outputs are computed from; then what the calls' explicit masks need.
    for (int pass = 0; pass < 2; ++pass) {
      if (pass == 0) {
        for (const Ref& r : g->outputs) stack.push_back(r.node);
        for (int id : g->input_nodes) stack.push_back(id);
      } else {
        for (std::size_t id = 0; id < N; ++id)
          if (needed[id] && g->nodes[id].mask.node >= 0) stack.push_back(g->nodes[id].mask.node);
      }
      while (!stack.empty()) {
        const int id = stack.back();
        stack.pop_back();
        if (needed[static_cast<std::size_t>(id)]) continue;
        needed[static_cast<std::size_t>(id)] = static_cast<char>(pass == 0 ? 1 : 2);
        for (const Ref& r : g->nodes[static_cast<std::size_t>(id)].main) stack.push_back(r.node);
        for (const Ref& r : g->nodes[static_cast<std::size_t>(id)].initial_state) stack.push_back(r.node);
        if (pass == 1 && g->nodes[static_cast<std::size_t>(id)].mask.node >= 0) stack.push_back(g->nodes[static_cast<std::size_t>(id)].mask.node);
      }
      if (pass == 0) g->required = needed;
    }
    std::vector<int> pending(N, 0);
    std::vector<std::vector<int>> users(N);
    for (std::size_t id = 0; id < N; ++id) {
      if (!needed[id]) continue;
      std::set<int> deps;
      for (const Ref& r : g->nodes[id].main) deps.insert(r.node);
      for (const Ref& r : g->nodes[id].initial_state) deps.insert(r.node);
      if (g->nodes[id].mask.node >= 0) deps.insert(g->nodes[id].mask.node);
      pending[id] = static_cast<int>(deps.size());
      for (int d : deps) users[static_cast<std::size_t>(d)].push_back(static_cast<int>(id));
    }
    std::vector<int> ready;
    for (std::size_t id = N; id-- > 0;)
      if (needed[id] && pending[id] == 0) ready.push_back(static_cast<int>(id));
    while (!ready.empty()) {
      const int id = ready.back();
      ready.pop_back();
      g->order.push_back(id);
      for (int u : users[static_cast<std::size_t>(id)])
        if (--pending[static_cast<std::size_t>(u)] == 0) ready.push_back(u);
    }
    std::size_t count = 0;
    for (char c : needed) count += c != 0;
    if (g->order.size() != count) {
      for (std::size_t id = 0; id < N; ++id)
        if (needed[id] && pending[id] > 0)
          fail(Code::io, file, ": model_config: the graph has a cycle through layer '",
               io::printable(g->layers[static_cast<std::size_t>(g->nodes[id].layer)].name), "'");
    }
    for (int id : g->order) {
      const Node& n = g->nodes[static_cast<std::size_t>(id)];
      if (n.is_input && n.input_index < 0)
        fail(Code::io, file, ": model_config: InputLayer '", io::printable(g->layers[static_cast<std::size_t>(n.layer)].name),
             "' feeds the outputs but is not among input_layers");
    }
  }

  // Build every call site in order: shapes, ops and their weights.
  std::vector<char> failed(g->nodes.size(), 0);
  for (int id : g->order) {
    Node& n = g->nodes[static_cast<std::size_t>(id)];
    if (n.is_input) continue;
    LayerEntry& le = g->layers[static_cast<std::size_t>(n.layer)];
    bool upstream_failed = false;
    std::vector<Spec> main, init;
    auto spec_of = [&](const Ref& r, std::vector<Spec>& into) {
      const Node& src = g->nodes[static_cast<std::size_t>(r.node)];
      if (failed[static_cast<std::size_t>(r.node)]) {
        upstream_failed = true;
        return;
      }
      if (r.output < 0 || static_cast<std::size_t>(r.output) >= src.out.size())
        fail(Code::io, file, ": model_config: layer '", io::printable(le.name), "' takes output ", r.output, " of layer '",
             io::printable(src.layer >= 0 ? g->layers[static_cast<std::size_t>(src.layer)].name : "input"), "', which has ",
             src.out.size());
      into.push_back(src.out[static_cast<std::size_t>(r.output)]);
    };
    for (const Ref& r : n.main) spec_of(r, main);
    for (const Ref& r : n.initial_state) spec_of(r, init);
    // An explicit mask that recur cannot compute, or that is not (batch, timesteps): Keras's own
    // mask rules give the mask Keras wrote it for.
    if (n.mask.node >= 0) {
      const Node& src = g->nodes[static_cast<std::size_t>(n.mask.node)];
      if (failed[static_cast<std::size_t>(n.mask.node)] || static_cast<std::size_t>(n.mask.output) >= src.out.size() ||
          src.out[static_cast<std::size_t>(n.mask.output)].dims.size() != 2)
        n.mask = Ref{};
    }
    if (upstream_failed) {
      failed[static_cast<std::size_t>(id)] = 1;
      continue;
    }
    try {
      try {
        if (!le.op && le.why.empty()) le.op = make_op(*le.entry, ctx, le.object_path);
        if (!le.why.empty()) fail(Code::unsupported, le.why);
        n.op = le.op;
        for (const Spec& s : main)
          if (s.strings && !le.op->takes_strings())
            fail(Code::unsupported, le.class_name, " takes a string tensor ", spec_string(s), "; recur reads strings only "
                 "in StringLookup and TextVectorization (the layers that turn them into ids)");
        const std::uint64_t before = le.op->weight_floats();
        BuildContext at = ctx;  // the call site's own arguments
        at.call = n.call.get();
        n.out = le.op->build(main, init, at);
        if (!is_sequence_model_class(le.class_name))  // a nested model counts its own layers
          *ctx.weight_floats += le.op->weight_floats() - before;
        ctx.reserve_weights(0, "the layers up to '" + io::printable(le.name) + "'");
        if (!le.op->graph_issue.empty() && g->unsupported.empty())
          g->unsupported = "layer " + le.class_name + " '" + le.name + "': " + le.op->graph_issue;
      } catch (const json::exception& je) {
        fail(Code::invalid_argument, "config: ", io::printable(je.what()));
      }
    } catch (const Error& err) {
      if (err.code() == Code::io) throw;
      // Over a limit: the whole model is refused, since running it would need the same memory.
      if (err.code() == Code::limit && std::string(err.what()).find(file) == std::string::npos)
        fail(Code::limit, file, ": layer ", le.class_name, " '", io::printable(le.name), "': ", err.what());
      if (err.code() == Code::limit) throw;
      failed[static_cast<std::size_t>(id)] = 1;
      if (le.why.empty()) le.why = err.what();
      if (!g->required[static_cast<std::size_t>(id)]) continue;  // only a mask needs it: Keras's rules stand in
      if (g->unsupported.empty()) {
        const std::string why = err.what();
        g->unsupported = err.code() == Code::unsupported && why.rfind("unsupported layer", 0) == 0
                             ? why + " at " + le.name + ": " + unsupported_layer_advice(*le.entry)
                             : "layer " + le.class_name + " '" + le.name + "': " + why;
      }
    }
  }
  // Layers the graph could not reach with shapes (after an unsupported one) are still built from
  // their recorded input shape, so their weights load and recurrent ones stay usable alone.
  for (LayerEntry& le : g->layers) {
    if (le.is_op || le.class_name == "InputLayer" || (le.op && !le.nodes.empty() && !g->nodes[static_cast<std::size_t>(le.nodes[0])].out.empty()))
      continue;
    const json* shape = recorded_shape(*le.entry);
    if (!shape) continue;
    try {
      if (!le.op) le.op = make_op(*le.entry, ctx, le.object_path);
      BuildContext at = ctx;
      at.call = nullptr;
      le.op->build({spec_of_shape(*shape, false, file)}, {}, at);
    } catch (const std::exception& e) {
      if (le.why.empty()) le.why = e.what();
      le.op.reset();
    }
  }
  if (g->unsupported.empty()) {
    if (g->sequential) {
      const Node& last = g->nodes[static_cast<std::size_t>(g->outputs[0].node)];
      g->outputs.clear();
      for (std::size_t k = 0; k < last.out.size(); ++k) g->outputs.push_back(Ref{static_cast<int>(&last - g->nodes.data()), static_cast<int>(k)});
    }
    for (const Ref& r : g->outputs) {
      const Node& n = g->nodes[static_cast<std::size_t>(r.node)];
      if (r.output < 0 || static_cast<std::size_t>(r.output) >= n.out.size())
        fail(Code::io, file, ": model_config: an output refers to tensor ", r.output, " of a layer with ", n.out.size());
      g->output_specs.push_back(n.out[static_cast<std::size_t>(r.output)]);
    }
  }
  // Output names as Keras's model.output_names.
  {
    std::set<std::string> taken;
    std::map<std::string, int> count;
    for (const Ref& r : g->outputs) {
      const Node& n = g->nodes[static_cast<std::size_t>(r.node)];
      const std::string base = n.layer >= 0 ? g->layers[static_cast<std::size_t>(n.layer)].name : "input";
      std::string name = base;
      // Keras 3 names outputs after their layers as they are; Keras 2 makes the names unique.
      while (ctx.dialect.dialect == Dialect::keras2 && taken.count(name)) {
        const int c = count.count(base) ? count[base] : 1;
        name = base + "_" + std::to_string(c);
        count[base] = c + 1;
      }
      taken.insert(name);
      g->output_names.push_back(name);
    }
  }
  for (int id : g->input_nodes) g->input_specs.push_back(g->nodes[static_cast<std::size_t>(id)].out.at(0));
  g->wanted_host = {g->wanted_on_host(false), g->wanted_on_host(true)};
  return g;
}

// Refuses a run whose tensors would together be over the run_bytes limit, before it allocates.
std::shared_ptr<const Graph::Plan> Graph::plan_for(const std::vector<Value>& inputs) const {
  std::vector<std::vector<Index>> key;
  key.reserve(inputs.size());
  for (const Value& v : inputs) key.push_back(v.shape);
  {
    std::lock_guard<std::mutex> lock(plan_cache->mutex);
    auto it = plan_cache->plans.find(key);
    if (it != plan_cache->plans.end()) return it->second;
  }
  auto p = std::make_shared<Plan>();
  try {
    *p = plan(specs_of(inputs));
  } catch (const Error& e) {
    // Shapes only the run tells (a sequence longer than declared that a layer's rule cannot
    // take before it runs): the run's own checks of each tensor stand.
    if (e.code() == Code::limit) throw;
  }
  std::lock_guard<std::mutex> lock(plan_cache->mutex);
  if (plan_cache->plans.size() < 64) plan_cache->plans.emplace(std::move(key), p);
  return p;
}

std::vector<Spec> Graph::infer_for(const std::vector<Value>& inputs) const {
  if (inputs.size() == input_nodes.size() && inputs.size() <= input_specs.size()) {
    const std::shared_ptr<const Plan> p = plan_for(inputs);
    if (p->known && unsupported.empty()) return p->outputs;
  }
  return infer(specs_of(inputs));
}

std::vector<Spec> Graph::specs_of(const std::vector<Value>& inputs) const {
  std::vector<Spec> specs;
  for (std::size_t i = 0; i < inputs.size() && i < input_specs.size(); ++i) {
    Spec s = input_specs[i];
    s.dims = inputs[i].shape;
    specs.push_back(s);
  }
  return specs;
}

void Graph::plan_run(const std::vector<Value>& inputs) const {
  if (inputs.size() != input_nodes.size() || inputs.size() > input_specs.size()) return;
  const std::shared_ptr<const Plan> planned = plan_for(inputs);
  const Plan& p = *planned;
  if (!p.known) return;
  // Checked against the limits in effect now: a cached plan holds amounts, not decisions.
  for (const auto& [bytes, what] : p.records) check_limit(Limit::tensor_bytes, bytes, what);
  // "the run on inputs of shape (...)", for a message: built only when a limit is gone over.
  auto run_on = [&] {
    std::string shapes;
    for (std::size_t i = 0; i < inputs.size(); ++i) shapes += (i ? ", " : "") + shape_string(inputs[i].shape);
    return "the run on inputs of shape " + shapes;
  };
  if (p.peak > static_cast<double>(limit(Limit::run_bytes)))
    check_limit(Limit::run_bytes, p.peak,
                run_on() + ": the tensors it holds at once, at " + p.peak_at + " (planned before it starts)");
  if (p.work > static_cast<double>(limit(Limit::run_work))) {
    char top[32];
    std::snprintf(top, sizeof top, "%.0f", p.top_work);
    check_limit(Limit::run_work, p.work,
                run_on() + ": its work, planned before it starts (in units of about one "
                "multiply-add of a large matrix product; " + p.top_work_at + " does " + top + " of it; a smaller batch "
                "or shorter sequences per call fit)");
  }
}

std::vector<Value> Graph::run(const std::vector<Value>& inputs, RunContext& ctx) const {
  if (!unsupported.empty()) fail(Code::unsupported, "cannot run the model: ", unsupported);
  if (ctx.planned != this) plan_run(inputs);
  std::vector<std::vector<Value>> vals(nodes.size());
  for (std::size_t i = 0; i < input_nodes.size(); ++i) vals[static_cast<std::size_t>(input_nodes[i])] = {inputs.at(i)};
  // How many reads each node's outputs still have: freed after the last.
  std::vector<int> reads(nodes.size(), 0);
  for (int id : order) {
    for (const Ref& r : nodes[static_cast<std::size_t>(id)].main) ++reads[static_cast<std::size_t>(r.node)];
    for (const Ref& r : nodes[static_cast<std::size_t>(id)].initial_state) ++reads[static_cast<std::size_t>(r.node)];
    if (nodes[static_cast<std::size_t>(id)].mask.node >= 0) ++reads[static_cast<std::size_t>(nodes[static_cast<std::size_t>(id)].mask.node)];
  }
  for (const Ref& r : outputs) ++reads[static_cast<std::size_t>(r.node)];
  // On a GPU each tensor is moved at most once each way, where an op needs it elsewhere.
  DeviceRun* dev = ctx.device;
  const std::vector<char>& host_wanted = wanted_host[ctx.device_outputs ? 1 : 0];
  for (int id : order) {
    const Node& n = nodes[static_cast<std::size_t>(id)];
    if (n.is_input || !n.op || n.out.empty()) continue;  // a mask recur computes by Keras's rules instead
    throw_if_cancelled();
    const LayerEntry& le = layers[static_cast<std::size_t>(n.layer)];
    CallInputs ci;
    bool on_gpu = dev && n.op->device_rule().empty();
    if (on_gpu && n.op->follows_inputs() && host_wanted[static_cast<std::size_t>(id)]) {
      bool device_only = false;
      for (const Ref& r : n.main) {
        const auto& v = vals[static_cast<std::size_t>(r.node)];
        device_only = device_only || (static_cast<std::size_t>(r.output) < v.size() &&
                                      on_device_only(v[static_cast<std::size_t>(r.output)]));
      }
      on_gpu = device_only;
    }
    const bool shapes_only = dev && !on_gpu && n.op->reads_shapes_only();
    // (Built only when a tensor crosses: a CPU run's steps make no strings here.)
    auto where = [&] { return "layer '" + le.name + "' (" + le.class_name + ")"; };
    // Why a tensor crosses, for the run's record: a model input going up, or a layer without a
    // GPU kernel (its inputs down, and its outputs up to the next GPU layer).
    auto place = [&](Value& v, const Node& from, bool device) {
      const std::string source = from.layer >= 0 ? layers[static_cast<std::size_t>(from.layer)].name : std::string();
      if (device)
        dev->to_device(v, from.is_input ? "model input '" + source + "'"
                                        : where() + " reads the output of '" + source + "', which ran on the CPU");
      else
        dev->to_host(v, where() + ": " + (!on_gpu                     ? n.op->device_rule()
                                       : n.op->device_reads_host()  ? std::string("it reads this input on the host")
                                       : !dev->declined.empty()     ? "this call runs on the CPU: " + dev->declined
                                                                    : std::string("this call runs on the CPU")));
    };
    // (An op that reads only shapes takes its main inputs and initial states where they are; a
    // mask's values are always read.)
    auto get = [&](const Ref& r, bool device, bool values = false) -> const Value* {
      auto& v = vals[static_cast<std::size_t>(r.node)];
      if (static_cast<std::size_t>(r.output) >= v.size())
        fail(Code::state, "layer '", le.name, "': missing input tensor");
      if (dev && (values || !shapes_only))
        place(v[static_cast<std::size_t>(r.output)], nodes[static_cast<std::size_t>(r.node)], device);
      return &v[static_cast<std::size_t>(r.output)];
    };
    const bool main_on_device = on_gpu && !n.op->device_reads_host();
    for (std::size_t k = 0; k < n.main.size(); ++k) {
      const Value* v = get(n.main[k], main_on_device);
      const Spec& want = nodes[static_cast<std::size_t>(n.main[k].node)].out[static_cast<std::size_t>(n.main[k].output)];
      bool ok = v->shape.size() == want.dims.size();
      for (std::size_t a = 1; ok && a < want.dims.size(); ++a)
        ok = want.dims[a] < 0 || want.dims[a] == v->shape[a] || ((ctx.stream || ctx.free_time) && a == 1);
      if (!ok)
        fail(Code::shape, "layer '", le.name, "' (", le.class_name, "): input ", k, " has shape ", shape_string(v->shape),
             ", the model declares ", spec_string(want));
      ci.main.push_back(v);
    }
    for (const Ref& r : n.initial_state) ci.initial_state.push_back(get(r, on_gpu));
    ci.drop_mask = n.drop_mask;
    Value masked;  // the main input with the mask the call names
    if (n.mask.node >= 0 && !ci.main.empty()) {
      const Value* m = get(n.mask, false, true);
      const Value& x = *ci.main[0];
      if (m->shape.size() != 2 || x.shape.size() < 2 || m->shape[0] != x.shape[0] || m->shape[1] != x.shape[1])
        fail(Code::shape, "layer '", le.name, "': its mask has shape ", shape_string(m->shape), ", its input ",
             shape_string(x.shape));
      masked = x;
      auto bits = std::make_shared<std::vector<std::uint8_t>>(m->data.size());
      for (std::size_t k = 0; k < bits->size(); ++k) (*bits)[k] = m->data[k] != 0.0f;
      masked.mask = std::move(bits);
      ci.main[0] = &masked;
    }
    RunContext local = ctx;
    local.stepped = n.stepped_main;
    local.call = n.call.get();
    std::vector<Value> out;
    if (!on_gpu || !n.op->forward_device(ci, local, ctx.site_base + id, out)) {
      if (on_gpu) {
        // This call cannot run on the GPU after all (its shapes or arguments): on the host.
        for (std::size_t k = 0; k < n.main.size(); ++k) ci.main[k] = get(n.main[k], false);
        for (std::size_t k = 0; k < n.initial_state.size(); ++k) ci.initial_state[k] = get(n.initial_state[k], false);
        if (n.mask.node >= 0 && !ci.main.empty()) {
          Value bits = masked;
          masked = *ci.main[0];
          masked.mask = bits.mask;
          ci.main[0] = &masked;
        }
        dev->declined.clear();
      }
      out = n.op->forward(ci, local, ctx.site_base + id);
      // Host results: any device copy an op passed along (a copied input Value) is stale now.
      if (dev)
        for (Value& v : out) v.device.reset();
    }
    if (!n.op->passes_ids() && !n.op->makes_ids())
      for (Value& v : out) v.ids.reset();
    if (out.size() != n.out.size())
      fail(Code::state, "layer '", le.name, "' gave ", out.size(), " outputs, ", n.out.size(), " expected");
    vals[static_cast<std::size_t>(id)] = std::move(out);
    if (reads[static_cast<std::size_t>(id)] == 0) vals[static_cast<std::size_t>(id)].clear();  // nothing reads it
    for (const Ref& r : n.main)
      if (--reads[static_cast<std::size_t>(r.node)] == 0) vals[static_cast<std::size_t>(r.node)].clear();
    for (const Ref& r : n.initial_state)
      if (--reads[static_cast<std::size_t>(r.node)] == 0) vals[static_cast<std::size_t>(r.node)].clear();
    if (n.mask.node >= 0 && --reads[static_cast<std::size_t>(n.mask.node)] == 0) vals[static_cast<std::size_t>(n.mask.node)].clear();
  }
  std::vector<Value> out;
  for (const Ref& r : outputs) {
    Value& v = vals[static_cast<std::size_t>(r.node)].at(static_cast<std::size_t>(r.output));
    if (dev && !ctx.device_outputs) {
      const int li = nodes[static_cast<std::size_t>(r.node)].layer;
      dev->to_host(v, "model output " + (li >= 0 ? "'" + layers[static_cast<std::size_t>(li)].name + "'" : std::string("(an input)")));
      v.device.reset();  // its buffer goes back to the model's pool
    }
    out.push_back(v);
  }
  return out;
}

std::vector<char> Graph::wanted_on_host(bool device_outputs) const {
  struct Reader {
    int node;
    bool as_mask;
  };
  std::vector<std::vector<Reader>> readers(nodes.size());
  for (int id : order) {
    const Node& n = nodes[static_cast<std::size_t>(id)];
    for (const Ref& r : n.main) readers[static_cast<std::size_t>(r.node)].push_back({id, false});
    for (const Ref& r : n.initial_state) readers[static_cast<std::size_t>(r.node)].push_back({id, false});
    if (n.mask.node >= 0) readers[static_cast<std::size_t>(n.mask.node)].push_back({id, true});
  }
  std::vector<char> is_output(nodes.size(), 0), host(nodes.size(), 0);
  for (const Ref& r : outputs) is_output[static_cast<std::size_t>(r.node)] = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::size_t id = static_cast<std::size_t>(*it);
    bool wanted = is_output[id] ? !device_outputs : !readers[id].empty();
    for (const Reader& r : readers[id]) {
      const Node& rn = nodes[static_cast<std::size_t>(r.node)];
      const bool host_side = r.as_mask || !rn.op || !rn.op->device_rule().empty() || rn.op->device_reads_host() ||
                             (rn.op->follows_inputs() && host[static_cast<std::size_t>(r.node)]);
      wanted = wanted && host_side;
    }
    host[id] = wanted ? 1 : 0;
  }
  return host;
}

std::vector<Spec> Graph::build_node(const Node& n, const std::vector<std::vector<Spec>>& specs,
                                    std::vector<Spec>* main_out) const {
  std::vector<Spec> main, init;
  for (const Ref& r : n.main) main.push_back(specs[static_cast<std::size_t>(r.node)].at(static_cast<std::size_t>(r.output)));
  if (main_out) *main_out = main;
  for (const Ref& r : n.initial_state) init.push_back(specs[static_cast<std::size_t>(r.node)].at(static_cast<std::size_t>(r.output)));
  BuildContext at = context;
  at.call = n.call.get();
  return n.op->build(main, init, at);
}

std::vector<Spec> Graph::infer(const std::vector<Spec>& inputs) const {
  if (!unsupported.empty()) fail(Code::unsupported, "cannot run the model: ", unsupported);
  std::vector<std::vector<Spec>> specs(nodes.size());
  for (std::size_t i = 0; i < input_nodes.size(); ++i) specs[static_cast<std::size_t>(input_nodes[i])] = {inputs.at(i)};
  for (int id : order) {
    const Node& n = nodes[static_cast<std::size_t>(id)];
    if (n.is_input || !n.op || n.out.empty()) continue;
    specs[static_cast<std::size_t>(id)] = build_node(n, specs);
  }
  std::vector<Spec> out;
  for (const Ref& r : outputs) out.push_back(specs[static_cast<std::size_t>(r.node)].at(static_cast<std::size_t>(r.output)));
  return out;
}

std::size_t Graph::num_weights() const {
  std::size_t n = 0;
  for (const LayerEntry& le : layers)
    if (le.op) n += le.op->num_weights();
  return n;
}

std::uint64_t Graph::weight_floats() const {
  std::uint64_t n = 0;
  for (const LayerEntry& le : layers)
    if (le.op) n += le.op->weight_floats();
  return n;
}

void Graph::collect_layers(std::vector<Layer*>& out) const {
  for (const LayerEntry& le : layers)
    if (le.op) le.op->collect_layers(out);
}

void Graph::load_legacy(const io::H5File& h5, const std::string& group, const std::string& file) {
  if (!h5.has_attribute(group, "layer_names")) fail(Code::io, file, ": /", group, ": missing the attribute 'layer_names'");
  const std::vector<std::string> names = h5.attribute_strings(group, "layer_names");
  for (LayerEntry& le : layers) {
    if (!le.op || le.op->num_weights() == 0) continue;
    const std::string lg = (group.empty() ? "" : group + "/") + le.name;
    if (std::find(names.begin(), names.end(), le.name) == names.end() || !h5.is_group(lg))
      fail(Code::io, file, ": /", io::printable(lg), ": missing the weights of layer '", io::printable(le.name),
           "' (the config and the weights disagree)");
    std::vector<StoredWeight> w;
    std::uint64_t budget = 2 * le.op->weight_floats() + 16;  // no more than the layer can hold is ever read
    const auto wnames = h5.attribute_strings(lg, "weight_names");
    if (wnames.size() > 4096) fail(Code::io, file, ": /", io::printable(lg), ": too many weights");
    for (const std::string& wn : wnames) {
      StoredWeight sw;
      sw.path = "/" + lg + "/" + wn;
      sw.data = h5.read_floats(lg + "/" + wn, sw.shape, budget);
      budget -= std::min<std::uint64_t>(budget, std::max<std::size_t>(sw.data.size(), 1));
      w.push_back(std::move(sw));
    }
    const std::string where = file + ": /" + io::printable(lg) + " (layer '" + io::printable(le.name) + "')";
    if (w.size() != le.op->num_weights())
      fail(Code::io, where, ": the file holds ", w.size(), " weight(s) for this layer, the config needs ", le.op->num_weights());
    le.op->load(w, true, where);
  }
}

void Graph::load_legacy_flat(std::vector<StoredWeight>& w, const std::string& where) {
  for (LayerEntry& le : layers)
    if (le.op && le.op->num_weights() > 0) le.op->load(w, true, where + " (layer '" + io::printable(le.name) + "')");
}

void Graph::load_keras(const io::H5File& h5, const std::string& file) {
  for (LayerEntry& le : layers)
    if (le.op && le.op->num_weights() > 0) le.op->load_keras(h5, le.object_path, file);
}

void Graph::analyse_streaming(const std::vector<bool>& stepped_inputs) {
  not_streamable.clear();
  std::vector<std::vector<bool>> stepped(nodes.size());
  for (std::size_t i = 0; i < input_nodes.size(); ++i)
    stepped[static_cast<std::size_t>(input_nodes[i])] = {i < stepped_inputs.size() && stepped_inputs[i]};
  for (int id : order) {
    Node& n = nodes[static_cast<std::size_t>(id)];
    if (n.is_input || !n.op || n.out.empty()) continue;
    const LayerEntry& le = layers[static_cast<std::size_t>(n.layer)];
    std::vector<bool> in;
    for (const Ref& r : n.main) in.push_back(stepped[static_cast<std::size_t>(r.node)].at(static_cast<std::size_t>(r.output)));
    bool init_stepped = false, init_computed = false;
    for (const Ref& r : n.initial_state) {
      init_stepped = init_stepped || stepped[static_cast<std::size_t>(r.node)].at(static_cast<std::size_t>(r.output));
      init_computed = init_computed || !nodes[static_cast<std::size_t>(r.node)].is_input;
    }
    std::vector<bool> out(n.out.size(), false);
    std::string why = init_stepped ? "its initial_state changes with every step" : n.op->stream_rule_at(in, init_computed, out, n.call.get());
    n.stepped_main = !in.empty() && in[0];
    if (!why.empty() && not_streamable.empty()) not_streamable = "layer '" + le.name + "' (" + le.class_name + "): " + why;
    stepped[static_cast<std::size_t>(id)] = out;
  }
  stepped_outputs.clear();
  for (const Ref& r : outputs) stepped_outputs.push_back(stepped[static_cast<std::size_t>(r.node)].at(static_cast<std::size_t>(r.output)));
}

void BuildContext::reserve_weights(double floats, const std::string& what) const {
  const double total = static_cast<double>(*weight_floats) + floats;
  if (total > static_cast<double>(file_weight_floats)) {
    if (floats == 0)
      fail(Error::Code::io, file, ": model_config: ", what, " hold ", *weight_floats,
           " weights, more than the file's weights can hold");
    fail(Error::Code::io, file, ": model_config: ", what, " needs ", static_cast<std::uint64_t>(floats),
         " weights, more (with the layers before it) than the file's weights can hold");
  }
  if (total > static_cast<double>(max_weight_floats))
    check_limit(Limit::weight_bytes, 4.0 * total, file + ": model_config: " + what + " with the layers before it");
}

}  // namespace recur::graph

namespace recur::graph {

void BuildContext::reserve_states(double bytes, const std::string& what) const {
  const double total = *state_bytes + bytes;
  if (total > static_cast<double>(limit(Limit::total_state_bytes)))
    check_limit(Limit::total_state_bytes, total,
                file + ": model_config: " + what + " with the stateful layers before it (their states)");
  *state_bytes = total;
}

Graph::Plan Graph::plan(const std::vector<Spec>& inputs) const {
  auto bytes_of = [](const Spec& s) {
    if (s.strings) return 0.0;  // counted when the text layers turn them into ids
    double n = 4.0;
    for (Index d : s.dims) n *= static_cast<double>(std::max<Index>(d, 1));
    return n;
  };
  Plan result;
  std::vector<std::vector<Spec>> specs(nodes.size());
  std::vector<int> reads(nodes.size(), 0);
  for (int id : order) {
    const Node& n = nodes[static_cast<std::size_t>(id)];
    for (const Ref& r : n.main) ++reads[static_cast<std::size_t>(r.node)];
    for (const Ref& r : n.initial_state) ++reads[static_cast<std::size_t>(r.node)];
    if (n.mask.node >= 0) ++reads[static_cast<std::size_t>(n.mask.node)];
  }
  for (const Ref& r : outputs) ++reads[static_cast<std::size_t>(r.node)];
  double live = 0;
  auto release = [&](const Ref& r) {
    if (--reads[static_cast<std::size_t>(r.node)] != 0) return;
    for (const Spec& s : specs[static_cast<std::size_t>(r.node)]) live -= bytes_of(s);
    specs[static_cast<std::size_t>(r.node)].clear();
  };
  result.peak_at = "its inputs";
  for (std::size_t i = 0; i < input_nodes.size(); ++i) {
    specs[static_cast<std::size_t>(input_nodes[i])] = {inputs.at(i)};
    live += bytes_of(inputs.at(i));
  }
  result.peak = live;
  for (int id : order) {
    const Node& n = nodes[static_cast<std::size_t>(id)];
    if (n.is_input || !n.op || n.out.empty()) continue;
    std::vector<Spec> main;
    std::vector<Spec> out = build_node(n, specs, &main);
    const LayerEntry& le = layers[static_cast<std::size_t>(n.layer)];
    const std::string where = "layer '" + io::printable(le.name) + "' (" + le.class_name + ")";
    const double w = n.op->work(main, out);
    result.work += w;
    if (w > result.top_work) {
      result.top_work = w;
      result.top_work_at = where;
    }
    // The outputs exist while the inputs do: a layer reads its inputs as it writes its outputs.
    for (const Spec& s : out) {
      const double b = bytes_of(s);
      if (result.records.empty() || b > result.records.back().first)
        result.records.emplace_back(b, where + ": a tensor of shape " + spec_string(s));
      live += b;
    }
    if (live > result.peak) {
      result.peak = live;
      result.peak_at = where;
    }
    specs[static_cast<std::size_t>(id)] = std::move(out);
    if (reads[static_cast<std::size_t>(id)] == 0) {  // read by nothing (a mask recur computes itself)
      for (const Spec& s : specs[static_cast<std::size_t>(id)]) live -= bytes_of(s);
      specs[static_cast<std::size_t>(id)].clear();
    }
    for (const Ref& r : n.main) release(r);
    for (const Ref& r : n.initial_state) release(r);
    if (n.mask.node >= 0) release(n.mask);
  }
  for (const Ref& r : outputs) result.outputs.push_back(specs[static_cast<std::size_t>(r.node)].at(static_cast<std::size_t>(r.output)));
  result.known = true;
  return result;
}

}  // namespace recur::graph
