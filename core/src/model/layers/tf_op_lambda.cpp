// SPDX-License-Identifier: Apache-2.0
// Keras 2's TFOpLambda and SlicingOpLambda: a tf.* function (or an operator such as y * 0.5 or
// y[:, -1]) applied to a functional model's tensors, saved as a layer named after the function.
#include <algorithm>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "io/json_int.hpp"
#include "io/printable.hpp"
#include "model/device_run.hpp"
#include "model/layers/layer_util.hpp"
#include "model/layers/registry.hpp"
#include "recur/error.hpp"

namespace recur::graph {
namespace {

enum class Kind { binary, reduce, concat, stack, squeeze, expand_dims, transpose, getitem };

struct Function {
  const char* name;  // the saved 'function' (tf.<name>)
  Kind kind;
  const char* op;  // binary: arithmetic_fn's name; reduce: sum/mean/max/min
};

const Function kFunctions[] = {
    {"math.add", Kind::binary, "add"},
    {"__operators__.add", Kind::binary, "add"},
    {"math.subtract", Kind::binary, "subtract"},
    {"math.multiply", Kind::binary, "multiply"},
    {"math.truediv", Kind::binary, "divide"},
    {"math.divide", Kind::binary, "divide"},
    {"math.maximum", Kind::binary, "maximum"},
    {"math.minimum", Kind::binary, "minimum"},
    {"math.reduce_sum", Kind::reduce, "sum"},
    {"math.reduce_mean", Kind::reduce, "mean"},
    {"math.reduce_max", Kind::reduce, "max"},
    {"math.reduce_min", Kind::reduce, "min"},
    {"concat", Kind::concat, ""},
    {"stack", Kind::stack, ""},
    {"compat.v1.squeeze", Kind::squeeze, ""},
    {"squeeze", Kind::squeeze, ""},
    {"expand_dims", Kind::expand_dims, ""},
    {"compat.v1.transpose", Kind::transpose, ""},
    {"transpose", Kind::transpose, ""},
    {"__operators__.getitem", Kind::getitem, ""},
};

std::string supported_list() {
  std::string s;
  for (const Function& f : kFunctions) s += std::string(s.empty() ? "" : ", ") + "tf." + f.name;
  return s;
}

class TfOpLambda : public Op {
 public:
  TfOpLambda(const json& entry, const std::string& cls) {
    const json& cfg = entry.at("config");
    const std::string layer = cfg.contains("name") && cfg["name"].is_string() ? cfg["name"].get<std::string>() : "";
    if (!cfg.contains("function") || !cfg["function"].is_string())
      fail(Code::invalid_argument, cls, " (layer '", io::printable(layer), "'): 'function' must be a string, got ",
           io::excerpt(cfg.value("function", json())));
    function_ = cfg["function"].get<std::string>();
    who_ = cls + " 'tf." + io::printable(function_) + "' (layer '" + io::printable(layer) + "')";
    const Function* f = nullptr;
    for (const Function& k : kFunctions)
      if (function_ == k.name) f = &k;
    if (!f || (cls == "SlicingOpLambda") != (f->kind == Kind::getitem))
      fail(Code::unsupported, who_, " is not supported; recur runs ", supported_list(),
           " on tensors (rewrite the model with Keras layers for anything else)");
    kind_ = f->kind;
    op_ = f->op;
    if (kind_ == Kind::binary) fn_ = arithmetic_fn(op_);
    if (kind_ == Kind::reduce)
      how_ = op_ == "sum" ? Reduction::sum : op_ == "mean" ? Reduction::mean : op_ == "max" ? Reduction::max : Reduction::min;

    const json& nodes = entry.contains("inbound_nodes") ? entry["inbound_nodes"] : json();
    if (!nodes.is_array() || nodes.size() != 1)
      fail(Code::unsupported, who_, ": called ", nodes.is_array() ? nodes.size() : 0,
           " times; recur runs an op layer called once");
    // Arguments as graph.cpp's parse_call orders the tensors: the first argument's entries, then
    // the tensors among the kwargs in key order.
    const std::vector<const json*> entries = keras2_node_entries(nodes[0], who_);
    std::size_t tensors = 0;
    for (const json* e : entries) {
      if ((*e)[0] == "_CONSTANT_VALUE") {
        const json& v = (*e)[2];
        if (!v.is_number() && !v.is_boolean())
          fail(Code::unsupported, who_, ": a constant argument that is not a number: ", io::excerpt(v));
        first_.push_back({false, v.is_boolean() ? (v.get<bool>() ? 1.0f : 0.0f) : v.get<float>(), 0});
      } else {
        first_.push_back({true, 0.0f, tensors++});
      }
    }
    first_is_list_ = !(nodes[0].size() >= 3 && nodes[0][0].is_string());
    if (!entries.empty() && entries.back()->size() > 3) {
      const json& kw = (*entries.back())[3];
      if (!kw.is_object()) fail(Code::io, who_, ": the call's kwargs must be an object, got ", io::excerpt(kw));
      kwargs_ = kw;
      std::vector<const json*> refs;
      keras2_kwarg_refs(kw, refs, who_);
      for (std::size_t k = 0; k < refs.size(); ++k)
        for (const auto& item : kw.items())
          if (&item.value() == refs[k]) kw_tensor_[item.key()] = tensors + k;
      tensors_ = tensors + refs.size();
    } else {
      tensors_ = tensors;
    }
    if (first_.empty()) fail(Code::io, who_, ": a call with no argument");
    if (kind_ == Kind::binary) {
      // y: a tensor (another layer's output) or a number.
      if (!kw_tensor_.count("y")) {
        const json& y = kwargs_.contains("y") ? kwargs_["y"] : json();
        if (!y.is_number() && !y.is_boolean())
          fail(Code::invalid_argument, who_, ": argument 'y' must be a tensor or a number, got ", io::excerpt(y));
        y_ = y.is_boolean() ? (y.get<bool>() ? 1.0f : 0.0f) : y.get<float>();
      }
    }
    if (kind_ == Kind::getitem) {
      const json& spec = kwargs_.contains("slice_spec") ? kwargs_["slice_spec"] : json();
      const json items = spec.is_array() ? spec : json::array({spec});
      for (const json& it : items) {
        if (it.is_number_integer()) {
          SliceItem s = slice_item(it, json(), json(), who_);
          s.index = true;
          s.has_stop = false;
          key_.push_back(s);
        } else if (it.is_object() && it.contains("start") && it.contains("stop") && it.contains("step")) {
          key_.push_back(slice_item(it["start"], it["stop"], it["step"], who_));
        } else if (it.is_object() && it.value("class_name", json()) == json("__ellipsis__")) {  // .h5 only
          key_.push_back(SliceItem{});
          key_.back().ellipsis = true;
        } else if (it.is_null()) {  // tf.newaxis
          key_.push_back(SliceItem{});
          key_.back().newaxis = true;
        } else {
          fail(Code::invalid_argument, who_,
               ": slice_spec: each item must be an integer, a {start, stop, step} slice, an ellipsis or null, got ",
               io::excerpt(it));
        }
      }
    }
    if ((kind_ == Kind::concat || kind_ == Kind::stack) && !first_is_list_)
      fail(Code::invalid_argument, who_, ": expected a list of tensors");
    if (kind_ != Kind::concat && kind_ != Kind::stack && (first_is_list_ || first_.size() != 1))
      fail(Code::invalid_argument, who_, ": expected one tensor or number as its first argument, got ", first_.size());
  }

  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    if (in.size() != tensors_) fail(Code::invalid_argument, who_, ": expected ", tensors_, " tensor(s), got ", in.size());
    std::vector<std::vector<Index>> shapes;
    for (const Spec& s : in) shapes.push_back(s.dims);
    bool timed = true;  // acts on each timestep alone
    std::string issue;
    Spec out;
    out.dims = shape_of(shapes, &timed, &issue);
    if (out.dims.empty() || (!in.empty() && in[0].dims.size() >= 1 && out.dims[0] != in[0].dims[0]))
      fail(Code::unsupported, who_, ": a result without the batch axis first");
    // Decided by the model's own shapes (the first build); later builds infer shapes only.
    if (!built_) {
      per_step = timed;
      stream_issue_ = issue;
      built_ = true;
    }
    return {out};
  }

  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    std::vector<std::vector<Index>> shapes;
    for (const Value* v : in.main) shapes.push_back(v->shape);
    Value y = make_value(shape_of(shapes, nullptr, nullptr), "TFOpLambda");  // no mask: Keras 2 passes none on
    const std::vector<const Value*> args = positional(in.main);
    switch (kind_) {
      case Kind::binary: {
        Value c;
        c.data = {y_};
        const Value* b = kw_tensor_.count("y") ? in.main.at(kw_tensor_.at("y")) : &c;
        std::vector<Value> consts;
        broadcast_binary(constant_or(args[0], consts), *b, y, fn_);
        break;
      }
      case Kind::reduce: reduce_values(*args[0], reduce_axes(args[0]->shape.size()), how_, y); break;
      case Kind::concat: join_values(args, concat_axis(args[0]->shape.size()), y); break;
      case Kind::stack: stack_values(args, stack_axis(int_kw("axis", 0), args[0]->shape.size(), who_), y); break;
      case Kind::transpose: transpose_values(*args[0], perm(args[0]->shape.size()), y); break;
      case Kind::getitem: slice_values(*args[0], key_, y, who_); break;
      default: std::copy(args[0]->data.begin(), args[0]->data.end(), y.data.begin());  // squeeze, expand_dims
    }
    return {std::move(y)};
  }

  // Every function has a GPU kernel; like Keras 3's op nodes, a call follows its inputs.
  std::string device_rule() const override { return ""; }
  bool follows_inputs() const override { return true; }
  bool forward_device(const CallInputs& in, RunContext& ctx, int, std::vector<Value>& out) const override {
    std::vector<std::vector<Index>> shapes;
    for (const Value* v : in.main) shapes.push_back(v->shape);
    std::vector<Index> shape = shape_of(shapes, nullptr, nullptr);
    const std::vector<const Value*> args = positional(in.main);
    switch (kind_) {
      case Kind::binary: {
        FoldArg x, y;
        x.v = args[0];
        x.constant = first_[0].value;
        y.v = kw_tensor_.count("y") ? in.main.at(kw_tensor_.at("y")) : nullptr;
        y.constant = y_;
        const int op = op_ == "add" ? RECUR_GPU_OP_ADD : op_ == "subtract" ? RECUR_GPU_OP_SUB
                       : op_ == "multiply" ? RECUR_GPU_OP_MUL : op_ == "divide" ? RECUR_GPU_OP_DIV
                       : op_ == "maximum" ? RECUR_GPU_OP_MAX : RECUR_GPU_OP_MIN;
        return elementwise_on_device(*ctx.device, op, {x, y}, shape, who_, out);
      }
      case Kind::reduce: return reduce_on_device(*ctx.device, *args[0], reduce_axes(args[0]->shape.size()), how_, shape, who_, out);
      case Kind::concat: return join_on_device(*ctx.device, args, concat_axis(args[0]->shape.size()), shape, who_, out);
      case Kind::stack:
        return join_on_device(*ctx.device, args, static_cast<std::size_t>(stack_axis(int_kw("axis", 0), args[0]->shape.size(), who_)),
                              shape, who_, out);
      case Kind::transpose: {
        const std::vector<int> p = perm(args[0]->shape.size());
        return gather_on_device(ctx, *args[0], transpose_read(args[0]->shape, p), shape, who_, out);
      }
      case Kind::getitem: return gather_on_device(ctx, *args[0], slice_read(args[0]->shape, key_, who_), shape, who_, out);
      default: out = {DeviceRun::view(*args[0], 0, shape)};  // squeeze, expand_dims: the same floats
    }
    return true;
  }

  std::string stream_rule(const std::vector<bool>& stepped_in, bool init, std::vector<bool>& stepped_out) const override {
    const bool any = std::find(stepped_in.begin(), stepped_in.end(), true) != stepped_in.end();
    if (any && !stream_issue_.empty()) {
      stepped_out.assign(stepped_out.size(), false);
      return stream_issue_;
    }
    return Op::stream_rule(stepped_in, init, stepped_out);
  }

 private:
  struct Arg {
    bool tensor;
    float value;
    std::size_t index;  // into the call's tensors
  };

  // The first argument's tensors and constants (constants as scalars held in `consts`).
  std::vector<const Value*> positional(const std::vector<const Value*>& tensors) const {
    std::vector<const Value*> out;
    for (const Arg& a : first_) out.push_back(a.tensor ? tensors.at(a.index) : nullptr);
    return out;
  }
  const Value& constant_or(const Value* v, std::vector<Value>& consts) const {
    if (v) return *v;
    Value c;
    c.data = {first_[0].value};
    consts.push_back(std::move(c));
    return consts.back();
  }

  int int_kw(const char* key, int fallback) const {
    try {
      return int_of(kwargs_, key, fallback);
    } catch (const Error& e) {
      fail(Code::invalid_argument, who_, ": ", e.what());
    }
  }
  std::vector<int> reduce_axes(std::size_t rank) const {
    if (!kwargs_.contains("axis") || kwargs_["axis"].is_null())
      fail(Code::unsupported, who_, ": a reduction over every axis (the batch axis among them)");
    std::vector<int> given;
    try {
      given = axes_of(kwargs_, 0);
    } catch (const Error& e) {
      fail(Code::invalid_argument, who_, ": ", e.what());
    }
    return normalized_axes(given, rank, who_, kwargs_["axis"]);
  }
  std::size_t concat_axis(std::size_t rank) const {
    if (!kwargs_.contains("axis")) fail(Code::invalid_argument, who_, ": no 'axis'");
    const int given = int_kw("axis", 0);
    const int a = given < 0 ? given + static_cast<int>(rank) : given;
    if (a < 0 || a >= static_cast<int>(rank)) fail(Code::shape, who_, ": axis ", given, " of a rank-", rank, " tensor");
    return static_cast<std::size_t>(a);
  }
  std::vector<int> perm(std::size_t rank) const {
    if (!kwargs_.contains("perm") || kwargs_["perm"].is_null())
      fail(Code::unsupported, who_, ": a transpose without 'perm' reverses the axes, the batch axis among them");
    return permutation_of(kwargs_["perm"], rank, who_ + ": perm");
  }

  // The output shape; `timed` (when given) says whether each timestep (axis 1) maps to itself,
  // `issue` why not.
  std::vector<Index> shape_of(const std::vector<std::vector<Index>>& tensors, bool* timed, std::string* issue) const {
    std::vector<std::vector<Index>> args;
    for (const Arg& a : first_) args.push_back(a.tensor ? tensors.at(a.index) : std::vector<Index>{});
    const std::vector<Index>& x = args[0];
    auto not_timed = [&](const std::string& why) {
      if (timed && x.size() >= 2 && *timed) {
        *timed = false;
        *issue = "tf." + io::printable(function_) + " " + why;
      }
    };
    auto batch_first = [&](bool ok, const char* what) {
      if (!ok) fail(Code::unsupported, who_, ": ", what, " the batch axis");
    };
    switch (kind_) {
      case Kind::binary: {
        const std::vector<Index> y = kw_tensor_.count("y") ? tensors.at(kw_tensor_.at("y")) : std::vector<Index>{};
        return broadcast_shape(x, y, who_);
      }
      case Kind::reduce: {
        const auto ax = reduce_axes(x.size());
        for (int a : ax) {
          batch_first(a != 0, "a reduction over");
          if (a == 1) not_timed("reduces over the time axis");
        }
        return reduced_shape(x, ax, bool_kw("keepdims"));
      }
      case Kind::concat:
      case Kind::stack: {
        std::vector<const std::vector<Index>*> parts;
        for (std::size_t k = 0; k < args.size(); ++k) {
          if (!first_[k].tensor) fail(Code::unsupported, who_, ": a constant among the tensors it joins");
          parts.push_back(&args[k]);
        }
        if (kind_ == Kind::concat) {
          const std::size_t a = concat_axis(x.size());
          batch_first(a != 0, "joining along");
          if (a == 1) not_timed("joins along the time axis");
          return joined_shape(parts, a, who_);
        }
        const int a = stack_axis(int_kw("axis", 0), x.size(), who_);
        batch_first(a != 0, "stacking along");
        if (a == 1) not_timed("stacks along the time axis");
        return stacked_shape(parts, a, who_);
      }
      case Kind::squeeze: {
        const char* key = kwargs_.contains("axis") && !kwargs_["axis"].is_null() ? "axis" : "squeeze_dims";
        std::vector<int> ax;
        if (kwargs_.contains(key) && !kwargs_[key].is_null()) {
          std::vector<int> given;
          if (!io::int_or_ints(kwargs_[key], given))
            fail(Code::invalid_argument, who_, ": ", key, ": expected an integer or a list of integers, got ", io::excerpt(kwargs_[key]));
          ax = normalized_axes(given, x.size(), who_, kwargs_[key]);
        }
        for (int a : ax) {
          batch_first(a != 0, "squeezing");
          if (a == 1) not_timed("squeezes the time axis");
        }
        if (ax.empty() && x.size() >= 2 && (x[1] < 0 || x[1] == 1)) not_timed("squeezes every axis of size 1, the time axis when it has one step");
        return squeezed_shape(x, ax, who_);
      }
      case Kind::expand_dims: {
        if (!kwargs_.contains("axis")) fail(Code::invalid_argument, who_, ": no 'axis'");
        const int given = int_kw("axis", 0);
        const int a = given < 0 ? given + static_cast<int>(x.size()) + 1 : given;
        batch_first(a != 0, "a new axis before");
        if (a == 1) not_timed("inserts an axis before the time axis");
        return expanded_shape(x, given, who_);
      }
      case Kind::transpose: {
        const auto p = perm(x.size());
        if (p.size() >= 2 && p[1] != 1) not_timed("moves the time axis");
        return transposed_shape(x, p);
      }
      case Kind::getitem: {
        if (!key_keeps_time(key_, x.size(), who_)) not_timed("slices the time axis or moves it");
        return sliced_shape(x, key_, who_);
      }
    }
    return x;
  }
  bool bool_kw(const char* key) const {
    try {
      return bool_of(kwargs_, key, false);
    } catch (const Error& e) {
      fail(Code::invalid_argument, who_, ": ", e.what());
    }
  }

  std::string function_, who_, op_;
  Kind kind_ = Kind::binary;
  BinaryFn fn_ = nullptr;
  Reduction how_ = Reduction::sum;
  std::vector<Arg> first_;
  bool first_is_list_ = false;
  json kwargs_ = json::object();
  std::map<std::string, std::size_t> kw_tensor_;
  std::size_t tensors_ = 0;
  float y_ = 0.0f;
  std::vector<SliceItem> key_;
  std::string stream_issue_;
  bool built_ = false;
};

}  // namespace

void register_tf_op_lambda_layers(OpTable& t) {
  t.add({"TFOpLambda", "SlicingOpLambda"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<TfOpLambda>(e, str_of(e, "class_name", ""));
  });
}

}  // namespace recur::graph
