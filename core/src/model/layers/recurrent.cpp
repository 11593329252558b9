// SPDX-License-Identifier: Apache-2.0
// Keras's recurrent layers in a model (GRU, LSTM, SimpleRNN, CuDNNGRU, CuDNNLSTM, Bidirectional):
// recur::Layer objects called at call sites, with their states, masks and streaming.
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
#include "recur/layer.hpp"
#include "recur/state.hpp"

namespace recur::graph {
namespace {

const char* const kRecurrentClasses[] = {"GRU", "LSTM", "CuDNNGRU", "CuDNNLSTM", "SimpleRNN"};

bool is_recurrent_class(const std::string& cls) {
  for (const char* c : kRecurrentClasses)
    if (cls == c) return true;
  return false;
}

class RecurrentOp : public Op {
 public:
  RecurrentOp(const json& entry, const BuildContext& ctx, bool bidirectional)
      : entry_(entry), document_(ctx.document), bidirectional_(bidirectional) {}

  std::vector<Spec> build(const std::vector<Spec>& in, const std::vector<Spec>& init, const BuildContext& ctx) override {
    check_rank(in, 1, 3, class_name.c_str());
    if (in[0].dims.size() != 3)
      fail(Code::shape, class_name, ": expected (batch, timesteps, features), got ", spec_string(in[0]));
    const Index F = known_last(in[0], class_name.c_str());
    if (!fwd_) make_layers(static_cast<int>(F), in[0], ctx);
    else if (F != fwd_->config().input_size)
      fail(Code::shape, class_name, ": built for ", fwd_->config().input_size, " features, called on ", spec_string(in[0]));
    const LayerConfig& c = fwd_->config();
    if (c.time_major && graph_issue.empty())
      graph_issue = "time_major layers inside a model (Keras feeds them batch-major tensors)";
    const int ns = fwd_->num_states();
    const std::size_t want = static_cast<std::size_t>(bidirectional_ ? 2 * ns : ns);
    if (!init.empty()) {
      if (init.size() != want)
        fail(Code::shape, class_name, ": initial_state holds ", init.size(), " tensors, the layer has ", want, " states");
      for (std::size_t i = 0; i < init.size(); ++i) {
        const Layer& l = bidirectional_ && i >= static_cast<std::size_t>(ns) ? *bwd_ : *fwd_;
        if (init[i].dims.size() != 2 || (init[i].dims[1] >= 0 && init[i].dims[1] != l.config().units))
          fail(Code::shape, class_name, ": initial_state[", i, "] must be (batch, ", l.config().units, "), got ",
               spec_string(init[i]));
      }
    }
    const Index B = in[0].dims[0], T = in[0].dims[1];
    auto out_spec = [&](const Layer& l) {
      Spec s;
      s.dims = c.return_sequences ? std::vector<Index>{B, T, l.config().units} : std::vector<Index>{B, l.config().units};
      return s;
    };
    std::vector<Spec> out;
    if (!bidirectional_) {
      out.push_back(out_spec(*fwd_));
    } else if (merge_ == "none") {
      out.push_back(out_spec(*fwd_));
      out.push_back(out_spec(*bwd_));
    } else {
      Spec s = out_spec(*fwd_);
      if (merge_ == "concat") s.dims.back() = fwd_->config().units + bwd_->config().units;
      out.push_back(s);
    }
    if (c.return_state) {
      for (int i = 0; i < ns; ++i) out.push_back(Spec{{B, fwd_->config().units}, false});
      if (bidirectional_)
        for (int i = 0; i < ns; ++i) out.push_back(Spec{{B, bwd_->config().units}, false});
    }
    return out;
  }

  void make_layers(int F, const Spec& in, const BuildContext& ctx) {
    double made = 0;
    auto make = [&](json e, bool zero_output) {
      json& cfg = e["config"];
      // Bidirectional sets it on its halves; Keras 2's CuDNN layers have no such argument.
      const std::string cls = e.value("class_name", std::string());
      if (zero_output && cls != "CuDNNGRU" && cls != "CuDNNLSTM") cfg["zero_output_for_mask"] = true;
      // A stateful layer whose entry records no input shape (Keras 3's .h5 drops build_config)
      // takes its batch size from the Input that feeds it, as Keras's functional rebuild does.
      if (cfg.value("stateful", json(false)) == json(true) && !cfg.contains("batch_input_shape") &&
          !(e.contains("build_config") && e["build_config"].is_object() && e["build_config"].contains("input_shape"))) {
        json shape = json::array();
        for (Index d : in.dims) shape.push_back(d < 0 ? json(nullptr) : json(d));
        e["build_config"] = json{{"input_shape", shape}};
      }
      // float64 layers run in float32 (within float32 rounding of Keras's float64 numbers).
      if (cfg.contains("dtype")) {
        json& d = cfg["dtype"];
        if (d.is_string() && d.get<std::string>() == "float64") d = "float32";
        if (d.is_object() && d.contains("config") && d["config"].is_object() && d["config"].value("name", json()) == json("float64"))
          d["config"]["name"] = "float32";
      }
      LayerConfig c = parse_layer_entry(e, F, ctx.dialect.dialect, ctx.keras_version);
      // parse_layer_entry validated the sizes against the limits, so the products cannot overflow.
      double floats = 0;
      for (const WeightSpec& w : weight_specs(c)) floats += static_cast<double>(product(w.shape));
      // Both halves of a Bidirectional count: the backward one after the forward one is built.
      ctx.reserve_weights(made + floats, class_name.empty() ? cls : class_name);
      made += floats;
      return std::make_shared<Layer>(std::move(c));
    };
    // All or nothing: a layer whose build failed is built again from its recorded input shape
    // (Graph::build), and must not find one half made and the other missing.
    if (!bidirectional_) {
      fwd_ = make(entry_, false);
      return;
    }
    const json& cfg = entry_.at("config");
    if (!cfg.contains("layer") || !cfg["layer"].is_object()) fail(Code::invalid_argument, "Bidirectional: config has no 'layer'");
    const json& inner = cfg["layer"];
    const std::string icls = inner.value("class_name", std::string());
    if (!is_recurrent_class(icls)) fail(Code::unsupported, "Bidirectional of ", icls);
    const bool seq = inner.at("config").value("return_sequences", false);
    const std::shared_ptr<Layer> fwd = make(inner, seq);
    json back;
    if (cfg.contains("backward_layer") && cfg["backward_layer"].is_object()) {
      back = cfg["backward_layer"];
    } else {
      back = inner;  // Keras builds the backward half from the same config, reversed
      back["config"]["go_backwards"] = !inner.at("config").value("go_backwards", false);
      if (back["config"].contains("name") && back["config"]["name"].is_string())
        back["config"]["name"] = "backward_" + back["config"]["name"].get<std::string>();
    }
    const std::shared_ptr<Layer> bwd = make(back, seq);
    const std::string merge =
        cfg.contains("merge_mode") && cfg["merge_mode"].is_string() ? cfg["merge_mode"].get<std::string>() : "none";
    if (merge != "concat" && merge != "sum" && merge != "mul" && merge != "ave" && merge != "none")
      fail(Code::unsupported, "Bidirectional: merge_mode '", merge, "'");
    if (merge != "concat" && merge != "none" && fwd->config().units != bwd->config().units)
      fail(Code::shape, "Bidirectional: merge_mode '", merge, "' needs halves of the same units");
    if (bwd->config().return_sequences != seq || bwd->config().return_state != fwd->config().return_state)
      fail(Code::invalid_argument, "Bidirectional: backward_layer must match the forward layer's return_sequences and return_state");
    fwd_ = fwd;
    bwd_ = bwd;
    merge_ = merge;
  }

  std::vector<Value> forward(const CallInputs& in, RunContext& ctx, int site) const override {
    const Value& x = *in.main[0];
    const Index B = x.shape[0], T = x.shape[1];
    const bool rs = fwd_->config().return_sequences;
    const int ns = fwd_->num_states();
    std::vector<Value> states;
    auto run = [&](Layer& layer, int half) {
      const Index u = layer.config().units;
      Value y = make_value(rs ? std::vector<Index>{B, T, u} : std::vector<Index>{B, u}, class_name.c_str());
      const bool want_states = fwd_->config().return_state;
      std::vector<float> final_state(want_states ? static_cast<std::size_t>(ns * B * u) : 0);
      const bool masked = x.mask && !in.drop_mask;
      const std::uint8_t* mask = masked ? x.mask->data() : nullptr;
      const std::size_t mask_len = masked ? x.mask->size() : 0;
      if (ctx.stream && ctx.stepped) {
        std::vector<State>& st = ctx.stream->states[{this, site}];
        if (st.empty()) {
          st.emplace_back(ns, B, static_cast<int>(fwd_->config().units));
          if (bwd_) st.emplace_back(ns, B, static_cast<int>(bwd_->config().units));
          // A stream starts from the initial_state tensors (model inputs) of its first step.
          for (std::size_t k = 0; k < in.initial_state.size(); ++k) {
            const Value& v = *in.initial_state[k];
            State& target = st[k / static_cast<std::size_t>(ns)];
            const Index uu = target.units();
            if (v.shape != std::vector<Index>{B, uu})
              fail(Code::shape, "layer '", name, "': initial_state[", k, "] is ", shape_string(v.shape), ", expected ",
                   shape_string({B, uu}));
            std::copy_n(v.data.data(), v.data.size(), target.tensor(static_cast<int>(k % static_cast<std::size_t>(ns))).data());
          }
        }
        State& s = st[static_cast<std::size_t>(half)];
        layer.call_state(s, x.data.data(), x.data.size(), T, mask, mask_len, y.data.data(), y.data.size());
        if (want_states) s.get(final_state.data(), final_state.size());
      } else {
        LayerCall c;
        c.input = x.data.data();
        c.input_len = x.data.size();
        c.batch = B;
        c.timesteps = T;
        c.mask = mask;
        c.mask_len = mask_len;
        std::vector<float> init;
        if (!in.initial_state.empty()) {
          for (int i = 0; i < ns; ++i) {
            const Value& v = *in.initial_state[static_cast<std::size_t>(half * ns + i)];
            if (v.shape != std::vector<Index>{B, u})
              fail(Code::shape, "layer '", name, "': initial_state[", half * ns + i, "] is ", shape_string(v.shape),
                   ", expected ", shape_string({B, u}));
            init.insert(init.end(), v.data.begin(), v.data.end());
          }
          c.initial_state = init.data();
          c.initial_state_len = init.size();
          c.num_initial_states = ns;
        }
        c.output = y.data.data();
        c.output_len = y.data.size();
        if (want_states) {
          c.final_state = final_state.data();
          c.final_state_len = final_state.size();
        }
        layer.call(c);
      }
      if (rs && masked) y.mask = x.mask;
      if (!fwd_->config().return_state) return y;
      for (int i = 0; i < ns; ++i) {
        Value s = make_value({B, u}, "state");
        std::copy_n(final_state.data() + i * B * u, B * u, s.data.data());
        states.push_back(std::move(s));
      }
      return y;
    };
    std::vector<Value> out;
    Value y = run(*fwd_, 0);
    if (!bidirectional_) {
      out.push_back(std::move(y));
    } else {
      Value yb = run(*bwd_, 1);
      const Index uf = fwd_->config().units, ub = bwd_->config().units;
      if (rs) {  // Keras flips the backward outputs back into input order
        Value flipped = yb;
        for (Index b = 0; b < B; ++b)
          for (Index t = 0; t < T; ++t)
            std::copy_n(yb.data.data() + (b * T + (T - 1 - t)) * ub, ub, flipped.data.data() + (b * T + t) * ub);
        yb = std::move(flipped);
      }
      if (merge_ == "none") {
        out.push_back(std::move(y));
        out.push_back(std::move(yb));
      } else if (merge_ == "concat") {
        const Index r = rs ? B * T : B;
        std::vector<Index> shape = y.shape;
        shape.back() = uf + ub;
        Value m = make_value(shape, "Bidirectional");
        for (Index i = 0; i < r; ++i) {
          std::copy_n(y.data.data() + i * uf, uf, m.data.data() + i * (uf + ub));
          std::copy_n(yb.data.data() + i * ub, ub, m.data.data() + i * (uf + ub) + uf);
        }
        m.mask = y.mask;
        out.push_back(std::move(m));
      } else {
        for (std::size_t i = 0; i < y.data.size(); ++i) {
          if (merge_ == "sum") y.data[i] = y.data[i] + yb.data[i];
          else if (merge_ == "mul") y.data[i] = y.data[i] * yb.data[i];
          else y.data[i] = (y.data[i] + yb.data[i]) / 2.0f;
        }
        out.push_back(std::move(y));
      }
    }
    if (fwd_->config().return_state)
      for (auto& s : states) out.push_back(std::move(s));
    return out;
  }

  std::size_t num_weights() const override {
    return fwd_ ? fwd_->num_weights() * (bwd_ ? 2 : 1) : 0;
  }
  std::uint64_t weight_floats() const override {
    return (fwd_ ? fwd_->weights_size() : 0) + (bwd_ ? bwd_->weights_size() : 0);
  }
  void load(std::vector<StoredWeight>& w, bool legacy, const std::string& where) override;
  void load_keras(const io::H5File& h5, const std::string& object, const std::string& file) override {
    auto rnn_vars = [&](const std::string& obj, const Layer& l) {
      if (!h5.is_group(obj)) fail(Code::io, file, ": model.weights.h5:/", obj, ": missing (config and weights disagree)");
      const std::uint64_t budget = 2 * l.weights_size() + 16;
      std::vector<StoredWeight> w = h5.is_group(obj + "/cell") ? read_vars(h5, obj + "/cell", file, budget) : std::vector<StoredWeight>();
      if (w.empty()) w = read_vars(h5, obj, file, budget);  // CuDNN layers keep their variables directly
      return w;
    };
    std::vector<StoredWeight> w;
    if (bidirectional_) {
      w = rnn_vars(object + "/forward_layer", *fwd_);
      for (auto& x : rnn_vars(object + "/backward_layer", *bwd_)) w.push_back(std::move(x));
    } else {
      w = rnn_vars(object, *fwd_);
    }
    const std::size_t want = num_weights();
    if (w.size() != want)
      fail(Code::io, file, ": model.weights.h5:/", object, ": the file holds ", w.size(), " weight(s) for layer '", name,
           "', the config needs ", want);
    load(w, false, file + ": model.weights.h5:/" + object);
  }

  std::string stream_rule(const std::vector<bool>& stepped_in, bool has_init, std::vector<bool>& stepped_out) const override {
    stepped_out.assign(stepped_out.size(), false);
    if (!stepped_in[0]) return "";  // a sequence of its own (e.g. after RepeatVector): run whole each step
    if (bidirectional_) return "Bidirectional reads the whole sequence backwards";
    if (fwd_->config().go_backwards) return "go_backwards reads the sequence from its end";
    if (has_init) return "its initial_state comes from other layers of the graph (only model inputs can start a stream)";
    if (!stepped_out.empty()) stepped_out[0] = fwd_->config().return_sequences;
    return "";
  }
  void collect_layers(std::vector<Layer*>& out) override {
    if (fwd_) out.push_back(fwd_.get());
    if (bwd_) out.push_back(bwd_.get());
  }
  bool stateful() const override { return fwd_ && fwd_->config().stateful; }

  const json& entry_;
  std::shared_ptr<const json> document_;  // holds entry_
  bool bidirectional_;
  std::shared_ptr<Layer> fwd_, bwd_;
  std::string merge_ = "concat";
};

void RecurrentOp::load(std::vector<StoredWeight>& all, bool legacy, const std::string& where) {
  std::vector<std::shared_ptr<Layer>> targets{fwd_};
  if (bwd_) targets.push_back(bwd_);
  const std::size_t per = fwd_->num_weights();
  for (std::size_t t = 0; t < targets.size(); ++t) {
    Layer& layer = *targets[t];
    if (all.size() < per) fail(Code::io, where, ": the file holds fewer weights than layer '", name, "' needs");
    std::vector<StoredWeight> mine(std::make_move_iterator(all.begin()), std::make_move_iterator(all.begin() + static_cast<long>(per)));
    all.erase(all.begin(), all.begin() + static_cast<long>(per));
    for (const auto& sw : mine)
      for (float v : sw.data)
        if (!std::isfinite(v)) fail(Code::io, weight_location(where, sw.path), ": non-finite weight value");
    const LayerConfig& c = layer.config();
    const Index u = c.units;
    const int G = c.gates();
    if (legacy && c.dialect.dialect == Dialect::keras2 && per == 3 && (c.is_gru() || c.kind == LayerKind::lstm || c.is_cudnn())) {
      // Keras 2's h5 loader converts between CuDNN and native layouts, told apart by the bias shape.
      const auto& bshape = mine[2].shape;
      const bool stored_cudnn = bshape.size() == 1 && bshape[0] == 2 * G * u;
      const bool stored_gru_after = bshape.size() == 2;
      const bool stored_gru_before = bshape.size() == 1 && bshape[0] == G * u && c.is_gru();
      const std::string target = c.is_cudnn() ? kind_name(c.kind)
                                              : (c.is_gru() ? (c.reset_after ? "GRU(reset_after=True)" : "GRU(reset_after=False)") : "LSTM");
      const std::string source = stored_cudnn ? (c.is_gru() ? "CuDNNGRU" : "CuDNNLSTM")
                                 : stored_gru_after ? "GRU(reset_after=True)"
                                 : stored_gru_before ? "GRU(reset_after=False)"
                                                     : (c.is_gru() ? target : "LSTM");
      if (source != target) {
        const bool ok = (source == "CuDNNGRU" && target == "GRU(reset_after=True)") ||
                        (source == "GRU(reset_after=True)" && target == "CuDNNGRU") ||
                        (source == "CuDNNLSTM" && target == "LSTM") || (source == "LSTM" && target == "CuDNNLSTM");
        if (!ok)
          fail(Code::io, weight_location(where, mine[2].path), ": ", source, " is not compatible with ", target,
               " (layer '", io::printable(name), "' cannot take this bias layout)");
        const bool to_native = source.rfind("CuDNN", 0) == 0;
        if (!to_native) expect_shape(mine[2], c.is_gru() ? std::vector<std::int64_t>{2, G * u} : std::vector<std::int64_t>{G * u}, where);
        expect_shape(mine[0], {c.input_size, G * u}, where);
        expect_shape(mine[1], {u, G * u}, where);
        RowMatrix k = Eigen::Map<RowMatrix>(mine[0].data.data(), c.input_size, G * u);
        RowMatrix r = Eigen::Map<RowMatrix>(mine[1].data.data(), u, G * u);
        k = to_native ? cudnn_kernel_to_native(k, G, u) : native_kernel_to_cudnn(k, G, u);
        r = transpose_gate_blocks(r, G, u);
        std::copy_n(k.data(), mine[0].data.size(), mine[0].data.data());
        std::copy_n(r.data(), mine[1].data.size(), mine[1].data.data());
        std::vector<float>& b = mine[2].data;
        if (c.is_gru()) {
          mine[2].shape = to_native ? std::vector<std::int64_t>{2, G * u} : std::vector<std::int64_t>{2 * G * u};
        } else if (to_native) {
          std::vector<float> sum(static_cast<std::size_t>(G * u));
          for (std::size_t i = 0; i < sum.size(); ++i) sum[i] = b[i] + b[i + sum.size()];
          b = sum;
          mine[2].shape = {G * u};
        } else {
          std::vector<float> split(b.size() * 2);
          for (std::size_t i = 0; i < b.size(); ++i) split[i] = split[i + b.size()] = 0.5f * b[i];
          b = split;
          mine[2].shape = {2 * G * u};
        }
      }
    }
    for (std::size_t i = 0; i < per; ++i) {
      const WeightSpec& spec = layer.weight_spec(i);
      expect_shape(mine[i], std::vector<std::int64_t>(spec.shape.begin(), spec.shape.end()), where);
      layer.set_weight(i, mine[i].data.data(), mine[i].data.size(), nullptr, 0);
    }
  }
}

}  // namespace

void register_recurrent_layers(OpTable& t) {
  t.add({"GRU", "LSTM", "CuDNNGRU", "CuDNNLSTM", "SimpleRNN"},
        [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
          return std::make_shared<RecurrentOp>(e, ctx, false);
        });
  t.add({"Bidirectional"}, [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<RecurrentOp>(e, ctx, true);
  });
}

}  // namespace recur::graph
