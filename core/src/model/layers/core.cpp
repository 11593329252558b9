// SPDX-License-Identifier: Apache-2.0
// Keras's core layers: Dropout and the other identities at inference, Masking, Embedding, Dense,
// EinsumDense.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>

#include "io/json_int.hpp"
#include "io/keras_entry.hpp"
#include "io/printable.hpp"
#include "model/device_run.hpp"
#include "model/layers/layer_util.hpp"
#include "model/layers/registry.hpp"
#include "recur/activations.hpp"
#include "recur/error.hpp"
#include "recur/keras_json.hpp"
#include "recur/limits.hpp"
#include "recur/weights.hpp"

namespace recur::graph {
namespace {

// Dropout, SpatialDropout1D, GaussianNoise, ...: the identity at inference; masks pass.
class IdentityOp : public Op {
 public:
  IdentityOp() { per_step = true; }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    check_rank(in, 1, 1, class_name.c_str());
    return in;
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override { return {*in.main[0]}; }
  std::string device_rule() const override { return ""; }
  bool forward_device(const CallInputs& in, RunContext&, int, std::vector<Value>& out) const override {
    out = {*in.main[0]};
    return true;
  }
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
  // The rows' flags are computed on the GPU and come down (one byte per step), as masks live on
  // the host; the tensor stays.
  std::string device_rule() const override { return ""; }
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    DeviceRun& dev = *ctx.device;
    Value y = dev.make(x.shape, "Masking");
    const Index rows = x.shape[0] * x.shape[1], w = x.shape[2];
    auto m = std::make_shared<std::vector<std::uint8_t>>(static_cast<std::size_t>(rows));
    dev.call("Masking '" + name + "'", [&](char* err, std::size_t len) {
      return dev.table().mask_rows(dev.ordinal(), x.device->data(), rows, w, value_, y.device->data(), m->data(), err, len);
    });
    y.mask = std::move(m);
    out = {std::move(y)};
    return true;
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
    // Keras's mask has the ids' shape; recur carries (batch, timesteps) masks only.
    if (mask_zero_ && in[0].dims.size() > 2)
      fail(Code::unsupported, "Embedding: mask_zero=True on ids of shape ", spec_string(in[0]),
           ": Keras's mask would have that shape, and recur carries (batch, timesteps) masks only");
    Spec s = in[0];  // (B, T, 1) ids give (B, T, 1, output_dim), as in Keras
    s.dims.push_back(output_dim_);
    s.ids = false;
    return {s};
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const Value& x = *in.main[0];
    std::vector<Index> shape = x.shape;
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
    y.mask = m;  // without mask_zero, no mask comes out (Keras's compute_mask), whatever came in
    return {std::move(y)};
  }
  std::string device_rule() const override { return ""; }
  bool device_reads_host() const override { return true; }
  // The ids are checked on the host (as forward does), then the rows are gathered on the GPU.
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    if (input_dim_ > std::numeric_limits<std::int32_t>::max()) return false;
    const Value& x = *in.main[0];
    std::vector<Index> shape = x.shape;
    const Index n = product(shape);
    shape.push_back(output_dim_);
    DeviceRun& dev = *ctx.device;
    Value y = dev.make(shape, "Embedding");
    std::vector<std::int32_t> ids(static_cast<std::size_t>(n));
    std::shared_ptr<std::vector<std::uint8_t>> m;
    if (mask_zero_ && shape.size() == 3) m = std::make_shared<std::vector<std::uint8_t>>(static_cast<std::size_t>(n));
    const bool exact = x.ids && x.ids->values.size() == static_cast<std::size_t>(n);
    for (Index r = 0; r < n; ++r) {
      std::int64_t id;
      if (exact) {
        id = x.ids->values[static_cast<std::size_t>(r)];
        if (id < 0 || id >= input_dim_)
          fail(Code::invalid_argument, "input '", x.ids->input, "': token id ", id, " at position ", r, " ",
               position_string(shape, r), " is out of range [0, ", input_dim_, ") for Embedding '", name, "'");
      } else {
        const float f = x.data[static_cast<std::size_t>(r)];
        if (!(f >= 0.0f) || f != std::floor(f) || f >= static_cast<float>(input_dim_))
          fail(Code::invalid_argument, "input: token id ", f, " at position ", r, " is not an integer in [0, ", input_dim_,
               ") for Embedding '", name, "'");
        id = static_cast<std::int64_t>(f);
      }
      ids[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(id);
      if (m) (*m)[static_cast<std::size_t>(r)] = id != 0;
    }
    const float* table = weights_.on(dev, {{table_.data(), table_.size()}})[0];
    dev.call("Embedding '" + name + "'", [&](char* err, std::size_t len) {
      return dev.table().gather_rows(dev.ordinal(), table, output_dim_, ids.data(), n, y.device->data(), err, len);
    });
    y.mask = m;
    out = {std::move(y)};
    return true;
  }
  std::size_t num_weights() const override { return 1; }
  std::uint64_t weight_floats() const override { return table_.size(); }
  void load(std::vector<StoredWeight>& w, bool, const std::string& where) override {
    table_ = take_weight(w, {input_dim_, output_dim_}, where);
    weights_.reset();
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
  DeviceWeights weights_;
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
  std::string device_rule() const override { return ""; }
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    DeviceRun& dev = *ctx.device;
    std::vector<Index> shape = x.shape;
    shape.back() = units_;
    Value y = dev.make(shape, "Dense");
    const Index rows = product(x.shape, 0, x.shape.size() - 1);
    const auto w = weights_.on(dev, {{kernel_.data(), static_cast<std::size_t>(kernel_.size())},
                                     {bias_.data(), static_cast<std::size_t>(bias_.size())}});
    dev.call("Dense '" + name + "'", [&](char* err, std::size_t len) {
      return dev.table().dense(dev.ordinal(), x.device->data(), rows, in_, w[0], use_bias_ ? w[1] : nullptr, units_,
                               static_cast<std::int32_t>(act_.kind), static_cast<std::int32_t>(act_.hard_sigmoid),
                               y.device->data(), err, len);
    });
    y.mask = x.mask;
    out = {std::move(y)};
    return true;
  }
  std::size_t num_weights() const override { return use_bias_ ? 2 : 1; }
  std::uint64_t weight_floats() const override { return static_cast<std::uint64_t>(kernel_.size() + bias_.size()); }
  double work(const std::vector<Spec>& main, const std::vector<Spec>& out) const override {
    return elements(main) / double(std::max<Index>(in_, 1)) * double(kernel_.size()) * kEigenMacWork + Op::work(main, out);
  }
  void load(std::vector<StoredWeight>& w, bool, const std::string& where) override {
    auto k = take_weight(w, {in_, units_}, where);
    std::copy_n(k.data(), k.size(), kernel_.data());
    if (use_bias_) {
      auto b = take_weight(w, {units_}, where);
      std::copy_n(b.data(), b.size(), bias_.data());
    }
    weights_.reset();
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
  DeviceWeights weights_;
};

// EinsumDense: y = activation(einsum(equation, x, kernel) + bias), Keras's weight shapes from
// _analyze_einsum_string: each kernel axis is sized by the output (output_shape) or the input, an
// ellipsis ("...ab,bc->...ac" or "ab...,bc->ac...") stands for the input axes the letters leave,
// and the bias spans the output from its first bias axis on (1 on the others). Like Keras, it
// hands no mask on.
class EinsumDenseOp : public Op {
 public:
  EinsumDenseOp(const json& cfg, const DialectInfo& d) {
    equation_ = str_of(cfg, "equation", "");
    bias_axes_ = str_of(cfg, "bias_axes", "");
    act_ = activation_of(cfg, d);
    if (cfg.contains("lora_rank") && !cfg["lora_rank"].is_null() && !(cfg["lora_rank"].is_number_integer() && cfg["lora_rank"].get<std::int64_t>() == 0))
      fail(Code::unsupported, "EinsumDense: lora_rank=", io::excerpt(cfg["lora_rank"]), " (recur runs EinsumDense without LoRA)");
    if (cfg.contains("quantization_config") && !cfg["quantization_config"].is_null())
      fail(Code::unsupported, "EinsumDense: quantization_config (recur runs float EinsumDense only)");
    // The three forms Keras accepts: no ellipsis, one before the input's and output's letters, or
    // one after them.
    auto letters = [](const std::string& t) {
      return !t.empty() && std::all_of(t.begin(), t.end(), [](unsigned char c) { return std::isalpha(c) != 0; });
    };
    if (equation_.empty()) fail(Code::invalid_argument, "EinsumDense: equation is missing (e.g. 'abc,cd->abd')");
    const auto comma = equation_.find(','), arrow = equation_.find("->");
    if (comma == std::string::npos || arrow == std::string::npos || arrow < comma)
      fail(Code::invalid_argument, "EinsumDense: equation '", io::printable(equation_), "' is not of the form 'ab,bc->ac'");
    in_ = equation_.substr(0, comma);
    kernel_spec_ = equation_.substr(comma + 1, arrow - comma - 1);
    out_ = equation_.substr(arrow + 2);
    auto strip = [&](std::string& t, int where) {
      if (where < 0 && t.rfind("...", 0) == 0) t = t.substr(3);
      else if (where > 0 && t.size() > 3 && t.compare(t.size() - 3, 3, "...") == 0) t.resize(t.size() - 3);
      else return false;
      return true;
    };
    if (strip(in_, -1)) {
      ellipsis_ = -1;
      if (!strip(out_, -1)) ellipsis_ = 99;
    } else if (strip(in_, 1)) {
      ellipsis_ = 1;
      if (!strip(out_, 1)) ellipsis_ = 99;
    }
    if (ellipsis_ == 99 || !letters(in_) || !letters(kernel_spec_) || !letters(out_))
      fail(Code::unsupported, "EinsumDense: equation '", io::printable(equation_),
           "': recur takes 'ab,bc->ac', '...b,bc->...c' or 'ab...,bc->ac...' forms (letters, one ellipsis on the input and output)");
    for (const std::string* t : {&in_, &kernel_spec_, &out_})
      for (std::size_t i = 0; i < t->size(); ++i)
        if (t->find((*t)[i], i + 1) != std::string::npos)
          fail(Code::unsupported, "EinsumDense: equation '", equation_, "' repeats '", (*t)[i], "' in one operand (a diagonal)");
    for (char c : out_)
      if (in_.find(c) == std::string::npos && kernel_spec_.find(c) == std::string::npos)
        fail(Code::invalid_argument, "EinsumDense: equation '", equation_, "': output axis '", c, "' is in neither the input nor the kernel");
    for (char c : kernel_spec_)
      if (in_.find(c) == std::string::npos && out_.find(c) == std::string::npos)
        fail(Code::invalid_argument, "EinsumDense: equation '", equation_, "': kernel axis '", c, "' is in neither the input nor the output");
    for (char c : bias_axes_)
      if (out_.find(c) == std::string::npos)
        fail(Code::invalid_argument, "EinsumDense: bias_axes '", io::printable(bias_axes_), "': '", c, "' is not an axis of the output '", out_, "'");
    const json* os = cfg.contains("output_shape") ? &cfg["output_shape"] : nullptr;
    if (!os || os->is_null()) fail(Code::invalid_argument, "EinsumDense: output_shape is missing");
    const json list = os->is_array() ? *os : json::array({*os});
    for (const json& v : list) {
      if (v.is_null()) {
        user_shape_.push_back(-1);
        continue;
      }
      int i = 0;
      if (!v.is_number_integer() || !io::int_in(v, 1, std::int64_t(1) << 30, i))
        fail(Code::invalid_argument, "output_shape: expected positive integers (or null), got ", io::excerpt(*os));
      user_shape_.push_back(i);
    }
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext& ctx) override {
    check_rank(in, 1, 2, "EinsumDense");
    const std::vector<Index>& xd = in[0].dims;
    const Index elided = static_cast<Index>(xd.size()) - static_cast<Index>(in_.size());
    if (ellipsis_ == 0 ? elided != 0 : elided < 1)
      fail(Code::shape, "EinsumDense: equation '", equation_, "' does not fit an input of shape ", spec_string(in[0]));
    // Spell the ellipsis out with letters of its own.
    std::string fresh;
    for (char c = 'A'; static_cast<Index>(fresh.size()) < elided && c <= 'z'; ++c)
      if (std::isalpha(static_cast<unsigned char>(c)) && equation_.find(c) == std::string::npos) fresh += c;
    if (static_cast<Index>(fresh.size()) < elided) fail(Code::unsupported, "EinsumDense: too many axes under the ellipsis");
    const std::string fi = ellipsis_ < 0 ? fresh + in_ : in_ + fresh;
    const std::string fo = ellipsis_ < 0 ? fresh + out_ : out_ + fresh;
    const std::size_t given = ellipsis_ < 0 ? out_.size() : out_.size() - 1;
    if (user_shape_.size() != given)
      fail(Code::invalid_argument, "output_shape: expected ", given, " sizes for the output '", out_, "' (less its batch axis), got ",
           user_shape_.size());
    std::vector<Index> od(fo.size());
    for (std::size_t p = 0; p < fo.size(); ++p) {
      const auto at = fi.find(fo[p]);
      const bool user = ellipsis_ < 0 ? p >= static_cast<std::size_t>(elided) : (p >= 1 && p < out_.size());
      const Index want = user ? user_shape_[ellipsis_ < 0 ? p - static_cast<std::size_t>(elided) : p - 1] : -1;
      if (at != std::string::npos) {
        od[p] = xd[at];
        if (want >= 0 && xd[at] >= 0 && want != xd[at])
          fail(Code::shape, "EinsumDense: output_shape gives ", want, " for axis '", fo[p], "', the input has ", xd[at]);
      } else {
        if (want < 0) fail(Code::invalid_argument, "output_shape: the size of output axis '", fo[p], "' is null; the kernel needs it");
        od[p] = want;
      }
    }
    std::vector<Index> kd;
    for (char c : kernel_spec_) {
      const auto o = fo.find(c);
      const Index n = o != std::string::npos ? od[o] : xd[fi.find(c)];
      if (n < 0)
        fail(Code::shape, "EinsumDense: kernel axis '", c, "' is sized by an input axis of unknown size in ", spec_string(in[0]));
      kd.push_back(n);
    }
    std::vector<Index> bd;
    if (!bias_axes_.empty()) {
      std::size_t first = out_.size();
      for (char c : bias_axes_) first = std::min(first, out_.find(c));
      for (std::size_t p = first; p < out_.size(); ++p)
        bd.push_back(bias_axes_.find(out_[p]) != std::string::npos ? od[p + (ellipsis_ < 0 ? elided : 0)] : 1);
      if (ellipsis_ > 0) bd.insert(bd.end(), static_cast<std::size_t>(elided), 1);
      for (Index n : bd)
        if (n < 0) fail(Code::shape, "EinsumDense: bias_axes '", bias_axes_, "' names an axis of unknown size");
    }
    if (kernel_dims_.empty()) {
      ctx.reserve_weights(double(product(kd)) + double(product(bd)), "EinsumDense: kernel " + io::excerpt(json(kd)));
      kernel_dims_ = kd;
      bias_dims_ = bd;
      kernel_.assign(static_cast<std::size_t>(product(kd)), 0.0f);
      bias_.assign(bd.empty() ? 0 : static_cast<std::size_t>(product(bd)), 0.0f);
    } else if (kd != kernel_dims_ || bd != bias_dims_) {
      fail(Code::shape, "EinsumDense: built with kernel ", io::excerpt(json(kernel_dims_)), ", called on ", spec_string(in[0]));
    }
    full_in_ = fi;
    full_out_ = fo;
    // Per step when the steps axis passes straight through (not summed, not in the kernel).
    set_once(per_step, fi.size() >= 2 && fo.size() >= 2 && fo[1] == fi[1] && kernel_spec_.find(fi[1]) == std::string::npos);
    Spec s = in[0];
    s.dims = od;
    return {s};
  }
  std::string stream_rule(const std::vector<bool>& stepped_in, bool, std::vector<bool>& stepped_out) const override {
    stepped_out.assign(stepped_out.size(), !stepped_in.empty() && stepped_in[0]);
    if (stepped_in.empty() || !stepped_in[0] || per_step) return "";
    return "equation '" + equation_ + "' does not keep the steps axis (axis 1) apart (it sums, moves or weighs it)";
  }
  // The letters of a call on input shape x: the output's, then those summed over, with each one's
  // size and stride in x, the kernel and y, and the bias's stride along each output axis.
  struct Letters {
    std::vector<Index> size, sx, sk, sy, yshape, bias_strides;
  };
  Letters letters(const std::vector<Index>& x) const {
    const std::string& fi = full_in_;
    const std::string& fo = full_out_;
    std::string all = fo;
    for (char c : fi + kernel_spec_)
      if (all.find(c) == std::string::npos) all += c;
    const std::size_t n = all.size();
    Letters l;
    l.size.resize(n), l.sx.assign(n, 0), l.sk.assign(n, 0), l.sy.assign(n, 0);
    for (std::size_t j = 0; j < n; ++j) {
      const auto a = fi.find(all[j]);
      l.size[j] = a != std::string::npos ? x[a] : kernel_dims_[kernel_spec_.find(all[j])];
    }
    for (std::size_t j = 0; j < fo.size(); ++j) l.yshape.push_back(l.size[j]);
    auto strides = [&](const std::string& spec, const std::vector<Index>& dims, std::vector<Index>& out) {
      Index st = 1;
      for (std::size_t a = spec.size(); a-- > 0;) {
        out[all.find(spec[a])] = st;
        st *= dims[a];
      }
    };
    strides(fi, x, l.sx);
    strides(kernel_spec_, kernel_dims_, l.sk);
    strides(fo, l.yshape, l.sy);
    // The bias covers the output's last bias_dims_.size() axes (1: broadcast).
    const std::size_t r = l.yshape.size(), nb = bias_.empty() ? 0 : bias_dims_.size();
    l.bias_strides.assign(r, 0);
    Index st = 1;
    for (std::size_t a = nb; a-- > 0;) {
      l.bias_strides[r - nb + a] = bias_dims_[a] == 1 ? 0 : st;
      st *= bias_dims_[a];
    }
    return l;
  }

  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const Value& x = *in.main[0];
    const Letters l = letters(x.shape);
    const std::size_t n = l.size.size();
    Value y = make_value(l.yshape, "EinsumDense");
    Index total = 1;
    for (Index v : l.size) total *= v;
    if (total > 0) {
      std::vector<Index> idx(n, 0);
      Index ox = 0, ok = 0, oy = 0;
      for (Index i = 0; i < total; ++i) {
        y.data[static_cast<std::size_t>(oy)] += x.data[static_cast<std::size_t>(ox)] * kernel_[static_cast<std::size_t>(ok)];
        for (std::size_t j = n; j-- > 0;) {
          ox += l.sx[j], ok += l.sk[j], oy += l.sy[j];
          if (++idx[j] < l.size[j]) break;
          ox -= l.sx[j] * l.size[j], ok -= l.sk[j] * l.size[j], oy -= l.sy[j] * l.size[j];
          idx[j] = 0;
        }
      }
    }
    if (!bias_.empty()) {
      const std::size_t r = l.yshape.size();
      for (Index e = 0; e < product(l.yshape); ++e) {
        Index rem = e, bi = 0;
        for (std::size_t a = r; a-- > 0;) {
          bi += (rem % l.yshape[a]) * l.bias_strides[a];
          rem /= l.yshape[a];
        }
        y.data[static_cast<std::size_t>(e)] += bias_[static_cast<std::size_t>(bi)];
      }
    }
    const Index last = l.yshape.empty() ? 1 : l.yshape.back();
    if (last > 0) apply_activation(act_, y.data.data(), product(l.yshape) / last, last);
    return {std::move(y)};
  }
  std::string device_rule() const override { return ""; }
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    const Letters l = letters(x.shape);
    if (l.size.size() > RECUR_GPU_MAX_EINSUM_LETTERS || l.yshape.empty()) {
      ctx.device->declined = "its equation has more letters than the GPU's einsum takes (" +
                             std::to_string(RECUR_GPU_MAX_EINSUM_LETTERS) + ")";
      return false;
    }
    DeviceRun& dev = *ctx.device;
    Value y = dev.make(l.yshape, "EinsumDense");
    const auto w = weights_.on(dev, {{kernel_.data(), kernel_.size()}, {bias_.data(), bias_.size()}});
    const std::vector<std::int64_t> size(l.size.begin(), l.size.end()), sx(l.sx.begin(), l.sx.end()),
        sk(l.sk.begin(), l.sk.end()), sb(l.bias_strides.begin(), l.bias_strides.end());
    const std::string what = "EinsumDense '" + name + "'";
    dev.call(what, [&](char* err, std::size_t len) {
      return dev.table().einsum(dev.ordinal(), x.device->data(), w[0], static_cast<std::int32_t>(size.size()),
                                static_cast<std::int32_t>(l.yshape.size()), size.data(), sx.data(), sk.data(),
                                bias_.empty() ? nullptr : w[1], sb.data(), y.device->data(), err, len);
    });
    const Index last = l.yshape.back(), rows = last ? product(l.yshape) / last : 0;
    if (act_.kind != Activation::linear && rows > 0)
      dev.call(what, [&](char* err, std::size_t len) {
        return dev.table().activate(dev.ordinal(), y.device->data(), rows, last, static_cast<std::int32_t>(act_.kind),
                                    static_cast<std::int32_t>(act_.hard_sigmoid), err, len);
      });
    out = {std::move(y)};
    return true;
  }
  std::size_t num_weights() const override { return bias_axes_.empty() ? 1 : 2; }
  double work(const std::vector<Spec>& main, const std::vector<Spec>& out) const override {
    // The loop visits every combination of the letters' sizes: the input's, then the kernel's own.
    double total = elements(main.at(0));
    for (std::size_t j = 0; j < kernel_spec_.size() && j < kernel_dims_.size(); ++j)
      if (full_in_.find(kernel_spec_[j]) == std::string::npos) total *= double(std::max<Index>(kernel_dims_[j], 1));
    return total * kIndexedMacWork + Op::work(main, out);
  }
  std::uint64_t weight_floats() const override { return kernel_.size() + bias_.size(); }
  void load(std::vector<StoredWeight>& w, bool, const std::string& where) override {
    auto dims = [](const std::vector<Index>& d) { return std::vector<std::int64_t>(d.begin(), d.end()); };
    weights_.reset();
    kernel_ = take_weight(w, dims(kernel_dims_), where);
    if (!bias_axes_.empty()) bias_ = take_weight(w, dims(bias_dims_), where);
  }
  void load_keras(const io::H5File& h5, const std::string& object, const std::string& file) override {
    auto w = read_vars(h5, object, file, 2 * weight_floats() + 16);
    check_count(w, num_weights(), file + ": model.weights.h5:/" + object, name);
    load(w, false, file + ": model.weights.h5:/" + object);
  }

 private:
  std::string equation_, bias_axes_, in_, kernel_spec_, out_, full_in_, full_out_;
  int ellipsis_ = 0;  // -1: before the letters, 1: after them
  std::vector<Index> user_shape_, kernel_dims_, bias_dims_;
  ActivationFn act_;
  std::vector<float> kernel_, bias_;
  DeviceWeights weights_;
};

}  // namespace

void register_core_layers(OpTable& t) {
  t.add({"Dropout", "SpatialDropout1D", "GaussianNoise", "GaussianDropout", "AlphaDropout", "ActivityRegularization",
         "InputLayer", "Identity"},
        [](const json&, const BuildContext&, const std::string&) -> std::shared_ptr<Op> { return std::make_shared<IdentityOp>(); });
  t.add({"Masking"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<MaskingOp>(e.at("config"));
  });
  t.add({"Embedding"}, [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<EmbeddingOp>(e.at("config"), ctx);
  });
  t.add({"Dense"}, [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<DenseOp>(e.at("config"), ctx.dialect);
  });
  t.add({"EinsumDense"}, [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<EinsumDenseOp>(e.at("config"), ctx.dialect);
  });
}

}  // namespace recur::graph
