// SPDX-License-Identifier: Apache-2.0
// Keras's activation layers: Activation, ReLU, LeakyReLU, ELU, ThresholdedReLU, Softmax, PReLU.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
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

class ActivationOp : public Op {
 public:
  ActivationOp(const json& cfg, const DialectInfo& d) : act_(activation_of(checked(cfg), d)) { per_step = true; }
  // Keras 3 names two activations recur does not run in a layer: glu changes the shape the
  // layer declares, threshold needs arguments a config cannot give.
  static const json& checked(const json& cfg) {
    const std::string a = cfg.contains("activation") && cfg["activation"].is_string() ? cfg["activation"].get<std::string>() : "";
    if (a == "glu")
      fail(Code::unsupported, "activation: 'glu' halves the last axis, which the Activation layer declares unchanged; recur "
                              "does not run it");
    if (a == "threshold")
      fail(Code::invalid_argument, "activation: 'threshold' needs its threshold and default_value arguments, which a "
                                   "layer config cannot give (Keras fails too)");
    return cfg;
  }
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
  std::string device_rule() const override { return ""; }
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    DeviceRun& dev = *ctx.device;
    Value y = dev.clone(*in.main[0], "Activation");
    y.ids.reset();
    const Index cols = y.shape.back(), rows = cols ? product(y.shape) / cols : 0;
    dev.call("Activation '" + name + "'", [&](char* err, std::size_t len) {
      return dev.table().activate(dev.ordinal(), y.device->data(), rows, cols, static_cast<std::int32_t>(act_.kind),
                                  static_cast<std::int32_t>(act_.hard_sigmoid), err, len);
    });
    out = {std::move(y)};
    return true;
  }

 private:
  ActivationFn act_;
};

// A number argument that Keras refuses as None or below zero (ReLU's, ThresholdedReLU's...).
float non_negative(const json& cfg, const char* key, double fallback, const char* who) {
  if (cfg.contains(key) && cfg[key].is_null()) fail(Code::invalid_argument, who, ": ", key, ": expected a number >= 0, got null");
  const double v = num_of(cfg, key, fallback);
  if (!(v >= 0.0) || !std::isfinite(v))
    fail(Code::invalid_argument, who, ": ", key, ": expected a finite number >= 0, got ", io::excerpt(cfg[key]));
  return static_cast<float>(v);
}

// Keras's relu(x, negative_slope, max_value, threshold) (tf_keras backend.relu, keras
// activations.relu: the same steps), in float32 as Keras computes it.
struct ReluParams {
  float slope = 0.0f, threshold = 0.0f, max_value = 0.0f;
  bool has_max = false;
  float operator()(float x) const {
    if (slope != 0.0f && !has_max && threshold == 0.0f) return x > 0.0f ? x : x * slope;  // leaky_relu
    const float neg = slope != 0.0f ? std::max(threshold != 0.0f ? -x + threshold : -x, 0.0f) : 0.0f;
    float y;
    bool clip = has_max;
    if (threshold != 0.0f) {
      y = x > threshold ? x : 0.0f;
    } else if (has_max && max_value == 6.0f) {
      y = std::min(std::max(x, 0.0f), 6.0f);
      clip = false;
    } else {
      y = std::max(x, 0.0f);
    }
    if (clip) y = std::min(std::max(y, 0.0f), max_value);
    if (slope != 0.0f) y -= slope * neg;
    return y;
  }
};

// The activate_args call that computes an ElementwiseOp's formula on a GPU.
struct DeviceForm {
  std::int32_t kind = RECUR_GPU_ACT_RELU, flags = 0;
  float a = 0.0f, b = 0.0f, c = 0.0f;
};

DeviceForm device_form(const ReluParams& p) {
  DeviceForm d;
  d.kind = RECUR_GPU_ACT_RELU;
  d.a = p.slope;
  d.b = p.threshold;
  d.c = p.max_value;
  d.flags = p.has_max ? RECUR_GPU_ACT_HAS_MAX : 0;
  return d;
}

// ReLU, LeakyReLU, ELU, ThresholdedReLU: one formula per element; masks pass, as in Keras.
class ElementwiseOp : public Op {
 public:
  ElementwiseOp(std::function<float(float)> f, DeviceForm d) : f_(std::move(f)), form_(d) { per_step = true; }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    check_rank(in, 1, 1, class_name.c_str());
    Spec s = in[0];
    s.ids = false;
    return {s};
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    Value y = *in.main[0];
    for (float& v : y.data) v = f_(v);
    return {std::move(y)};
  }
  std::string device_rule() const override { return ""; }
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    DeviceRun& dev = *ctx.device;
    Value y = dev.make(x.shape, class_name.c_str());
    dev.call(class_name + " '" + name + "'", [&](char* err, std::size_t len) {
      return dev.table().activate_args(dev.ordinal(), form_.kind, x.device->data(), x.device->floats, form_.a, form_.b,
                                       form_.c, form_.flags, y.device->data(), err, len);
    });
    y.mask = x.mask;
    out = {std::move(y)};
    return true;
  }

 private:
  std::function<float(float)> f_;
  DeviceForm form_;
};

std::shared_ptr<Op> make_relu(const json& cfg) {
  ReluParams p;
  p.slope = non_negative(cfg, "negative_slope", 0.0, "ReLU");
  p.threshold = non_negative(cfg, "threshold", 0.0, "ReLU");
  if (cfg.contains("max_value") && !cfg["max_value"].is_null()) {
    p.has_max = true;
    p.max_value = non_negative(cfg, "max_value", 0.0, "ReLU");
  }
  return std::make_shared<ElementwiseOp>(p, device_form(p));
}

std::shared_ptr<Op> make_leaky_relu(const json& cfg, const DialectInfo& d) {
  // Keras 2 names the slope alpha; Keras 3 negative_slope (and reads alpha as its old name).
  const char* key = cfg.contains("negative_slope") ? "negative_slope" : "alpha";
  if (cfg.contains(key) && cfg[key].is_null()) fail(Code::invalid_argument, "LeakyReLU: ", key, ": expected a number, got null");
  const double slope = num_of(cfg, key, 0.3);
  // Keras 3 refuses a negative slope; Keras 2 runs it.
  if (!std::isfinite(slope) || (d.dialect != Dialect::keras2 && slope < 0))
    fail(Code::invalid_argument, "LeakyReLU: ", key, ": expected a finite number", d.dialect != Dialect::keras2 ? " >= 0" : "",
         ", got ", io::excerpt(cfg[key]));
  ReluParams p;
  p.slope = static_cast<float>(slope);
  return std::make_shared<ElementwiseOp>(p, device_form(p));
}

std::shared_ptr<Op> make_elu(const json& cfg) {
  if (cfg.contains("alpha") && cfg["alpha"].is_null()) fail(Code::invalid_argument, "ELU: alpha: expected a number, got null");
  const double a = num_of(cfg, "alpha", 1.0);
  if (!std::isfinite(a)) fail(Code::invalid_argument, "ELU: alpha: expected a finite number, got ", io::excerpt(cfg["alpha"]));
  const float alpha = static_cast<float>(a);
  DeviceForm d;
  d.kind = RECUR_GPU_ACT_ELU;
  d.a = alpha;
  return std::make_shared<ElementwiseOp>(
      [alpha](float x) {
        const float e = x > 0.0f ? x : std::expm1(x);
        return alpha == 1.0f || x > 0.0f ? e : alpha * e;
      },
      d);
}

std::shared_ptr<Op> make_thresholded_relu(const json& cfg) {
  const float theta = non_negative(cfg, "theta", 1.0, "ThresholdedReLU");
  DeviceForm d;
  d.kind = RECUR_GPU_ACT_THRESHOLDED;
  d.a = theta;
  return std::make_shared<ElementwiseOp>([theta](float x) { return x > theta ? x : 0.0f; }, d);
}

// Calls fn(flat index, group) for every element of a tensor of `shape`, in order, where a group
// holds the elements that agree on every axis outside `axes` (numbered as in a tensor without
// them). No per-element table: the group follows the index like an odometer.
template <typename Fn>
void for_each_in_groups(const std::vector<Index>& shape, const std::vector<int>& axes, Fn&& fn) {
  std::vector<char> reduced(shape.size(), 0);
  for (int a : axes) reduced[static_cast<std::size_t>(a)] = 1;
  std::vector<Index> stride(shape.size(), 0);  // a group's stride along each kept axis
  Index groups = 1;
  for (std::size_t i = shape.size(); i-- > 0;)
    if (!reduced[i]) {
      stride[i] = groups;
      groups *= shape[i];
    }
  const Index n = product(shape);
  std::vector<Index> idx(shape.size(), 0);
  Index g = 0;
  for (Index flat = 0; flat < n; ++flat) {
    fn(static_cast<std::size_t>(flat), static_cast<std::size_t>(g));
    for (std::size_t i = shape.size(); i-- > 0;) {
      g += stride[i];
      if (++idx[i] < shape[i]) break;
      g -= stride[i] * shape[i];
      idx[i] = 0;
    }
  }
}

// Softmax over one axis or several. A mask it is called with (the (batch, timesteps) mask of its
// input, in a graph) broadcasts against the input as numpy aligns shapes, from the last axis;
// masked positions get -1e9: Keras 2 adds it (robust_masking: replaces), Keras 3 replaces and sets
// the outputs there to 0 afterwards. The mask passes on.
class SoftmaxOp : public Op {
 public:
  SoftmaxOp(const json& cfg, const DialectInfo& d, bool legacy_h5)
      : given_(axes_of(cfg, -1)), shown_(cfg.contains("axis") ? cfg["axis"] : json(-1)),
        several_(cfg.contains("axis") && cfg["axis"].is_array() && cfg["axis"].size() > 1),
        keras3_(d.dialect != Dialect::keras2), robust_(bool_of(cfg, "robust_masking", false)) {
    if (given_.empty()) fail(Code::invalid_argument, "Softmax: axis: expected an axis or a list of axes, got []");
    per_step = true;  // unless it normalizes over the batch or the timesteps (stream_rule)
    // Keras 3 reading a legacy .h5 drops an axis list of several (legacy/saving/saving_utils.py
    // keeps only an integer or a list of one), so the layer runs over its default, the last axis.
    if (keras3_ && legacy_h5 && several_) {
      given_ = {-1};
      several_ = false;
    }
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    check_rank(in, 1, 1, "Softmax");
    set_once(axes_, normalized_axes(given_, in[0].dims.size(), "Softmax", shown_));
    Spec s = in[0];
    s.ids = false;
    return {s};
  }
  double work(const std::vector<Spec>& main, const std::vector<Spec>& out) const override {
    return kElementWork * elements(main) + kScalarMathWork * elements(out);
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    Value y = *in.main[0];
    const std::vector<Index>& shape = y.shape;
    const std::vector<int> axes = normalized_axes(given_, shape.size(), "Softmax", shown_);
    const std::size_t n = y.data.size();
    std::vector<std::uint8_t> keep;
    if (y.mask && !in.drop_mask) {
      keep = broadcast_mask(*y.mask, y.rows(), static_cast<Index>(y.mask->size()) / std::max<Index>(y.rows(), 1), shape);
      for (std::size_t i = 0; i < n; ++i)
        if (!keep[i]) y.data[i] = keras3_ || robust_ ? -1e9f : y.data[i] + -1e9f;  // Keras 2 adds (1 - mask) * -1e9
    }
    Index groups = 1;
    for (std::size_t i = 0; i < shape.size(); ++i)
      if (std::find(axes.begin(), axes.end(), static_cast<int>(i)) == axes.end()) groups *= shape[i];
    std::vector<float> mx(static_cast<std::size_t>(groups), -std::numeric_limits<float>::infinity());
    std::vector<float> sum(static_cast<std::size_t>(groups), 0.0f);
    float* v = y.data.data();
    for_each_in_groups(shape, axes, [&](std::size_t i, std::size_t g) { mx[g] = std::max(mx[g], v[i]); });
    for_each_in_groups(shape, axes, [&](std::size_t i, std::size_t g) {
      v[i] -= mx[g];
      sum[g] += std::exp(v[i]);
    });
    // Several axes: Keras takes exp(x - logsumexp(x)); one axis: exp(x - max) / sum.
    for_each_in_groups(shape, axes, [&](std::size_t i, std::size_t g) {
      v[i] = several_ ? std::exp(v[i] - std::log(sum[g])) : std::exp(v[i]) / sum[g];
    });
    if (keras3_ && !keep.empty())
      for (std::size_t i = 0; i < n; ++i)
        if (!keep[i]) y.data[i] = 0.0f;
    return {std::move(y)};
  }
  std::string device_rule() const override { return ""; }
  // One axis, or several adjacent ones (their elements then lie in one row in the CPU's order);
  // other sets of axes run on the host.
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    std::vector<int> axes = normalized_axes(given_, x.shape.size(), "Softmax", shown_);
    std::sort(axes.begin(), axes.end());
    if (axes.back() - axes.front() + 1 != static_cast<int>(axes.size())) return false;
    const std::size_t a = static_cast<std::size_t>(axes.front()), b = static_cast<std::size_t>(axes.back()) + 1;
    const std::size_t r = x.shape.size();
    const std::uint8_t* mask = nullptr;
    Index mrows = 0, mcols = 0, last = 0, prev = 0;
    if (x.mask && !in.drop_mask) {
      mrows = x.rows();
      mcols = static_cast<Index>(x.mask->size()) / std::max<Index>(mrows, 1);
      // A mask that does not broadcast: forward fails with its message.
      if (r < 2 || (mcols != 1 && mcols != x.shape[r - 1]) || (mrows != 1 && mrows != x.shape[r - 2])) return false;
      mask = x.mask->data();
      last = x.shape[r - 1];
      prev = x.shape[r - 2];
    }
    const std::int32_t mode = keras3_ ? RECUR_GPU_SOFTMAX_MASK_REPLACE_ZERO
                              : robust_ ? RECUR_GPU_SOFTMAX_MASK_REPLACE
                                        : RECUR_GPU_SOFTMAX_MASK_ADD;
    DeviceRun& dev = *ctx.device;
    Value y = dev.make(x.shape, "Softmax");
    dev.call("Softmax '" + name + "'", [&](char* err, std::size_t len) {
      return dev.table().softmax_axis(dev.ordinal(), x.device->data(), product(x.shape, 0, a), product(x.shape, a, b),
                                      product(x.shape, b), several_ ? 1 : 0, mask, mrows, mcols, last, prev, mode,
                                      y.device->data(), err, len);
    });
    y.mask = x.mask;
    out = {std::move(y)};
    return true;
  }
  std::string stream_rule(const std::vector<bool>& stepped_in, bool has_init, std::vector<bool>& stepped_out) const override {
    const bool stepped = !stepped_in.empty() && stepped_in[0];
    if (stepped && std::any_of(axes_.begin(), axes_.end(), [](int a) { return a <= 1; })) {
      stepped_out.assign(stepped_out.size(), true);
      const int a = *std::min_element(axes_.begin(), axes_.end());
      return "it normalizes over axis " + std::to_string(a) + " (the " + (a == 0 ? "batch" : "timesteps") +
             "), which needs the whole sequence";
    }
    return Op::stream_rule(stepped_in, has_init, stepped_out);
  }

 private:
  // The (rows, cols) mask, numpy-broadcast against `shape` from its last axis: Keras's result
  // only keeps the input's shape when each mask axis is 1 or the input's there.
  std::vector<std::uint8_t> broadcast_mask(const std::vector<std::uint8_t>& m, Index rows, Index cols,
                                           const std::vector<Index>& shape) const {
    const std::size_t r = shape.size();
    if (r < 2 || (cols != 1 && cols != shape[r - 1]) || (rows != 1 && rows != shape[r - 2]))
      fail(Code::shape, "Softmax '", name, "': Keras applies its input's mask of shape ", shape_string({rows, cols}),
           " to the input of shape ", shape_string(shape),
           " by broadcasting from the last axis; these shapes do not broadcast to the input's (Keras fails or gives "
           "another shape)");
    const Index last = shape[r - 1], prev = shape[r - 2];
    std::vector<std::uint8_t> keep(static_cast<std::size_t>(product(shape)));
    for (std::size_t i = 0; i < keep.size(); ++i) {
      const Index j = static_cast<Index>(i) % last, k = (static_cast<Index>(i) / last) % prev;
      keep[i] = m[static_cast<std::size_t>((rows == 1 ? 0 : k) * cols + (cols == 1 ? 0 : j))];
    }
    return keep;
  }

  std::vector<int> given_, axes_;
  json shown_;
  bool several_, keras3_, robust_;
};

// PReLU: max(x, 0) - alpha * max(-x, 0) with a learned alpha of the input's shape without the
// batch, of size 1 along shared_axes. An alpha that differs along the timesteps axis cannot stream.
class PReluOp : public Op {
 public:
  explicit PReluOp(const json& cfg) {
    if (cfg.contains("shared_axes") && !cfg["shared_axes"].is_null()) {
      const json& v = cfg["shared_axes"];
      if (!io::int_or_ints(v, shared_))
        fail(Code::invalid_argument, "PReLU: shared_axes: expected an axis or a list of axes, got ", io::excerpt(v));
      shown_ = v;
    }
    per_step = true;
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext& ctx) override {
    check_rank(in, 1, 2, "PReLU");
    const std::vector<Index>& d = in[0].dims;
    std::vector<std::int64_t> shape(d.begin() + 1, d.end());
    std::vector<char> shared(shape.size(), 0);
    for (int a : shared_) {
      if (a < 1 || a >= static_cast<int>(d.size()))
        fail(Code::invalid_argument, "PReLU: shared_axes: ", io::excerpt(shown_), " names axis ", a, "; the input ", spec_string(in[0]),
             " has axes 1..", d.size() - 1);
      shape[static_cast<std::size_t>(a - 1)] = 1;
      shared[static_cast<std::size_t>(a - 1)] = 1;
    }
    for (std::size_t i = 0; i < shape.size(); ++i)
      if (shape[i] < 0)
        fail(Code::shape, "PReLU: axis ", i + 1, " of its input ", spec_string(in[0]),
             " has no fixed size; alpha needs one unless shared_axes holds that axis");
    if (alpha_shape_.empty()) {
      double n = 1;
      for (auto s : shape) n *= static_cast<double>(s);
      ctx.reserve_weights(n, "PReLU: an alpha of shape " + shape_string(std::vector<Index>(shape.begin(), shape.end())));
      alpha_shape_ = shape;
      shared_mask_ = shared;
      alpha_.assign(static_cast<std::size_t>(n), 0.0f);
      set_once(per_step, shape[0] == 1);
    } else if (shape != alpha_shape_) {
      fail(Code::shape, "PReLU: built for inputs ", shape_string(std::vector<Index>(alpha_shape_.begin(), alpha_shape_.end())),
           " (without the batch), called on ", spec_string(in[0]));
    }
    Spec s = in[0];
    s.ids = false;
    return {s};
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    Value y = *in.main[0];
    const std::size_t r = alpha_shape_.size();
    if (y.shape.size() != r + 1) fail(Code::shape, "PReLU '", name, "': input of shape ", shape_string(y.shape));
    for (std::size_t i = 0; i < r; ++i)
      if (!shared_mask_[i] && alpha_shape_[i] != 1 && y.shape[i + 1] != alpha_shape_[i])
        fail(Code::shape, "PReLU '", name, "': built for inputs ",
             shape_string(std::vector<Index>(alpha_shape_.begin(), alpha_shape_.end())), " (without the batch), called on ",
             shape_string(y.shape));
    std::vector<Index> idx(r, 0);
    std::vector<Index> stride(r, 0);
    Index s = 1;
    for (std::size_t i = r; i-- > 0;) {
      stride[i] = alpha_shape_[i] == 1 ? 0 : s;
      s *= alpha_shape_[i];
    }
    const Index inner = product(y.shape, 1);
    for (Index b = 0; b < y.rows(); ++b) {
      Index a = 0;
      std::fill(idx.begin(), idx.end(), 0);
      for (Index e = 0; e < inner; ++e) {
        float& v = y.data[static_cast<std::size_t>(b * inner + e)];
        v = std::max(v, 0.0f) + -alpha_[static_cast<std::size_t>(a)] * std::max(-v, 0.0f);
        for (std::size_t i = r; i-- > 0;) {
          a += stride[i];
          if (++idx[i] < y.shape[i + 1]) break;
          a -= stride[i] * y.shape[i + 1];
          idx[i] = 0;
        }
      }
    }
    return {std::move(y)};
  }
  std::string device_rule() const override { return ""; }
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    const std::size_t r = alpha_shape_.size();
    // A shape forward refuses, or more axes than the plugin indexes: forward runs (and says why).
    if (x.shape.size() != r + 1 || x.shape.size() > 8) return false;
    for (std::size_t i = 0; i < r; ++i)
      if (!shared_mask_[i] && alpha_shape_[i] != 1 && x.shape[i + 1] != alpha_shape_[i]) return false;
    // alpha's index: its row-major strides, 0 along the batch and where alpha has size 1.
    std::vector<std::int64_t> dims(x.shape.begin(), x.shape.end()), strides(r + 1, 0);
    std::int64_t s = 1;
    for (std::size_t i = r; i-- > 0;) {
      strides[i + 1] = alpha_shape_[i] == 1 ? 0 : s;
      s *= alpha_shape_[i];
    }
    DeviceRun& dev = *ctx.device;
    const float* alpha = weights_.on(dev, {{alpha_.data(), alpha_.size()}})[0];
    Value y = dev.make(x.shape, "PReLU");
    dev.call("PReLU '" + name + "'", [&](char* err, std::size_t len) {
      return dev.table().broadcast_op(dev.ordinal(), RECUR_GPU_BCAST_PRELU, x.device->data(), static_cast<std::int32_t>(r + 1),
                                      dims.data(), strides.data(), alpha, nullptr, y.device->data(), err, len);
    });
    y.mask = x.mask;
    out = {std::move(y)};
    return true;
  }
  std::string stream_rule(const std::vector<bool>& stepped_in, bool has_init, std::vector<bool>& stepped_out) const override {
    if (!stepped_in.empty() && stepped_in[0] && !per_step) {
      stepped_out.assign(stepped_out.size(), true);
      return "its alpha differs along the timesteps axis (shared_axes does not hold axis 1)";
    }
    return Op::stream_rule(stepped_in, has_init, stepped_out);
  }
  std::size_t num_weights() const override { return 1; }
  std::uint64_t weight_floats() const override { return alpha_.size(); }
  void load(std::vector<StoredWeight>& w, bool, const std::string& where) override {
    alpha_ = take_weight(w, alpha_shape_, where);
    weights_.reset();
  }
  void load_keras(const io::H5File& h5, const std::string& object, const std::string& file) override {
    auto w = read_vars(h5, object, file, 2 * weight_floats() + 16);
    check_count(w, num_weights(), file + ": model.weights.h5:/" + object, name);
    load(w, false, file + ": model.weights.h5:/" + object);
  }

 private:
  std::vector<int> shared_;
  json shown_;
  std::vector<std::int64_t> alpha_shape_;
  std::vector<char> shared_mask_;
  std::vector<float> alpha_;
  DeviceWeights weights_;
};

}  // namespace

void register_activation_layers(OpTable& t) {
  t.add({"Activation"}, [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<ActivationOp>(e.at("config"), ctx.dialect);
  });
  t.add({"ReLU"}, [](const json& e, const BuildContext&, const std::string&) { return make_relu(e.at("config")); });
  t.add({"LeakyReLU"}, [](const json& e, const BuildContext& ctx, const std::string&) { return make_leaky_relu(e.at("config"), ctx.dialect); });
  t.add({"ELU"}, [](const json& e, const BuildContext&, const std::string&) { return make_elu(e.at("config")); });
  t.add({"ThresholdedReLU"}, [](const json& e, const BuildContext&, const std::string&) { return make_thresholded_relu(e.at("config")); });
  t.add({"Softmax"}, [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<SoftmaxOp>(e.at("config"), ctx.dialect, ctx.legacy_h5);
  });
  t.add({"PReLU"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<PReluOp>(e.at("config"));
  });
}

}  // namespace recur::graph
