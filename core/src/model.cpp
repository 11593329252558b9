#include "recur/model.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <regex>

#include "gpu/gpu_layer.hpp"
#include "gpu/runtime.hpp"
#include "io/hdf5_file.hpp"
#include "io/zip_archive.hpp"
#include "recur/error.hpp"
#include "recur/keras_json.hpp"

namespace recur {
namespace {

using json = nlohmann::json;
using Code = Error::Code;

constexpr std::uint64_t kMaxJsonBytes = std::uint64_t(1) << 26;     // config.json / metadata.json
constexpr std::uint64_t kMaxWeightsBytes = std::uint64_t(1) << 32;  // model.weights.h5
constexpr std::uint64_t kMaxModelFloats = std::uint64_t(1) << 28;   // all weights of a model

enum class NodeKind { masking, embedding, recurrent, bidirectional, dropout, dense, activation, unsupported };

struct StoredWeight {
  std::string path;
  std::vector<std::int64_t> shape;
  std::vector<float> data;
};

struct Node {
  NodeKind kind = NodeKind::unsupported;
  ModelLayerInfo info;
  json entry;       // the layer's config entry
  std::string why;          // for unsupported nodes
  std::string chain_issue;  // usable alone, but not as a link of a chain
  float mask_value = 0.0f;
  bool mask_zero = false;
  RowMatrix table;  // embeddings (input_dim, output_dim) / dense kernel (in, units)
  RowVector bias;   // dense
  bool use_bias = false;
  ActivationFn activation;
  std::shared_ptr<Layer> forward, backward;
  std::string merge_mode = "concat";
  // Dense weights on the model's GPU (kernel then bias), when the model runs there.
  std::shared_ptr<gpu::DeviceBuffer> device_weights;
  std::string file_path;  // .keras object path (e.g. "layers/gru_1")
};

std::string snake_case(const std::string& name) {
  std::string s = std::regex_replace(name, std::regex("\\W+"), "");
  s = std::regex_replace(s, std::regex("(.)([A-Z][a-z]+)"), "$1_$2");
  s = std::regex_replace(s, std::regex("([a-z])([A-Z])"), "$1_$2");
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

json parse_json(const std::string& text, const std::string& where) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    fail(Code::io, where, ": malformed JSON (", io::printable(e.what()), ")");
  }
}

// The predecessor layer names of a functional layer entry (Keras 2 and Keras 3 node formats).
std::vector<std::string> inbound_names(const json& entry) {
  std::vector<std::string> names;
  if (!entry.contains("inbound_nodes") || !entry["inbound_nodes"].is_array()) return names;
  for (const auto& node : entry["inbound_nodes"]) {
    if (node.is_array()) {  // Keras 2: [["name", node, tensor, {kwargs}], ...]
      for (const auto& t : node)
        if (t.is_array() && !t.empty() && t[0].is_string()) names.push_back(t[0].get<std::string>());
    } else if (node.is_object() && node.contains("args")) {  // Keras 3
      std::function<void(const json&)> visit = [&](const json& v) {
        if (v.is_object()) {
          if (v.value("class_name", std::string()) == "__keras_tensor__" && v.contains("config") &&
              v["config"].contains("keras_history") && v["config"]["keras_history"].is_array() &&
              !v["config"]["keras_history"].empty() && v["config"]["keras_history"][0].is_string()) {
            names.push_back(v["config"]["keras_history"][0].get<std::string>());
            return;
          }
          for (const auto& item : v.items()) visit(item.value());
        } else if (v.is_array()) {
          for (const auto& item : v) visit(item);
        }
      };
      visit(node["args"]);
    }
  }
  return names;
}

int last_dim(const json& shape) {
  if (!shape.is_array() || shape.empty()) return 0;
  const json& d = shape.back();
  return d.is_number_integer() ? d.get<int>() : 0;
}

// The floats a node's weights hold. Stored datasets may hold at most twice that (a CuDNN LSTM
// bias is twice the native one): anything larger is rejected before it is read.
std::uint64_t node_floats(const Node& n) {
  std::uint64_t total = static_cast<std::uint64_t>(n.table.size()) + static_cast<std::uint64_t>(n.bias.size());
  if (n.forward) total += n.forward->weights_size();
  if (n.backward) total += n.backward->weights_size();
  return total;
}
std::uint64_t read_budget(const Node& n) { return 2 * node_floats(n) + 16; }

// An integer config value; 0 (rejected by the callers) if it is missing, not an integer or out of
// int range (json's value<int> would convert 1e30 with undefined behaviour).
int int_of(const json& cfg, const char* key) {
  if (!cfg.contains(key) || !cfg[key].is_number_integer()) return 0;
  const json& v = cfg[key];
  if (v.is_number_unsigned()) return v.get<std::uint64_t>() > 2147483647u ? 0 : static_cast<int>(v.get<std::uint64_t>());
  const std::int64_t x = v.get<std::int64_t>();
  return x < -2147483647 || x > 2147483647 ? 0 : static_cast<int>(x);
}

std::string activation_of(const json& cfg) {
  if (!cfg.contains("activation") || cfg["activation"].is_null()) return "linear";
  if (!cfg["activation"].is_string())
    fail(Code::unsupported, "activation: a custom activation object cannot be loaded: ", cfg["activation"].dump());
  return cfg["activation"].get<std::string>();
}

}  // namespace

struct Model::Impl {
  std::string path;
  DialectInfo dialect;
  std::string keras_version;
  std::vector<Node> nodes;
  std::vector<ModelLayerInfo> infos;
  std::string unsupported;
  int input_size = 0;
  bool token_ids = false;
  bool input_sequence = true;

  void build(const json& model_config);
  void configure(Node& n, int in_size, bool last);
  void load_legacy_weights(const io::H5File& h5);
  void load_keras_weights(const io::H5File& h5, bool sequential);
  void assign(Node& n, std::vector<StoredWeight> weights, bool legacy, const std::string& object);
  void forward_chain(const float* x, Index B, Index T, const std::uint8_t* mask, float* out) const;
  // The same chain with its tensors on the GPU: the input goes up once, the output comes down
  // once; masks are computed on the host from the input, as the chain's first layers define them.
  void forward_chain_device(const float* x, Index B, Index T, const std::uint8_t* mask, float* out) const;

  Placement placement;
  int device = -1;  // CUDA ordinal when the chain runs on a GPU
  int num_threads = 1;
};

void Model::Impl::configure(Node& n, int in_size, bool last) {
  const std::string& cls = n.info.class_name;
  const json& cfg = n.entry.at("config");
  n.info.input_size = in_size;
  auto rnn = [&](const json& entry, int in, bool zero_output) {
    json e = entry;
    if (zero_output) e["config"]["zero_output_for_mask"] = true;
    LayerConfig c = parse_layer_json(e.dump(), in, dialect.dialect, keras_version);
    // Usable on its own, but not as a link of a chain:
    if (c.return_state && !last) n.chain_issue = "return_state inside a model chain (the next layer would get a list)";
    if (c.time_major) n.chain_issue = "time_major layers inside a model chain";
    if (c.stateful) n.chain_issue = "stateful layers inside a model chain";
    return std::make_shared<Layer>(c);
  };
  if (cls == "Masking") {
    n.kind = NodeKind::masking;
    n.mask_value = static_cast<float>(cfg.value("mask_value", 0.0));
    n.info.output_size = in_size;
  } else if (cls == "Embedding") {
    n.kind = NodeKind::embedding;
    const int input_dim = int_of(cfg, "input_dim"), output_dim = int_of(cfg, "output_dim");
    if (input_dim <= 0 || output_dim <= 0 || static_cast<double>(input_dim) * output_dim > double(1 << 28))
      fail(Code::invalid_argument, "Embedding: input_dim and output_dim must be positive and fit 1 GiB");
    n.mask_zero = cfg.value("mask_zero", false);
    n.table = RowMatrix::Zero(input_dim, output_dim);
    n.info.input_size = 1;
    n.info.output_size = output_dim;
  } else if (cls == "GRU" || cls == "LSTM" || cls == "CuDNNGRU" || cls == "CuDNNLSTM") {
    n.kind = NodeKind::recurrent;
    n.info.recurrent = true;
    n.forward = rnn(n.entry, in_size, false);
    n.info.output_size = n.forward->config().units;
  } else if (cls == "Bidirectional") {
    n.kind = NodeKind::bidirectional;
    n.info.recurrent = true;
    if (!cfg.contains("layer")) fail(Code::invalid_argument, "Bidirectional: config has no 'layer'");
    const json& inner = cfg["layer"];
    const bool seq = inner.at("config").value("return_sequences", false);
    n.forward = rnn(inner, in_size, seq);
    json back;
    if (cfg.contains("backward_layer") && cfg["backward_layer"].is_object()) {
      back = cfg["backward_layer"];
    } else {
      back = inner;  // Keras builds the backward half from the same config, reversed
      back["config"]["go_backwards"] = !inner.at("config").value("go_backwards", false);
    }
    n.backward = rnn(back, in_size, seq);
    n.merge_mode = cfg.contains("merge_mode") && cfg["merge_mode"].is_string() ? cfg["merge_mode"].get<std::string>() : "none";
    if (n.merge_mode != "concat" && n.merge_mode != "sum" && n.merge_mode != "mul" && n.merge_mode != "ave" &&
        n.merge_mode != "none")
      fail(Code::unsupported, "Bidirectional: merge_mode '", n.merge_mode, "'");
    if (n.merge_mode == "none" && !last)
      n.chain_issue = "Bidirectional with merge_mode=None inside a model chain (it returns two outputs)";
    const int u = n.forward->config().units;
    n.info.output_size = n.merge_mode == "concat" ? 2 * u : u;
  } else if (cls == "Dropout") {
    n.kind = NodeKind::dropout;
    n.info.output_size = in_size;
  } else if (cls == "Dense" || (cls == "TimeDistributed" && cfg.contains("layer") &&
                                cfg["layer"].value("class_name", std::string()) == "Dense")) {
    n.kind = NodeKind::dense;
    const json& dc = cls == "Dense" ? cfg : cfg["layer"].at("config");
    const int units = int_of(dc, "units");
    if (units <= 0 || in_size <= 0 || static_cast<double>(units) * in_size > double(1 << 28))
      fail(Code::invalid_argument, cls, ": units must be positive and the kernel must fit 1 GiB");
    n.use_bias = dc.value("use_bias", true);
    n.activation = parse_activation(activation_of(dc), dialect, "activation");
    n.table = RowMatrix::Zero(in_size, units);
    if (n.use_bias) n.bias = RowVector::Zero(units);
    n.info.output_size = units;
  } else if (cls == "Activation") {
    n.kind = NodeKind::activation;
    n.activation = parse_activation(activation_of(cfg), dialect, "activation");
    n.info.output_size = in_size;
  } else {
    fail(Code::unsupported, "unsupported layer ", cls);
  }
}

void Model::Impl::build(const json& model_config) {
  if (!model_config.is_object() || !model_config.contains("class_name") || !model_config.contains("config"))
    fail(Code::io, path, ": model_config: expected {\"class_name\": ..., \"config\": {...}}");
  const std::string cls = model_config["class_name"].is_string() ? model_config["class_name"].get<std::string>() : "";
  const json& cfg = model_config["config"];
  if (!cfg.is_object() || !cfg.contains("layers") || !cfg["layers"].is_array())
    fail(Code::io, path, ": model_config: ", cls, " has no layer list");
  const json& entries = cfg["layers"];
  if (entries.size() > 10000) fail(Code::io, path, ": model_config: too many layers (", entries.size(), ")");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const json& e = entries[i];
    if (!e.is_object() || !e.contains("class_name") || !e["class_name"].is_string() || !e.contains("config") ||
        !e["config"].is_object())
      fail(Code::io, path, ": model_config: layer ", i, " is not {\"class_name\": ..., \"config\": {...}}");
  }
  auto name_of = [](const json& e) { return e["config"].value("name", std::string()); };

  // The order layers are listed in (config order: topological in Keras configs), and for each its
  // single predecessor, if it has exactly one.
  std::vector<const json*> order;
  std::map<std::string, std::string> pred;
  const bool sequential = cls == "Sequential";
  if (sequential) {
    std::string prev;
    for (const auto& e : entries) {
      order.push_back(&e);
      if (!prev.empty()) pred[name_of(e)] = prev;
      prev = name_of(e);
    }
  } else if (cls == "Functional" || cls == "Model") {
    std::map<std::string, std::vector<std::string>> consumers;
    int inputs = 0;
    // Keras 3 records an Embedding(mask_zero=True)'s mask as an op node, not_equal(ids, 0), that
    // the next layers take as kwargs["mask"]. The Embedding node gives recur that mask already.
    auto is_embedding_mask = [&](const json& e) {
      if (e["class_name"].get<std::string>() != "NotEqual" || !e.contains("inbound_nodes") ||
          !e["inbound_nodes"].is_array() || e["inbound_nodes"].size() != 1)
        return false;
      const json& node = e["inbound_nodes"][0];
      if (!node.is_object() || !node.contains("args") || !node["args"].is_array() || node["args"].size() != 2 ||
          !node["args"][1].is_number() || node["args"][1].get<double>() != 0.0)
        return false;
      const auto src = inbound_names(e);
      for (const auto& other : entries)
        if (other["class_name"].get<std::string>() == "Embedding" && other["config"].value("mask_zero", false) &&
            inbound_names(other) == src && src.size() == 1)
          return true;
      return false;
    };
    for (const auto& e : entries) {
      if (is_embedding_mask(e)) continue;
      order.push_back(&e);
      const auto in = inbound_names(e);
      if (e["class_name"].get<std::string>() == "InputLayer") {
        ++inputs;
      } else if (in.size() == 1) {
        pred[name_of(e)] = in[0];
        consumers[in[0]].push_back(name_of(e));
      } else if (unsupported.empty()) {
        unsupported = "the model is not a chain: layer " + name_of(e) + " has " + std::to_string(in.size()) + " inputs";
      }
    }
    if (inputs == 0) fail(Code::io, path, ": model_config: the functional model has no InputLayer");
    if (inputs > 1 && unsupported.empty()) unsupported = "the model has " + std::to_string(inputs) + " inputs";
    for (const auto& [from, to] : consumers)
      if (to.size() > 1 && unsupported.empty())
        unsupported = "the model is not a chain: layer " + from + " feeds " + std::to_string(to.size()) + " layers";
  } else {
    fail(Code::unsupported, path, ": model class '", cls, "' (recur reads Sequential and Functional models)");
  }
  const bool chain = unsupported.empty();

  // .keras object paths: layers/<snake_case class name, uniquified> over model.layers, which
  // excludes a Sequential's InputLayer.
  std::map<std::string, int> used;
  std::map<std::string, int> out_size;  // layer name -> size of its output's last axis
  std::map<std::string, json> input_shapes;  // InputLayer name -> its batch shape
  std::uint64_t total_floats = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const json& e = *order[i];
    Node n;
    n.entry = e;
    n.info.class_name = e["class_name"].get<std::string>();
    n.info.name = name_of(e);
    n.info.config_json = e.dump();
    const bool is_input = n.info.class_name == "InputLayer";
    if (!(is_input && sequential)) {
      const std::string base = snake_case(n.info.class_name);
      std::string unique = base;
      if (used.count(base)) unique = base + "_" + std::to_string(++used[base]);
      else used[base] = 0;
      n.file_path = "layers/" + unique;
    }
    // The size of the last input axis: from the predecessor, or the recorded input shape.
    auto shape_size = [](const json& shape) { return shape.is_array() && shape.size() == 2 ? 1 : last_dim(shape); };
    int size = 0;
    if (is_input) {
      const json& ic = e["config"];
      size = shape_size(ic.contains("batch_shape") ? ic["batch_shape"] : ic.value("batch_input_shape", json()));
    } else if (pred.count(n.info.name) && out_size.count(pred[n.info.name])) {
      size = out_size[pred[n.info.name]];
    } else if (e["config"].contains("batch_input_shape")) {
      size = shape_size(e["config"]["batch_input_shape"]);
    } else if (e.contains("build_config") && e["build_config"].is_object() && e["build_config"].contains("input_shape")) {
      size = shape_size(e["build_config"]["input_shape"]);
    }
    if (n.info.class_name == "Embedding") size = 1;
    // A stateful layer whose entry records no input shape (Keras 3's legacy .h5 drops
    // build_config) gets its batch size from the Input(batch_shape=...) that feeds it, as Keras's
    // functional rebuild does.
    if (is_input) {
      const json& ic = e["config"];
      input_shapes[n.info.name] = ic.contains("batch_shape") ? ic["batch_shape"] : ic.value("batch_input_shape", json());
    } else if (pred.count(n.info.name) && input_shapes.count(pred[n.info.name]) &&
               e["config"].value("stateful", json(false)) == json(true) && !e["config"].contains("batch_input_shape") &&
               !(e.contains("build_config") && e["build_config"].is_object() &&
                 e["build_config"].contains("input_shape"))) {
      n.entry["build_config"] = json{{"input_shape", input_shapes[pred[n.info.name]]}};
    }
    if (is_input) {
      n.info.input_size = n.info.output_size = size;
      n.kind = NodeKind::dropout;  // passes its input through
    } else {
      try {
        if (size <= 0) fail(Code::unsupported, "the input size is not known");
        try {
          configure(n, size, i + 1 == order.size());
        } catch (const json::exception& je) {
          fail(Code::invalid_argument, "config: ", io::printable(je.what()));
        }
      } catch (const Error& err) {
        n.kind = NodeKind::unsupported;
        n.info.supported = false;
        n.why = err.what();
        if (chain && unsupported.empty())
          unsupported = (err.code() == Code::unsupported && n.why.rfind("unsupported layer", 0) == 0
                             ? n.why
                             : "layer " + n.info.class_name + " '" + n.info.name + "': " + n.why) +
                        " at " + n.info.name;
      }
      if (!n.chain_issue.empty() && chain && unsupported.empty())
        unsupported = "layer " + n.info.class_name + " '" + n.info.name + "': " + n.chain_issue;
    }
    out_size[n.info.name] = n.info.output_size;
    // Each weight is bounded (1 GiB); so is the whole model, before the next layer allocates.
    total_floats += node_floats(n);
    if (total_floats > kMaxModelFloats)
      fail(Code::io, path, ": model_config: the layers up to '", io::printable(n.info.name), "' hold more than ",
           kMaxModelFloats, " weights (1 GiB), the most recur loads");
    nodes.push_back(std::move(n));
  }
  // The model's input: the first layer's input (token ids when it is an Embedding).
  for (const Node& n : nodes) {
    if (n.info.class_name == "InputLayer") continue;
    token_ids = n.kind == NodeKind::embedding;
    input_size = token_ids ? 1 : n.info.input_size;
    break;
  }
  for (const auto& n : nodes) infos.push_back(n.info);
}

void Model::Impl::assign(Node& n, std::vector<StoredWeight> w, bool legacy, const std::string& object) {
  const std::string where = path + ": " + object + " (layer '" + io::printable(n.info.name) + "')";
  for (const auto& sw : w)
    for (float v : sw.data)
      if (!std::isfinite(v)) fail(Code::io, path, ": ", io::printable(sw.path), ": non-finite weight value");
  auto expect = [&](const StoredWeight& sw, std::vector<std::int64_t> shape) {
    if (sw.shape != shape) {
      std::vector<Index> a(sw.shape.begin(), sw.shape.end()), b(shape.begin(), shape.end());
      fail(Code::io, path, ": ", io::printable(sw.path), ": shape ", shape_string(a), " does not fit layer '",
           io::printable(n.info.name), "' (expected ", shape_string(b), ")");
    }
  };
  auto count = [&](std::size_t want) {
    if (w.size() != want)
      fail(Code::io, where, ": the file holds ", w.size(), " weight(s) for this layer, the config needs ", want);
  };
  switch (n.kind) {
    case NodeKind::embedding:
      count(1);
      expect(w[0], {n.table.rows(), n.table.cols()});
      std::memcpy(n.table.data(), w[0].data.data(), w[0].data.size() * sizeof(float));
      return;
    case NodeKind::dense:
      count(n.use_bias ? 2 : 1);
      expect(w[0], {n.table.rows(), n.table.cols()});
      std::memcpy(n.table.data(), w[0].data.data(), w[0].data.size() * sizeof(float));
      if (n.use_bias) {
        expect(w[1], {n.bias.cols()});
        std::memcpy(n.bias.data(), w[1].data.data(), w[1].data.size() * sizeof(float));
      }
      return;
    case NodeKind::recurrent:
    case NodeKind::bidirectional: {
      std::vector<std::shared_ptr<Layer>> targets{n.forward};
      if (n.backward) targets.push_back(n.backward);
      const std::size_t per = n.forward->num_weights();
      count(per * targets.size());
      for (std::size_t t = 0; t < targets.size(); ++t) {
        Layer& layer = *targets[t];
        std::vector<StoredWeight> mine(w.begin() + static_cast<long>(t * per), w.begin() + static_cast<long>((t + 1) * per));
        const LayerConfig& c = layer.config();
        const Index u = c.units;
        const int G = c.gates();
        if (legacy && dialect.dialect == Dialect::keras2 && per == 3) {
          // Keras 2's h5 loader converts between CuDNN and native layouts, told apart by the bias shape.
          const auto& bshape = mine[2].shape;
          const bool stored_cudnn = bshape.size() == 1 && bshape[0] == 2 * G * u;
          const bool stored_gru_after = bshape.size() == 2;
          const bool stored_gru_before = bshape.size() == 1 && bshape[0] == G * u && c.is_gru();
          const std::string target = c.kind == LayerKind::cudnn_gru || c.kind == LayerKind::cudnn_lstm
                                         ? kind_name(c.kind)
                                         : (c.is_gru() ? (c.reset_after ? "GRU(reset_after=True)" : "GRU(reset_after=False)")
                                                       : "LSTM");
          const std::string source = stored_cudnn ? (c.is_gru() ? "CuDNNGRU" : "CuDNNLSTM")
                                     : stored_gru_after ? "GRU(reset_after=True)"
                                     : stored_gru_before ? "GRU(reset_after=False)"
                                                         : (c.is_gru() ? target : "LSTM");
          if (source != target) {
            const bool ok = (source == "CuDNNGRU" && target == "GRU(reset_after=True)") ||
                            (source == "GRU(reset_after=True)" && target == "CuDNNGRU") ||
                            (source == "CuDNNLSTM" && target == "LSTM") || (source == "LSTM" && target == "CuDNNLSTM");
            if (!ok)
              fail(Code::io, path, ": ", io::printable(mine[2].path), ": ", source, " is not compatible with ", target,
                   " (layer '", io::printable(n.info.name), "' cannot take this bias layout)");
            const bool to_native = source.rfind("CuDNN", 0) == 0;
            if (!to_native)  // the stored bias must be exactly the native one before it is converted
              expect(mine[2], c.is_gru() ? std::vector<std::int64_t>{2, G * u} : std::vector<std::int64_t>{G * u});
            expect(mine[0], {c.input_size, G * u});
            expect(mine[1], {u, G * u});
            RowMatrix k = Eigen::Map<RowMatrix>(mine[0].data.data(), c.input_size, G * u);
            RowMatrix r = Eigen::Map<RowMatrix>(mine[1].data.data(), u, G * u);
            k = to_native ? cudnn_kernel_to_native(k, G, u) : native_kernel_to_cudnn(k, G, u);
            r = transpose_gate_blocks(r, G, u);
            std::memcpy(mine[0].data.data(), k.data(), mine[0].data.size() * sizeof(float));
            std::memcpy(mine[1].data.data(), r.data(), mine[1].data.size() * sizeof(float));
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
          expect(mine[i], std::vector<std::int64_t>(spec.shape.begin(), spec.shape.end()));
          layer.set_weight(i, mine[i].data.data(), mine[i].data.size(), nullptr, 0);
        }
      }
      return;
    }
    default:
      if (!w.empty()) fail(Code::io, where, ": the file holds weights for a layer that has none");
  }
}

void Model::Impl::load_legacy_weights(const io::H5File& h5) {
  const std::string group = h5.is_group("model_weights") ? "model_weights" : "";
  if (!h5.has_attribute(group, "layer_names"))
    fail(Code::io, path, ": /", group, ": missing the attribute 'layer_names'");
  const std::vector<std::string> names = h5.attribute_strings(group, "layer_names");
  for (Node& n : nodes) {
    const bool has_weights = n.kind == NodeKind::embedding || n.kind == NodeKind::dense ||
                             n.kind == NodeKind::recurrent || n.kind == NodeKind::bidirectional;
    if (!has_weights) continue;
    const std::string lg = (group.empty() ? "" : group + "/") + n.info.name;
    if (std::find(names.begin(), names.end(), n.info.name) == names.end() || !h5.is_group(lg))
      fail(Code::io, path, ": /", io::printable(lg), ": missing the weights of layer '", io::printable(n.info.name),
           "' (the config and the weights disagree)");
    std::vector<StoredWeight> w;
    std::uint64_t budget = read_budget(n);  // no more than the layer can hold is ever read
    for (const std::string& wn : h5.attribute_strings(lg, "weight_names")) {
      StoredWeight sw;
      sw.path = "/" + lg + "/" + wn;
      sw.data = h5.read_floats(lg + "/" + wn, sw.shape, budget);
      budget -= std::min<std::uint64_t>(budget, std::max<std::size_t>(sw.data.size(), 1));
      w.push_back(std::move(sw));
    }
    assign(n, std::move(w), true, "/" + lg);
  }
}

void Model::Impl::load_keras_weights(const io::H5File& h5, bool) {
  std::uint64_t budget = 0;  // what the current node can hold: no more is ever read
  auto vars = [&](const std::string& object) {
    std::vector<StoredWeight> w;
    const std::string base = object + "/vars";
    for (int i = 0; h5.exists(base + "/" + std::to_string(i)); ++i) {
      StoredWeight sw;
      sw.path = "model.weights.h5:/" + base + "/" + std::to_string(i);
      sw.data = h5.read_floats(base + "/" + std::to_string(i), sw.shape, budget);
      budget -= std::min<std::uint64_t>(budget, sw.data.size());
      w.push_back(std::move(sw));
      if (i > 64) break;
    }
    return w;
  };
  auto rnn_vars = [&](const std::string& object) {
    if (!h5.is_group(object)) fail(Code::io, path, ": model.weights.h5:/", object, ": missing (config and weights disagree)");
    std::vector<StoredWeight> w = h5.is_group(object + "/cell") ? vars(object + "/cell") : std::vector<StoredWeight>();
    if (w.empty()) w = vars(object);  // CuDNN layers keep their variables directly
    return w;
  };
  for (Node& n : nodes) {
    budget = read_budget(n);
    const std::string object = "model.weights.h5:/" + n.file_path;
    switch (n.kind) {
      case NodeKind::embedding:
      case NodeKind::dense: {
        const std::string obj = n.info.class_name == "TimeDistributed" ? n.file_path + "/layer" : n.file_path;
        if (!h5.is_group(obj)) fail(Code::io, path, ": model.weights.h5:/", obj, ": missing (config and weights disagree)");
        assign(n, vars(obj), false, "model.weights.h5:/" + obj);
        break;
      }
      case NodeKind::recurrent:
        assign(n, rnn_vars(n.file_path), false, object);
        break;
      case NodeKind::bidirectional: {
        std::vector<StoredWeight> w = rnn_vars(n.file_path + "/forward_layer");
        std::vector<StoredWeight> b = rnn_vars(n.file_path + "/backward_layer");
        for (auto& x : b) w.push_back(std::move(x));
        assign(n, std::move(w), false, object);
        break;
      }
      default:
        break;
    }
  }
}

Model Model::open(const std::string& path) {
  char sig[8] = {0};
  {
    std::ifstream f(path, std::ios::binary);
    if (!f) fail(Code::io, path, ": cannot open the file");
    f.read(sig, 8);
  }
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  json model_config;
  auto set_version = [&](const std::string& v, const std::string& where) {
    impl->keras_version = v;
    if (v.empty() || (v[0] != '2' && v[0] != '3'))
      fail(Code::unsupported, path, ": ", where, ": keras_version '", io::printable(v),
           "' (recur reads files from Keras 2 and Keras 3)");
    impl->dialect = DialectInfo::parse(v[0] == '2' ? Dialect::keras2 : Dialect::keras3, v);
  };
  // A config entry of the wrong JSON type (e.g. a layer name that is a number) throws json's own
  // exceptions: report them as a problem of this file, not as an internal error.
  try {
  if (std::memcmp(sig, "\x89HDF\r\n\x1a\n", 8) == 0) {
    const io::H5File h5 = io::H5File::open_path(path);
    if (!h5.has_attribute("", "model_config"))
      fail(Code::io, path, ": /: no 'model_config' attribute (a weights-only file from save_weights has no "
                           "architecture; build the layers from their JSON instead)");
    std::string version;
    if (h5.has_attribute("", "keras_version")) version = h5.attribute_string("", "keras_version");
    else if (h5.has_attribute("model_weights", "keras_version")) version = h5.attribute_string("model_weights", "keras_version");
    set_version(version, "/ keras_version");
    model_config = parse_json(h5.attribute_string("", "model_config"), path + ": /model_config");
    impl->build(model_config);
    impl->load_legacy_weights(h5);
  } else if (std::memcmp(sig, "PK\x03\x04", 4) == 0) {
    const io::ZipArchive zip = io::ZipArchive::open(path);
    const std::vector<char> meta = zip.read("metadata.json", kMaxJsonBytes);
    const json m = parse_json(std::string(meta.begin(), meta.end()), path + ": metadata.json");
    if (!m.is_object() || !m.contains("keras_version") || !m["keras_version"].is_string())
      fail(Code::io, path, ": metadata.json: no keras_version");
    set_version(m["keras_version"].get<std::string>(), "metadata.json");
    const std::vector<char> cfg = zip.read("config.json", kMaxJsonBytes);
    model_config = parse_json(std::string(cfg.begin(), cfg.end()), path + ": config.json");
    impl->build(model_config);
    const io::H5File h5 = io::H5File::open_image(zip.read("model.weights.h5", kMaxWeightsBytes),
                                                 path + ": model.weights.h5");
    impl->load_keras_weights(h5, model_config.value("class_name", std::string()) == "Sequential");
  } else {
    fail(Code::io, path, ": neither a .keras (zip) nor an .h5 (HDF5) file");
  }
  } catch (const json::exception& e) {
    fail(Code::io, path, ": model_config: unexpected JSON (", io::printable(e.what()), ")");
  }
  return Model(std::move(impl));
}

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model::~Model() = default;

const DialectInfo& Model::dialect() const { return impl_->dialect; }
const std::string& Model::keras_version() const { return impl_->keras_version; }
const std::vector<ModelLayerInfo>& Model::layers() const { return impl_->infos; }
const std::string& Model::unsupported() const { return impl_->unsupported; }
int Model::input_size() const { return impl_->input_size; }
bool Model::takes_token_ids() const { return impl_->token_ids; }

int Model::output_size() const { return impl_->nodes.empty() ? 0 : impl_->nodes.back().info.output_size; }

bool Model::returns_sequences() const {
  bool seq = true;
  for (const Node& n : impl_->nodes)
    if (n.kind == NodeKind::recurrent || n.kind == NodeKind::bidirectional)
      seq = n.forward->config().return_sequences;
  return seq;
}

int Model::num_outputs() const {
  return !impl_->nodes.empty() && impl_->nodes.back().kind == NodeKind::bidirectional &&
                 impl_->nodes.back().merge_mode == "none"
             ? 2
             : 1;
}

std::size_t Model::output_length(Index batch, Index timesteps) const {
  if (batch <= 0 || timesteps <= 0)
    fail(Code::invalid_argument, "batch/timesteps: expected positive values, got ", batch, " and ", timesteps);
  return static_cast<std::size_t>(batch) * static_cast<std::size_t>(returns_sequences() ? timesteps : 1) *
         static_cast<std::size_t>(output_size()) * static_cast<std::size_t>(num_outputs());
}

std::unique_ptr<Layer> Model::recurrent_layer(const std::string& name) const {
  std::string base = name, half;
  const auto slash = name.rfind('/');
  if (slash != std::string::npos) {
    base = name.substr(0, slash);
    half = name.substr(slash + 1);
  }
  for (const Node& n : impl_->nodes) {
    if (n.info.name != base) continue;
    if (!n.forward) {
      if (n.info.recurrent) fail(Code::unsupported, "layer '", name, "': ", n.why);
      fail(Code::invalid_argument, "name: layer '", name, "' is a ", n.info.class_name, ", not a recurrent layer");
    }
    const Layer* src = n.forward.get();
    if (n.kind == NodeKind::bidirectional) {
      if (half == "backward") src = n.backward.get();
      else if (half != "forward")
        fail(Code::invalid_argument, "name: '", base, "' is a Bidirectional; ask for '", base, "/forward' or '", base,
             "/backward'");
    } else if (!half.empty()) {
      fail(Code::invalid_argument, "name: layer '", name, "' does not exist");
    }
    auto copy = std::make_unique<Layer>(src->config());
    copy->set_num_threads(impl_->num_threads);
    std::vector<float> w;
    for (std::size_t i = 0; i < src->num_weights(); ++i) {
      const std::size_t n = src->weight_length(i);
      w.resize(n);
      src->get_weight(i, w.data(), n);
      copy->set_weight(i, w.data(), n, nullptr, 0);
    }
    return copy;
  }
  fail(Code::invalid_argument, "name: the model has no layer '", name, "'");
}

void Model::run(const float* input, std::size_t input_len, Index B, Index T, const std::uint8_t* mask,
                std::size_t mask_len, float* output, std::size_t output_len) const {
  if (!impl_->unsupported.empty()) fail(Code::unsupported, impl_->path, ": cannot run the model: ", impl_->unsupported);
  if (!input) fail(Code::invalid_argument, "input: is NULL");
  if (!output) fail(Code::invalid_argument, "output: is NULL");
  const std::size_t want_out = output_length(B, T);
  const std::size_t F = static_cast<std::size_t>(impl_->input_size);
  if (input_len != static_cast<std::size_t>(B) * static_cast<std::size_t>(T) * F)
    fail(Code::shape, "input: expected (B, T, ", F, ") = ", static_cast<std::size_t>(B * T) * F, " floats, got ", input_len);
  if (mask && mask_len != static_cast<std::size_t>(B * T))
    fail(Code::shape, "mask: expected (B, T) = ", B * T, " values, got ", mask_len);
  if (output_len != want_out) fail(Code::shape, "output: expected ", want_out, " floats, got ", output_len);
  impl_->forward_chain(input, B, T, mask, output);
}

void Model::set_device(const DeviceRequest& request) {
  Impl& m = *impl_;
  std::vector<Layer*> layers;
  for (Node& n : m.nodes) {
    if (n.forward) layers.push_back(n.forward.get());
    if (n.backward) layers.push_back(n.backward.get());
  }
  Placement p;
  p.requested = request.to_string();
  int ordinal = -1;
  if (request.kind == DeviceRequest::Kind::cuda) {
    check_device(request);
    ordinal = request.ordinal;
  } else if (request.kind == DeviceRequest::Kind::automatic) {
    if (gpu_device_count() > 0) ordinal = 0;
    else p.reason = "auto: " + gpu::plugin().why + "; the model runs on the CPU";
  } else {
    p.reason = "the CPU backend was asked for";
  }
  try {
    std::vector<std::shared_ptr<gpu::DeviceBuffer>> dense(m.nodes.size());
    if (ordinal >= 0) {
      for (std::size_t i = 0; i < m.nodes.size(); ++i) {
        const Node& n = m.nodes[i];
        if (n.kind != NodeKind::dense) continue;
        const std::int64_t k = n.table.size(), b = n.use_bias ? n.bias.size() : 0;
        auto buf = std::make_shared<gpu::DeviceBuffer>(ordinal, k + b);
        buf->upload(0, n.table.data(), k);
        if (b) buf->upload(k, n.bias.data(), b);
        dense[i] = std::move(buf);
      }
    }
    // Each layer gets the caller's request, so it reports what was asked; the chain runs on one
    // device, so a layer that "auto" left on the CPU moves the whole model back there.
    for (Layer* l : layers) {
      l->set_device(request);
      if (ordinal >= 0 && l->placement().ordinal != ordinal)
        fail(Code::unsupported, "layer '", l->config().name, "': ", l->placement().reason);
    }
    for (std::size_t i = 0; i < m.nodes.size(); ++i) m.nodes[i].device_weights = std::move(dense[i]);
  } catch (const Error& e) {
    // Leave every layer where the model was, so a failed move changes nothing.
    for (Layer* l : layers) l->set_device(m.device >= 0 ? DeviceRequest{DeviceRequest::Kind::cuda, m.device} : DeviceRequest{});
    if (request.kind != DeviceRequest::Kind::automatic) throw;
    ordinal = -1;
    p.reason = std::string("auto: the GPU could not take the model (") + e.what() + "), so it runs on the CPU";
    for (Layer* l : layers) l->set_device(DeviceRequest{});
    for (Node& n : m.nodes) n.device_weights.reset();
  }
  if (ordinal >= 0) {
    p.backend = "cuda:" + std::to_string(ordinal);
    p.ordinal = ordinal;
    p.path = "kernel";
    p.reason = "the whole chain runs on " + p.backend + " (recurrent layers report their own route)";
    p.device_name = gpu::device_name(ordinal);
  }
  m.device = ordinal;
  m.placement = std::move(p);
}

Placement Model::placement() const { return impl_->placement; }

void Model::set_num_threads(int num_threads) {
  for (Node& n : impl_->nodes) {
    if (n.forward) n.forward->set_num_threads(num_threads);
    if (n.backward) n.backward->set_num_threads(num_threads);
  }
  impl_->num_threads = num_threads;
}

int Model::num_threads() const { return impl_->num_threads; }

Placement Model::layer_placement(int index) const {
  const Impl& m = *impl_;
  if (index < 0 || static_cast<std::size_t>(index) >= m.infos.size())
    fail(Code::invalid_argument, "layer_index: expected -1 (the model) or 0..", m.infos.size() - 1, ", got ", index);
  const std::string& name = m.infos[static_cast<std::size_t>(index)].name;
  for (const Node& n : m.nodes)
    if (n.info.name == name && n.forward) return n.forward->placement();
  return m.placement;
}

void Model::Impl::forward_chain_device(const float* x, Index B, Index T, const std::uint8_t* in_mask,
                                       float* out) const {
  const recur_gpu_plugin& t = gpu::require_device(device);
  char err[512] = {0};
  auto check = [&](int rc, const std::string& what) {
    if (rc != RECUR_GPU_OK) gpu::raise(rc, err, what);
  };
  Index width = input_size;
  bool seq = true;
  auto rows = [&]() { return seq ? B * T : B; };
  std::vector<std::uint8_t> mask;
  if (in_mask) mask.assign(in_mask, in_mask + B * T);
  // The input stays on the host until a layer needs it on the device: Masking and Embedding read
  // it there (token ids are checked and gathered from host memory).
  std::vector<float> host(x, x + B * T * input_size);
  bool on_host = true;
  auto new_buffer = [&](std::int64_t floats) { return std::make_shared<gpu::DeviceBuffer>(device, std::max<std::int64_t>(floats, 1)); };
  std::shared_ptr<gpu::DeviceBuffer> cur;
  auto to_device = [&]() {
    if (!on_host) return;
    cur = new_buffer(static_cast<std::int64_t>(host.size()));
    cur->upload(0, host.data(), static_cast<std::int64_t>(host.size()));
    on_host = false;
  };
  for (const Node& n : nodes) {
    switch (n.kind) {
      case NodeKind::dropout: break;
      case NodeKind::masking: {
        if (!on_host) {  // a Masking layer after other layers: compute it on the host's copy
          host.resize(static_cast<std::size_t>(rows() * width));
          cur->download(0, host.data(), static_cast<std::int64_t>(host.size()));
          on_host = true;
        }
        mask.assign(static_cast<std::size_t>(B * T), 0);
        for (Index r = 0; r < B * T; ++r) {
          bool any = false;
          for (Index j = 0; j < width; ++j) any = any || host[static_cast<std::size_t>(r * width + j)] != n.mask_value;
          mask[static_cast<std::size_t>(r)] = any;
          if (!any) std::fill_n(host.begin() + r * width, width, 0.0f);
        }
        break;
      }
      case NodeKind::embedding: {
        if (!on_host) fail(Code::unsupported, "Embedding '", n.info.name, "' after other layers cannot run on a GPU");
        const Index dim = n.table.cols();
        std::vector<std::int32_t> ids(static_cast<std::size_t>(B * T));
        if (n.mask_zero) mask.assign(static_cast<std::size_t>(B * T), 0);
        for (Index r = 0; r < B * T; ++r) {
          const float id = host[static_cast<std::size_t>(r)];
          if (!(id >= 0.0f) || id != std::floor(id) || id >= static_cast<float>(n.table.rows()))
            fail(Code::invalid_argument, "input: token id ", id, " at row ", r, " is not an integer in [0, ",
                 n.table.rows(), ") for Embedding '", n.info.name, "'");
          ids[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(id);
          if (n.mask_zero) mask[static_cast<std::size_t>(r)] = id != 0.0f;
        }
        // The table is small next to the sequence; keep it on the device with the node.
        gpu::DeviceBuffer table(device, n.table.size());
        table.upload(0, n.table.data(), n.table.size());
        auto next = new_buffer(B * T * dim);
        check(t.gather_rows(device, table.data(), dim, ids.data(), B * T, next->data(), err, sizeof err),
              "Embedding '" + n.info.name + "'");
        cur = std::move(next);
        on_host = false;
        width = dim;
        break;
      }
      case NodeKind::recurrent:
      case NodeKind::bidirectional: {
        if (!seq) fail(Code::unsupported, "layer '", n.info.name, "' needs a sequence, but the previous layer returns one vector");
        to_device();
        const std::uint8_t* m = mask.empty() ? nullptr : mask.data();
        auto run = [&](const Layer& layer) {
          const gpu::GpuLayer* g = layer.gpu_layer();
          if (!g) fail(Code::state, "layer '", n.info.name, "' is not on the model's GPU");
          const Index u = layer.config().units;
          auto y = new_buffer(layer.config().return_sequences ? B * T * u : B * u);
          gpu::DeviceBuffer states(device, layer.num_states() * B * u);
          const std::vector<float> zeros(static_cast<std::size_t>(states.size()), 0.0f);
          states.upload(0, zeros.data(), states.size());
          g->run_device(nullptr, cur->data(), B, T, m, states.data(), layer.config().return_sequences ? y->data() : nullptr,
                        layer.config().return_sequences ? nullptr : y->data());
          return y;
        };
        auto y = run(*n.forward);
        const bool rs = n.forward->config().return_sequences;
        const Index u = n.forward->config().units;
        const Index r = rs ? B * T : B;
        if (n.kind == NodeKind::bidirectional) {
          auto yb = run(*n.backward);
          if (rs) {  // Keras flips the backward outputs back into input order
            auto flipped = new_buffer(r * u);
            for (Index k = 0; k < T; ++k)
              check(t.copy2d(device, yb->data() + (T - 1 - k) * u, T * u, flipped->data() + k * u, T * u, B, u, err, sizeof err),
                    "Bidirectional '" + n.info.name + "'");
            yb = std::move(flipped);
          }
          std::shared_ptr<gpu::DeviceBuffer> merged;
          if (n.merge_mode == "concat" || n.merge_mode == "none") {
            const bool concat = n.merge_mode == "concat";
            merged = new_buffer(2 * r * u);
            check(t.copy2d(device, y->data(), u, merged->data(), concat ? 2 * u : u, r, u, err, sizeof err), "Bidirectional");
            check(t.copy2d(device, yb->data(), u, merged->data() + (concat ? u : r * u), concat ? 2 * u : u, r, u, err,
                           sizeof err),
                  "Bidirectional '" + n.info.name + "'");
          } else {
            const int op = n.merge_mode == "sum" ? RECUR_GPU_OP_ADD : n.merge_mode == "mul" ? RECUR_GPU_OP_MUL : RECUR_GPU_OP_AVERAGE;
            check(t.binary(device, op, y->data(), yb->data(), r * u, y->data(), err, sizeof err),
                  "Bidirectional '" + n.info.name + "'");
            merged = y;
          }
          cur = std::move(merged);
          width = n.merge_mode == "concat" ? 2 * u : u;
        } else {
          cur = std::move(y);
          width = u;
        }
        if (!rs) {
          seq = false;
          mask.clear();
        }
        break;
      }
      case NodeKind::dense: {
        to_device();
        const Index units = n.table.cols();
        auto y = new_buffer(rows() * units);
        const float* w = n.device_weights->data();
        check(t.dense(device, cur->data(), rows(), width, w, n.use_bias ? w + n.table.size() : nullptr, units,
                      static_cast<std::int32_t>(n.activation.kind), static_cast<std::int32_t>(n.activation.hard_sigmoid),
                      y->data(), err, sizeof err),
              "Dense '" + n.info.name + "'");
        cur = std::move(y);
        width = units;
        break;
      }
      case NodeKind::activation:
        to_device();
        check(t.activate(device, cur->data(), rows(), width, static_cast<std::int32_t>(n.activation.kind),
                         static_cast<std::int32_t>(n.activation.hard_sigmoid), err, sizeof err),
              "Activation '" + n.info.name + "'");
        break;
      case NodeKind::unsupported:
        fail(Code::unsupported, "unsupported layer ", n.info.class_name, " at ", n.info.name);
    }
  }
  const std::int64_t total = static_cast<std::int64_t>(rows()) * width * (nodes.back().merge_mode == "none" && nodes.back().kind == NodeKind::bidirectional ? 2 : 1);
  if (on_host) std::memcpy(out, host.data(), static_cast<std::size_t>(total) * sizeof(float));
  else cur->download(0, out, total);
}

void Model::Impl::forward_chain(const float* x, Index B, Index T, const std::uint8_t* in_mask, float* out) const {
  if (device >= 0) {
    forward_chain_device(x, B, T, in_mask, out);
    return;
  }
  std::vector<float> cur(x, x + B * T * input_size);
  Index width = input_size;
  bool seq = true;
  std::vector<std::uint8_t> mask;
  if (in_mask) mask.assign(in_mask, in_mask + B * T);
  auto rows = [&]() { return seq ? B * T : B; };
  for (const Node& n : nodes) {
    switch (n.kind) {
      case NodeKind::dropout:
        break;
      case NodeKind::masking: {
        // Keras: a step is valid when any feature differs from mask_value; masked steps become 0.
        mask.assign(static_cast<std::size_t>(B * T), 0);
        for (Index r = 0; r < B * T; ++r) {
          bool any = false;
          for (Index j = 0; j < width; ++j) any = any || cur[static_cast<std::size_t>(r * width + j)] != n.mask_value;
          mask[static_cast<std::size_t>(r)] = any;
          if (!any) std::fill_n(cur.begin() + r * width, width, 0.0f);
        }
        break;
      }
      case NodeKind::embedding: {
        const Index dim = n.table.cols();
        std::vector<float> next(static_cast<std::size_t>(B * T * dim));
        if (n.mask_zero) mask.assign(static_cast<std::size_t>(B * T), 0);
        for (Index r = 0; r < B * T; ++r) {
          const float id = cur[static_cast<std::size_t>(r)];
          if (!(id >= 0.0f) || id != std::floor(id) || id >= static_cast<float>(n.table.rows()))
            fail(Code::invalid_argument, "input: token id ", id, " at row ", r, " is not an integer in [0, ",
                 n.table.rows(), ") for Embedding '", n.info.name, "'");
          std::memcpy(next.data() + r * dim, n.table.row(static_cast<Index>(id)).data(),
                      static_cast<std::size_t>(dim) * sizeof(float));
          if (n.mask_zero) mask[static_cast<std::size_t>(r)] = id != 0.0f;
        }
        cur.swap(next);
        width = dim;
        break;
      }
      case NodeKind::recurrent:
      case NodeKind::bidirectional: {
        auto call = [&](Layer& layer, std::vector<float>& y) {
          LayerCall c;
          c.input = cur.data();
          c.input_len = cur.size();
          c.batch = B;
          c.timesteps = T;
          if (!mask.empty()) {
            c.mask = mask.data();
            c.mask_len = mask.size();
          }
          y.resize(layer.output_size(B, T));
          c.output = y.data();
          c.output_len = y.size();
          layer.call(c);
        };
        if (!seq) fail(Code::unsupported, "layer '", n.info.name, "' needs a sequence, but the previous layer returns one vector");
        std::vector<float> y;
        call(*n.forward, y);
        const bool rs = n.forward->config().return_sequences;
        const Index u = n.forward->config().units;
        if (n.kind == NodeKind::bidirectional) {
          std::vector<float> yb;
          call(*n.backward, yb);
          if (rs) {  // Keras flips the backward outputs back into input order
            std::vector<float> flipped(yb.size());
            for (Index b = 0; b < B; ++b)
              for (Index t = 0; t < T; ++t)
                std::memcpy(flipped.data() + (b * T + t) * u, yb.data() + (b * T + (T - 1 - t)) * u,
                            static_cast<std::size_t>(u) * sizeof(float));
            yb.swap(flipped);
          }
          const Index r = rs ? B * T : B;
          std::vector<float> merged;
          if (n.merge_mode == "concat") {
            merged.resize(static_cast<std::size_t>(r * 2 * u));
            for (Index i = 0; i < r; ++i) {
              std::memcpy(merged.data() + i * 2 * u, y.data() + i * u, static_cast<std::size_t>(u) * sizeof(float));
              std::memcpy(merged.data() + i * 2 * u + u, yb.data() + i * u, static_cast<std::size_t>(u) * sizeof(float));
            }
          } else if (n.merge_mode == "none") {
            merged = y;
            merged.insert(merged.end(), yb.begin(), yb.end());
          } else {
            merged.resize(y.size());
            for (std::size_t i = 0; i < y.size(); ++i) {
              if (n.merge_mode == "sum") merged[i] = y[i] + yb[i];
              else if (n.merge_mode == "mul") merged[i] = y[i] * yb[i];
              else merged[i] = (y[i] + yb[i]) / 2.0f;
            }
          }
          y.swap(merged);
          width = n.merge_mode == "concat" ? 2 * u : u;
        } else {
          width = u;
        }
        cur.swap(y);
        if (!rs) {
          seq = false;
          mask.clear();
        }
        break;
      }
      case NodeKind::dense: {
        const Index units = n.table.cols();
        Eigen::Map<const RowMatrix> in(cur.data(), rows(), width);
        RowMatrix y(rows(), units);
        y.noalias() = in * n.table;
        if (n.use_bias) y.rowwise() += n.bias;
        apply_activation(n.activation, y.data(), y.rows(), y.cols());
        cur.assign(y.data(), y.data() + y.size());
        width = units;
        break;
      }
      case NodeKind::activation:
        apply_activation(n.activation, cur.data(), rows(), width);
        break;
      case NodeKind::unsupported:
        fail(Code::unsupported, "unsupported layer ", n.info.class_name, " at ", n.info.name);
    }
  }
  std::memcpy(out, cur.data(), cur.size() * sizeof(float));
}

}  // namespace recur
