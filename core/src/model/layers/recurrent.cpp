// SPDX-License-Identifier: Apache-2.0
// Keras's recurrent layers in a model (GRU, LSTM, SimpleRNN, CuDNNGRU, CuDNNLSTM, RNN over
// GRUCell/LSTMCell/SimpleRNNCell/StackedRNNCells, Bidirectional):
// recur::Layer objects called at call sites, with their states, masks and streaming.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <numeric>

#include "io/json_int.hpp"
#include "io/keras_entry.hpp"
#include "io/printable.hpp"
#include "gpu/gpu_layer.hpp"
#include "model/device_run.hpp"
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

const char* const kRecurrentClasses[] = {"GRU", "LSTM", "CuDNNGRU", "CuDNNLSTM", "SimpleRNN", "RNN"};

bool is_recurrent_class(const std::string& cls) {
  for (const char* c : kRecurrentClasses)
    if (cls == c) return true;
  return false;
}

// The layer class that runs a cell class over a sequence; "" for a class recur has no layer for.
std::string layer_class_of_cell(const std::string& cell) {
  if (cell == "GRUCell") return "GRU";
  if (cell == "LSTMCell") return "LSTM";
  if (cell == "SimpleRNNCell") return "SimpleRNN";
  return "";
}

// .keras names a stack's cells after their classes, numbered when a class repeats.
std::string cell_object_name(const std::string& cell) {
  if (cell == "GRUCell") return "gru_cell";
  if (cell == "LSTMCell") return "lstm_cell";
  return "simple_rnn_cell";
}

// One direction of a recurrent layer: the recur Layers that run one after the other over the
// sequence. GRU, LSTM, SimpleRNN and RNN(cell) are one Layer; RNN(StackedRNNCells) is one per cell.
// Keras steps a stack as one cell whose states are its cells' states in order; a masked step keeps
// them all and repeats the last cell's output, which is what each Layer of the chain does with the
// same mask (a Layer ignores its input at a masked step), so the chain gives Keras's numbers.
struct Chain {
  std::vector<std::shared_ptr<Layer>> layers;
  std::vector<std::string> objects;  // .keras objects of the cells under the layer's "cell", one per Layer
  bool return_sequences = false, return_state = false, go_backwards = false, unroll = false;
  // Keras's unrolled TF loop zeroes a backwards run's masked outputs in input order (see
  // SequenceJob::unrolled_mask_quirk); a chain's last Layer runs forwards, so the op does it.
  bool zero_output_quirk = false;
  const LayerConfig& first() const { return layers.front()->config(); }
  const LayerConfig& last() const { return layers.back()->config(); }
  int num_states() const {
    int n = 0;
    for (const auto& l : layers) n += l->num_states();
    return n;
  }
  // The Layer and its state index of state k, and the units of it.
  std::pair<std::size_t, int> state_of(int k) const {
    for (std::size_t i = 0; i < layers.size(); ++i) {
      if (k < layers[i]->num_states()) return {i, k};
      k -= layers[i]->num_states();
    }
    return {layers.size(), 0};
  }
  Index state_units(int k) const { return layers[state_of(k).first]->config().units; }
  std::size_t num_weights() const {
    std::size_t n = 0;
    for (const auto& l : layers) n += l->num_weights();
    return n;
  }
  std::uint64_t weights_size() const {
    std::uint64_t n = 0;
    for (const auto& l : layers) n += l->weights_size();
    return n;
  }
};

// The mask a chain's layers after the first see: the first one's outputs come in processing order,
// so for a backwards chain the mask reversed in time (empty: the layers use the mask as given).
std::vector<std::uint8_t> later_layers_mask(const Chain& ch, const std::uint8_t* mask, std::size_t mask_len, Index B,
                                            Index T) {
  std::vector<std::uint8_t> reversed;
  if (mask && ch.layers.size() > 1 && ch.go_backwards) {
    reversed.resize(mask_len);
    for (Index b = 0; b < B; ++b)
      for (Index t = 0; t < T; ++t) reversed[static_cast<std::size_t>(b * T + t)] = mask[b * T + (T - 1 - t)];
  }
  return reversed;
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
    else if (F != fwd_->first().input_size)
      fail(Code::shape, class_name, ": built for ", fwd_->first().input_size, " features, called on ", spec_string(in[0]));
    const Chain& f = *fwd_;
    if (f.first().time_major && graph_issue.empty())
      graph_issue = "time_major layers inside a model (Keras feeds them batch-major tensors)";
    const int ns = f.num_states();
    const std::size_t want = static_cast<std::size_t>(bidirectional_ ? ns + bwd_->num_states() : ns);
    if (!init.empty()) {
      if (init.size() != want)
        fail(Code::shape, class_name, ": initial_state holds ", init.size(), " tensors, the layer has ", want, " states");
      for (std::size_t i = 0; i < init.size(); ++i) {
        const bool back = bidirectional_ && i >= static_cast<std::size_t>(ns);
        const Index u = (back ? *bwd_ : f).state_units(static_cast<int>(back ? i - static_cast<std::size_t>(ns) : i));
        if (init[i].dims.size() != 2 || (init[i].dims[1] >= 0 && init[i].dims[1] != u))
          fail(Code::shape, class_name, ": initial_state[", i, "] must be (batch, ", u, "), got ", spec_string(init[i]));
      }
    }
    const Index B = in[0].dims[0], T = in[0].dims[1];
    auto out_spec = [&](const Chain& c) {
      const Index u = c.last().units;
      Spec s;
      s.dims = f.return_sequences ? std::vector<Index>{B, T, u} : std::vector<Index>{B, u};
      return s;
    };
    std::vector<Spec> out;
    if (!bidirectional_) {
      out.push_back(out_spec(f));
    } else if (merge_ == "none") {
      out.push_back(out_spec(f));
      out.push_back(out_spec(*bwd_));
    } else {
      Spec s = out_spec(f);
      if (merge_ == "concat") s.dims.back() = f.last().units + bwd_->last().units;
      out.push_back(s);
    }
    if (f.return_state) {
      for (const Chain* c : {fwd_.get(), bwd_.get()}) {
        if (!c) continue;
        for (int i = 0; i < c->num_states(); ++i) out.push_back(Spec{{B, c->state_units(i)}, false});
      }
    }
    return out;
  }

  // The layer entries of one direction, one per Layer of its chain. `zero_output`: Bidirectional
  // sets zero_output_for_mask on its halves (to their return_sequences).
  std::vector<json> chain_entries(const json& e, const Spec& in, bool zero_output, Chain& chain) const {
    const std::string cls = str_of(e, "class_name", "");
    if (!e.contains("config") || !e["config"].is_object()) fail(Code::invalid_argument, cls, ": missing the object field \"config\"");
    const json& cfg = e["config"];
    auto flag = [&](const char* key) { return bool_of(cfg, key, false); };
    chain.return_sequences = flag("return_sequences");
    chain.return_state = flag("return_state");
    chain.go_backwards = flag("go_backwards");
    chain.unroll = cls != "CuDNNGRU" && cls != "CuDNNLSTM" && flag("unroll");
    zero_output = zero_output && chain.return_sequences;
    if (cls != "RNN") {
      json one = e;
      if (zero_output && cls != "CuDNNGRU" && cls != "CuDNNLSTM") one["config"]["zero_output_for_mask"] = true;
      chain.objects.push_back("");
      return {one};
    }
    // RNN(cell): the cell's config with the RNN's options is the config of the matching layer.
    static const char* const kOptions[] = {"return_sequences", "return_state", "go_backwards", "stateful", "unroll",
                                           "zero_output_for_mask", "time_major"};
    const bool k3 = dialect_ == Dialect::keras3;
    for (auto it = cfg.begin(); it != cfg.end(); ++it) {
      const std::string& k = it.key();
      bool known = k == "name" || k == "trainable" || k == "dtype" || k == "cell" || k == "batch_input_shape" ||
                   k == "input_shape" || k == "batch_size" || k == "input_dim" || k == "input_length" || k == "num_constants";
      for (const char* o : kOptions) known = known || k == o;
      if (!known) fail(Code::invalid_argument, "RNN: config has no argument '", io::printable(k), "'");
    }
    if (int_of(cfg, "num_constants", 0) != 0)
      fail(Code::unsupported, "RNN: num_constants: cells called with constants are not supported (recur runs GRUCell, "
           "LSTMCell, SimpleRNNCell and StackedRNNCells of them, which take none)");
    if (!cfg.contains("cell") || !cfg["cell"].is_object() || !cfg["cell"].contains("class_name") ||
        !cfg["cell"]["class_name"].is_string() || !cfg["cell"].contains("config") || !cfg["cell"]["config"].is_object())
      fail(Code::invalid_argument, "RNN: cell: expected {\"class_name\": ..., \"config\": {...}}, got ",
           io::excerpt(cfg.value("cell", json())));
    const json& cell = cfg["cell"];
    std::vector<const json*> cells;
    const std::string ccls = cell["class_name"].get<std::string>();
    if (ccls == "StackedRNNCells") {
      const json& scfg = cell["config"];
      if (!scfg.contains("cells") || !scfg["cells"].is_array())
        fail(Code::invalid_argument, "StackedRNNCells: cells: expected a list of cells, got ", io::excerpt(scfg.value("cells", json())));
      if (scfg["cells"].empty()) fail(Code::invalid_argument, "StackedRNNCells: cells: the list is empty (a stack needs at least one cell)");
      if (scfg["cells"].size() > 1024) fail(Code::invalid_argument, "StackedRNNCells: cells: ", scfg["cells"].size(), " cells (at most 1024)");
      if (scfg.contains("reverse_state_order") && bool_of(scfg, "reverse_state_order", false))
        fail(Code::unsupported, "StackedRNNCells: reverse_state_order=True (deprecated in Keras 2) is not supported");
      std::map<std::string, int> used;
      for (std::size_t i = 0; i < scfg["cells"].size(); ++i) {
        const json& c = scfg["cells"][i];
        if (!c.is_object() || !c.contains("class_name") || !c["class_name"].is_string() || !c.contains("config") ||
            !c["config"].is_object())
          fail(Code::invalid_argument, "StackedRNNCells: cells[", i, "]: expected {\"class_name\": ..., \"config\": {...}}, got ",
               io::excerpt(c));
        const std::string cc = c["class_name"].get<std::string>();
        if (cc == "StackedRNNCells")
          fail(Code::unsupported, "StackedRNNCells: cells[", i, "] is a StackedRNNCells (nested stacks are not supported)");
        if (layer_class_of_cell(cc).empty())
          fail(Code::unsupported, "StackedRNNCells: cells[", i, "]: cell class '", io::printable(cc),
               "' is not one recur runs (GRUCell, LSTMCell, SimpleRNNCell)");
        const std::string base = cell_object_name(cc);
        const int n = used[base]++;
        chain.objects.push_back("cells/" + (n == 0 ? base : base + "_" + std::to_string(n)));
        cells.push_back(&c);
      }
    } else {
      if (layer_class_of_cell(ccls).empty())
        fail(Code::unsupported, "RNN: cell class '", io::printable(ccls),
             "' is not one recur runs (GRUCell, LSTMCell, SimpleRNNCell, or StackedRNNCells of them)");
      chain.objects.push_back("");
      cells.push_back(&cell);
    }
    const bool zof = zero_output || flag("zero_output_for_mask");
    const std::size_t n = cells.size();
    chain.zero_output_quirk = n > 1 && chain.unroll && chain.go_backwards && zof;
    // A fixed batch (a stateful RNN): the Input's, or the one the RNN records.
    json batch = in.dims[0] >= 0 ? json(in.dims[0]) : json(nullptr);
    if (batch.is_null() && !k3 && cfg.contains("batch_input_shape") && cfg["batch_input_shape"].is_array() &&
        !cfg["batch_input_shape"].empty() && cfg["batch_input_shape"][0].is_number_integer())
      batch = cfg["batch_input_shape"][0];
    std::vector<json> out;
    for (std::size_t i = 0; i < n; ++i) {
      const json& c = *cells[i];
      json one = json::object();
      one["class_name"] = layer_class_of_cell(c["class_name"].get<std::string>());
      json lc = c["config"];
      for (const char* o : kOptions)
        if (cfg.contains(o)) lc[o] = cfg[o];
      // Within a chain, every Layer but the first runs forwards over the outputs of the one
      // before, which are already in processing order, and every Layer but the last returns
      // its whole sequence.
      if (i > 0) lc["go_backwards"] = false;
      if (i + 1 < n) lc["return_sequences"] = true;
      lc["zero_output_for_mask"] = i + 1 == n && zof && !chain.zero_output_quirk;
      if (!lc.contains("name") || !lc["name"].is_string()) lc["name"] = cfg.value("name", json("rnn"));
      one["config"] = std::move(lc);
      one["build_config"] = json{{"input_shape", json::array({batch, nullptr, nullptr})}};
      out.push_back(std::move(one));
    }
    return out;
  }

  void make_layers(int F, const Spec& in, const BuildContext& ctx) {
    dialect_ = ctx.dialect.dialect;
    double made = 0;
    auto make = [&](json e, int features) {
      json& cfg = e["config"];
      const std::string cls = str_of(e, "class_name", "");
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
      LayerConfig c = parse_layer_entry(e, features, ctx.dialect.dialect, ctx.keras_version);
      // parse_layer_entry validated the sizes against the limits, so the products cannot overflow.
      double floats = 0;
      for (const WeightSpec& w : weight_specs(c)) floats += static_cast<double>(product(w.shape));
      // Both halves of a Bidirectional count: the backward one after the forward one is built.
      ctx.reserve_weights(made + floats, class_name.empty() ? cls : class_name);
      made += floats;
      if (c.stateful)
        ctx.reserve_states(4.0 * (c.num_states() + 1) * double(c.batch_size) * double(c.units),
                           "layer '" + name + "' (" + (class_name.empty() ? cls : class_name) + "): batch_size=" +
                               std::to_string(c.batch_size) + " and units=" + std::to_string(c.units));
      return std::make_shared<Layer>(std::move(c));
    };
    auto make_chain = [&](const json& e, bool zero_output) {
      auto chain = std::make_shared<Chain>();
      int features = F;
      for (const json& one : chain_entries(e, in, zero_output, *chain)) {
        chain->layers.push_back(make(one, features));
        features = chain->layers.back()->config().units;
      }
      return chain;
    };
    // All or nothing: a layer whose build failed is built again from its recorded input shape
    // (Graph::build), and must not find one half made and the other missing.
    if (!bidirectional_) {
      fwd_ = make_chain(entry_, false);
      return;
    }
    const json& cfg = entry_.at("config");
    if (!cfg.contains("layer") || !cfg["layer"].is_object()) fail(Code::invalid_argument, "Bidirectional: config has no 'layer'");
    const json& inner = cfg["layer"];
    const std::string icls = str_of(inner, "class_name", "");
    if (!is_recurrent_class(icls)) fail(Code::unsupported, "Bidirectional of ", icls);
    if (!inner.contains("config") || !inner["config"].is_object()) fail(Code::invalid_argument, "Bidirectional: layer has no config");
    const std::shared_ptr<Chain> fwd = make_chain(inner, true);
    json back;
    if (cfg.contains("backward_layer") && cfg["backward_layer"].is_object()) {
      back = cfg["backward_layer"];
    } else {
      back = inner;  // Keras builds the backward half from the same config, reversed
      back["config"]["go_backwards"] = !bool_of(inner["config"], "go_backwards", false);
      if (back["config"].contains("name") && back["config"]["name"].is_string())
        back["config"]["name"] = "backward_" + back["config"]["name"].get<std::string>();
    }
    const std::shared_ptr<Chain> bwd = make_chain(back, true);
    const std::string merge =
        cfg.contains("merge_mode") && cfg["merge_mode"].is_string() ? cfg["merge_mode"].get<std::string>() : "none";
    if (merge != "concat" && merge != "sum" && merge != "mul" && merge != "ave" && merge != "none")
      fail(Code::unsupported, "Bidirectional: merge_mode '", merge, "'");
    if (merge != "concat" && merge != "none" && fwd->last().units != bwd->last().units)
      fail(Code::shape, "Bidirectional: merge_mode '", merge, "' needs halves of the same units");
    if (bwd->return_sequences != fwd->return_sequences || bwd->return_state != fwd->return_state)
      fail(Code::invalid_argument, "Bidirectional: backward_layer must match the forward layer's return_sequences and return_state");
    fwd_ = fwd;
    bwd_ = bwd;
    merge_ = merge;
  }

  // Initial state k of the call, checked to be (B, u).
  const Value& initial_state(const std::vector<const Value*>& init, int k, Index B, Index u) const {
    const Value& v = *init[static_cast<std::size_t>(k)];
    if (v.shape != std::vector<Index>{B, u})
      fail(Code::shape, "layer '", name, "': initial_state[", k, "] is ", shape_string(v.shape), ", expected ",
           shape_string({B, u}));
    return v;
  }

  // Runs one direction over x: its output (the last Layer's) and, when `states` is given, its
  // final states appended. `init`: its initial states (or none); `st`: a stream's States, one per Layer.
  Value run_chain(const Chain& ch, const Value& x, const std::uint8_t* mask, std::size_t mask_len,
                  const std::vector<const Value*>& init, int init_offset, std::vector<State>* st,
                  std::vector<Value>* states) const {
    const Index B = x.shape[0], T = x.shape[1];
    const std::size_t n = ch.layers.size();
    // Layers after the first see the first one's outputs in processing order: so is their mask.
    const std::vector<std::uint8_t> reversed = later_layers_mask(ch, mask, mask_len, B, T);
    Value prev;
    Value y;
    int k0 = 0;  // index of this Layer's first state
    for (std::size_t i = 0; i < n; ++i) {
      Layer& layer = *ch.layers[i];
      const LayerConfig& c = layer.config();
      const Index u = c.units;
      const int ns = layer.num_states();
      const bool seq = c.return_sequences;
      Value out = make_value(seq ? std::vector<Index>{B, T, u} : std::vector<Index>{B, u}, class_name.c_str());
      const Value& in = i == 0 ? x : prev;
      const std::uint8_t* m = i > 0 && !reversed.empty() ? reversed.data() : mask;
      std::vector<float> final_state(states ? static_cast<std::size_t>(ns * B * u) : 0);
      if (st) {
        State& s = (*st)[i];
        layer.call_state(s, in.data.data(), in.data.size(), T, m, mask_len, out.data.data(), out.data.size());
        if (states) s.get(final_state.data(), final_state.size());
      } else {
        LayerCall call;
        call.input = in.data.data();
        call.input_len = in.data.size();
        call.batch = B;
        call.timesteps = T;
        call.mask = m;
        call.mask_len = mask_len;
        std::vector<float> init_data;
        if (!init.empty()) {
          for (int j = 0; j < ns; ++j) {
            const Value& v = initial_state(init, init_offset + k0 + j, B, u);
            init_data.insert(init_data.end(), v.data.begin(), v.data.end());
          }
          call.initial_state = init_data.data();
          call.initial_state_len = init_data.size();
          call.num_initial_states = ns;
        }
        call.output = out.data.data();
        call.output_len = out.data.size();
        if (states) {
          call.final_state = final_state.data();
          call.final_state_len = final_state.size();
        }
        layer.call(call);
      }
      if (states) {
        for (int j = 0; j < ns; ++j) {
          Value s = make_value({B, u}, "state");
          std::copy_n(final_state.data() + j * B * u, B * u, s.data.data());
          states->push_back(std::move(s));
        }
      }
      k0 += ns;
      if (i + 1 == n) y = std::move(out);
      else prev = std::move(out);
    }
    if (ch.zero_output_quirk && mask && !ch.last().jax_masking) {
      // Keras's unrolled loop zeroes the stacked outputs where the mask, in input order, is 0,
      // and the last output where the last processed step (the first) is masked.
      const Index u = ch.last().units;
      for (Index b = 0; b < B; ++b) {
        if (ch.return_sequences) {
          for (Index t = 0; t < T; ++t)
            if (!mask[b * T + t]) std::fill_n(y.data.data() + (b * T + t) * u, u, 0.0f);
        } else if (T > 0 && !mask[b * T]) {
          std::fill_n(y.data.data() + b * u, u, 0.0f);
        }
      }
    }
    return y;
  }

  // run_chain on the model's GPU: every tensor a device Value, the mask on the host. False when
  // a Layer of the chain cannot take device memory for this call (the op then runs on the host).
  std::string chain_device_issue(const Chain& ch, bool masked) const {
    for (const auto& l : ch.layers) {
      if (!l->gpu_layer()) return "a layer of it is not on the GPU";
      const std::string issue = l->device_call_issue();
      if (!issue.empty()) return issue;
      if (l->config().is_cudnn() && masked) return "a CuDNN layer given a mask (the host path says why)";
    }
    return "";
  }
  Value run_chain_device(const Chain& ch, DeviceRun& dev, const Value& x, const std::uint8_t* mask, std::size_t mask_len,
                         const std::vector<const Value*>& init, int init_offset, std::vector<Value>* states) const {
    const Index B = x.shape[0], T = x.shape[1];
    const std::size_t n = ch.layers.size();
    const std::vector<std::uint8_t> reversed = later_layers_mask(ch, mask, mask_len, B, T);
    Value prev, y;
    int k0 = 0;
    for (std::size_t i = 0; i < n; ++i) {
      Layer& layer = *ch.layers[i];
      const LayerConfig& c = layer.config();
      const Index u = c.units;
      const int ns = layer.num_states();
      Value out = dev.make(c.return_sequences ? std::vector<Index>{B, T, u} : std::vector<Index>{B, u}, class_name.c_str());
      const Value& in = i == 0 ? x : prev;
      const std::uint8_t* m = i > 0 && !reversed.empty() ? reversed.data() : mask;
      Value init_states;  // ns (B, u) tensors, one after the other
      if (!init.empty()) {
        init_states = dev.make({ns * B, u}, "initial_state");
        for (int j = 0; j < ns; ++j) {
          const Value& v = initial_state(init, init_offset + k0 + j, B, u);
          dev.call("initial_state of '" + name + "'", [&](char* err, std::size_t len) {
            return dev.table().copy2d(dev.ordinal(), v.device->data(), B * u, init_states.device->data() + j * B * u, B * u,
                                      1, B * u, err, len);
          });
        }
      }
      Value final_states;
      if (states) final_states = dev.make({ns * B, u}, "final states");
      layer.call_device(nullptr, in.device->data(), B, T, m, m ? mask_len : 0,
                        init_states.device ? init_states.device->data() : nullptr, init_states.device ? ns : 0,
                        out.device->data(), states ? final_states.device->data() : nullptr);
      if (states)
        for (int j = 0; j < ns; ++j) states->push_back(DeviceRun::view(final_states, j * B * u, {B, u}));
      k0 += ns;
      if (i + 1 == n) y = std::move(out);
      else prev = std::move(out);
    }
    if (ch.zero_output_quirk && mask && !ch.last().jax_masking) {
      // run_chain's zeroing, as y * 1 under the mask (Keras 3's masked product: a step masked on
      // both sides is 0, any other keeps y's bits); the last output by its first input step.
      const Index u = ch.last().units;
      std::vector<std::uint8_t> m(mask, mask + (ch.return_sequences ? B * T : 0));
      if (!ch.return_sequences)
        for (Index b = 0; b < B; ++b) m.push_back(T > 0 ? mask[b * T] : 1);
      const Value v = DeviceRun::view(y, 0, {B, ch.return_sequences ? T : 1, u});
      FoldArg a, one;
      a.v = &v;
      a.mask = one.mask = &m;
      one.constant = 1.0f;
      std::vector<Value> z;
      elementwise_on_device(dev, RECUR_GPU_OP_MUL, {a, one}, v.shape, class_name + " '" + name + "'", z);
      y = DeviceRun::view(z[0], 0, y.shape);
    }
    return y;
  }

  // A stream's states at this call site, made at its first step from the initial_state tensors
  // (model inputs, whose floats are on the host) or zeros.
  std::vector<State>& stream_states(RunContext& ctx, int site, Index B, const std::vector<const Value*>& init) const {
    std::vector<State>& st = ctx.stream->states[{this, site}];
    if (!st.empty()) return st;
    for (const Chain* c : {fwd_.get(), bwd_.get()})
      if (c)
        for (const auto& l : c->layers) st.emplace_back(l->num_states(), B, static_cast<int>(l->config().units));
    std::size_t k = 0, slot = 0;
    for (const Chain* c : {fwd_.get(), bwd_.get()}) {
      if (!c) continue;
      for (const auto& l : c->layers) {
        State& target = st[slot++];
        for (int j = 0; j < l->num_states() && k < init.size(); ++j, ++k) {
          const Value& v = *init[k];
          const Index uu = target.units();
          if (v.shape != std::vector<Index>{B, uu} || v.data.size() != static_cast<std::size_t>(B * uu)) {
            st.clear();  // a later step starts over
            fail(Code::shape, "layer '", name, "': initial_state[", k, "] is ", shape_string(v.shape), ", expected ",
                 shape_string({B, uu}));
          }
          std::copy_n(v.data.data(), v.data.size(), target.tensor(j).data());
        }
      }
    }
    return st;
  }

  // A stream's step on the GPU: each Layer steps its resident State on device buffers.
  bool step_device(const Value& x, const std::uint8_t* mask, std::size_t mask_len, const std::vector<const Value*>& init,
                   RunContext& ctx, int site, std::vector<Value>& out) const {
    DeviceRun& dev = *ctx.device;
    const Index B = x.shape[0], T = x.shape[1];
    std::vector<State>& st = stream_states(ctx, site, B, init);
    std::vector<Value> states;
    Value prev, y;
    for (std::size_t i = 0; i < fwd_->layers.size(); ++i) {
      const Layer& layer = *fwd_->layers[i];
      const LayerConfig& c = layer.config();
      const Index u = c.units;
      Value o = dev.make(c.return_sequences ? std::vector<Index>{B, T, u} : std::vector<Index>{B, u}, class_name.c_str());
      layer.call_state_device(st[i], (i == 0 ? x : prev).device->data(), T, mask, mask_len, o.device->data());
      if (fwd_->return_state) {
        const int ns = layer.num_states();
        Value all = dev.make({ns * B, u}, "final states");
        const float* src = st[i].device_state()->states();
        dev.call("the states of '" + name + "'", [&](char* err, std::size_t len) {
          return dev.table().copy2d(dev.ordinal(), src, ns * B * u, all.device->data(), ns * B * u, 1, ns * B * u, err, len);
        });
        for (int j = 0; j < ns; ++j) states.push_back(DeviceRun::view(all, j * B * u, {B, u}));
      }
      if (i + 1 == fwd_->layers.size()) y = std::move(o);
      else prev = std::move(o);
    }
    if (fwd_->return_sequences && mask) y.mask = x.mask;
    out.push_back(std::move(y));
    for (auto& v : states) out.push_back(std::move(v));
    return true;
  }

  std::string device_rule() const override { return ""; }
  bool forward_device(const CallInputs& in, RunContext& ctx, int site, std::vector<Value>& out) const override {
    const Value& x = *in.main[0];
    const bool masked = x.mask && !in.drop_mask;
    std::string issue = chain_device_issue(*fwd_, masked);
    if (issue.empty() && bwd_) issue = chain_device_issue(*bwd_, masked);
    if (!issue.empty()) {
      ctx.device->declined = issue;
      return false;
    }
    if (ctx.stream && ctx.stepped) {
      if (bidirectional_ || fwd_->go_backwards || fwd_->zero_output_quirk) return false;  // such layers do not stream
      // A first step's initial_state tensors are model inputs: the host has their floats.
      const auto it = ctx.stream->states.find({this, site});
      const bool first = it == ctx.stream->states.end() || it->second.empty();
      if (first && std::any_of(in.initial_state.begin(), in.initial_state.end(),
                               [](const Value* v) { return v->data.empty(); })) {
        ctx.device->declined = "a stream's first step sets its states from initial_state tensors the host lacks";
        return false;
      }
      return step_device(x, masked ? x.mask->data() : nullptr, masked ? x.mask->size() : 0, in.initial_state, ctx, site,
                         out);
    }
    DeviceRun& dev = *ctx.device;
    const Index B = x.shape[0], T = x.shape[1];
    const bool rs = fwd_->return_sequences;
    const bool want_states = fwd_->return_state;
    const std::uint8_t* mask = masked ? x.mask->data() : nullptr;
    const std::size_t mask_len = masked ? x.mask->size() : 0;
    std::vector<Value> states;
    Value y = run_chain_device(*fwd_, dev, x, mask, mask_len, in.initial_state, 0, want_states ? &states : nullptr);
    if (rs && masked) y.mask = x.mask;
    if (!bidirectional_) {
      out.push_back(std::move(y));
    } else {
      Value yb = run_chain_device(*bwd_, dev, x, mask, mask_len, in.initial_state, fwd_->num_states(),
                                  want_states ? &states : nullptr);
      const Index uf = fwd_->last().units, ub = bwd_->last().units;
      const std::string what = "Bidirectional '" + name + "'";
      if (rs) {  // Keras flips the backward outputs back into input order: one strided copy per step
        Value flipped = dev.make(yb.shape, "Bidirectional");
        for (Index t = 0; t < T; ++t)
          dev.call(what, [&](char* err, std::size_t len) {
            return dev.table().copy2d(dev.ordinal(), yb.device->data() + (T - 1 - t) * ub, T * ub,
                                      flipped.device->data() + t * ub, T * ub, B, ub, err, len);
          });
        yb = std::move(flipped);
      }
      if (rs && masked) yb.mask = x.mask;
      const Index r = rs ? B * T : B;
      if (merge_ == "none") {
        out.push_back(std::move(y));
        out.push_back(std::move(yb));
      } else if (merge_ == "concat") {
        std::vector<Index> shape = y.shape;
        shape.back() = uf + ub;
        Value m = dev.make(shape, "Bidirectional");
        dev.call(what, [&](char* err, std::size_t len) {
          return dev.table().copy2d(dev.ordinal(), y.device->data(), uf, m.device->data(), uf + ub, r, uf, err, len);
        });
        dev.call(what, [&](char* err, std::size_t len) {
          return dev.table().copy2d(dev.ordinal(), yb.device->data(), ub, m.device->data() + uf, uf + ub, r, ub, err, len);
        });
        m.mask = y.mask;
        out.push_back(std::move(m));
      } else {
        const int op = merge_ == "sum" ? RECUR_GPU_OP_ADD : merge_ == "mul" ? RECUR_GPU_OP_MUL : RECUR_GPU_OP_AVERAGE;
        dev.call(what, [&](char* err, std::size_t len) {
          return dev.table().binary(dev.ordinal(), op, y.device->data(), yb.device->data(), y.device->floats,
                                    y.device->data(), err, len);
        });
        out.push_back(std::move(y));
      }
    }
    if (want_states)
      for (auto& st : states) out.push_back(std::move(st));
    return true;
  }

  std::vector<Value> forward(const CallInputs& in, RunContext& ctx, int site) const override {
    const Value& x = *in.main[0];
    const Index B = x.shape[0], T = x.shape[1];
    const bool rs = fwd_->return_sequences;
    const bool want_states = fwd_->return_state;
    std::vector<Value> states;
    const bool masked = x.mask && !in.drop_mask;
    const std::uint8_t* mask = masked ? x.mask->data() : nullptr;
    const std::size_t mask_len = masked ? x.mask->size() : 0;
    std::vector<State>* st = ctx.stream && ctx.stepped ? &stream_states(ctx, site, B, in.initial_state) : nullptr;
    std::vector<Value> out;
    Value y = run_chain(*fwd_, x, mask, mask_len, in.initial_state, 0, st, want_states ? &states : nullptr);
    if (rs && masked) y.mask = x.mask;
    if (!bidirectional_) {
      out.push_back(std::move(y));
    } else {
      // (Bidirectional does not stream: st is null here.)
      Value yb = run_chain(*bwd_, x, mask, mask_len, in.initial_state, fwd_->num_states(), nullptr,
                           want_states ? &states : nullptr);
      if (rs && masked) yb.mask = x.mask;
      const Index uf = fwd_->last().units, ub = bwd_->last().units;
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
    if (want_states)
      for (auto& s : states) out.push_back(std::move(s));
    return out;
  }

  std::size_t num_weights() const override {
    return (fwd_ ? fwd_->num_weights() : 0) + (bwd_ ? bwd_->num_weights() : 0);
  }
  std::uint64_t weight_floats() const override {
    return (fwd_ ? fwd_->weights_size() : 0) + (bwd_ ? bwd_->weights_size() : 0);
  }
  double work(const std::vector<Spec>& main, const std::vector<Spec>& out) const override {
    // Each (row, step) multiplies by every weight once and works on each gate of each unit.
    double per_step = 0;
    for (const Chain* c : {fwd_.get(), bwd_.get()})
      if (c)
        for (const auto& l : c->layers)
          per_step += double(l->weights_size()) * kMacWork + 4.0 * double(l->config().units) * kGateWork;
    const Spec& x = main.at(0);
    const double rows = x.dims.size() >= 2 ? double(std::max<Index>(x.dims[0], 1)) * double(std::max<Index>(x.dims[1], 1)) : 1;
    return rows * per_step + Op::work(main, out);
  }
  void load(std::vector<StoredWeight>& w, bool legacy, const std::string& where) override;
  void load_keras(const io::H5File& h5, const std::string& object, const std::string& file) override {
    auto rnn_vars = [&](const std::string& obj, const Chain& ch, std::vector<StoredWeight>& w) {
      if (!h5.is_group(obj)) fail(Code::io, file, ": model.weights.h5:/", obj, ": missing (config and weights disagree)");
      for (std::size_t i = 0; i < ch.layers.size(); ++i) {
        const Layer& l = *ch.layers[i];
        const std::uint64_t budget = 2 * l.weights_size() + 16;
        const std::string cell = obj + "/cell" + (ch.objects[i].empty() ? "" : "/" + ch.objects[i]);
        if (!ch.objects[i].empty() && !h5.is_group(cell))
          fail(Code::io, file, ": model.weights.h5:/", cell, ": missing (config and weights disagree)");
        std::vector<StoredWeight> mine = h5.is_group(cell) ? read_vars(h5, cell, file, budget) : std::vector<StoredWeight>();
        if (mine.empty() && ch.objects[i].empty()) mine = read_vars(h5, obj, file, budget);  // CuDNN layers keep their variables directly
        if (mine.size() != l.num_weights())
          fail(Code::io, file, ": model.weights.h5:/", cell, ": the file holds ", mine.size(), " weight(s) for layer '", name,
               "', the config needs ", l.num_weights());
        for (auto& x : mine) w.push_back(std::move(x));
      }
    };
    std::vector<StoredWeight> w;
    if (bidirectional_) {
      rnn_vars(object + "/forward_layer", *fwd_, w);
      rnn_vars(object + "/backward_layer", *bwd_, w);
    } else {
      rnn_vars(object, *fwd_, w);
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
    if (fwd_->go_backwards) return "go_backwards reads the sequence from its end";
    if (has_init) return "its initial_state comes from other layers of the graph (only model inputs can start a stream)";
    if (!stepped_out.empty()) stepped_out[0] = fwd_->return_sequences;
    return "";
  }
  void collect_layers(std::vector<Layer*>& out) override {
    for (const Chain* c : {fwd_.get(), bwd_.get()})
      if (c)
        for (const auto& l : c->layers) out.push_back(l.get());
  }
  bool stateful() const override { return fwd_ && fwd_->first().stateful; }

  const json& entry_;
  std::shared_ptr<const json> document_;  // holds entry_
  bool bidirectional_;
  Dialect dialect_ = Dialect::keras3;
  std::shared_ptr<Chain> fwd_, bwd_;
  std::string merge_ = "concat";
};

void RecurrentOp::load(std::vector<StoredWeight>& all, bool legacy, const std::string& where) {
  std::vector<std::shared_ptr<Layer>> targets;
  for (const Chain* c : {fwd_.get(), bwd_.get()})
    if (c) targets.insert(targets.end(), c->layers.begin(), c->layers.end());
  for (std::size_t t = 0; t < targets.size(); ++t) {
    Layer& layer = *targets[t];
    const std::size_t per = layer.num_weights();
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
  t.add({"GRU", "LSTM", "CuDNNGRU", "CuDNNLSTM", "SimpleRNN", "RNN"},
        [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
          return std::make_shared<RecurrentOp>(e, ctx, false);
        });
  t.add({"Bidirectional"}, [](const json& e, const BuildContext& ctx, const std::string&) -> std::shared_ptr<Op> {
    return std::make_shared<RecurrentOp>(e, ctx, true);
  });
}

}  // namespace recur::graph
