// SPDX-License-Identifier: Apache-2.0
// Keras's numeric preprocessing layers saved inside models: Normalization, Rescaling,
// Discretization, CategoryEncoding, IntegerLookup. Each acts on every element alone; the integer
// ids that Discretization and IntegerLookup make go on exact (Value::ids) to an Embedding.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <unordered_map>

#include "io/json_int.hpp"
#include "io/printable.hpp"
#include "model/device_run.hpp"
#include "model/layers/layer_util.hpp"
#include "model/layers/registry.hpp"
#include "recur/error.hpp"
#include "recur/limits.hpp"

namespace recur::graph {
namespace {

// Keras's backend.epsilon() (both dialects): Normalization divides by max(sqrt(variance), it).
constexpr float kEpsilon = 1e-7f;

// A config array of numbers (nested lists: a tensor), or one number; Keras 3 may write an array
// as {"class_name": "__numpy__", "config": {"value": ...}}.
struct Numbers {
  std::vector<Index> dims;  // empty: a scalar
  std::vector<double> values;
};

void collect_numbers(const json& v, std::size_t depth, Numbers& out, const std::string& what) {
  if (v.is_number()) {
    if (depth != out.dims.size()) fail(Code::invalid_argument, what, ": a ragged array");
    const double x = v.get<double>();
    if (!std::isfinite(x)) fail(Code::invalid_argument, what, ": expected finite numbers, got ", io::excerpt(v));
    out.values.push_back(x);
    return;
  }
  if (!v.is_array() || depth >= RECUR_MAX_RANK_CORE)
    fail(Code::invalid_argument, what, ": expected a number or a list of numbers, got ", io::excerpt(v));
  if (depth == out.dims.size() && out.values.empty()) out.dims.push_back(static_cast<Index>(v.size()));
  if (depth >= out.dims.size() || out.dims[depth] != static_cast<Index>(v.size()))
    fail(Code::invalid_argument, what, ": a ragged array");
  for (const json& e : v) collect_numbers(e, depth + 1, out, what);
}

Numbers numbers_of(const json& v, const std::string& what) {
  const json& x = v.is_object() && str_of(v, "class_name", "") == "__numpy__" && v.contains("config") &&
                          v["config"].is_object() && v["config"].contains("value")
                      ? v["config"]["value"]
                      : v;
  Numbers n;
  collect_numbers(x, 0, n, what);
  if (n.values.empty()) fail(Code::invalid_argument, what, ": an empty array");
  return n;
}

// `n` broadcast (numpy rules, trailing axes aligned) to `shape`, row-major.
std::vector<float> broadcast_to(const Numbers& n, const std::vector<Index>& shape, const std::string& what) {
  if (n.dims.size() > shape.size())
    fail(Code::invalid_argument, what, ": an array of rank ", n.dims.size(), " for ", shape.size(), " normalized axes");
  const std::size_t lead = shape.size() - n.dims.size();
  for (std::size_t a = 0; a < n.dims.size(); ++a)
    if (n.dims[a] != 1 && n.dims[a] != shape[lead + a])
      fail(Code::invalid_argument, what, ": shape ", shape_string(n.dims), " does not broadcast to ", shape_string(shape));
  const Index total = product(shape);
  std::vector<float> out(static_cast<std::size_t>(total));
  for (Index i = 0; i < total; ++i) {
    Index rest = i, src = 0, stride = 1;
    for (std::size_t a = shape.size(); a-- > 0;) {
      const Index c = rest % shape[a];
      rest /= shape[a];
      if (a >= lead) {
        const Index d = n.dims[a - lead];
        src += (d == 1 ? 0 : c) * stride;
        stride *= d;
      }
    }
    out[static_cast<std::size_t>(i)] = static_cast<float>(n.values[static_cast<std::size_t>(src)]);
  }
  return out;
}

// The integer value of element k: the exact id when the input carries them, else its float,
// which must be a whole number (Keras casts it to an integer dtype).
std::int64_t integer_at(const Value& x, std::size_t k, const std::string& who) {
  if (x.ids && x.ids->values.size() == x.data.size()) return x.ids->values[k];
  const float f = x.data[k];
  if (!(f == std::floor(f)) || std::fabs(f) > 9.2e18f)
    fail(Code::invalid_argument, who, ": input value ", f, " at position ", k, " is not an integer");
  return static_cast<std::int64_t>(f);
}

// output_mode, as Keras's encode_categorical_inputs applies it to integer ids.
enum class Encoding { int_ids, one_hot, multi_hot, count };

Encoding encoding_of(const json& cfg, const std::string& cls, bool allow_int, const char* fallback) {
  std::string m = str_of(cfg, "output_mode", fallback);
  if (m == "binary") m = "multi_hot";  // Keras 2's old name
  if (m == "int" && allow_int) return Encoding::int_ids;
  if (m == "one_hot") return Encoding::one_hot;
  if (m == "multi_hot") return Encoding::multi_hot;
  if (m == "count") return Encoding::count;
  if (m == "tf_idf") fail(Code::unsupported, cls, ": output_mode='tf_idf'");
  fail(Code::invalid_argument, cls, ": output_mode: expected ", allow_int ? "'int', " : "",
       "'one_hot', 'multi_hot' or 'count', got ", io::excerpt(cfg.value("output_mode", json())));
}

void refuse_sparse(const json& cfg, const std::string& cls) {
  if (bool_of(cfg, "sparse", false)) fail(Code::unsupported, cls, ": sparse=True (recur gives dense tensors)");
}

// one_hot replaces a last axis of size 1 instead of adding one: decided by the shape the model
// declares (as Keras's graph does), not by a run's, so a (batch, None) sequence streamed one step
// at a time keeps its time axis.
bool squeezes(int& decided, const Spec& in) {
  if (decided < 0) decided = in.dims.size() > 1 && in.dims.back() == 1;
  return decided == 1;
}

// The output spec of an encoding of `in` into `depth` classes.
Spec encoded_spec(const Spec& in, Encoding e, Index depth, bool squeeze, const std::string& cls) {
  Spec s = in;
  s.ids = e == Encoding::int_ids;
  if (e == Encoding::int_ids) return s;
  if (e == Encoding::one_hot) {
    if (squeeze) s.dims.back() = depth;
    else s.dims.push_back(depth);
    if (s.dims.size() > RECUR_MAX_RANK_CORE) fail(Code::shape, cls, ": one_hot of ", spec_string(in), " has too many axes");
    return s;
  }
  // multi_hot/count: Keras's backends agree on (batch, values) only.
  if (in.dims.size() != 2)
    fail(Code::unsupported, cls, ": output_mode multi_hot/count on ", spec_string(in),
         " (recur encodes (batch, values) inputs; Keras's backends differ on other ranks)");
  return Spec{{in.dims[0], depth}, false};
}

// Encodes integer indices (shape `shape`) into `depth` classes; `skip` marks indices that count
// nowhere (IntegerLookup's mask token in multi_hot/count). Out-of-range indices are an error.
Value encode(const std::vector<std::int64_t>& idx, const std::vector<std::uint8_t>* skip, const std::vector<Index>& shape,
             Encoding e, Index depth, bool squeeze, const std::string& who, const char* what) {
  auto check = [&](std::int64_t v, std::size_t k) {
    if (v < 0 || v >= depth)
      fail(Code::invalid_argument, who, ": value ", v, " at position ", k, " is out of range [0, ", depth, ")");
  };
  if (e == Encoding::int_ids) {
    Value y = make_value(shape, what);
    for (std::size_t k = 0; k < idx.size(); ++k) y.data[k] = static_cast<float>(idx[k]);
    y.ids = std::make_shared<const Ids>(Ids{idx, who});
    return y;
  }
  if (e == Encoding::one_hot) {
    std::vector<Index> out = shape;
    if (squeeze) out.back() = depth;
    else out.push_back(depth);
    Value y = make_value(out, what);
    for (std::size_t k = 0; k < idx.size(); ++k) {
      if (skip && (*skip)[k]) continue;
      check(idx[k], k);
      y.data[k * static_cast<std::size_t>(depth) + static_cast<std::size_t>(idx[k])] = 1.0f;
    }
    return y;
  }
  const Index rows = shape[0], n = shape[1];
  Value y = make_value({rows, depth}, what);
  for (Index r = 0; r < rows; ++r)
    for (Index j = 0; j < n; ++j) {
      const std::size_t k = static_cast<std::size_t>(r * n + j);
      if (skip && (*skip)[k]) continue;
      check(idx[k], k);
      float& out = y.data[static_cast<std::size_t>(r * depth + idx[k])];
      out = e == Encoding::count ? out + 1.0f : 1.0f;
    }
  return y;
}

// Streaming: per-element encodings stream; multi_hot and count sum over an input's values (its
// time axis when streamed), so they need the whole sequence.
std::string encoding_stream_rule(const Op& op, Encoding e, const std::vector<bool>& stepped_in, std::vector<bool>& stepped_out) {
  const bool stepped = !stepped_in.empty() && stepped_in[0];
  stepped_out.assign(stepped_out.size(), stepped);
  if (stepped && (e == Encoding::multi_hot || e == Encoding::count))
    return std::string("output_mode ") + (e == Encoding::count ? "'count'" : "'multi_hot'") +
           " sums over the whole sequence (only 'int' and 'one_hot' stream)";
  return op.Op::stream_rule(stepped_in, false, stepped_out);
}

class NormalizationOp : public Op {
 public:
  explicit NormalizationOp(const json& cfg) {
    if (!cfg.contains("axis") || !cfg["axis"].is_null()) axes_ = axes_of(cfg, -1);  // null: one mean for all
    invert_ = bool_of(cfg, "invert", false);
    const bool has_mean = cfg.contains("mean") && !cfg["mean"].is_null();
    const bool has_var = cfg.contains("variance") && !cfg["variance"].is_null();
    if (has_mean != has_var) fail(Code::invalid_argument, "Normalization: mean and variance must be given together");
    if (has_mean) {
      mean_cfg_ = numbers_of(cfg["mean"], "Normalization: mean");
      var_cfg_ = numbers_of(cfg["variance"], "Normalization: variance");
      if (mean_cfg_.dims != var_cfg_.dims)
        fail(Code::invalid_argument, "Normalization: mean has shape ", shape_string(mean_cfg_.dims), ", variance ",
             shape_string(var_cfg_.dims), " (expected the same)");
      for (double v : var_cfg_.values)
        if (v < 0) fail(Code::invalid_argument, "Normalization: variance holds a negative value (", v, ")");
      given_ = true;
    }
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext& ctx) override {
    check_rank(in, 1, 1, "Normalization");
    const std::size_t rank = in[0].dims.size();
    std::vector<int> keep = normalized_axes(axes_, rank, "Normalization", json(axes_));
    std::sort(keep.begin(), keep.end());
    std::vector<Index> shape;
    for (int a : keep) {
      const Index d = in[0].dims[static_cast<std::size_t>(a)];
      if (a == 0 || d <= 0)
        fail(Code::shape, "Normalization: axis ", a, " of ", spec_string(in[0]), " must be a known non-batch axis");
      shape.push_back(d);
    }
    if (!built_) {
      if (mean_cfg_.dims.size() > keep.size())
        fail(Code::invalid_argument, "Normalization: mean of rank ", mean_cfg_.dims.size(), " for ", keep.size(), " axes");
      const Index n = product(shape);
      ctx.reserve_weights(2.0 * static_cast<double>(n), "Normalization: " + std::to_string(n) + " values");
      keep_ = keep;
      shape_ = shape;
      if (given_) {
        mean_ = broadcast_to(mean_cfg_, shape, "Normalization: mean");
        div_ = divisors(broadcast_to(var_cfg_, shape, "Normalization: variance"));
      } else {
        mean_.assign(static_cast<std::size_t>(n), 0.0f);
        div_.assign(static_cast<std::size_t>(n), 1.0f);  // variance 1
      }
      built_ = true;
    } else if (keep != keep_ || shape != shape_) {
      fail(Code::shape, "Normalization: built for ", shape_string(shape_), " statistics, called on ", spec_string(in[0]));
    }
    // Statistics per timestep differ along the stream's time axis.
    set_once(per_step, std::find(keep_.begin(), keep_.end(), 1) == keep_.end());
    return in;
  }
  std::string device_rule() const override { return ""; }
  // (x - mean) / div, or mean + x * div inverted: two elementwise ops, each rounding as forward does.
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    check_shape(x);
    const auto w = weights_.on(*ctx.device, {{mean_.data(), mean_.size()}, {div_.data(), div_.size()}});
    FoldArg xa, mean, d;
    xa.v = &x;
    // The statistics as a tensor of x's rank: the kept axes' sizes, 1 elsewhere.
    std::vector<Index> stats(x.shape.size(), 1);
    for (std::size_t i = 0; i < keep_.size(); ++i) stats[static_cast<std::size_t>(keep_[i])] = shape_[i];
    mean.weights = w[0], mean.shape = stats;
    d.weights = w[1], d.shape = stats;
    const std::string what = "Normalization '" + name + "'";
    std::vector<Value> t;
    if (!elementwise_on_device(*ctx.device, invert_ ? RECUR_GPU_OP_MUL : RECUR_GPU_OP_SUB, {xa, invert_ ? d : mean}, x.shape,
                               what, t))
      return false;
    FoldArg ta;
    ta.v = &t[0];
    if (!(invert_ ? elementwise_on_device(*ctx.device, RECUR_GPU_OP_ADD, {mean, ta}, x.shape, what, out)
                  : elementwise_on_device(*ctx.device, RECUR_GPU_OP_DIV, {ta, d}, x.shape, what, out)))
      return false;
    out[0].mask = x.mask;
    return true;
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const Value& x = *in.main[0];
    check_shape(x);
    Value y = make_value(x.shape, "Normalization");
    y.mask = x.mask;
    const std::size_t n = x.data.size();
    for (std::size_t k = 0; k < n; ++k) {
      // The statistics' index: the element's coordinates on the kept axes.
      Index rest = static_cast<Index>(k), s = 0, stride = 1;
      std::size_t ki = keep_.size();
      for (std::size_t a = x.shape.size(); a-- > 0;) {
        const Index c = rest % x.shape[a];
        rest /= x.shape[a];
        if (ki > 0 && static_cast<std::size_t>(keep_[ki - 1]) == a) {
          --ki;
          s += c * stride;
          stride *= shape_[ki];
        }
      }
      const std::size_t i = static_cast<std::size_t>(s);
      y.data[k] = invert_ ? mean_[i] + x.data[k] * div_[i] : (x.data[k] - mean_[i]) / div_[i];
    }
    return {std::move(y)};
  }
  void check_shape(const Value& x) const {
    for (std::size_t i = 0; i < keep_.size(); ++i)
      if (x.shape[static_cast<std::size_t>(keep_[i])] != shape_[i])
        fail(Code::shape, "Normalization '", name, "': built for ", shape_string(shape_), " statistics, called on ",
             shape_string(x.shape));
  }
  // Keras divides by max(sqrt(variance), epsilon).
  static std::vector<float> divisors(std::vector<float> var) {
    for (float& v : var) v = std::max(std::sqrt(v), kEpsilon);
    return var;
  }
  std::string stream_rule(const std::vector<bool>& stepped_in, bool init, std::vector<bool>& stepped_out) const override {
    if (!per_step && !stepped_in.empty() && stepped_in[0]) {
      stepped_out.assign(stepped_out.size(), true);
      return "its axis keeps the time axis (a mean and variance per timestep), so it needs the whole sequence";
    }
    return Op::stream_rule(stepped_in, init, stepped_out);
  }
  // Adapted: mean, variance and count are the layer's weights.
  std::size_t num_weights() const override { return given_ ? 0 : 3; }
  std::uint64_t weight_floats() const override { return mean_.size() + div_.size(); }
  void load(std::vector<StoredWeight>& w, bool, const std::string& where) override {
    const std::vector<std::int64_t> shape(shape_.begin(), shape_.end());
    mean_ = take_weight(w, shape, where);
    const std::vector<float> var = take_weight(w, shape, where);
    take_weight(w, {}, where);  // count: how many samples adapt() saw
    weights_.reset();
    for (std::size_t i = 0; i < var.size(); ++i)
      if (!std::isfinite(mean_[i]) || !(var[i] >= 0.0f) || !std::isfinite(var[i]))
        fail(Code::io, where, ": Normalization '", name, "': mean and variance must be finite, variance not negative");
    div_ = divisors(var);
  }
  void load_keras(const io::H5File& h5, const std::string& object, const std::string& file) override {
    auto w = read_vars(h5, object, file, 2 * weight_floats() + 16);
    check_count(w, num_weights(), file + ": model.weights.h5:/" + object, name);
    load(w, false, file + ": model.weights.h5:/" + object);
  }

 private:
  std::vector<int> axes_;  // empty: axis=None
  bool invert_ = false, given_ = false, built_ = false;
  DeviceWeights weights_;  // mean and divisors on the GPU
  Numbers mean_cfg_, var_cfg_;
  std::vector<int> keep_;
  std::vector<Index> shape_;
  std::vector<float> mean_, div_;  // div_: the variance as Keras divides by it (divisors)
};

class RescalingOp : public Op {
 public:
  explicit RescalingOp(const json& cfg) {
    if (!cfg.contains("scale") || cfg["scale"].is_null()) fail(Code::invalid_argument, "Rescaling: scale is missing");
    scale_ = numbers_of(cfg["scale"], "Rescaling: scale");
    offset_ = cfg.contains("offset") && !cfg["offset"].is_null() ? numbers_of(cfg["offset"], "Rescaling: offset") : Numbers{{}, {0.0}};
    per_step = true;
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    check_rank(in, 1, 1, "Rescaling");
    for (const Numbers* n : {&scale_, &offset_}) {
      if (n->dims.size() > 1)
        fail(Code::unsupported, "Rescaling: a scale or offset of shape ", shape_string(n->dims),
             " (recur takes a number or one value per channel)");
      if (!n->dims.empty() && n->dims[0] != 1 && n->dims[0] != in[0].dims.back())
        fail(Code::shape, "Rescaling: ", n->dims[0], " values for ", spec_string(in[0]), " (expected one per channel)");
    }
    // The scale and offset of each channel, as floats, for the GPU's x * p + q.
    const Index c = in[0].dims.empty() ? 0 : in[0].dims.back();
    p_.clear(), q_.clear();
    for (Index j = 0; j < c; ++j) {
      p_.push_back(at(scale_, j));
      q_.push_back(at(offset_, j));
    }
    weights_.reset();
    return in;
  }
  std::string device_rule() const override { return ""; }
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    const Index c = x.shape.empty() ? 0 : x.shape.back();
    if (x.shape.empty() || c != static_cast<Index>(p_.size())) {
      ctx.device->declined = "its channels were not known when the model was built";
      return false;
    }
    DeviceRun& dev = *ctx.device;
    Value y = dev.make(x.shape, "Rescaling");
    if (c > 0) {
      const auto w = weights_.on(dev, {{p_.data(), p_.size()}, {q_.data(), q_.size()}});
      const std::int64_t dims[2] = {product(x.shape) / c, c}, strides[2] = {0, 1};
      dev.call("Rescaling '" + name + "'", [&](char* err, std::size_t len) {
        return dev.table().broadcast_op(dev.ordinal(), RECUR_GPU_BCAST_AFFINE, x.device->data(), 2, dims, strides, w[0],
                                        w[1], y.device->data(), err, len);
      });
    }
    y.mask = x.mask;
    out = {std::move(y)};
    return true;
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const Value& x = *in.main[0];
    Value y = make_value(x.shape, "Rescaling");
    y.mask = x.mask;
    const Index c = x.shape.back();
    for (std::size_t k = 0; k < x.data.size(); ++k) {
      const Index j = static_cast<Index>(k) % c;
      const float scaled = x.data[k] * at(scale_, j);  // two roundings, as Keras: x * scale + offset
      y.data[k] = scaled + at(offset_, j);
    }
    return {std::move(y)};
  }

 private:
  static float at(const Numbers& n, Index j) {
    return static_cast<float>(n.values[n.values.size() == 1 ? 0 : static_cast<std::size_t>(j)]);
  }
  Numbers scale_, offset_;
  std::vector<float> p_, q_;
  DeviceWeights weights_;
};

// numpy's interp(x, xp, fp) at one x (xp sorted): fp's ends outside xp, else the line through
// the pair around x, as numpy computes it.
double interp(double x, const std::vector<double>& xp, const std::vector<double>& fp) {
  const std::size_t n = xp.size();
  if (x > xp[n - 1]) return fp[n - 1];
  if (x < xp[0]) return fp[0];
  const std::size_t j = static_cast<std::size_t>(std::upper_bound(xp.begin(), xp.end(), x) - xp.begin()) - 1;
  if (j == n - 1 || xp[j] == x) return fp[j];
  const double slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
  double r = slope * (x - xp[j]) + fp[j];
  if (std::isnan(r)) {
    r = slope * (x - xp[j + 1]) + fp[j + 1];
    if (std::isnan(r) && fp[j] == fp[j + 1]) r = fp[j];
  }
  return r;
}

class DiscretizationOp : public Op {
 public:
  explicit DiscretizationOp(const json& cfg) {
    refuse_sparse(cfg, "Discretization");
    mode_ = encoding_of(cfg, "Discretization", true, "int");
    if (!cfg.contains("bin_boundaries") || cfg["bin_boundaries"].is_null()) {
      // Keras 2 keeps an adapted layer's quantile summary as a weight and its boundaries nowhere.
      num_bins_ = int_of(cfg, "num_bins", 0);
      if (num_bins_ < 1)
        fail(Code::invalid_argument, "Discretization: bin_boundaries is not set, and num_bins is not a positive integer");
      adapted_ = true;
      return;
    }
    const json& b = cfg["bin_boundaries"];
    if (!b.is_array()) fail(Code::invalid_argument, "Discretization: bin_boundaries: expected a list of numbers, got ", io::excerpt(b));
    check_limit(Limit::weight_bytes, 4.0 * static_cast<double>(b.size()), "Discretization: bin_boundaries");
    for (const json& v : b) {
      if (!v.is_number() || !std::isfinite(v.get<double>()))
        fail(Code::invalid_argument, "Discretization: bin_boundaries: expected numbers, got ", io::excerpt(v));
      const float f = static_cast<float>(v.get<double>());
      if (!bounds_.empty() && f < bounds_.back())
        fail(Code::invalid_argument, "Discretization: bin_boundaries must be sorted, got ", io::excerpt(b));
      bounds_.push_back(f);
    }
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    check_rank(in, 1, 1, "Discretization");
    set_once(per_step, mode_ == Encoding::int_ids || mode_ == Encoding::one_hot);
    return {encoded_spec(in[0], mode_, depth(), squeezes(squeeze_, in[0]), "Discretization")};
  }
  double work(const std::vector<Spec>& main, const std::vector<Spec>& out) const override {
    // A binary search over the boundaries per element, each probe a likely mispredicted branch.
    const double probes = std::ceil(std::log2(double(bounds_.size()) + 2));
    return elements(main) * probes * kLookupWork / 4 + Op::work(main, out);
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const Value& x = *in.main[0];
    std::vector<std::int64_t> idx(x.data.size());
    // Keras's digitize (TF's Bucketize): the number of boundaries <= x.
    for (std::size_t k = 0; k < idx.size(); ++k)
      idx[k] = std::upper_bound(bounds_.begin(), bounds_.end(), x.data[k]) - bounds_.begin();
    return {encode(idx, nullptr, x.shape, mode_, depth(), squeeze_ == 1, "Discretization '" + name + "'", "Discretization")};
  }
  bool makes_ids() const override { return mode_ == Encoding::int_ids; }
  std::string stream_rule(const std::vector<bool>& stepped_in, bool, std::vector<bool>& stepped_out) const override {
    return encoding_stream_rule(*this, mode_, stepped_in, stepped_out);
  }
  std::size_t num_weights() const override { return adapted_ ? 1 : 0; }
  // The summary adapt() leaves holds about num_bins / epsilon pairs; a few thousand at most.
  std::uint64_t weight_floats() const override { return adapted_ ? 2 * kMaxSummary : 0; }
  void load(std::vector<StoredWeight>& w, bool, const std::string& where) override {
    if (w.empty()) fail(Code::io, where, ": the file holds no summary for Discretization '", name, "'");
    const std::vector<std::int64_t> shape = w.front().shape;
    if (shape.size() != 2 || shape[0] != 2 || shape[1] < 1 || static_cast<std::uint64_t>(shape[1]) > kMaxSummary)
      fail(Code::io, weight_location(where, w.front().path), ": Discretization '", name,
           "': expected a (2, n) summary of bins and counts, n <= ", kMaxSummary);
    const std::vector<float> summary = take_weight(w, shape, where);
    bounds_ = boundaries_of(summary, static_cast<std::size_t>(shape[1]));
    if (mode_ != Encoding::int_ids && static_cast<Index>(bounds_.size()) + 1 != num_bins_)
      fail(Code::io, where, ": Discretization '", name, "': its summary gives ", bounds_.size() + 1, " bins, num_bins is ",
           num_bins_);
    for (std::size_t i = 1; i < bounds_.size(); ++i)
      if (!(bounds_[i] >= bounds_[i - 1])) fail(Code::io, where, ": Discretization '", name, "': the summary is not sorted");
  }
  void load_keras(const io::H5File& h5, const std::string& object, const std::string& file) override {
    auto w = read_vars(h5, object, file, 2 * weight_floats() + 16);
    check_count(w, num_weights(), file + ": model.weights.h5:/" + object, name);
    load(w, false, file + ": model.weights.h5:/" + object);
  }

 private:
  static constexpr std::uint64_t kMaxSummary = 1u << 16;
  // tf_keras's get_bin_boundaries: compress(summary, 1 / num_bins)[0, :-1], in numpy's arithmetic
  // (float32 cumulative weights, float64 interpolation, float32 result).
  std::vector<float> boundaries_of(const std::vector<float>& summary, std::size_t n) const {
    const double eps = 1.0 / static_cast<double>(num_bins_);
    std::vector<float> bins(summary.begin(), summary.begin() + static_cast<std::ptrdiff_t>(n));
    if (static_cast<double>(n) * eps >= 1.0) {
      std::vector<float> cum(n);
      float acc = 0.0f;
      for (std::size_t i = 0; i < n; ++i) cum[i] = acc += summary[n + i];
      std::vector<double> xp(n), fp(n);
      for (std::size_t i = 0; i < n; ++i) {
        xp[i] = static_cast<double>(cum[i] / cum[n - 1]);
        fp[i] = static_cast<double>(summary[i]);
      }
      const std::size_t count = static_cast<std::size_t>(std::ceil(1.0 / eps));
      bins.assign(count, 0.0f);
      for (std::size_t i = 0; i < count; ++i) bins[i] = static_cast<float>(interp(eps + static_cast<double>(i) * eps, xp, fp));
    }
    bins.pop_back();
    return bins;
  }
  Index depth() const { return adapted_ ? num_bins_ : static_cast<Index>(bounds_.size()) + 1; }
  Encoding mode_ = Encoding::int_ids;
  int squeeze_ = -1, num_bins_ = 0;
  bool adapted_ = false;
  std::vector<float> bounds_;
};

class CategoryEncodingOp : public Op {
 public:
  explicit CategoryEncodingOp(const json& cfg) {
    refuse_sparse(cfg, "CategoryEncoding");
    mode_ = encoding_of(cfg, "CategoryEncoding", false, "multi_hot");
    if (!cfg.contains("num_tokens") || cfg["num_tokens"].is_null())
      fail(Code::invalid_argument, "CategoryEncoding: num_tokens is missing");
    depth_ = int_of(cfg, "num_tokens", 0);
    if (depth_ < 1) fail(Code::invalid_argument, "CategoryEncoding: num_tokens must be at least 1, got ", depth_);
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    check_rank(in, 1, 1, "CategoryEncoding");
    set_once(per_step, mode_ == Encoding::one_hot);
    return {encoded_spec(in[0], mode_, depth_, squeezes(squeeze_, in[0]), "CategoryEncoding")};
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const Value& x = *in.main[0];
    const std::string who = "CategoryEncoding '" + name + "'";
    std::vector<std::int64_t> idx(x.data.size());
    for (std::size_t k = 0; k < idx.size(); ++k) idx[k] = integer_at(x, k, who);
    return {encode(idx, nullptr, x.shape, mode_, depth_, squeeze_ == 1, who, "CategoryEncoding")};
  }
  std::string stream_rule(const std::vector<bool>& stepped_in, bool, std::vector<bool>& stepped_out) const override {
    return encoding_stream_rule(*this, mode_, stepped_in, stepped_out);
  }

 private:
  Encoding mode_ = Encoding::multi_hot;
  int squeeze_ = -1;
  Index depth_ = 0;
};

// The most vocabulary terms recur reads (each costs a hash entry).
constexpr std::size_t kMaxVocabulary = std::size_t(1) << 24;

class IntegerLookupOp : public Op {
 public:
  IntegerLookupOp(const json& cfg, const BuildContext& ctx, const std::string& object_path) {
    refuse_sparse(cfg, "IntegerLookup");
    mode_ = encoding_of(cfg, "IntegerLookup", true, "int");
    invert_ = bool_of(cfg, "invert", false);
    if (invert_ && mode_ != Encoding::int_ids)
      fail(Code::invalid_argument, "IntegerLookup: invert=True needs output_mode='int'");
    const std::string dtype = str_of(cfg, "vocabulary_dtype", "int64");
    if (dtype != "int64" && dtype != "int32")
      fail(Code::invalid_argument, "IntegerLookup: vocabulary_dtype: expected 'int64', got '", io::printable(dtype), "'");
    num_oov_ = int_of(cfg, "num_oov_indices", 1);
    if (num_oov_ < 0) fail(Code::invalid_argument, "IntegerLookup: num_oov_indices must not be negative, got ", num_oov_);
    if (num_oov_ > 1 && str_of(cfg, "oov_method", "floormod") != "floormod")
      fail(Code::unsupported, "IntegerLookup: oov_method='", io::printable(str_of(cfg, "oov_method", "")),
           "' (recur hashes integers by floormod)");
    has_mask_ = cfg.contains("mask_token") && !cfg["mask_token"].is_null();
    if (has_mask_) mask_token_ = int64_of(cfg["mask_token"], "mask_token");
    oov_token_ = cfg.contains("oov_token") && !cfg["oov_token"].is_null() ? int64_of(cfg["oov_token"], "oov_token") : -1;
    if (bool_of(cfg, "pad_to_max_tokens", false)) {
      pad_to_ = int_of(cfg, "max_tokens", 0);
      if (pad_to_ <= 1) fail(Code::invalid_argument, "IntegerLookup: pad_to_max_tokens needs max_tokens > 1");
    }
    oov_start_ = has_mask_ && mode_ == Encoding::int_ids ? 1 : 0;
    token_start_ = oov_start_ + num_oov_;

    std::vector<std::int64_t> vocab;
    if (cfg.contains("vocabulary") && !cfg["vocabulary"].is_null()) {
      const json& v = cfg["vocabulary"];
      if (!v.is_array())
        fail(Code::invalid_argument, "IntegerLookup: vocabulary: expected a list of integers, got ", io::excerpt(v),
             v.is_string() ? " (a vocabulary file path is not part of the model)" : "");
      check_size(v.size());
      for (const json& e : v) vocab.push_back(int64_of(e, "vocabulary"));
    } else {
      // Adapted: the .keras file holds the vocabulary (special tokens first) as an asset.
      const std::string member = "assets/" + object_path + "/vocabulary.txt";
      std::vector<char> text;
      if (!ctx.read_member || !ctx.read_member(member, limit(Limit::file_bytes), text))
        fail(Code::invalid_argument, "IntegerLookup: the vocabulary is neither in the config nor in the file (",
             ctx.read_member ? member + " is missing" : "a legacy .h5 file keeps no adapted vocabulary; save as .keras",
             ")");
      vocab = parse_vocabulary(text, member);
    }
    if (vocab.empty()) fail(Code::invalid_argument, "IntegerLookup: the vocabulary is empty");
    // A vocabulary that starts with the special tokens has them dropped (Keras's set_vocabulary).
    std::vector<std::int64_t> special(static_cast<std::size_t>(oov_start_), mask_token_);
    special.insert(special.end(), static_cast<std::size_t>(num_oov_), oov_token_);
    if (vocab.size() >= special.size() && std::equal(special.begin(), special.end(), vocab.begin()))
      vocab.erase(vocab.begin(), vocab.begin() + static_cast<std::ptrdiff_t>(special.size()));
    if (!invert_) index_.reserve(vocab.size());
    for (std::size_t i = 0; i < vocab.size(); ++i) {
      if (has_mask_ && vocab[i] == mask_token_)
        fail(Code::invalid_argument, "IntegerLookup: the vocabulary holds the mask token ", mask_token_);
      if (!index_.emplace(vocab[i], static_cast<std::int64_t>(token_start_) + static_cast<std::int64_t>(i)).second)
        fail(Code::invalid_argument, "IntegerLookup: the vocabulary repeats ", vocab[i]);
    }
    terms_ = std::move(vocab);
    per_step = mode_ == Encoding::int_ids || mode_ == Encoding::one_hot;
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    check_rank(in, 1, 1, "IntegerLookup");
    return {encoded_spec(in[0], mode_, depth(), squeezes(squeeze_, in[0]), "IntegerLookup")};
  }
  double work(const std::vector<Spec>& main, const std::vector<Spec>& out) const override {
    return elements(main) * kLookupWork + Op::work(main, out);  // a hash-table probe per element
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const Value& x = *in.main[0];
    const std::string who = "IntegerLookup '" + name + "'";
    std::vector<std::int64_t> out(x.data.size());
    std::vector<std::uint8_t> skip;
    if (has_mask_ && mode_ != Encoding::int_ids) skip.assign(out.size(), 0);
    for (std::size_t k = 0; k < out.size(); ++k) {
      const std::int64_t v = integer_at(x, k, who);
      if (invert_) {
        if (has_mask_ && v == 0) out[k] = mask_token_;
        else if (v >= token_start_ && v - token_start_ < static_cast<std::int64_t>(terms_.size())) out[k] = terms_[static_cast<std::size_t>(v - token_start_)];
        else out[k] = oov_token_;
        continue;
      }
      if (has_mask_ && v == mask_token_) {
        if (skip.empty()) out[k] = 0;
        else skip[k] = 1;
        continue;
      }
      const auto it = index_.find(v);
      if (it != index_.end()) {
        out[k] = it->second;
      } else if (num_oov_ == 0) {
        fail(Code::invalid_argument, who, ": input value ", v, " at position ", k,
             " is not in the vocabulary, and num_oov_indices=0 gives it no index");
      } else {
        // Keras: floormod(value, num_oov_indices) past the mask index.
        const std::int64_t m = ((v % num_oov_) + num_oov_) % num_oov_;
        out[k] = oov_start_ + (num_oov_ == 1 ? 0 : m);
      }
    }
    return {encode(out, skip.empty() ? nullptr : &skip, x.shape, mode_, depth(), squeeze_ == 1, who, "IntegerLookup")};
  }
  bool makes_ids() const override { return mode_ == Encoding::int_ids; }
  std::string stream_rule(const std::vector<bool>& stepped_in, bool, std::vector<bool>& stepped_out) const override {
    return encoding_stream_rule(*this, mode_, stepped_in, stepped_out);
  }

 private:
  static std::int64_t int64_of(const json& v, const char* what) {
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(INT64_MAX)))
      fail(Code::invalid_argument, "IntegerLookup: ", what, ": expected integers, got ", io::excerpt(v));
    return v.get<std::int64_t>();
  }
  static void check_size(std::size_t n) {
    if (n > kMaxVocabulary)
      fail(Code::limit, "IntegerLookup: a vocabulary of ", n, " terms (recur reads at most ", kMaxVocabulary, ")");
    check_limit(Limit::weight_bytes, 16.0 * static_cast<double>(n), "IntegerLookup: the vocabulary");
  }
  std::vector<std::int64_t> parse_vocabulary(const std::vector<char>& text, const std::string& member) const {
    std::vector<std::int64_t> out;
    std::size_t i = 0;
    while (i < text.size()) {
      std::size_t j = i;
      while (j < text.size() && text[j] != '\n') ++j;
      std::string line(text.data() + i, j - i);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      i = j + 1;
      if (line.empty() && i >= text.size()) break;  // Keras drops trailing empty lines
      std::size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(line, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (line.empty() || used != line.size())
        fail(Code::io, member, ": line ", out.size() + 1, " is not an integer: '", io::printable(line, 40), "'");
      out.push_back(v);
      check_size(out.size());
    }
    return out;
  }
  Index depth() const {
    return pad_to_ > 0 ? pad_to_ : static_cast<Index>(token_start_) + static_cast<Index>(terms_.size());
  }

  Encoding mode_ = Encoding::int_ids;
  bool invert_ = false, has_mask_ = false;
  int num_oov_ = 1, oov_start_ = 0, token_start_ = 1, pad_to_ = 0, squeeze_ = -1;
  std::int64_t mask_token_ = 0, oov_token_ = -1;
  std::vector<std::int64_t> terms_;
  std::unordered_map<std::int64_t, std::int64_t> index_;
};

}  // namespace

void register_preprocessing_layers(OpTable& t) {
  t.add({"Normalization"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<NormalizationOp>(e.at("config"));
  });
  t.add({"Rescaling"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<RescalingOp>(e.at("config"));
  });
  t.add({"Discretization"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<DiscretizationOp>(e.at("config"));
  });
  t.add({"CategoryEncoding"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<CategoryEncodingOp>(e.at("config"));
  });
  t.add({"IntegerLookup"}, [](const json& e, const BuildContext& ctx, const std::string& object_path) -> std::shared_ptr<Op> {
    return std::make_shared<IntegerLookupOp>(e.at("config"), ctx, object_path);
  });
}

}  // namespace recur::graph
