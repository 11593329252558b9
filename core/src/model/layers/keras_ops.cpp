// SPDX-License-Identifier: Apache-2.0
// Keras 3 op nodes: keras.ops functions in a functional graph (the masks Keras computes, arithmetic).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
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

class KerasOp : public Op {
 public:
  KerasOp(const json& entry, const std::string& cls) : kind_(cls) {
    cfg_ = entry.at("config");
    // The call's arguments: tensors (filled in order at run time) and constants.
    const json& nodes = entry.value("inbound_nodes", json::array());
    if (nodes.is_array() && nodes.size() == 1 && nodes[0].is_object() && nodes[0].contains("args") && nodes[0]["args"].is_array())
      for (const auto& a : nodes[0]["args"]) {
        if (cls == "GetItem" && !args_.empty()) {  // x[key]: the key after the tensor
          read_key(a);
        } else if (a.is_object() && str_of(a, "class_name", "") == "__keras_tensor__") {
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
                                  "Concatenate", "Cast", "Stack", "Transpose", "GetItem"};
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
  BinaryFn binary_fn() const {
    static const std::map<std::string, BinaryFn> table = {
        {"NotEqual", [](float x, float z) { return float(x != z); }},
        {"Equal", [](float x, float z) { return float(x == z); }},
        {"Greater", [](float x, float z) { return float(x > z); }},
        {"GreaterEqual", [](float x, float z) { return float(x >= z); }},
        {"Less", [](float x, float z) { return float(x < z); }},
        {"LessEqual", [](float x, float z) { return float(x <= z); }},
        {"Add", arithmetic_fn("add")},
        {"Subtract", arithmetic_fn("subtract")},
        {"Multiply", arithmetic_fn("multiply")},
        {"Divide", arithmetic_fn("divide")},
        {"TrueDivide", arithmetic_fn("divide")},
        {"Maximum", arithmetic_fn("maximum")},
        {"Minimum", arithmetic_fn("minimum")},
        {"LogicalAnd", [](float x, float z) { return float((x != 0) && (z != 0)); }},
        {"LogicalOr", [](float x, float z) { return float((x != 0) || (z != 0)); }},
        {"LogicalXor", [](float x, float z) { return float((x != 0) != (z != 0)); }},
    };
    return table.at(kind_);
  }

  // Whether each timestep (axis 1) of a rank-`rank` first argument maps to itself.
  bool timed(std::size_t rank) const {
    if (reduction()) {
      for (int a : axes(rank))
        if (a <= 1) return false;
      return true;
    }
    if (kind_ == "Concatenate") return concat_axis(rank) >= 2;
    if (kind_ == "Stack") return stack_axis(int_of(cfg_, "axis", 0), rank, kind_) >= 2;
    if (kind_ == "ExpandDims") {
      const int a = int_of(cfg_, "axis", -1);
      return (a < 0 ? a + static_cast<int>(rank) + 1 : a) >= 2;
    }
    if (kind_ == "Squeeze") {
      if (!cfg_.contains("axis") || cfg_["axis"].is_null()) return false;
      for (int a : axes(rank))
        if (a <= 1) return false;
      return true;
    }
    if (kind_ == "Transpose") return rank < 2 || perm(rank)[1] == 1;
    if (kind_ == "GetItem") return key_keeps_time(key_, rank, kind_);
    return true;
  }

  std::string stream_rule(const std::vector<bool>& stepped_in, bool init, std::vector<bool>& stepped_out) const override {
    const bool any = std::find(stepped_in.begin(), stepped_in.end(), true) != stepped_in.end();
    if (!any || per_step) return Op::stream_rule(stepped_in, init, stepped_out);
    stepped_out.assign(stepped_out.size(), false);
    if (reduction()) return "it reduces over the time axis";
    if (kind_ == "GetItem") return "it slices the time axis or moves it";
    if (kind_ == "Concatenate" || kind_ == "Stack") return "it joins along the time axis";
    return "it moves the time axis";
  }

  bool reduction() const { return kind_ == "Any" || kind_ == "All" || kind_ == "Sum" || kind_ == "Mean" || kind_ == "Max" || kind_ == "Min"; }
  Reduction reduction_kind() const {
    return kind_ == "Any" ? Reduction::any : kind_ == "All" ? Reduction::all : kind_ == "Max" ? Reduction::max
           : kind_ == "Min" ? Reduction::min : kind_ == "Mean" ? Reduction::mean : Reduction::sum;
  }

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
      return broadcast_shape(a, b, kind_);
    }
    if (in.empty()) fail(Code::invalid_argument, kind_, ": no tensor argument");
    const std::vector<Index>& x = in[0];
    if (reduction()) return reduced_shape(x, axes(x.size()), bool_of(cfg_, "keepdims", false));
    if (kind_ == "ExpandDims") return expanded_shape(x, int_of(cfg_, "axis", -1), kind_);
    if (kind_ == "Squeeze")
      return squeezed_shape(x, cfg_.contains("axis") && !cfg_["axis"].is_null() ? axes(x.size()) : std::vector<int>{}, kind_);
    if (kind_ == "Concatenate" || kind_ == "Stack") {
      std::vector<const std::vector<Index>*> parts;
      for (const auto& p : in) parts.push_back(&p);
      if (kind_ == "Stack") return stacked_shape(parts, stack_axis(int_of(cfg_, "axis", 0), x.size(), kind_), kind_);
      return joined_shape(parts, concat_axis(x.size()), "Concatenate");
    }
    if (kind_ == "Transpose") return transposed_shape(x, perm(x.size()));
    if (kind_ == "GetItem") return sliced_shape(x, key_, kind_);
    return x;  // elementwise
  }

  std::vector<int> perm(std::size_t rank) const {
    if (!cfg_.contains("axes") || cfg_["axes"].is_null())
      fail(Code::unsupported, "Transpose: without 'axes' it reverses the axes, the batch axis among them");
    return permutation_of(cfg_["axes"], rank, "Transpose");
  }

  // GetItem's key: one item or a list of them (integers, {"class_name": "__slice__"} slices).
  void read_key(const json& key) {
    const json items = key.is_array() ? key : json::array({key});
    for (const json& it : items) {
      if (it.is_number_integer()) {
        SliceItem s = slice_item(it, json(), json(), "GetItem");
        s.index = true;
        key_.push_back(s);
      } else if (it.is_object() && str_of(it, "class_name", "") == "__slice__" && it.contains("config") &&
                 it["config"].is_object()) {
        const json& c = it["config"];
        key_.push_back(slice_item(c.value("start", json()), c.value("stop", json()), c.value("step", json()), "GetItem"));
      } else if (it.is_object() && str_of(it, "class_name", "") == "__ellipsis__") {
        key_.push_back(SliceItem{});
        key_.back().ellipsis = true;
      } else if (it.is_null()) {  // None: a new axis
        key_.push_back(SliceItem{});
        key_.back().newaxis = true;
      } else {
        fail(Code::unsupported, "GetItem: a key item recur cannot read: ", io::excerpt(it));
      }
    }
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
    set_once(per_step, timed(all.empty() ? 0 : all[0].size()));
    return {s};
  }

  // Every op has a GPU kernel but ZerosLike and OnesLike, which read only their input's shape (on
  // the host, with nothing copied). Op nodes follow their inputs: most compute the masks Keras
  // derives from a model's inputs, which have their floats on the host already, and masks live on
  // the host; an op on a tensor that lives only on the device runs there.
  std::string device_rule() const override {
    return shapes_only() ? "it reads only its input's shape, on the host" : "";
  }
  bool reads_shapes_only() const override { return shapes_only(); }
  bool follows_inputs() const override { return true; }
  bool shapes_only() const { return kind_ == "ZerosLike" || kind_ == "OnesLike"; }

  int binary_op() const {
    static const std::map<std::string, int> ops = {
        {"NotEqual", RECUR_GPU_OP_NOT_EQUAL}, {"Equal", RECUR_GPU_OP_EQUAL},
        {"Greater", RECUR_GPU_OP_GREATER},    {"GreaterEqual", RECUR_GPU_OP_GREATER_EQUAL},
        {"Less", RECUR_GPU_OP_LESS},          {"LessEqual", RECUR_GPU_OP_LESS_EQUAL},
        {"Add", RECUR_GPU_OP_ADD},            {"Subtract", RECUR_GPU_OP_SUB},
        {"Multiply", RECUR_GPU_OP_MUL},       {"Divide", RECUR_GPU_OP_DIV},
        {"TrueDivide", RECUR_GPU_OP_DIV},     {"Maximum", RECUR_GPU_OP_MAX},
        {"Minimum", RECUR_GPU_OP_MIN},        {"LogicalAnd", RECUR_GPU_OP_LOGICAL_AND},
        {"LogicalOr", RECUR_GPU_OP_LOGICAL_OR}, {"LogicalXor", RECUR_GPU_OP_LOGICAL_XOR}};
    return ops.at(kind_);
  }
  int unary_op() const {
    if (kind_ == "LogicalNot") return RECUR_GPU_OP_LOGICAL_NOT;
    if (kind_ == "Absolute" || kind_ == "Abs") return RECUR_GPU_OP_ABS;
    if (kind_ == "Negative") return RECUR_GPU_OP_NEGATIVE;
    if (kind_ == "Square") return RECUR_GPU_OP_SQUARE;
    if (kind_ == "Sqrt") return RECUR_GPU_OP_SQRT;
    if (kind_ == "Cast") {
      const std::string dt = str_of(cfg_, "dtype", "float32");
      return dt == "bool" ? RECUR_GPU_OP_TO_BOOL : dt.rfind("int", 0) == 0 ? RECUR_GPU_OP_TRUNC : RECUR_GPU_OP_COPY;
    }
    return RECUR_GPU_OP_COPY;
  }

  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    const std::string what = kind_ + " '" + name + "'";
    // The arguments in order: device tensors and constants.
    std::vector<FoldArg> args;
    std::vector<std::vector<Index>> shapes;
    std::size_t t = 0;
    for (const auto& a : args_) {
      FoldArg f;
      if (a.tensor) f.v = in.main.at(t++);
      else f.constant = a.value;
      shapes.push_back(f.v ? f.v->shape : std::vector<Index>{});
      args.push_back(f);
    }
    const Value& x = *in.main.at(0);
    std::vector<Index> shape = out_shape(shapes);
    if (binary()) return elementwise_on_device(*ctx.device, binary_op(), {args.at(0), args.at(1)}, shape, what, out);
    if (kind_ == "Transpose") {
      const std::vector<int> p = perm(x.shape.size());
      return gather_on_device(ctx, x, transpose_read(x.shape, p), transposed_shape(x.shape, p), what, out);
    }
    if (kind_ == "GetItem") return gather_on_device(ctx, x, slice_read(x.shape, key_, kind_), shape, what, out);
    if (kind_ == "ExpandDims" || kind_ == "Squeeze") {  // the same floats
      out = {DeviceRun::view(x, 0, shape)};
      out[0].mask.reset();
      out[0].ids.reset();
      return true;
    }
    if (reduction()) return reduce_on_device(*ctx.device, x, axes(x.shape.size()), reduction_kind(), shape, what, out);
    if (kind_ == "Concatenate") return join_on_device(*ctx.device, in.main, concat_axis(x.shape.size()), shape, what, out);
    if (kind_ == "Stack")
      return join_on_device(*ctx.device, in.main, static_cast<std::size_t>(stack_axis(int_of(cfg_, "axis", 0), x.shape.size(), kind_)),
                            shape, what, out);
    return elementwise_on_device(*ctx.device, unary_op(), {args.at(0)}, shape, what, out);
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
      broadcast_binary(*args.at(0), *args.at(1), y, binary_fn());
      return {std::move(y)};
    }
    const Value& x = *args.at(0);
    if (reduction()) {
      reduce_values(x, axes(x.shape.size()), reduction_kind(), y);
      return {std::move(y)};
    }
    if (kind_ == "Stack") {
      stack_values(args, stack_axis(int_of(cfg_, "axis", 0), x.shape.size(), kind_), y);
      return {std::move(y)};
    }
    if (kind_ == "Transpose") {
      transpose_values(x, perm(x.shape.size()), y);
      return {std::move(y)};
    }
    if (kind_ == "GetItem") {
      slice_values(x, key_, y, kind_);
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
        const std::string dt = str_of(cfg_, "dtype", "float32");
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
  std::vector<SliceItem> key_;  // GetItem
};

}  // namespace

std::shared_ptr<Op> make_keras_op(const json& entry, const std::string& cls) { return std::make_shared<KerasOp>(entry, cls); }

}  // namespace recur::graph
