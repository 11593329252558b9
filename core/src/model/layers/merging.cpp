// SPDX-License-Identifier: Apache-2.0
// Keras's merging layers: Add, Subtract, Multiply, Average, Maximum, Minimum, Concatenate, with
// each dialect's mask rule (Keras 2 ANDs the inputs' masks, Keras 3 ORs them), and Dot.
#include <algorithm>
#include <array>
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
    set_mask(in, y);
    return {std::move(y)};
  }
  std::string device_rule() const override { return ""; }
  // The inputs folded left to right as forward does, broadcast, and with Keras 3's masks where its
  // Multiply, Maximum and Minimum read them.
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const bool mask_merge = keras3_ && (kind_ == multiply || kind_ == maximum || kind_ == minimum);
    std::vector<std::vector<Index>> shapes;
    for (const Value* v : in.main) shapes.push_back(v->shape);
    std::vector<Index> shape = broadcast(shapes, class_name);
    std::vector<FoldArg> args;
    bool masked = false;
    for (const Value* v : in.main) {
      FoldArg a;
      a.v = v;
      if (mask_merge && v->mask && shape.size() >= 3) {
        if (v->mask->size() != static_cast<std::size_t>(shape[0] * shape[1])) {
          ctx.device->declined = "an input's mask does not cover the output's first two axes";
          return false;
        }
        a.mask = v->mask.get();
        masked = true;
      }
      args.push_back(a);
    }
    const std::string what = class_name + " '" + name + "'";
    if (args.size() == 1 && !(masked && kind_ == multiply)) {
      // One input is itself (a masked Multiply's zeroes its masked steps: the fold below).
      out = {ctx.device->clone(*in.main[0], class_name.c_str())};
    } else {
      const int op = kind_ == add ? RECUR_GPU_OP_ADD
                     : kind_ == subtract ? RECUR_GPU_OP_SUB
                     : kind_ == multiply ? RECUR_GPU_OP_MUL
                     : kind_ == maximum ? RECUR_GPU_OP_MAX
                     : kind_ == minimum ? RECUR_GPU_OP_MIN
                                        : RECUR_GPU_OP_AVERAGE;
      // One masked input: x * 1 under the same mask (a step masked in both is 0, the others x).
      if (args.size() == 1) {
        FoldArg one;
        one.constant = 1.0f;
        one.mask = args[0].mask;
        args.push_back(one);
      }
      if (!elementwise_on_device(*ctx.device, op, args, shape, what, out)) return false;
    }
    Value& y = out[0];
    y.ids.reset();
    set_mask(in, y);
    return true;
  }

 private:
  void set_mask(const CallInputs& in, Value& y) const {
    y.mask = keras3_ ? or_masks(in.main) : and_masks(in.main);
    if (y.mask && (y.shape.size() < 2 || y.mask->size() != static_cast<std::size_t>(y.shape[0] * y.shape[1]))) y.mask.reset();
  }
  Kind kind_;
  bool keras3_ = false;
};

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
    set_mask(in, ax, y);
    return {std::move(y)};
  }
  std::string device_rule() const override { return ""; }
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const int rank = static_cast<int>(in.main[0]->shape.size());
    const std::size_t ax = static_cast<std::size_t>(axis_ < 0 ? axis_ + rank : axis_);
    std::vector<const std::vector<Index>*> parts;
    for (const Value* v : in.main) parts.push_back(&v->shape);
    const std::string what = "Concatenate '" + name + "'";
    join_on_device(*ctx.device, in.main, ax, joined_shape(parts, ax, what), what, out);
    set_mask(in, ax, out[0]);
    return true;
  }

 private:
  void set_mask(const CallInputs& in, std::size_t ax, Value& y) const {
    const int rank = static_cast<int>(y.shape.size());
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
  }
  int axis_;
};

// Dot: the batchwise dot product of two tensors over one axis of each (Keras's batch_dot): the
// output's axes are x's without the summed one, then y's without the batch and the summed one
// (a rank-1 result becomes (batch, 1)). No mask comes out, in either dialect.
class DotOp : public Op {
 public:
  DotOp(const json& cfg, const DialectInfo& d) : keras3_(d.dialect == Dialect::keras3) {
    if (!cfg.contains("axes") || cfg["axes"].is_null()) fail(Code::invalid_argument, "Dot: config has no 'axes'");
    const json& a = cfg["axes"];
    std::vector<int> axes;
    if (!io::int_or_ints(a, axes) || axes.empty() || axes.size() > 2 || (a.is_array() && axes.size() != 2))
      fail(Code::invalid_argument, "Dot: axes: expected an integer or a list of two integers, got ", io::excerpt(a));
    axes_[0] = axes[0];
    axes_[1] = axes.size() == 2 ? axes[1] : axes[0];
    normalize_ = bool_of(cfg, "normalize", false);
  }

  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    if (in.size() != 2) fail(Code::invalid_argument, "Dot: expected exactly 2 inputs, got ", in.size());
    const auto ax = axes_for(in[0].dims, in[1].dims);
    const Index d1 = in[0].dims[ax[0]], d2 = in[1].dims[ax[1]];
    if (d1 >= 0 && d2 >= 0 && d1 != d2)
      fail(Code::shape, "Dot: axis ", ax[0], " of ", spec_string(in[0]), " and axis ", ax[1], " of ", spec_string(in[1]),
           " differ in size");
    Spec out;
    out.dims = out_dims(in[0].dims, in[1].dims, ax);
    return {out};
  }

  double work(const std::vector<Spec>& main, const std::vector<Spec>& out) const override {
    double k = 1;
    if (main.size() == 2 && main[0].dims.size() >= 2 && main[1].dims.size() >= 2)
      k = double(std::max<Index>(main[0].dims[axes_for(main[0].dims, main[1].dims)[0]], 1));
    return elements(out) * k * kScalarMacWork + Op::work(main, out);
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    const Value& x0 = *in.main[0];
    const Value& y0 = *in.main[1];
    const auto ax = call_axes(x0.shape, y0.shape);
    const Value x = normalize_ ? l2_normalized(x0, ax[0]) : x0;
    const Value y = normalize_ ? l2_normalized(y0, ax[1]) : y0;
    Value out = make_value(out_dims(x.shape, y.shape, ax), "Dot");
    // x as (B, xo, K, xi) and y as (B, yo, K, yi): out[b, xo, xi, yo, yi] = sum_k x * y.
    const Index B = x.shape[0], K = x.shape[ax[0]];
    const Index xo = product(x.shape, 1, ax[0]), xi = product(x.shape, ax[0] + 1);
    const Index yo = product(y.shape, 1, ax[1]), yi = product(y.shape, ax[1] + 1);
    float* o = out.data.data();
    for (Index b = 0; b < B; ++b)
      for (Index i = 0; i < xo; ++i)
        for (Index j = 0; j < xi; ++j)
          for (Index p = 0; p < yo; ++p)
            for (Index q = 0; q < yi; ++q) {
              float acc = 0.0f;
              for (Index k = 0; k < K; ++k)
                acc += x.data[static_cast<std::size_t>(((b * xo + i) * K + k) * xi + j)] *
                       y.data[static_cast<std::size_t>(((b * yo + p) * K + k) * yi + q)];
              *o++ = acc;
            }
    return {std::move(out)};
  }
  std::string device_rule() const override { return ""; }
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const auto ax = call_axes(in.main[0]->shape, in.main[1]->shape);
    std::vector<Value> xn, yn;
    if (normalize_ && (!l2_normalized_on_device(*ctx.device, *in.main[0], ax[0], xn) ||
                       !l2_normalized_on_device(*ctx.device, *in.main[1], ax[1], yn)))
      return false;
    const Value& x = normalize_ ? xn[0] : *in.main[0];
    const Value& y = normalize_ ? yn[0] : *in.main[1];
    DeviceRun& dev = *ctx.device;
    Value o = dev.make(out_dims(x.shape, y.shape, ax), "Dot");
    const Index B = x.shape[0], K = x.shape[ax[0]];
    const Index xo = product(x.shape, 1, ax[0]), xi = product(x.shape, ax[0] + 1);
    const Index yo = product(y.shape, 1, ax[1]), yi = product(y.shape, ax[1] + 1);
    dev.call("Dot '" + name + "'", [&](char* err, std::size_t len) {
      return dev.table().dot(dev.ordinal(), x.device->data(), y.device->data(), B, xo, K, xi, yo, yi, o.device->data(), err,
                             len);
    });
    out = {std::move(o)};
    return true;
  }

 private:
  // The axes of a call's inputs, checked against each other.
  std::array<std::size_t, 2> call_axes(const std::vector<Index>& x, const std::vector<Index>& y) const {
    const auto ax = axes_for(x, y);
    if (x[0] != y[0] || x[ax[0]] != y[ax[1]])
      fail(Code::shape, "Dot '", io::printable(name), "': shapes ", shape_string(x), " and ", shape_string(y),
           " do not fit axes (", ax[0], ", ", ax[1], ")");
    return ax;
  }
  std::array<std::size_t, 2> axes_for(const std::vector<Index>& a, const std::vector<Index>& b) const {
    if (a.size() < 2 || b.size() < 2)
      fail(Code::shape, "Dot: inputs must have rank >= 2, got ", shape_string(a), " and ", shape_string(b));
    std::array<std::size_t, 2> ax{};
    const std::size_t ranks[2] = {a.size(), b.size()};
    for (int i = 0; i < 2; ++i) {
      const long r = static_cast<long>(ranks[i]);
      const long v = axes_[i] < 0 ? ((axes_[i] % r) + r) % r : axes_[i];  // Keras: axis % rank
      if (v <= 0 || v >= r)
        fail(Code::invalid_argument, "Dot: axes: ", axes_[i], " is not a non-batch axis of a rank-", r, " input");
      ax[static_cast<std::size_t>(i)] = static_cast<std::size_t>(v);
    }
    return ax;
  }
  static std::vector<Index> out_dims(const std::vector<Index>& a, const std::vector<Index>& b, const std::array<std::size_t, 2>& ax) {
    std::vector<Index> d;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (i != ax[0]) d.push_back(a[i]);
    for (std::size_t i = 1; i < b.size(); ++i)
      if (i != ax[1]) d.push_back(b[i]);
    if (d.size() == 1) d.push_back(1);
    return d;
  }
  // Keras 3: x * min(rsqrt(sum x^2), 1 / 1e-7); Keras 2 (tf.linalg.l2_normalize): x * rsqrt(max(sum x^2, 1e-12)).
  Value l2_normalized(const Value& v, std::size_t axis) const {
    Value out = v;
    const Index outer = product(v.shape, 0, axis), K = v.shape[axis], inner = product(v.shape, axis + 1);
    for (Index o = 0; o < outer; ++o)
      for (Index j = 0; j < inner; ++j) {
        float ss = 0.0f;
        for (Index k = 0; k < K; ++k) {
          const float e = v.data[static_cast<std::size_t>((o * K + k) * inner + j)];
          ss += e * e;
        }
        const float inv = keras3_ ? std::min(1.0f / std::sqrt(ss), 1.0f / 1e-7f) : 1.0f / std::sqrt(std::max(ss, 1e-12f));
        for (Index k = 0; k < K; ++k) out.data[static_cast<std::size_t>((o * K + k) * inner + j)] *= inv;
      }
    return out;
  }

  // l2_normalized as elementwise ops and a sum, each rounding as there: ss = the sum of x * x over
  // the axis, inv = 1 / sqrt(ss) then min(inv, 1e7) (Keras 3), or 1 / sqrt(max(ss, 1e-12)), x * inv.
  bool l2_normalized_on_device(DeviceRun& dev, const Value& v, std::size_t axis, std::vector<Value>& out) const {
    const std::string what = "Dot '" + name + "' (normalize=True)";
    std::vector<Index> kept = v.shape;
    kept[axis] = 1;
    // An operand: a device Value, or a constant.
    auto arg = [](const Value* t, float c) {
      FoldArg a;
      a.v = t;
      a.constant = c;
      return a;
    };
    std::vector<Value> sq, ss, t, inv;
    if (!elementwise_on_device(dev, RECUR_GPU_OP_SQUARE, {arg(&v, 0)}, v.shape, what, sq) ||
        !reduce_on_device(dev, sq[0], {static_cast<int>(axis)}, Reduction::sum, kept, what, ss))
      return false;
    if (keras3_) {
      if (!elementwise_on_device(dev, RECUR_GPU_OP_SQRT, {arg(&ss[0], 0)}, kept, what, t) ||
          !elementwise_on_device(dev, RECUR_GPU_OP_DIV, {arg(nullptr, 1.0f), arg(&t[0], 0)}, kept, what, inv) ||
          !elementwise_on_device(dev, RECUR_GPU_OP_MIN, {arg(&inv[0], 0), arg(nullptr, 1.0f / 1e-7f)}, kept, what, t))
        return false;
    } else {
      if (!elementwise_on_device(dev, RECUR_GPU_OP_MAX, {arg(&ss[0], 0), arg(nullptr, 1e-12f)}, kept, what, t) ||
          !elementwise_on_device(dev, RECUR_GPU_OP_SQRT, {arg(&t[0], 0)}, kept, what, inv) ||
          !elementwise_on_device(dev, RECUR_GPU_OP_DIV, {arg(nullptr, 1.0f), arg(&inv[0], 0)}, kept, what, t))
        return false;
    }
    return elementwise_on_device(dev, RECUR_GPU_OP_MUL, {arg(&v, 0), arg(&t[0], 0)}, v.shape, what, out);
  }

  int axes_[2] = {0, 0};
  bool normalize_ = false;
  bool keras3_ = false;
};

}  // namespace

void register_merging_layers(OpTable& t) {
  const auto merge = [](MergeOp::Kind k) {
    return [k](const json&, const BuildContext&, const std::string&) -> std::shared_ptr<Op> { return std::make_shared<MergeOp>(k); };
  };
  t.add({"Add"}, merge(MergeOp::add));
  t.add({"Subtract"}, merge(MergeOp::subtract));
  t.add({"Multiply"}, merge(MergeOp::multiply));
  t.add({"Average"}, merge(MergeOp::average));
  t.add({"Maximum"}, merge(MergeOp::maximum));
  t.add({"Minimum"}, merge(MergeOp::minimum));
  t.add({"Concatenate"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<ConcatenateOp>(e.at("config"));
  });
  t.add({"Dot"}, [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<DotOp>(e.at("config"), ctx.dialect);
  });
}

}  // namespace recur::graph
