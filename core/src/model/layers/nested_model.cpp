// SPDX-License-Identifier: Apache-2.0
// A Sequential or functional model used as a layer of another.
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

// A Sequential or functional model used as a layer.
class ModelOp : public Op {
 public:
  ModelOp(const json& entry, const BuildContext& ctx, const std::string& object_path)
      : entry_(entry), document_(ctx.document), object_path_(object_path) {}
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext& ctx) override {
    if (!graph_) {
      graph_ = Graph::build(entry_, ctx, object_path_, &in);
      if (!graph_->unsupported.empty()) fail(Code::unsupported, graph_->unsupported);
      return graph_->output_specs;
    }
    if (in.size() != graph_->input_specs.size())
      fail(Code::shape, "model '", name, "' takes ", graph_->input_specs.size(), " inputs, got ", in.size());
    return graph_->infer(in);
  }
  std::vector<Value> forward(const CallInputs& in, RunContext& ctx, int site) const override {
    std::vector<Value> inputs;
    for (const Value* v : in.main) inputs.push_back(*v);
    // A stream keeps the states of the graph's layers apart for each call site of the model.
    RunContext local = ctx;
    if (ctx.stream) local.site_base = ctx.stream->scope(this, site, graph_->nodes.size());
    return graph_->run(inputs, local);
  }
  // Its layers place themselves as at the top level; its outputs stay where they are made.
  std::string device_rule() const override { return ""; }
  bool forward_device(const CallInputs& in, RunContext& ctx, int site, std::vector<Value>& out) const override {
    std::vector<Value> inputs;
    for (const Value* v : in.main) inputs.push_back(*v);
    RunContext local = ctx;
    local.device_outputs = true;
    if (ctx.stream) local.site_base = ctx.stream->scope(this, site, graph_->nodes.size());
    out = graph_->run(inputs, local);
    return true;
  }
  double work(const std::vector<Spec>& main, const std::vector<Spec>& out) const override {
    if (!graph_) return Op::work(main, out);
    const Graph::Plan p = graph_->plan(main);
    return p.known ? p.work : Op::work(main, out);
  }
  std::size_t num_weights() const override { return graph_ ? graph_->num_weights() : 0; }
  std::uint64_t weight_floats() const override { return graph_ ? graph_->weight_floats() : 0; }
  void load(std::vector<StoredWeight>& w, bool, const std::string& where) override { graph_->load_legacy_flat(w, where); }
  void load_keras(const io::H5File& h5, const std::string&, const std::string& file) override { graph_->load_keras(h5, file); }
  std::string stream_rule(const std::vector<bool>& stepped_in, bool, std::vector<bool>& stepped_out) const override {
    graph_->analyse_streaming(stepped_in);
    stepped_out = graph_->stepped_outputs;
    if (!graph_->not_streamable.empty()) return graph_->not_streamable;
    // Which of its nodes step is one plan for every call site (the graph holds one).
    std::vector<bool> plan;
    for (const Node& n : graph_->nodes) plan.push_back(n.stepped_main);
    plan.insert(plan.end(), stepped_out.begin(), stepped_out.end());
    if (!stream_plan_.empty() && stream_plan_ != plan)
      return "model '" + name + "' is called at several sites whose inputs carry the stream's time axis differently";
    stream_plan_ = std::move(plan);
    return "";
  }
  void collect_layers(std::vector<Layer*>& out) override {
    if (graph_) graph_->collect_layers(out);
  }
  void collect_state_ops(std::vector<Op*>& out) override {
    if (graph_)
      for (const auto& l : graph_->layers)
        if (l.op) l.op->collect_state_ops(out);
  }
  bool stateful() const override {
    if (!graph_) return false;
    for (const auto& l : graph_->layers)
      if (l.op && l.op->stateful()) return true;
    return false;
  }

 private:
  const json& entry_;
  std::shared_ptr<const json> document_;  // holds entry_
  std::string object_path_;
  std::unique_ptr<Graph> graph_;
  mutable std::vector<bool> stream_plan_;  // the stepped nodes and outputs of its first call site
};

}  // namespace

void register_nested_models(OpTable& t) {
  t.add({"Sequential", "Functional", "Model"}, [](const json& e, const BuildContext& ctx, const std::string& object_path) -> std::shared_ptr<Op> {
    return std::make_shared<ModelOp>(e, ctx, object_path);
  });
}

}  // namespace recur::graph
