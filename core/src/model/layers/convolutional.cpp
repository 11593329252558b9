// SPDX-License-Identifier: Apache-2.0
// Keras's convolution layers.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <optional>

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

// Conv1D, and the depthwise and separable 1D convolutions built on the same grouped convolution:
// DepthwiseConv1D is a convolution with one group per input channel (Keras's depthwise kernel
// (k, channels, depth_multiplier) is the grouped kernel's layout), SeparableConv1D that without
// bias or activation followed by a pointwise (kernel_size 1) convolution.
enum class ConvKind { plain, depthwise, separable };

class Conv1DOp : public Op {
 public:
  Conv1DOp(const json& cfg, const DialectInfo& d, ConvKind kind) : kind_(kind) {
    who_ = kind == ConvKind::plain ? "Conv1D" : kind == ConvKind::depthwise ? "DepthwiseConv1D" : "SeparableConv1D";
    const char* w = who_.c_str();
    filters_ = kind == ConvKind::depthwise ? 1 : int_of(cfg, "filters", 0);
    k_ = int_of(cfg, "kernel_size", 0);
    s_ = int_of(cfg, "strides", 1);
    d_ = int_of(cfg, "dilation_rate", 1);
    groups_ = kind == ConvKind::plain ? int_of(cfg, "groups", 1) : 1;
    dm_ = kind == ConvKind::plain ? 1 : int_of(cfg, "depth_multiplier", 1);
    padding_ = str_of(cfg, "padding", "valid");
    std::transform(padding_.begin(), padding_.end(), padding_.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    use_bias_ = bool_of(cfg, "use_bias", true);
    act_ = activation_of(cfg, d);
    if (filters_ <= 0 || k_ <= 0 || s_ <= 0 || d_ <= 0 || groups_ <= 0)
      fail(Code::invalid_argument, w, ": filters, kernel_size, strides, dilation_rate and groups must be positive");
    if (dm_ <= 0) fail(Code::invalid_argument, w, ": depth_multiplier must be positive, got ", dm_);
    if (s_ > 1 && d_ > 1) fail(Code::invalid_argument, w, ": strides > 1 with dilation_rate > 1 (Keras refuses it too)");
    if (padding_ != "valid" && padding_ != "same" && padding_ != "causal")
      fail(Code::invalid_argument, "padding: expected 'valid', 'same' or 'causal', got '", padding_, "'");
    // Keras 2's DepthwiseConv1D and Keras 3's depthwise and separable layers refuse causal padding.
    if (padding_ == "causal" && kind != ConvKind::plain && (kind == ConvKind::depthwise || d.dialect == Dialect::keras3))
      fail(Code::invalid_argument, w, ": padding='causal' (Keras accepts only 'valid' or 'same' here)");
    if (str_of(cfg, "data_format", "channels_last") != "channels_last")
      fail(Code::unsupported, w, ": data_format='channels_first'");
    if (filters_ % groups_) fail(Code::invalid_argument, w, ": filters must be a multiple of groups");
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
    const char* w = who_.c_str();
    check_rank(in, 1, 3, w);
    if (in[0].dims.size() != 3) fail(Code::shape, w, ": expected (batch, steps, channels), got ", spec_string(in[0]));
    const Index c = known_last(in[0], w);
    if (kind_ == ConvKind::plain && c % groups_) fail(Code::shape, w, ": ", c, " input channels are not a multiple of groups=", groups_);
    if (cin_ && c != cin_) fail(Code::shape, w, ": built for ", cin_, " channels, called on ", spec_string(in[0]));
    if (!cin_) {
      // The grouped convolution's shape: one group per channel for the depthwise kinds.
      const Index groups = kind_ == ConvKind::plain ? groups_ : c;
      const double conv_out = kind_ == ConvKind::plain ? double(filters_) : double(c) * dm_;
      const double pointwise = kind_ == ConvKind::separable ? conv_out * filters_ : 0.0;
      const double out = kind_ == ConvKind::depthwise ? conv_out : double(filters_);
      ctx.reserve_weights(double(k_) * double(c / groups) * conv_out + pointwise + out,
                          who_ + ": kernel_size=" + std::to_string(k_) + ", " + std::to_string(c) + " channels, depth_multiplier=" +
                              std::to_string(dm_) + " and filters=" + std::to_string(filters_));
      cin_ = c;
      cgroups_ = groups;
      cout_ = static_cast<Index>(conv_out);
      kernel_.assign(static_cast<std::size_t>(k_) * static_cast<std::size_t>(c / groups) * static_cast<std::size_t>(cout_), 0.0f);
      if (kind_ == ConvKind::separable) pointwise_.assign(static_cast<std::size_t>(cout_) * static_cast<std::size_t>(filters_), 0.0f);
      bias_.assign(static_cast<std::size_t>(outputs()), 0.0f);
    }
    Spec s = in[0];
    s.dims[1] = in[0].dims[1] < 0 ? -1 : geometry(in[0].dims[1]).first;
    if (in[0].dims[1] >= 0 && s.dims[1] <= 0) fail(Code::shape, w, ": ", in[0].dims[1], " steps are fewer than the kernel spans");
    s.dims[2] = outputs();
    set_once(per_step, k_ == 1 && s_ == 1);
    return {s};
  }
  std::vector<Value> forward(const CallInputs& in, RunContext& ctx, int site) const override {
    const Value& x = *in.main[0];
    const Index span = static_cast<Index>(k_ - 1) * d_;
    if (!ctx.stream || !ctx.stepped || span == 0) {
      const auto [To, pad] = geometry(x.shape[1]);
      return {convolve(x, To, pad)};
    }
    // A streamed piece of a causal convolution: its past is the last `span` input steps the
    // stream has seen at this call site (zeros before the first, as causal padding gives).
    const Index B = x.shape[0], T = x.shape[1];
    Value& past = ctx.stream->history[{static_cast<const Op*>(this), site}];
    if (past.shape != std::vector<Index>{B, span, cin_}) past = make_value({B, span, cin_}, "Conv1D history");
    download_to_host(past);  // kept on a GPU by an earlier piece
    Value joined = make_value({B, span + T, cin_}, "Conv1D");
    join_values({&past, &x}, 1, joined);
    Value y = convolve(joined, T, 0);
    Value kept = make_value({B, span, cin_}, "Conv1D history");
    for (Index b = 0; b < B; ++b)
      std::copy_n(joined.data.data() + (b * (span + T) + T) * cin_, span * cin_, kept.data.data() + b * span * cin_);
    past = std::move(kept);
    return {std::move(y)};
  }
  // Causal with stride 1 streams (each output step reads only earlier inputs); k=1 is per step.
  std::string stream_rule(const std::vector<bool>& stepped_in, bool, std::vector<bool>& stepped_out) const override {
    stepped_out.assign(stepped_out.size(), !stepped_in.empty() && stepped_in[0]);
    if (stepped_in.empty() || !stepped_in[0] || per_step) return "";
    if (s_ != 1) return "strides=" + std::to_string(s_) + " (only a causal " + who_ + " with strides 1 streams)";
    if (padding_ != "causal")
      return "padding='" + padding_ + "' " + (padding_ == "same" ? "reads later steps" : "gives fewer steps than it reads") +
             " (only padding='causal' streams)";
    return "";
  }
  // `To` output steps of x with `pad` zero steps before it.
  Value convolve(const Value& x, Index To, Index pad) const {
    const Index B = x.shape[0], T = x.shape[1];
    if (To <= 0) fail(Code::shape, who_, " '", name, "': ", T, " steps are fewer than the kernel spans");
    Value y = make_value({B, To, cout_}, who_.c_str());
    const Index cg = cin_ / cgroups_, fg = cout_ / cgroups_;
    for (Index b = 0; b < B; ++b)
      for (Index t = 0; t < To; ++t) {
        float* out = y.data.data() + (b * To + t) * cout_;
        for (Index o = 0; o < cout_; ++o) out[o] = 0.0f;
        for (Index kk = 0; kk < k_; ++kk) {
          const Index src = t * s_ + kk * d_ - pad;
          if (src < 0 || src >= T) continue;
          const float* xi = x.data.data() + (b * T + src) * cin_;
          const float* w = kernel_.data() + kk * cg * cout_;
          for (Index g = 0; g < cgroups_; ++g)
            for (Index c = 0; c < cg; ++c) {
              const float v = xi[g * cg + c];
              const float* wr = w + c * cout_ + g * fg;
              for (Index o = 0; o < fg; ++o) out[g * fg + o] += v * wr[o];
            }
        }
      }
    if (kind_ == ConvKind::separable) {
      Value z = make_value({B, To, filters_}, who_.c_str());
      for (Index r = 0; r < B * To; ++r) {
        const float* in = y.data.data() + r * cout_;
        float* out = z.data.data() + r * filters_;
        for (Index o = 0; o < filters_; ++o) out[o] = 0.0f;
        for (Index c = 0; c < cout_; ++c) {
          const float* wr = pointwise_.data() + c * filters_;
          for (Index o = 0; o < filters_; ++o) out[o] += in[c] * wr[o];
        }
      }
      y = std::move(z);
    }
    const Index F = outputs();
    if (use_bias_)
      for (Index r = 0; r < B * To; ++r)
        for (Index o = 0; o < F; ++o) y.data[static_cast<std::size_t>(r * F + o)] += bias_[static_cast<std::size_t>(o)];
    apply_activation(act_, y.data.data(), B * To, F);
    return y;
  }
  std::string device_rule() const override { return ""; }
  // What forward convolves, whole or a streamed piece after its past: convolve's loops, one output
  // element per device thread; the separable kind's pointwise step is a second, 1-tap convolution
  // of the depthwise result, as convolve does it.
  bool forward_device(const CallInputs& in, RunContext& ctx, int site, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    const Index B = x.shape[0], T = x.shape[1];
    if (x.shape[2] != cin_) return false;
    DeviceRun& dev = *ctx.device;
    const std::string what = who_ + " '" + name + "'";
    // A streamed piece of a causal convolution, as forward: after the last `span` steps the stream
    // has seen (zeros before the first), which stay on the GPU for the next piece.
    const Index span = static_cast<Index>(k_ - 1) * d_;
    std::optional<Value> joined;
    if (ctx.stream && ctx.stepped && span > 0) {
      Value past;
      const auto it = ctx.stream->history.find({static_cast<const Op*>(this), site});
      if (it != ctx.stream->history.end() && it->second.shape == std::vector<Index>{B, span, cin_}) {
        past = it->second;  // the stream keeps its own until the step has run
        dev.to_device(past, what + ": the stream's past steps");
      } else {
        std::vector<Value> zeros;
        if (!elementwise_on_device(dev, RECUR_GPU_OP_COPY, {FoldArg{}}, {B, span, cin_}, what, zeros)) return false;
        past = std::move(zeros[0]);
      }
      std::vector<Value> parts;
      if (!join_on_device(dev, {&past, &x}, 1, {B, span + T, cin_}, what, parts)) return false;
      joined = std::move(parts[0]);
    }
    const Value& src = joined ? *joined : x;
    const Index Ts = src.shape[1];
    // (No structured binding: C++17 lambdas cannot capture one.)
    const auto geo = joined ? std::make_pair(T, Index{0}) : geometry(T);
    const Index To = geo.first, pad = geo.second;
    if (To <= 0) return false;  // forward fails with its message
    const auto w = weights_.on(dev, {{kernel_.data(), kernel_.size()},
                                     {pointwise_.data(), pointwise_.size()},
                                     {bias_.data(), bias_.size()}});
    const float* bias = use_bias_ ? w[2] : nullptr;
    const auto act = static_cast<std::int32_t>(act_.kind), hs = static_cast<std::int32_t>(act_.hard_sigmoid);
    const bool separable = kind_ == ConvKind::separable;
    Value y = dev.make({B, To, outputs()}, who_.c_str());
    Value z = separable ? dev.make({B, To, cout_}, who_.c_str()) : Value{};
    const float* conv_bias = separable ? nullptr : bias;
    const std::int32_t conv_act = separable ? static_cast<std::int32_t>(Activation::linear) : act;
    dev.call(what, [&](char* err, std::size_t len) {
      return dev.table().conv1d(dev.ordinal(), src.device->data(), B, Ts, cin_, w[0], k_, cgroups_, cout_, conv_bias, s_, d_, pad,
                                To, conv_act, hs, (separable ? z : y).device->data(), err, len);
    });
    if (separable)
      dev.call(what, [&](char* err, std::size_t len) {
        return dev.table().conv1d(dev.ordinal(), z.device->data(), B, To, cout_, w[1], 1, 1, filters_, bias, 1, 1, 0, To, act,
                                  hs, y.device->data(), err, len);
      });
    if (joined) {
      std::optional<Value> kept = dev.gather(*joined, {B, span, cin_}, {(span + T) * cin_, cin_, 1}, T * cin_,
                                             {B, span, cin_}, what);
      if (!kept) return false;
      ctx.stream->history[{static_cast<const Op*>(this), site}] = std::move(*kept);
    }
    out = {std::move(y)};  // no mask passes (as forward)
    return true;
  }
  std::size_t num_weights() const override { return (kind_ == ConvKind::separable ? 2 : 1) + (use_bias_ ? 1 : 0); }
  std::uint64_t weight_floats() const override { return kernel_.size() + pointwise_.size() + bias_.size(); }
  double work(const std::vector<Spec>& main, const std::vector<Spec>& out) const override {
    const double positions = elements(out.at(0)) / double(std::max<Index>(outputs(), 1));
    const double loops = double(k_) * double(cin_ / std::max<Index>(cgroups_, 1) + (pointwise_.empty() ? 0 : 1));
    return positions * (double(kernel_.size() + pointwise_.size()) * kVectorMacWork + loops * kLoopWork) + Op::work(main, out);
  }
  void load(std::vector<StoredWeight>& w, bool, const std::string& where) override {
    if (kind_ == ConvKind::plain) {
      kernel_ = take_weight(w, {k_, cin_ / groups_, filters_}, where);
    } else {
      kernel_ = take_weight(w, {k_, cin_, dm_}, where);  // depthwise_kernel
      if (kind_ == ConvKind::separable) pointwise_ = take_weight(w, {1, cout_, filters_}, where);
    }
    if (use_bias_) bias_ = take_weight(w, {outputs()}, where);
    weights_.reset();
  }
  void load_keras(const io::H5File& h5, const std::string& object, const std::string& file) override {
    auto w = read_vars(h5, object, file, 2 * weight_floats() + 16);
    check_count(w, num_weights(), file + ": model.weights.h5:/" + object, name);
    load(w, false, file + ": model.weights.h5:/" + object);
  }

 private:
  Index outputs() const { return kind_ == ConvKind::depthwise ? cout_ : filters_; }
  ConvKind kind_;
  std::string who_;
  int filters_ = 0, k_ = 0, s_ = 1, d_ = 1, groups_ = 1, dm_ = 1;
  std::string padding_;
  bool use_bias_ = true;
  ActivationFn act_;
  Index cin_ = 0, cgroups_ = 1, cout_ = 0;  // input channels; the grouped convolution's groups and outputs
  std::vector<float> kernel_, pointwise_, bias_;
  DeviceWeights weights_;
};

// Conv1DTranspose: the gradient of a Conv1D with the same kernel, strides, padding and dilation
// (TensorFlow's conv1d_transpose): input step t adds x[t] * kernel[k] to output step
// t * strides + k * dilation_rate - pad, the output's length from Keras's deconv_output_length.
// Keras's kernel is (kernel_size, filters, channels). It drops the mask and does not stream.
class Conv1DTransposeOp : public Op {
 public:
  Conv1DTransposeOp(const json& cfg, const DialectInfo& d) {
    filters_ = int_of(cfg, "filters", 0);
    k_ = int_of(cfg, "kernel_size", 0);
    s_ = int_of(cfg, "strides", 1);
    d_ = int_of(cfg, "dilation_rate", 1);
    op_ = int_of(cfg, "output_padding", -1);  // -1: None
    padding_ = str_of(cfg, "padding", "valid");
    std::transform(padding_.begin(), padding_.end(), padding_.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    use_bias_ = bool_of(cfg, "use_bias", true);
    act_ = activation_of(cfg, d);
    if (filters_ <= 0 || k_ <= 0 || s_ <= 0 || d_ <= 0)
      fail(Code::invalid_argument, "Conv1DTranspose: filters, kernel_size, strides and dilation_rate must be positive");
    if (padding_ != "valid" && padding_ != "same")
      fail(Code::invalid_argument, "padding: expected 'valid' or 'same' (Conv1DTranspose), got '", io::printable(padding_), "'");
    if (op_ < -1 || (op_ >= 0 && op_ >= s_))
      fail(Code::invalid_argument, "Conv1DTranspose: output_padding must be at least 0 and less than strides=", s_, ", got ", op_);
    if (s_ > 1 && d_ > 1) fail(Code::invalid_argument, "Conv1DTranspose: strides > 1 with dilation_rate > 1 (Keras refuses it too)");
    if (str_of(cfg, "data_format", "channels_last") != "channels_last")
      fail(Code::unsupported, "Conv1DTranspose: data_format='channels_first'");
  }
  // Output length and the padding the matching Conv1D would put before its first step.
  std::pair<Index, Index> geometry(Index T) const {
    const Index span = static_cast<Index>(k_ - 1) * d_ + 1;
    Index out = 0;
    if (op_ < 0) out = padding_ == "same" ? T * s_ : T * s_ + std::max<Index>(span - s_, 0);
    else out = (T - 1) * s_ + span - 2 * (padding_ == "same" ? span / 2 : 0) + op_;
    if (padding_ == "valid") return {out, 0};
    return {out, std::max<Index>((T - 1) * s_ + span - out, 0) / 2};
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext& ctx) override {
    check_rank(in, 1, 3, "Conv1DTranspose");
    if (in[0].dims.size() != 3) fail(Code::shape, "Conv1DTranspose: expected (batch, steps, channels), got ", spec_string(in[0]));
    const Index c = known_last(in[0], "Conv1DTranspose");
    if (cin_ && c != cin_) fail(Code::shape, "Conv1DTranspose: built for ", cin_, " channels, called on ", spec_string(in[0]));
    if (!cin_) {
      ctx.reserve_weights((double(k_) * double(c) + 1) * filters_,
                          "Conv1DTranspose: kernel_size=" + std::to_string(k_) + ", " + std::to_string(c) + " channels and filters=" +
                              std::to_string(filters_));
      cin_ = c;
      kernel_.assign(static_cast<std::size_t>(k_) * static_cast<std::size_t>(filters_) * static_cast<std::size_t>(c), 0.0f);
      bias_.assign(static_cast<std::size_t>(filters_), 0.0f);
    }
    Spec s = in[0];
    s.dims[1] = in[0].dims[1] < 0 ? -1 : geometry(in[0].dims[1]).first;
    if (in[0].dims[1] >= 0 && s.dims[1] <= 0) fail(Code::shape, "Conv1DTranspose: ", in[0].dims[1], " steps give no output steps");
    s.dims[2] = filters_;
    set_once(per_step, k_ == 1 && s_ == 1 && op_ <= 0);
    return {s};
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const Value& x = *in.main[0];
    const Index B = x.shape[0], T = x.shape[1];
    const auto [To, pad] = geometry(T);
    if (To <= 0) fail(Code::shape, "Conv1DTranspose '", name, "': ", T, " steps give no output steps");
    Value y = make_value({B, To, filters_}, "Conv1DTranspose");
    for (Index b = 0; b < B; ++b) {
      float* out = y.data.data() + b * To * filters_;
      for (Index t = 0; t < T; ++t) {
        const float* xi = x.data.data() + (b * T + t) * cin_;
        for (Index kk = 0; kk < k_; ++kk) {
          const Index dst = t * s_ + kk * d_ - pad;
          if (dst < 0 || dst >= To) continue;
          float* o = out + dst * filters_;
          const float* w = kernel_.data() + kk * filters_ * cin_;
          for (Index f = 0; f < filters_; ++f) {
            float acc = 0.0f;
            for (Index c = 0; c < cin_; ++c) acc += xi[c] * w[f * cin_ + c];
            o[f] += acc;
          }
        }
      }
    }
    if (use_bias_)
      for (Index r = 0; r < B * To; ++r)
        for (Index f = 0; f < filters_; ++f) y.data[static_cast<std::size_t>(r * filters_ + f)] += bias_[static_cast<std::size_t>(f)];
    apply_activation(act_, y.data.data(), B * To, filters_);
    return {std::move(y)};
  }
  std::string device_rule() const override { return ""; }
  // Each output element gathers the taps forward scatters into it, in forward's order.
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    const Index B = x.shape[0], T = x.shape[1];
    if (x.shape[2] != cin_) return false;
    const auto geo = geometry(T);  // (no structured binding: C++17 lambdas cannot capture one)
    const Index To = geo.first, pad = geo.second;
    if (To <= 0) return false;  // forward fails with its message
    DeviceRun& dev = *ctx.device;
    const auto w = weights_.on(dev, {{kernel_.data(), kernel_.size()}, {bias_.data(), bias_.size()}});
    Value y = dev.make({B, To, filters_}, "Conv1DTranspose");
    dev.call("Conv1DTranspose '" + name + "'", [&](char* err, std::size_t len) {
      return dev.table().conv1d_transpose(dev.ordinal(), x.device->data(), B, T, cin_, w[0], k_, filters_,
                                          use_bias_ ? w[1] : nullptr, s_, d_, pad, To, static_cast<std::int32_t>(act_.kind),
                                          static_cast<std::int32_t>(act_.hard_sigmoid), y.device->data(), err, len);
    });
    out = {std::move(y)};  // no mask passes (as forward)
    return true;
  }
  std::size_t num_weights() const override { return use_bias_ ? 2 : 1; }
  std::uint64_t weight_floats() const override { return kernel_.size() + bias_.size(); }
  double work(const std::vector<Spec>& main, const std::vector<Spec>& out) const override {
    // Each input position meets every kernel weight.
    const double positions = elements(main.at(0)) / double(std::max<Index>(cin_, 1));
    return positions * double(kernel_.size()) * kScalarMacWork + Op::work(main, out);
  }
  void load(std::vector<StoredWeight>& w, bool, const std::string& where) override {
    kernel_ = take_weight(w, {k_, filters_, cin_}, where);
    if (use_bias_) bias_ = take_weight(w, {filters_}, where);
    weights_.reset();
  }
  void load_keras(const io::H5File& h5, const std::string& object, const std::string& file) override {
    auto w = read_vars(h5, object, file, 2 * weight_floats() + 16);
    check_count(w, num_weights(), file + ": model.weights.h5:/" + object, name);
    load(w, false, file + ": model.weights.h5:/" + object);
  }

 private:
  int filters_ = 0, k_ = 0, s_ = 1, d_ = 1, op_ = -1;
  std::string padding_;
  bool use_bias_ = true;
  ActivationFn act_;
  Index cin_ = 0;
  std::vector<float> kernel_, bias_;
  DeviceWeights weights_;
};

}  // namespace

void register_convolutional_layers(OpTable& t) {
  t.add({"Conv1D", "Convolution1D"}, [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<Conv1DOp>(e.at("config"), ctx.dialect, ConvKind::plain);
  });
  t.add({"DepthwiseConv1D"}, [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<Conv1DOp>(e.at("config"), ctx.dialect, ConvKind::depthwise);
  });
  t.add({"SeparableConv1D", "SeparableConvolution1D"}, [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<Conv1DOp>(e.at("config"), ctx.dialect, ConvKind::separable);
  });
  t.add({"Conv1DTranspose", "Convolution1DTranspose"}, [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<Conv1DTransposeOp>(e.at("config"), ctx.dialect);
  });
}

}  // namespace recur::graph
