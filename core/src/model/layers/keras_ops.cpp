// SPDX-License-Identifier: Apache-2.0
// Keras 3 op nodes: keras.ops functions in a functional graph (the masks Keras computes, arithmetic).
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

std::shared_ptr<Op> make_keras_op(const json& entry, const std::string& cls) { return std::make_shared<KerasOp>(entry, cls); }

}  // namespace recur::graph
