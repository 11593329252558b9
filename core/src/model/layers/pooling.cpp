// SPDX-License-Identifier: Apache-2.0
// Keras's pooling layers over time: windows (MaxPooling1D, AveragePooling1D), global, and Keras 3's
// adaptive ones.
#include <algorithm>
#include <cctype>
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

// The one (batch, steps, features) input of a pooling op over steps ((batch, features, steps)
// when channels_first), as the spec of its output to fill in.
Spec sequence_input(const std::vector<Spec>& in, const std::string& class_name, bool channels_first) {
  check_rank(in, 1, 3, class_name.c_str());
  if (in[0].dims.size() != 3)
    fail(Code::shape, class_name, ": expected (batch, ", channels_first ? "features, steps" : "steps, features", "), got ",
         spec_string(in[0]));
  Spec s = in[0];
  s.ids = false;
  return s;
}

// GlobalAveragePooling1D / GlobalMaxPooling1D. Keras's global max ignores a mask (Keras 2 and 3
// drop it); the global average weighs the steps by it and hands no mask on (compute_mask: None).
class GlobalPool1DOp : public Op {
 public:
  GlobalPool1DOp(const json& cfg, bool max, const DialectInfo& d) : max_(max), keras2_(d.dialect == Dialect::keras2) {
    channels_first_ = channels_first_of(cfg);
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
    const bool masked = !max_ && x.mask;
    // The mask covers (batch, axis 1). Keras expands it on the features axis and multiplies: with
    // channels_first, axis 1 holds the features, so its mask lands on the steps only when there
    // are as many features as steps (or one feature, broadcast); other shapes fail in Keras too.
    const Index mask_len = x.shape[1];
    if (masked && channels_first_ && mask_len != T && mask_len != 1)
      fail(Code::shape, class_name, " '", name, "': with data_format='channels_first', Keras applies the input's (batch, ",
           mask_len, ") mask along the ", T, " steps; the shapes do not broadcast (Keras fails too)");
    for (Index b = 0; b < B; ++b)
      for (Index f = 0; f < F; ++f) {
        float acc = max_ ? -std::numeric_limits<float>::infinity() : 0.0f, count = 0.0f;
        for (Index t = 0; t < T; ++t) {
          const float v = x.data[static_cast<std::size_t>(channels_first_ ? (b * F + f) * T + t : (b * T + t) * F + f)];
          if (max_) {
            acc = std::max(acc, v);
          } else if (masked) {
            const bool on = (*x.mask)[static_cast<std::size_t>(b * mask_len + (mask_len == 1 ? 0 : t))] != 0;
            // Keras 2 multiplies by the mask (a masked inf or NaN gives NaN); Keras 3 selects.
            if (keras2_) acc += v * (on ? 1.0f : 0.0f);
            else if (on) acc += v;
            count += on ? 1.0f : 0.0f;
          } else {
            acc += v;
          }
        }
        // Keras divides by the mask's sum: a fully masked row gives 0/0 = NaN, as in Keras.
        y.data[static_cast<std::size_t>(b * F + f)] = max_ ? acc : acc / (masked ? count : static_cast<float>(T));
      }
    return {std::move(y)};
  }
  std::string device_rule() const override { return ""; }
  // One window over all the steps: the device loop is forward's, element for element.
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    const Index B = x.shape[0], T = channels_first_ ? x.shape[2] : x.shape[1], F = channels_first_ ? x.shape[1] : x.shape[2];
    const bool masked = !max_ && x.mask;
    const Index mask_len = x.shape[1];
    // The shapes Keras cannot broadcast fail in forward, with its message.
    if (masked && ((channels_first_ && mask_len != T && mask_len != 1) ||
                   x.mask->size() != static_cast<std::size_t>(B * mask_len)))
      return false;
    if (T == 0) return false;  // (an empty window: forward's -inf and 0/0 stay on the host)
    DeviceRun& dev = *ctx.device;
    Value y = dev.make(keepdims_ ? (channels_first_ ? std::vector<Index>{B, F, 1} : std::vector<Index>{B, 1, F})
                                 : std::vector<Index>{B, F},
                       class_name.c_str());
    const std::int32_t kind = max_ ? RECUR_GPU_POOL_MAX
                              : !masked ? RECUR_GPU_POOL_AVERAGE
                              : keras2_ ? RECUR_GPU_POOL_MASKED_MULTIPLY
                                        : RECUR_GPU_POOL_MASKED_SELECT;
    dev.call(class_name + " '" + name + "'", [&](char* err, std::size_t len) {
      return dev.table().pool1d(dev.ordinal(), kind, x.device->data(), B, T, F, channels_first_ ? 1 : 0, T, 1, 0, 1,
                                masked ? x.mask->data() : nullptr, masked ? mask_len : 0, y.device->data(), err, len);
    });
    out = {std::move(y)};
    return true;
  }

 private:
  bool max_, keras2_, channels_first_ = false, keepdims_ = false;
};

// MaxPooling1D / AveragePooling1D: windows of pool_size steps every `strides` steps. "same" pads
// as TensorFlow does (the extra step at the end); the max ignores the padding, the average divides
// by the steps inside the input only. Neither dialect passes a mask through them (Keras 2 drops
// it, Keras 3 warns and drops it).
class Pool1DOp : public Op {
 public:
  Pool1DOp(const json& cfg, bool max) : max_(max) {
    pool_ = int_of(cfg, "pool_size", 2);
    // Keras uses pool_size for strides=None.
    strides_ = cfg.contains("strides") && !cfg["strides"].is_null() ? int_of(cfg, "strides", 0) : pool_;
    if (pool_ <= 0) fail(Code::invalid_argument, "pool_size: expected a positive integer, got ", pool_);
    if (strides_ <= 0) fail(Code::invalid_argument, "strides: expected a positive integer, got ", strides_);
    std::string p = str_of(cfg, "padding", "valid");
    std::transform(p.begin(), p.end(), p.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (p != "valid" && p != "same")
      fail(Code::invalid_argument, "padding: expected 'valid' or 'same', got '", io::printable(p), "'");
    same_ = p == "same";
    channels_first_ = channels_first_of(cfg);
  }
  // Output steps and the padding before the first for T input steps.
  std::pair<Index, Index> geometry(Index T) const {
    if (same_) {
      const Index out = (T + strides_ - 1) / strides_;
      return {out, std::max<Index>((out - 1) * strides_ + pool_ - T, 0) / 2};
    }
    return {T >= pool_ ? (T - pool_) / strides_ + 1 : 0, 0};
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    Spec s = sequence_input(in, class_name, channels_first_);
    const std::size_t axis = channels_first_ ? 2 : 1;
    if (in[0].dims[axis] >= 0) {
      s.dims[axis] = geometry(in[0].dims[axis]).first;
      if (s.dims[axis] <= 0)
        fail(Code::shape, class_name, ": ", in[0].dims[axis], " steps are fewer than pool_size=", pool_, " (padding='valid')");
    }
    return {s};
  }
  double work(const std::vector<Spec>& main, const std::vector<Spec>& out) const override {
    return kElementWork * (elements(main) + elements(out)) + kScalarMacWork * double(pool_) * elements(out);
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const Value& x = *in.main[0];
    const Index B = x.shape[0];
    const Index T = channels_first_ ? x.shape[2] : x.shape[1], F = channels_first_ ? x.shape[1] : x.shape[2];
    const auto [To, pad] = geometry(T);
    if (To <= 0) fail(Code::shape, class_name, " '", name, "': ", T, " steps are fewer than pool_size=", pool_);
    Value y = make_value(channels_first_ ? std::vector<Index>{B, F, To} : std::vector<Index>{B, To, F}, class_name.c_str());
    auto at = [&](const std::vector<Index>& shape, Index b, Index t, Index f) {
      return static_cast<std::size_t>(channels_first_ ? (b * F + f) * shape[2] + t : (b * shape[1] + t) * F + f);
    };
    for (Index b = 0; b < B; ++b)
      for (Index o = 0; o < To; ++o) {
        const Index lo = std::max<Index>(o * strides_ - pad, 0), hi = std::min<Index>(o * strides_ - pad + pool_, T);
        for (Index f = 0; f < F; ++f) {
          float acc = max_ ? -std::numeric_limits<float>::infinity() : 0.0f;
          for (Index t = lo; t < hi; ++t) {
            const float v = x.data[at(x.shape, b, t, f)];
            acc = max_ ? std::max(acc, v) : acc + v;
          }
          y.data[at(y.shape, b, o, f)] = max_ ? acc : acc / static_cast<float>(hi - lo);
        }
      }
    return {std::move(y)};
  }
  std::string device_rule() const override { return ""; }
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    const Index B = x.shape[0];
    const Index T = channels_first_ ? x.shape[2] : x.shape[1], F = channels_first_ ? x.shape[1] : x.shape[2];
    const auto geo = geometry(T);  // (no structured binding: C++17 lambdas cannot capture one)
    const Index To = geo.first, pad = geo.second;
    if (To <= 0) return false;  // forward fails with its message
    DeviceRun& dev = *ctx.device;
    Value y = dev.make(channels_first_ ? std::vector<Index>{B, F, To} : std::vector<Index>{B, To, F}, class_name.c_str());
    dev.call(class_name + " '" + name + "'", [&](char* err, std::size_t len) {
      return dev.table().pool1d(dev.ordinal(), max_ ? RECUR_GPU_POOL_MAX : RECUR_GPU_POOL_AVERAGE, x.device->data(), B, T, F,
                                channels_first_ ? 1 : 0, pool_, strides_, pad, To, nullptr, 0, y.device->data(), err, len);
    });
    out = {std::move(y)};  // no mask passes (see forward)
    return true;
  }

 private:
  bool max_, same_ = false, channels_first_ = false;
  int pool_ = 2, strides_ = 2;
};

// Keras 3's AdaptiveAveragePooling1D / AdaptiveMaxPooling1D: output_size windows over the steps,
// computed as Keras does ("two-pool gather"): window i starts at floor(i * T / out) and, when it
// spans ceil(T / out) + 1 steps, reads that many, else ceil(T / out) steps. The gathered index can
// fall past both pools (where Keras fails or reads fill values): refused. They drop the mask.
class AdaptivePool1DOp : public Op {
 public:
  AdaptivePool1DOp(const json& cfg, bool max) : max_(max) {
    out_ = int_of(cfg, "output_size", 0);
    if (out_ <= 0) fail(Code::invalid_argument, "output_size: expected a positive integer, got ", out_);
    channels_first_ = channels_first_of(cfg);
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    Spec s = sequence_input(in, class_name, channels_first_);
    const std::size_t axis = channels_first_ ? 2 : 1;
    if (in[0].dims[axis] >= 0) windows(in[0].dims[axis]);
    s.dims[axis] = out_;
    return {s};
  }
  // Each output step's first input step and length, for T input steps.
  std::vector<std::pair<Index, Index>> windows(Index T) const {
    const Index small = (T + out_ - 1) / out_, big = small + 1;
    const Index small_len = std::max<Index>(1, T - small + 1), big_len = std::max<Index>(0, T - big + 1);
    std::vector<std::pair<Index, Index>> w;
    for (Index i = 0; i < out_; ++i) {
      const Index start = i * T / out_, end = std::min<Index>(((i + 1) * T + out_ - 1) / out_, T);
      const Index g = end - start == big ? start + small_len : start;  // Keras's index into [small pools, big pools]
      if (g < small_len && g + small <= T) w.push_back({g, small});
      else if (g >= small_len && g - small_len < big_len) w.push_back({g - small_len, big});
      else
        fail(Code::unsupported, class_name, " '", name, "': output_size=", out_, " over ", T,
             " steps: Keras's windows read past the input there");
    }
    return w;
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const Value& x = *in.main[0];
    const Index B = x.shape[0];
    const Index T = channels_first_ ? x.shape[2] : x.shape[1], F = channels_first_ ? x.shape[1] : x.shape[2];
    const auto w = windows(T);
    Value y = make_value(channels_first_ ? std::vector<Index>{B, F, out_} : std::vector<Index>{B, out_, F}, class_name.c_str());
    auto at = [&](const std::vector<Index>& shape, Index b, Index t, Index f) {
      return static_cast<std::size_t>(channels_first_ ? (b * F + f) * shape[2] + t : (b * shape[1] + t) * F + f);
    };
    for (Index b = 0; b < B; ++b)
      for (Index o = 0; o < out_; ++o) {
        const auto [lo, n] = w[static_cast<std::size_t>(o)];
        for (Index f = 0; f < F; ++f) {
          float acc = max_ ? -std::numeric_limits<float>::infinity() : 0.0f;
          for (Index t = lo; t < lo + n; ++t) {
            const float v = x.data[at(x.shape, b, t, f)];
            acc = max_ ? std::max(acc, v) : acc + v;
          }
          y.data[at(y.shape, b, o, f)] = max_ ? acc : acc / static_cast<float>(n);
        }
      }
    return {std::move(y)};
  }
  std::string device_rule() const override { return ""; }
  // Per output step: its window read out (B, n, F) (or (B, F, n) channels first), reduced over the
  // steps as forward folds them, and copied into its place in the output.
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    DeviceRun& dev = *ctx.device;
    const Index B = x.shape[0];
    const Index T = channels_first_ ? x.shape[2] : x.shape[1], F = channels_first_ ? x.shape[1] : x.shape[2];
    const auto w = windows(T);
    const std::string what = class_name + " '" + name + "'";
    Value y = dev.make(channels_first_ ? std::vector<Index>{B, F, out_} : std::vector<Index>{B, out_, F}, what.c_str());
    for (Index o = 0; o < out_ && B * F > 0; ++o) {
      const auto [lo, n] = w[static_cast<std::size_t>(o)];
      const std::vector<Index> dims = channels_first_ ? std::vector<Index>{B, F, n} : std::vector<Index>{B, n, F};
      const std::vector<Index> strides = channels_first_ ? std::vector<Index>{F * T, T, 1} : std::vector<Index>{T * F, F, 1};
      std::optional<Value> win = dev.gather(x, dims, strides, channels_first_ ? lo : lo * F, dims, what);
      std::vector<Value> r;
      reduce_on_device(*ctx.device, *win, {channels_first_ ? 2 : 1}, max_ ? Reduction::max : Reduction::mean,
                       {B, F}, what, r);
      // (B, F) into output step o: rows of F floats (channels last) or single floats (first).
      dev.call(what, [&](char* err, std::size_t len) {
        return channels_first_
                   ? dev.table().copy2d(dev.ordinal(), r[0].device->data(), 1, y.device->data() + o, out_, B * F, 1, err, len)
                   : dev.table().copy2d(dev.ordinal(), r[0].device->data(), F, y.device->data() + o * F, out_ * F, B, F,
                                        err, len);
      });
    }
    out = {std::move(y)};
    return true;
  }

 private:
  bool max_, channels_first_ = false;
  int out_ = 0;
};

}  // namespace

void register_pooling_layers(OpTable& t) {
  t.add({"GlobalAveragePooling1D", "GlobalAvgPool1D"}, [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<GlobalPool1DOp>(e.at("config"), false, ctx.dialect);
  });
  t.add({"GlobalMaxPooling1D", "GlobalMaxPool1D"}, [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<GlobalPool1DOp>(e.at("config"), true, ctx.dialect);
  });
  t.add({"MaxPooling1D", "MaxPool1D"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<Pool1DOp>(e.at("config"), true);
  });
  t.add({"AveragePooling1D", "AvgPool1D"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<Pool1DOp>(e.at("config"), false);
  });
  t.add({"AdaptiveAveragePooling1D"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<AdaptivePool1DOp>(e.at("config"), false);
  });
  t.add({"AdaptiveMaxPooling1D"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<AdaptivePool1DOp>(e.at("config"), true);
  });
}

}  // namespace recur::graph
