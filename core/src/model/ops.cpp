// SPDX-License-Identifier: Apache-2.0
// The Keras layers a model graph runs, each with Keras's shape rules, mask rules (compute_mask)
// and inference-time arithmetic, in both dialects.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>

#include "io/hdf5_file.hpp"
#include "io/json_int.hpp"
#include "io/keras_entry.hpp"
#include "io/printable.hpp"
#include "model/graph.hpp"
#include "recur/activations.hpp"
#include "recur/error.hpp"
#include "recur/limits.hpp"
#include "recur/keras_json.hpp"
#include "recur/weights.hpp"

namespace recur::graph {
namespace {

using Code = Error::Code;
using Mask = std::shared_ptr<const std::vector<std::uint8_t>>;

// build() runs again whenever shapes are inferred (output_dims, stream lengths), on any thread,
// while other threads run the same ops: after the first build, it must only write what changes.
template <typename T>
void set_once(T& field, const T& value) {
  if (field != value) field = value;
}


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

Index product(const std::vector<Index>& d, std::size_t from = 0, std::size_t to = std::size_t(-1)) {
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

// ---------------------------------------------------------------------------------------------

// Dropout, SpatialDropout1D, GaussianNoise, ...: the identity at inference; masks pass.
class IdentityOp : public Op {
 public:
  IdentityOp() { per_step = true; }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    check_rank(in, 1, 1, class_name.c_str());
    return in;
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override { return {*in.main[0]}; }
  bool passes_ids() const override { return true; }
};

class MaskingOp : public Op {
 public:
  explicit MaskingOp(const json& cfg) : value_(static_cast<float>(num_of(cfg, "mask_value", 0.0))) { per_step = true; }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    check_rank(in, 1, 3, "Masking");
    if (in[0].dims.size() != 3) fail(Code::unsupported, "Masking: recur masks (batch, timesteps, features) inputs, got ", spec_string(in[0]));
    return in;
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    Value v = *in.main[0];
    const Index rows = v.shape[0] * v.shape[1], w = v.shape[2];
    auto m = std::make_shared<std::vector<std::uint8_t>>(static_cast<std::size_t>(rows));
    for (Index r = 0; r < rows; ++r) {
      float* x = v.data.data() + r * w;
      bool any = false;
      for (Index j = 0; j < w; ++j) any = any || x[j] != value_;
      (*m)[static_cast<std::size_t>(r)] = any;
      if (!any) std::fill_n(x, w, 0.0f);  // Keras multiplies by the mask
    }
    v.mask = std::move(m);
    return {std::move(v)};
  }

 private:
  float value_;
};

// "(b, t)": the index of flat element r of a tensor of `shape` without its last axis (`shape`
// holds that axis: the Embedding's output_dim).
std::string position_string(const std::vector<Index>& shape, Index r) {
  std::vector<Index> idx(shape.size() - 1);
  for (std::size_t a = idx.size(); a-- > 0;) {
    idx[a] = r % shape[a];
    r /= shape[a];
  }
  std::string s = "(";
  for (std::size_t a = 0; a < idx.size(); ++a) s += (a ? ", " : "") + std::to_string(idx[a]);
  return s + ")";
}

class EmbeddingOp : public Op {
 public:
  EmbeddingOp(const json& cfg, const BuildContext& ctx) {
    input_dim_ = int_of(cfg, "input_dim", 0);
    output_dim_ = int_of(cfg, "output_dim", 0);
    if (input_dim_ <= 0 || output_dim_ <= 0)
      fail(Code::invalid_argument, "Embedding: input_dim and output_dim must be positive, got ", input_dim_, " and ",
           output_dim_);
    ctx.reserve_weights(double(input_dim_) * output_dim_,
                "Embedding: input_dim=" + std::to_string(input_dim_) + " and output_dim=" + std::to_string(output_dim_));
    mask_zero_ = bool_of(cfg, "mask_zero", false);
    table_.assign(static_cast<std::size_t>(input_dim_) * output_dim_, 0.0f);
    per_step = true;
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    check_rank(in, 1, 1, "Embedding");
    Spec s = in[0];
    if (s.dims.size() >= 3 && s.dims.back() == 1) s.dims.pop_back();  // (B, T, 1) ids
    s.dims.push_back(output_dim_);
    s.ids = false;
    return {s};
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const Value& x = *in.main[0];
    std::vector<Index> shape = x.shape;
    if (shape.size() >= 3 && shape.back() == 1) shape.pop_back();
    const Index n = product(shape);
    shape.push_back(output_dim_);
    Value y = make_value(shape, "Embedding");
    std::shared_ptr<std::vector<std::uint8_t>> m;
    if (mask_zero_ && shape.size() == 3) m = std::make_shared<std::vector<std::uint8_t>>(static_cast<std::size_t>(n));
    if (x.ids && x.ids->values.size() == static_cast<std::size_t>(n)) {
      // Integer ids, exact at any size: no float round trip.
      for (Index r = 0; r < n; ++r) {
        const std::int64_t id = x.ids->values[static_cast<std::size_t>(r)];
        if (id < 0 || id >= input_dim_)
          fail(Code::invalid_argument, "input '", x.ids->input, "': token id ", id, " at position ", r, " ",
               position_string(shape, r), " is out of range [0, ", input_dim_, ") for Embedding '", name, "'");
        std::copy_n(table_.data() + id * output_dim_, output_dim_, y.data.data() + r * output_dim_);
        if (m) (*m)[static_cast<std::size_t>(r)] = id != 0;
      }
    } else {
      for (Index r = 0; r < n; ++r) {
        const float id = x.data[static_cast<std::size_t>(r)];
        if (!(id >= 0.0f) || id != std::floor(id) || id >= static_cast<float>(input_dim_))
          fail(Code::invalid_argument, "input: token id ", id, " at position ", r, " is not an integer in [0, ", input_dim_,
               ") for Embedding '", name, "'");
        std::copy_n(table_.data() + static_cast<Index>(id) * output_dim_, output_dim_, y.data.data() + r * output_dim_);
        if (m) (*m)[static_cast<std::size_t>(r)] = id != 0.0f;
      }
    }
    y.mask = m ? Mask(m) : x.mask;
    return {std::move(y)};
  }
  std::size_t num_weights() const override { return 1; }
  std::uint64_t weight_floats() const override { return table_.size(); }
  void load(std::vector<StoredWeight>& w, bool, const std::string& where) override {
    table_ = take_weight(w, {input_dim_, output_dim_}, where);
  }
  void load_keras(const io::H5File& h5, const std::string& object, const std::string& file) override {
    auto w = read_vars(h5, object, file, 2 * weight_floats() + 16);
    check_count(w, num_weights(), file + ": model.weights.h5:/" + object, name);
    load(w, false, file + ": model.weights.h5:/" + object);
  }

 private:
  int input_dim_ = 0, output_dim_ = 0;
  bool mask_zero_ = false;
  std::vector<float> table_;
};

class DenseOp : public Op {
 public:
  DenseOp(const json& cfg, const DialectInfo& d) {
    units_ = int_of(cfg, "units", 0);
    if (units_ <= 0) fail(Code::invalid_argument, "units: expected a positive integer");
    use_bias_ = bool_of(cfg, "use_bias", true);
    act_ = activation_of(cfg, d);
    per_step = true;
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext& ctx) override {
    check_rank(in, 1, 2, "Dense");
    const Index f = known_last(in[0], "Dense");
    if (in_ == 0) {
      ctx.reserve_weights((double(f) + 1) * units_,
                  "Dense: " + std::to_string(f) + " inputs and units=" + std::to_string(units_));
      in_ = f;
      kernel_ = RowMatrix::Zero(in_, units_);
      bias_ = RowVector::Zero(units_);
    } else if (f != in_) {
      fail(Code::shape, "Dense: built for inputs of ", in_, " features, called on ", spec_string(in[0]));
    }
    Spec s = in[0];
    s.dims.back() = units_;
    return {s};
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const Value& x = *in.main[0];
    std::vector<Index> shape = x.shape;
    shape.back() = units_;
    Value y = make_value(shape, "Dense");
    const Index rows = product(x.shape, 0, x.shape.size() - 1);
    Eigen::Map<const RowMatrix> a(x.data.data(), rows, in_);
    Eigen::Map<RowMatrix> out(y.data.data(), rows, units_);
    out.noalias() = a * kernel_;
    if (use_bias_) out.rowwise() += bias_;
    apply_activation(act_, out.data(), rows, units_);
    y.mask = x.mask;
    return {std::move(y)};
  }
  std::size_t num_weights() const override { return use_bias_ ? 2 : 1; }
  std::uint64_t weight_floats() const override { return static_cast<std::uint64_t>(kernel_.size() + bias_.size()); }
  void load(std::vector<StoredWeight>& w, bool, const std::string& where) override {
    auto k = take_weight(w, {in_, units_}, where);
    std::copy_n(k.data(), k.size(), kernel_.data());
    if (use_bias_) {
      auto b = take_weight(w, {units_}, where);
      std::copy_n(b.data(), b.size(), bias_.data());
    }
  }
  void load_keras(const io::H5File& h5, const std::string& object, const std::string& file) override {
    auto w = read_vars(h5, object, file, 2 * weight_floats() + 16);
    check_count(w, num_weights(), file + ": model.weights.h5:/" + object, name);
    load(w, false, file + ": model.weights.h5:/" + object);
  }

 private:
  int units_ = 0;
  Index in_ = 0;
  bool use_bias_ = true;
  ActivationFn act_;
  RowMatrix kernel_;
  RowVector bias_;
};

class ActivationOp : public Op {
 public:
  ActivationOp(const json& cfg, const DialectInfo& d) : act_(activation_of(cfg, d)) { per_step = true; }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    check_rank(in, 1, 1, "Activation");
    return in;
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    Value y = *in.main[0];
    const Index cols = y.shape.back(), rows = cols ? static_cast<Index>(y.data.size()) / cols : 0;
    apply_activation(act_, y.data.data(), rows, cols);  // softmax runs over the last axis
    return {std::move(y)};
  }

 private:
  ActivationFn act_;
};

// ---- merges ----------------------------------------------------------------------------------

Mask and_masks(const std::vector<const Value*>& in) {
  Mask out;
  std::shared_ptr<std::vector<std::uint8_t>> acc;
  for (const Value* v : in) {
    if (!v->mask) continue;
    if (!out) {
      out = v->mask;
      continue;
    }
    if (!acc) acc = std::make_shared<std::vector<std::uint8_t>>(*out);
    if (v->mask->size() != acc->size()) fail(Code::shape, "merge: the inputs' masks have different shapes");
    for (std::size_t i = 0; i < acc->size(); ++i) (*acc)[i] = (*acc)[i] && (*v->mask)[i];
  }
  return acc ? Mask(acc) : out;
}

// Keras 3: the OR of the inputs' masks when every input has one, else no mask.
Mask or_masks(const std::vector<const Value*>& in) {
  for (const Value* v : in)
    if (!v->mask) return nullptr;
  if (in.size() == 1) return in[0]->mask;
  auto acc = std::make_shared<std::vector<std::uint8_t>>(*in[0]->mask);
  for (const Value* v : in) {
    if (v->mask->size() != acc->size()) fail(Code::shape, "merge: the inputs' masks have different shapes");
    for (std::size_t i = 0; i < acc->size(); ++i) (*acc)[i] = (*acc)[i] || (*v->mask)[i];
  }
  return acc;
}

// numpy broadcasting of equal-rank shapes.
std::vector<Index> broadcast(const std::vector<std::vector<Index>>& shapes, const std::string& what) {
  std::vector<Index> out = shapes[0];
  for (const auto& s : shapes) {
    if (s.size() != out.size()) fail(Code::shape, what, ": inputs of different ranks: ", shape_string(out), " and ", shape_string(s));
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == out[i] || s[i] == 1) continue;
      if (out[i] == 1) out[i] = s[i];
      else if (s[i] < 0 || out[i] < 0) out[i] = std::max(s[i], out[i]);
      else fail(Code::shape, what, ": shapes ", shape_string(out), " and ", shape_string(s), " do not broadcast");
    }
  }
  return out;
}

class MergeOp : public Op {
 public:
  enum Kind { add, subtract, multiply, average, maximum, minimum };
  explicit MergeOp(Kind k) : kind_(k) { per_step = true; }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext& ctx) override {
    set_once(keras3_, ctx.dialect.dialect == Dialect::keras3);
    if (in.size() < 1 || (kind_ == subtract && in.size() != 2))
      fail(Code::invalid_argument, class_name, ": expected ", kind_ == subtract ? "exactly 2" : "at least 1", " inputs, got ", in.size());
    std::vector<std::vector<Index>> shapes;
    for (const Spec& s : in) shapes.push_back(s.dims);
    Spec out;
    out.dims = broadcast(shapes, class_name);
    return {out};
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    std::vector<std::vector<Index>> shapes;
    for (const Value* v : in.main) shapes.push_back(v->shape);
    const std::vector<Index> shape = broadcast(shapes, class_name);
    Value y = make_value(shape, class_name.c_str());
    const std::size_t rank = shape.size();
    // Each input's strides, 0 along broadcast axes.
    std::vector<std::vector<Index>> strides;
    for (const Value* v : in.main) {
      std::vector<Index> st(rank, 0);
      Index s = 1;
      for (std::size_t i = rank; i-- > 0;) {
        st[i] = v->shape[i] == 1 && shape[i] != 1 ? 0 : s;
        s *= v->shape[i];
      }
      strides.push_back(st);
    }
    const Index n = product(shape);
    std::vector<Index> idx(rank, 0);
    for (Index flat = 0; flat < n; ++flat) {
      auto at = [&](std::size_t k) {
        Index off = 0;
        for (std::size_t i = 0; i < rank; ++i) off += idx[i] * strides[k][i];
        return in.main[k]->data[static_cast<std::size_t>(off)];
      };
      // Keras 3's Maximum and Minimum take a masked step's value from the other inputs
      // (_apply_merge_op_and_or_mask), its Multiply counts a masked step as 1 and zeroes the steps
      // no input has; the other merges (and every Keras 2 merge) combine masked steps as they are.
      const bool mask_merge = keras3_ && (kind_ == multiply || kind_ == maximum || kind_ == minimum);
      const std::size_t bt = rank >= 3 ? static_cast<std::size_t>(idx[0] * shape[1] + idx[1]) : 0;
      auto valid = [&](std::size_t k) -> int {  // -1: no mask
        const Value* v = in.main[k];
        if (!mask_merge || !v->mask || rank < 3 || bt >= v->mask->size()) return -1;
        return (*v->mask)[bt] ? 1 : 0;
      };
      float acc = at(0);
      int acc_valid = valid(0);
      bool all_masked = acc_valid >= 0, any_valid = acc_valid == 1;
      if (kind_ == multiply && acc_valid == 0) acc = 1.0f;
      for (std::size_t k = 1; k < in.main.size(); ++k) {
        float b = at(k);
        const int bv = valid(k);
        all_masked = all_masked && bv >= 0;
        any_valid = any_valid || bv == 1;
        if (kind_ == multiply) {
          if (bv == 0) b = 1.0f;
        } else {
          if (bv == 0) b = acc;
          if (acc_valid == 0) acc = b;
          acc_valid = bv >= 0 && acc_valid >= 0 ? (bv || acc_valid) : -1;
        }
        switch (kind_) {
          case add: case average: acc = acc + b; break;
          case subtract: acc = acc - b; break;
          case multiply: acc = acc * b; break;
          case maximum: acc = std::max(acc, b); break;
          case minimum: acc = std::min(acc, b); break;
        }
      }
      if (kind_ == multiply && all_masked && !any_valid) acc = 0.0f;
      if (kind_ == average) acc = acc / static_cast<float>(in.main.size());
      y.data[static_cast<std::size_t>(flat)] = acc;
      for (std::size_t i = rank; i-- > 0;) {
        if (++idx[i] < shape[i]) break;
        idx[i] = 0;
      }
    }
    y.mask = keras3_ ? or_masks(in.main) : and_masks(in.main);
    if (y.mask && (y.shape.size() < 2 || y.mask->size() != static_cast<std::size_t>(y.shape[0] * y.shape[1]))) y.mask.reset();
    return {std::move(y)};
  }

 private:
  Kind kind_;
  bool keras3_ = false;
};

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

class ConcatenateOp : public Op {
 public:
  explicit ConcatenateOp(const json& cfg) : axis_(int_of(cfg, "axis", -1)) {}
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    if (in.empty()) fail(Code::invalid_argument, "Concatenate: expected at least 1 input");
    const int rank = static_cast<int>(in[0].dims.size());
    const int ax = axis_ < 0 ? axis_ + rank : axis_;
    if (ax <= 0 || ax >= rank) fail(Code::invalid_argument, "axis: ", axis_, " is not a non-batch axis of ", spec_string(in[0]));
    std::vector<const std::vector<Index>*> parts;
    for (const Spec& p : in) parts.push_back(&p.dims);
    Spec out;
    out.dims = joined_shape(parts, static_cast<std::size_t>(ax), "Concatenate");
    set_once(per_step, ax == rank - 1 && rank == 3);
    return {out};
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const int rank = static_cast<int>(in.main[0]->shape.size());
    const std::size_t ax = static_cast<std::size_t>(axis_ < 0 ? axis_ + rank : axis_);  // build checked it
    std::vector<const std::vector<Index>*> parts;
    for (const Value* v : in.main) parts.push_back(&v->shape);
    Value y = make_value(joined_shape(parts, ax, "Concatenate '" + name + "'"), "Concatenate");
    join_values(in.main, ax, y);
    const std::vector<Index>& shape = y.shape;
    // Keras: each mask broadcast to its input's shape (no mask: all valid), concatenated along the
    // axis, then all() over the last axis.
    bool any = false;
    for (const Value* v : in.main) any = any || v->mask;
    if (any && rank == 3) {
      auto m = std::make_shared<std::vector<std::uint8_t>>(static_cast<std::size_t>(shape[0] * shape[1]), 1);
      const Index B = shape[0];
      Index t0 = 0;
      for (const Value* v : in.main) {
        const Index T = v->shape[1];
        for (Index b = 0; b < B; ++b)
          for (Index t = 0; t < T; ++t) {
            const std::uint8_t valid = v->mask ? (*v->mask)[static_cast<std::size_t>(b * T + t)] : 1;
            auto& dst = (*m)[static_cast<std::size_t>(b * shape[1] + (ax == 1 ? t0 + t : t))];
            dst = dst && valid;
          }
        if (ax == 1) t0 += T;
      }
      y.mask = std::move(m);
    }
    return {std::move(y)};
  }

 private:
  int axis_;
};

// ---- reshaping -------------------------------------------------------------------------------

class RepeatVectorOp : public Op {
 public:
  explicit RepeatVectorOp(const json& cfg) : n_(int_of(cfg, "n", 0)) {
    if (n_ <= 0) fail(Code::invalid_argument, "n: expected a positive integer");
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    check_rank(in, 1, 2, "RepeatVector");
    if (in[0].dims.size() != 2) fail(Code::shape, "RepeatVector: expected (batch, features), got ", spec_string(in[0]));
    Spec s;
    s.dims = {in[0].dims[0], n_, in[0].dims[1]};
    return {s};
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const Value& x = *in.main[0];
    const Index B = x.shape[0], F = x.shape[1];
    Value y = make_value({B, n_, F}, "RepeatVector");
    for (Index b = 0; b < B; ++b)
      for (Index t = 0; t < n_; ++t)
        std::copy_n(x.data.data() + b * F, F, y.data.data() + (b * n_ + t) * F);
    return {std::move(y)};
  }

 private:
  int n_;
};

Value permute(const Value& x, const std::vector<int>& perm) {  // perm over all axes, batch included
  std::vector<Index> shape(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i) shape[i] = x.shape[static_cast<std::size_t>(perm[i])];
  Value y = make_value(shape, "Permute");
  const std::size_t rank = shape.size();
  std::vector<Index> in_strides(rank);
  Index s = 1;
  for (std::size_t i = rank; i-- > 0;) {
    in_strides[i] = s;
    s *= x.shape[i];
  }
  std::vector<Index> idx(rank, 0);
  const Index n = product(shape);
  for (Index flat = 0; flat < n; ++flat) {
    Index off = 0;
    for (std::size_t i = 0; i < rank; ++i) off += idx[i] * in_strides[static_cast<std::size_t>(perm[i])];
    y.data[static_cast<std::size_t>(flat)] = x.data[static_cast<std::size_t>(off)];
    for (std::size_t i = rank; i-- > 0;) {
      if (++idx[i] < shape[i]) break;
      idx[i] = 0;
    }
  }
  return y;
}

class FlattenOp : public Op {
 public:
  explicit FlattenOp(const json& cfg) : channels_first_(str_of(cfg, "data_format", "channels_last") == "channels_first") {}
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    check_rank(in, 1, 1, "Flatten");
    Spec s;
    bool known = true;
    for (std::size_t i = 1; i < in[0].dims.size(); ++i) known = known && in[0].dims[i] >= 0;
    s.dims = {in[0].dims[0], in[0].dims.size() == 1 ? 1 : (known ? product(in[0].dims, 1) : -1)};
    return {s};
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const Value& x = *in.main[0];
    Value y;
    if (channels_first_ && x.shape.size() > 2) {
      std::vector<int> perm{0};
      for (int i = 2; i < static_cast<int>(x.shape.size()); ++i) perm.push_back(i);
      perm.push_back(1);
      y = permute(x, perm);
    } else {
      y.data = x.data;
    }
    y.shape = {x.shape[0], x.shape.size() == 1 ? 1 : product(x.shape, 1)};
    return {std::move(y)};
  }

 private:
  bool channels_first_;
};

class ReshapeOp : public Op {
 public:
  explicit ReshapeOp(const json& cfg) {
    if (!cfg.contains("target_shape") || !cfg["target_shape"].is_array())
      fail(Code::invalid_argument, "target_shape: expected a list of integers");
    int unknown = 0;
    for (const auto& d : cfg["target_shape"]) {
      if (!d.is_number_integer() || d.get<std::int64_t>() < -1 || d.get<std::int64_t>() > (1 << 30))
        fail(Code::invalid_argument, "target_shape: expected positive integers or one -1, got ", io::excerpt(cfg["target_shape"]));
      target_.push_back(d.get<Index>());
      unknown += d.get<Index>() == -1;
    }
    if (unknown > 1 || target_.size() > 7) fail(Code::invalid_argument, "target_shape: at most one -1 and 7 axes");
  }
  std::vector<Index> resolve(const std::vector<Index>& in, bool at_run) const {
    bool known = true;
    for (std::size_t i = 1; i < in.size(); ++i) known = known && in[i] >= 0;
    std::vector<Index> out{in[0]};
    Index fixed = 1;
    for (Index d : target_) if (d > 0) fixed *= d;
    for (Index d : target_) {
      if (d != -1) out.push_back(d);
      else if (!known) out.push_back(-1);
      else {
        const Index total = product(in, 1);
        if (fixed == 0 || total % fixed) fail(Code::shape, "Reshape '", name, "': cannot reshape ", shape_string(in), " to ", shape_string(target_));
        out.push_back(total / fixed);
      }
    }
    if (known && product(out, 1) != product(in, 1))
      fail(Code::shape, "Reshape '", name, "': cannot reshape ", shape_string(in), " (", product(in, 1), " values per row) to ",
           shape_string(target_));
    (void)at_run;
    return out;
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    check_rank(in, 1, 1, "Reshape");
    Spec s;
    s.dims = resolve(in[0].dims, false);
    return {s};
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    Value y;
    y.shape = resolve(in.main[0]->shape, true);
    y.data = in.main[0]->data;
    return {std::move(y)};
  }

 private:
  std::vector<Index> target_;
};

class PermuteOp : public Op {
 public:
  explicit PermuteOp(const json& cfg) {
    if (!cfg.contains("dims") || !cfg["dims"].is_array()) fail(Code::invalid_argument, "dims: expected a list of axes");
    perm_.push_back(0);
    for (const auto& d : cfg["dims"]) {
      int a = 0;
      if (!io::int_in(d, 1, 8, a)) fail(Code::invalid_argument, "dims: expected axes 1..rank-1, got ", io::excerpt(cfg["dims"]));
      perm_.push_back(a);
    }
    std::vector<int> sorted = perm_;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < sorted.size(); ++i)
      if (sorted[i] != static_cast<int>(i)) fail(Code::invalid_argument, "dims: ", io::excerpt(cfg["dims"]), " is not a permutation");
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    check_rank(in, 1, 1, "Permute");
    if (in[0].dims.size() != perm_.size())
      fail(Code::shape, "Permute: dims has ", perm_.size() - 1, " axes, the input ", spec_string(in[0]));
    Spec s;
    for (int p : perm_) s.dims.push_back(in[0].dims[static_cast<std::size_t>(p)]);
    return {s};
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override { return {permute(*in.main[0], perm_)}; }

 private:
  std::vector<int> perm_;
};

// ---- normalization ---------------------------------------------------------------------------

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

class LayerNormOp : public Op {
 public:
  LayerNormOp(const json& cfg) {
    axes_ = axes_of(cfg, -1);
    eps_ = static_cast<float>(num_of(cfg, "epsilon", 1e-3));
    center_ = bool_of(cfg, "center", true);
    scale_ = bool_of(cfg, "scale", true);
    rms_ = bool_of(cfg, "rms_scaling", false);
    if (rms_) fail(Code::unsupported, "LayerNormalization: rms_scaling=True");
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext& ctx) override {
    check_rank(in, 1, 2, "LayerNormalization");
    const int rank = static_cast<int>(in[0].dims.size());
    std::vector<int> ax = normalized_axes(axes_, in[0].dims.size(), "LayerNormalization", json(axes_));
    std::sort(ax.begin(), ax.end());
    for (std::size_t i = 0; i < ax.size(); ++i)
      if (ax[i] != rank - static_cast<int>(ax.size()) + static_cast<int>(i) || ax[i] <= 0)
        fail(Code::unsupported, "LayerNormalization: recur normalizes over the trailing axes, not axis ", io::excerpt(json(axes_)),
             " of ", spec_string(in[0]));
    Index g = 1;
    for (int a : ax) {
      if (in[0].dims[static_cast<std::size_t>(a)] <= 0) fail(Code::shape, "LayerNormalization: the normalized axes must be known");
      g *= in[0].dims[static_cast<std::size_t>(a)];
    }
    if (group_ && g != group_) fail(Code::shape, "LayerNormalization: built for ", group_, " values, called on ", spec_string(in[0]));
    if (!group_) {
      ctx.reserve_weights(2.0 * g, "LayerNormalization: " + std::to_string(g) + " normalized values");
      group_ = g;
      nax_ = static_cast<int>(ax.size());
      for (int a : ax) wshape_.push_back(in[0].dims[static_cast<std::size_t>(a)]);
      gamma_.assign(static_cast<std::size_t>(g), 1.0f);
      beta_.assign(static_cast<std::size_t>(g), 0.0f);
    }
    set_once(per_step, nax_ == 1 && rank == 3);
    return in;
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    Value y = *in.main[0];
    const Index rows = static_cast<Index>(y.data.size()) / group_;
    for (Index r = 0; r < rows; ++r) {
      float* x = y.data.data() + r * group_;
      double mean = 0;
      for (Index j = 0; j < group_; ++j) mean += x[j];
      mean /= static_cast<double>(group_);
      double var = 0;
      for (Index j = 0; j < group_; ++j) var += (x[j] - mean) * (x[j] - mean);
      var /= static_cast<double>(group_);
      const float m = static_cast<float>(mean);
      const float inv0 = 1.0f / std::sqrt(static_cast<float>(var) + eps_);
      for (Index j = 0; j < group_; ++j) {
        const float inv = scale_ ? inv0 * gamma_[static_cast<std::size_t>(j)] : inv0;
        float res = -m * inv;
        if (center_) res += beta_[static_cast<std::size_t>(j)];
        x[j] = x[j] * inv + res;
      }
    }
    return {std::move(y)};
  }
  std::size_t num_weights() const override { return (scale_ ? 1 : 0) + (center_ ? 1 : 0); }
  std::uint64_t weight_floats() const override { return 2 * static_cast<std::uint64_t>(group_); }
  void load(std::vector<StoredWeight>& w, bool, const std::string& where) override {
    std::vector<std::int64_t> shape(wshape_.begin(), wshape_.end());
    if (scale_) gamma_ = take_weight(w, shape, where);
    if (center_) beta_ = take_weight(w, shape, where);
  }
  void load_keras(const io::H5File& h5, const std::string& object, const std::string& file) override {
    auto w = read_vars(h5, object, file, 2 * weight_floats() + 16);
    check_count(w, num_weights(), file + ": model.weights.h5:/" + object, name);
    load(w, false, file + ": model.weights.h5:/" + object);
  }

 private:
  std::vector<int> axes_;
  float eps_ = 1e-3f;
  bool center_ = true, scale_ = true, rms_ = false;
  Index group_ = 0;
  int nax_ = 0;
  std::vector<Index> wshape_;
  std::vector<float> gamma_, beta_;
};

class BatchNormOp : public Op {
 public:
  BatchNormOp(const json& cfg) {
    const auto axes = axes_of(cfg, -1);
    if (axes.size() != 1) fail(Code::unsupported, "BatchNormalization: one axis, got ", io::excerpt(cfg["axis"]));
    axis_ = axes[0];
    eps_ = static_cast<float>(num_of(cfg, "epsilon", 1e-3));
    center_ = bool_of(cfg, "center", true);
    scale_ = bool_of(cfg, "scale", true);
    if (bool_of(cfg, "renorm", false)) fail(Code::unsupported, "BatchNormalization: renorm=True");
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext& ctx) override {
    check_rank(in, 1, 2, "BatchNormalization");
    const int rank = static_cast<int>(in[0].dims.size());
    const int ax = axis_ < 0 ? axis_ + rank : axis_;
    if (ax <= 0 || ax >= rank || in[0].dims[static_cast<std::size_t>(ax)] <= 0)
      fail(Code::shape, "BatchNormalization: axis ", axis_, " must be a known non-batch axis of ", spec_string(in[0]));
    const Index c = in[0].dims[static_cast<std::size_t>(ax)];
    if (channels_ && c != channels_) fail(Code::shape, "BatchNormalization: built for ", channels_, " channels");
    if (!channels_) {
      ctx.reserve_weights(4.0 * c, "BatchNormalization: " + std::to_string(c) + " channels");
      channels_ = c;
      gamma_.assign(static_cast<std::size_t>(c), 1.0f);
      beta_.assign(static_cast<std::size_t>(c), 0.0f);
      mean_.assign(static_cast<std::size_t>(c), 0.0f);
      var_.assign(static_cast<std::size_t>(c), 1.0f);
    }
    set_once(per_step, ax == rank - 1 && rank == 3);
    return in;
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    Value y = *in.main[0];
    const int rank = static_cast<int>(y.shape.size());
    const int ax = axis_ < 0 ? axis_ + rank : axis_;
    const Index inner = product(y.shape, static_cast<std::size_t>(ax) + 1);
    // tf.nn.batch_normalization: inv = rsqrt(var + eps) * gamma; x * inv + (beta - mean * inv).
    std::vector<float> inv(static_cast<std::size_t>(channels_)), off(static_cast<std::size_t>(channels_));
    for (Index c = 0; c < channels_; ++c) {
      const std::size_t i = static_cast<std::size_t>(c);
      inv[i] = 1.0f / std::sqrt(var_[i] + eps_);
      if (scale_) inv[i] *= gamma_[i];
      off[i] = center_ ? beta_[i] - mean_[i] * inv[i] : -mean_[i] * inv[i];
    }
    for (std::size_t k = 0; k < y.data.size(); ++k) {
      const std::size_t c = static_cast<std::size_t>((static_cast<Index>(k) / inner) % channels_);
      y.data[k] = y.data[k] * inv[c] + off[c];
    }
    return {std::move(y)};
  }
  std::size_t num_weights() const override { return (scale_ ? 1 : 0) + (center_ ? 1 : 0) + 2; }
  std::uint64_t weight_floats() const override { return 4 * static_cast<std::uint64_t>(channels_); }
  void load(std::vector<StoredWeight>& w, bool, const std::string& where) override {
    if (scale_) gamma_ = take_weight(w, {channels_}, where);
    if (center_) beta_ = take_weight(w, {channels_}, where);
    mean_ = take_weight(w, {channels_}, where);
    var_ = take_weight(w, {channels_}, where);
    for (float v : var_)
      if (v < 0) fail(Code::io, where, ": moving_variance holds a negative value");
  }
  void load_keras(const io::H5File& h5, const std::string& object, const std::string& file) override {
    auto w = read_vars(h5, object, file, 2 * weight_floats() + 16);
    check_count(w, num_weights(), file + ": model.weights.h5:/" + object, name);
    load(w, false, file + ": model.weights.h5:/" + object);
  }

 private:
  int axis_ = -1;
  float eps_ = 1e-3f;
  bool center_ = true, scale_ = true;
  Index channels_ = 0;
  std::vector<float> gamma_, beta_, mean_, var_;
};

// ---- pooling and convolution -----------------------------------------------------------------

class GlobalPool1DOp : public Op {
 public:
  GlobalPool1DOp(const json& cfg, bool max) : max_(max) {
    channels_first_ = str_of(cfg, "data_format", "channels_last") == "channels_first";
    keepdims_ = bool_of(cfg, "keepdims", false);
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    check_rank(in, 1, 3, class_name.c_str());
    if (in[0].dims.size() != 3) fail(Code::shape, class_name, ": expected (batch, steps, features), got ", spec_string(in[0]));
    Spec s = in[0];
    s.ids = false;
    if (keepdims_) s.dims[channels_first_ ? 2 : 1] = 1;
    else s.dims.erase(s.dims.begin() + (channels_first_ ? 2 : 1));
    return {s};
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const Value& x = *in.main[0];
    const Index B = x.shape[0], T = channels_first_ ? x.shape[2] : x.shape[1], F = channels_first_ ? x.shape[1] : x.shape[2];
    Value y = make_value(keepdims_ ? (channels_first_ ? std::vector<Index>{B, F, 1} : std::vector<Index>{B, 1, F})
                                   : std::vector<Index>{B, F},
                         class_name.c_str());
    const bool masked = !max_ && x.mask && !channels_first_;
    for (Index b = 0; b < B; ++b)
      for (Index f = 0; f < F; ++f) {
        float acc = max_ ? -std::numeric_limits<float>::infinity() : 0.0f, count = 0.0f;
        for (Index t = 0; t < T; ++t) {
          const float v = x.data[static_cast<std::size_t>(channels_first_ ? (b * F + f) * T + t : (b * T + t) * F + f)];
          if (max_) {
            acc = std::max(acc, v);
          } else if (masked) {
            const float m = (*x.mask)[static_cast<std::size_t>(b * T + t)] ? 1.0f : 0.0f;
            acc += v * m;
            count += m;
          } else {
            acc += v;
          }
        }
        // Keras divides by the mask's sum: a fully masked row gives 0/0 = NaN, as in Keras.
        y.data[static_cast<std::size_t>(b * F + f)] = max_ ? acc : acc / (masked ? count : static_cast<float>(T));
      }
    return {std::move(y)};
  }

 private:
  bool max_, channels_first_ = false, keepdims_ = false;
};

class Conv1DOp : public Op {
 public:
  Conv1DOp(const json& cfg, const DialectInfo& d) {
    filters_ = int_of(cfg, "filters", 0);
    k_ = int_of(cfg, "kernel_size", 0);
    s_ = int_of(cfg, "strides", 1);
    d_ = int_of(cfg, "dilation_rate", 1);
    groups_ = int_of(cfg, "groups", 1);
    padding_ = str_of(cfg, "padding", "valid");
    std::transform(padding_.begin(), padding_.end(), padding_.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    use_bias_ = bool_of(cfg, "use_bias", true);
    act_ = activation_of(cfg, d);
    if (filters_ <= 0 || k_ <= 0 || s_ <= 0 || d_ <= 0 || groups_ <= 0)
      fail(Code::invalid_argument, "Conv1D: filters, kernel_size, strides, dilation_rate and groups must be positive");
    if (s_ > 1 && d_ > 1) fail(Code::invalid_argument, "Conv1D: strides > 1 with dilation_rate > 1 (Keras refuses it too)");
    if (padding_ != "valid" && padding_ != "same" && padding_ != "causal")
      fail(Code::invalid_argument, "padding: expected 'valid', 'same' or 'causal', got '", padding_, "'");
    if (str_of(cfg, "data_format", "channels_last") != "channels_last")
      fail(Code::unsupported, "Conv1D: data_format='channels_first'");
    if (filters_ % groups_) fail(Code::invalid_argument, "Conv1D: filters must be a multiple of groups");
  }
  // Output length and left padding for T input steps.
  std::pair<Index, Index> geometry(Index T) const {
    const Index span = static_cast<Index>(k_ - 1) * d_ + 1;
    if (padding_ == "same") {
      const Index out = (T + s_ - 1) / s_;
      const Index total = std::max<Index>((out - 1) * s_ + span - T, 0);
      return {out, total / 2};
    }
    const Index pad = padding_ == "causal" ? span - 1 : 0;
    const Index out = T + pad >= span ? (T + pad - span) / s_ + 1 : 0;
    return {out, pad};
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext& ctx) override {
    check_rank(in, 1, 3, "Conv1D");
    if (in[0].dims.size() != 3) fail(Code::shape, "Conv1D: expected (batch, steps, channels), got ", spec_string(in[0]));
    const Index c = known_last(in[0], "Conv1D");
    if (c % groups_) fail(Code::shape, "Conv1D: ", c, " input channels are not a multiple of groups=", groups_);
    if (cin_ && c != cin_) fail(Code::shape, "Conv1D: built for ", cin_, " channels, called on ", spec_string(in[0]));
    if (!cin_) {
      ctx.reserve_weights((double(k_) * double(c / groups_) + 1) * filters_,
                  "Conv1D: kernel_size=" + std::to_string(k_) + ", " + std::to_string(c) + " channels and filters=" +
                      std::to_string(filters_));
      cin_ = c;
      kernel_.assign(static_cast<std::size_t>(k_) * static_cast<std::size_t>(c / groups_) * static_cast<std::size_t>(filters_), 0.0f);
      bias_.assign(static_cast<std::size_t>(filters_), 0.0f);
    }
    Spec s = in[0];
    s.dims[1] = in[0].dims[1] < 0 ? -1 : geometry(in[0].dims[1]).first;
    if (in[0].dims[1] >= 0 && s.dims[1] <= 0) fail(Code::shape, "Conv1D: ", in[0].dims[1], " steps are fewer than the kernel spans");
    s.dims[2] = filters_;
    set_once(per_step, k_ == 1 && s_ == 1);
    return {s};
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const Value& x = *in.main[0];
    const Index B = x.shape[0], T = x.shape[1];
    const auto [To, pad] = geometry(T);
    if (To <= 0) fail(Code::shape, "Conv1D '", name, "': ", T, " steps are fewer than the kernel spans");
    Value y = make_value({B, To, filters_}, "Conv1D");
    const Index cg = cin_ / groups_, fg = filters_ / groups_;
    for (Index b = 0; b < B; ++b)
      for (Index t = 0; t < To; ++t) {
        float* out = y.data.data() + (b * To + t) * filters_;
        for (Index o = 0; o < filters_; ++o) out[o] = 0.0f;
        for (Index kk = 0; kk < k_; ++kk) {
          const Index src = t * s_ + kk * d_ - pad;
          if (src < 0 || src >= T) continue;
          const float* xi = x.data.data() + (b * T + src) * cin_;
          const float* w = kernel_.data() + kk * cg * filters_;
          for (Index g = 0; g < groups_; ++g)
            for (Index c = 0; c < cg; ++c) {
              const float v = xi[g * cg + c];
              const float* wr = w + c * filters_ + g * fg;
              for (Index o = 0; o < fg; ++o) out[g * fg + o] += v * wr[o];
            }
        }
        if (use_bias_)
          for (Index o = 0; o < filters_; ++o) out[o] += bias_[static_cast<std::size_t>(o)];
      }
    apply_activation(act_, y.data.data(), B * To, filters_);
    return {std::move(y)};
  }
  std::size_t num_weights() const override { return use_bias_ ? 2 : 1; }
  std::uint64_t weight_floats() const override { return kernel_.size() + bias_.size(); }
  void load(std::vector<StoredWeight>& w, bool, const std::string& where) override {
    kernel_ = take_weight(w, {k_, cin_ / groups_, filters_}, where);
    if (use_bias_) bias_ = take_weight(w, {filters_}, where);
  }
  void load_keras(const io::H5File& h5, const std::string& object, const std::string& file) override {
    auto w = read_vars(h5, object, file, 2 * weight_floats() + 16);
    check_count(w, num_weights(), file + ": model.weights.h5:/" + object, name);
    load(w, false, file + ": model.weights.h5:/" + object);
  }

 private:
  int filters_ = 0, k_ = 0, s_ = 1, d_ = 1, groups_ = 1;
  std::string padding_;
  bool use_bias_ = true;
  ActivationFn act_;
  Index cin_ = 0;
  std::vector<float> kernel_, bias_;
};

// ---- recurrent layers ------------------------------------------------------------------------

bool is_recurrent_class(const std::string& cls) {
  return cls == "GRU" || cls == "LSTM" || cls == "CuDNNGRU" || cls == "CuDNNLSTM" || cls == "SimpleRNN";
}

class RecurrentOp : public Op {
 public:
  RecurrentOp(const json& entry, const BuildContext& ctx, bool bidirectional)
      : entry_(entry), document_(ctx.document), bidirectional_(bidirectional) {}

  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>& init, const BuildContext& ctx) override {
    check_rank(in, 1, 3, class_name.c_str());
    if (in[0].dims.size() != 3)
      fail(Code::shape, class_name, ": expected (batch, timesteps, features), got ", spec_string(in[0]));
    const Index F = known_last(in[0], class_name.c_str());
    if (!fwd_) make_layers(static_cast<int>(F), in[0], ctx);
    else if (F != fwd_->config().input_size)
      fail(Code::shape, class_name, ": built for ", fwd_->config().input_size, " features, called on ", spec_string(in[0]));
    const LayerConfig& c = fwd_->config();
    if (c.time_major && graph_issue.empty())
      graph_issue = "time_major layers inside a model (Keras feeds them batch-major tensors)";
    const int ns = fwd_->num_states();
    const std::size_t want = static_cast<std::size_t>(bidirectional_ ? 2 * ns : ns);
    if (!init.empty()) {
      if (init.size() != want)
        fail(Code::shape, class_name, ": initial_state holds ", init.size(), " tensors, the layer has ", want, " states");
      for (std::size_t i = 0; i < init.size(); ++i) {
        const Layer& l = bidirectional_ && i >= static_cast<std::size_t>(ns) ? *bwd_ : *fwd_;
        if (init[i].dims.size() != 2 || (init[i].dims[1] >= 0 && init[i].dims[1] != l.config().units))
          fail(Code::shape, class_name, ": initial_state[", i, "] must be (batch, ", l.config().units, "), got ",
               spec_string(init[i]));
      }
    }
    const Index B = in[0].dims[0], T = in[0].dims[1];
    auto out_spec = [&](const Layer& l) {
      Spec s;
      s.dims = c.return_sequences ? std::vector<Index>{B, T, l.config().units} : std::vector<Index>{B, l.config().units};
      return s;
    };
    std::vector<Spec> out;
    if (!bidirectional_) {
      out.push_back(out_spec(*fwd_));
    } else if (merge_ == "none") {
      out.push_back(out_spec(*fwd_));
      out.push_back(out_spec(*bwd_));
    } else {
      Spec s = out_spec(*fwd_);
      if (merge_ == "concat") s.dims.back() = fwd_->config().units + bwd_->config().units;
      out.push_back(s);
    }
    if (c.return_state) {
      for (int i = 0; i < ns; ++i) out.push_back(Spec{{B, fwd_->config().units}, false});
      if (bidirectional_)
        for (int i = 0; i < ns; ++i) out.push_back(Spec{{B, bwd_->config().units}, false});
    }
    return out;
  }

  void make_layers(int F, const Spec& in, const BuildContext& ctx) {
    double made = 0;
    auto make = [&](json e, bool zero_output) {
      json& cfg = e["config"];
      // Bidirectional sets it on its halves; Keras 2's CuDNN layers have no such argument.
      const std::string cls = e.value("class_name", std::string());
      if (zero_output && cls != "CuDNNGRU" && cls != "CuDNNLSTM") cfg["zero_output_for_mask"] = true;
      // A stateful layer whose entry records no input shape (Keras 3's .h5 drops build_config)
      // takes its batch size from the Input that feeds it, as Keras's functional rebuild does.
      if (cfg.value("stateful", json(false)) == json(true) && !cfg.contains("batch_input_shape") &&
          !(e.contains("build_config") && e["build_config"].is_object() && e["build_config"].contains("input_shape"))) {
        json shape = json::array();
        for (Index d : in.dims) shape.push_back(d < 0 ? json(nullptr) : json(d));
        e["build_config"] = json{{"input_shape", shape}};
      }
      // float64 layers run in float32 (within float32 rounding of Keras's float64 numbers).
      if (cfg.contains("dtype")) {
        json& d = cfg["dtype"];
        if (d.is_string() && d.get<std::string>() == "float64") d = "float32";
        if (d.is_object() && d.contains("config") && d["config"].is_object() && d["config"].value("name", json()) == json("float64"))
          d["config"]["name"] = "float32";
      }
      LayerConfig c = parse_layer_entry(e, F, ctx.dialect.dialect, ctx.keras_version);
      // parse_layer_entry validated the sizes against the limits, so the products cannot overflow.
      double floats = 0;
      for (const WeightSpec& w : weight_specs(c)) floats += static_cast<double>(product(w.shape));
      // Both halves of a Bidirectional count: the backward one after the forward one is built.
      ctx.reserve_weights(made + floats, class_name.empty() ? cls : class_name);
      made += floats;
      return std::make_shared<Layer>(std::move(c));
    };
    // All or nothing: a layer whose build failed is built again from its recorded input shape
    // (Graph::build), and must not find one half made and the other missing.
    if (!bidirectional_) {
      fwd_ = make(entry_, false);
      return;
    }
    const json& cfg = entry_.at("config");
    if (!cfg.contains("layer") || !cfg["layer"].is_object()) fail(Code::invalid_argument, "Bidirectional: config has no 'layer'");
    const json& inner = cfg["layer"];
    const std::string icls = inner.value("class_name", std::string());
    if (!is_recurrent_class(icls)) fail(Code::unsupported, "Bidirectional of ", icls);
    const bool seq = inner.at("config").value("return_sequences", false);
    const std::shared_ptr<Layer> fwd = make(inner, seq);
    json back;
    if (cfg.contains("backward_layer") && cfg["backward_layer"].is_object()) {
      back = cfg["backward_layer"];
    } else {
      back = inner;  // Keras builds the backward half from the same config, reversed
      back["config"]["go_backwards"] = !inner.at("config").value("go_backwards", false);
      if (back["config"].contains("name") && back["config"]["name"].is_string())
        back["config"]["name"] = "backward_" + back["config"]["name"].get<std::string>();
    }
    const std::shared_ptr<Layer> bwd = make(back, seq);
    const std::string merge =
        cfg.contains("merge_mode") && cfg["merge_mode"].is_string() ? cfg["merge_mode"].get<std::string>() : "none";
    if (merge != "concat" && merge != "sum" && merge != "mul" && merge != "ave" && merge != "none")
      fail(Code::unsupported, "Bidirectional: merge_mode '", merge, "'");
    if (merge != "concat" && merge != "none" && fwd->config().units != bwd->config().units)
      fail(Code::shape, "Bidirectional: merge_mode '", merge, "' needs halves of the same units");
    if (bwd->config().return_sequences != seq || bwd->config().return_state != fwd->config().return_state)
      fail(Code::invalid_argument, "Bidirectional: backward_layer must match the forward layer's return_sequences and return_state");
    fwd_ = fwd;
    bwd_ = bwd;
    merge_ = merge;
  }

  std::vector<Value> forward(const CallInputs& in, RunContext& ctx, int site) const override {
    const Value& x = *in.main[0];
    const Index B = x.shape[0], T = x.shape[1];
    const bool rs = fwd_->config().return_sequences;
    const int ns = fwd_->num_states();
    std::vector<Value> states;
    auto run = [&](Layer& layer, int half) {
      const Index u = layer.config().units;
      Value y = make_value(rs ? std::vector<Index>{B, T, u} : std::vector<Index>{B, u}, class_name.c_str());
      const bool want_states = fwd_->config().return_state;
      std::vector<float> final_state(want_states ? static_cast<std::size_t>(ns * B * u) : 0);
      const bool masked = x.mask && !in.drop_mask;
      const std::uint8_t* mask = masked ? x.mask->data() : nullptr;
      const std::size_t mask_len = masked ? x.mask->size() : 0;
      if (ctx.stream && ctx.stepped) {
        std::vector<State>& st = ctx.stream->states[{this, site}];
        if (st.empty()) {
          st.emplace_back(ns, B, static_cast<int>(fwd_->config().units));
          if (bwd_) st.emplace_back(ns, B, static_cast<int>(bwd_->config().units));
          // A stream starts from the initial_state tensors (model inputs) of its first step.
          for (std::size_t k = 0; k < in.initial_state.size(); ++k) {
            const Value& v = *in.initial_state[k];
            State& target = st[k / static_cast<std::size_t>(ns)];
            const Index uu = target.units();
            if (v.shape != std::vector<Index>{B, uu})
              fail(Code::shape, "layer '", name, "': initial_state[", k, "] is ", shape_string(v.shape), ", expected ",
                   shape_string({B, uu}));
            std::copy_n(v.data.data(), v.data.size(), target.tensor(static_cast<int>(k % static_cast<std::size_t>(ns))).data());
          }
        }
        State& s = st[static_cast<std::size_t>(half)];
        layer.call_state(s, x.data.data(), x.data.size(), T, mask, mask_len, y.data.data(), y.data.size());
        if (want_states) s.get(final_state.data(), final_state.size());
      } else {
        LayerCall c;
        c.input = x.data.data();
        c.input_len = x.data.size();
        c.batch = B;
        c.timesteps = T;
        c.mask = mask;
        c.mask_len = mask_len;
        std::vector<float> init;
        if (!in.initial_state.empty()) {
          for (int i = 0; i < ns; ++i) {
            const Value& v = *in.initial_state[static_cast<std::size_t>(half * ns + i)];
            if (v.shape != std::vector<Index>{B, u})
              fail(Code::shape, "layer '", name, "': initial_state[", half * ns + i, "] is ", shape_string(v.shape),
                   ", expected ", shape_string({B, u}));
            init.insert(init.end(), v.data.begin(), v.data.end());
          }
          c.initial_state = init.data();
          c.initial_state_len = init.size();
          c.num_initial_states = ns;
        }
        c.output = y.data.data();
        c.output_len = y.data.size();
        if (want_states) {
          c.final_state = final_state.data();
          c.final_state_len = final_state.size();
        }
        layer.call(c);
      }
      if (rs && masked) y.mask = x.mask;
      if (!fwd_->config().return_state) return y;
      for (int i = 0; i < ns; ++i) {
        Value s = make_value({B, u}, "state");
        std::copy_n(final_state.data() + i * B * u, B * u, s.data.data());
        states.push_back(std::move(s));
      }
      return y;
    };
    std::vector<Value> out;
    Value y = run(*fwd_, 0);
    if (!bidirectional_) {
      out.push_back(std::move(y));
    } else {
      Value yb = run(*bwd_, 1);
      const Index uf = fwd_->config().units, ub = bwd_->config().units;
      if (rs) {  // Keras flips the backward outputs back into input order
        Value flipped = yb;
        for (Index b = 0; b < B; ++b)
          for (Index t = 0; t < T; ++t)
            std::copy_n(yb.data.data() + (b * T + (T - 1 - t)) * ub, ub, flipped.data.data() + (b * T + t) * ub);
        yb = std::move(flipped);
      }
      if (merge_ == "none") {
        out.push_back(std::move(y));
        out.push_back(std::move(yb));
      } else if (merge_ == "concat") {
        const Index r = rs ? B * T : B;
        std::vector<Index> shape = y.shape;
        shape.back() = uf + ub;
        Value m = make_value(shape, "Bidirectional");
        for (Index i = 0; i < r; ++i) {
          std::copy_n(y.data.data() + i * uf, uf, m.data.data() + i * (uf + ub));
          std::copy_n(yb.data.data() + i * ub, ub, m.data.data() + i * (uf + ub) + uf);
        }
        m.mask = y.mask;
        out.push_back(std::move(m));
      } else {
        for (std::size_t i = 0; i < y.data.size(); ++i) {
          if (merge_ == "sum") y.data[i] = y.data[i] + yb.data[i];
          else if (merge_ == "mul") y.data[i] = y.data[i] * yb.data[i];
          else y.data[i] = (y.data[i] + yb.data[i]) / 2.0f;
        }
        out.push_back(std::move(y));
      }
    }
    if (fwd_->config().return_state)
      for (auto& s : states) out.push_back(std::move(s));
    return out;
  }

  std::size_t num_weights() const override {
    return fwd_ ? fwd_->num_weights() * (bwd_ ? 2 : 1) : 0;
  }
  std::uint64_t weight_floats() const override {
    return (fwd_ ? fwd_->weights_size() : 0) + (bwd_ ? bwd_->weights_size() : 0);
  }
  void load(std::vector<StoredWeight>& w, bool legacy, const std::string& where) override;
  void load_keras(const io::H5File& h5, const std::string& object, const std::string& file) override {
    auto rnn_vars = [&](const std::string& obj, const Layer& l) {
      if (!h5.is_group(obj)) fail(Code::io, file, ": model.weights.h5:/", obj, ": missing (config and weights disagree)");
      const std::uint64_t budget = 2 * l.weights_size() + 16;
      std::vector<StoredWeight> w = h5.is_group(obj + "/cell") ? read_vars(h5, obj + "/cell", file, budget) : std::vector<StoredWeight>();
      if (w.empty()) w = read_vars(h5, obj, file, budget);  // CuDNN layers keep their variables directly
      return w;
    };
    std::vector<StoredWeight> w;
    if (bidirectional_) {
      w = rnn_vars(object + "/forward_layer", *fwd_);
      for (auto& x : rnn_vars(object + "/backward_layer", *bwd_)) w.push_back(std::move(x));
    } else {
      w = rnn_vars(object, *fwd_);
    }
    const std::size_t want = num_weights();
    if (w.size() != want)
      fail(Code::io, file, ": model.weights.h5:/", object, ": the file holds ", w.size(), " weight(s) for layer '", name,
           "', the config needs ", want);
    load(w, false, file + ": model.weights.h5:/" + object);
  }

  std::string stream_rule(const std::vector<bool>& stepped_in, bool has_init, std::vector<bool>& stepped_out) const override {
    stepped_out.assign(stepped_out.size(), false);
    if (!stepped_in[0]) return "";  // a sequence of its own (e.g. after RepeatVector): run whole each step
    if (bidirectional_) return "Bidirectional reads the whole sequence backwards";
    if (fwd_->config().go_backwards) return "go_backwards reads the sequence from its end";
    if (has_init) return "its initial_state comes from other layers of the graph (only model inputs can start a stream)";
    if (!stepped_out.empty()) stepped_out[0] = fwd_->config().return_sequences;
    return "";
  }
  void collect_layers(std::vector<Layer*>& out) override {
    if (fwd_) out.push_back(fwd_.get());
    if (bwd_) out.push_back(bwd_.get());
  }
  bool stateful() const override { return fwd_ && fwd_->config().stateful; }

  const json& entry_;
  std::shared_ptr<const json> document_;  // holds entry_
  bool bidirectional_;
  std::shared_ptr<Layer> fwd_, bwd_;
  std::string merge_ = "concat";
};

void RecurrentOp::load(std::vector<StoredWeight>& all, bool legacy, const std::string& where) {
  std::vector<std::shared_ptr<Layer>> targets{fwd_};
  if (bwd_) targets.push_back(bwd_);
  const std::size_t per = fwd_->num_weights();
  for (std::size_t t = 0; t < targets.size(); ++t) {
    Layer& layer = *targets[t];
    if (all.size() < per) fail(Code::io, where, ": the file holds fewer weights than layer '", name, "' needs");
    std::vector<StoredWeight> mine(std::make_move_iterator(all.begin()), std::make_move_iterator(all.begin() + static_cast<long>(per)));
    all.erase(all.begin(), all.begin() + static_cast<long>(per));
    for (const auto& sw : mine)
      for (float v : sw.data)
        if (!std::isfinite(v)) fail(Code::io, weight_location(where, sw.path), ": non-finite weight value");
    const LayerConfig& c = layer.config();
    const Index u = c.units;
    const int G = c.gates();
    if (legacy && c.dialect.dialect == Dialect::keras2 && per == 3 && (c.is_gru() || c.kind == LayerKind::lstm || c.is_cudnn())) {
      // Keras 2's h5 loader converts between CuDNN and native layouts, told apart by the bias shape.
      const auto& bshape = mine[2].shape;
      const bool stored_cudnn = bshape.size() == 1 && bshape[0] == 2 * G * u;
      const bool stored_gru_after = bshape.size() == 2;
      const bool stored_gru_before = bshape.size() == 1 && bshape[0] == G * u && c.is_gru();
      const std::string target = c.is_cudnn() ? kind_name(c.kind)
                                              : (c.is_gru() ? (c.reset_after ? "GRU(reset_after=True)" : "GRU(reset_after=False)") : "LSTM");
      const std::string source = stored_cudnn ? (c.is_gru() ? "CuDNNGRU" : "CuDNNLSTM")
                                 : stored_gru_after ? "GRU(reset_after=True)"
                                 : stored_gru_before ? "GRU(reset_after=False)"
                                                     : (c.is_gru() ? target : "LSTM");
      if (source != target) {
        const bool ok = (source == "CuDNNGRU" && target == "GRU(reset_after=True)") ||
                        (source == "GRU(reset_after=True)" && target == "CuDNNGRU") ||
                        (source == "CuDNNLSTM" && target == "LSTM") || (source == "LSTM" && target == "CuDNNLSTM");
        if (!ok)
          fail(Code::io, weight_location(where, mine[2].path), ": ", source, " is not compatible with ", target,
               " (layer '", io::printable(name), "' cannot take this bias layout)");
        const bool to_native = source.rfind("CuDNN", 0) == 0;
        if (!to_native) expect_shape(mine[2], c.is_gru() ? std::vector<std::int64_t>{2, G * u} : std::vector<std::int64_t>{G * u}, where);
        expect_shape(mine[0], {c.input_size, G * u}, where);
        expect_shape(mine[1], {u, G * u}, where);
        RowMatrix k = Eigen::Map<RowMatrix>(mine[0].data.data(), c.input_size, G * u);
        RowMatrix r = Eigen::Map<RowMatrix>(mine[1].data.data(), u, G * u);
        k = to_native ? cudnn_kernel_to_native(k, G, u) : native_kernel_to_cudnn(k, G, u);
        r = transpose_gate_blocks(r, G, u);
        std::copy_n(k.data(), mine[0].data.size(), mine[0].data.data());
        std::copy_n(r.data(), mine[1].data.size(), mine[1].data.data());
        std::vector<float>& b = mine[2].data;
        if (c.is_gru()) {
          mine[2].shape = to_native ? std::vector<std::int64_t>{2, G * u} : std::vector<std::int64_t>{2 * G * u};
        } else if (to_native) {
          std::vector<float> sum(static_cast<std::size_t>(G * u));
          for (std::size_t i = 0; i < sum.size(); ++i) sum[i] = b[i] + b[i + sum.size()];
          b = sum;
          mine[2].shape = {G * u};
        } else {
          std::vector<float> split(b.size() * 2);
          for (std::size_t i = 0; i < b.size(); ++i) split[i] = split[i + b.size()] = 0.5f * b[i];
          b = split;
          mine[2].shape = {2 * G * u};
        }
      }
    }
    for (std::size_t i = 0; i < per; ++i) {
      const WeightSpec& spec = layer.weight_spec(i);
      expect_shape(mine[i], std::vector<std::int64_t>(spec.shape.begin(), spec.shape.end()), where);
      layer.set_weight(i, mine[i].data.data(), mine[i].data.size(), nullptr, 0);
    }
  }
}

// ---- wrappers --------------------------------------------------------------------------------

class TimeDistributedOp : public Op {
 public:
  TimeDistributedOp(const json& entry, const BuildContext& ctx, const std::string& object_path) {
    const json& cfg = entry.at("config");
    if (!cfg.contains("layer") || !cfg["layer"].is_object()) fail(Code::invalid_argument, "TimeDistributed: config has no 'layer'");
    inner_ = make_op(cfg["layer"], ctx, object_path + "/layer");
    per_step = true;
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext& ctx) override {
    check_rank(in, 1, 3, "TimeDistributed");
    Spec inner_in = in[0];
    inner_in.dims.erase(inner_in.dims.begin());
    inner_in.dims[0] = -1;
    std::vector<Spec> o = inner_->build({inner_in}, {}, ctx);
    if (o.empty()) fail(Code::unsupported, "TimeDistributed: the inner layer has no output");
    Spec s = o[0];
    s.dims.insert(s.dims.begin(), in[0].dims[0]);
    s.dims[1] = in[0].dims[1];
    return {s};
  }
  std::vector<Value> forward(const CallInputs& in, RunContext& /*ctx*/, int site) const override {
    const Value& x = *in.main[0];
    Value flat;
    flat.shape = x.shape;
    flat.shape.erase(flat.shape.begin());
    flat.shape[0] = x.shape[0] * x.shape[1];
    flat.data = x.data;
    CallInputs ci;
    ci.main = {&flat};
    RunContext inner_ctx;  // the inner layer sees each timestep as a sample of its own
    std::vector<Value> o = inner_->forward(ci, inner_ctx, site);
    Value y = std::move(o[0]);
    y.shape.insert(y.shape.begin(), x.shape[0]);
    y.shape[1] = x.shape[1];
    y.mask = x.mask;
    return {std::move(y)};
  }
  std::size_t num_weights() const override { return inner_->num_weights(); }
  std::uint64_t weight_floats() const override { return inner_->weight_floats(); }
  void load(std::vector<StoredWeight>& w, bool legacy, const std::string& where) override { inner_->load(w, legacy, where); }
  void load_keras(const io::H5File& h5, const std::string& object, const std::string& file) override {
    inner_->load_keras(h5, object + "/layer", file);
  }
  void collect_layers(std::vector<Layer*>& out) override { inner_->collect_layers(out); }

 private:
  std::shared_ptr<Op> inner_;
};

// A Sequential or functional model used as a layer.
class ModelOp : public Op {
 public:
  ModelOp(const json& entry, const BuildContext& ctx, const std::string& object_path)
      : entry_(entry), document_(ctx.document), object_path_(object_path) {}
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext& ctx) override {
    if (!graph_) {
      graph_ = Graph::build(entry_, ctx, object_path_, &in);
      if (!graph_->unsupported.empty()) fail(Code::unsupported, graph_->unsupported);
      return graph_->output_specs;
    }
    if (in.size() != graph_->input_specs.size())
      fail(Code::shape, "model '", name, "' takes ", graph_->input_specs.size(), " inputs, got ", in.size());
    return graph_->infer(in);
  }
  std::vector<Value> forward(const CallInputs& in, RunContext& ctx, int) const override {
    std::vector<Value> inputs;
    for (const Value* v : in.main) inputs.push_back(*v);
    return graph_->run(inputs, ctx);
  }
  std::size_t num_weights() const override { return graph_ ? graph_->num_weights() : 0; }
  std::uint64_t weight_floats() const override { return graph_ ? graph_->weight_floats() : 0; }
  void load(std::vector<StoredWeight>& w, bool, const std::string& where) override { graph_->load_legacy_flat(w, where); }
  void load_keras(const io::H5File& h5, const std::string&, const std::string& file) override { graph_->load_keras(h5, file); }
  std::string stream_rule(const std::vector<bool>& stepped_in, bool, std::vector<bool>& stepped_out) const override {
    graph_->analyse_streaming(stepped_in);
    stepped_out = graph_->stepped_outputs;
    return graph_->not_streamable;
  }
  void collect_layers(std::vector<Layer*>& out) override {
    if (graph_) graph_->collect_layers(out);
  }
  bool stateful() const override {
    if (!graph_) return false;
    for (const auto& l : graph_->layers)
      if (l.op && l.op->stateful()) return true;
    return false;
  }

 private:
  const json& entry_;
  std::shared_ptr<const json> document_;  // holds entry_
  std::string object_path_;
  std::unique_ptr<Graph> graph_;
};


// ---- Keras 3 op nodes (keras.ops in a functional graph, e.g. the masks Keras computes) ----------

// Right-aligned numpy broadcasting of two shapes.
std::vector<Index> broadcast2(const std::vector<Index>& a, const std::vector<Index>& b, const std::string& what) {
  const std::size_t r = std::max(a.size(), b.size());
  std::vector<Index> out(r);
  for (std::size_t i = 0; i < r; ++i) {
    const Index x = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const Index y = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (x == y || y == 1) out[i] = x;
    else if (x == 1) out[i] = y;
    else if (x < 0 || y < 0) out[i] = std::max(x, y);
    else fail(Code::shape, what, ": shapes ", shape_string(a), " and ", shape_string(b), " do not broadcast");
  }
  return out;
}

class KerasOp : public Op {
 public:
  KerasOp(const json& entry, const std::string& cls) : kind_(cls) {
    cfg_ = entry.at("config");
    // The call's arguments: tensors (filled in order at run time) and constants.
    const json& nodes = entry.value("inbound_nodes", json::array());
    if (nodes.is_array() && nodes.size() == 1 && nodes[0].is_object() && nodes[0].contains("args") && nodes[0]["args"].is_array())
      for (const auto& a : nodes[0]["args"]) {
        if (a.is_object() && a.value("class_name", std::string()) == "__keras_tensor__") {
          args_.push_back({true, 0.0f});
        } else if (a.is_array()) {  // Concatenate's list of tensors
          for (std::size_t k = 0; k < a.size(); ++k) args_.push_back({true, 0.0f});
        } else if (a.is_number() || a.is_boolean()) {
          args_.push_back({false, a.is_boolean() ? (a.get<bool>() ? 1.0f : 0.0f) : static_cast<float>(a.get<double>())});
        } else {
          fail(Code::unsupported, "Keras op ", cls, ": an argument recur cannot read: ", io::excerpt(a));
        }
      }
    static const char* known[] = {"NotEqual", "Equal", "Greater", "GreaterEqual", "Less", "LessEqual", "Add", "Subtract",
                                  "Multiply", "Divide", "TrueDivide", "Maximum", "Minimum", "LogicalAnd", "LogicalOr",
                                  "LogicalXor", "LogicalNot", "Absolute", "Abs", "Negative", "Square", "Sqrt", "Any", "All",
                                  "Sum", "Mean", "Max", "Min", "ExpandDims", "Squeeze", "ZerosLike", "OnesLike",
                                  "Concatenate", "Cast"};
    bool ok = false;
    for (const char* k : known) ok = ok || cls == k;
    if (!ok) fail(Code::unsupported, "unsupported layer ", cls, " (a Keras op)");
    per_step = true;
  }

  bool binary() const {
    return kind_ == "NotEqual" || kind_ == "Equal" || kind_ == "Greater" || kind_ == "GreaterEqual" || kind_ == "Less" ||
           kind_ == "LessEqual" || kind_ == "Add" || kind_ == "Subtract" || kind_ == "Multiply" || kind_ == "Divide" ||
           kind_ == "TrueDivide" || kind_ == "Maximum" || kind_ == "Minimum" || kind_ == "LogicalAnd" ||
           kind_ == "LogicalOr" || kind_ == "LogicalXor";
  }
  bool reduction() const { return kind_ == "Any" || kind_ == "All" || kind_ == "Sum" || kind_ == "Mean" || kind_ == "Max" || kind_ == "Min"; }

  // The listed axes, normalized; Keras's axis=None reduces every axis. A repeated axis is an
  // error in Keras (and would count twice in a Mean's divisor here).
  std::vector<int> axes(std::size_t rank) const {
    std::vector<int> ax;
    if (!cfg_.contains("axis") || cfg_["axis"].is_null()) {
      for (std::size_t i = 0; i < rank; ++i) ax.push_back(static_cast<int>(i));
      return ax;
    }
    return normalized_axes(axes_of(cfg_, 0), rank, kind_, cfg_["axis"]);
  }

  // keras.ops.concatenate's axis (default 0), normalized; the batch axis is not one recur can join.
  std::size_t concat_axis(std::size_t rank) const {
    const int given = int_of(cfg_, "axis", 0);
    const int a = given < 0 ? given + static_cast<int>(rank) : given;
    if (a < 0 || a >= static_cast<int>(rank))
      fail(Code::invalid_argument, "Concatenate: axis ", given, " is out of range for a rank-", rank, " tensor");
    if (a == 0) fail(Code::unsupported, "Concatenate: joining along the batch axis");
    return static_cast<std::size_t>(a);
  }

  std::vector<Index> out_shape(const std::vector<std::vector<Index>>& in) const {
    if (binary()) {
      std::vector<Index> a = in.size() > 0 ? in[0] : std::vector<Index>{}, b = in.size() > 1 ? in[1] : std::vector<Index>{};
      return broadcast2(a, b, kind_);
    }
    if (in.empty()) fail(Code::invalid_argument, kind_, ": no tensor argument");
    const std::vector<Index>& x = in[0];
    if (reduction()) {
      const auto ax = axes(x.size());
      const bool keep = cfg_.value("keepdims", false);
      std::vector<Index> out;
      for (std::size_t i = 0; i < x.size(); ++i) {
        const bool reduced = std::find(ax.begin(), ax.end(), static_cast<int>(i)) != ax.end();
        if (!reduced) out.push_back(x[i]);
        else if (keep) out.push_back(1);
      }
      return out;
    }
    if (kind_ == "ExpandDims") {
      int a = int_of(cfg_, "axis", -1);
      const int r = static_cast<int>(x.size()) + 1;
      if (a < 0) a += r;
      if (a < 0 || a >= r) fail(Code::shape, "ExpandDims: axis out of range");
      std::vector<Index> out = x;
      out.insert(out.begin() + a, 1);
      return out;
    }
    if (kind_ == "Squeeze") {
      std::vector<Index> out;
      const auto ax = cfg_.contains("axis") && !cfg_["axis"].is_null() ? axes(x.size()) : std::vector<int>{};
      for (std::size_t i = 0; i < x.size(); ++i) {
        const bool listed = std::find(ax.begin(), ax.end(), static_cast<int>(i)) != ax.end();
        if ((ax.empty() && x[i] == 1) || listed) {
          if (listed && x[i] != 1 && x[i] >= 0) fail(Code::shape, "Squeeze: axis ", i, " has size ", x[i]);
          continue;
        }
        out.push_back(x[i]);
      }
      return out;
    }
    if (kind_ == "Concatenate") {
      std::vector<const std::vector<Index>*> parts;
      for (const auto& p : in) parts.push_back(&p);
      return joined_shape(parts, concat_axis(x.size()), "Concatenate");
    }
    return x;  // elementwise
  }

  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    std::size_t tensors = 0;
    for (const auto& a : args_) tensors += a.tensor;
    if (in.size() != tensors) fail(Code::invalid_argument, kind_, ": expected ", tensors, " tensor argument(s), got ", in.size());
    std::vector<std::vector<Index>> shapes;
    for (const Spec& s : in) shapes.push_back(s.dims);
    // Constants stand in for their argument positions (scalars broadcast).
    std::vector<std::vector<Index>> all;
    std::size_t t = 0;
    for (const auto& a : args_) all.push_back(a.tensor ? shapes[t++] : std::vector<Index>{});
    Spec s;
    s.dims = out_shape(all);
    if (s.dims.empty() || (!in.empty() && in[0].dims.size() >= 2 && s.dims[0] != in[0].dims[0] && s.dims[0] >= 0))
      fail(Code::unsupported, kind_, ": an op that reduces the batch axis");
    set_once(per_step, !reduction() || [&] {
      const auto ax = axes(all.empty() ? 0 : all[0].size());
      for (int a : ax)
        if (a <= 1) return false;
      return true;
    }());
    return {s};
  }

  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    std::vector<const Value*> tensors = in.main;
    std::vector<Value> consts;
    std::vector<const Value*> args;
    consts.reserve(args_.size());
    std::size_t t = 0;
    for (const auto& a : args_) {
      if (a.tensor) {
        args.push_back(tensors.at(t++));
      } else {
        Value c;
        c.data = {a.value};
        consts.push_back(std::move(c));
        args.push_back(&consts.back());
      }
    }
    std::vector<std::vector<Index>> shapes;
    for (const Value* v : args) shapes.push_back(v->shape);
    Value y = make_value(out_shape(shapes), kind_.c_str());
    if (binary()) {
      const Value& a = *args.at(0);
      const Value& b = *args.at(1);
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
      for (std::size_t flat = 0; flat < y.data.size(); ++flat) {
        Index oa = 0, ob = 0;
        for (std::size_t i = 0; i < r; ++i) {
          oa += idx[i] * sa[i];
          ob += idx[i] * sb[i];
        }
        const float x = a.data[static_cast<std::size_t>(oa)], z = b.data[static_cast<std::size_t>(ob)];
        float v = 0;
        if (kind_ == "NotEqual") v = x != z;
        else if (kind_ == "Equal") v = x == z;
        else if (kind_ == "Greater") v = x > z;
        else if (kind_ == "GreaterEqual") v = x >= z;
        else if (kind_ == "Less") v = x < z;
        else if (kind_ == "LessEqual") v = x <= z;
        else if (kind_ == "Add") v = x + z;
        else if (kind_ == "Subtract") v = x - z;
        else if (kind_ == "Multiply") v = x * z;
        else if (kind_ == "Divide" || kind_ == "TrueDivide") v = x / z;
        else if (kind_ == "Maximum") v = std::max(x, z);
        else if (kind_ == "Minimum") v = std::min(x, z);
        else if (kind_ == "LogicalAnd") v = (x != 0) && (z != 0);
        else if (kind_ == "LogicalOr") v = (x != 0) || (z != 0);
        else if (kind_ == "LogicalXor") v = (x != 0) != (z != 0);
        y.data[flat] = v;
        for (std::size_t i = r; i-- > 0;) {
          if (++idx[i] < y.shape[i]) break;
          idx[i] = 0;
        }
      }
      return {std::move(y)};
    }
    const Value& x = *args.at(0);
    if (reduction()) {
      const auto ax = axes(x.shape.size());
      const std::size_t r = x.shape.size();
      // Output index of each input element: drop the reduced axes.
      std::vector<Index> out_strides(r, 0);
      Index m = 1;
      for (std::size_t i = r; i-- > 0;) {
        if (std::find(ax.begin(), ax.end(), static_cast<int>(i)) != ax.end()) continue;
        out_strides[i] = m;
        m *= x.shape[i];
      }
      const bool any = kind_ == "Any", all = kind_ == "All", mx = kind_ == "Max", mn = kind_ == "Min";
      const float init = all ? 1.0f : mx ? -std::numeric_limits<float>::infinity() : mn ? std::numeric_limits<float>::infinity() : 0.0f;
      std::fill(y.data.begin(), y.data.end(), init);
      std::vector<Index> idx(r, 0);
      Index count = 1;
      for (int a : ax) count *= x.shape[static_cast<std::size_t>(a)];
      for (std::size_t flat = 0; flat < x.data.size(); ++flat) {
        Index o = 0;
        for (std::size_t i = 0; i < r; ++i) o += idx[i] * out_strides[i];
        float& acc = y.data[static_cast<std::size_t>(o)];
        const float v = x.data[flat];
        if (any) acc = (acc != 0) || (v != 0);
        else if (all) acc = (acc != 0) && (v != 0);
        else if (mx) acc = std::max(acc, v);
        else if (mn) acc = std::min(acc, v);
        else acc += v;
        for (std::size_t i = r; i-- > 0;) {
          if (++idx[i] < x.shape[i]) break;
          idx[i] = 0;
        }
      }
      if (kind_ == "Mean")
        for (float& v : y.data) v /= static_cast<float>(count);
      return {std::move(y)};
    }
    if (kind_ == "Concatenate") {
      join_values(args, concat_axis(x.shape.size()), y);  // out_shape checked the shapes
      return {std::move(y)};
    }
    for (std::size_t k = 0; k < y.data.size(); ++k) {
      const float v = kind_ == "ZerosLike" ? 0.0f : kind_ == "OnesLike" ? 1.0f : x.data[k];
      if (kind_ == "LogicalNot") y.data[k] = v == 0;
      else if (kind_ == "Absolute" || kind_ == "Abs") y.data[k] = std::fabs(v);
      else if (kind_ == "Negative") y.data[k] = -v;
      else if (kind_ == "Square") y.data[k] = v * v;
      else if (kind_ == "Sqrt") y.data[k] = std::sqrt(v);
      else if (kind_ == "Cast") {
        const std::string dt = cfg_.value("dtype", std::string("float32"));
        y.data[k] = dt == "bool" ? (v != 0) : dt.rfind("int", 0) == 0 ? std::trunc(v) : v;
      } else y.data[k] = v;  // ExpandDims, Squeeze, ZerosLike, OnesLike: same values
    }
    return {std::move(y)};
  }

 private:
  struct Arg {
    bool tensor;
    float value;
  };
  std::string kind_;
  json cfg_;
  std::vector<Arg> args_;
};

}  // namespace

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

bool is_sequence_model_class(const std::string& cls) {
  return cls == "Sequential" || cls == "Functional" || cls == "Model";
}

std::shared_ptr<Op> make_op(const json& entry, const BuildContext& ctx, const std::string& object_path) {
  const std::string cls = entry.value("class_name", std::string());
  const json& cfg = entry.at("config");
  const DialectInfo& d = ctx.dialect;
  std::shared_ptr<Op> op;
  if (entry.value("module", std::string()).find(".ops") != std::string::npos) {
    op = std::make_shared<KerasOp>(entry, cls);
    op->class_name = cls;
    op->name = cfg.value("name", std::string());
    return op;
  }
  static const char* identity[] = {"Dropout", "SpatialDropout1D", "GaussianNoise", "GaussianDropout", "AlphaDropout",
                                   "ActivityRegularization", "InputLayer"};
  for (const char* c : identity)
    if (cls == c) op = std::make_shared<IdentityOp>();
  if (op) {
  } else if (cls == "Masking") op = std::make_shared<MaskingOp>(cfg);
  else if (cls == "Embedding") op = std::make_shared<EmbeddingOp>(cfg, ctx);
  else if (cls == "Dense") op = std::make_shared<DenseOp>(cfg, d);
  else if (cls == "Activation") op = std::make_shared<ActivationOp>(cfg, d);
  else if (cls == "Add") op = std::make_shared<MergeOp>(MergeOp::add);
  else if (cls == "Subtract") op = std::make_shared<MergeOp>(MergeOp::subtract);
  else if (cls == "Multiply") op = std::make_shared<MergeOp>(MergeOp::multiply);
  else if (cls == "Average") op = std::make_shared<MergeOp>(MergeOp::average);
  else if (cls == "Maximum") op = std::make_shared<MergeOp>(MergeOp::maximum);
  else if (cls == "Minimum") op = std::make_shared<MergeOp>(MergeOp::minimum);
  else if (cls == "Concatenate") op = std::make_shared<ConcatenateOp>(cfg);
  else if (cls == "RepeatVector") op = std::make_shared<RepeatVectorOp>(cfg);
  else if (cls == "Flatten") op = std::make_shared<FlattenOp>(cfg);
  else if (cls == "Reshape") op = std::make_shared<ReshapeOp>(cfg);
  else if (cls == "Permute") op = std::make_shared<PermuteOp>(cfg);
  else if (cls == "LayerNormalization") op = std::make_shared<LayerNormOp>(cfg);
  else if (cls == "BatchNormalization") op = std::make_shared<BatchNormOp>(cfg);
  else if (cls == "GlobalAveragePooling1D" || cls == "GlobalAvgPool1D") op = std::make_shared<GlobalPool1DOp>(cfg, false);
  else if (cls == "GlobalMaxPooling1D" || cls == "GlobalMaxPool1D") op = std::make_shared<GlobalPool1DOp>(cfg, true);
  else if (cls == "Conv1D" || cls == "Convolution1D") op = std::make_shared<Conv1DOp>(cfg, d);
  else if (is_recurrent_class(cls)) op = std::make_shared<RecurrentOp>(entry, ctx, false);
  else if (cls == "Bidirectional") op = std::make_shared<RecurrentOp>(entry, ctx, true);
  else if (cls == "TimeDistributed") op = std::make_shared<TimeDistributedOp>(entry, ctx, object_path);
  else if (is_sequence_model_class(cls)) op = std::make_shared<ModelOp>(entry, ctx, object_path);
  else fail(Code::unsupported, "unsupported layer ", cls);
  op->class_name = cls;
  op->name = cfg.value("name", std::string());
  return op;
}

void StreamStates::reset() { states.clear(); }  // the next step starts each state afresh

}  // namespace recur::graph
