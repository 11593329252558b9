// SPDX-License-Identifier: Apache-2.0
// Keras's pooling layers over time.
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

class GlobalPool1DOp : public Op {
 public:
  GlobalPool1DOp(const json& cfg, bool max) : max_(max) {
    channels_first_ = str_of(cfg, "data_format", "channels_last") == "channels_first";
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
    const bool masked = !max_ && x.mask && !channels_first_;
    for (Index b = 0; b < B; ++b)
      for (Index f = 0; f < F; ++f) {
        float acc = max_ ? -std::numeric_limits<float>::infinity() : 0.0f, count = 0.0f;
        for (Index t = 0; t < T; ++t) {
          const float v = x.data[static_cast<std::size_t>(channels_first_ ? (b * F + f) * T + t : (b * T + t) * F + f)];
          if (max_) {
            acc = std::max(acc, v);
          } else if (masked) {
            const float m = (*x.mask)[static_cast<std::size_t>(b * T + t)] ? 1.0f : 0.0f;
            acc += v * m;
            count += m;
          } else {
            acc += v;
          }
        }
        // Keras divides by the mask's sum: a fully masked row gives 0/0 = NaN, as in Keras.
        y.data[static_cast<std::size_t>(b * F + f)] = max_ ? acc : acc / (masked ? count : static_cast<float>(T));
      }
    return {std::move(y)};
  }

 private:
  bool max_, channels_first_ = false, keepdims_ = false;
};

}  // namespace

void register_pooling_layers(OpTable& t) {
  t.add({"GlobalAveragePooling1D", "GlobalAvgPool1D"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<GlobalPool1DOp>(e.at("config"), false);
  });
  t.add({"GlobalMaxPooling1D", "GlobalMaxPool1D"}, [](const json& e, const BuildContext&, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<GlobalPool1DOp>(e.at("config"), true);
  });
}

}  // namespace recur::graph
