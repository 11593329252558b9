// SPDX-License-Identifier: Apache-2.0
// Budgets: models and layers whose sizes are pushed toward the limits, run under the library's
// DEFAULT limits (never lowered or raised here), so that an input whose open or run goes past what
// recur.h documents for them (about 2 GiB and 10 s; scripts/fuzz.sh runs this target with
// -rss_limit_mb and -timeout to match) is a finding. The input is a program (FuzzedDataProvider):
//   - a model: one of a few fixture graphs whose weights stay valid under the edits (RepeatVector n,
//     UpSampling1D size, the Input's batch and timesteps, stateful recurrent layers, extra
//     RepeatVectors, repeated outputs, weightless layers whose loops outgrow their tensors: a
//     MaxPooling1D window or a self-attention after a RepeatVector, which the run_work plan
//     refuses), zipped with the fixture's weights, opened, then run once
//     (named, with a 2 s timeout: what a service running untrusted models does) at a fuzzed batch
//     and timesteps, and streamed one step when it streams;
//   - a layer: GRU / LSTM / SimpleRNN JSON with units toward the limit, initializers (Orthogonal's
//     cubic QR, run at creation or first use), stateful batches, created, and run once when the
//     forward's own work (the caller's batch and timesteps) is small.
// The caller's own buffers stay under kMaxCallerFloats: the documented bounds leave those out.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_common.hpp"

namespace {

using json = nlohmann::json;

constexpr std::size_t kMaxCallerFloats = std::size_t(16) << 20;  // 64 MiB for inputs, as much for outputs
constexpr double kRunTimeout = 2.0;

// RECUR_FUZZ_VERBOSE=1 prints what each input builds and runs (for triage of a finding).
bool verbose() {
  static const bool v = std::getenv("RECUR_FUZZ_VERBOSE") != nullptr;
  return v;
}

// Values at and around the limits, and small ones.
const std::int64_t kSteps[] = {1, 2, 7, 100, 4096, 65536, 1 << 20, (1 << 20) + 1, 50000000, 2147483647};
const std::int64_t kBatches[] = {1, 2, 3, 64, 4096, 65536, 1 << 20, (1 << 20) + 1};
const std::int64_t kUnits[] = {1, 4, 31, 256, 870, 880, 1000, 2000, 4000, 8192, 65536, 65537};

template <std::size_t N>
std::int64_t pick(FuzzedDataProvider& p, const std::int64_t (&v)[N]) {
  return v[p.ConsumeIntegralInRange<std::size_t>(0, N - 1)];
}

const std::vector<recur_fuzz::KerasParts>& bases() {
  static const std::vector<recur_fuzz::KerasParts> models = [] {
    static const char* const files[] = {
        "tests/keras/graphs/keras3/encoder_decoder_repeat.keras",        // RepeatVector, LSTM, GRU
        "tests/keras/graphs/keras3/stateful_sequential_gru.keras",       // stateful GRU
        "tests/keras/graphs/keras3/stateful_functional_lstm_gru.keras",  // two stateful layers
        "tests/keras/graphs/keras3/masking_sequential.keras",
        "tests/keras/graphs/keras3/multi_io.keras",
        "tests/keras/graphs/reshaping/keras3/upsampling_masked.keras",   // UpSampling1D
        "tests/keras/graphs/keras2/encoder_decoder_repeat.keras",
    };
    std::vector<recur_fuzz::KerasParts> out;
    for (const char* f : files) out.push_back(recur_fuzz::keras_parts(f));
    return out;
  }();
  return models;
}

bool is_recurrent(const std::string& cls) { return cls == "GRU" || cls == "LSTM" || cls == "SimpleRNN"; }

// Every layer entry of a config (nested models and wrappers included).
void layer_entries(json& node, std::vector<json*>& out) {
  if (node.is_object()) {
    if (node.contains("class_name") && node.contains("config") && node["config"].is_object()) out.push_back(&node);
    for (auto& [k, v] : node.items()) layer_entries(v, out);
  } else if (node.is_array()) {
    for (auto& v : node) layer_entries(v, out);
  }
}

void edit_model(FuzzedDataProvider& p, json& cfg) {
  std::vector<json*> entries;
  layer_entries(cfg, entries);
  const int edits = p.ConsumeIntegralInRange(0, 8);
  for (int e = 0; e < edits && !entries.empty(); ++e) {
    json& l = *entries[p.ConsumeIntegralInRange<std::size_t>(0, entries.size() - 1)];
    const std::string cls = l["class_name"].is_string() ? l["class_name"].get<std::string>() : "";
    json& c = l["config"];
    switch (p.ConsumeIntegralInRange(0, 6)) {
      case 0:
        if (cls == "RepeatVector") c["n"] = pick(p, kSteps);
        if (cls == "UpSampling1D") c["size"] = pick(p, kSteps);
        break;
      case 1:  // the Input's batch and timesteps
        for (const char* key : {"batch_shape", "batch_input_shape"})
          if (c.contains(key) && c[key].is_array() && !c[key].empty()) {
            c[key][0] = p.ConsumeBool() ? json(nullptr) : json(pick(p, kBatches));
            if (c[key].size() >= 3) c[key][1] = p.ConsumeBool() ? json(nullptr) : json(pick(p, kSteps));
          }
        break;
      case 2:  // stateful recurrent layers (their batch comes from the Input's)
        if (is_recurrent(cls)) c["stateful"] = p.ConsumeBool();
        if (is_recurrent(cls) && l.contains("build_config") && l["build_config"].is_object() &&
            l["build_config"].contains("input_shape") && l["build_config"]["input_shape"].is_array() &&
            !l["build_config"]["input_shape"].empty())
          l["build_config"]["input_shape"][0] = pick(p, kBatches);
        break;
      case 3: {  // another output: one of the layers again
        json& top = cfg["config"];
        if (top.is_object() && top.contains("output_layers") && top["output_layers"].is_array() && c.contains("name") &&
            top["output_layers"].size() < 8)
          top["output_layers"].push_back(json::array({c["name"], 0, 0}));
        break;
      }
      case 4: {  // a copy of a RepeatVector (same input), as another output
        json& top = cfg["config"];
        if (cls != "RepeatVector" || !top.is_object() || !top.contains("layers") || !top["layers"].is_array() ||
            !top.contains("output_layers") || !top["output_layers"].is_array() || top["layers"].size() > 32)
          break;
        json copy = l;
        const std::string name = "rv_copy_" + std::to_string(top["layers"].size());
        copy["name"] = name;
        copy["config"]["name"] = name;
        copy["config"]["n"] = pick(p, kSteps);
        top["layers"].push_back(copy);
        top["output_layers"].push_back(json::array({name, 0, 0}));
        entries.clear();  // pointers into the layers array may have moved
        layer_entries(cfg, entries);
        break;
      }
      case 5: {  // a weightless layer whose loops outgrow its tensors after a RepeatVector, as another output
        json& top = cfg["config"];
        if (cls != "RepeatVector" || !top.is_object() || !top.contains("layers") || !top["layers"].is_array() ||
            !top.contains("output_layers") || !top["output_layers"].is_array() || top["layers"].size() > 32 ||
            !l.contains("inbound_nodes") || !l["inbound_nodes"].is_array() || l["inbound_nodes"].empty() ||
            !l["inbound_nodes"][0].is_object() || !l["inbound_nodes"][0].contains("args") ||
            !l["inbound_nodes"][0]["args"].is_array() || l["inbound_nodes"][0]["args"].empty() ||
            !c.contains("name") || !c["name"].is_string())
          break;  // Keras 3 configs only (their inbound nodes name tensors by keras_history)
        json heavy = l;
        const std::string name = "heavy_" + std::to_string(top["layers"].size());
        json arg = l["inbound_nodes"][0]["args"][0];
        if (!arg.is_object() || !arg.contains("config") || !arg["config"].is_object()) break;
        arg["config"]["keras_history"] = json::array({c["name"], 0, 0});
        arg["config"].erase("shape");
        const bool attention = p.ConsumeBool();
        heavy["class_name"] = attention ? "Attention" : "MaxPooling1D";
        heavy["name"] = name;
        heavy.erase("build_config");
        heavy["config"] = attention ? json{{"name", name}, {"use_scale", false}, {"score_mode", "dot"}}
                                    : json{{"name", name}, {"pool_size", pick(p, kSteps)}, {"strides", 1}, {"padding", "same"}};
        heavy["inbound_nodes"][0]["args"] = attention ? json::array({json::array({arg, arg})}) : json::array({arg});
        top["layers"].push_back(heavy);
        top["output_layers"].push_back(json::array({name, 0, 0}));
        entries.clear();
        layer_entries(cfg, entries);
        break;
      }
      default:
        if (is_recurrent(cls)) c["return_sequences"] = p.ConsumeBool();
        break;
    }
  }
}

// Runs the model once by name with every input at (batch, timesteps), and streams one step.
void run_model(FuzzedDataProvider& p, recur_model* m, recur_run_options* o) {
  int32_t nin = 0, nout = 0;
  if (recur_model_num_inputs(m, &nin) != RECUR_OK || recur_model_num_outputs(m, &nout) != RECUR_OK || nin < 1 ||
      nin > 8 || nout < 1 || nout > 16)
    return;
  std::int64_t batch = pick(p, kBatches);
  const std::int64_t steps = pick(p, kSteps);
  std::vector<recur_tensor> in(static_cast<std::size_t>(nin));
  std::vector<std::vector<float>> in_data(in.size());
  std::vector<int32_t> ts(in.size());
  std::size_t total = 0;
  for (int32_t i = 0; i < nin; ++i) {
    recur_tensor& t = in[static_cast<std::size_t>(i)];
    recur_tensor_init(&t, RECUR_TENSOR_VERSION);
    int32_t ids = 0;
    if (recur_model_input(m, i, &t.name, &t.rank, t.dims, &ids) != RECUR_OK || t.rank < 1) return;
    if (t.dims[0] > 0) batch = t.dims[0];
    t.dims[0] = batch;
    if (t.rank >= 3 && t.dims[1] < 0) t.dims[1] = steps;
    ts[static_cast<std::size_t>(i)] = t.rank >= 3 ? static_cast<int32_t>(t.dims[1]) : 1;
    double n = 1;
    for (int32_t a = 0; a < t.rank; ++a) n *= t.dims[a] > 0 ? static_cast<double>(t.dims[a]) : 1.0;
    if (n + static_cast<double>(total) > static_cast<double>(kMaxCallerFloats)) return;
    total += static_cast<std::size_t>(n);
    in_data[static_cast<std::size_t>(i)].assign(static_cast<std::size_t>(n), 0.25f);
    t.data = in_data[static_cast<std::size_t>(i)].data();
    t.length = static_cast<std::size_t>(n);
  }
  std::vector<recur_output> out(static_cast<std::size_t>(nout));
  std::vector<std::vector<float>> out_data(out.size());
  total = 0;
  for (int32_t i = 0; i < nout; ++i) {
    recur_output& y = out[static_cast<std::size_t>(i)];
    recur_output_init(&y, RECUR_OUTPUT_VERSION);
    int32_t rank = 0;
    int64_t dims[RECUR_MAX_RANK];
    if (recur_model_output(m, i, &y.name, &rank, dims) != RECUR_OK) return;
    if (recur_model_output_dims(m, i, static_cast<int32_t>(batch), ts.data(), nin, dims, &rank) != RECUR_OK) {
      recur_fuzz::check_message(true);
      return;
    }
    double n = 1;
    for (int32_t a = 0; a < rank; ++a) n *= static_cast<double>(dims[a]);
    if (n + static_cast<double>(total) > static_cast<double>(kMaxCallerFloats)) return;
    total += static_cast<std::size_t>(n);
    out_data[static_cast<std::size_t>(i)].resize(static_cast<std::size_t>(n));
    y.data = out_data[static_cast<std::size_t>(i)].data();
    y.capacity = out_data[static_cast<std::size_t>(i)].size();
  }
  if (verbose()) std::fprintf(stderr, "run: batch %lld, timesteps %lld\n", (long long)batch, (long long)steps);
  if (recur_model_run_named(m, in.data(), nin, out.data(), nout, o) != RECUR_OK) recur_fuzz::check_message(true);
  const char* why = nullptr;
  if (recur_model_streamable(m, &why) != RECUR_OK || !why || *why) return;
  recur_model_state* s = nullptr;
  if (recur_model_state_create(&s, m, static_cast<int32_t>(batch)) != RECUR_OK) {
    recur_fuzz::check_message(true);
    return;
  }
  if (recur_model_state_step_named(s, in.data(), nin, out.data(), nout, o) != RECUR_OK) recur_fuzz::check_message(true);
  recur_model_state_destroy(s);
}

void fuzz_model(FuzzedDataProvider& p, recur_run_options* o) {
  const auto& b = bases();
  const recur_fuzz::KerasParts& base = b[p.ConsumeIntegralInRange<std::size_t>(0, b.size() - 1)];
  json cfg = json::parse(base.config, nullptr, false);
  if (cfg.is_discarded()) std::abort();
  edit_model(p, cfg);
  if (verbose()) std::fprintf(stderr, "model %s: %s\n", base.name.c_str(), cfg.dump().c_str());
  const std::string image = recur_fuzz::zip_store(
      {{"metadata.json", base.metadata}, {"config.json", cfg.dump()}, {"model.weights.h5", base.weights}});
  recur_model* m = nullptr;
  if (recur_model_open_memory(&m, image.data(), image.size(), "budget.keras") != RECUR_OK) {
    recur_fuzz::check_message(true);
    if (m) std::abort();  // documented: *out is NULL on error
    return;
  }
  run_model(p, m, o);
  recur_model_destroy(m);
}

void fuzz_layer(FuzzedDataProvider& p) {
  static const char* const kClasses[] = {"GRU", "LSTM", "SimpleRNN"};
  static const char* const kInits[] = {"Orthogonal", "GlorotUniform", "Zeros", "RandomNormal", "Identity"};
  const std::string cls = kClasses[p.ConsumeIntegralInRange(0, 2)];
  const std::int64_t units = pick(p, kUnits);
  const int32_t features = p.ConsumeIntegralInRange<int32_t>(1, 64);
  json c = {{"units", units}, {"name", "l"}};
  c["recurrent_initializer"] = {{"class_name", kInits[p.ConsumeIntegralInRange(0, 4)]}, {"config", json::object()}};
  c["kernel_initializer"] = {{"class_name", kInits[p.ConsumeIntegralInRange(0, 4)]}, {"config", json::object()}};
  std::int64_t batch = p.ConsumeIntegralInRange<std::int64_t>(1, 3);
  if (p.ConsumeBool()) {
    batch = pick(p, kBatches);
    c["stateful"] = true;
    c["batch_input_shape"] = json::array({batch, nullptr, features});
  }
  const std::string text = json{{"class_name", cls}, {"config", c}}.dump();
  if (verbose()) std::fprintf(stderr, "layer: %s\n", text.c_str());
  recur_layer* l = nullptr;
  if (recur_layer_create_from_json(&l, text.c_str(), features, RECUR_DIALECT_KERAS2, "2.15.0") != RECUR_OK) {
    recur_fuzz::check_message(true);
    if (l) std::abort();
    return;
  }
  const int32_t T = p.ConsumeIntegralInRange<int32_t>(1, 3);
  // A layer's forward has no timeout: its work is the caller's batch x timesteps x the units the
  // config declares, so the caller (this harness) holds it to what runs in well under a second
  // under the sanitizers (a GRU of 870 units at batch 4096 ran 0.5 s in Release, 11 s under ASan).
  const double work = double(batch) * T * 4.0 * double(units) * (double(units) + features);
  if (work > 2e8) {
    recur_layer_destroy(l);
    return;
  }
  std::size_t out_len = 0;
  const std::size_t in_len = static_cast<std::size_t>(batch) * static_cast<std::size_t>(T) * static_cast<std::size_t>(features);
  if (recur_layer_output_length(l, static_cast<int32_t>(batch), T, &out_len) == RECUR_OK && in_len <= kMaxCallerFloats &&
      out_len <= kMaxCallerFloats) {
    std::vector<float> x(in_len, 0.25f), y(out_len);
    if (recur_layer_forward(l, x.data(), x.size(), static_cast<int32_t>(batch), T, nullptr, 0, nullptr, 0, 0, 0, y.data(),
                            y.size(), nullptr, 0) != RECUR_OK)
      recur_fuzz::check_message(true);
  }
  recur_layer_destroy(l);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The default limits, whatever an earlier input or target did.
  for (int32_t i = RECUR_LIMIT_UNITS; i <= RECUR_LIMIT_RUN_WORK; ++i)
    if (recur_set_limit(i, 0) != RECUR_OK) std::abort();
  static recur_run_options* options = [] {
    recur_run_options* o = nullptr;
    if (recur_run_options_create(&o) != RECUR_OK || recur_run_options_set_timeout(o, kRunTimeout) != RECUR_OK) std::abort();
    return o;
  }();
  FuzzedDataProvider p(data, size);
  if (p.ConsumeIntegralInRange(0, 3) == 0)
    fuzz_layer(p);
  else
    fuzz_model(p, options);
  return 0;
}
