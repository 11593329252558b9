// SPDX-License-Identifier: Apache-2.0
// End-to-end tests of the `recur` binary on real Keras model files (tests/cli/models, written by
// tests/cli/make_models.py with tf-keras 2.21 and Keras 3.15.1).
#include "npy.hpp"

#include <recur/recur.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <zip.h>

#if defined(__linux__)
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <regex>
#include <signal.h>
#include <sstream>
#include <sys/stat.h>
#include <string>
#include <sys/wait.h>
#include <tuple>
#include <unistd.h>

using recur_cli::Array;
using recur_cli::NamedArrays;

namespace {

const std::string kBin = RECUR_CLI_BINARY;
const std::string kModels = RECUR_CLI_MODEL_DIR;
const std::string kGraphs = RECUR_GRAPH_DIR;  // tests/keras/graphs

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
  Result run(const std::string& args) { return run_with_env("", args); }
  // The same with `env` (shell assignments, "NAME='value' ") set for the command.
  Result run_with_env(const std::string& env, const std::string& args) {
    const std::string out = dir_ + "/stdout", err = dir_ + "/stderr";
    const int st = std::system((env + "'" + kBin + "' " + args + " >'" + out + "' 2>'" + err + "'").c_str());
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

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

Array f32(std::vector<std::int64_t> shape, std::vector<float> data) {
  Array a;
  a.shape = std::move(shape);
  a.data = std::move(data);
  a.dtype = "<f4";
  return a;
}

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
  // The declared length (6) is only a default: the input line says T, and the length Keras built with.
  EXPECT_NE(r.out.find("inputs:        1\n  ids    (B, T)  int ids; T: any length (declared 6)\n"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("outputs:       1\n  dense  (B, 2)\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("input: "), std::string::npos) << "no one-input summary beside the list: " << r.out;
  EXPECT_NE(r.out.find("run --layer:   gru, lstm\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("layers:        5"), std::string::npos);
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\n  gru +GRU +4 +5 +yes\n"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\n  lstm +LSTM +5 +3 +yes\n"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\n  dense +Dense +3 +2 +no\n"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\n  embedding +Embedding +1 +4 +no\n"))) << r.out;
}

TEST_F(Cli, InfoTwoOutputs) {
  const Result r = run("info " + m("keras3", "binone.keras"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("inputs:        1\n  x     (B, T, 3)  float32; T: any length (declared 6)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("outputs:       2\n  bin   (B, 2)\n  bin   (B, 2)\n"), std::string::npos) << r.out;
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
    // What the text says, as data: the shapes as `run` takes and gives them.
    ASSERT_EQ(j["inputs"].size(), 1u);
    EXPECT_EQ(j["inputs"][0]["shape"], "(B, T, 3)");
    EXPECT_EQ(j["inputs"][0]["dims"], nlohmann::json::array({-1, -1, 3}));
    EXPECT_EQ(j["inputs"][0]["token_ids"], false);
    EXPECT_EQ(j["inputs"][0]["dtype"], "float32");
    EXPECT_EQ(j["inputs"][0]["timesteps"]["symbol"], "T");
    EXPECT_EQ(j["inputs"][0]["timesteps"]["declared"], 6);
    EXPECT_EQ(j["inputs"][0]["timesteps"]["fixed"], false);
    ASSERT_EQ(j["outputs"].size(), 1u);
    EXPECT_EQ(j["outputs"][0]["shape"], "(B, T, 2)");
    EXPECT_EQ(j["outputs"][0]["dims"], nlohmann::json::array({-1, -1, 2}));
    EXPECT_EQ(j["run_layers"], nlohmann::json::array({"bi/forward", "bi/backward"}));
    EXPECT_FALSE(j.contains("input_size")) << "first-input summaries are gone: the inputs list says it all";
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
  // Input -> Masking -> Discretization -> Reshape -> Embedding -> GRU: every layer goes where the
  // model goes but Discretization, which has no GPU kernel: on a GPU it runs on the CPU and says
  // what that costs.
  const std::string model = kGraphs + "/preprocessing/keras3/discretization_drops_mask.keras";
  const Result j = run("info --json --device auto " + model);
  ASSERT_EQ(j.rc, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["device"]["requested"], "auto");
  const std::string backend = doc["device"]["backend"];
  EXPECT_EQ(backend == "cpu", cuda_devices(run("devices")) == 0) << j.out;
  EXPECT_NE(doc["device"]["reason"], "");
  for (const auto& l : doc["layers"]) {
    const std::string cls = l["class"];
    const bool no_kernel = cls == "Discretization";
    EXPECT_EQ(l["device"]["backend"], no_kernel ? std::string("cpu") : backend) << l;
    if (no_kernel && backend != "cpu") {
      EXPECT_NE(l["device"]["reason"].get<std::string>().find("no GPU kernel for " + cls), std::string::npos) << l;
    }
    for (const char* key : {"requested", "path", "reason", "device_name"}) EXPECT_TRUE(l["device"].contains(key)) << l;
  }
  // The text form adds a device column and the reason for each layer on the CPU.
  if (backend != "cpu") {
    const Result t = run("info --device auto " + model);
    ASSERT_EQ(t.rc, 0) << t.err;
    EXPECT_NE(t.out.find("recurrent  device"), std::string::npos) << t.out;
    EXPECT_NE(t.out.find("  discretization: recur has no GPU kernel for Discretization"),
              std::string::npos)
        << t.out;
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
      // The option, not the C argument the library names.
      EXPECT_NE(r.err.find("recur: --threads: expected 0 (one per core) to 1024, got "), std::string::npos) << r.err;
      EXPECT_EQ(r.err.find("num_threads"), std::string::npos) << r.err;
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
  // The OS's reason.
  EXPECT_NE(r.err.find(tmp("nope.keras") + ": cannot open the file: No such file or directory"), std::string::npos)
      << r.err;
  std::ofstream(tmp("plain")) << "x";
  const Result nd = run("info " + tmp("plain/m.keras"));
  EXPECT_EQ(nd.rc, 2);
  EXPECT_NE(nd.err.find("cannot open the file: Not a directory"), std::string::npos) << nd.err;
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
  Result r = run("run " + m("keras2", "bigru.keras") + " --input " + m("keras2", "bigru_x.npy") + " --atol 1");
  EXPECT_EQ(r.rc, 2);  // verify's option
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
    "limits:        units 65536, batch 1048576, state_bytes 256M, weight_bytes 1G, file_bytes 4G, tensor_bytes 1G, "
    "total_state_bytes 256M, run_bytes 512M, timesteps 1048576, init_work 2147483648, "
    "run_work 274877906944\n";

TEST_F(Cli, InfoPrintsTheLimits) {
  const Result r = run("info " + m("keras2", "tokens.h5"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("\n" + kDefaultLimits), std::string::npos) << r.out;
  // Before or after the subcommand; K, M and G are powers of 1024; the last one given wins.
  const Result raised = run("--limit units=128K info " + m("keras2", "tokens.h5") +
                            " --limit weight_bytes=1K --limit weight_bytes=2G --limit state_bytes=1000");
  ASSERT_EQ(raised.rc, 0) << raised.err;
  EXPECT_NE(raised.out.find("limits:        units 131072, batch 1048576, state_bytes 1000, weight_bytes 2G, "
                            "file_bytes 4G, tensor_bytes 1G, total_state_bytes 256M, run_bytes 512M, timesteps 1048576, "
                            "init_work 2147483648, run_work 274877906944\n"),
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

// The budgets over the whole: run_bytes refuses a run before its output buffers are made, and
// --timeout stops a run that takes longer (a timeout this small passes before the first layer).
TEST_F(Cli, RunBytesAndTimeout) {
  const std::string base = "run " + m("keras2", "bigru.keras") + " --input " + m("keras2", "bigru_x.npy") +
                           " --output " + tmp("o.npz");
  Result r = run(base + " --limit run_bytes=64");
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("run_bytes limit of 64 bytes"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--limit run_bytes=VALUE"), std::string::npos) << r.err;
  EXPECT_FALSE(std::ifstream(tmp("o.npz")).good());
  r = run(base + " --timeout 0.000000001");
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("deadline passed after "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--timeout SECONDS"), std::string::npos) << r.err;
  EXPECT_FALSE(std::ifstream(tmp("o.npz")).good());
  r = run(base + " --timeout 3600 --limit init_work=1K --limit timesteps=1K --limit total_state_bytes=1M");
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  r = run(base + " --timeout -1");
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--timeout"), std::string::npos) << r.err;
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
    EXPECT_NE(r.err.find("units, batch, state_bytes, weight_bytes, file_bytes, tensor_bytes, total_state_bytes, "
                         "run_bytes, timesteps, init_work, run_work"),
              std::string::npos)
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
  EXPECT_NE(r.err.find("the model has 2 input(s) (seq, static); no --input for static"), std::string::npos) << r.err;
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
  EXPECT_NE(r.out.find("inputs:        2\n  seq     (B, T, 4)  float32; T: any length (declared 7)\n  static  (B, 5)     float32\n"),
            std::string::npos)
      << r.out;
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
  EXPECT_NE(r.out.find("  x      (3, T, 3)  float32\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  dense  (3, T, 2)\n"), std::string::npos) << r.out;
  r = run("info " + m("keras3", "bigru.keras"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("streams:       no: layer 'bi' (Bidirectional)"), std::string::npos) << r.out;
  r = run("info " + graph("keras3", "embedding_masked_full_row", "keras"));
  EXPECT_NE(r.out.find("  ids    (B, T)  int ids\n"), std::string::npos) << r.out;

  const Result j = run("info --json " + graph("keras3", "stateful_functional_lstm_gru", "keras"));
  ASSERT_EQ(j.rc, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  ASSERT_EQ(doc["inputs"].size(), 1u);
  EXPECT_EQ(doc["inputs"][0]["name"], "x");
  EXPECT_EQ(doc["inputs"][0]["dims"], nlohmann::json::array({3, -1, 3}));  // the fixed batch
  EXPECT_EQ(doc["inputs"][0]["shape"], "(3, T, 3)");
  EXPECT_EQ(doc["inputs"][0]["timesteps"]["declared"], nullptr);
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

// --state-out writes the stream's state after its last step and --state-in starts from it: the
// second half of a sequence streamed from the first half's state gives the whole stream's outputs.
TEST_F(Graph, StreamStateOutThenInGoesOn) {
  const GraphCase g = graph_case("keras3", "masking_sequential");
  const std::string model = graph("keras3", "masking_sequential", "keras");
  const Array& x = g.calls[0].inputs[0];  // (B, T, F)
  ASSERT_EQ(x.shape.size(), 3u);
  const int64_t B = x.shape[0], T = x.shape[1], F = x.shape[2], cut = T / 2;
  auto half = [&](int64_t t0, int64_t t1, const std::string& name) {
    Array h;
    h.shape = {B, t1 - t0, F};
    for (int64_t b = 0; b < B; ++b)
      h.data.insert(h.data.end(), x.data.begin() + (b * T + t0) * F, x.data.begin() + (b * T + t1) * F);
    recur_cli::write_npy(tmp(name), h);
    return " -i " + tmp(name);
  };
  ASSERT_EQ(run("stream " + model + inputs(g, 0) + " -o " + tmp("whole.npz")).rc, 0);
  Result r = run("stream " + model + half(0, cut, "a.npy") + " --state-out " + tmp("s.state") + " -o " + tmp("a.npz"));
  ASSERT_EQ(r.rc, 0) << r.err;
  r = run("stream " + model + half(cut, T, "b.npy") + " --state-in " + tmp("s.state") + " -o " + tmp("b.npz"));
  ASSERT_EQ(r.rc, 0) << r.err;
  const NamedArrays whole = recur_cli::read_npz(tmp("whole.npz")), b = recur_cli::read_npz(tmp("b.npz"));
  ASSERT_EQ(whole.size(), b.size());
  const Array &w = whole[0].second, &got = b[0].second;
  if (w.shape == got.shape) {
    EXPECT_EQ(got.data, w.data) << "the output after the whole sequence";
  } else {  // a sequence output: the second half's steps
    ASSERT_EQ(got.shape.size(), 3u);
    ASSERT_EQ(got.shape[1], T - cut);
    const int64_t U = got.shape[2];
    for (int64_t bb = 0; bb < B; ++bb)
      for (int64_t t = cut; t < T; ++t)
        for (int64_t u = 0; u < U; ++u)
          ASSERT_EQ(got.data[static_cast<size_t>((bb * (T - cut) + t - cut) * U + u)], w.data[static_cast<size_t>((bb * T + t) * U + u)]);
  }
  // Another model's state, a missing file, and --row-streams are refused, naming what is wrong.
  r = run("stream " + graph("keras3", "norms_layernorm", "keras") + half(cut, T, "b.npy") + " --state-in " + tmp("s.state") +
          " -o " + tmp("c.npz"));
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("saved by another model"), std::string::npos) << r.err;
  r = run("stream " + model + half(cut, T, "b.npy") + " --state-in " + tmp("missing.state") + " -o " + tmp("c.npz"));
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("cannot read"), std::string::npos) << r.err;
  r = run("stream " + model + half(cut, T, "b.npy") + " --row-streams --state-out " + tmp("x.state") + " -o " + tmp("c.npz"));
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("--row-streams"), std::string::npos) << r.err;
}

// --row-streams steps each row of the batch as its own model state, all in one call per step: the
// outputs are those of one state for the whole batch (masks included).
TEST_F(Graph, StreamRowStreamsGivesWhatOneStateGives) {
  for (const std::string name : {"multi_io", "masking_sequential", "embedding_masked_full_row", "branches_concat"}) {
    const GraphCase g = graph_case("keras3", name);
    const std::string model = graph("keras3", name, "keras");
    const std::string in = inputs(g, 0);
    for (const char* chunk : {"1", "3"}) {
      SCOPED_TRACE(name + " --chunk " + chunk);
      ASSERT_EQ(run("stream " + model + in + " --chunk " + chunk + " -o " + tmp("one.npz")).rc, 0);
      const Result r = run("stream " + model + in + " --chunk " + chunk + " --row-streams -o " + tmp("rows.npz"));
      ASSERT_EQ(r.rc, 0) << r.out << r.err;
      EXPECT_NE(r.out.find("row streams stepped together"), std::string::npos) << r.out;
      const NamedArrays one = recur_cli::read_npz(tmp("one.npz")), rows = recur_cli::read_npz(tmp("rows.npz"));
      ASSERT_EQ(rows.size(), one.size());
      for (std::size_t i = 0; i < rows.size(); ++i) {
        EXPECT_EQ(rows[i].first, one[i].first);
        EXPECT_EQ(rows[i].second.shape, one[i].second.shape);
        EXPECT_LE(max_abs(rows[i].second, one[i].second), 1e-6) << rows[i].first;
      }
    }
  }
  // A model that fixes its batch (stateful) has no batch-1 states: the error says so.
  const GraphCase g = graph_case("keras3", "stateful_sequential_gru");
  const Result r = run("stream " + graph("keras3", "stateful_sequential_gru", "keras") + inputs(g, 0) +
                       " --row-streams -o " + tmp("o.npz"));
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("fixed batch"), std::string::npos) << r.err;
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
  r = run(ok + " --per-step -o -");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--per-step prints each step to stdout; -o - would print the whole outputs there too"),
            std::string::npos)
      << r.err;
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


// ------------------------------------------------------------------- outputs on stdout and files

// The values of a text dump, in order (every number after a row's "]").
std::vector<float> text_values(const std::string& text) {
  std::vector<float> v;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto close = line.find("] ");
    if (line.rfind("  [", 0) != 0 || close == std::string::npos) continue;
    std::istringstream row(line.substr(close + 1));
    std::string x;
    while (row >> x) v.push_back(std::stof(x));
  }
  return v;
}

// A JSON value nested like its dims, flattened.
void flatten(const nlohmann::json& j, std::vector<float>& out) {
  if (j.is_array())
    for (const auto& e : j) flatten(e, out);
  else
    out.push_back(j.get<float>());
}

TEST_F(Cli, RunPrintsTheOutputs) {
  const std::string cmd = "run " + m("keras3", "tokens.keras") + " -i " + m("keras3", "tokens_x.npy");
  ASSERT_EQ(run(cmd + " -o " + tmp("o.npz")).rc, 0);
  const Array want = recur_cli::read_npz(tmp("o.npz"))[0].second;
  const Result r = run(cmd);
  ASSERT_EQ(r.rc, 0) << r.err;
  // Name and dims, then one row per batch item; %.9g gives every float32 back exactly.
  EXPECT_EQ(r.out.rfind("dense: (3, 2)\n  [0]  ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\n  [2]  "), std::string::npos) << r.out;
  EXPECT_EQ(text_values(r.out), want.data) << r.out;
  // Progress lines go to stderr, so stdout is the outputs alone.
  EXPECT_NE(r.err.find("device: cpu"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("device:"), std::string::npos) << r.out;
  const Result dash = run(cmd + " -o -");
  EXPECT_EQ(dash.rc, 0);
  EXPECT_EQ(dash.out, r.out);
  // A sequence output: one row per (batch item, timestep).
  const Result seq = run("run " + m("keras3", "bigru.keras") + " -i " + m("keras3", "bigru_x.npy"));
  ASSERT_EQ(seq.rc, 0) << seq.err;
  EXPECT_EQ(seq.out.rfind("td: (3, 6, 2)\n  [0, 0]  ", 0), 0u) << seq.out;
  EXPECT_NE(seq.out.find("\n  [2, 5]  "), std::string::npos) << seq.out;
  EXPECT_LE(max_abs(f32({3, 6, 2}, text_values(seq.out)), recur_cli::read_npy(m("keras3", "bigru_y.npy"))), 1e-5);
}

TEST_F(Cli, RunPrintsJson) {
  // Keras 3 names both outputs of binone "bin": the second is bin_1, as --output-dir names it.
  const std::string cmd = "run " + m("keras3", "binone.keras") + " -i " + m("keras3", "binone_x.npy");
  ASSERT_EQ(run(cmd + " -o " + tmp("o.npz")).rc, 0);
  const NamedArrays want = recur_cli::read_npz(tmp("o.npz"));
  const Result r = run(cmd + " --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 2u) << r.out;
  const char* names[] = {"bin", "bin_1"};
  for (std::size_t k = 0; k < 2; ++k) {
    SCOPED_TRACE(names[k]);
    ASSERT_TRUE(j.contains(names[k])) << r.out;
    EXPECT_EQ(j[names[k]]["dims"], nlohmann::json::array({3, 2}));
    ASSERT_TRUE(j[names[k]]["values"].is_array());
    EXPECT_EQ(j[names[k]]["values"].size(), 3u) << "nested like the dims";
    std::vector<float> v;
    flatten(j[names[k]]["values"], v);
    EXPECT_EQ(v, want[k].second.data);
  }
  // A layer run: output and its states.
  const Result l = run("run " + m("keras3", "tokens.keras") + " -l lstm -i " + m("keras3", "layer_lstm_x.npy") + " --json");
  ASSERT_EQ(l.rc, 0) << l.err;
  const auto lj = nlohmann::json::parse(l.out);
  EXPECT_TRUE(lj.contains("output") && lj.contains("state_h") && lj.contains("state_c")) << l.out;
}

TEST_F(Cli, OutputFileKinds) {
  const std::string cmd = "run " + m("keras3", "tokens.keras") + " -i " + m("keras3", "tokens_x.npy");
  const Result shown = run(cmd), shown_json = run(cmd + " --json");
  // .txt and .json files hold what stdout shows.
  ASSERT_EQ(run(cmd + " -o " + tmp("o.txt")).rc, 0);
  EXPECT_EQ(slurp(tmp("o.txt")), shown.out);
  ASSERT_EQ(run(cmd + " -o " + tmp("o.json")).rc, 0);
  EXPECT_EQ(slurp(tmp("o.json")), shown_json.out);
  EXPECT_EQ(run(cmd + " -o " + tmp("j.json") + " --json").rc, 0);
  // Any other name is refused before the run, listing the forms; nothing is written.
  for (const std::string bad : {"o.csv", "out", "o.npz.bak"}) {
    const Result r = run(cmd + " -o " + tmp(bad));
    EXPECT_EQ(r.rc, 2) << bad;
    EXPECT_NE(r.err.find("--output " + tmp(bad) + ": unknown kind of file; expected .npz (every output), .npy (a run "
                         "with one output), .txt (text), .json (JSON) or - (stdout, the default)"),
              std::string::npos)
        << r.err;
    EXPECT_FALSE(std::ifstream(tmp(bad)).good()) << bad;
    EXPECT_EQ(r.err.find("device:"), std::string::npos) << "refused before the model is opened: " << r.err;
  }
  Result r = run(cmd + " --json -o " + tmp("o.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--json with --output " + tmp("o.npz")), std::string::npos) << r.err;
  r = run(cmd + " --json --output-dir " + tmp("d"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--json prints the outputs; with only --output-dir there is nothing to print"), std::string::npos)
      << r.err;
  // -o DIR: a directory, with --output-dir suggested.
  ASSERT_EQ(mkdir(tmp("outdir").c_str(), 0755), 0);
  r = run(cmd + " -o " + tmp("outdir"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--output " + tmp("outdir") + ": is a directory; --output takes a file"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("use --output-dir " + tmp("outdir")), std::string::npos) << r.err;
}

TEST_F(Graph, StreamPerStep) {
  const GraphCase g = graph_case("keras3", "masking_sequential");
  const std::string model = graph("keras3", "masking_sequential", "keras");
  const std::string in = inputs(g, 0);
  ASSERT_EQ(run("run " + model + in + " -o " + tmp("run.npz")).rc, 0);
  const Array whole = recur_cli::read_npz(tmp("run.npz"))[0].second;  // (3, 7, 3)
  ASSERT_EQ(whole.shape, (std::vector<std::int64_t>{3, 7, 3}));
  // JSON lines: one object per step, as it comes; the steps' timesteps make the whole run.
  Result r = run("stream " + model + in + " --chunk 3 --per-step --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  std::vector<float> got(whole.data.size());
  int steps = 0;
  while (std::getline(lines, line)) {
    const auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["step"], steps);
    const int t0 = j["timesteps"][0], t1 = j["timesteps"][1];
    EXPECT_EQ(t0, 3 * steps);
    EXPECT_EQ(t1, std::min(7, t0 + 3));
    const auto& o = j["outputs"]["dense"];
    EXPECT_EQ(o["dims"], nlohmann::json::array({3, t1 - t0, 3}));
    for (int b = 0; b < 3; ++b)
      for (int t = t0; t < t1; ++t)
        for (int f = 0; f < 3; ++f) got[static_cast<std::size_t>((b * 7 + t) * 3 + f)] = o["values"][b][t - t0][f];
    ++steps;
  }
  EXPECT_EQ(steps, 3);  // 3 + 3 + 1
  Array streamed = f32(whole.shape, got);
  EXPECT_LE(max_abs(streamed, whole), 1e-6);
  EXPECT_NE(r.err.find("stream: 7 timesteps in 3 step(s)"), std::string::npos) << r.err;
  // Text: a header per step, then the step's outputs; -o still writes the whole outputs.
  r = run("stream " + model + in + " --chunk 3 --per-step -o " + tmp("s.npz"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.rfind("step 0: timesteps 0 to 2\ndense: (3, 3, 3)\n  [0, 0]  ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\nstep 2: timesteps 6 to 6\ndense: (3, 1, 3)\n"), std::string::npos) << r.out;
  EXPECT_LE(max_abs(recur_cli::read_npz(tmp("s.npz"))[0].second, whole), 1e-6);
  // Without --per-step and -o, stream prints the whole outputs as run does.
  r = run("stream " + model + in + " --chunk 2");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.rfind("dense: (3, 7, 3)\n", 0), 0u) << r.out;
  EXPECT_LE(max_abs(f32(whole.shape, text_values(r.out)), whole), 1e-6);
}

// ------------------------------------------------------------------ messages that say what to do

// Copies a .keras archive with `from` replaced by `to` (once) in its config.json.
void edit_keras(const std::string& src, const std::string& dst, const std::string& from, const std::string& to) {
  int err = 0;
  zip_t* in = zip_open(src.c_str(), ZIP_RDONLY, &err);
  ASSERT_NE(in, nullptr);
  zip_t* out = zip_open(dst.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  ASSERT_NE(out, nullptr);
  std::vector<std::string> bodies(static_cast<std::size_t>(zip_get_num_entries(in, 0)));
  for (zip_int64_t i = 0; i < zip_get_num_entries(in, 0); ++i) {
    zip_stat_t st;
    ASSERT_EQ(zip_stat_index(in, static_cast<zip_uint64_t>(i), 0, &st), 0);
    zip_file_t* f = zip_fopen_index(in, static_cast<zip_uint64_t>(i), 0);
    ASSERT_NE(f, nullptr);
    std::string& body = bodies[static_cast<std::size_t>(i)];
    body.resize(st.size);
    ASSERT_EQ(zip_fread(f, body.data(), st.size), static_cast<zip_int64_t>(st.size));
    zip_fclose(f);
    if (std::string(st.name) == "config.json") {
      const auto at = body.find(from);
      ASSERT_NE(at, std::string::npos) << from;
      body.replace(at, from.size(), to);
    }
    zip_source_t* s = zip_source_buffer(out, body.data(), body.size(), 0);
    ASSERT_GE(zip_file_add(out, st.name, s, ZIP_FL_OVERWRITE), 0);
  }
  ASSERT_EQ(zip_close(out), 0);
  zip_discard(in);
}

// A stateful layer named with '/' (once listed but refused by name, so --states-out failed):
// --states-out writes it under its safe member name (no path separator in an archive member)
// and --states-in reads it back, by that name or the layer's own.
TEST_F(Graph, StatesOfALayerNamedWithASlash) {
  const GraphCase g = graph_case("keras3", "stateful_functional_lstm_gru");
  const std::string src = graph("keras3", "stateful_functional_lstm_gru", "keras");
  edit_keras(src, tmp("a.keras"), "\"name\": \"gru\"", "\"name\": \"enc/gru\"");
  edit_keras(tmp("a.keras"), tmp("b.keras"), "\"name\": \"gru\"", "\"name\": \"enc/gru\"");
  edit_keras(tmp("b.keras"), tmp("slash.keras"), "\"keras_history\": [\"gru\"", "\"keras_history\": [\"enc/gru\"");
  const std::string model = tmp("slash.keras");
  Result r = run("run " + model + inputs(g, 0) + " -o " + tmp("o.npz") + " --states-out " + tmp("s.npz"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("states enc_gru: (1, 3, 3)\n"), std::string::npos) << r.out;
  const NamedArrays s = recur_cli::read_npz(tmp("s.npz"));
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[1].first, "enc_gru");
  r = run("run " + model + inputs(g, 1) + " -o " + tmp("o2.npz") + " --states-in " + tmp("s.npz") + " --states-out " +
          tmp("s2.npz"));
  ASSERT_EQ(r.rc, 0) << r.err;
  const NamedArrays s2 = recur_cli::read_npz(tmp("s2.npz"));
  ASSERT_EQ(s2.size(), 2u);
  EXPECT_EQ(s2[1].first, "enc_gru");
  EXPECT_NE(s2[1].second.data, s[1].second.data) << "a second call moves the states on";
  // Keras's second call, from the first call's states.
  EXPECT_EQ(run("verify " + model + inputs(g, 1) + " -e " + expected(g, 1) + " --states-in " + tmp("s.npz")).rc, 0);
}

// A declared axis of 2^31 (once reported by `recur info` as -2147483648): refused at open with
// the range.
TEST_F(Graph, InfoOfADeclaredAxisPastInt32) {
  const std::string src = graph("keras3", "stateful_functional_lstm_gru", "keras");
  edit_keras(src, tmp("big.keras"), "\"batch_shape\": [3, null, 3]", "\"batch_shape\": [3, null, 2147483648]");
  for (const char* format : {"", " --json"}) {
    const Result r = run("info " + tmp("big.keras") + format);
    EXPECT_EQ(r.rc, 2) << r.out;
    EXPECT_EQ(r.out.find("-2147483648"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("a dimension must be null or an integer in [0, 2147483647], got 2147483648"), std::string::npos)
        << r.err;
  }
}

TEST_F(Cli, SavedModelFolder) {
  ASSERT_EQ(mkdir(tmp("exported").c_str(), 0755), 0);
  std::ofstream(tmp("exported/saved_model.pb")) << "x";
  for (const std::string& cmd : {"info " + tmp("exported"), "run " + tmp("exported") + " -i " + m("keras3", "bigru_x.npy")}) {
    const Result r = run(cmd);
    EXPECT_EQ(r.rc, 2);
    EXPECT_NE(r.err.find(tmp("exported") + ": is a TensorFlow SavedModel folder; recur reads Keras model files (.keras "
                         "or .h5): save one with model.save(\"model.keras\")"),
              std::string::npos)
        << r.err;
  }
  // Another directory.
  const Result d = run("info " + dir_);
  EXPECT_EQ(d.rc, 2);
  EXPECT_NE(d.err.find("is a directory, not a model file (recur reads .keras and .h5 files)"), std::string::npos) << d.err;
}

TEST_F(Cli, UnreadableModelFile) {
  // root reads any file: the check runs as an unprivileged user where setpriv can make one.
  std::string prefix;
  if (geteuid() == 0) {
    if (std::system("setpriv --reuid=65534 --regid=65534 --clear-groups true >/dev/null 2>&1") != 0)
      GTEST_SKIP() << "running as root without setpriv: every file is readable, so no permission error can be made";
    prefix = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
  }
  ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
  std::ofstream(tmp("locked.keras")) << "x";
  ASSERT_EQ(chmod(tmp("locked.keras").c_str(), 0), 0);
  const std::string out = tmp("so"), err = tmp("se");
  const int st = std::system((prefix + "'" + kBin + "' info " + tmp("locked.keras") + " >" + out + " 2>" + err).c_str());
  if (!prefix.empty() && WEXITSTATUS(st) == 126)
    GTEST_SKIP() << "the unprivileged user cannot run " << kBin << ": " << slurp(err);
  EXPECT_EQ(WEXITSTATUS(st), 2);
  EXPECT_NE(slurp(err).find(tmp("locked.keras") + ": cannot open the file: Permission denied"), std::string::npos)
      << slurp(err);
}

TEST_F(Graph, NpzInputs) {
  const GraphCase g = graph_case("keras3", "multi_io");
  const std::string model = graph("keras3", "multi_io", "keras");
  ASSERT_EQ(run("run " + model + inputs(g, 0) + " -o " + tmp("want.npz")).rc, 0);
  // One .npz whose members are named like the inputs, in any order.
  NamedArrays both;
  both.emplace_back("static", g.calls[0].inputs[1]);
  both.emplace_back("seq", g.calls[0].inputs[0]);
  recur_cli::write_npz(tmp("in.npz"), both);
  Result r = run("run " + model + " -i " + tmp("in.npz") + " -o " + tmp("got.npz"));
  ASSERT_EQ(r.rc, 0) << r.err;
  const NamedArrays want = recur_cli::read_npz(tmp("want.npz")), got = recur_cli::read_npz(tmp("got.npz"));
  for (std::size_t k = 0; k < want.size(); ++k) EXPECT_EQ(got[k].second.data, want[k].second.data);
  // A member named after no input: the inputs are listed.
  NamedArrays wrong;
  wrong.emplace_back("arr_0", g.calls[0].inputs[0]);
  wrong.emplace_back("arr_1", g.calls[0].inputs[1]);
  recur_cli::write_npz(tmp("wrong.npz"), wrong);
  r = run("run " + model + " -i " + tmp("wrong.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--input " + tmp("wrong.npz") + ": member 'arr_0' is named after no input; the inputs are seq, static"),
            std::string::npos)
      << r.err;
  // NAME= with an .npz, and an .npz where a mask goes.
  r = run("run " + model + " -i seq=" + tmp("in.npz") + " -i static=" + tmp("in.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("an .npz holds several arrays; pass seq=x.npy"), std::string::npos) << r.err;
  r = run("run " + model + " -i " + tmp("in.npz") + " -m " + tmp("in.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--mask " + tmp("in.npz") + ": an .npz is not taken here"), std::string::npos) << r.err;
  // A one-input model takes np.savez's arr_0.
  NamedArrays one;
  one.emplace_back("arr_0", recur_cli::read_npy(m("keras3", "bigru_x.npy")));
  recur_cli::write_npz(tmp("one.npz"), one);
  r = run("verify " + m("keras3", "bigru.keras") + " -i " + tmp("one.npz") + " -e " + m("keras3", "bigru_y.npy"));
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  // An .npz under an .npy name: said to be a zip.
  std::ifstream src(tmp("one.npz"), std::ios::binary);
  std::ofstream(tmp("zip.npy"), std::ios::binary) << src.rdbuf();
  r = run("run " + m("keras3", "bigru.keras") + " -l bi/forward -i " + tmp("zip.npy"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--layer takes one (B, T, features) .npy, not an .npz"), std::string::npos) << r.err;
  r = run("run " + m("keras3", "bigru.keras") + " -i " + m("keras3", "bigru_x.npy") + " -m " + tmp("zip.npy"));
  EXPECT_EQ(r.rc, 2);
}

TEST_F(Graph, UnknownNames) {
  const GraphCase g = graph_case("keras3", "multi_io");
  const std::string model = graph("keras3", "multi_io", "keras");
  recur_cli::write_npy(tmp("seq.npy"), g.calls[0].inputs[0]);
  recur_cli::write_npy(tmp("static.npy"), g.calls[0].inputs[1]);
  Result r = run("run " + model + " -i sequence=" + tmp("seq.npy") + " -i " + tmp("static.npy"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--input sequence=" + tmp("seq.npy") + ": no input is called 'sequence'; the inputs are seq, "
                       "static (NAME=path names one of them)"),
            std::string::npos)
      << r.err;
  r = run("run " + model + " -i " + tmp("seq.npy") + " -i " + tmp("static.npy") + " -m sq=" + tmp("seq.npy"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--mask sq=" + tmp("seq.npy") + ": no input is called 'sq'"), std::string::npos) << r.err;
  r = run("verify " + model + " -i " + tmp("seq.npy") + " -i " + tmp("static.npy") + " -e prob=" + tmp("seq.npy"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--expected prob=" + tmp("seq.npy") + ": no output is called 'prob'; the outputs are output, "
                       "output_1, probs, value"),
            std::string::npos)
      << r.err;
  // A file whose name holds '=' is still a file.
  recur_cli::write_npy(tmp("a=b.npy"), g.calls[0].inputs[0]);
  EXPECT_EQ(run("run " + model + " -i " + tmp("a=b.npy") + " -i " + tmp("static.npy")).rc, 0);
}

TEST_F(Cli, UnknownLayerListsTheRecurrentOnes) {
  const std::string x = " -i " + m("keras3", "layer_gru_x.npy");
  Result r = run("run " + m("keras3", "tokens.keras") + " -l nope" + x);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("recur: --layer nope: the model has no layer 'nope'; the recurrent layers are gru, lstm\n"),
            std::string::npos)
      << r.err;
  r = run("run " + m("keras3", "tokens.keras") + " -l embedding" + x);
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--layer embedding: layer 'embedding' is an Embedding, not a recurrent layer; the recurrent "
                       "layers are gru, lstm"),
            std::string::npos)
      << r.err;
  r = run("run " + m("keras3", "tokens.keras") + " -l dense" + x);
  EXPECT_NE(r.err.find("'dense' is a Dense, not"), std::string::npos) << r.err;
  r = run("verify " + m("keras3", "bigru.keras") + " -l bi -i " + m("keras3", "layer_biforward_x.npy") + " -e " +
          m("keras3", "layer_biforward_y.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("the recurrent layers are bi/forward, bi/backward"), std::string::npos) << r.err;
}

TEST_F(Cli, MessagesUseTheOptionNames) {
  const std::string cmd = "run " + m("keras3", "bigru.keras") + " -i " + m("keras3", "bigru_x.npy");
  Result r = run(cmd + " --device bogus");
  EXPECT_NE(r.err.find("recur: --device: expected \"cpu\""), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("recur_model"), std::string::npos) << r.err;
  r = run(cmd + " --keras-backend torch");
  EXPECT_NE(r.err.find("recur: --keras-backend: expected \"tensorflow\" or \"jax\""), std::string::npos) << r.err;
  Array ids;
  ids.shape = {1, 6};
  ids.data = {1, 2, 3, 4, 5, 20};
  recur_cli::write_npy(tmp("ids.npy"), ids);
  r = run("run " + m("keras3", "tokens.keras") + " -i " + tmp("ids.npy"));
  EXPECT_NE(r.err.find("recur: --input: token id 20"), std::string::npos) << r.err;
  // A stateful model's fixed batch.
  const GraphCase st = graph_case("keras3", "stateful_sequential_gru");
  Array x = st.calls[0].inputs[0];
  x.shape[0] = 2;
  x.data.resize(2 * 4 * 3);
  recur_cli::write_npy(tmp("x2.npy"), x);
  r = run("run " + graph("keras3", "stateful_sequential_gru", "keras") + " -i " + tmp("x2.npy"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("recur: --input input_layer: the model fixes the batch at 3 (a stateful model), got 2"),
            std::string::npos)
      << r.err;
  for (const char* c_name : {"name:", "num_threads:", "batch:", "backend:", "timesteps:"}) {
    EXPECT_EQ(r.err.find(c_name), std::string::npos) << c_name << " in " << r.err;
  }
}

TEST_F(Cli, ConvertedInputsAreNoted) {
  const std::string model = m("keras3", "bigru.keras");
  const Array x = recur_cli::read_npy(m("keras3", "bigru_x.npy"));
  // float32: nothing to say.
  const std::string npy = recur_cli::encode_npy(x);
  std::ofstream(tmp("x32.npy"), std::ios::binary) << npy;
  Result r = run("run " + model + " -i " + tmp("x32.npy"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err.find("note:"), std::string::npos) << r.err;
  // float64 values, rounded: one line.
  std::vector<double> wide(x.data.begin(), x.data.end());
  std::string f8 = npy.substr(0, 128);
  f8.replace(f8.find("<f4"), 3, "<f8");
  f8.append(reinterpret_cast<const char*>(wide.data()), wide.size() * 8);
  std::ofstream(tmp("x64.npy"), std::ios::binary) << f8;
  r = run("run " + model + " -i " + tmp("x64.npy"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("recur: note: input 'input_layer' (" + tmp("x64.npy") + "): float64 values rounded to float32\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("note:"), r.err.rfind("note:")) << "once: " << r.err;
  // int32 token ids go on as integers: nothing to say.
  r = run("run " + m("keras3", "tokens.keras") + " -i " + m("keras3", "tokens_x.npy"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err.find("note:"), std::string::npos) << r.err;
  // bool and integer values for a float input.
  std::string b1 = npy.substr(0, 128);
  b1.replace(b1.find("'<f4'"), 5, "'|b1'");
  for (float v : x.data) b1 += static_cast<char>(v > 0);
  std::ofstream(tmp("xb.npy"), std::ios::binary) << b1;
  r = run("run " + model + " -i " + tmp("xb.npy"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("bool values passed as 0 and 1 in float32"), std::string::npos) << r.err;
  std::string i2 = npy.substr(0, 128);
  i2.replace(i2.find("<f4"), 3, "<i2");
  for (float v : x.data) {
    const std::int16_t k = static_cast<std::int16_t>(v * 10);
    i2.append(reinterpret_cast<const char*>(&k), 2);
  }
  std::ofstream(tmp("xi.npy"), std::ios::binary) << i2;
  r = run("run " + model + " -l bi/forward -i " + tmp("xi.npy"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("recur: note: input (" + tmp("xi.npy") + "): int16 values converted to float32"), std::string::npos)
      << r.err;
}

TEST_F(Cli, ConfigAndWeightErrorsNameTheirFieldOnce) {
  // An Embedding config that no longer fits its stored weights: the member is named once.
  edit_keras(m("keras3", "tokens.keras"), tmp("wide.keras"), "\"output_dim\": 4", "\"output_dim\": 5");
  Result r = run("info " + tmp("wide.keras"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find(tmp("wide.keras") + ": model.weights.h5:/layers/embedding/vars/0: shape (20, 4) does not fit "
                       "(expected (20, 5))"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("model.weights.h5"), r.err.rfind("model.weights.h5")) << r.err;
  // A rate of the wrong type: "dropout", not "dropout.dropout".
  edit_keras(m("keras3", "tokens.keras"), tmp("rate.keras"), "\"dropout\": 0.0", "\"dropout\": \"x\"");
  r = run("info " + tmp("rate.keras"));
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("runnable:      no: layer GRU 'gru': dropout: expected a number, got \"x\"\n"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("dropout.dropout"), std::string::npos) << r.out;
  r = run("run " + tmp("rate.keras") + " -l gru -i " + m("keras3", "layer_gru_x.npy"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("dropout: expected a number"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("dropout.dropout"), std::string::npos) << r.err;
}

// ------------------------------------------------------------------ info says what run accepts

TEST_F(Cli, InfoOfAModelThatCannotRun) {
  edit_keras(m("keras3", "tokens.keras"), tmp("conv3d_transpose.keras"), "\"class_name\": \"Dense\"", "\"class_name\": \"Conv3DTranspose\"");
  const Result r = run("info " + tmp("conv3d_transpose.keras"));
  ASSERT_EQ(r.rc, 0) << r.err;
  // Why it cannot run, and what it can: its layers, and which --layer runs.
  EXPECT_NE(r.out.find("runnable:      no: unsupported layer Conv3DTranspose at dense: recur does not run this Keras "
                       "layer; docs/keras-layers.md lists the layers it runs\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("run --layer:   gru, lstm\n"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\n  dense +Conv3DTranspose +3 +0 +no\n"))) << r.out;
  for (const char* absent : {"inputs:", "outputs:", "stateful:", "streams:", "(B, 0)"})
    EXPECT_EQ(r.out.find(absent), std::string::npos) << absent << " in " << r.out;
  const auto j = nlohmann::json::parse(run("info --json " + tmp("conv3d_transpose.keras")).out);
  EXPECT_EQ(j["runnable"], false);
  EXPECT_EQ(j["unsupported"],
            "unsupported layer Conv3DTranspose at dense: recur does not run this Keras layer; docs/keras-layers.md lists "
            "the layers it runs");
  EXPECT_FALSE(j.contains("inputs") || j.contains("outputs") || j.contains("streams")) << j;
  EXPECT_EQ(j["run_layers"], nlohmann::json::array({"gru", "lstm"}));
  EXPECT_EQ(j["layers"].size(), 5u);
  // As info says: the model does not run, its recurrent layers do.
  Result run_model = run("run " + tmp("conv3d_transpose.keras") + " -i " + m("keras3", "tokens_x.npy"));
  EXPECT_EQ(run_model.rc, 2);
  EXPECT_NE(run_model.err.find("Conv3DTranspose"), std::string::npos) << run_model.err;
  EXPECT_EQ(run("run " + tmp("conv3d_transpose.keras") + " -l gru -i " + m("keras3", "layer_gru_x.npy")).rc, 0);
}

TEST_F(Graph, InfoShapes) {
  // Lengths of their own: T1, T2, and the output follows the decoder's.
  Result r = run("info " + graph("keras3", "seq2seq_gru", "keras"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("  encoder_in  (B, T1, 3)  float32; T1: any length (declared 7)\n"
                       "  decoder_in  (B, T2, 2)  float32; T2: any length (declared 5)\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  dense       (B, T2, 3)\n"), std::string::npos) << r.out;
  // Sequences merged together take one length.
  r = run("info " + graph("keras3", "merges_mixed_masks", "keras"));
  EXPECT_NE(r.out.find("  a     (B, T, 4)  float32; T: any length, the same for a, b (declared 7)\n"), std::string::npos) << r.out;
  // A RepeatVector's length does not follow the input's.
  r = run("info " + graph("keras3", "encoder_decoder_repeat", "keras"));
  EXPECT_NE(r.out.find("  x                 (B, T, 3)  float32; T: any length (declared 7)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  time_distributed  (B, 5, 2)\n"), std::string::npos) << r.out;
  // A Flatten before a Dense needs the declared length: info says so and run holds to it.
  const std::string flat = graph("keras3", "reshape_permute_flatten", "keras");
  r = run("info " + flat);
  EXPECT_NE(r.out.find("  x        (B, 6, 3)  float32; exactly 6 timesteps (a layer needs that length)\n"), std::string::npos)
      << r.out;
  const GraphCase g = graph_case("keras3", "reshape_permute_flatten");
  Array longer = g.calls[0].inputs[0];
  longer.shape[1] = 7;
  longer.data.resize(static_cast<std::size_t>(longer.shape[0] * 7 * 3), 0.5f);
  recur_cli::write_npy(tmp("x7.npy"), longer);
  recur_cli::write_npy(tmp("v.npy"), g.calls[0].inputs[1]);
  r = run("run " + flat + " -i " + tmp("x7.npy") + " -i " + tmp("v.npy"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("does not fit input 'x' of the model: it takes exactly 6 timesteps (a layer needs that length), got 7"),
            std::string::npos)
      << r.err;
}

// Every keras3 graph: the shapes info prints are the shapes run takes and gives. Inputs are made
// from info's own shapes (B = 2, each length its declared value + 2), and every output must have
// the dims info's shape gives for them; the JSON says what the text says.
TEST_F(Graph, InfoShapesAreWhatRunTakes) {
  const char* names[] = {"multi_io", "seq2seq_gru", "merges_mixed_masks", "encoder_decoder_repeat", "masking_sequential",
                         "embedding_masked_merge", "reshape_permute_flatten", "stateful_functional_lstm_gru",
                         "conv1d_strides_groups", "return_state_outputs", "time_distributed_4d", "pooling"};
  for (const char* name : names) {
    SCOPED_TRACE(name);
    const std::string model = graph("keras3", name, "keras");
    const Result text = run("info " + model), js = run("info --json " + model);
    ASSERT_EQ(js.rc, 0) << js.err;
    const auto j = nlohmann::json::parse(js.out);
    std::map<std::string, std::int64_t> value{{"B", 2}};
    std::string args;
    for (std::size_t i = 0; i < j["inputs"].size(); ++i) {
      const auto& in = j["inputs"][i];
      EXPECT_NE(text.out.find("  " + in["name"].get<std::string>() + " "), std::string::npos);
      EXPECT_TRUE(std::regex_search(text.out, std::regex("\n  " + in["name"].get<std::string>() + " +" +
                                                         std::regex_replace(in["shape"].get<std::string>(),
                                                                            std::regex("[()]"), "\\$&"))))
          << in["shape"] << " not in " << text.out;
      Array x;
      const std::string shape = in["shape"];
      std::istringstream axes(shape.substr(1, shape.size() - 2));
      std::string axis;
      while (std::getline(axes, axis, ',')) {
        axis.erase(0, axis.find_first_not_of(' '));
        if (std::isdigit(static_cast<unsigned char>(axis[0]))) {
          x.shape.push_back(std::stoll(axis));
          continue;
        }
        if (!value.count(axis)) {
          const auto& d = in["timesteps"]["declared"];
          value[axis] = (d.is_null() ? 5 : d.get<std::int64_t>()) + 2;
        }
        x.shape.push_back(value[axis]);
      }
      std::size_t n = 1;
      for (auto d : x.shape) n *= static_cast<std::size_t>(d);
      x.data.assign(n, in["token_ids"] == true ? 1.0f : 0.25f);
      const std::string p = tmp(std::string(name) + std::to_string(i) + ".npy");
      recur_cli::write_npy(p, x);
      args += " -i " + p;
    }
    const Result r = run("run " + model + args + " --json");
    ASSERT_EQ(r.rc, 0) << r.err;
    const auto outs = nlohmann::ordered_json::parse(r.out);  // in output order
    std::size_t k = 0;
    for (auto it = outs.begin(); it != outs.end(); ++it, ++k) {
      const std::string shape = j["outputs"][k]["shape"];
      std::string want = "(";
      std::istringstream axes(shape.substr(1, shape.size() - 2));
      std::string axis;
      for (bool first = true; std::getline(axes, axis, ','); first = false) {
        axis.erase(0, axis.find_first_not_of(' '));
        if (axis.empty()) continue;
        want += (first ? "" : ", ") + (std::isdigit(static_cast<unsigned char>(axis[0])) ? axis : std::to_string(value.at(axis)));
      }
      want += ")";
      std::vector<std::int64_t> dims = (*it)["dims"];
      EXPECT_EQ(recur_cli::shape_string(dims), want) << it.key() << " is " << shape << " in info";
    }
  }
}

}  // namespace

// ------------------------------------------------------- integer ids, --outputs, --log, signals

// Writes an .npy of `descr` ('<i8', '|u1', ...) holding `values` as that type.
template <typename T>
void write_ints(const std::string& path, const std::string& descr, const std::vector<std::int64_t>& shape,
                const std::vector<T>& values) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + recur_cli::shape_string(shape) + ", }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string bytes = "\x93NUMPY\x01";
  bytes += '\0';
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header;
  bytes.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  std::ofstream(path, std::ios::binary) << bytes;
}

TEST_F(Cli, IntegerIdsRunAsIntegers) {
  const std::string model = m("keras3", "tokens.keras");
  const Array ids = recur_cli::read_npy(m("keras3", "tokens_x.npy"));
  ASSERT_TRUE(ids.integer()) << ids.dtype;
  // The same ids as floats: what every integer type must give, bit for bit.
  recur_cli::write_npy(tmp("f.npy"), f32(ids.shape, ids.data));
  ASSERT_EQ(run("run " + model + " -i " + tmp("f.npy") + " -o " + tmp("f.npz")).rc, 0);
  const Array want = recur_cli::read_npz(tmp("f.npz"))[0].second;
  EXPECT_LE(max_abs(want, recur_cli::read_npy(m("keras3", "tokens_y.npy"))), 1e-5);
  const auto as = [&](auto zero) {
    std::vector<decltype(zero)> v;
    for (std::int64_t i : ids.ints) v.push_back(static_cast<decltype(zero)>(i));
    return v;
  };
  write_ints(tmp("i1.npy"), "|i1", ids.shape, as(std::int8_t{}));
  write_ints(tmp("u1.npy"), "|u1", ids.shape, as(std::uint8_t{}));
  write_ints(tmp("i2.npy"), "<i2", ids.shape, as(std::int16_t{}));
  write_ints(tmp("u4.npy"), "<u4", ids.shape, as(std::uint32_t{}));
  write_ints(tmp("i8.npy"), "<i8", ids.shape, as(std::int64_t{}));
  write_ints(tmp("u8.npy"), "<u8", ids.shape, as(std::uint64_t{}));
  for (const char* kind : {"i1", "u1", "i2", "u4", "i8", "u8"}) {
    SCOPED_TRACE(kind);
    const Result r = run("run " + model + " -i " + tmp(std::string(kind) + ".npy") + " -o " + tmp("o.npz"));
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.err.find("note:"), std::string::npos) << "integer ids are passed as they are: " << r.err;
    EXPECT_EQ(recur_cli::read_npz(tmp("o.npz"))[0].second.data, want.data);
    // Streamed step by step through the same named calls.
    const Result s = run("stream " + model + " -i " + tmp(std::string(kind) + ".npy") + " --chunk 4 -o " + tmp("s.npz"));
    ASSERT_EQ(s.rc, 0) << s.err;
    EXPECT_LE(max_abs(recur_cli::read_npz(tmp("s.npz"))[0].second, want), 1e-6);
  }
  // verify takes them too.
  const Result v = run("verify " + model + " -i " + tmp("i8.npy") + " -e " + m("keras3", "tokens_y.npy"));
  EXPECT_EQ(v.rc, 0) << v.out << v.err;
  // A uint64 beyond int64 is refused, naming the input, the value and where it is.
  std::vector<std::uint64_t> big = as(std::uint64_t{});
  big[4] = std::uint64_t(1) << 63;
  write_ints(tmp("big.npy"), "<u8", ids.shape, big);
  const Result b = run("run " + model + " -i " + tmp("big.npy") + " -o " + tmp("b.npz"));
  EXPECT_EQ(b.rc, 2);
  EXPECT_NE(b.err.find(tmp("big.npy") + ": input 'ids': uint64 value 9223372036854775808 at flat index 4 is beyond "
                       "int64's range"),
            std::string::npos)
      << b.err;
  EXPECT_FALSE(file_exists(tmp("b.npz")));
  // An id past the Embedding's rows: the library's message, in the CLI's terms.
  std::vector<std::int64_t> past = ids.ints;
  past[1] = 1000;
  write_ints(tmp("past.npy"), "<i8", ids.shape, past);
  const Result p = run("run " + model + " -i " + tmp("past.npy"));
  EXPECT_EQ(p.rc, 2);
  EXPECT_NE(p.err.find("token id 1000"), std::string::npos) << p.err;
  // Integers for a float input are cast to float32 as Keras casts them: noted.
  const Array x = recur_cli::read_npy(m("keras3", "bigru_x.npy"));
  std::vector<std::int16_t> tenths;
  for (float f : x.data) tenths.push_back(static_cast<std::int16_t>(f * 10));
  write_ints(tmp("xi.npy"), "<i2", x.shape, tenths);
  const Result c = run("run " + m("keras3", "bigru.keras") + " -i " + tmp("xi.npy"));
  ASSERT_EQ(c.rc, 0) << c.err;
  EXPECT_NE(c.err.find("input 'input_layer' (" + tmp("xi.npy") + "): int16 values converted to float32"),
            std::string::npos)
      << c.err;
}

// An Embedding of 2^24 + 2 rows (tests/cli/make_big_embedding.py): int64 id 2^24 + 1 picks its
// own row, as in Keras; the same id as a float32 rounds to 2^24 and picks that row.
TEST_F(Cli, IdsAbove2To24AreExact) {
  const std::string model = m("keras3", "big_embedding.keras");
  const Array x = recur_cli::read_npy(m("keras3", "big_embedding_x.npy"));
  ASSERT_EQ(x.ints, (std::vector<std::int64_t>{(1 << 24) + 1, 5, 1 << 24}));
  const Result v = run("verify " + model + " -i " + m("keras3", "big_embedding_x.npy") + " -e " +
                       m("keras3", "big_embedding_y.npy") + " --atol 0");
  EXPECT_EQ(v.rc, 0) << v.out << v.err;
  EXPECT_NE(v.out.find("max abs error: 0.000000e+00"), std::string::npos) << v.out;
  EXPECT_EQ(v.err.find("note:"), std::string::npos) << v.err;
  // Streamed too.
  const Result s = run("stream " + model + " -i " + m("keras3", "big_embedding_x.npy") + " -o " + tmp("s.npy"));
  ASSERT_EQ(s.rc, 0) << s.err;
  EXPECT_EQ(recur_cli::read_npy(tmp("s.npy")).data, (std::vector<float>{7.0f, 1.5f, 3.0f}));
  // As float32 the id is 2^24 already when the file is read: row 2^24, as Keras would give it too.
  recur_cli::write_npy(tmp("f.npy"), f32(x.shape, x.data));
  const Result f = run("run " + model + " -i " + tmp("f.npy") + " -o " + tmp("f.npy.out.npy"));
  ASSERT_EQ(f.rc, 0) << f.err;
  EXPECT_EQ(recur_cli::read_npy(tmp("f.npy.out.npy")).data, (std::vector<float>{3.0f, 1.5f, 3.0f}));
}

// The outputs of positional recur_model_run_inputs (float inputs, every output concatenated),
// split per output: what the tool gave before it called recur_model_run_named.
std::vector<Array> positional_run(const std::string& file, const std::vector<Array>& inputs) {
  recur_model* model = nullptr;
  EXPECT_EQ(recur_model_open(&model, file.c_str()), RECUR_OK) << recur_last_error();
  std::vector<int32_t> ts;
  std::vector<float> x;
  for (const Array& a : inputs) {
    ts.push_back(a.shape.size() > 1 ? static_cast<int32_t>(a.shape[1]) : 0);
    x.insert(x.end(), a.data.begin(), a.data.end());
  }
  const int32_t batch = static_cast<int32_t>(inputs[0].shape[0]), n = static_cast<int32_t>(ts.size());
  size_t len = 0;
  EXPECT_EQ(recur_model_outputs_length(model, batch, ts.data(), n, &len), RECUR_OK) << recur_last_error();
  std::vector<float> y(len);
  EXPECT_EQ(recur_model_run_inputs(model, batch, ts.data(), n, x.data(), x.size(), nullptr, 0, y.data(), y.size()),
            RECUR_OK)
      << recur_last_error();
  int32_t outs = 0;
  recur_model_num_outputs(model, &outs);
  std::vector<Array> out;
  std::size_t off = 0;
  for (int32_t k = 0; k < outs; ++k) {
    int64_t dims[RECUR_MAX_RANK];
    int32_t rank = 0;
    EXPECT_EQ(recur_model_output_dims(model, k, batch, ts.data(), n, dims, &rank), RECUR_OK);
    Array a = f32(std::vector<std::int64_t>(dims, dims + rank), {});
    std::size_t count = 1;
    for (int64_t d : a.shape) count *= static_cast<std::size_t>(d);
    a.data.assign(y.begin() + static_cast<long>(off), y.begin() + static_cast<long>(off + count));
    off += count;
    out.push_back(std::move(a));
  }
  recur_model_destroy(model);
  return out;
}

// The tool's named runs give bit for bit what the positional call gives, on every bundled model.
TEST_F(Cli, NamedRunsMatchThePositionalCall) {
  for (const std::string d : {"keras2", "keras3"})
    for (const std::string name : {"tokens", "bigru", "binone"})
      for (const std::string ext : {"keras", "h5"}) {
        SCOPED_TRACE(d + "/" + name + "." + ext);
        const std::string file = m(d, name + "." + ext), x = m(d, name + "_x.npy");
        const Result r = run("run " + file + " -i " + x + " -o " + tmp("o.npz"));
        ASSERT_EQ(r.rc, 0) << r.err;
        const NamedArrays got = recur_cli::read_npz(tmp("o.npz"));
        const std::vector<Array> want = positional_run(file, {recur_cli::read_npy(x)});
        ASSERT_EQ(got.size(), want.size());
        for (std::size_t k = 0; k < want.size(); ++k) {
          EXPECT_EQ(got[k].second.shape, want[k].shape) << k;
          EXPECT_EQ(got[k].second.data, want[k].data) << k;
        }
      }
}

// Several inputs, several outputs, and a model of sequences merged together.
TEST_F(Graph, NamedRunsMatchThePositionalCall) {
  for (const std::string name : {"multi_io", "merges_mixed_masks", "seq2seq_gru"}) {
    SCOPED_TRACE(name);
    const GraphCase g = graph_case("keras3", name);
    const std::string file = graph("keras3", name, "keras");
    const Result r = run("run " + file + inputs(g, 0) + " -o " + tmp("o.npz"));
    ASSERT_EQ(r.rc, 0) << r.err;
    const NamedArrays got = recur_cli::read_npz(tmp("o.npz"));
    const std::vector<Array> want = positional_run(file, g.calls[0].inputs);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t k = 0; k < want.size(); ++k) EXPECT_EQ(got[k].second.data, want[k].data) << k;
  }
}

TEST_F(Cli, InfoSaysWhichInputsTakeIntegerIds) {
  const Result t = run("info --json " + m("keras3", "tokens.keras"));
  ASSERT_EQ(t.rc, 0) << t.err;
  const auto j = nlohmann::json::parse(t.out);
  EXPECT_EQ(j["inputs"][0]["dtype"], "int");
  EXPECT_EQ(j["inputs"][0]["token_ids"], true);
  const Result g = run("info " + graph("keras3", "multi_io", "keras"));
  EXPECT_NE(g.out.find("  seq     (B, T, 4)  float32; T: any length (declared 7)\n  static  (B, 5)     float32\n"),
            std::string::npos)
      << g.out;
}

TEST_F(Graph, OutputsChooseWhichAndInWhatOrder) {
  const GraphCase g = graph_case("keras3", "multi_io");
  const std::string model = graph("keras3", "multi_io", "keras");
  const std::string in = inputs(g, 0);
  ASSERT_EQ(run("run " + model + in + " -o " + tmp("all.npz")).rc, 0);
  const NamedArrays all = recur_cli::read_npz(tmp("all.npz"));
  // One output: named by its place among the model's outputs, so an .npy holds it too.
  Result r = run("run " + model + in + " --outputs value -o " + tmp("v.npz"));
  ASSERT_EQ(r.rc, 0) << r.err;
  NamedArrays got = recur_cli::read_npz(tmp("v.npz"));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].first, "output_1");
  EXPECT_EQ(got[0].second.data, member(all, "output_1").data);
  r = run("run " + model + in + " --outputs value -o " + tmp("v.npy"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(recur_cli::read_npy(tmp("v.npy")).data, member(all, "output_1").data);
  // Two, in the order given; --output-name is the repeatable spelling.
  for (const std::string opts : {" --outputs value,probs", " --output-name value --output-name probs"}) {
    r = run("run " + model + in + opts + " -o " + tmp("vp.npz") + " --output-dir " + tmp("dir" + std::to_string(opts.size())));
    ASSERT_EQ(r.rc, 0) << r.err;
    got = recur_cli::read_npz(tmp("vp.npz"));
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].first, "output_1");
    EXPECT_EQ(got[1].first, "output");
    EXPECT_EQ(got[1].second.data, member(all, "output").data);
    EXPECT_EQ(recur_cli::read_npy(tmp("dir" + std::to_string(opts.size()) + "/value.npy")).data, got[0].second.data);
  }
  // --output-dir writes only those chosen.
  r = run("run " + model + in + " --outputs probs --output-dir " + tmp("only"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(file_exists(tmp("only/probs.npy")));
  EXPECT_FALSE(file_exists(tmp("only/value.npy")));
  // Text and JSON on stdout.
  r = run("run " + model + in + " --outputs value,probs");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out.find("value: (3, 2)\n"), 0u) << r.out;
  EXPECT_NE(r.out.find("probs: (3, 3)\n"), std::string::npos) << r.out;
  r = run("run " + model + in + " --outputs value --json");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.size(), 1u);
  EXPECT_EQ(j["value"]["dims"], nlohmann::json::array({3, 2}));
  // stream gives the chosen ones too.
  r = run("stream " + model + in + " --chunk 3 --outputs value -o " + tmp("s.npz"));
  ASSERT_EQ(r.rc, 0) << r.err;
  got = recur_cli::read_npz(tmp("s.npz"));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_LE(max_abs(got[0].second, member(all, "output_1")), 1e-6);
  // Errors name the option and list the outputs; nothing is written.
  r = run("run " + model + in + " --outputs nope -o " + tmp("e.npz"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("recur: --outputs: the model has no output 'nope'; its outputs are probs, value\n"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(file_exists(tmp("e.npz")));
  r = run("run " + model + in + " --outputs value,value");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--outputs: 'value' is given twice"), std::string::npos) << r.err;
  r = run("run " + model + in + " --outputs value,");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--outputs value,: an empty name"), std::string::npos) << r.err;
  r = run("stream " + model + in + " --outputs nope");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("its outputs are probs, value"), std::string::npos) << r.err;
  r = run("run " + m("keras3", "tokens.keras") + " -l gru -i " + m("keras3", "layer_gru_x.npy") + " --outputs output");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--outputs chooses among a model's outputs"), std::string::npos) << r.err;
}

TEST_F(Cli, OutputsOfOneKeras3Layer) {
  // binone's two outputs are both called 'bin' (one Bidirectional's): 'bin:k' picks one.
  const std::string run_args = "run " + m("keras3", "binone.keras") + " -i " + m("keras3", "binone_x.npy");
  Result r = run(run_args + " --outputs bin");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--outputs: 'bin' names 2 outputs of one layer; ask for 'bin:0' to 'bin:1'"), std::string::npos)
      << r.err;
  r = run(run_args + " --outputs bin:1 -o " + tmp("o.npz"));
  ASSERT_EQ(r.rc, 0) << r.err;
  const NamedArrays got = recur_cli::read_npz(tmp("o.npz"));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].first, "output_1");
  EXPECT_LE(max_abs(got[0].second, member(recur_cli::read_npz(m("keras3", "binone_y.npz")), "output_1")), 1e-5);
  r = run(run_args + " --outputs bin:2");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("its outputs are bin:0, bin:1"), std::string::npos) << r.err;
}

TEST_F(Graph, VerifyComparesOnlyTheChosenOutputs) {
  const GraphCase g = graph_case("keras3", "multi_io");
  const std::string model = graph("keras3", "multi_io", "keras");
  const std::string in = inputs(g, 0);
  // Keras's outputs, with probs spoiled: only a verify that leaves probs out passes.
  GraphCase spoiled = g;
  for (float& v : spoiled.calls[0].outputs[0].data) v += 1.0f;
  const std::string want = expected(spoiled, 0);
  Result r = run("verify " + model + in + " -e " + want);
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  r = run("verify " + model + in + " -e " + want + " --outputs value");
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("elements: 6\n"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("'output' in " + want + " is not compared (not among --outputs)"), std::string::npos) << r.err;
  // An expected array for no output at all is still an error.
  recur_cli::write_npy(tmp("y.npy"), g.calls[0].outputs[1]);
  r = run("verify " + model + in + " -e nope=" + tmp("y.npy") + " --outputs value");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("no output is called 'nope'"), std::string::npos) << r.err;
  // By name: value=y.npy.
  r = run("verify " + model + in + " -e value=" + tmp("y.npy") + " --outputs value");
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
}

TEST_F(Cli, LogPrintsWhatTheLibraryDecided) {
  const std::string args = m("keras3", "tokens.keras") + " -i " + m("keras3", "tokens_x.npy");
  Result r = run("run " + args);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err.find("recur: info:"), std::string::npos) << "off by default: " << r.err;
  for (const std::string opt : {"-v", "--log info", "--log debug", "--verbose"}) {
    SCOPED_TRACE(opt);
    r = run("run " + args + " " + opt);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_NE(r.err.find("recur: info: CPU kernels: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("recur: info: opened model '" + m("keras3", "tokens.keras") + "'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("recur: info: layer 'gru' (GRU): device cpu -> cpu, route cpu"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("recur: "), std::string::npos) << "the log goes to stderr: " << r.out;
  }
  // Before the subcommand too, and on every subcommand.
  r = run("--log info info " + m("keras3", "tokens.keras"));
  EXPECT_NE(r.err.find("recur: info: opened model"), std::string::npos) << r.err;
  r = run("-v devices");
  EXPECT_NE(r.err.find("recur: info: CPU kernels: "), std::string::npos) << r.err;
  // Warnings and errors only: nothing here.
  r = run("run " + args + " --log warning");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.err.find("recur: info:"), std::string::npos) << r.err;
  r = run("run " + args + " --log loud");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("--log"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("loud"), std::string::npos) << r.err;
}

// Starts `recur <args>` in the background with stdout and stderr in files; returns its pid.
pid_t spawn(const std::string& bin, const std::vector<std::string>& args, const std::string& out, const std::string& err) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(99);
  std::vector<char*> argv{const_cast<char*>(bin.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(bin.c_str(), argv.data());
  _exit(98);
}

class Cancel : public Cli, public ::testing::WithParamInterface<std::tuple<std::string, int>> {};

// A long run (64 rows x 100000 token ids, seconds) stopped by a signal once it has started: it
// says "cancelled", exits 128 + the signal, and leaves no output file, whole or partial.
TEST_P(Cancel, SignalStopsTheRunAndWritesNothing) {
  const auto& [command, sig] = GetParam();
  const std::int64_t B = 64, T = 100000;
  std::vector<std::uint8_t> ids(static_cast<std::size_t>(B * T));
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::uint8_t>((i * 7) % 20);
  write_ints(tmp("long.npy"), "|u1", {B, T}, ids);
  std::vector<std::string> args{command, m("keras3", "tokens.keras"), "-i", tmp("long.npy"), "-v"};
  if (command == "verify") {
    args.insert(args.end(), {"-e", m("keras3", "tokens_y.npy")});
  } else {
    args.insert(args.end(), {"-o", tmp("out.npz"), "--output-dir", tmp("dir")});
    if (command == "stream") args.insert(args.end(), {"--chunk", "5000"});
  }
  const pid_t pid = spawn(kBin, args, tmp("stdout"), tmp("stderr"));
  ASSERT_GT(pid, 0);
  // Started: the model is open and placed (the log says so on stderr, unbuffered) ...
  const std::string placed = "recur: info: model '" + m("keras3", "tokens.keras") + "': device";
  for (int i = 0; i < 1000 && slurp(tmp("stderr")).find(placed) == std::string::npos; ++i) usleep(10000);
  ASSERT_NE(slurp(tmp("stderr")).find(placed), std::string::npos) << slurp(tmp("stderr"));
  usleep(300000);  // ... and is into the run (the inputs take milliseconds to read)
  ASSERT_EQ(kill(pid, sig), 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 128 + sig);
  const std::string err = slurp(tmp("stderr"));
  EXPECT_NE(err.find("recur: cancelled\n"), std::string::npos) << err;
  EXPECT_EQ(slurp(tmp("stdout")).find("wrote"), std::string::npos);
  EXPECT_EQ(slurp(tmp("stdout")).find("OK"), std::string::npos);
  // Nothing written: neither the outputs nor a temporary beside them.
  EXPECT_FALSE(file_exists(tmp("out.npz")));
  EXPECT_FALSE(file_exists(tmp("dir/dense.npy")));
  for (const char* name : {"out.npz", "dir/dense.npy"}) {
    const std::string part = tmp(name) + ".part-" + std::to_string(pid);
    EXPECT_FALSE(file_exists(part)) << part;
  }
}

INSTANTIATE_TEST_SUITE_P(Signals, Cancel,
                         ::testing::Combine(::testing::Values("run", "stream", "verify"), ::testing::Values(SIGINT, SIGTERM)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + (std::get<1>(info.param) == SIGINT ? "_sigint" : "_sigterm");
                         });

// ---------------------------------------------------------------------------------- text inputs

namespace {

// A graphs/text fixture case: its Keras texts and outputs.
nlohmann::json text_case(const std::string& dialect, const std::string& name) {
  std::ifstream f(std::string(RECUR_GRAPH_DIR) + "/text/" + dialect + ".json");
  const auto doc = nlohmann::json::parse(f);
  for (const auto& c : doc.at("cases"))
    if (c.at("name") == name) return c;
  ADD_FAILURE() << "no case " << name;
  return {};
}

// The case's texts as a .txt: one row per line, a row's texts joined by tabs.
std::string text_lines(const nlohmann::json& input) {
  const auto shape = input.at("shape").get<std::vector<int64_t>>();
  const auto texts = input.at("data").get<std::vector<std::string>>();
  const std::size_t width = shape.size() > 1 ? static_cast<std::size_t>(shape[1]) : 1;
  std::string out;
  for (std::size_t i = 0; i < texts.size(); ++i) out += texts[i] + ((i + 1) % width == 0 ? "\n" : "\t");
  return out;
}

}  // namespace

TEST_F(Cli, RunTextModelsFromTxtMatchKeras) {
  for (const char* dialect : {"keras2", "keras3"})
    for (const char* name : {"text_vectorization_lstm", "string_lookup_gru", "text_vectorization_ragged_bigrams"}) {
      SCOPED_TRACE(std::string(dialect) + "/" + name);
      const auto c = text_case(dialect, name);
      const auto& call = c.at("calls")[0];
      std::ofstream(tmp("in.txt"), std::ios::binary) << text_lines(call.at("inputs")[0]);
      const Result r = run("run " + std::string(RECUR_GRAPH_DIR) + "/../" + c.at("files")[0].get<std::string>() +
                           " -i text=" + tmp("in.txt") + " -o " + tmp("o.npz"));
      ASSERT_EQ(r.rc, 0) << r.err;
      const NamedArrays out = recur_cli::read_npz(tmp("o.npz"));
      ASSERT_EQ(out.size(), 1u);
      const auto want = call.at("outputs")[0].at("data").get<std::vector<float>>();
      ASSERT_EQ(out[0].second.data.size(), want.size());
      for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(out[0].second.data[i], want[i], 1e-5) << i;
    }
}

TEST_F(Cli, InfoSaysStrings) {
  const Result r = run("info " + std::string(RECUR_GRAPH_DIR) + "/text/keras3/text_vectorization_lstm.keras");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("text  (B, 1)  strings"), std::string::npos) << r.out;
}

TEST_F(Cli, BadTextInputsAreRefused) {
  const std::string tv = std::string(RECUR_GRAPH_DIR) + "/text/keras3/text_vectorization_lstm.keras";
  const std::string sl = std::string(RECUR_GRAPH_DIR) + "/text/keras3/string_lookup_gru.keras";
  std::ofstream(tmp("bad.txt"), std::ios::binary) << "ok\ncaf\xC3\n";
  Result r = run("run " + tv + " -i " + tmp("bad.txt"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("line 2: not valid UTF-8"), std::string::npos) << r.err;
  std::ofstream(tmp("empty.txt"), std::ios::binary) << "";
  r = run("run " + tv + " -i " + tmp("empty.txt"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("holds no lines"), std::string::npos) << r.err;
  std::ofstream(tmp("two.txt"), std::ios::binary) << "a\tb\n";
  r = run("run " + sl + " -i " + tmp("two.txt"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("line 1 holds 2 tab-separated texts; input 'text' takes 5 per row"), std::string::npos) << r.err;
  r = run("run " + tv + " -i " + m("keras2", "tokens_x.npy"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("input 'text' holds strings"), std::string::npos) << r.err;
  std::ofstream(tmp("ok.txt"), std::ios::binary) << "a\nb\nc\n";
  r = run("run " + m("keras2", "tokens.keras") + " -i " + tmp("ok.txt"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("a .txt of texts is for a string input"), std::string::npos) << r.err;
  r = run("stream " + tv + " -i " + tmp("ok.txt"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("text_vectorization"), std::string::npos) << r.err;
}

// ------------------------------------------------------------------------- a bad GPU plugin

#if defined(__linux__)  // the plugin file is checked as ELF on Linux
namespace {

// The shared library the tests link: a real ELF file to cut short.
std::string recur_library_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&recur_version_string), &info) == 0 || !info.dli_fname) return {};
  return info.dli_fname;
}

// A truncated copy of a library (an interrupted install) must not crash `recur devices` (mapping
// one raised SIGBUS in dlopen): it reports why the GPU is unavailable and exits 0 as documented,
// and a run with --device auto runs on the CPU saying why.
TEST_F(Cli, DevicesAndAutoSurviveABadPluginFile) {
  const std::string lib = recur_library_path();
  ASSERT_FALSE(lib.empty());
  const std::string elf = slurp(lib);
  ElfW(Ehdr) eh;
  ASSERT_GT(elf.size(), sizeof eh);
  std::memcpy(&eh, elf.data(), sizeof eh);
  std::size_t in_last_load = 0;
  for (int i = 0; i < eh.e_phnum; ++i) {
    ElfW(Phdr) ph;
    std::memcpy(&ph, elf.data() + eh.e_phoff + static_cast<std::size_t>(i) * sizeof ph, sizeof ph);
    if (ph.p_type == PT_LOAD && ph.p_filesz > 1) in_last_load = static_cast<std::size_t>(ph.p_offset + ph.p_filesz / 2);
  }
  ASSERT_GT(in_last_load, 0u);
  std::ofstream(tmp("cut.so"), std::ios::binary) << elf.substr(0, in_last_load);
  std::ofstream(tmp("empty.so"), std::ios::binary) << "";
  ASSERT_EQ(::mkdir(tmp("dir.so").c_str(), 0700), 0);
  const std::pair<std::string, std::string> cases[] = {
      {"cut.so", "is truncated: its PT_LOAD segment"}, {"empty.so", "is empty"}, {"dir.so", "is a directory"}};
  for (const auto& [file, why] : cases) {
    SCOPED_TRACE(file);
    const std::string env = "RECUR_CUDA_PLUGIN='" + tmp(file) + "' ";
    Result r = run_with_env(env, "devices");
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_NE(r.out.find("cuda devices: 0"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("cuda: unavailable: cuda:0: the GPU plugin " + tmp(file) + " " + why), std::string::npos) << r.out;
    r = run_with_env(env, "run " + m("keras3", "bigru.keras") + " -i " + m("keras3", "bigru_x.npy") + " --device auto -o " +
                              tmp("y.npy"));
    EXPECT_EQ(r.rc, 0) << r.err;
    EXPECT_NE(r.out.find("device: cpu (auto: the GPU plugin " + tmp(file) + " " + why), std::string::npos) << r.out;
  }
}

}  // namespace
#endif

// ------------------------------------------------------------------------- names are data

#include "../c/keras_config_edit.hpp"

namespace {

// Every string in the config equal to `from` (a layer's name and each reference to it) becomes `to`.
void rename_in(nlohmann::json& node, const std::string& from, const std::string& to) {
  if (node.is_string() && node.get<std::string>() == from) node = to;
  else if (node.is_array() || node.is_object())
    for (auto& child : node) rename_in(child, from, to);
}

// A copy of `src` at `dst` with its config.json edited.
void edited_copy(const std::string& src, const std::string& dst, const std::function<void(nlohmann::json&)>& edit) {
  auto members = keras_edit::read_members(src);
  for (auto& [name, data] : members)
    if (name == "config.json") {
      nlohmann::json c = nlohmann::json::parse(data);
      edit(c);
      data = c.dump();
    }
  keras_edit::write_members(dst, members);
}

// Bytes a terminal acts on: control bytes other than the newline, and DEL.
bool has_raw_control(const std::string& s) {
  for (unsigned char c : s)
    if ((c < 0x20 && c != '\n') || c == 0x7F) return true;
  return false;
}

bool has_line_starting(const std::string& s, const std::string& start) {
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(start, 0) == 0) return true;
  return false;
}

std::vector<std::string> entries_of(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

const std::string kEscName = "\x1b]0;title\x07\x1b[31mred\nrecur: spoofed";

// A Keras 3 model whose four outputs are layers named with terminal escapes, a newline, path parts
// and a Windows device name.
std::string hostile_names_model(const std::string& dst, const std::string& tokens) {
  edited_copy(tokens, dst, [](nlohmann::json& c) {
    rename_in(c, "gru", kEscName);
    rename_in(c, "lstm", "a\\b/../c");
    rename_in(c, "dense", "..");
    rename_in(c, "embedding", "CON");
    c["config"]["output_layers"] = nlohmann::json::array(
        {{kEscName, 0, 0}, {"a\\b/../c", 0, 0}, {"..", 0, 0}, {"CON", 0, 0}});
  });
  return dst;
}

TEST_F(Cli, NamesAreShownEscapedAndNeverStartALine) {
  const std::string model = hostile_names_model(tmp("names.keras"), m("keras3", "tokens.keras"));
  Result r = run("info " + model);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(has_raw_control(r.out + r.err)) << r.out << r.err;
  EXPECT_FALSE(has_line_starting(r.out, "recur: spoofed")) << r.out;
  EXPECT_NE(r.out.find("\\x1B]0;title\\x07\\x1B[31mred\\x0Arecur: spoofed"), std::string::npos) << r.out;
  // JSON carries the names as they are (escaped by JSON itself).
  r = run("info --json " + model);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(has_raw_control(r.out + r.err));
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["outputs"][0]["name"], kEscName);

  for (const std::string& form : {std::string("-o -"), std::string("-o - --json"), std::string("--log debug -o -")}) {
    SCOPED_TRACE(form);
    r = run("run " + model + " -i " + m("keras3", "tokens_x.npy") + " " + form);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_FALSE(has_raw_control(r.out + r.err)) << r.out << r.err;
    EXPECT_FALSE(has_line_starting(r.out + r.err, "recur: spoofed")) << r.out << r.err;
  }
  // A message that quotes a name: escaped too.
  r = run("run " + model + " -i " + m("keras3", "tokens_x.npy") + " --outputs nothing");
  EXPECT_EQ(r.rc, 2);
  EXPECT_FALSE(has_raw_control(r.err)) << r.err;
  EXPECT_FALSE(has_line_starting(r.err, "recur: spoofed")) << r.err;
  EXPECT_NE(r.err.find("\\x0Arecur: spoofed"), std::string::npos) << r.err;
}

TEST_F(Cli, OutputFilesGetSafeDistinctNames) {
  const std::string model = hostile_names_model(tmp("names.keras"), m("keras3", "tokens.keras"));
  ASSERT_EQ(::mkdir(tmp("out").c_str(), 0700), 0);
  const Result r = run("run " + model + " -i " + m("keras3", "tokens_x.npy") + " --output-dir " + tmp("out/d"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(has_raw_control(r.out + r.err)) << r.out << r.err;
  // Everything lands in the directory, under names safe on every OS.
  EXPECT_EQ(entries_of(tmp("out")), std::vector<std::string>{"d"});
  EXPECT_EQ(entries_of(tmp("out/d")), (std::vector<std::string>{"_CON.npy", "_]0;title__[31mred_recur_ spoofed.npy",
                                                               "__.npy", "a_b_.._c.npy"}));
  const Array gru = recur_cli::read_npy(tmp("out/d/_]0;title__[31mred_recur_ spoofed.npy"));
  EXPECT_EQ(gru.shape, (std::vector<std::int64_t>{3, 6, 5}));
}

TEST_F(Cli, StatesMembersGetSafeNamesAndReadBack) {
  const std::string model = tmp("stateful.keras");
  edited_copy(m("keras3", "tokens.keras"), model, [](nlohmann::json& c) {
    // (No '/': the library reads one in a states name as a Bidirectional half.)
    rename_in(c, "gru", "..\\\x1b[2Jst");
    for (auto& l : c["config"]["layers"]) {
      if (l["class_name"] == "InputLayer") l["config"]["batch_shape"] = {3, 6};
      if (l["class_name"] == "GRU") l["config"]["stateful"] = true;
      if (l.contains("build_config") && l["build_config"].contains("input_shape")) l["build_config"]["input_shape"][0] = 3;
    }
  });
  Result r = run("run " + model + " -i " + m("keras3", "tokens_x.npy") + " --states-out " + tmp("s.npz") + " -o " +
                 tmp("y.npy"));
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(has_raw_control(r.out + r.err)) << r.out << r.err;
  std::vector<std::string> members;
  for (const auto& kv : keras_edit::read_members(tmp("s.npz"))) members.push_back(kv.first);
  EXPECT_EQ(members, std::vector<std::string>{"____[2Jst.npy"});
  r = run("run " + model + " -i " + m("keras3", "tokens_x.npy") + " --states-in " + tmp("s.npz") + " -o " + tmp("y2.npy"));
  EXPECT_EQ(r.rc, 0) << r.err;
  r = run("info " + model);
  EXPECT_FALSE(has_raw_control(r.out)) << r.out;
  EXPECT_NE(r.out.find("stateful:      yes (..\\\\x1B[2Jst)"), std::string::npos) << r.out;
}

TEST_F(Cli, EmptyAndNulNamesAreRefusedWithTheLayerIndex) {
  edited_copy(m("keras3", "tokens.keras"), tmp("empty.keras"), [](nlohmann::json& c) { rename_in(c, "gru", ""); });
  edited_copy(m("keras3", "tokens.keras"), tmp("nul.keras"),
              [](nlohmann::json& c) { rename_in(c, "gru", std::string("g\0ru\x1b[2J", 8)); });
  Result r = run("info " + tmp("empty.keras"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("layer 3 (GRU) has an empty name"), std::string::npos) << r.err;
  r = run("info " + tmp("nul.keras"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_FALSE(has_raw_control(r.err)) << r.err;
  EXPECT_EQ(r.err.find('\0'), std::string::npos);
  EXPECT_NE(r.err.find("layer 3 (GRU) is named 'g\\x00ru\\x1B[2J', which holds a NUL byte"), std::string::npos) << r.err;
}

}  // namespace
