// SPDX-License-Identifier: Apache-2.0
// Keras's merging layers: Add, Subtract, Multiply, Average, Maximum, Minimum, Concatenate, with
// each dialect's mask rule (Keras 2 ANDs the inputs' masks, Keras 3 ORs them).
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
}

}  // namespace recur::graph
