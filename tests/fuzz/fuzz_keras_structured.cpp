// SPDX-License-Identifier: Apache-2.0
// Structure-aware .keras files: a valid zip built in memory from a fixture model's parts
// (fuzz_common.hpp's base_models), of which the fuzzer changes some: config.json (replaced by
// fuzzed bytes, edited as JSON: numbers, strings, removed and repeated entries, or edited
// byte-wise), metadata.json (the keras_version), model.weights.h5 (another model's, or with bytes
// changed) and the members themselves (left out, repeated). Opened with recur_model_open_memory
// and exercised as fuzz_keras does.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_common.hpp"

namespace {

using nlohmann::json;

// Every number, string and container of a JSON document (pointers into it).
void collect(json& j, std::vector<json*>& scalars, std::vector<json*>& containers) {
  if (j.is_object() || j.is_array()) {
    containers.push_back(&j);
    for (auto& v : j) collect(v, scalars, containers);
  } else {
    scalars.push_back(&j);
  }
}

// Values chosen to hit limits: sizes, indices and axes that are zero, negative, huge or off by one.
json pick_number(FuzzedDataProvider& p) {
  static const std::int64_t kInts[] = {0, 1, -1, 2, 3, -2, 7, 64, 4096, 65536, 1 << 20, 2147483647, -2147483648LL,
                                       std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::min()};
  switch (p.ConsumeIntegralInRange(0, 3)) {
    case 0: return p.PickValueInArray(kInts);
    case 1: return p.ConsumeIntegral<std::int32_t>();
    case 2: return p.ConsumeFloatingPoint<double>();
    default: return p.ConsumeProbability<double>() * 2.0 - 0.5;
  }
}

json pick_string(FuzzedDataProvider& p, const std::vector<std::string>& names) {
  static const char* const kStrings[] = {
      "", "GRU", "LSTM", "SimpleRNN", "Bidirectional", "Dense", "InputLayer", "Add", "Concatenate", "Masking",
      "Embedding", "Conv1D", "TimeDistributed", "Sequential", "Functional", "Model", "RepeatVector", "Reshape",
      "Permute", "Flatten", "LayerNormalization", "BatchNormalization", "Dropout", "relu", "tanh", "sigmoid",
      "linear", "softmax", "hard_sigmoid", "same", "valid", "causal", "channels_first", "float64", "int32",
      "__keras_tensor__", "concat", "sum", "ave", "mul", "keras.layers", "keras", "3.15.1", "2.15.0"};
  if (!names.empty() && p.ConsumeBool()) return names[p.ConsumeIntegralInRange<std::size_t>(0, names.size() - 1)];
  if (p.ConsumeBool()) return p.PickValueInArray(kStrings);
  return p.ConsumeRandomLengthString(16);
}

// How to put one edit of a document back. Undone in reverse order, each finds the document as its
// edit left it, so its pointer is valid; and each keeps the values it took out by moving them (a
// node, an array's storage), so that the pointers of the edits before it stay valid too.
struct Undo {
  enum Kind { kAssign, kArrayInsert, kNodeInsert, kEraseKey } kind;
  json* at;
  json old;                        // kAssign: the value before; kArrayInsert: the removed entry
  std::size_t index = 0;           // kArrayInsert
  json::object_t::node_type node;  // kNodeInsert: the removed entry of an object
  std::string key;                 // kEraseKey: the key the edit added

  Undo(Kind k, json* where, json value = nullptr, std::size_t i = 0) : kind(k), at(where), old(std::move(value)), index(i) {}

  void apply() {
    switch (kind) {
      case kAssign: *at = std::move(old); break;
      case kArrayInsert: {
        auto& a = at->get_ref<json::array_t&>();  // json::insert would copy the entry
        a.insert(a.begin() + static_cast<std::ptrdiff_t>(index), std::move(old));
        break;
      }
      case kNodeInsert: at->get_ref<json::object_t&>().insert(std::move(node)); break;
      case kEraseKey: at->erase(key); break;
    }
  }
};

// The seed config edited as JSON: a few scalars replaced, entries dropped or repeated. Each seed is
// parsed once, edited in place and put back after the dump: copying the document for each input
// took a fifth of the target's time. The lists of its values are taken again only after an edit
// that moves them.
std::string mutate_json(FuzzedDataProvider& p, std::size_t base) {
  static std::vector<json> parsed = [] {
    std::vector<json> out;
    for (const auto& b : recur_fuzz::base_models()) out.push_back(json::parse(b.config, nullptr, false));
    return out;
  }();
  json& j = parsed[base];
  if (j.is_discarded()) return recur_fuzz::base_models()[base].config;
  std::vector<Undo> undo;
  std::vector<json*> scalars, containers;
  collect(j, scalars, containers);
  std::vector<std::string> names;  // layer names: edits that wire the graph to existing layers
  for (json* s : scalars)
    if (s->is_string() && names.size() < 64) names.push_back(s->get<std::string>());
  auto pick = [&p](const std::vector<json*>& from) {
    return from.empty() ? nullptr : from[p.ConsumeIntegralInRange<std::size_t>(0, from.size() - 1)];
  };
  const int edits = p.ConsumeIntegralInRange(1, 8);
  for (int e = 0; e < edits && p.remaining_bytes() > 0; ++e) {
    const std::size_t before = undo.size();
    switch (p.ConsumeIntegralInRange(0, 5)) {
      case 0:
      case 1: {  // a scalar becomes another number / string / null / bool
        json* s = scalars.empty() ? &j : pick(scalars);
        undo.emplace_back(Undo::kAssign, s, std::move(*s));
        switch (p.ConsumeIntegralInRange(0, 4)) {
          case 0: *s = pick_number(p); break;
          case 1: *s = pick_string(p, names); break;
          case 2: *s = nullptr; break;
          case 3: *s = p.ConsumeBool(); break;
          default: *s = json::array({pick_number(p), pick_number(p)}); break;
        }
        if (s != &j) continue;  // nothing moved
        break;
      }
      case 2: {  // an entry of an object or an array disappears
        json* c = pick(containers);
        if (!c || c->empty()) break;
        const std::size_t k = p.ConsumeIntegralInRange<std::size_t>(0, c->size() - 1);
        if (c->is_array()) {
          undo.emplace_back(Undo::kArrayInsert, c, std::move((*c)[k]), k);
          c->erase(k);
        } else {
          auto& o = c->get_ref<json::object_t&>();
          Undo u(Undo::kNodeInsert, c);
          u.node = o.extract(std::next(o.begin(), static_cast<std::ptrdiff_t>(k)));
          undo.push_back(std::move(u));
        }
        break;
      }
      case 3: {  // an array entry is repeated (a layer listed twice, an extra inbound node)
        json* c = pick(containers);
        if (!c || !c->is_array() || c->empty()) break;
        json copy = (*c)[p.ConsumeIntegralInRange<std::size_t>(0, c->size() - 1)];
        // The edit goes to a copy of the array: growing it in place could move its entries.
        undo.emplace_back(Undo::kAssign, c, std::move(*c));
        *c = undo.back().old;
        c->push_back(std::move(copy));
        break;
      }
      case 4: {  // a container is swapped for another one of the document (a subtree moves)
        if (containers.size() < 2) break;
        json* a = pick(containers);
        json copy = *pick(containers);
        if (copy.dump(-1, ' ', false, json::error_handler_t::replace).size() >= 100000) break;
        undo.emplace_back(Undo::kAssign, a, std::move(*a));
        *a = std::move(copy);
        break;
      }
      default: {  // a new key in an object
        json* c = pick(containers);
        if (!c || !c->is_object()) break;
        const std::string key = pick_string(p, names).get<std::string>();
        if (auto it = c->find(key); it != c->end()) {
          undo.emplace_back(Undo::kAssign, &*it, std::move(*it));
        } else {
          Undo u(Undo::kEraseKey, c);
          u.key = key;
          undo.push_back(std::move(u));
        }
        (*c)[key] = pick_number(p);
        break;
      }
    }
    if (undo.size() == before) continue;
    scalars.clear();
    containers.clear();
    collect(j, scalars, containers);
  }
  std::string text = j.dump(-1, ' ', false, json::error_handler_t::replace);
  for (auto it = undo.rbegin(); it != undo.rend(); ++it) it->apply();
  return text;
}

// A few bytes overwritten at fuzzed offsets.
void edit_bytes(FuzzedDataProvider& p, std::string& s) {
  if (s.empty()) return;
  const int edits = p.ConsumeIntegralInRange(1, 8);
  for (int e = 0; e < edits && p.remaining_bytes() > 0; ++e)
    s[p.ConsumeIntegralInRange<std::size_t>(0, s.size() - 1)] = static_cast<char>(p.ConsumeIntegral<std::uint8_t>());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto& bases = recur_fuzz::base_models();
  FuzzedDataProvider p(data, size);
  const std::size_t which = p.ConsumeIntegralInRange<std::size_t>(0, bases.size() - 1);
  const recur_fuzz::KerasParts& base = bases[which];
  std::string config = base.config, metadata = base.metadata, weights = base.weights;

  switch (p.ConsumeIntegralInRange(0, 3)) {
    case 0: config = mutate_json(p, which); break;
    case 1: edit_bytes(p, config); break;
    case 2: break;  // the seed's config: the other parts change
    default: config = p.ConsumeRandomLengthString(1 << 16); break;
  }
  const std::uint8_t extras = p.ConsumeIntegral<std::uint8_t>();
  if (extras & 1) {
    static const char* const kVersions[] = {"3.15.1", "3.0.0", "3.13.0", "2.15.0", "2.13.1", "1.2.2", "", "3", "99.0"};
    json m = json::parse(metadata, nullptr, false);
    if (m.is_object()) {
      if (extras & 2) m["keras_version"] = p.PickValueInArray(kVersions);
      else m["keras_version"] = p.ConsumeRandomLengthString(12);
      metadata = m.dump(-1, ' ', false, json::error_handler_t::replace);
    }
  }
  if (extras & 4) weights = bases[p.ConsumeIntegralInRange<std::size_t>(0, bases.size() - 1)].weights;
  if (extras & 8) edit_bytes(p, weights);

  std::vector<std::pair<std::string, std::string>> members = {
      {"metadata.json", metadata}, {"config.json", config}, {"model.weights.h5", weights}};
  if (extras & 16) members.erase(members.begin() + p.ConsumeIntegralInRange(0, 2));
  if (extras & 32) members.push_back(members[p.ConsumeIntegralInRange<std::size_t>(0, members.size() - 1)]);
  const std::string image = recur_fuzz::zip_store(members);
  recur_fuzz::open_and_exercise(image.data(), image.size(), "fuzz_structured.keras");
  return 0;
}
