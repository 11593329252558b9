// SPDX-License-Identifier: Apache-2.0
// Keras's layer wrappers: TimeDistributed.
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

class TimeDistributedOp : public Op {
 public:
  TimeDistributedOp(const json& entry, const BuildContext& ctx, const std::string& object_path) {
    const json& cfg = entry.at("config");
    if (!cfg.contains("layer") || !cfg["layer"].is_object()) fail(Code::invalid_argument, "TimeDistributed: config has no 'layer'");
    inner_ = make_op(cfg["layer"], ctx, object_path + "/layer");
    per_step = true;
  }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext& ctx) override {
    check_rank(in, 1, 3, "TimeDistributed");
    Spec inner_in = in[0];
    inner_in.dims.erase(inner_in.dims.begin());
    inner_in.dims[0] = -1;
    std::vector<Spec> o = inner_->build({inner_in}, {}, ctx);
    if (o.empty()) fail(Code::unsupported, "TimeDistributed: the inner layer has no output");
    Spec s = o[0];
    s.dims.insert(s.dims.begin(), in[0].dims[0]);
    s.dims[1] = in[0].dims[1];
    return {s};
  }
  std::vector<Value> forward(const CallInputs& in, RunContext& /*ctx*/, int site) const override {
    const Value& x = *in.main[0];
    Value flat;
    flat.shape = x.shape;
    flat.shape.erase(flat.shape.begin());
    flat.shape[0] = x.shape[0] * x.shape[1];
    flat.data = x.data;
    CallInputs ci;
    ci.main = {&flat};
    RunContext inner_ctx;  // the inner layer sees each timestep as a sample of its own
    std::vector<Value> o = inner_->forward(ci, inner_ctx, site);
    Value y = std::move(o[0]);
    y.shape.insert(y.shape.begin(), x.shape[0]);
    y.shape[1] = x.shape[1];
    y.mask = x.mask;
    return {std::move(y)};
  }
  std::string device_rule() const override { return inner_->device_rule(); }
  bool device_reads_host() const override { return inner_->device_reads_host(); }
  bool forward_device(const CallInputs& in, RunContext& ctx, int site, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    std::vector<Index> flat_shape = x.shape;
    flat_shape.erase(flat_shape.begin());
    flat_shape[0] = x.shape[0] * x.shape[1];
    Value flat = x.device ? DeviceRun::view(x, 0, flat_shape) : Value();
    if (!x.device) {  // an inner op that reads the host (an Embedding)
      flat.data = x.data;
      flat.shape = flat_shape;
      if (x.ids) flat.ids = x.ids;
    }
    CallInputs ci;
    ci.main = {&flat};
    RunContext inner_ctx;  // the inner layer sees each timestep as a sample of its own
    inner_ctx.device = ctx.device;
    std::vector<Value> o;
    if (!inner_->forward_device(ci, inner_ctx, site, o)) return false;
    std::vector<Index> shape = o[0].shape;
    shape.insert(shape.begin(), x.shape[0]);
    shape[1] = x.shape[1];
    Value y = DeviceRun::view(o[0], 0, shape);
    y.mask = x.mask;
    out = {std::move(y)};
    return true;
  }
  double work(const std::vector<Spec>& main, const std::vector<Spec>& out) const override {
    auto flat = [](const Spec& s) {
      Spec f = s;
      if (f.dims.size() >= 2) {
        f.dims[1] = std::max<Index>(f.dims[0], 1) * std::max<Index>(f.dims[1], 1);
        f.dims.erase(f.dims.begin());
      }
      return f;
    };
    if (main.empty() || out.empty()) return Op::work(main, out);
    return inner_->work({flat(main[0])}, {flat(out[0])});
  }
  std::size_t num_weights() const override { return inner_->num_weights(); }
  std::uint64_t weight_floats() const override { return inner_->weight_floats(); }
  void load(std::vector<StoredWeight>& w, bool legacy, const std::string& where) override { inner_->load(w, legacy, where); }
  void load_keras(const io::H5File& h5, const std::string& object, const std::string& file) override {
    inner_->load_keras(h5, object + "/layer", file);
  }
  void collect_layers(std::vector<Layer*>& out) override { inner_->collect_layers(out); }

 private:
  std::shared_ptr<Op> inner_;
};

}  // namespace

void register_wrapper_layers(OpTable& t) {
  t.add({"TimeDistributed"}, [](const json& e, const BuildContext& ctx, const std::string& object_path) -> std::shared_ptr<Op> {
    return std::make_shared<TimeDistributedOp>(e, ctx, object_path);
  });
}

}  // namespace recur::graph
