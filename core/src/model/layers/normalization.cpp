// SPDX-License-Identifier: Apache-2.0
// Keras's normalization layers: LayerNormalization, BatchNormalization (inference: moving statistics),
// UnitNormalization, RMSNormalization, GroupNormalization.
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

// One normalize call on the run's GPU: x (batch, positions, channels) grouped as the kind says.
Value normalize_on_device(DeviceRun& dev, const Value& x, std::int32_t kind, Index batch, Index positions, Index channels,
                          Index groups, float eps, const float* gamma, const float* beta, const std::string& who) {
  Value y = dev.make(x.shape, "a normalization");
  dev.call(who, [&](char* err, std::size_t len) {
    return dev.table().normalize(dev.ordinal(), kind, x.device->data(), batch, positions, channels, groups, eps, gamma, beta,
                                 y.device->data(), err, len);
  });
  return y;
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
  std::string device_rule() const override { return ""; }
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    DeviceRun& dev = *ctx.device;
    const auto w = weights_.on(dev, {{gamma_.data(), gamma_.size()}, {beta_.data(), beta_.size()}});
    Value y = normalize_on_device(dev, x, RECUR_GPU_NORM_LAYER, product(x.shape) / group_, 1, group_, 1, eps_,
                                  scale_ ? w[0] : nullptr, center_ ? w[1] : nullptr, "LayerNormalization '" + name + "'");
    y.mask = x.mask;
    out = {std::move(y)};
    return true;
  }
  std::size_t num_weights() const override { return (scale_ ? 1 : 0) + (center_ ? 1 : 0); }
  std::uint64_t weight_floats() const override { return 2 * static_cast<std::uint64_t>(group_); }
  void load(std::vector<StoredWeight>& w, bool, const std::string& where) override {
    std::vector<std::int64_t> shape(wshape_.begin(), wshape_.end());
    if (scale_) gamma_ = take_weight(w, shape, where);
    if (center_) beta_ = take_weight(w, shape, where);
    weights_.reset();
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
  DeviceWeights weights_;
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
    std::vector<float> inv, off;
    fold(inv, off);
    for (std::size_t k = 0; k < y.data.size(); ++k) {
      const std::size_t c = static_cast<std::size_t>((static_cast<Index>(k) / inner) % channels_);
      y.data[k] = y.data[k] * inv[c] + off[c];
    }
    return {std::move(y)};
  }
  std::string device_rule() const override { return ""; }
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    DeviceRun& dev = *ctx.device;
    const int rank = static_cast<int>(x.shape.size());
    const std::size_t ax = static_cast<std::size_t>(axis_ < 0 ? axis_ + rank : axis_);
    // The folded scale and offset go up once (on() reads them only when it uploads).
    std::vector<float> inv, off;
    fold(inv, off);
    const auto w = weights_.on(dev, {{inv.data(), inv.size()}, {off.data(), off.size()}});
    const std::int64_t dims[3] = {product(x.shape, 0, ax), channels_, product(x.shape, ax + 1)};
    const std::int64_t strides[3] = {0, 1, 0};
    Value y = dev.make(x.shape, "BatchNormalization");
    dev.call("BatchNormalization '" + name + "'", [&](char* err, std::size_t len) {
      return dev.table().broadcast_op(dev.ordinal(), RECUR_GPU_BCAST_AFFINE, x.device->data(), 3, dims, strides, w[0], w[1],
                                      y.device->data(), err, len);
    });
    y.mask = x.mask;
    out = {std::move(y)};
    return true;
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
    weights_.reset();
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
  // tf.nn.batch_normalization: inv = rsqrt(var + eps) * gamma; x * inv + (beta - mean * inv).
  void fold(std::vector<float>& inv, std::vector<float>& off) const {
    inv.assign(static_cast<std::size_t>(channels_), 0.0f);
    off.assign(static_cast<std::size_t>(channels_), 0.0f);
    for (Index c = 0; c < channels_; ++c) {
      const std::size_t i = static_cast<std::size_t>(c);
      inv[i] = 1.0f / std::sqrt(var_[i] + eps_);
      if (scale_) inv[i] *= gamma_[i];
      off[i] = center_ ? beta_[i] - mean_[i] * inv[i] : -mean_[i] * inv[i];
    }
  }

  Index channels_ = 0;
  std::vector<float> gamma_, beta_, mean_, var_;
  DeviceWeights weights_;
};

// The trailing axes `given` names for an input of `in`'s shape, as (rows, values per row), or
// Error naming `who`: recur normalizes over trailing axes only.
std::pair<int, Index> trailing_group(const std::vector<int>& given, const Spec& in, const char* who) {
  const int rank = static_cast<int>(in.dims.size());
  std::vector<int> ax = normalized_axes(given, in.dims.size(), who, json(given));
  std::sort(ax.begin(), ax.end());
  Index g = 1;
  for (std::size_t i = 0; i < ax.size(); ++i) {
    if (ax[i] != rank - static_cast<int>(ax.size()) + static_cast<int>(i) || ax[i] <= 0)
      fail(Code::unsupported, who, ": recur normalizes over the trailing axes, not axis ", io::excerpt(json(given)), " of ",
           spec_string(in));
    const Index d = in.dims[static_cast<std::size_t>(ax[i])];
    if (d <= 0) fail(Code::shape, who, ": the normalized axes must be known, got ", spec_string(in));
    g *= d;
  }
  return {static_cast<int>(ax.size()), g};
}

// UnitNormalization: x / ||x|| over the axes; masks pass. Keras 3: x * min(rsqrt(sum x^2), 1e12);
// Keras 2 (tf.linalg.l2_normalize): x * rsqrt(max(sum x^2, 1e-12)).
class UnitNormOp : public Op {
 public:
  UnitNormOp(const json& cfg, const DialectInfo& d) : axes_(axes_of(cfg, -1)), keras3_(d.dialect == Dialect::keras3) {}
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    check_rank(in, 1, 2, "UnitNormalization");
    const auto [nax, g] = trailing_group(axes_, in[0], "UnitNormalization");
    set_once(group_, g);
    set_once(per_step, nax == 1 && in[0].dims.size() == 3);
    return in;
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    Value y = *in.main[0];
    const Index rows = static_cast<Index>(y.data.size()) / group_;
    for (Index r = 0; r < rows; ++r) {
      float* x = y.data.data() + r * group_;
      float ss = 0.0f;
      for (Index j = 0; j < group_; ++j) ss += x[j] * x[j];
      const float inv = keras3_ ? std::min(1.0f / std::sqrt(ss), 1e12f) : 1.0f / std::sqrt(std::max(ss, 1e-12f));
      for (Index j = 0; j < group_; ++j) x[j] *= inv;
    }
    return {std::move(y)};
  }
  std::string device_rule() const override { return ""; }
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    Value y = normalize_on_device(*ctx.device, x, keras3_ ? RECUR_GPU_NORM_UNIT_KERAS3 : RECUR_GPU_NORM_UNIT_KERAS2,
                                  product(x.shape) / group_, 1, group_, 1, 0.0f, nullptr, nullptr,
                                  "UnitNormalization '" + name + "'");
    y.mask = x.mask;
    out = {std::move(y)};
    return true;
  }

 private:
  std::vector<int> axes_;
  bool keras3_;
  Index group_ = 0;
};

// RMSNormalization (Keras 3): x * rsqrt(mean(x^2) + epsilon) * scale over the axes. It does not
// support masking, so no mask comes out.
class RMSNormOp : public Op {
 public:
  explicit RMSNormOp(const json& cfg) : axes_(axes_of(cfg, -1)), eps_(static_cast<float>(num_of(cfg, "epsilon", 1e-6))) {
    if (!std::isfinite(eps_) || eps_ < 0)
      fail(Code::invalid_argument, "RMSNormalization: epsilon: expected a number >= 0, got ", io::excerpt(cfg["epsilon"]));
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext& ctx) override {
    check_rank(in, 1, 2, "RMSNormalization");
    const auto [nax, g] = trailing_group(axes_, in[0], "RMSNormalization");
    if (group_ && g != group_) fail(Code::shape, "RMSNormalization: built for ", group_, " values, called on ", spec_string(in[0]));
    if (!group_) {
      ctx.reserve_weights(static_cast<double>(g), "RMSNormalization: " + std::to_string(g) + " normalized values");
      group_ = g;
      for (std::size_t i = in[0].dims.size() - static_cast<std::size_t>(nax); i < in[0].dims.size(); ++i) wshape_.push_back(in[0].dims[i]);
      scale_.assign(static_cast<std::size_t>(g), 1.0f);
    }
    set_once(per_step, nax == 1 && in[0].dims.size() == 3);
    return in;
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    Value y = *in.main[0];
    y.mask.reset();
    const Index rows = static_cast<Index>(y.data.size()) / group_;
    for (Index r = 0; r < rows; ++r) {
      float* x = y.data.data() + r * group_;
      float ss = 0.0f;
      for (Index j = 0; j < group_; ++j) ss += x[j] * x[j];
      const float rrms = 1.0f / std::sqrt(ss / static_cast<float>(group_) + eps_);
      for (Index j = 0; j < group_; ++j) x[j] = x[j] * rrms * scale_[static_cast<std::size_t>(j)];
    }
    return {std::move(y)};
  }
  std::string device_rule() const override { return ""; }
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    DeviceRun& dev = *ctx.device;
    const float* scale = weights_.on(dev, {{scale_.data(), scale_.size()}})[0];
    out = {normalize_on_device(dev, x, RECUR_GPU_NORM_RMS, product(x.shape) / group_, 1, group_, 1, eps_, scale, nullptr,
                               "RMSNormalization '" + name + "'")};  // no mask, as forward
    return true;
  }
  std::size_t num_weights() const override { return 1; }
  std::uint64_t weight_floats() const override { return static_cast<std::uint64_t>(group_); }
  void load(std::vector<StoredWeight>& w, bool, const std::string& where) override {
    scale_ = take_weight(w, std::vector<std::int64_t>(wshape_.begin(), wshape_.end()), where);
    weights_.reset();
  }
  void load_keras(const io::H5File& h5, const std::string& object, const std::string& file) override {
    auto w = read_vars(h5, object, file, weight_floats() + 16);
    check_count(w, num_weights(), file + ": model.weights.h5:/" + object, name);
    load(w, false, file + ": model.weights.h5:/" + object);
  }

 private:
  std::vector<int> axes_;
  float eps_;
  Index group_ = 0;
  std::vector<Index> wshape_;
  std::vector<float> scale_;
  DeviceWeights weights_;
};

// GroupNormalization over the last axis: each sample's channels fall into `groups` groups, each
// normalized over all its non-batch positions (every timestep) and its channels. It reads the
// whole sequence, so it does not stream. Keras 3 passes the mask on and leaves it out of the
// statistics; Keras 2 weighs the statistics by the mask broadcast against the input from its last
// axis, which does not fit a (batch, steps) mask on (batch, steps, channels): refused.
class GroupNormOp : public Op {
 public:
  GroupNormOp(const json& cfg, const DialectInfo& d) : keras2_(d.dialect == Dialect::keras2) {
    groups_ = int_of(cfg, "groups", 32);
    const auto axes = axes_of(cfg, -1);
    if (axes.size() != 1) fail(Code::unsupported, "GroupNormalization: one axis, got ", io::excerpt(cfg["axis"]));
    axis_ = axes[0];
    eps_ = static_cast<float>(num_of(cfg, "epsilon", 1e-3));
    center_ = bool_of(cfg, "center", true);
    scale_ = bool_of(cfg, "scale", true);
    if (groups_ == 0 || groups_ < -1) fail(Code::invalid_argument, "GroupNormalization: groups must be positive (or -1: one per channel), got ", groups_);
    if (!(eps_ >= 0.0f) || !std::isfinite(eps_)) fail(Code::invalid_argument, "GroupNormalization: epsilon must be a finite number >= 0");
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext& ctx) override {
    check_rank(in, 1, 2, "GroupNormalization");
    const int rank = static_cast<int>(in[0].dims.size());
    if (axis_ != -1 && axis_ != rank - 1)
      fail(Code::unsupported, "GroupNormalization: axis ", axis_, " of ", spec_string(in[0]), " (recur groups the last axis only)");
    const Index c = known_last(in[0], "GroupNormalization");
    const Index g = groups_ == -1 ? c : groups_;
    if (g > c) fail(Code::shape, "GroupNormalization: groups=", g, " is more than the ", c, " channels");
    if (c % g) fail(Code::shape, "GroupNormalization: the ", c, " channels are not a multiple of groups=", g);
    if (channels_ && c != channels_) fail(Code::shape, "GroupNormalization: built for ", channels_, " channels, called on ", spec_string(in[0]));
    if (!channels_) {
      ctx.reserve_weights(2.0 * c, "GroupNormalization: " + std::to_string(c) + " channels");
      channels_ = c;
      ngroups_ = g;
      gamma_.assign(static_cast<std::size_t>(c), 1.0f);
      beta_.assign(static_cast<std::size_t>(c), 0.0f);
    }
    return in;
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    Value y = *in.main[0];
    if (keras2_ && y.mask && !in.drop_mask)
      fail(Code::unsupported, "GroupNormalization '", name,
           "': a masked input (Keras 2 broadcasts the (batch, steps) mask against the input from its last axis, which does "
           "not fit (batch, steps, channels): Keras 2 fails too)");
    const Index B = y.shape[0], C = channels_, per = C / ngroups_;
    const Index rows = B ? static_cast<Index>(y.data.size()) / (B * C) : 0;  // positions per sample
    for (Index b = 0; b < B; ++b)
      for (Index g = 0; g < ngroups_; ++g) {
        float* x = y.data.data() + b * rows * C + g * per;
        double mean = 0, var = 0;
        for (Index r = 0; r < rows; ++r)
          for (Index j = 0; j < per; ++j) mean += x[r * C + j];
        const double n = static_cast<double>(rows * per);
        mean /= n;
        for (Index r = 0; r < rows; ++r)
          for (Index j = 0; j < per; ++j) var += (x[r * C + j] - mean) * (x[r * C + j] - mean);
        var /= n;
        const float m = static_cast<float>(mean);
        const float inv0 = 1.0f / std::sqrt(static_cast<float>(var) + eps_);
        for (Index j = 0; j < per; ++j) {
          const std::size_t ch = static_cast<std::size_t>(g * per + j);
          const float inv = scale_ ? inv0 * gamma_[ch] : inv0;
          const float res = (center_ ? beta_[ch] : 0.0f) - m * inv;
          for (Index r = 0; r < rows; ++r) x[r * C + j] = x[r * C + j] * inv + res;
        }
      }
    return {std::move(y)};  // the mask passes on (supports_masking)
  }
  std::string device_rule() const override { return ""; }
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    if (keras2_ && x.mask && !in.drop_mask) return false;  // forward says why it refuses
    DeviceRun& dev = *ctx.device;
    const Index B = x.shape[0], rows = B ? product(x.shape) / (B * channels_) : 0;
    const auto w = weights_.on(dev, {{gamma_.data(), gamma_.size()}, {beta_.data(), beta_.size()}});
    Value y = normalize_on_device(dev, x, RECUR_GPU_NORM_GROUP, B, rows, channels_, ngroups_, eps_, scale_ ? w[0] : nullptr,
                                  center_ ? w[1] : nullptr, "GroupNormalization '" + name + "'");
    y.mask = x.mask;
    out = {std::move(y)};
    return true;
  }
  std::size_t num_weights() const override { return (scale_ ? 1 : 0) + (center_ ? 1 : 0); }
  std::uint64_t weight_floats() const override { return 2 * static_cast<std::uint64_t>(channels_); }
  void load(std::vector<StoredWeight>& w, bool, const std::string& where) override {
    if (scale_) gamma_ = take_weight(w, {channels_}, where);
    if (center_) beta_ = take_weight(w, {channels_}, where);
    weights_.reset();
  }
  void load_keras(const io::H5File& h5, const std::string& object, const std::string& file) override {
    auto w = read_vars(h5, object, file, 2 * weight_floats() + 16);
    check_count(w, num_weights(), file + ": model.weights.h5:/" + object, name);
    load(w, false, file + ": model.weights.h5:/" + object);
  }

 private:
  bool keras2_ = false;
  int groups_ = 32, axis_ = -1;
  float eps_ = 1e-3f;
  bool center_ = true, scale_ = true;
  Index channels_ = 0, ngroups_ = 0;
  std::vector<float> gamma_, beta_;
  DeviceWeights weights_;
};

}  // namespace

void register_normalization_layers(OpTable& t) {
  t.add({"LayerNormalization"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<LayerNormOp>(e.at("config"));
  });
  t.add({"UnitNormalization"}, [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<UnitNormOp>(e.at("config"), ctx.dialect);
  });
  t.add({"RMSNormalization"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<RMSNormOp>(e.at("config"));
  });
  t.add({"BatchNormalization"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<BatchNormOp>(e.at("config"));
  });
  t.add({"GroupNormalization"}, [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<GroupNormOp>(e.at("config"), ctx.dialect);
  });
}

}  // namespace recur::graph
