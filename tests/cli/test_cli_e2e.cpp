// End-to-end tests of the `recur` binary on real Keras model files (tests/cli/models, written by
// tests/cli/make_models.py with tf-keras 2.21 and Keras 3.15.1).
#include "npy.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

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

TEST_F(Cli, UnwritableOutput) {
  const Result r = run("run " + m("keras2", "bigru.keras") + " --input " + m("keras2", "bigru_x.npy") + " --output " +
                       tmp("no/such/dir/o.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find(tmp("no/such/dir/o.npz")), std::string::npos) << r.err;
}

}  // namespace
