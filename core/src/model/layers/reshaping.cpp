// SPDX-License-Identifier: Apache-2.0
// Keras's reshaping layers: RepeatVector, Flatten, Reshape, Permute, ZeroPadding1D, Cropping1D,
// UpSampling1D.
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

class RepeatVectorOp : public Op {
 public:
  explicit RepeatVectorOp(const json& cfg) : n_(int_of(cfg, "n", 0)) {
    if (n_ <= 0) fail(Code::invalid_argument, "n: expected a positive integer, got ", n_);
    check_limit(Limit::timesteps, static_cast<double>(n_), "RepeatVector: n (the timesteps it creates)");
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
  std::string device_rule() const override { return ""; }
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    const Index B = x.shape[0], F = x.shape[1];
    DeviceRun& dev = *ctx.device;
    Value y = dev.make({B, n_, F}, "RepeatVector");
    for (Index t = 0; t < n_; ++t)  // one strided copy per timestep: every row's vector into step t
      dev.call("RepeatVector '" + name + "'", [&](char* err, std::size_t len) {
        return dev.table().copy2d(dev.ordinal(), x.device->data(), F, y.device->data() + t * F, n_ * F, B, F, err, len);
      });
    out = {std::move(y)};
    return true;
  }

 private:
  int n_;
};

Value permute(const Value& x, const std::vector<int>& perm) {  // perm over all axes, batch included
  Value y = make_value(transposed_shape(x.shape, perm), "Permute");
  transpose_values(x, perm, y);
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
    if (channels_first_ && x.shape.size() > 2) y = permute(x, channels_last_order(x));
    else y.data = x.data;
    y.shape = flat_shape(x);
    return {std::move(y)};
  }
  std::string device_rule() const override { return ""; }
  bool follows_inputs() const override { return true; }  // a view (or a transpose), as Reshape
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    if (channels_first_ && x.shape.size() > 2) {  // the transpose as a strided read, then the view
      const std::vector<int> perm = channels_last_order(x);
      if (!gather_on_device(ctx, x, transpose_read(x.shape, perm), transposed_shape(x.shape, perm), "Flatten '" + name + "'",
                            out))
        return false;
      out[0] = DeviceRun::view(out[0], 0, flat_shape(x));
      return true;
    }
    out = {DeviceRun::view(x, 0, flat_shape(x))};
    return true;
  }

 private:
  // channels_first: the channels axis moved last before flattening, as Keras does.
  static std::vector<int> channels_last_order(const Value& x) {
    std::vector<int> perm{0};
    for (int i = 2; i < static_cast<int>(x.shape.size()); ++i) perm.push_back(i);
    perm.push_back(1);
    return perm;
  }
  static std::vector<Index> flat_shape(const Value& x) { return {x.shape[0], x.shape.size() == 1 ? 1 : product(x.shape, 1)}; }
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
        fail(Code::invalid_argument, "target_shape: expected integers in [1, ", 1 << 30, "] or one -1, got ", io::excerpt(cfg["target_shape"]));
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
  std::string device_rule() const override { return ""; }
  // A view on either side: it stays where its input and readers are (ids for an Embedding).
  bool follows_inputs() const override { return true; }
  bool forward_device(const CallInputs& in, RunContext&, int, std::vector<Value>& out) const override {
    out = {DeviceRun::view(*in.main[0], 0, resolve(in.main[0]->shape, true))};
    return true;
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
  std::string device_rule() const override { return ""; }
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    return gather_on_device(ctx, *in.main[0], transpose_read(in.main[0]->shape, perm_),
                            transposed_shape(in.main[0]->shape, perm_), "Permute '" + name + "'", out);
  }

 private:
  std::vector<int> perm_;
};

// "padding" / "cropping": an integer for both ends or [start, end], each in [0, 2^30].
std::pair<Index, Index> ends_of(const json& cfg, const char* key, int fallback) {
  if (!cfg.contains(key) || cfg[key].is_null()) return {fallback, fallback};
  const json& v = cfg[key];
  int a = 0, b = 0;
  const bool ok = v.is_array() ? v.size() == 2 && io::int_in(v[0], 0, 1 << 30, a) && io::int_in(v[1], 0, 1 << 30, b)
                               : io::int_in(v, 0, 1 << 30, a);
  if (!ok) fail(Code::invalid_argument, key, ": expected a non-negative integer or a pair of them, got ", io::excerpt(v));
  return {a, v.is_array() ? b : a};
}

// The (batch, steps, features) input of ZeroPadding1D, Cropping1D, UpSampling1D: the steps axis.
std::size_t steps_axis_of(const std::vector<Spec>& in, const std::string& who, bool channels_first) {
  check_rank(in, 1, 3, who.c_str());
  if (in[0].dims.size() != 3)
    fail(Code::shape, who, ": expected (batch, ", channels_first ? "features, steps" : "steps, features", "), got ", spec_string(in[0]));
  return channels_first ? 2 : 1;
}

// Copies x into y with its steps axis (1 or 2) shifted: y's step t + shift holds x's step t, for
// x's steps [from, to). y is zeros elsewhere.
void copy_steps(const Value& x, Value& y, std::size_t axis, Index from, Index to, Index shift) {
  const Index outer = product(x.shape, 0, axis), inner = product(x.shape, axis + 1);
  const Index tx = x.shape[axis], ty = y.shape[axis];
  for (Index o = 0; o < outer; ++o)
    std::copy(x.data.data() + (o * tx + from) * inner, x.data.data() + (o * tx + to) * inner,
              y.data.data() + (o * ty + from + shift) * inner);
}

// ZeroPadding1D: zeros before and after the steps. Neither dialect passes a mask through it.
class ZeroPadding1DOp : public Op {
 public:
  explicit ZeroPadding1DOp(const json& cfg) : pad_(ends_of(cfg, "padding", 1)), channels_first_(channels_first_of(cfg)) {}
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    const std::size_t axis = steps_axis_of(in, "ZeroPadding1D", channels_first_);
    Spec s = in[0];
    s.ids = false;
    if (s.dims[axis] >= 0) s.dims[axis] += pad_.first + pad_.second;
    return {s};
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const Value& x = *in.main[0];
    const std::size_t axis = channels_first_ ? 2 : 1;
    std::vector<Index> shape = x.shape;
    shape[axis] += pad_.first + pad_.second;
    Value y = make_value(shape, "ZeroPadding1D");
    copy_steps(x, y, axis, 0, x.shape[axis], pad_.first);
    return {std::move(y)};
  }
  std::string device_rule() const override { return ""; }
  // Zeros, then x's steps as one strided block copy (each row before the steps axis is a block).
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    const std::size_t axis = channels_first_ ? 2 : 1;
    std::vector<Index> shape = x.shape;
    shape[axis] += pad_.first + pad_.second;
    DeviceRun& dev = *ctx.device;
    Value y = dev.make(shape, "ZeroPadding1D");
    const Index outer = product(x.shape, 0, axis), inner = product(x.shape, axis + 1);
    const Index tx = x.shape[axis], ty = shape[axis];
    const std::string what = "ZeroPadding1D '" + name + "'";
    if (pad_.first + pad_.second > 0)
      dev.call(what, [&](char* err, std::size_t len) {
        return dev.table().fill(dev.ordinal(), y.device->data(), product(shape), 0.0f, err, len);
      });
    dev.call(what, [&](char* err, std::size_t len) {
      return dev.table().copy2d(dev.ordinal(), x.device->data(), tx * inner, y.device->data() + pad_.first * inner,
                                ty * inner, outer, tx * inner, err, len);
    });
    out = {std::move(y)};  // no mask passes (as forward)
    return true;
  }

 private:
  std::pair<Index, Index> pad_;
  bool channels_first_;
};

// Cropping1D: drops steps at both ends (channels_last only, in both dialects); no mask passes.
class Cropping1DOp : public Op {
 public:
  explicit Cropping1DOp(const json& cfg) : crop_(ends_of(cfg, "cropping", 1)) {}
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    steps_axis_of(in, "Cropping1D", false);
    Spec s = in[0];
    s.ids = false;
    if (s.dims[1] >= 0) s.dims[1] = steps(s.dims[1]);
    return {s};
  }
  Index steps(Index T) const {
    if (crop_.first + crop_.second >= T)
      fail(Code::shape, "Cropping1D '", name, "': cropping (", crop_.first, ", ", crop_.second, ") must leave some of the ", T,
           " steps (Keras refuses it too)");
    return T - crop_.first - crop_.second;
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const Value& x = *in.main[0];
    std::vector<Index> shape = x.shape;
    shape[1] = steps(x.shape[1]);
    Value y = make_value(shape, "Cropping1D");
    copy_steps(x, y, 1, crop_.first, x.shape[1] - crop_.second, -crop_.first);
    return {std::move(y)};
  }
  std::string device_rule() const override { return ""; }
  // The kept steps of every row as one strided block copy.
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    const Index B = x.shape[0], T = x.shape[1], F = x.shape[2];
    if (crop_.first + crop_.second >= T) return false;  // forward fails with its message
    const Index Ty = T - crop_.first - crop_.second;
    DeviceRun& dev = *ctx.device;
    Value y = dev.make({B, Ty, F}, "Cropping1D");
    dev.call("Cropping1D '" + name + "'", [&](char* err, std::size_t len) {
      return dev.table().copy2d(dev.ordinal(), x.device->data() + crop_.first * F, T * F, y.device->data(), Ty * F, B, Ty * F,
                                err, len);
    });
    out = {std::move(y)};  // no mask passes (as forward)
    return true;
  }

 private:
  std::pair<Index, Index> crop_;
};

// UpSampling1D: each step repeated `size` times. It acts on each step alone, so it streams: a
// piece of n steps becomes n * size steps. No mask passes.
class UpSampling1DOp : public Op {
 public:
  explicit UpSampling1DOp(const json& cfg) : size_(int_of(cfg, "size", 2)) {
    if (size_ <= 0) fail(Code::invalid_argument, "size: expected a positive integer, got ", size_);
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    steps_axis_of(in, "UpSampling1D", false);
    Spec s = in[0];
    s.ids = false;
    if (s.dims[1] >= 0) s.dims[1] = steps(s.dims[1]);
    return {s};
  }
  Index steps(Index T) const {
    check_limit(Limit::timesteps, static_cast<double>(T) * size_,
                "UpSampling1D: size=" + std::to_string(size_) + " over " + std::to_string(T) + " steps (the timesteps it creates)");
    return T * size_;
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const Value& x = *in.main[0];
    const Index B = x.shape[0], T = x.shape[1], F = x.shape[2];
    steps(T);
    Value y = make_value({B, T * size_, F}, "UpSampling1D");
    for (Index r = 0; r < B * T; ++r)
      for (Index k = 0; k < size_; ++k) std::copy_n(x.data.data() + r * F, F, y.data.data() + (r * size_ + k) * F);
    return {std::move(y)};
  }
  std::string device_rule() const override { return ""; }
  // One strided copy per repeat: every step's vector into its k-th copy.
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    const Index B = x.shape[0], T = x.shape[1], F = x.shape[2];
    steps(T);
    DeviceRun& dev = *ctx.device;
    Value y = dev.make({B, T * size_, F}, "UpSampling1D");
    for (Index k = 0; k < size_; ++k)
      dev.call("UpSampling1D '" + name + "'", [&](char* err, std::size_t len) {
        return dev.table().copy2d(dev.ordinal(), x.device->data(), F, y.device->data() + k * F, size_ * F, B * T, F, err, len);
      });
    out = {std::move(y)};  // no mask passes (as forward)
    return true;
  }
  std::string stream_rule(const std::vector<bool>& stepped_in, bool, std::vector<bool>& stepped_out) const override {
    stepped_out.assign(stepped_out.size(), !stepped_in.empty() && stepped_in[0]);
    return "";
  }

 private:
  int size_;
};

}  // namespace

void register_reshaping_layers(OpTable& t) {
  t.add({"RepeatVector"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<RepeatVectorOp>(e.at("config"));
  });
  t.add({"Flatten"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<FlattenOp>(e.at("config"));
  });
  t.add({"Reshape"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<ReshapeOp>(e.at("config"));
  });
  t.add({"ZeroPadding1D"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<ZeroPadding1DOp>(e.at("config"));
  });
  t.add({"Cropping1D"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<Cropping1DOp>(e.at("config"));
  });
  t.add({"UpSampling1D"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<UpSampling1DOp>(e.at("config"));
  });
  t.add({"Permute"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<PermuteOp>(e.at("config"));
  });
}

}  // namespace recur::graph
