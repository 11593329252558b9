// Keras parity: runs every fixture that tests/keras/generate.py wrote with real Keras through the
// C ABI and compares every output and state. The fixture format is described in
// tests/keras/README.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
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
};

struct OutputError {
  std::string what;
  double max_abs = 0.0;
  double max_rel = 0.0;  // relative to max(|expected|, 1e-3)
};

struct CaseResult {
  std::string error;  // non-empty if the case could not run
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
  recur_layer_info info;
  info.version = RECUR_LAYER_INFO_VERSION;
  recur_layer_get_info(layer, &info);
  const bool is_cell = info.type == RECUR_LAYER_GRU_CELL || info.type == RECUR_LAYER_LSTM_CELL;

  const json& weights = c.at("weights");
  for (std::size_t i = 0; i < weights.size() && r.error.empty(); ++i) {
    const auto data = floats(weights[i]);
    std::vector<int64_t> dims;
    for (const auto& d : weights[i].at("shape")) dims.push_back(d.get<int64_t>());
    st = recur_layer_set_weight(layer, static_cast<int32_t>(i), data.data(), data.size(), dims.data(),
                                static_cast<int32_t>(dims.size()));
    if (st != RECUR_OK) r.error = "set_weight " + std::to_string(i) + ": " + status_text(st);
  }

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
  recur_layer_destroy(layer);
  return r;
}

class KerasParity : public ::testing::TestWithParam<std::size_t> {};

TEST_P(KerasParity, MatchesKeras) {
  const Fixture& f = fixtures()[GetParam()];
  const CaseResult r = run_case(f);
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

std::vector<std::size_t> indices() {
  std::vector<std::size_t> v(fixtures().size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = i;
  return v;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, KerasParity, ::testing::ValuesIn(indices()), case_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(KerasParity);

// Runs every fixture once more and prints the error table and the worst case overall.
TEST(KerasParitySummary, AllFixturesWithinTolerance) {
  ASSERT_FALSE(fixtures().empty()) << "no fixtures found under " << RECUR_FIXTURE_DIR
                                   << " (run tests/keras/generate.sh)";
  double worst_abs = 0.0, worst_rel = 0.0;
  std::string worst_case;
  std::size_t failed = 0, outputs = 0;
  std::printf("%-10s %-52s %12s %12s %8s\n", "dialect", "case", "max_abs", "max_rel", "tol");
  for (const auto& f : fixtures()) {
    const CaseResult r = run_case(f);
    const std::string name = f.data.at("name").get<std::string>();
    if (!r.error.empty()) {
      ++failed;
      std::printf("%-10s %-52s ERROR %s\n", f.dialect.c_str(), name.c_str(), r.error.c_str());
      continue;
    }
    outputs += r.outputs.size();
    std::printf("%-10s %-52s %12.3e %12.3e %8.0e\n", f.dialect.c_str(), name.c_str(), r.max_abs(), r.max_rel(),
                r.tolerance);
    if (r.max_abs() > r.tolerance) ++failed;
    if (r.max_abs() > worst_abs) {
      worst_abs = r.max_abs();
      worst_case = f.dialect + "/" + name;
    }
    worst_rel = std::max(worst_rel, r.max_rel());
  }
  std::printf("parity: %zu cases, %zu outputs compared, %zu failed; worst max abs error %.3e (%s), worst rel %.3e\n",
              fixtures().size(), outputs, failed, worst_abs, worst_case.c_str(), worst_rel);
  EXPECT_EQ(failed, 0u);
}

}  // namespace
