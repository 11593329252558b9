// SPDX-License-Identifier: Apache-2.0
// Keras parity: runs every fixture that tests/keras/generate.py wrote with real Keras through the
// C ABI and compares every output and state. The fixture format is described in
// tests/keras/README.md. RECUR_TEST_DEVICE (e.g. "cuda") runs every layer on that device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "recur/recur.h"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

struct Fixture {
  std::string file;     // relative to the fixture dir
  std::string dialect;  // "keras2" / "keras3"
  std::string keras_version;
  json data;            // the case
  std::vector<std::string> model_files;  // relative to tests/keras/: the case's, else the file's
  // A case that exists only as a model file (conversion.json): it has no "weights" of its own, so
  // only the file path runs it.
  bool file_only = false;
};

struct OutputError {
  std::string what;
  double max_abs = 0.0;
  double max_rel = 0.0;  // relative to max(|expected|, 1e-3)
};

struct CaseResult {
  std::string error;  // non-empty if the case could not run
  std::string path;   // where the layer ran: "cpu", "cudnn" or "kernel"
  double tolerance = 1e-5;
  std::vector<OutputError> outputs;
  double max_abs() const {
    double m = 0.0;
    for (const auto& o : outputs) m = std::max(m, o.max_abs);
    return m;
  }
  double max_rel() const {
    double m = 0.0;
    for (const auto& o : outputs) m = std::max(m, o.max_rel);
    return m;
  }
};

std::vector<Fixture> load_fixtures() {
  std::vector<Fixture> out;
  const fs::path root(RECUR_FIXTURE_DIR);
  if (!fs::exists(root)) return out;
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(root))
    if (entry.is_regular_file() && entry.path().extension() == ".json") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    std::ifstream in(path);
    const json doc = json::parse(in);
    for (const auto& c : doc.at("cases")) {
      Fixture f;
      f.file = fs::relative(path, root).string();
      f.dialect = doc.at("dialect").get<std::string>();
      f.keras_version = doc.at("versions").at("keras").get<std::string>();
      f.data = c;
      const json& mf = c.contains("model_files") ? c["model_files"] : doc.value("model_files", json::array());
      for (const auto& m : mf) f.model_files.push_back(m.get<std::string>());
      f.file_only = c.contains("model_files");
      out.push_back(std::move(f));
    }
  }
  return out;
}

const std::vector<Fixture>& fixtures() {
  static const std::vector<Fixture> all = load_fixtures();
  return all;
}

std::vector<float> floats(const json& tensor) {
  std::vector<float> v;
  v.reserve(tensor.at("data").size());
  for (const auto& x : tensor.at("data")) v.push_back(x.get<float>());
  return v;
}

std::vector<float> concat(const json& tensors) {
  std::vector<float> all;
  for (const auto& t : tensors) {
    const auto v = floats(t);
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

std::string status_text(recur_status st) {
  return std::string(recur_status_string(st)) + ": " + recur_last_error();
}

OutputError compare(const std::string& what, const std::vector<float>& got, const json& expected) {
  OutputError e;
  e.what = what;
  const auto want = floats(expected);
  if (got.size() != want.size()) {
    e.max_abs = e.max_rel = INFINITY;
    return e;
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double diff = std::fabs(static_cast<double>(got[i]) - want[i]);
    const double d = std::isnan(got[i]) != std::isnan(want[i]) ? INFINITY : (std::isnan(diff) ? 0.0 : diff);
    e.max_abs = std::max(e.max_abs, d);
    e.max_rel = std::max(e.max_rel, d / std::max(std::fabs(static_cast<double>(want[i])), 1e-3));
  }
  return e;
}

std::vector<float> weight_of(recur_layer* layer, int index) {
  int64_t dims[2] = {0, 0};
  int32_t nd = 0;
  recur_layer_weight_shape(layer, index, dims, &nd);
  std::size_t n = 1;
  for (int i = 0; i < nd; ++i) n *= static_cast<std::size_t>(dims[i]);
  std::vector<float> w(n);
  recur_layer_get_weight(layer, index, w.data(), w.size());
  return w;
}

int weight_index(recur_layer* layer, const std::string& name) {
  int32_t count = 0;
  recur_layer_num_weights(layer, &count);
  for (int32_t i = 0; i < count; ++i) {
    const char* n = nullptr;
    if (recur_layer_weight_name(layer, i, &n) == RECUR_OK && name == n) return i;
  }
  return -1;
}

// layer.losses after the last call: names and values in Keras's order.
void check_losses(recur_layer* layer, const json& expected, CaseResult& r) {
  int32_t count = 0;
  recur_status st = recur_layer_get_losses(layer, nullptr, 0, &count);
  std::vector<float> values(static_cast<std::size_t>(std::max(count, 0)));
  if (st == RECUR_OK) st = recur_layer_get_losses(layer, values.data(), values.size(), &count);
  if (st != RECUR_OK) {
    r.error = "losses: " + status_text(st);
    return;
  }
  if (static_cast<std::size_t>(count) != expected.size()) {
    r.error = "losses: Keras reports " + std::to_string(expected.size()) + ", recur " + std::to_string(count);
    return;
  }
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const char* name = nullptr;
    recur_layer_loss_name(layer, static_cast<int32_t>(i), &name);
    const std::string want = expected[i].at("name").get<std::string>();
    if (want != name) {
      r.error = "loss " + std::to_string(i) + ": Keras has '" + want + "', recur '" + name + "'";
      return;
    }
    const double e = expected[i].at("value").get<double>();
    OutputError o;
    o.what = "loss:" + want;
    // Penalties are sums over whole tensors: compare relative to their size.
    o.max_abs = std::fabs(values[i] - e) / std::max(1.0, std::fabs(e));
    o.max_rel = std::fabs(values[i] - e) / std::max(std::fabs(e), 1e-3);
    r.outputs.push_back(o);
  }
}

// Weights after apply_constraints, including the sign of zeros (Keras 2 non_neg keeps -0.0).
void check_constraints(recur_layer* layer, const json& expected, CaseResult& r) {
  const recur_status st = recur_layer_apply_constraints(layer);
  if (st != RECUR_OK) {
    r.error = "apply_constraints: " + status_text(st);
    return;
  }
  for (const auto& w : expected) {
    const std::string name = w.at("name").get<std::string>();
    const int index = weight_index(layer, name);
    if (index < 0) {
      r.error = "constrained weight '" + name + "' does not exist";
      return;
    }
    const std::vector<float> got = weight_of(layer, index);
    OutputError o = compare("constrained:" + name, got, w);
    const auto want = floats(w);
    for (std::size_t i = 0; i < got.size() && i < want.size(); ++i)
      if (got[i] == 0.0f && want[i] == 0.0f && std::signbit(got[i]) != std::signbit(want[i])) o.max_abs = INFINITY;
    r.outputs.push_back(o);
  }
}

struct Stats {
  double mean = 0, std = 0, min = INFINITY, max = -INFINITY;
  double row_orth = NAN, col_orth = NAN;
};

Stats stats_of(const std::vector<float>& w, const std::vector<int64_t>& shape, double gain) {
  Stats s;
  for (float v : w) {
    s.mean += v;
    s.min = std::min<double>(s.min, v);
    s.max = std::max<double>(s.max, v);
  }
  s.mean /= static_cast<double>(w.size());
  for (float v : w) s.std += (v - s.mean) * (v - s.mean);
  s.std = std::sqrt(s.std / static_cast<double>(w.size()));
  if (shape.size() == 2) {
    const int64_t rows = shape[0], cols = shape[1];
    auto gram_error = [&](bool by_rows) {
      const int64_t n = by_rows ? rows : cols, k = by_rows ? cols : rows;
      double worst = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0;
          for (int64_t m = 0; m < k; ++m) {
            const double a = by_rows ? w[static_cast<std::size_t>(i * cols + m)] : w[static_cast<std::size_t>(m * cols + i)];
            const double b = by_rows ? w[static_cast<std::size_t>(j * cols + m)] : w[static_cast<std::size_t>(m * cols + j)];
            dot += a * b;
          }
          worst = std::max(worst, std::fabs(dot / (gain * gain) - (i == j ? 1.0 : 0.0)));
        }
      return worst;
    };
    if (rows <= cols) s.row_orth = gram_error(true);
    if (rows >= cols) s.col_orth = gram_error(false);
  }
  return s;
}

// "" if recur's sample statistics agree with Keras's: constants exactly, random values within
// about 4 standard errors, ranges (of large samples) within 15%.
std::string distribution_mismatch(const Stats& s, double n, const json& k) {
  const double k_mean = k.at("mean").get<double>(), k_std = k.at("std").get<double>();
  const double k_min = k.at("min").get<double>(), k_max = k.at("max").get<double>();
  if (k_std == 0.0) return s.min != k_min || s.max != k_max ? "constant initializer values differ" : "";
  if (std::fabs(s.mean - k_mean) > 6.0 * k_std / std::sqrt(n) + 1e-6) return "mean differs";
  if (std::fabs(s.std / k_std - 1.0) > 4.0 / std::sqrt(n) + 0.01) return "standard deviation differs";
  // Only bounded distributions (uniform: range 3.5 std, truncated normal: about 4.6 std) have
  // extremes worth comparing; those of unbounded normals vary too much from sample to sample.
  const double slack = 0.15 * (k_max - k_min);
  const bool bounded = k_max - k_min <= 6.0 * k_std;
  if (bounded && n >= 1000) {
    if (s.min < k_min - slack || s.max > k_max + slack) return "range exceeds Keras's";
    // ... and large samples reach close to the bounds (this tells uniform from truncated normal).
    const double reach = 0.08 * (k_max - k_min);
    if (s.min > k_min + reach || s.max < k_max - reach) return "range falls short of Keras's";
  }
  return "";
}

// Initializers cannot reproduce TensorFlow's random streams: compare distributions, not values.
void check_initializers(recur_layer* layer, const json& c, CaseResult& r) {
  // The orthogonality of a weight is measured against its own initializer's gain.
  auto gain_of = [&](const std::string& weight) {
    const json& cfg = c.at("layer").at("config");
    const std::string key = weight + "_initializer";
    const std::string field = weight == "recurrent_kernel" ? "recurrent_initializer" : key;
    if (!cfg.contains(field) || !cfg[field].is_object()) return 1.0;
    const json& init = cfg[field];
    const std::string cls = init.value("class_name", std::string());
    if ((cls == "Orthogonal" || cls == "OrthogonalInitializer") && init.contains("config") && init["config"].is_object())
      return init["config"].value("gain", 1.0);
    return 1.0;
  };
  for (const auto& e : c.at("initializer_stats")) {
    const std::string name = e.at("name").get<std::string>();
    const int index = weight_index(layer, name);
    if (index < 0) {
      r.error = "initializer_stats: no weight '" + name + "'";
      return;
    }
    std::vector<int64_t> shape;
    for (const auto& d : e.at("shape")) shape.push_back(d.get<int64_t>());
    const std::vector<float> w = weight_of(layer, index);
    const Stats s = stats_of(w, shape, gain_of(name));
    const double n = static_cast<double>(w.size());
    const double k_mean = e.at("mean").get<double>(), k_std = e.at("std").get<double>();
    const double k_min = e.at("min").get<double>(), k_max = e.at("max").get<double>();
    OutputError o;
    o.what = "init:" + name;
    std::string why;
    if (static_cast<double>(e.at("n").get<int64_t>()) != n) why = "size differs";
    if (why.empty()) why = distribution_mismatch(s, n, e);
    // Per gate block (e.g. the LSTM forget block of ones), split along the last axis.
    if (why.empty() && e.contains("blocks") && e["blocks"].is_array() && !e["blocks"].empty()) {
      const std::size_t nb = e["blocks"].size();
      const std::size_t cols = static_cast<std::size_t>(shape.back()), width = cols / nb;
      const std::size_t rows = w.size() / cols;
      for (std::size_t b = 0; b < nb && why.empty(); ++b) {
        std::vector<float> block;
        for (std::size_t i = 0; i < rows; ++i)
          block.insert(block.end(), w.begin() + static_cast<long>(i * cols + b * width),
                       w.begin() + static_cast<long>(i * cols + (b + 1) * width));
        const Stats bs = stats_of(block, {static_cast<int64_t>(block.size())}, 1.0);
        const std::string m = distribution_mismatch(bs, static_cast<double>(block.size()), e["blocks"][b]);
        if (!m.empty()) why = "block " + std::to_string(b) + ": " + m;
      }
    }
    for (const char* key : {"row_orthogonality", "col_orthogonality"}) {
      if (!e.contains(key) || e[key].is_null()) continue;
      const double mine = std::string(key) == "row_orthogonality" ? s.row_orth : s.col_orth;
      if (e[key].get<double>() < 1e-4 && !(mine < 1e-4)) why = std::string(key) + " not orthogonal";
    }
    if (!why.empty()) {
      r.error = "initializer '" + name + "': " + why + " (recur mean " + std::to_string(s.mean) + " std " +
                std::to_string(s.std) + " range [" + std::to_string(s.min) + ", " + std::to_string(s.max) +
                "]; Keras mean " + std::to_string(k_mean) + " std " + std::to_string(k_std) + " range [" +
                std::to_string(k_min) + ", " + std::to_string(k_max) + "])";
      return;
    }
    r.outputs.push_back(o);
  }
}

void run_calls(recur_layer* layer, const json& c, CaseResult& r);

const char* test_device() {
  const char* d = std::getenv("RECUR_TEST_DEVICE");
  return d && *d ? d : nullptr;
}

// Places the layer on RECUR_TEST_DEVICE (if set) and records the route it takes there.
void place(recur_layer* layer, CaseResult& r) {
  if (const char* device = test_device()) {
    if (recur_layer_set_device(layer, device) != RECUR_OK) {
      r.error = std::string("set_device ") + device + ": " + recur_last_error();
      return;
    }
  }
  recur_device_info info;
  info.version = RECUR_DEVICE_INFO_VERSION;
  if (recur_layer_get_device(layer, &info) == RECUR_OK) r.path = info.path;
}

CaseResult run_case(const Fixture& f) {
  CaseResult r;
  const json& c = f.data;
  r.tolerance = c.value("tolerance", 1e-5);
  const int dialect = f.dialect == "keras2" ? RECUR_DIALECT_KERAS2 : RECUR_DIALECT_KERAS3;
  recur_layer* layer = nullptr;
  const std::string layer_json = c.at("layer").dump();
  recur_status st = recur_layer_create_from_json(&layer, layer_json.c_str(), c.at("input_size").get<int>(), dialect,
                                                 f.keras_version.c_str());
  if (st != RECUR_OK) {
    r.error = "create: " + status_text(st);
    return r;
  }
  // Placed before the weights are set, so every set_weight re-uploads them.
  place(layer, r);
  const json weights = c.value("weights", json::array());
  for (std::size_t i = 0; i < weights.size() && r.error.empty(); ++i) {
    const auto data = floats(weights[i]);
    std::vector<int64_t> dims;
    for (const auto& d : weights[i].at("shape")) dims.push_back(d.get<int64_t>());
    st = recur_layer_set_weight(layer, static_cast<int32_t>(i), data.data(), data.size(), dims.data(),
                                static_cast<int32_t>(dims.size()));
    if (st != RECUR_OK) r.error = "set_weight " + std::to_string(i) + ": " + status_text(st);
  }
  if (r.error.empty()) run_calls(layer, c, r);
  if (r.error.empty() && c.contains("losses")) check_losses(layer, c["losses"], r);
  if (r.error.empty() && c.contains("constrained_weights")) check_constraints(layer, c["constrained_weights"], r);
  if (r.error.empty() && c.contains("initializer_stats")) check_initializers(layer, c, r);
  recur_layer_destroy(layer);
  return r;
}

// Runs the case's calls on `layer` (weights already in place) and compares every output.
void run_calls(recur_layer* layer, const json& c, CaseResult& r) {
  recur_status st = RECUR_OK;
  recur_layer_info info;
  info.version = RECUR_LAYER_INFO_VERSION;
  recur_layer_get_info(layer, &info);
  const bool is_cell = info.type == RECUR_LAYER_GRU_CELL || info.type == RECUR_LAYER_LSTM_CELL ||
                       info.type == RECUR_LAYER_SIMPLE_RNN_CELL;
  int call_index = 0;
  for (const auto& call : c.at("calls")) {
    if (!r.error.empty()) break;
    const std::string prefix = "call" + std::to_string(call_index++) + ".";
    if (call.contains("reset_states") && !call["reset_states"].is_null()) {
      const json& rs = call["reset_states"];
      if (rs.empty()) {
        st = recur_layer_reset_states(layer);
      } else {
        const auto v = concat(rs);
        st = recur_layer_set_states(layer, v.data(), v.size(), static_cast<int32_t>(rs.size()));
      }
      if (st != RECUR_OK) {
        r.error = prefix + "reset_states: " + status_text(st);
        break;
      }
    }
    const json& input = call.at("input");
    const auto x = floats(input);
    const auto& shape = input.at("shape");
    const json& outputs = call.at("outputs");
    const auto init = call.contains("initial_state") ? concat(call["initial_state"]) : std::vector<float>();
    const int n_init = call.contains("initial_state") ? static_cast<int>(call["initial_state"].size()) : 0;
    const bool training = call.value("training", false);

    if (is_cell) {
      const int B = shape[0].get<int>();
      std::vector<float> out(static_cast<std::size_t>(B) * info.units);
      std::vector<float> states(static_cast<std::size_t>(info.num_states) * B * info.units);
      st = recur_cell_call(layer, x.data(), x.size(), B, init.data(), init.size(), n_init, training, out.data(),
                           out.size(), states.data(), states.size());
      if (st != RECUR_OK) {
        r.error = prefix + "cell_call: " + status_text(st);
        break;
      }
      for (const auto& o : outputs) {
        const std::string name = o.at("name").get<std::string>();
        std::vector<float> got = out;
        const std::size_t each = static_cast<std::size_t>(B) * info.units;
        if (name == "state_h") got.assign(states.begin(), states.begin() + static_cast<long>(each));
        if (name == "state_c") got.assign(states.begin() + static_cast<long>(each), states.end());
        r.outputs.push_back(compare(prefix + name, got, o));
      }
      continue;
    }

    const int B = info.time_major ? shape[1].get<int>() : shape[0].get<int>();
    const int T = info.time_major ? shape[0].get<int>() : shape[1].get<int>();
    std::vector<uint8_t> mask;
    if (call.contains("mask") && !call["mask"].is_null())
      for (const auto& m : call["mask"].at("data")) mask.push_back(m.get<double>() != 0.0 ? 1 : 0);
    size_t out_len = 0;
    recur_layer_output_length(layer, B, T, &out_len);
    std::vector<float> out(out_len);
    std::vector<float> final_state(static_cast<std::size_t>(info.num_states) * B * info.units);
    st = recur_layer_forward(layer, x.data(), x.size(), B, T, mask.empty() ? nullptr : mask.data(), mask.size(),
                             n_init ? init.data() : nullptr, init.size(), n_init, training, out.data(), out.size(),
                             final_state.data(), final_state.size());
    if (st != RECUR_OK) {
      r.error = prefix + "forward: " + status_text(st);
      break;
    }
    const std::size_t each = static_cast<std::size_t>(B) * info.units;
    for (const auto& o : outputs) {
      const std::string name = o.at("name").get<std::string>();
      std::vector<float> got = out;
      if (name == "state_h") got.assign(final_state.begin(), final_state.begin() + static_cast<long>(each));
      if (name == "state_c") got.assign(final_state.begin() + static_cast<long>(each), final_state.end());
      r.outputs.push_back(compare(prefix + name, got, o));
    }
  }
}

// ---- The same cases through the model-file loader (recur_model_open / recur_model_get_layer) ----

struct OpenedModel {
  recur_model* model = nullptr;
  recur_status status = RECUR_OK;
  std::string error;  // status_text of a failed open

  OpenedModel() = default;
  OpenedModel(OpenedModel&& other) noexcept
      : model(std::exchange(other.model, nullptr)), status(other.status), error(std::move(other.error)) {}
  OpenedModel(const OpenedModel&) = delete;
  OpenedModel& operator=(const OpenedModel&) = delete;
  ~OpenedModel() { recur_model_destroy(model); }  // at exit, before the leak checker looks
};

// Each model file is opened once and kept for the whole run.
const OpenedModel& open_model(const std::string& rel) {
  static std::map<std::string, OpenedModel> cache;
  auto it = cache.find(rel);
  if (it != cache.end()) return it->second;
  OpenedModel m;
  const std::string path = (fs::path(RECUR_FIXTURE_DIR).parent_path() / rel).string();
  m.status = recur_model_open(&m.model, path.c_str());
  if (m.status != RECUR_OK) {
    m.error = status_text(m.status);
    m.model = nullptr;
  }
  return cache.emplace(rel, std::move(m)).first->second;
}

// Runs the case's calls on the layer the model file holds, with the file's weights (the fixture's
// weights are not used). A case with "expect_open_error" checks that the open fails like Keras's.
CaseResult run_file_case(const Fixture& f, const std::string& file) {
  CaseResult r;
  const json& c = f.data;
  r.tolerance = c.value("tolerance", 1e-5);
  const OpenedModel& m = open_model(file);
  if (c.contains("expect_open_error")) {
    const std::string want = c["expect_open_error"].get<std::string>();
    if (m.status == RECUR_OK) r.error = file + ": recur opened the file, Keras refuses it with '" + want + "'";
    else if (m.status != RECUR_ERR_IO || m.error.find(want) == std::string::npos)
      r.error = file + ": expected RECUR_ERR_IO with '" + want + "', got " + m.error;
    else r.outputs.push_back(OutputError{"open error: " + want, 0.0, 0.0});
    return r;
  }
  if (m.status != RECUR_OK) {
    r.error = "model_open " + file + ": " + m.error;
    return r;
  }
  const std::string name = c.at("model_layer").get<std::string>();
  recur_layer* layer = nullptr;
  const recur_status st = recur_model_get_layer(m.model, name.c_str(), &layer);
  if (st != RECUR_OK) {
    r.error = "model_get_layer " + file + " '" + name + "': " + status_text(st);
    return r;
  }
  place(layer, r);
  if (r.error.empty()) run_calls(layer, c, r);
  recur_layer_destroy(layer);
  return r;
}

struct FileCase {
  std::size_t fixture;
  std::string file;
};

const std::vector<FileCase>& file_cases() {
  static const std::vector<FileCase> all = [] {
    std::vector<FileCase> v;
    for (std::size_t i = 0; i < fixtures().size(); ++i)
      if (fixtures()[i].data.contains("model_layer"))
        for (const auto& file : fixtures()[i].model_files) v.push_back({i, file});
    return v;
  }();
  return all;
}

bool is_h5(const std::string& file) { return file.size() >= 3 && file.compare(file.size() - 3, 3, ".h5") == 0; }

// Each case runs once per process: its own test and the summary read the same result (a default
// run of the suite used to run every case twice).
const CaseResult& case_result(std::size_t fixture) {
  static std::map<std::size_t, CaseResult> done;
  auto it = done.find(fixture);
  if (it == done.end()) it = done.emplace(fixture, run_case(fixtures()[fixture])).first;
  return it->second;
}

const CaseResult& file_case_result(std::size_t file_case) {
  static std::map<std::size_t, CaseResult> done;
  auto it = done.find(file_case);
  if (it == done.end()) {
    const FileCase& fc = file_cases()[file_case];
    it = done.emplace(file_case, run_file_case(fixtures()[fc.fixture], fc.file)).first;
  }
  return it->second;
}

class KerasParityFile : public ::testing::TestWithParam<std::size_t> {};

TEST_P(KerasParityFile, MatchesKeras) {
  if (!RECUR_TEST_WITH_FILES) GTEST_SKIP() << "recur was built without model-file support (RECUR_WITH_FILES=OFF)";
  const FileCase& fc = file_cases()[GetParam()];
  const Fixture& f = fixtures()[fc.fixture];
  const std::string what = f.file + " / " + f.data.at("name").get<std::string>() + " via " + fc.file;
  const CaseResult& r = file_case_result(GetParam());
  ASSERT_TRUE(r.error.empty()) << what << ": " << r.error;
  ASSERT_FALSE(r.outputs.empty()) << what << ": the fixture has no outputs to compare";
  for (const auto& o : r.outputs)
    EXPECT_LE(o.max_abs, r.tolerance) << what << " / " << o.what << ": max abs error " << o.max_abs << " (rel "
                                      << o.max_rel << ")";
}

std::string file_case_name(const ::testing::TestParamInfo<std::size_t>& info) {
  const FileCase& fc = file_cases()[info.param];
  const Fixture& f = fixtures()[fc.fixture];
  std::string name = f.dialect + "_" + f.data.at("name").get<std::string>() + (is_h5(fc.file) ? "_h5" : "_keras");
  for (auto& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name + "_" + std::to_string(info.param);
}

std::vector<std::size_t> file_indices() {
  std::vector<std::size_t> v(file_cases().size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = i;
  return v;
}

INSTANTIATE_TEST_SUITE_P(ModelFiles, KerasParityFile, ::testing::ValuesIn(file_indices()), file_case_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(KerasParityFile);

// ---- The layer-JSON path ----

class KerasParity : public ::testing::TestWithParam<std::size_t> {};

TEST_P(KerasParity, MatchesKeras) {
  const Fixture& f = fixtures()[GetParam()];
  const CaseResult& r = case_result(GetParam());
  ASSERT_TRUE(r.error.empty()) << f.file << " / " << f.data.at("name").get<std::string>() << ": " << r.error;
  ASSERT_FALSE(r.outputs.empty()) << "the fixture has no outputs to compare";
  for (const auto& o : r.outputs)
    EXPECT_LE(o.max_abs, r.tolerance) << f.file << " / " << f.data.at("name").get<std::string>() << " / " << o.what
                                      << ": max abs error " << o.max_abs << " (rel " << o.max_rel << ")";
}

std::string case_name(const ::testing::TestParamInfo<std::size_t>& info) {
  const Fixture& f = fixtures()[info.param];
  std::string name = f.dialect + "_" + f.data.at("name").get<std::string>();
  for (auto& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name + "_" + std::to_string(info.param);
}

// Every case except those that exist only as model files.
std::vector<std::size_t> indices() {
  std::vector<std::size_t> v;
  for (std::size_t i = 0; i < fixtures().size(); ++i)
    if (!fixtures()[i].file_only) v.push_back(i);
  return v;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, KerasParity, ::testing::ValuesIn(indices()), case_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(KerasParity);

// Prints every fixture's errors and the worst case overall (running the cases no test ran yet).
TEST(KerasParitySummary, AllFixturesWithinTolerance) {
  ASSERT_FALSE(fixtures().empty()) << "no fixtures found under " << RECUR_FIXTURE_DIR
                                   << " (run tests/keras/generate.sh)";
  double worst_abs = 0.0, worst_rel = 0.0;
  std::string worst_case;
  std::size_t failed = 0, outputs = 0;
  std::printf("%-10s %-52s %12s %12s %8s\n", "dialect", "case", "max_abs", "max_rel", "tol");
  std::size_t cases = 0;
  std::map<std::string, std::size_t> paths;
  for (std::size_t i = 0; i < fixtures().size(); ++i) {
    const Fixture& f = fixtures()[i];
    if (f.file_only) continue;
    ++cases;
    const CaseResult& r = case_result(i);
    const std::string name = f.data.at("name").get<std::string>();
    if (!r.error.empty()) {
      ++failed;
      std::printf("%-10s %-52s ERROR %s\n", f.dialect.c_str(), name.c_str(), r.error.c_str());
      continue;
    }
    outputs += r.outputs.size();
    ++paths[r.path];
    std::printf("%-10s %-52s %12.3e %12.3e %8.0e %s\n", f.dialect.c_str(), name.c_str(), r.max_abs(), r.max_rel(),
                r.tolerance, r.path.c_str());
    if (r.max_abs() > r.tolerance) ++failed;
    if (r.max_abs() > worst_abs) {
      worst_abs = r.max_abs();
      worst_case = f.dialect + "/" + name;
    }
    worst_rel = std::max(worst_rel, r.max_rel());
  }
  std::printf("parity: %zu cases, %zu outputs compared, %zu failed; worst max abs error %.3e (%s), worst rel %.3e\n",
              cases, outputs, failed, worst_abs, worst_case.c_str(), worst_rel);
  std::printf("device: %s; cpu kernels: %s; routes: %zu cpu, %zu cudnn, %zu kernel\n",
              test_device() ? test_device() : "cpu", recur_cpu_kernels(), paths["cpu"], paths["cudnn"], paths["kernel"]);

  // The model-file path: one line per file kind (.keras, .h5).
  if (!RECUR_TEST_WITH_FILES)
    std::printf("parity via model files: skipped, recur was built without model-file support (RECUR_WITH_FILES=OFF)\n");
  for (const bool h5 : {false, true}) {
    if (!RECUR_TEST_WITH_FILES) break;
    const char* kind = h5 ? ".h5" : ".keras";
    double file_worst = 0.0, file_rel = 0.0;
    std::string file_worst_case;
    std::size_t n = 0, file_outputs = 0, file_failed = 0, open_errors = 0;
    for (std::size_t i = 0; i < file_cases().size(); ++i) {
      const FileCase& fc = file_cases()[i];
      if (is_h5(fc.file) != h5) continue;
      ++n;
      const Fixture& f = fixtures()[fc.fixture];
      const std::string name = f.data.at("name").get<std::string>();
      const CaseResult& r = file_case_result(i);
      if (!r.error.empty()) {
        ++file_failed;
        std::printf("%-10s %-52s ERROR (%s) %s\n", f.dialect.c_str(), name.c_str(), fc.file.c_str(), r.error.c_str());
        continue;
      }
      if (f.data.contains("expect_open_error")) {
        ++open_errors;
        continue;
      }
      file_outputs += r.outputs.size();
      if (r.max_abs() > r.tolerance) {
        ++file_failed;
        std::printf("%-10s %-52s %12.3e %12.3e %8.0e (%s)\n", f.dialect.c_str(), name.c_str(), r.max_abs(),
                    r.max_rel(), r.tolerance, fc.file.c_str());
      }
      if (r.max_abs() > file_worst) {
        file_worst = r.max_abs();
        file_worst_case = f.dialect + "/" + name;
      }
      file_rel = std::max(file_rel, r.max_rel());
    }
    std::printf("parity via %s files: %zu cases (%zu expected open errors), %zu outputs compared, %zu failed; worst "
                "max abs error %.3e (%s), worst rel %.3e\n",
                kind, n, open_errors, file_outputs, file_failed, file_worst, file_worst_case.c_str(), file_rel);
    failed += file_failed;
  }
  EXPECT_EQ(failed, 0u);
}

}  // namespace

// With RECUR_TEST_DEVICE naming a device that cannot run here (no GPU, driver or plugin), the whole
// suite is skipped (exit 77, ctest's SKIP_RETURN_CODE) with the reason, instead of failing every case.
// With RECUR_CPU_KERNELS naming a kernel set this CPU cannot run, it is skipped the same way.
int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (const char* asked = std::getenv("RECUR_CPU_KERNELS")) {
    if (std::strcmp(asked, recur_cpu_kernels()) != 0) {
      std::printf("skipped: this CPU cannot run the %s kernels (it runs %s)\n", asked, recur_cpu_kernels());
      return 77;
    }
    std::printf("parity with the %s CPU kernels\n", asked);
  }
  if (const char* device = test_device()) {
    if (recur_device_check(device) != RECUR_OK) {
      std::printf("skipped: the parity suite on %s cannot run here: %s\n", device, recur_last_error());
      return 77;
    }
    std::printf("parity on device %s\n", device);
  }
  return RUN_ALL_TESTS();
}

