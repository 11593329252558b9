// SPDX-License-Identifier: Apache-2.0
// Keras's activation layers.
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

class ActivationOp : public Op {
 public:
  ActivationOp(const json& cfg, const DialectInfo& d) : act_(activation_of(cfg, d)) { per_step = true; }
  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>&, const BuildContext&) override {
    check_rank(in, 1, 1, "Activation");
    return in;
  }
  std::vector<Value> forward(const CallInputs& in, RunContext&, int) const override {
    Value y = *in.main[0];
    const Index cols = y.shape.back(), rows = cols ? static_cast<Index>(y.data.size()) / cols : 0;
    apply_activation(act_, y.data.data(), rows, cols);  // softmax runs over the last axis
    return {std::move(y)};
  }

 private:
  ActivationFn act_;
};

}  // namespace

void register_activation_layers(OpTable& t) {
  t.add({"Activation"}, [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<ActivationOp>(e.at("config"), ctx.dialect);
  });
}

}  // namespace recur::graph
