// End-to-end tests of the `recur` binary on real Keras model files (tests/cli/models, written by
// tests/cli/make_models.py with tf-keras 2.21 and Keras 3.15.1).
#include "npy.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <tuple>
#include <unistd.h>

using recur_cli::Array;
using recur_cli::NamedArrays;

namespace {

const std::string kBin = RECUR_CLI_BINARY;
const std::string kModels = RECUR_CLI_MODEL_DIR;

struct Result {
  int rc = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/recur_cli_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  // Runs `recur <args>` (args are shell words; paths here contain no spaces).
  Result run(const std::string& args) {
    const std::string out = dir_ + "/stdout", err = dir_ + "/stderr";
    const int st = std::system(("'" + kBin + "' " + args + " >'" + out + "' 2>'" + err + "'").c_str());
    Result r;
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }
  std::string m(const std::string& dialect, const std::string& file) const { return kModels + "/" + dialect + "/" + file; }
  std::string tmp(const std::string& name) const { return dir_ + "/" + name; }

  std::string dir_;
};

double max_abs(const Array& a, const Array& b) {
  EXPECT_EQ(a.shape, b.shape);
  double d = 0;
  for (std::size_t i = 0; i < std::min(a.data.size(), b.data.size()); ++i)
    d = std::max(d, static_cast<double>(std::fabs(a.data[i] - b.data[i])));
  return d;
}

const Array& member(const NamedArrays& arrays, const std::string& name) {
  for (const auto& kv : arrays)
    if (kv.first == name) return kv.second;
  throw std::runtime_error("no member " + name);
}

double reported_max_abs(const std::string& out) {
  const auto p = out.find("max abs error: ");
  if (p == std::string::npos) return INFINITY;
  return std::stod(out.substr(p + 15));
}

// ------------------------------------------------------------------------- verify, whole models

class VerifyModel : public Cli, public ::testing::WithParamInterface<std::tuple<std::string, std::string, std::string>> {};

TEST_P(VerifyModel, MatchesKeras) {
  const auto& [dialect, model, ext] = GetParam();
  const std::string expected = model == "binone" ? "binone_y.npz" : model + "_y.npy";
  const Result r = run("verify " + m(dialect, model + "." + ext) + " --input " + m(dialect, model + "_x.npy") +
                       " --expected " + m(dialect, expected));
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("OK"), std::string::npos) << r.out;
  const double err = reported_max_abs(r.out);
  EXPECT_LE(err, 1e-5);
  std::printf("[ measured ] %s/%s.%s: max abs error vs Keras %.3e\n", dialect.c_str(), model.c_str(), ext.c_str(), err);
  RecordProperty("max_abs_error", std::to_string(err));
}

INSTANTIATE_TEST_SUITE_P(Models, VerifyModel,
                         ::testing::Combine(::testing::Values("keras2", "keras3"),
                                            ::testing::Values("tokens", "bigru", "binone"),
                                            ::testing::Values("keras", "h5")),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param) + "_" + std::get<2>(info.param);
                         });

// ------------------------------------------------------------------------- verify, single layers

class VerifyLayer : public Cli, public ::testing::WithParamInterface<std::tuple<std::string, std::string>> {};

TEST_P(VerifyLayer, GruWithMaskAndInitialState) {
  const auto& [d, ext] = GetParam();
  const Result r = run("verify " + m(d, "tokens." + ext) + " --layer gru --input " + m(d, "layer_gru_x.npy") + " --mask " +
                       m(d, "layer_gru_mask.npy") + " --initial-state " + m(d, "layer_gru_h0.npy") + " --expected " +
                       m(d, "layer_gru_y.npz"));
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("state_h"), std::string::npos);
  EXPECT_NE(r.out.find("elements: 105"), std::string::npos) << r.out;  // 3*6*5 + 3*5
  std::printf("[ measured ] %s/tokens.%s layer gru: max abs error %.3e\n", d.c_str(), ext.c_str(), reported_max_abs(r.out));
}

TEST_P(VerifyLayer, LstmStates) {
  const auto& [d, ext] = GetParam();
  const Result r = run("verify " + m(d, "tokens." + ext) + " --layer lstm --input " + m(d, "layer_lstm_x.npy") +
                       " --mask " + m(d, "layer_lstm_mask.npy") + " --expected " + m(d, "layer_lstm_y.npz"));
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("state_c"), std::string::npos);
  EXPECT_NE(r.out.find("elements: 27"), std::string::npos) << r.out;
  std::printf("[ measured ] %s/tokens.%s layer lstm: max abs error %.3e\n", d.c_str(), ext.c_str(), reported_max_abs(r.out));
}

TEST_P(VerifyLayer, BidirectionalForwardHalf) {
  const auto& [d, ext] = GetParam();
  const Result r = run("verify " + m(d, "bigru." + ext) + " --layer bi/forward --input " + m(d, "layer_biforward_x.npy") +
                       " --mask " + m(d, "layer_biforward_mask.npy") + " --expected " + m(d, "layer_biforward_y.npz"));
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  std::printf("[ measured ] %s/bigru.%s layer bi/forward: max abs error %.3e\n", d.c_str(), ext.c_str(),
              reported_max_abs(r.out));
}

INSTANTIATE_TEST_SUITE_P(Layers, VerifyLayer,
                         ::testing::Combine(::testing::Values("keras2", "keras3"), ::testing::Values("keras", "h5")),
                         [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });

// ----------------------------------------------------------------------------------------- run

TEST_F(Cli, RunTokenModelWritesOutput) {
  const Result r = run("run " + m("keras2", "tokens.keras") + " --input " + m("keras2", "tokens_x.npy") + " --output " +
                       tmp("out.npz"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("output: (3, 2)"), std::string::npos) << r.out;
  const NamedArrays out = recur_cli::read_npz(tmp("out.npz"));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].first, "output");
  EXPECT_LE(max_abs(out[0].second, recur_cli::read_npy(m("keras2", "tokens_y.npy"))), 1e-5);
  // softmax rows sum to 1
  for (int b = 0; b < 3; ++b) EXPECT_NEAR(out[0].second.data[2 * b] + out[0].second.data[2 * b + 1], 1.0f, 1e-6f);
}

TEST_F(Cli, RunSequenceModel) {
  const Result r = run("run " + m("keras2", "bigru.h5") + " -i " + m("keras2", "bigru_x.npy") + " -o " + tmp("o.npz"));
  ASSERT_EQ(r.rc, 0) << r.err;
  const NamedArrays out = recur_cli::read_npz(tmp("o.npz"));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].second.shape, (std::vector<std::int64_t>{3, 6, 2}));
  EXPECT_LE(max_abs(out[0].second, recur_cli::read_npy(m("keras2", "bigru_y.npy"))), 1e-5);
}

TEST_F(Cli, RunTwoOutputs) {
  const Result r = run("run " + m("keras3", "binone.h5") + " --input " + m("keras3", "binone_x.npy") + " --output " +
                       tmp("o.npz"));
  ASSERT_EQ(r.rc, 0) << r.err;
  const NamedArrays out = recur_cli::read_npz(tmp("o.npz"));
  const NamedArrays want = recur_cli::read_npz(m("keras3", "binone_y.npz"));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].first, "output_1");
  EXPECT_LE(max_abs(member(out, "output"), member(want, "output")), 1e-5);
  EXPECT_LE(max_abs(member(out, "output_1"), member(want, "output_1")), 1e-5);
}

TEST_F(Cli, RunExplicitMaskOnModel) {
  // binone has no Masking layer; an explicit all-ones mask changes nothing.
  Array ones;
  ones.shape = {3, 6};
  ones.data.assign(18, 1.0f);
  recur_cli::write_npy(tmp("ones.npy"), ones);
  const Result r = run("run " + m("keras2", "binone.keras") + " --input " + m("keras2", "binone_x.npy") + " --mask " +
                       tmp("ones.npy") + " --output " + tmp("o.npz"));
  ASSERT_EQ(r.rc, 0) << r.err;
  const NamedArrays want = recur_cli::read_npz(m("keras2", "binone_y.npz"));
  EXPECT_LE(max_abs(member(recur_cli::read_npz(tmp("o.npz")), "output"), member(want, "output")), 1e-5);
}

TEST_F(Cli, RunLayerWritesStates) {
  const Result r = run("run " + m("keras2", "tokens.keras") + " --layer lstm --input " + m("keras2", "layer_lstm_x.npy") +
                       " --mask " + m("keras2", "layer_lstm_mask.npy") + " --output " + tmp("l.npz"));
  ASSERT_EQ(r.rc, 0) << r.err;
  const NamedArrays out = recur_cli::read_npz(tmp("l.npz"));
  const NamedArrays want = recur_cli::read_npz(m("keras2", "layer_lstm_y.npz"));
  ASSERT_EQ(out.size(), 3u);
  for (const char* name : {"output", "state_h", "state_c"}) {
    EXPECT_EQ(member(out, name).shape, (std::vector<std::int64_t>{3, 3})) << name;
    EXPECT_LE(max_abs(member(out, name), member(want, name)), 1e-5) << name;
  }
}

TEST_F(Cli, RunLayerInitialStateMatters) {
  const std::string d = "keras3";
  const std::string base = "run " + m(d, "tokens.h5") + " --layer gru --input " + m(d, "layer_gru_x.npy") + " --mask " +
                           m(d, "layer_gru_mask.npy");
  ASSERT_EQ(run(base + " --initial-state " + m(d, "layer_gru_h0.npy") + " --output " + tmp("a.npz")).rc, 0);
  ASSERT_EQ(run(base + " --output " + tmp("b.npz")).rc, 0);
  const NamedArrays want = recur_cli::read_npz(m(d, "layer_gru_y.npz"));
  const NamedArrays a = recur_cli::read_npz(tmp("a.npz")), b = recur_cli::read_npz(tmp("b.npz"));
  EXPECT_LE(max_abs(member(a, "state_h"), member(want, "state_h")), 1e-5);
  EXPECT_GT(max_abs(member(b, "state_h"), member(want, "state_h")), 1e-3);
}

// ---------------------------------------------------------------------------------------- info

TEST_F(Cli, InfoText) {
  const Result r = run("info " + m("keras2", "tokens.h5"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("dialect:       keras2 (keras_version 2.21.0)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("runnable:      yes"), std::string::npos);
  EXPECT_NE(r.out.find("input:         token ids (B, T)"), std::string::npos);
  EXPECT_NE(r.out.find("output:        (B, 2)"), std::string::npos);
  EXPECT_NE(r.out.find("layers:        5"), std::string::npos);
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\n  gru +GRU +4 +5 +yes\n"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\n  lstm +LSTM +5 +3 +yes\n"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\n  dense +Dense +3 +2 +no\n"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\n  embedding +Embedding +1 +4 +no\n"))) << r.out;
}

TEST_F(Cli, InfoTwoOutputs) {
  const Result r = run("info " + m("keras3", "binone.keras"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("input:         (B, T, 3)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("output:        (B, 2) x 2 outputs"), std::string::npos) << r.out;
}

TEST_F(Cli, InfoJson) {
  for (const std::string d : {"keras2", "keras3"}) {
    const Result r = run("info --json " + m(d, "bigru.keras"));
    ASSERT_EQ(r.rc, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["dialect"], d);
    EXPECT_EQ(j["keras_version"].get<std::string>()[0], d == "keras2" ? '2' : '3');
    EXPECT_EQ(j["runnable"], true);
    EXPECT_EQ(j["unsupported"], "");
    EXPECT_EQ(j["input_size"], 3);
    EXPECT_EQ(j["takes_token_ids"], false);
    EXPECT_EQ(j["output_size"], 2);
    EXPECT_EQ(j["returns_sequences"], true);
    EXPECT_EQ(j["num_outputs"], 1);
    bool saw_bi = false;
    for (const auto& l : j["layers"])
      if (l["name"] == "bi") {
        saw_bi = true;
        EXPECT_EQ(l["class"], "Bidirectional");
        EXPECT_EQ(l["input_size"], 3);
        EXPECT_EQ(l["output_size"], 6);
        EXPECT_EQ(l["recurrent"], true);
      }
    EXPECT_TRUE(saw_bi) << r.out;
  }
}

// ------------------------------------------------------------------------------------- devices

// Usable CUDA devices, as `recur devices` reports them.
int cuda_devices(const Result& devices) {
  std::smatch m;
  if (!std::regex_search(devices.out, m, std::regex("cuda devices: ([0-9]+)\n"))) return -1;
  return std::stoi(m[1]);
}

// A message that says which part of the GPU stack is missing.
bool names_what_is_missing(const std::string& message) {
  for (const char* part : {"plugin", "driver", "GPU", "cuDNN"})
    if (message.find(part) != std::string::npos) return true;
  return false;
}

TEST_F(Cli, Devices) {
  const Result r = run("devices");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.rfind("cpu: available\n", 0), 0u) << r.out;
  const int n = cuda_devices(r);
  ASSERT_GE(n, 0) << r.out;
  if (n == 0) {
    EXPECT_NE(r.out.find("cuda: unavailable: "), std::string::npos) << r.out;
    EXPECT_TRUE(names_what_is_missing(r.out)) << r.out;
  } else {
    for (int i = 0; i < n; ++i)
      EXPECT_NE(r.out.find("cuda:" + std::to_string(i) + ": available\n"), std::string::npos) << r.out;
  }
}

TEST_F(Cli, RunOnTheCpuDevice) {
  const std::string base = "run " + m("keras3", "bigru.keras") + " --input " + m("keras3", "bigru_x.npy") + " --output ";
  const Result plain = run(base + tmp("plain.npz"));
  ASSERT_EQ(plain.rc, 0) << plain.err;
  EXPECT_NE(plain.out.find("device: cpu ("), std::string::npos) << plain.out;  // the default
  const Result cpu = run(base + tmp("cpu.npz") + " --device cpu");
  ASSERT_EQ(cpu.rc, 0) << cpu.err;
  EXPECT_NE(cpu.out.find("device: cpu ("), std::string::npos) << cpu.out;
  const NamedArrays want = recur_cli::read_npz(tmp("plain.npz")), got = recur_cli::read_npz(tmp("cpu.npz"));
  EXPECT_EQ(member(got, "output").data, member(want, "output").data);
  EXPECT_LE(max_abs(member(got, "output"), recur_cli::read_npy(m("keras3", "bigru_y.npy"))), 1e-5);
}

TEST_F(Cli, RunAutoMatchesTheCpu) {
  const bool gpu = cuda_devices(run("devices")) > 0;
  for (const std::string layer : {"", " --layer lstm"}) {
    SCOPED_TRACE(layer);
    const std::string model = layer.empty() ? "bigru.keras" : "tokens.keras";
    const std::string input = layer.empty() ? "bigru_x.npy" : "layer_lstm_x.npy";
    const std::string base = "run " + m("keras2", model) + layer + " --input " + m("keras2", input) + " --output ";
    ASSERT_EQ(run(base + tmp("cpu.npz")).rc, 0);
    const Result r = run(base + tmp("auto.npz") + " --device auto");
    ASSERT_EQ(r.rc, 0) << r.err;
    const NamedArrays cpu = recur_cli::read_npz(tmp("cpu.npz")), got = recur_cli::read_npz(tmp("auto.npz"));
    ASSERT_EQ(got.size(), cpu.size());
    if (gpu) {
      EXPECT_NE(r.out.find("device: cuda:0 via "), std::string::npos) << r.out;
      for (std::size_t i = 0; i < cpu.size(); ++i) EXPECT_LE(max_abs(got[i].second, cpu[i].second), 1e-5) << cpu[i].first;
    } else {
      EXPECT_NE(r.out.find("device: cpu ("), std::string::npos) << r.out;
      EXPECT_TRUE(names_what_is_missing(r.out)) << "auto on the CPU must say why: " << r.out;
      for (std::size_t i = 0; i < cpu.size(); ++i) EXPECT_EQ(got[i].second.data, cpu[i].second.data) << cpu[i].first;
    }
  }
  const Result v = run("verify " + m("keras3", "tokens.keras") + " --input " + m("keras3", "tokens_x.npy") +
                       " --expected " + m("keras3", "tokens_y.npy") + " --device auto");
  EXPECT_EQ(v.rc, 0) << v.out << v.err;
}

TEST_F(Cli, RunOnCuda) {
  const bool gpu = cuda_devices(run("devices")) > 0;
  const std::string model = "run " + m("keras3", "bigru.h5") + " --input " + m("keras3", "bigru_x.npy") + " --output " +
                            tmp("o.npz") + " --device cuda";
  const std::string layer = "verify " + m("keras3", "tokens.h5") + " --layer gru --input " +
                            m("keras3", "layer_gru_x.npy") + " --mask " + m("keras3", "layer_gru_mask.npy") +
                            " --initial-state " + m("keras3", "layer_gru_h0.npy") + " --expected " +
                            m("keras3", "layer_gru_y.npz") + " --device cuda";
  for (const std::string& args : {model, layer}) {
    SCOPED_TRACE(args);
    const Result r = run(args);
    if (gpu) {
      EXPECT_EQ(r.rc, 0) << r.out << r.err;
      EXPECT_NE(r.out.find("device: cuda:0 via "), std::string::npos) << r.out;
    } else {
      EXPECT_EQ(r.rc, 2) << r.out << r.err;
      EXPECT_EQ(r.err.rfind("recur: ", 0), 0u) << r.err;
      EXPECT_NE(r.err.find("cuda:0"), std::string::npos) << r.err;
      EXPECT_TRUE(names_what_is_missing(r.err)) << r.err;
    }
  }
  if (gpu) {
    EXPECT_LE(max_abs(member(recur_cli::read_npz(tmp("o.npz")), "output"), recur_cli::read_npy(m("keras3", "bigru_y.npy"))),
              1e-5);
  }
}

TEST_F(Cli, BogusDevice) {
  const std::vector<std::string> commands = {
      "run " + m("keras2", "bigru.keras") + " --input " + m("keras2", "bigru_x.npy") + " --output " + tmp("o.npz"),
      "run " + m("keras2", "tokens.keras") + " --layer gru --input " + m("keras2", "layer_gru_x.npy") + " --output " +
          tmp("o.npz"),
      "verify " + m("keras2", "bigru.keras") + " --input " + m("keras2", "bigru_x.npy") + " --expected " +
          m("keras2", "bigru_y.npy"),
      "info " + m("keras2", "bigru.keras")};
  for (const std::string& c : commands)
    for (const char* bad : {"bogus", "gpu", "cuda:x", "CUDA"}) {
      SCOPED_TRACE(c + " --device " + bad);
      const Result r = run(c + " --device " + bad);
      EXPECT_EQ(r.rc, 2) << r.out;
      EXPECT_EQ(r.err.rfind("recur: ", 0), 0u) << r.err;
      EXPECT_NE(r.err.find(std::string("got \"") + bad + "\""), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("\"cuda:N\""), std::string::npos) << r.err;  // the accepted forms
    }
  EXPECT_FALSE(std::ifstream(tmp("o.npz")).good()) << "a failed run must not write its output";
}

TEST_F(Cli, InfoDevice) {
  const Result r = run("info " + m("keras2", "tokens.h5"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("\ndevice:        cpu ("), std::string::npos) << r.out;
  const Result j = run("info --json --device auto " + m("keras3", "bigru.keras"));
  ASSERT_EQ(j.rc, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["device"]["requested"], "auto");
  const std::string backend = doc["device"]["backend"];
  EXPECT_EQ(backend == "cpu", cuda_devices(run("devices")) == 0) << j.out;
  EXPECT_NE(doc["device"]["reason"], "");
  for (const auto& l : doc["layers"]) {
    EXPECT_EQ(l["device"]["backend"], backend) << l;
    for (const char* key : {"requested", "path", "reason", "device_name"}) EXPECT_TRUE(l["device"].contains(key)) << l;
  }
}

// ------------------------------------------------------------------------------- CPU threads

// The kernel set `recur devices` reports, or "" when the line is missing.
std::string cpu_kernels(const Result& devices) {
  std::smatch m;
  if (!std::regex_search(devices.out, m, std::regex("\ncpu kernels: ([a-z0-9]+)\n"))) return "";
  return m[1];
}

TEST_F(Cli, DevicesPrintsTheCpuKernels) {
  const Result r = run("devices");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string k = cpu_kernels(r);
  EXPECT_TRUE(k == "avx512" || k == "avx2" || k == "baseline") << r.out;
  // RECUR_CPU_KERNELS asks for a set when the library loads; every CPU runs the baseline.
  ASSERT_EQ(setenv("RECUR_CPU_KERNELS", "baseline", 1), 0);
  const Result b = run("devices");
  const Result v = run("verify " + m("keras3", "bigru.keras") + " --input " + m("keras3", "bigru_x.npy") +
                       " --expected " + m("keras3", "bigru_y.npy") + " --threads 2");
  unsetenv("RECUR_CPU_KERNELS");
  ASSERT_EQ(b.rc, 0) << b.err;
  EXPECT_EQ(cpu_kernels(b), "baseline") << b.out;
  EXPECT_EQ(v.rc, 0) << "the baseline kernels must give Keras's numbers too: " << v.out << v.err;
}

TEST_F(Cli, InfoShowsTheCpuKernels) {
  const std::string k = cpu_kernels(run("devices"));
  const Result r = run("info " + m("keras2", "tokens.h5"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("\ncpu kernels:   " + k + "\n"), std::string::npos) << r.out;
  const Result j = run("info --json " + m("keras2", "tokens.h5"));
  ASSERT_EQ(j.rc, 0) << j.err;
  EXPECT_EQ(nlohmann::json::parse(j.out)["cpu_kernels"], k) << j.out;
}

TEST_F(Cli, ThreadsGiveTheSameOutput) {
  const std::vector<std::string> runs = {
      "run " + m("keras3", "bigru.keras") + " --input " + m("keras3", "bigru_x.npy"),
      "run " + m("keras2", "tokens.keras") + " --input " + m("keras2", "tokens_x.npy"),
      "run " + m("keras3", "tokens.h5") + " --layer gru --input " + m("keras3", "layer_gru_x.npy") + " --mask " +
          m("keras3", "layer_gru_mask.npy") + " --initial-state " + m("keras3", "layer_gru_h0.npy"),
      "run " + m("keras2", "tokens.keras") + " --layer lstm --input " + m("keras2", "layer_lstm_x.npy") + " --mask " +
          m("keras2", "layer_lstm_mask.npy"),
      "run " + m("keras2", "bigru.h5") + " --layer bi/forward --input " + m("keras2", "layer_biforward_x.npy")};
  for (const std::string& base : runs) {
    SCOPED_TRACE(base);
    const Result plain = run(base + " --output " + tmp("plain.npz"));
    ASSERT_EQ(plain.rc, 0) << plain.err;
    const NamedArrays want = recur_cli::read_npz(tmp("plain.npz"));
    for (const char* threads : {"1", "2", "0"}) {
      SCOPED_TRACE(std::string("--threads ") + threads);
      const Result r = run(base + " --threads " + threads + " --output " + tmp("t.npz"));
      ASSERT_EQ(r.rc, 0) << r.err;
      const NamedArrays got = recur_cli::read_npz(tmp("t.npz"));
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(got[i].first, want[i].first);
        EXPECT_EQ(got[i].second.shape, want[i].second.shape) << want[i].first;
        EXPECT_EQ(got[i].second.data, want[i].second.data) << want[i].first;  // bitwise, not within a tolerance
      }
    }
  }
  const Result v = run("verify " + m("keras2", "tokens.keras") + " --layer gru --input " +
                       m("keras2", "layer_gru_x.npy") + " --mask " + m("keras2", "layer_gru_mask.npy") +
                       " --initial-state " + m("keras2", "layer_gru_h0.npy") + " --expected " +
                       m("keras2", "layer_gru_y.npz") + " --threads 2");
  EXPECT_EQ(v.rc, 0) << v.out << v.err;
}

TEST_F(Cli, BadThreadCount) {
  const std::vector<std::string> commands = {
      "run " + m("keras2", "bigru.keras") + " --input " + m("keras2", "bigru_x.npy") + " --output " + tmp("o.npz"),
      "run " + m("keras2", "tokens.keras") + " --layer gru --input " + m("keras2", "layer_gru_x.npy") + " --output " +
          tmp("o.npz"),
      "verify " + m("keras2", "bigru.keras") + " --input " + m("keras2", "bigru_x.npy") + " --expected " +
          m("keras2", "bigru_y.npy")};
  for (const std::string& c : commands)
    for (const char* bad : {"-1", "1025"}) {
      SCOPED_TRACE(c + " --threads " + bad);
      const Result r = run(c + " --threads " + bad);
      EXPECT_EQ(r.rc, 2) << r.out << r.err;
      EXPECT_EQ(r.err.rfind("recur: ", 0), 0u) << r.err;
      EXPECT_NE(r.err.find("num_threads"), std::string::npos) << r.err;
      EXPECT_NE(r.err.find(bad), std::string::npos) << r.err;
    }
  EXPECT_FALSE(std::ifstream(tmp("o.npz")).good()) << "a failed run must not write its output";
  const Result r = run(commands[0] + " --threads two");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.err.find("--threads"), std::string::npos) << r.err;
}

// ------------------------------------------------------------------------------------ failures

TEST_F(Cli, MissingModelFile) {
  const Result r = run("info " + tmp("nope.keras"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err.rfind("recur: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(tmp("nope.keras")), std::string::npos) << r.err;
  const Result v = run("verify " + tmp("nope.h5") + " --input " + m("keras2", "bigru_x.npy") + " --expected " +
                       m("keras2", "bigru_y.npy"));
  EXPECT_EQ(v.rc, 2);
  EXPECT_NE(v.err.find(tmp("nope.h5")), std::string::npos) << v.err;
}

TEST_F(Cli, NotAModelFile) {
  const Result r = run("info " + m("keras2", "bigru_x.npy"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("recur: "), std::string::npos);
  EXPECT_NE(r.err.find("bigru_x.npy"), std::string::npos) << r.err;
}

TEST_F(Cli, VerifyMismatchExits1) {
  Array y = recur_cli::read_npy(m("keras2", "bigru_y.npy"));
  y.data[5] += 0.01f;
  recur_cli::write_npy(tmp("wrong.npy"), y);
  const std::string args = "verify " + m("keras2", "bigru.keras") + " --input " + m("keras2", "bigru_x.npy") +
                           " --expected " + tmp("wrong.npy");
  const Result r = run(args);
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("MISMATCH"), std::string::npos);
  EXPECT_NEAR(reported_max_abs(r.out), 0.01, 1e-4);
  // a looser tolerance accepts it
  EXPECT_EQ(run(args + " --atol 0.02").rc, 0);
}

TEST_F(Cli, VerifyWrongShapeExits1) {
  const Result r = run("verify " + m("keras2", "bigru.keras") + " --input " + m("keras2", "bigru_x.npy") + " --expected " +
                       m("keras2", "tokens_y.npy"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("shape (3, 6, 2) differs from the expected (3, 2)"), std::string::npos) << r.err;
}

TEST_F(Cli, VerifyUnknownExpectedMember) {
  const Result r = run("verify " + m("keras2", "bigru.keras") + " --input " + m("keras2", "bigru_x.npy") + " --expected " +
                       m("keras2", "layer_gru_y.npz"));
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("'state_h' is not an output of this run"), std::string::npos) << r.err;
}

TEST_F(Cli, BadInputFiles) {
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream f(tmp(name), std::ios::binary);
    f << bytes;
  };
  write("garbage.npy", "hello");
  std::string complex_npy = slurp(m("keras2", "tokens_x.npy"));
  complex_npy.replace(complex_npy.find("<i4"), 3, "<c8");  // 3*6*4 bytes = 9 complex64 values, shape says 18
  write("complex.npy", complex_npy);
  std::string fortran = slurp(m("keras2", "bigru_x.npy"));
  fortran.replace(fortran.find("False"), 5, "True ");
  write("fortran.npy", fortran);
  std::string big = slurp(m("keras2", "bigru_x.npy"));
  big.replace(big.find("<f8"), 3, ">f8");
  write("big.npy", big);
  const std::string trunc = slurp(m("keras2", "bigru_x.npy"));
  write("trunc.npy", trunc.substr(0, trunc.size() - 8));
  const struct {
    const char* file;
    const char* message;
  } cases[] = {{"garbage.npy", "bad magic"},
               {"complex.npy", "complex"},
               {"fortran.npy", "fortran_order is True"},
               {"big.npy", "big-endian"},
               {"trunc.npy", "truncated data"},
               {"absent.npy", "cannot open"}};
  for (const auto& c : cases) {
    const Result r = run("run " + m("keras2", "bigru.keras") + " --input " + tmp(c.file) + " --output " + tmp("o.npz"));
    EXPECT_EQ(r.rc, 2) << c.file;
    EXPECT_NE(r.err.find("recur: " + tmp(c.file) + ": "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
  // bad expected file and bad mask file: named too
  const Result e = run("verify " + m("keras2", "bigru.keras") + " --input " + m("keras2", "bigru_x.npy") + " --expected " +
                       tmp("fortran.npy"));
  EXPECT_EQ(e.rc, 2);
  EXPECT_NE(e.err.find(tmp("fortran.npy")), std::string::npos) << e.err;
  const Result mk = run("run " + m("keras2", "binone.keras") + " --input " + m("keras2", "binone_x.npy") + " --mask " +
                        tmp("garbage.npy") + " --output " + tmp("o.npz"));
  EXPECT_EQ(mk.rc, 2);
  EXPECT_NE(mk.err.find(tmp("garbage.npy") + ": not a .npy file"), std::string::npos) << mk.err;
}

TEST_F(Cli, InputShapeMismatch) {
  const Result r = run("run " + m("keras2", "bigru.keras") + " --input " + m("keras2", "tokens_x.npy") + " --output " +
                       tmp("o.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("shape (3, 6) does not fit the model: expected (B, T, 3)"), std::string::npos) << r.err;
  const Result t = run("run " + m("keras2", "tokens.keras") + " --input " + m("keras2", "bigru_x.npy") + " --output " +
                       tmp("o.npz"));
  EXPECT_EQ(t.rc, 2);
  EXPECT_NE(t.err.find("expected token ids (B, T)"), std::string::npos) << t.err;
  const Result mk = run("run " + m("keras2", "binone.keras") + " --input " + m("keras2", "binone_x.npy") + " --mask " +
                        m("keras2", "tokens_y.npy") + " --output " + tmp("o.npz"));
  EXPECT_EQ(mk.rc, 2);
  EXPECT_NE(mk.err.find("mask shape (3, 2) does not match the input; expected (3, 6)"), std::string::npos) << mk.err;
}

TEST_F(Cli, TokenIdOutOfRange) {
  Array ids = recur_cli::read_npy(m("keras2", "tokens_x.npy"));
  ids.data[3] = 20;  // Embedding(20, ...)
  recur_cli::write_npy(tmp("ids.npy"), ids);
  const Result r = run("run " + m("keras2", "tokens.keras") + " --input " + tmp("ids.npy") + " --output " + tmp("o.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err.rfind("recur: ", 0), 0u);
  EXPECT_NE(r.err.find("token id 20"), std::string::npos) << r.err;
}

TEST_F(Cli, LayerErrors) {
  const std::string base = "run " + m("keras2", "tokens.keras") + " --input " + m("keras2", "layer_gru_x.npy") +
                           " --output " + tmp("o.npz");
  Result r = run(base + " --layer nosuch");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("recur: "), std::string::npos);
  EXPECT_NE(r.err.find("nosuch"), std::string::npos) << r.err;
  r = run(base + " --layer dense");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("not a recurrent layer"), std::string::npos) << r.err;
  r = run("run " + m("keras2", "bigru.keras") + " --layer bi --input " + m("keras2", "layer_biforward_x.npy") +
          " --output " + tmp("o.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("bi/forward"), std::string::npos) << r.err;
  r = run(base + " --layer lstm");  // lstm takes 5 features, this input has 4
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("does not fit layer 'lstm': expected (B, T, 5)"), std::string::npos) << r.err;
  r = run(base + " --layer gru --initial-state " + m("keras2", "layer_gru_h0.npy") + " " + m("keras2", "layer_gru_h0.npy"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("has 1 state tensor(s)"), std::string::npos) << r.err;
  r = run(base + " --layer gru --initial-state " + m("keras2", "tokens_y.npy"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("initial state shape (3, 2); expected (3, 5)"), std::string::npos) << r.err;
  r = run("run " + m("keras2", "bigru.keras") + " --input " + m("keras2", "bigru_x.npy") + " --initial-state " +
          m("keras2", "layer_gru_h0.npy") + " --output " + tmp("o.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--initial-state needs --layer"), std::string::npos) << r.err;
}

TEST_F(Cli, UsageErrors) {
  EXPECT_EQ(run("").rc, 2);
  EXPECT_EQ(run("frobnicate").rc, 2);
  Result r = run("run " + m("keras2", "bigru.keras") + " --input " + m("keras2", "bigru_x.npy"));  // no --output
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--output"), std::string::npos) << r.err;
  r = run("verify " + m("keras2", "bigru.keras") + " --input " + m("keras2", "bigru_x.npy") + " --expected " +
          m("keras2", "bigru_y.npy") + " --atol -1");
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(run("--help").rc, 0);
  r = run("--version");
  EXPECT_EQ(r.rc, 0);
  EXPECT_EQ(r.out.rfind("recur ", 0), 0u);
}

// ------------------------------------------------------------------------------------- limits

const std::string kDefaultLimits =
    "limits:        units 65536, batch 1048576, state_bytes 256M, weight_bytes 1G, file_bytes 4G, tensor_bytes 1G\n";

TEST_F(Cli, InfoPrintsTheLimits) {
  const Result r = run("info " + m("keras2", "tokens.h5"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("\n" + kDefaultLimits), std::string::npos) << r.out;
  // Before or after the subcommand; K, M and G are powers of 1024; the last one given wins.
  const Result raised = run("--limit units=128K info " + m("keras2", "tokens.h5") +
                            " --limit weight_bytes=1K --limit weight_bytes=2G --limit state_bytes=1000");
  ASSERT_EQ(raised.rc, 0) << raised.err;
  EXPECT_NE(raised.out.find("limits:        units 131072, batch 1048576, state_bytes 1000, weight_bytes 2G, "
                            "file_bytes 4G, tensor_bytes 1G\n"),
            std::string::npos)
      << raised.out;
  EXPECT_NE(raised.out.find("layers:        5"), std::string::npos) << raised.out;
  const Result j = run("info --json " + m("keras3", "bigru.keras") + " --limit file_bytes=8G --limit batch=1m");
  ASSERT_EQ(j.rc, 0) << j.err;
  const auto limits = nlohmann::json::parse(j.out)["limits"];
  EXPECT_EQ(limits["units"], 65536u) << j.out;
  EXPECT_EQ(limits["batch"], 1048576u) << j.out;
  EXPECT_EQ(limits["file_bytes"], 8ull << 30) << j.out;
  EXPECT_EQ(limits["tensor_bytes"], 1ull << 30) << j.out;
}

TEST_F(Cli, LimitRefusesAModel) {
  for (const std::string& model : {m("keras2", "tokens.h5"), m("keras3", "tokens.keras")}) {
    SCOPED_TRACE(model);
    const Result r = run("info " + model + " --limit weight_bytes=1K");
    EXPECT_EQ(r.rc, 2) << r.out << r.err;
    EXPECT_EQ(r.err.rfind("recur: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find("weight_bytes limit of 1024 bytes"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("; here: --limit weight_bytes=VALUE"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
  // run and verify too; a refused run writes nothing.
  Result r = run("run " + m("keras2", "bigru.keras") + " --input " + m("keras2", "bigru_x.npy") + " --output " +
                 tmp("o.npz") + " --limit units=2");
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("units limit of 2"), std::string::npos) << r.err;
  EXPECT_FALSE(std::ifstream(tmp("o.npz")).good());
  r = run("--limit file_bytes=1K verify " + m("keras3", "bigru.keras") + " --input " + m("keras3", "bigru_x.npy") +
          " --expected " + m("keras3", "bigru_y.npy"));
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("file_bytes limit"), std::string::npos) << r.err;
}

TEST_F(Cli, RaisedLimitsStillWork) {
  const std::string v = "verify " + m("keras3", "bigru.keras") + " --input " + m("keras3", "bigru_x.npy") +
                        " --expected " + m("keras3", "bigru_y.npy");
  for (const std::string limits : {" --limit weight_bytes=4G --limit units=1M --limit tensor_bytes=16G",
                                   " --limit weight_bytes=64K --limit file_bytes=1M", " --limit units=0"}) {
    SCOPED_TRACE(limits);
    const Result r = run(v + limits);
    EXPECT_EQ(r.rc, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("OK"), std::string::npos) << r.out;
  }
  const Result r = run("run " + m("keras2", "tokens.keras") + " --layer gru --input " + m("keras2", "layer_gru_x.npy") +
                       " --output " + tmp("o.npz") + " --limit batch=64 --limit state_bytes=1M");
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
}

TEST_F(Cli, BadLimitsAreUsageErrors) {
  const std::string info = "info " + m("keras2", "tokens.h5");
  for (const std::string bad : {"units=bad", "units=", "units=1.5K", "units=-1", "units=2T", "units=K",
                                "units=99999999999999999999", "units=17179869184G"}) {
    SCOPED_TRACE(bad);
    const Result r = run(info + " --limit " + bad);
    EXPECT_EQ(r.rc, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("--limit"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(bad), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
  for (const std::string bad : {"bogus=1", "units", "=5", "Units=5"}) {
    SCOPED_TRACE(bad);
    const Result r = run(info + " --limit " + bad);
    EXPECT_EQ(r.rc, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("--limit"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("units, batch, state_bytes, weight_bytes, file_bytes, tensor_bytes"), std::string::npos)
        << r.err;
  }
  const Result r = run("--limit units=bad devices");
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--limit"), std::string::npos) << r.err;
}

TEST_F(Cli, UnwritableOutput) {
  const Result r = run("run " + m("keras2", "bigru.keras") + " --input " + m("keras2", "bigru_x.npy") + " --output " +
                       tmp("no/such/dir/o.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find(tmp("no/such/dir/o.npz")), std::string::npos) << r.err;
}

// ----------------------------------------------------------------------- models as graphs (0.4)

const std::string kGraphs = RECUR_GRAPH_DIR;

// A case of tests/keras/graphs/<dialect>.json: inputs and Keras's outputs per call.
struct GraphCall {
  bool reset = false;
  std::vector<Array> inputs, outputs;
};
struct GraphCase {
  std::vector<std::string> input_names, output_names;
  std::vector<GraphCall> calls;
};

Array tensor(const nlohmann::json& t) {
  Array a;
  a.dtype = "<f4";
  for (const auto& d : t["shape"]) a.shape.push_back(d.get<std::int64_t>());
  for (const auto& v : t["data"]) a.data.push_back(v.get<float>());
  return a;
}

GraphCase graph_case(const std::string& dialect, const std::string& name) {
  std::ifstream f(kGraphs + "/" + dialect + ".json");
  const auto doc = nlohmann::json::parse(f);
  for (const auto& c : doc["cases"]) {
    if (c["name"] != name) continue;
    GraphCase g;
    for (const auto& n : c["input_names"]) g.input_names.push_back(n);
    for (const auto& n : c["output_names"]) g.output_names.push_back(n);
    for (const auto& call : c["calls"]) {
      GraphCall k;
      k.reset = call["reset_states_before"].get<bool>();
      for (const auto& t : call["inputs"]) k.inputs.push_back(tensor(t));
      for (const auto& t : call["outputs"]) k.outputs.push_back(tensor(t));
      g.calls.push_back(std::move(k));
    }
    return g;
  }
  throw std::runtime_error(dialect + ".json has no case " + name);
}

std::string graph(const std::string& dialect, const std::string& name, const std::string& ext) {
  return kGraphs + "/" + dialect + "/" + name + "." + ext;
}

class Graph : public Cli {
 protected:
  // Writes call k's inputs as .npy files; returns " -i a.npy -i b.npy".
  std::string inputs(const GraphCase& g, std::size_t k, const std::string& tag = "in") {
    std::string args;
    for (std::size_t i = 0; i < g.calls[k].inputs.size(); ++i) {
      const std::string p = tmp(tag + std::to_string(k) + "_" + std::to_string(i) + ".npy");
      recur_cli::write_npy(p, g.calls[k].inputs[i]);
      args += " -i " + p;
    }
    return args;
  }
  // Writes call k's Keras outputs as an .npz named like run's outputs (output, output_1, ...; Keras
  // 3's output_names can repeat a name, e.g. every output of one layer).
  std::string expected(const GraphCase& g, std::size_t k) {
    NamedArrays y;
    for (std::size_t i = 0; i < g.calls[k].outputs.size(); ++i)
      y.emplace_back(i == 0 ? "output" : "output_" + std::to_string(i), g.calls[k].outputs[i]);
    const std::string p = tmp("want" + std::to_string(k) + ".npz");
    recur_cli::write_npz(p, y);
    return p;
  }
};

double max_rel(const Array& want, const Array& got) {
  EXPECT_EQ(want.shape, got.shape);
  double d = 0;
  for (std::size_t i = 0; i < std::min(want.data.size(), got.data.size()); ++i)
    d = std::max(d, std::fabs(double(want.data[i]) - got.data[i]) / (1 + std::fabs(double(want.data[i]))));
  return d;
}

TEST_F(Graph, RunMultiInputMultiOutput) {
  const GraphCase g = graph_case("keras3", "multi_io");
  const std::string model = graph("keras3", "multi_io", "keras");
  const Result r = run("run " + model + inputs(g, 0) + " --output " + tmp("o.npz") + " --output-dir " + tmp("dir"));
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("output: (3, 3)  probs\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("output_1: (3, 2)  value\n"), std::string::npos) << r.out;
  const NamedArrays out = recur_cli::read_npz(tmp("o.npz"));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].first, "output");
  EXPECT_EQ(out[1].first, "output_1");
  for (std::size_t i = 0; i < 2; ++i) EXPECT_LE(max_rel(g.calls[0].outputs[i], out[i].second), 1e-5) << i;
  // --output-dir: one .npy per output, named by the model's output names.
  EXPECT_EQ(recur_cli::read_npy(tmp("dir/probs.npy")).data, out[0].second.data);
  EXPECT_EQ(recur_cli::read_npy(tmp("dir/value.npy")).data, out[1].second.data);
  // Inputs by name, in any order.
  recur_cli::write_npy(tmp("seq.npy"), g.calls[0].inputs[0]);
  recur_cli::write_npy(tmp("static.npy"), g.calls[0].inputs[1]);
  const Result n = run("run " + model + " -i static=" + tmp("static.npy") + " -i seq=" + tmp("seq.npy") + " -o " +
                       tmp("n.npz"));
  ASSERT_EQ(n.rc, 0) << n.err;
  const NamedArrays named = recur_cli::read_npz(tmp("n.npz"));
  EXPECT_EQ(named[0].second.data, out[0].second.data);
  EXPECT_EQ(named[1].second.data, out[1].second.data);
  // One named, one in order.
  ASSERT_EQ(run("run " + model + " -i static=" + tmp("static.npy") + " -i " + tmp("seq.npy") + " -o " + tmp("m.npz")).rc,
            0);
  EXPECT_EQ(recur_cli::read_npz(tmp("m.npz"))[1].second.data, out[1].second.data);
  // An .npy output holds one array: not this run's two.
  const Result npy = run("run " + model + inputs(g, 0) + " --output " + tmp("o.npy"));
  EXPECT_EQ(npy.rc, 2);
  EXPECT_NE(npy.err.find("this run has 2"), std::string::npos) << npy.err;
}

TEST_F(Graph, RunOneOutputToNpy) {
  const Result r = run("run " + m("keras2", "tokens.keras") + " --input " + m("keras2", "tokens_x.npy") + " --output " +
                       tmp("y.npy"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_LE(max_abs(recur_cli::read_npy(tmp("y.npy")), recur_cli::read_npy(m("keras2", "tokens_y.npy"))), 1e-5);
}

class GraphVerify : public Graph,
                    public ::testing::WithParamInterface<std::tuple<std::string, std::string, std::string>> {};

// Every call of a case through `verify`, against Keras's predictions; stateful models carry their
// states from call to call through --states-out / --states-in.
TEST_P(GraphVerify, MatchesKeras) {
  const auto& [dialect, name, ext] = GetParam();
  const GraphCase g = graph_case(dialect, name);
  const std::string model = graph(dialect, name, ext);
  const std::string backend = dialect == "keras3_jax" ? " --keras-backend jax" : "";
  bool stateful = false;
  for (std::size_t k = 0; k < g.calls.size(); ++k) {
    SCOPED_TRACE("call " + std::to_string(k));
    std::string states;
    if (k > 0 && !g.calls[k].reset) states = " --states-in " + tmp("states" + std::to_string(k - 1) + ".npz");
    const Result r = run("verify " + model + inputs(g, k) + " --expected " + expected(g, k) + backend + states);
    EXPECT_EQ(r.rc, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("\nOK\n"), std::string::npos) << r.out;
    std::printf("[ measured ] %s/%s.%s call %zu: max abs error vs Keras %.3e\n", dialect.c_str(), name.c_str(),
                ext.c_str(), k, reported_max_abs(r.out));
    if (g.calls.size() > 1) {  // a stateful model: the states this call leaves, for the next
      stateful = true;
      const Result s = run("run " + model + inputs(g, k, "s") + backend + states + " -o " + tmp("ignored.npz") +
                           " --states-out " + tmp("states" + std::to_string(k) + ".npz"));
      ASSERT_EQ(s.rc, 0) << s.err;
    }
  }
  if (stateful) {
    EXPECT_FALSE(recur_cli::read_npz(tmp("states0.npz")).empty());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Graphs, GraphVerify,
    ::testing::Combine(::testing::Values("keras2", "keras3", "keras3_jax"),
                       ::testing::Values("multi_io", "return_state_outputs", "seq2seq_initial_state", "masking_sequential",
                                         "embedding_masked_full_row", "bidirectional_return_state",
                                         "stateful_sequential_gru", "stateful_functional_lstm_gru"),
                       ::testing::Values("keras", "h5")),
    [](const auto& info) {
      return std::get<0>(info.param) + "_" + std::get<1>(info.param) + "_" + std::get<2>(info.param);
    });

TEST_F(Graph, VerifyOneExpectedPerOutput) {
  // Keras 2's output names are unique, and recur's (Keras 3 repeats a layer's name for each of its outputs).
  const GraphCase g = graph_case("keras2", "return_state_outputs");
  const std::string model = graph("keras2", "return_state_outputs", "keras");
  std::string per_output, named;
  for (std::size_t i = 0; i < g.output_names.size(); ++i) {
    const std::string p = tmp("y" + std::to_string(i) + ".npy");
    recur_cli::write_npy(p, g.calls[0].outputs[i]);
    per_output += " --expected " + p;
    named = " -e " + g.output_names[i] + "=" + p + named;  // by name, in reverse order
  }
  const Result r = run("verify " + model + inputs(g, 0) + per_output);
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("elements: "), std::string::npos);
  const Result n = run("verify " + model + inputs(g, 0) + named);
  EXPECT_EQ(n.rc, 0) << n.out << n.err;
  // The LSTM's state_h (output 3) expected as its state_c (output 4): a mismatch.
  const Result w = run("verify " + model + inputs(g, 0) + " -e output_4=" + tmp("y3.npy"));
  EXPECT_EQ(w.rc, 1) << w.out << w.err;
  EXPECT_NE(w.out.find("MISMATCH"), std::string::npos) << w.out;
  // More .npy files than outputs.
  const Result x = run("verify " + model + inputs(g, 0) + per_output + " -e " + tmp("y0.npy"));
  EXPECT_EQ(x.rc, 2);
  EXPECT_NE(x.err.find("for a run with 5 output(s)"), std::string::npos) << x.err;
  // A member named after no output.
  NamedArrays bad;
  bad.emplace_back("nosuch", g.calls[0].outputs[0]);
  recur_cli::write_npz(tmp("bad.npz"), bad);
  const Result b = run("verify " + model + inputs(g, 0) + " -e " + tmp("bad.npz"));
  EXPECT_EQ(b.rc, 1);
  EXPECT_NE(b.err.find("'nosuch' is not an output of this run (outputs: output (gru), output_1 (gru_1)"),
            std::string::npos)
      << b.err;
}

TEST_F(Graph, InputErrors) {
  const GraphCase g = graph_case("keras3", "multi_io");
  const std::string model = graph("keras3", "multi_io", "keras");
  recur_cli::write_npy(tmp("seq.npy"), g.calls[0].inputs[0]);
  recur_cli::write_npy(tmp("static.npy"), g.calls[0].inputs[1]);
  Result r = run("run " + model + " -i " + tmp("seq.npy") + " -o " + tmp("o.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("the model has 2 input(s) (seq, static); got 1 --input file(s)"), std::string::npos) << r.err;
  r = run("run " + model + " -i " + tmp("static.npy") + " -i " + tmp("seq.npy") + " -o " + tmp("o.npz"));  // swapped
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("shape (3, 5) does not fit input 'seq' of the model: expected (B, T, 4)"), std::string::npos)
      << r.err;
  r = run("run " + model + " -i seq=" + tmp("seq.npy") + " -i seq=" + tmp("seq.npy") + " -o " + tmp("o.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("'seq' is given twice"), std::string::npos) << r.err;
  Array two = g.calls[0].inputs[1];
  two.shape[0] = 1;
  two.data.resize(5);
  recur_cli::write_npy(tmp("static1.npy"), two);
  r = run("run " + model + " -i " + tmp("seq.npy") + " -i " + tmp("static1.npy") + " -o " + tmp("o.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("batch 1 differs from input 'seq' (3)"), std::string::npos) << r.err;
  // Masks go to inputs with a timesteps axis only.
  Array mask;
  mask.shape = {3, 7};
  mask.data.assign(21, 1.0f);
  recur_cli::write_npy(tmp("mask.npy"), mask);
  r = run("run " + model + " -i " + tmp("seq.npy") + " -i " + tmp("static.npy") + " -m static=" + tmp("mask.npy") +
          " -o " + tmp("o.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("input 'static' has no timesteps axis to mask"), std::string::npos) << r.err;
  r = run("run " + model + " -i " + tmp("seq.npy") + " -i " + tmp("static.npy") + " -m " + tmp("mask.npy") + " -m " +
          tmp("mask.npy") + " -o " + tmp("o.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("too many --mask files: the model takes 1 (seq)"), std::string::npos) << r.err;
  EXPECT_FALSE(std::ifstream(tmp("o.npz")).good()) << "a failed run must not write its output";
  // An all-valid mask of the sequence input changes nothing; a hole does.
  ASSERT_EQ(run("run " + model + " -i " + tmp("seq.npy") + " -i " + tmp("static.npy") + " -o " + tmp("plain.npz")).rc, 0);
  ASSERT_EQ(run("run " + model + " -i " + tmp("seq.npy") + " -i " + tmp("static.npy") + " -m seq=" + tmp("mask.npy") +
                " -o " + tmp("ones.npz"))
                .rc,
            0);
  mask.data[3] = 0;
  recur_cli::write_npy(tmp("hole.npy"), mask);
  ASSERT_EQ(run("run " + model + " -i " + tmp("seq.npy") + " -i " + tmp("static.npy") + " -m " + tmp("hole.npy") +
                " -o " + tmp("hole.npz"))
                .rc,
            0);
  const NamedArrays plain = recur_cli::read_npz(tmp("plain.npz"));
  EXPECT_EQ(recur_cli::read_npz(tmp("ones.npz"))[0].second.data, plain[0].second.data);
  EXPECT_NE(recur_cli::read_npz(tmp("hole.npz"))[0].second.data, plain[0].second.data);
  // A mask of another length: the library's message.
  mask.shape = {3, 6};
  mask.data.resize(18);
  recur_cli::write_npy(tmp("short.npy"), mask);
  r = run("run " + model + " -i " + tmp("seq.npy") + " -i " + tmp("static.npy") + " -m " + tmp("short.npy") + " -o " +
          tmp("o.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("mask shape (3, 6) does not match the input; expected (3, 7)"), std::string::npos) << r.err;
}

TEST_F(Graph, InfoListsInputsOutputsStatesAndStreaming) {
  Result r = run("info " + graph("keras3", "multi_io", "keras"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("inputs:        2\n  seq     (B, 7, 4)\n  static  (B, 5)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("outputs:       2\n  probs   (B, 3)\n  value   (B, 2)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stateful:      no\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("streams:       yes\n"), std::string::npos) << r.out;
  r = run("info " + graph("keras3", "stateful_functional_lstm_gru", "h5"));
  ASSERT_EQ(r.rc, 0) << r.err;
  // The stateful layers as the C ABI lists them, each with the shape of its states; the input
  // and output report the batch the stateful layers fix.
  EXPECT_NE(r.out.find("stateful:      yes (lstm, gru)\n  lstm  states (2, 3, 4)\n  gru   states (1, 3, 3)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  x      (3, T, 3)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  dense  (3, T, 2)\n"), std::string::npos) << r.out;
  r = run("info " + m("keras3", "bigru.keras"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("streams:       no: layer 'bi' (Bidirectional)"), std::string::npos) << r.out;
  r = run("info " + graph("keras3", "embedding_masked_full_row", "keras"));
  EXPECT_NE(r.out.find("  ids    (B, T)  token ids\n"), std::string::npos) << r.out;

  const Result j = run("info --json " + graph("keras3", "stateful_functional_lstm_gru", "keras"));
  ASSERT_EQ(j.rc, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  ASSERT_EQ(doc["inputs"].size(), 1u);
  EXPECT_EQ(doc["inputs"][0]["name"], "x");
  EXPECT_EQ(doc["inputs"][0]["dims"], nlohmann::json::array({3, -1, 3}));  // the fixed batch
  EXPECT_EQ(doc["inputs"][0]["token_ids"], false);
  EXPECT_EQ(doc["inputs"][0]["sequence"], true);
  EXPECT_EQ(doc["outputs"][0]["name"], "dense");
  EXPECT_EQ(doc["stateful"], true);
  ASSERT_EQ(doc["stateful_layers"].size(), 2u);
  EXPECT_EQ(doc["stateful_layers"][0]["name"], "lstm");
  EXPECT_EQ(doc["stateful_layers"][0]["num_states"], 2);
  EXPECT_EQ(doc["stateful_layers"][0]["batch_size"], 3);
  EXPECT_EQ(doc["stateful_layers"][0]["units"], 4);
  EXPECT_EQ(doc["stateful_layers"][1]["name"], "gru");
  EXPECT_EQ(doc["stateful_layers"][1]["num_states"], 1);
  EXPECT_EQ(doc["stateful_layers"][1]["batch_size"], 3);
  EXPECT_EQ(doc["stateful_layers"][1]["units"], 3);
  const auto plain = nlohmann::json::parse(run("info --json " + graph("keras3", "multi_io", "keras")).out);
  EXPECT_EQ(plain["stateful"], false);
  EXPECT_TRUE(plain["stateful_layers"].empty());
  EXPECT_EQ(plain["inputs"][0]["sequence"], true);   // (B, 7, 4)
  EXPECT_EQ(plain["inputs"][1]["sequence"], false);  // (B, 5) features
  EXPECT_EQ(plain["inputs"][0]["dims"][0], -1);
  EXPECT_EQ(doc["streams"], true);
  EXPECT_EQ(doc["not_streamable"], "");
  const auto bi = nlohmann::json::parse(run("info --json " + m("keras2", "bigru.h5")).out);
  EXPECT_EQ(bi["streams"], false);
  EXPECT_NE(bi["not_streamable"].get<std::string>().find("'bi'"), std::string::npos) << bi;
}

TEST_F(Graph, StreamGivesWhatRunGives) {
  for (const std::string name : {"multi_io", "masking_sequential", "embedding_masked_full_row", "branches_concat",
                                 "stateful_sequential_gru"}) {
    const GraphCase g = graph_case("keras3", name);
    const std::string model = graph("keras3", name, "keras");
    const std::string in = inputs(g, 0);
    ASSERT_EQ(run("run " + model + in + " -o " + tmp("run.npz")).rc, 0) << name;
    const NamedArrays whole = recur_cli::read_npz(tmp("run.npz"));
    for (const char* chunk : {"1", "2", "3", "100"}) {
      SCOPED_TRACE(name + " --chunk " + chunk);
      const Result r = run("stream " + model + in + " --chunk " + chunk + " -o " + tmp("s.npz") + " --output-dir " +
                           tmp("sdir"));
      ASSERT_EQ(r.rc, 0) << r.out << r.err;
      EXPECT_NE(r.out.find("stream: "), std::string::npos) << r.out;
      const NamedArrays got = recur_cli::read_npz(tmp("s.npz"));
      ASSERT_EQ(got.size(), whole.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].first, whole[i].first);
        EXPECT_LE(max_abs(got[i].second, whole[i].second), 1e-6) << got[i].first;
        EXPECT_LE(max_rel(g.calls[0].outputs[i], got[i].second), 1e-5) << "vs Keras: " << got[i].first;
        EXPECT_EQ(recur_cli::read_npy(tmp("sdir/" + g.output_names[i] + ".npy")).data, got[i].second.data);
      }
    }
  }
  // The default chunk is one timestep; masks are stepped with their inputs.
  const GraphCase g = graph_case("keras3", "multi_io");
  Array mask;
  mask.shape = {3, 7};
  mask.data.assign(21, 1.0f);
  mask.data[9] = 0;
  recur_cli::write_npy(tmp("mask.npy"), mask);
  const std::string model = graph("keras3", "multi_io", "keras");
  ASSERT_EQ(run("run " + model + inputs(g, 0) + " -m " + tmp("mask.npy") + " -o " + tmp("r.npz")).rc, 0);
  const Result s = run("stream " + model + inputs(g, 0) + " -m " + tmp("mask.npy") + " -o " + tmp("s.npz"));
  ASSERT_EQ(s.rc, 0) << s.err;
  EXPECT_NE(s.out.find("7 timesteps in 7 step(s)"), std::string::npos) << s.out;
  const NamedArrays r = recur_cli::read_npz(tmp("r.npz")), st = recur_cli::read_npz(tmp("s.npz"));
  for (std::size_t i = 0; i < r.size(); ++i) EXPECT_LE(max_abs(r[i].second, st[i].second), 1e-6);
}

// Token ids of a fixed length (Input(shape=(6,), dtype=int) -> Embedding) are a sequence: they take
// a (B, T) mask and stream T steps like any sequence input.
TEST_F(Graph, FixedLengthTokenIdsAreSequences) {
  const std::string model = m("keras3", "tokens.keras"), x = m("keras3", "tokens_x.npy");
  ASSERT_EQ(run("run " + model + " -i " + x + " -o " + tmp("plain.npz")).rc, 0);
  Array ones;
  ones.shape = {3, 6};
  ones.data.assign(18, 1.0f);
  recur_cli::write_npy(tmp("ones.npy"), ones);
  Result r = run("run " + model + " -i " + x + " -m " + tmp("ones.npy") + " -o " + tmp("ones.npz"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(recur_cli::read_npz(tmp("ones.npz"))[0].second.data, recur_cli::read_npz(tmp("plain.npz"))[0].second.data);
  r = run("stream " + model + " -i " + x + " --chunk 2 -o " + tmp("s.npz"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_LE(max_abs(recur_cli::read_npz(tmp("s.npz"))[0].second, recur_cli::read_npy(m("keras3", "tokens_y.npy"))), 1e-5);
}

TEST_F(Graph, StreamTakesLimits) {
  const GraphCase g = graph_case("keras3", "multi_io");
  const std::string model = graph("keras3", "multi_io", "keras");
  const std::string in = inputs(g, 0);
  Result r = run("stream " + model + in + " --chunk 2 -o " + tmp("s.npz") + " --limit tensor_bytes=2G --limit units=1K");
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  r = run("stream " + model + in + " --chunk 2 -o " + tmp("t.npz") + " --limit weight_bytes=16");
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("weight_bytes limit of 16 bytes"), std::string::npos) << r.err;
  EXPECT_FALSE(std::ifstream(tmp("t.npz")).good());
}

TEST_F(Graph, StreamErrors) {
  // A model that does not stream: the message names the layer.
  Result r = run("stream " + m("keras3", "bigru.keras") + " -i " + m("keras3", "bigru_x.npy") + " -o " + tmp("o.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_EQ(r.err.rfind("recur: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("the model cannot stream: layer 'bi' (Bidirectional)"), std::string::npos) << r.err;
  const GraphCase s2s = graph_case("keras3", "seq2seq_initial_state");
  r = run("stream " + graph("keras3", "seq2seq_initial_state", "keras") + inputs(s2s, 0) + " -o " + tmp("o.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("layer 'lstm_1' (LSTM)"), std::string::npos) << r.err;
  const std::string ok = "stream " + m("keras3", "binone.keras") + " -i " + m("keras3", "binone_x.npy");
  r = run(ok + " --chunk 0 -o " + tmp("o.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--chunk must be at least 1"), std::string::npos) << r.err;
  r = run(ok);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--output or --output-dir is required"), std::string::npos) << r.err;
  r = run(ok + " --layer bin/forward -o " + tmp("o.npz"));
  EXPECT_EQ(r.rc, 2);  // stream has no --layer
  // A stateful model streams with its own batch only.
  const GraphCase st = graph_case("keras3", "stateful_sequential_gru");
  Array x = st.calls[0].inputs[0];
  x.shape[0] = 2;
  x.data.resize(2 * 4 * 3);
  recur_cli::write_npy(tmp("x2.npy"), x);
  r = run("stream " + graph("keras3", "stateful_sequential_gru", "keras") + " -i " + tmp("x2.npy") + " -o " + tmp("o.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("fixed batch of 3, got 2"), std::string::npos) << r.err;
  EXPECT_FALSE(std::ifstream(tmp("o.npz")).good()) << "a failed stream must not write its output";
}

TEST_F(Graph, KerasBackend) {
  // masked_initial_state: rows start with masked steps and the initial states are not zero, so the
  // backends differ there (TensorFlow outputs zeros, JAX the initial state).
  const GraphCase tf = graph_case("keras3", "masked_initial_state"), jax = graph_case("keras3_jax", "masked_initial_state");
  const std::string model = graph("keras3", "masked_initial_state", "keras");
  const std::string in = inputs(tf, 0);  // the same inputs in both fixtures
  const std::string want_tf = expected(tf, 0);
  NamedArrays yj;
  for (std::size_t i = 0; i < jax.calls[0].outputs.size(); ++i)
    yj.emplace_back(i == 0 ? "output" : "output_" + std::to_string(i), jax.calls[0].outputs[i]);
  recur_cli::write_npz(tmp("want_jax.npz"), yj);
  const std::string want_jax = tmp("want_jax.npz");
  // The same file: TensorFlow's numbers by default, JAX's with --keras-backend jax.
  Result r = run("verify " + model + in + " -e " + want_tf);
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_EQ(run("verify " + model + in + " -e " + want_jax).rc, 1);
  r = run("verify " + model + in + " -e " + want_jax + " --keras-backend jax");
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  r = run("verify " + model + in + " -e " + want_tf + " --keras-backend tensorflow");
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  // A backend for a streamed model too (masking_sequential streams).
  const GraphCase ms = graph_case("keras3_jax", "masking_sequential");
  r = run("stream " + graph("keras3", "masking_sequential", "keras") + inputs(ms, 0, "ms") +
          " --keras-backend jax --chunk 2 -o " + tmp("s.npz"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_LE(max_rel(ms.calls[0].outputs[0], recur_cli::read_npz(tmp("s.npz"))[0].second), 1e-5);
  // Keras 2 has no JAX backend; other names are refused by the library.
  r = run("run " + m("keras2", "bigru.keras") + " -i " + m("keras2", "bigru_x.npy") + " -o " + tmp("o.npz") +
          " --keras-backend jax");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("Keras 2"), std::string::npos) << r.err;
  for (const char* bad : {"torch", "JAX", "mxnet"}) {
    r = run("run " + model + in + " -o " + tmp("o.npz") + " --keras-backend " + bad);
    EXPECT_EQ(r.rc, 2) << bad;
    EXPECT_NE(r.err.find("expected \"tensorflow\" or \"jax\", got \"" + std::string(bad) + "\""), std::string::npos)
        << r.err;
  }
  // One layer: TensorFlow writes 0 at a masked first step, JAX the initial state.
  const std::string layer = "run " + m("keras3", "tokens.keras") + " --layer gru --input " + m("keras3", "layer_gru_x.npy") +
                            " --mask " + m("keras3", "layer_gru_mask.npy") + " --initial-state " +
                            m("keras3", "layer_gru_h0.npy");
  ASSERT_EQ(run(layer + " -o " + tmp("tf.npz")).rc, 0);
  ASSERT_EQ(run(layer + " -o " + tmp("jax.npz") + " --keras-backend jax").rc, 0);
  const Array mk = recur_cli::read_npy(m("keras3", "layer_gru_mask.npy"));
  bool masked_head = false;
  for (std::int64_t b = 0; b < mk.shape[0]; ++b) masked_head |= mk.data[static_cast<std::size_t>(b * mk.shape[1])] == 0;
  ASSERT_TRUE(masked_head) << "the fixture's mask masks a row's first step";
  EXPECT_NE(member(recur_cli::read_npz(tmp("tf.npz")), "output").data,
            member(recur_cli::read_npz(tmp("jax.npz")), "output").data);
  r = run("run " + m("keras2", "tokens.keras") + " --layer gru --input " + m("keras2", "layer_gru_x.npy") + " -o " +
          tmp("o.npz") + " --keras-backend jax");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("Keras 2"), std::string::npos) << r.err;
}

TEST_F(Graph, StatesInAndOut) {
  const GraphCase g = graph_case("keras3", "stateful_functional_lstm_gru");
  const std::string model = graph("keras3", "stateful_functional_lstm_gru", "keras");
  Result r = run("run " + model + inputs(g, 0) + " -o " + tmp("o.npz") + " --states-out " + tmp("s.npz"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("states lstm: (2, 3, 4)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("states gru: (1, 3, 3)\n"), std::string::npos) << r.out;
  const NamedArrays s = recur_cli::read_npz(tmp("s.npz"));
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].first, "lstm");
  EXPECT_EQ(s[0].second.shape, (std::vector<int64_t>{2, 3, 4}));  // (states, batch, units)
  EXPECT_EQ(s[1].first, "gru");
  EXPECT_EQ(s[1].second.shape, (std::vector<int64_t>{1, 3, 3}));
  EXPECT_TRUE(std::any_of(s[1].second.data.begin(), s[1].second.data.end(), [](float v) { return v != 0.0f; }))
      << "the states a call leaves";
  // The states written round-trip: --states-in of them, then --states-out again, gives them back.
  r = run("run " + model + inputs(g, 1) + " -o " + tmp("o2.npz") + " --states-in " + tmp("s.npz") + " --states-out " +
          tmp("s2.npz"));
  ASSERT_EQ(r.rc, 0) << r.err;
  const NamedArrays s2 = recur_cli::read_npz(tmp("s2.npz"));
  ASSERT_EQ(s2.size(), 2u);
  EXPECT_EQ(s2[0].first, "lstm");
  EXPECT_EQ(s2[0].second.shape, s[0].second.shape);
  EXPECT_NE(s2[0].second.data, s[0].second.data) << "a second call moves the states on";
  // Without --states-in the second call starts from zero states: not Keras's second call.
  EXPECT_EQ(run("verify " + model + inputs(g, 1) + " -e " + expected(g, 1)).rc, 1);
  EXPECT_EQ(run("verify " + model + inputs(g, 1) + " -e " + expected(g, 1) + " --states-in " + tmp("s.npz")).rc, 0);
  // Errors: a model without stateful layers, a member that is no stateful layer, a wrong shape.
  r = run("run " + m("keras3", "bigru.keras") + " -i " + m("keras3", "bigru_x.npy") + " -o " + tmp("o.npz") +
          " --states-out " + tmp("x.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("the model has no stateful layers"), std::string::npos) << r.err;
  NamedArrays bad;
  bad.emplace_back("dense", s[1].second);
  recur_cli::write_npz(tmp("bad.npz"), bad);
  r = run("run " + model + inputs(g, 1) + " -o " + tmp("o.npz") + " --states-in " + tmp("bad.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("'dense' is not a stateful layer of the model (lstm, gru)"), std::string::npos) << r.err;
  NamedArrays wrong;
  wrong.emplace_back("lstm", s[1].second);
  recur_cli::write_npz(tmp("wrong.npz"), wrong);
  r = run("run " + model + inputs(g, 1) + " -o " + tmp("o.npz") + " --states-in " + tmp("wrong.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("'lstm' has shape (1, 3, 3); expected (2, 3, 4)"), std::string::npos) << r.err;
  r = run("run " + m("keras3", "tokens.keras") + " --layer gru -i " + m("keras3", "layer_gru_x.npy") + " -o " +
          tmp("o.npz") + " --states-out " + tmp("x.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("for whole models"), std::string::npos) << r.err;
}

}  // namespace
