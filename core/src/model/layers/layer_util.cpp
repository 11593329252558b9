// SPDX-License-Identifier: Apache-2.0
// What the layer families share: config reading, tensor allocation under the limits, weight
// loading and shape checks.
#include "model/layers/layer_util.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

#include "io/json_int.hpp"
#include "io/keras_entry.hpp"
#include "io/printable.hpp"
#include "model/device_run.hpp"
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
  constexpr std::int64_t kBound = std::int64_t(1) << 30;
  if (!io::int_in(x, -kBound, kBound, i))
    fail(Code::invalid_argument, key, ": ", io::excerpt(x), " is out of range (expected an integer in [", -kBound, ", ", kBound, "])");
  return i;
}

std::string str_of(const json& cfg, const char* key, const std::string& fallback) {
  return string_field(cfg, key, fallback);
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
  // The message is built only when it is needed: this runs for every tensor of every step.
  if (4 * n > static_cast<double>(limit(Limit::tensor_bytes)))
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

std::string Op::device_rule() const { return "recur has no GPU kernel for " + class_name; }
bool Op::forward_device(const CallInputs&, RunContext&, int, std::vector<Value>&) const { return false; }

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

double elements(const Spec& s) {
  double n = 1;
  for (Index d : s.dims) n *= static_cast<double>(std::max<Index>(d, 1));
  return n;
}

double elements(const std::vector<Spec>& specs) {
  double n = 0;
  for (const Spec& s : specs) n += elements(s);
  return n;
}

}  // namespace recur::graph

namespace recur::graph {

std::vector<Index> broadcast_shape(const std::vector<Index>& a, const std::vector<Index>& b, const std::string& who) {
  const std::size_t r = std::max(a.size(), b.size());
  std::vector<Index> out(r);
  for (std::size_t i = 0; i < r; ++i) {
    const Index x = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const Index y = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (x == y || y == 1) out[i] = x;
    else if (x == 1) out[i] = y;
    else if (x < 0 || y < 0) out[i] = std::max(x, y);
    else fail(Code::shape, who, ": shapes ", shape_string(a), " and ", shape_string(b), " do not broadcast");
  }
  return out;
}

BinaryFn arithmetic_fn(const std::string& name) {
  if (name == "add") return [](float x, float y) { return x + y; };
  if (name == "subtract") return [](float x, float y) { return x - y; };
  if (name == "multiply") return [](float x, float y) { return x * y; };
  if (name == "divide") return [](float x, float y) { return x / y; };
  if (name == "maximum") return [](float x, float y) { return std::max(x, y); };
  if (name == "minimum") return [](float x, float y) { return std::min(x, y); };
  return nullptr;
}

void broadcast_binary(const Value& a, const Value& b, Value& y, BinaryFn f) {
  const std::size_t r = y.shape.size();
  auto strides = [&](const std::vector<Index>& s) {
    std::vector<Index> st(r, 0);
    Index m = 1;
    for (std::size_t i = r; i-- > 0;) {
      const std::size_t off = r - s.size();
      if (i < off) continue;
      st[i] = s[i - off] == 1 ? 0 : m;
      m *= s[i - off];
    }
    return st;
  };
  const auto sa = strides(a.shape), sb = strides(b.shape);
  std::vector<Index> idx(r, 0);
  Index oa = 0, ob = 0;
  for (std::size_t flat = 0; flat < y.data.size(); ++flat) {
    y.data[flat] = f(a.data[static_cast<std::size_t>(oa)], b.data[static_cast<std::size_t>(ob)]);
    for (std::size_t i = r; i-- > 0;) {  // the next index, the offsets following it
      oa += sa[i];
      ob += sb[i];
      if (++idx[i] < y.shape[i]) break;
      oa -= sa[i] * idx[i];
      ob -= sb[i] * idx[i];
      idx[i] = 0;
    }
  }
}

std::vector<Index> reduced_shape(const std::vector<Index>& x, const std::vector<int>& axes, bool keepdims) {
  std::vector<Index> out;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const bool reduced = std::find(axes.begin(), axes.end(), static_cast<int>(i)) != axes.end();
    if (!reduced) out.push_back(x[i]);
    else if (keepdims) out.push_back(1);
  }
  return out;
}

void reduce_values(const Value& x, const std::vector<int>& axes, Reduction how, Value& y) {
  const std::size_t r = x.shape.size();
  // Output offset of each input element: the reduced axes do not move it.
  std::vector<Index> out_strides(r, 0);
  Index m = 1;
  for (std::size_t i = r; i-- > 0;) {
    if (std::find(axes.begin(), axes.end(), static_cast<int>(i)) != axes.end()) continue;
    out_strides[i] = m;
    m *= x.shape[i];
  }
  const float init = how == Reduction::all   ? 1.0f
                     : how == Reduction::max ? -std::numeric_limits<float>::infinity()
                     : how == Reduction::min ? std::numeric_limits<float>::infinity()
                                             : 0.0f;
  std::fill(y.data.begin(), y.data.end(), init);
  std::vector<Index> idx(r, 0);
  Index count = 1;
  for (int a : axes) count *= x.shape[static_cast<std::size_t>(a)];
  for (std::size_t flat = 0; flat < x.data.size(); ++flat) {
    Index o = 0;
    for (std::size_t i = 0; i < r; ++i) o += idx[i] * out_strides[i];
    float& acc = y.data[static_cast<std::size_t>(o)];
    const float v = x.data[flat];
    switch (how) {
      case Reduction::any: acc = (acc != 0) || (v != 0); break;
      case Reduction::all: acc = (acc != 0) && (v != 0); break;
      case Reduction::max: acc = std::max(acc, v); break;
      case Reduction::min: acc = std::min(acc, v); break;
      default: acc += v;
    }
    for (std::size_t i = r; i-- > 0;) {
      if (++idx[i] < x.shape[i]) break;
      idx[i] = 0;
    }
  }
  if (how == Reduction::mean)
    for (float& v : y.data) v /= static_cast<float>(count);
}

std::vector<Index> expanded_shape(const std::vector<Index>& x, int axis, const std::string& who) {
  const int r = static_cast<int>(x.size()) + 1;
  const int a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r) fail(Code::shape, who, ": axis ", axis, " is out of range for a rank-", r, " result");
  std::vector<Index> out = x;
  out.insert(out.begin() + a, 1);
  return out;
}

std::vector<Index> squeezed_shape(const std::vector<Index>& x, const std::vector<int>& axes, const std::string& who) {
  std::vector<Index> out;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const bool listed = std::find(axes.begin(), axes.end(), static_cast<int>(i)) != axes.end();
    if ((axes.empty() && x[i] == 1) || listed) {
      if (listed && x[i] != 1 && x[i] >= 0) fail(Code::shape, who, ": axis ", i, " has size ", x[i], ", not 1");
      continue;
    }
    out.push_back(x[i]);
  }
  return out;
}

int stack_axis(int given, std::size_t rank, const std::string& who) {
  const int r = static_cast<int>(rank) + 1;
  const int a = given < 0 ? given + r : given;
  if (a < 0 || a >= r) fail(Code::shape, who, ": axis ", given, " is out of range for a rank-", r, " result");
  return a;
}

std::vector<Index> stacked_shape(const std::vector<const std::vector<Index>*>& parts, int axis, const std::string& who) {
  if (parts.empty()) fail(Code::invalid_argument, who, ": expected at least 1 tensor");
  std::vector<Index> out = *parts[0];
  for (const auto* p : parts) {
    if (p->size() != out.size()) fail(Code::shape, who, ": tensors of different ranks: ", shape_string(out), " and ", shape_string(*p));
    for (std::size_t i = 0; i < out.size(); ++i) {
      if ((*p)[i] >= 0 && out[i] >= 0 && (*p)[i] != out[i])
        fail(Code::shape, who, ": shapes ", shape_string(*parts[0]), " and ", shape_string(*p), " differ");
      if (out[i] < 0) out[i] = (*p)[i];
    }
  }
  out.insert(out.begin() + axis, static_cast<Index>(parts.size()));
  return out;
}

void stack_values(const std::vector<const Value*>& parts, int axis, Value& y) {
  const auto a = static_cast<std::size_t>(axis);
  const Index outer = product(y.shape, 0, a), inner = product(y.shape, a + 1);
  const Index n = static_cast<Index>(parts.size());
  for (Index o = 0; o < outer; ++o)
    for (Index k = 0; k < n; ++k)
      std::copy_n(parts[static_cast<std::size_t>(k)]->data.data() + o * inner, inner, y.data.data() + (o * n + k) * inner);
}

std::vector<int> permutation_of(const json& perm, std::size_t rank, const std::string& who) {
  std::vector<int> given;
  if (!io::int_or_ints(perm, given) || !perm.is_array())
    fail(Code::invalid_argument, who, ": the permutation must be a list of integers, got ", io::excerpt(perm));
  if (given.size() != rank)
    fail(Code::shape, who, ": the permutation ", io::excerpt(perm), " does not have one entry per axis of a rank-", rank, " tensor");
  std::vector<int> p = normalized_axes(given, rank, who, perm);
  if (p[0] != 0) fail(Code::unsupported, who, ": a permutation that moves the batch axis");
  return p;
}

std::vector<Index> transposed_shape(const std::vector<Index>& x, const std::vector<int>& perm) {
  std::vector<Index> out;
  for (int p : perm) out.push_back(x[static_cast<std::size_t>(p)]);
  return out;
}

StridedRead transpose_read(const std::vector<Index>& x, const std::vector<int>& perm) {
  const std::size_t r = x.size();
  std::vector<Index> in_stride(r, 1);
  for (std::size_t i = r; i-- > 1;) in_stride[i - 1] = in_stride[i] * x[i];
  StridedRead s;
  for (std::size_t i = 0; i < r; ++i) {
    s.dims.push_back(x[static_cast<std::size_t>(perm[i])]);
    s.strides.push_back(in_stride[static_cast<std::size_t>(perm[i])]);
  }
  return s;
}

bool gather_on_device(RunContext& ctx, const Value& x, const StridedRead& r, std::vector<Index> shape,
                      const std::string& what, std::vector<Value>& out) {
  DeviceRun& dev = *ctx.device;
  if (r.dims.empty()) {  // an empty result: nothing to read
    out = {dev.make(std::move(shape), what.c_str())};
    return true;
  }
  std::optional<Value> y = dev.gather(x, r.dims, r.strides, r.base, std::move(shape), what);
  if (!y) {
    dev.declined = "it has " + std::to_string(r.dims.size()) + " axes; the GPU's strided read takes " +
                   std::to_string(RECUR_GPU_MAX_RANK);
    return false;
  }
  out = {std::move(*y)};
  return true;
}

bool elementwise_on_device(DeviceRun& dev, int op, const std::vector<FoldArg>& args, std::vector<Index> shape,
                           const std::string& what, std::vector<Value>& out) {
  const std::size_t r = std::max<std::size_t>(shape.size(), 1);
  if (r > RECUR_GPU_MAX_RANK || args.size() > RECUR_GPU_MAX_FOLD_INPUTS) {
    dev.declined = "it has " + std::to_string(r) + " axes and " + std::to_string(args.size()) +
                   " operands; the GPU's elementwise op takes " + std::to_string(RECUR_GPU_MAX_RANK) + " and " +
                   std::to_string(RECUR_GPU_MAX_FOLD_INPUTS);
    return false;
  }
  Value y = dev.make(shape, what.c_str());
  std::vector<std::int64_t> dims(r, 1), strides(args.size() * r, 0), floats(args.size(), 0);
  for (std::size_t i = 0; i < shape.size(); ++i) dims[i] = shape[i];
  std::vector<const float*> inputs(args.size(), nullptr);
  std::vector<float> constants(args.size(), 0.0f);
  std::vector<const std::uint8_t*> masks(args.size(), nullptr);
  bool masked = false;
  for (std::size_t k = 0; k < args.size(); ++k) {
    const FoldArg& a = args[k];
    constants[k] = a.constant;
    if (a.mask) {
      // The plugin reads dims[0] * dims[1] bytes of each mask.
      if (r < 3 || a.mask->size() != static_cast<std::size_t>(dims[0] * dims[1]))
        fail(Code::state, what, ": a mask of ", a.mask->size(), " steps for an output of shape ", shape_string(shape));
      masks[k] = a.mask->data();
      masked = true;
    }
    if (!a.v && !a.weights) continue;
    inputs[k] = a.v ? a.v->device->data() : a.weights;
    floats[k] = a.v ? a.v->device->floats : product(a.shape);
    // Strides 0 along the axes the operand broadcasts (size 1, or missing at the front).
    const std::vector<Index>& s = a.v ? a.v->shape : a.shape;
    Index m = 1;
    for (std::size_t i = r; i-- > 0;) {
      const std::size_t off = r - s.size();
      if (i < off) continue;
      strides[k * r + i] = s[i - off] == 1 ? 0 : m;
      m *= s[i - off];
    }
  }
  recur_gpu_elementwise e{};
  e.op = op;
  e.num_inputs = static_cast<std::int32_t>(args.size());
  e.inputs = inputs.data();
  e.input_floats = floats.data();
  e.constants = constants.data();
  e.rank = static_cast<std::int32_t>(r);
  e.dims = dims.data();
  e.strides = strides.data();
  e.masks = masked ? masks.data() : nullptr;
  e.out = y.device->data();
  dev.call(what, [&](char* err, std::size_t len) { return dev.table().elementwise(dev.ordinal(), &e, err, len); });
  out = {std::move(y)};
  return true;
}

bool reduce_on_device(DeviceRun& dev, const Value& x, const std::vector<int>& axes, Reduction how,
                      std::vector<Index> shape, const std::string& what, std::vector<Value>& out) {
  if (x.shape.empty() || x.shape.size() > RECUR_GPU_MAX_RANK) {
    dev.declined = "it has " + std::to_string(x.shape.size()) + " axes; the GPU's reduction takes 1 to " +
                   std::to_string(RECUR_GPU_MAX_RANK);
    return false;
  }
  std::uint32_t bits = 0;
  for (int a : axes) bits |= 1u << a;
  const int kind = how == Reduction::any    ? RECUR_GPU_REDUCE_ANY
                   : how == Reduction::all  ? RECUR_GPU_REDUCE_ALL
                   : how == Reduction::max  ? RECUR_GPU_REDUCE_MAX
                   : how == Reduction::min  ? RECUR_GPU_REDUCE_MIN
                   : how == Reduction::mean ? RECUR_GPU_REDUCE_MEAN
                                            : RECUR_GPU_REDUCE_SUM;
  const std::vector<std::int64_t> dims(x.shape.begin(), x.shape.end());
  Value y = dev.make(std::move(shape), what.c_str());
  dev.call(what, [&](char* err, std::size_t len) {
    return dev.table().reduce(dev.ordinal(), kind, x.device->data(), static_cast<std::int32_t>(dims.size()), dims.data(),
                              bits, y.device->data(), err, len);
  });
  out = {std::move(y)};
  return true;
}

bool join_on_device(DeviceRun& dev, const std::vector<const Value*>& parts, std::size_t axis, std::vector<Index> shape,
                    const std::string& what, std::vector<Value>& out) {
  // Each part's rows (the axes before `axis`) land side by side in the output's rows.
  const Index rows = product(shape, 0, axis), width = product(shape, axis);
  Value y = dev.make(std::move(shape), what.c_str());
  Index at = 0;
  for (const Value* v : parts) {
    const Index cols = rows > 0 ? v->device->floats / rows : 0;
    dev.call(what, [&](char* err, std::size_t len) {
      return dev.table().copy2d(dev.ordinal(), v->device->data(), cols, y.device->data() + at, width, rows, cols, err,
                                len);
    });
    at += cols;
  }
  out = {std::move(y)};
  return true;
}

void transpose_values(const Value& x, const std::vector<int>& perm, Value& y) {
  const std::size_t r = x.shape.size();
  const std::vector<Index> step = transpose_read(x.shape, perm).strides;  // the input offset one output step moves
  std::vector<Index> idx(r, 0);
  Index off = 0;
  for (std::size_t flat = 0; flat < y.data.size(); ++flat) {
    y.data[flat] = x.data[static_cast<std::size_t>(off)];
    for (std::size_t i = r; i-- > 0;) {
      off += step[i];
      if (++idx[i] < y.shape[i]) break;
      off -= step[i] * idx[i];
      idx[i] = 0;
    }
  }
}

SliceItem slice_item(const json& start, const json& stop, const json& step, const std::string& who) {
  SliceItem s;
  auto read = [&](const json& v, bool& has, Index& into, const char* what) {
    if (v.is_null()) return;
    std::int64_t x = 0;
    if (!v.is_number_integer() || (x = v.get<std::int64_t>()) < -(std::int64_t(1) << 40) || x > (std::int64_t(1) << 40))
      fail(Code::invalid_argument, who, ": a slice's ", what, " must be an integer or null, got ", io::excerpt(v));
    has = true;
    into = static_cast<Index>(x);
  };
  read(start, s.has_start, s.start, "start");
  read(stop, s.has_stop, s.stop, "stop");
  read(step, s.has_step, s.step, "step");
  if (s.has_step && s.step == 0) fail(Code::invalid_argument, who, ": a slice step cannot be zero");
  return s;
}

namespace {

// The positions an item takes along an axis of size n (Python's slice.indices), for a known n.
std::vector<Index> positions(const SliceItem& s, Index n, const std::string& who) {
  if (s.index) {
    const Index i = s.start < 0 ? s.start + n : s.start;
    if (i < 0 || i >= n) fail(Code::shape, who, ": index ", s.start, " is out of range for an axis of size ", n);
    return {i};
  }
  const Index st = s.has_step ? s.step : 1;
  const Index lower = st > 0 ? 0 : -1, upper = st > 0 ? n : n - 1;
  auto clamp = [&](bool has, Index v, Index fallback) {
    if (!has) return fallback;
    return v < 0 ? std::max(v + n, lower) : std::min(v, upper);
  };
  const Index a = clamp(s.has_start, s.start, st > 0 ? lower : upper);
  const Index b = clamp(s.has_stop, s.stop, st > 0 ? upper : lower);
  std::vector<Index> out;
  for (Index i = a; st > 0 ? i < b : i > b; i += st) out.push_back(i);
  return out;
}

}  // namespace

std::vector<SliceItem> full_key(const std::vector<SliceItem>& key, std::size_t rank, const std::string& who) {
  std::size_t consuming = 0, ellipses = 0;
  for (const SliceItem& s : key) {
    ellipses += s.ellipsis;
    consuming += !s.ellipsis && !s.newaxis;
  }
  if (ellipses > 1) fail(Code::invalid_argument, who, ": a slice key with more than one ellipsis");
  if (consuming > rank) fail(Code::shape, who, ": ", consuming, " slice items for a rank-", rank, " tensor");
  std::vector<SliceItem> out;
  for (const SliceItem& s : key) {
    if (!s.ellipsis) out.push_back(s);
    else out.insert(out.end(), rank - consuming, SliceItem{});
  }
  if (!ellipses) out.insert(out.end(), rank - consuming, SliceItem{});
  return out;
}

bool key_keeps_time(const std::vector<SliceItem>& key, std::size_t rank, const std::string& who) {
  const std::vector<SliceItem> full = full_key(key, rank, who);
  return full.size() < 2 || rank < 2 || (full[0].whole() && full[1].whole());
}

std::vector<Index> sliced_shape(const std::vector<Index>& x, const std::vector<SliceItem>& key, const std::string& who) {
  const std::vector<SliceItem> full = full_key(key, x.size(), who);
  if (!full.empty() && !full[0].whole()) fail(Code::unsupported, who, ": slicing the batch axis or a new axis before it");
  std::vector<Index> out;
  std::size_t i = 0;  // the input axis the next item takes
  for (const SliceItem& s : full) {
    if (s.newaxis) {
      out.push_back(1);
      continue;
    }
    const Index n = x[i++];
    if (s.whole()) out.push_back(n);
    else if (n < 0) {
      if (!s.index) out.push_back(-1);
    } else {
      const Index k = static_cast<Index>(positions(s, n, who).size());
      if (!s.index) out.push_back(k);
    }
  }
  return out;
}

StridedRead slice_read(const std::vector<Index>& x, const std::vector<SliceItem>& key, const std::string& who) {
  const std::size_t r = x.size();
  std::vector<SliceItem> taken;  // new axes do not move the values
  for (const SliceItem& s : full_key(key, r, who))
    if (!s.newaxis) taken.push_back(s);
  std::vector<Index> stride(r, 1);
  for (std::size_t i = r; i-- > 1;) stride[i - 1] = stride[i] * x[i];
  StridedRead s;
  for (std::size_t i = 0; i < r; ++i) {
    // Python's slice positions are evenly spaced: the first and the step between them.
    const std::vector<Index> pos = positions(taken[i], x[i], who);
    if (pos.empty()) return {};
    s.dims.push_back(static_cast<Index>(pos.size()));
    s.strides.push_back(pos.size() > 1 ? (pos[1] - pos[0]) * stride[i] : 0);
    s.base += pos[0] * stride[i];
  }
  return s;
}

void slice_values(const Value& x, const std::vector<SliceItem>& key, Value& y, const std::string& who) {
  const std::size_t r = x.shape.size();
  std::vector<SliceItem> taken;  // new axes do not move the values
  for (const SliceItem& s : full_key(key, r, who))
    if (!s.newaxis) taken.push_back(s);
  std::vector<std::vector<Index>> pos(r);
  std::vector<Index> stride(r, 1);
  for (std::size_t i = r; i-- > 1;) stride[i - 1] = stride[i] * x.shape[i];
  for (std::size_t i = 0; i < r; ++i) {
    pos[i] = positions(taken[i], x.shape[i], who);
    if (pos[i].empty()) return;  // an empty result
  }
  std::vector<std::size_t> idx(r, 0);
  for (std::size_t flat = 0; flat < y.data.size(); ++flat) {
    Index off = 0;
    for (std::size_t i = 0; i < r; ++i) off += pos[i][idx[i]] * stride[i];
    y.data[flat] = x.data[static_cast<std::size_t>(off)];
    for (std::size_t i = r; i-- > 0;) {
      if (++idx[i] < pos[i].size()) break;
      idx[i] = 0;
    }
  }
}

namespace {

bool is_keras2_entry(const json& v) { return v.is_array() && (v.size() == 3 || v.size() == 4) && v[0].is_string(); }

void node_entries(const json& v, std::vector<const json*>& out, const std::string& where, int depth) {
  if (depth > 64) fail(Code::io, where, ": an inbound node nested too deeply");
  if (is_keras2_entry(v)) {
    out.push_back(&v);
  } else if (v.is_array()) {
    for (const auto& x : v) node_entries(x, out, where, depth + 1);
  } else {
    fail(Code::io, where, ": an inbound node entry must be a list, got ", io::excerpt(v));
  }
}

}  // namespace

std::vector<const json*> keras2_node_entries(const json& node, const std::string& where) {
  std::vector<const json*> out;
  node_entries(node, out, where, 0);
  return out;
}

bool is_keras2_ref(const json& v) {
  return v.is_array() && v.size() == 3 && v[0].is_string() && v[1].is_number_integer() && v[2].is_number_integer();
}

void keras2_kwarg_refs(const json& kwargs, std::vector<const json*>& out, const std::string& where, int depth) {
  if (depth > 64) fail(Code::io, where, ": call arguments nested too deeply");
  if (is_keras2_ref(kwargs)) {
    out.push_back(&kwargs);
  } else if (kwargs.is_array()) {
    for (const auto& x : kwargs) keras2_kwarg_refs(x, out, where, depth + 1);
  } else if (kwargs.is_object()) {
    for (const auto& item : kwargs.items()) keras2_kwarg_refs(item.value(), out, where, depth + 1);
  }
}

}  // namespace recur::graph
