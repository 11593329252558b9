// SPDX-License-Identifier: Apache-2.0
// What the layer families share: config reading, tensor allocation under the limits, weight
// loading and shape checks.
#include "model/layers/layer_util.hpp"

#include <algorithm>
#include <cmath>

#include "io/json_int.hpp"
#include "io/keras_entry.hpp"
#include "io/printable.hpp"
#include "recur/error.hpp"
#include "recur/keras_json.hpp"
#include "recur/limits.hpp"

namespace recur::graph {

int int_of(const json& cfg, const char* key, int fallback) {
  if (!cfg.contains(key) || cfg[key].is_null()) return fallback;
  const json& v = cfg[key];
  const json& x = v.is_array() && v.size() == 1 ? v[0] : v;  // Keras writes kernel_size=(3,) as [3]
  if (!x.is_number_integer()) fail(Code::invalid_argument, key, ": expected an integer, got ", io::excerpt(v));
  int i = 0;
  if (!io::int_in(x, -(std::int64_t(1) << 30), std::int64_t(1) << 30, i)) fail(Code::invalid_argument, key, ": ", io::excerpt(x), " is out of range");
  return i;
}

std::string str_of(const json& cfg, const char* key, const std::string& fallback) {
  if (!cfg.contains(key) || cfg[key].is_null()) return fallback;
  if (!cfg[key].is_string()) fail(Code::invalid_argument, key, ": expected a string, got ", io::excerpt(cfg[key]));
  return cfg[key].get<std::string>();
}

bool bool_of(const json& cfg, const char* key, bool fallback) {
  if (!cfg.contains(key) || cfg[key].is_null()) return fallback;
  if (!cfg[key].is_boolean()) fail(Code::invalid_argument, key, ": expected true or false, got ", io::excerpt(cfg[key]));
  return cfg[key].get<bool>();
}

double num_of(const json& cfg, const char* key, double fallback) {
  if (!cfg.contains(key) || cfg[key].is_null()) return fallback;
  if (!cfg[key].is_number()) fail(Code::invalid_argument, key, ": expected a number, got ", io::excerpt(cfg[key]));
  return cfg[key].get<double>();
}

ActivationFn activation_of(const json& cfg, const DialectInfo& d) {
  if (!cfg.contains("activation") || cfg["activation"].is_null()) return parse_activation("linear", d, "activation");
  if (!cfg["activation"].is_string())
    fail(Code::unsupported, "activation: a custom activation object cannot be loaded: ", io::excerpt(cfg["activation"]));
  return parse_activation(cfg["activation"].get<std::string>(), d, "activation");
}

bool channels_first_of(const json& cfg) {
  const std::string f = str_of(cfg, "data_format", "channels_last");
  if (f != "channels_last" && f != "channels_first")
    fail(Code::invalid_argument, "data_format: expected 'channels_last' or 'channels_first', got '", io::printable(f), "'");
  return f == "channels_first";
}

Index product(const std::vector<Index>& d, std::size_t from, std::size_t to) {
  const std::size_t end = std::min(to, d.size());
  Index p = 1;
  // Iterators, not indices: GCC 12 warned (-Waggressive-loop-optimizations) on the indexed loop.
  if (from < end)
    for (auto it = d.begin() + static_cast<std::ptrdiff_t>(from); it != d.begin() + static_cast<std::ptrdiff_t>(end); ++it) p *= *it;
  return p;
}

std::vector<Index> alloc_shape(std::vector<Index> shape, const char* what) {
  double n = 1;
  for (Index d : shape) {
    if (d < 0) fail(Code::shape, what, ": negative dimension in ", shape_string(shape));
    n *= static_cast<double>(d);
  }
  check_limit(Limit::tensor_bytes, 4 * n, std::string(what) + ": a tensor of shape " + shape_string(shape));
  return shape;
}

Value make_value(std::vector<Index> shape, const char* what) {
  Value v;
  v.shape = alloc_shape(std::move(shape), what);
  v.data.assign(static_cast<std::size_t>(product(v.shape)), 0.0f);
  return v;
}

// Where a stored weight is, for a message: `where` ("x.keras: model.weights.h5:/layers/gru", or
// "x.h5: /model_weights/gru (layer 'gru')") with the weight's own path in place of the object path
// both name, so the file and the object are said once.
std::string weight_location(const std::string& where, const std::string& path) {
  for (std::size_t len = path.size(); len > 0; --len) {
    if (len < path.size() && path[len] != '/') continue;
    const std::size_t p = where.rfind(path.substr(0, len));
    if (p != std::string::npos && (p + len == where.size() || where[p + len] == ' '))
      return where.substr(0, p) + io::printable(path) + where.substr(p + len);
  }
  return where + ": " + io::printable(path);
}

// Keras's dims of a weight are checked against what the config makes.
void expect_shape(const StoredWeight& sw, const std::vector<std::int64_t>& want, const std::string& where) {
  if (sw.shape != want) {
    std::vector<Index> a(sw.shape.begin(), sw.shape.end()), b(want.begin(), want.end());
    fail(Code::io, weight_location(where, sw.path), ": shape ", shape_string(a), " does not fit (expected ",
         shape_string(b), ")");
  }
}

std::vector<float> take_weight(std::vector<StoredWeight>& w, const std::vector<std::int64_t>& shape,
                               const std::string& where) {
  if (w.empty()) fail(Code::io, where, ": the file holds fewer weights than the config needs");
  StoredWeight sw = std::move(w.front());
  w.erase(w.begin());
  expect_shape(sw, shape, where);
  for (float v : sw.data)
    if (!std::isfinite(v)) fail(Code::io, weight_location(where, sw.path), ": non-finite weight value");
  return std::move(sw.data);
}

std::vector<StoredWeight> read_vars(const io::H5File& h5, const std::string& object, const std::string& file,
                                    std::uint64_t budget) {
  if (!h5.is_group(object))
    fail(Code::io, file, ": model.weights.h5:/", object, ": missing (the config and the weights disagree)");
  std::vector<StoredWeight> w;
  const std::string base = object + "/vars";
  for (int i = 0; i < 64 && h5.exists(base + "/" + std::to_string(i)); ++i) {
    StoredWeight sw;
    sw.path = "model.weights.h5:/" + base + "/" + std::to_string(i);
    sw.data = h5.read_floats(base + "/" + std::to_string(i), sw.shape, budget);
    budget -= std::min<std::uint64_t>(budget, sw.data.size());
    w.push_back(std::move(sw));
  }
  return w;
}

void check_count(const std::vector<StoredWeight>& w, std::size_t want, const std::string& where, const std::string& layer) {
  if (w.size() != want)
    fail(Code::io, where, ": the file holds ", w.size(), " weight(s) for layer '", io::printable(layer), "', the config needs ", want);
}

void check_rank(const std::vector<Spec>& in, std::size_t count, std::size_t min_rank, const char* what) {
  if (in.size() != count) fail(Code::invalid_argument, what, " takes ", count, " input(s), got ", in.size());
  for (const Spec& s : in)
    if (s.dims.size() < min_rank)
      fail(Code::shape, what, " needs inputs of rank >= ", min_rank, ", got ", spec_string(s));
}

Index known_last(const Spec& s, const char* what) {
  if (s.dims.empty() || s.dims.back() <= 0)
    fail(Code::shape, what, ": the size of the input's last axis must be known, got ", spec_string(s));
  return s.dims.back();
}

// The shape of `parts` joined along `axis` (the Concatenate layer and keras.ops.concatenate):
// every other dimension agrees (a negative one, not known until run time, agrees with any) and
// the joined one sums, unknown when any part's is.
std::vector<Index> joined_shape(const std::vector<const std::vector<Index>*>& parts, std::size_t axis, const std::string& who) {
  if (parts.empty()) fail(Code::invalid_argument, who, ": expected at least 1 input");
  std::vector<Index> out = *parts[0];
  for (std::size_t k = 1; k < parts.size(); ++k) {
    const std::vector<Index>& p = *parts[k];
    if (p.size() != out.size())
      fail(Code::shape, who, ": inputs of different ranks: ", shape_string(*parts[0]), " and ", shape_string(p));
    for (std::size_t i = 0; i < out.size(); ++i)
      if (i != axis && p[i] >= 0 && out[i] >= 0 && p[i] != out[i])
        fail(Code::shape, who, ": shapes ", shape_string(*parts[0]), " and ", shape_string(p), " differ outside axis ", axis);
    out[axis] = out[axis] < 0 || p[axis] < 0 ? -1 : out[axis] + p[axis];
  }
  return out;
}

// Copies `parts` into y, joined along `axis`; y is shaped by joined_shape.
void join_values(const std::vector<const Value*>& parts, std::size_t axis, Value& y) {
  const Index outer = product(y.shape, 0, axis), inner = product(y.shape, axis + 1);
  Index off = 0;
  for (const Value* v : parts) {
    const Index chunk = v->shape[axis] * inner;
    for (Index o = 0; o < outer; ++o) std::copy_n(v->data.data() + o * chunk, chunk, y.data.data() + o * y.shape[axis] * inner + off);
    off += chunk;
  }
}


std::vector<int> axes_of(const json& cfg, int fallback) {
  if (!cfg.contains("axis") || cfg["axis"].is_null()) return {fallback};
  std::vector<int> axes;
  if (!io::int_or_ints(cfg["axis"], axes))
    fail(Code::invalid_argument, "axis: expected an integer or a list of integers, got ", io::excerpt(cfg["axis"]));
  return axes;
}

// Axes as given (negative ones count from the end) for a tensor of `rank`. Keras refuses both an
// axis past the rank (here a shape error: the rank comes from the inputs) and a repeated one.
std::vector<int> normalized_axes(const std::vector<int>& given, std::size_t rank, const std::string& who,
                                 const json& shown) {
  std::vector<int> ax;
  for (const int g : given) {
    const int x = g < 0 ? g + static_cast<int>(rank) : g;
    if (x < 0 || x >= static_cast<int>(rank)) fail(Code::shape, who, ": axis ", g, " of a rank-", rank, " tensor");
    if (std::find(ax.begin(), ax.end(), x) != ax.end())
      fail(Code::invalid_argument, who, ": axis ", io::excerpt(shown), " repeats axis ", x);
    ax.push_back(x);
  }
  return ax;
}


void Op::load(std::vector<StoredWeight>& w, bool, const std::string&) { (void)w; }
void Op::load_keras(const io::H5File&, const std::string&, const std::string&) {}

std::string Op::stream_rule(const std::vector<bool>& stepped_in, bool, std::vector<bool>& stepped_out) const {
  bool any = false, all = true;
  for (bool s : stepped_in) {
    any = any || s;
    all = all && s;
  }
  stepped_out.assign(stepped_out.size(), any);
  if (!any) return "";
  if (per_step && all) return "";
  if (per_step) return "it mixes streamed and whole tensors";
  return "it reads the whole sequence at once";
}

std::string spec_string(const Spec& s) {
  std::string out = "(";
  for (std::size_t i = 0; i < s.dims.size(); ++i) {
    if (i) out += ", ";
    out += s.dims[i] < 0 ? std::string("None") : std::to_string(s.dims[i]);
  }
  return out + (s.dims.size() == 1 ? ",)" : ")");
}

}  // namespace recur::graph
