// SPDX-License-Identifier: Apache-2.0
// Keras's convolution layers.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>

#include "io/json_int.hpp"
#include "io/keras_entry.hpp"
#include "io/printable.hpp"
#include "model/layers/layer_util.hpp"
#include "model/layers/registry.hpp"
#include "recur/activations.hpp"
#include "recur/error.hpp"
#include "recur/keras_json.hpp"
#include "recur/limits.hpp"
#include "recur/weights.hpp"

namespace recur::graph {
namespace {

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
    if (s_ != 1) return "strides=" + std::to_string(s_) + " (only a causal Conv1D with strides 1 streams)";
    if (padding_ != "causal")
      return "padding='" + padding_ + "' " + (padding_ == "same" ? "reads later steps" : "gives fewer steps than it reads") +
             " (only padding='causal' streams)";
    return "";
  }
  // `To` output steps of x with `pad` zero steps before it.
  Value convolve(const Value& x, Index To, Index pad) const {
    const Index B = x.shape[0], T = x.shape[1];
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
    return y;
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

}  // namespace

void register_convolutional_layers(OpTable& t) {
  t.add({"Conv1D", "Convolution1D"}, [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<Conv1DOp>(e.at("config"), ctx.dialect);
  });
}

}  // namespace recur::graph
