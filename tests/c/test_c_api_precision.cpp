// SPDX-License-Identifier: Apache-2.0
// recur_layer_set_precision / recur_model_set_precision (recur.h, "Reduced precision weights"):
// float32 unchanged against Keras's numbers, bf16 and int8 close to them, every error path, and
// the GPU refusal (run with the GPU emulator plugin by c_api_device_gpu_emulator, whose filter
// CApiDevice* takes the CApiDevicePrecision tests).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "c_api_test_util.hpp"

namespace {

using json = nlohmann::json;
using Model = rt::Model;

const std::string kKeras = RECUR_TEST_KERAS_DIR;

Model open_case(const std::string& name, const std::string& suite = "") {
  recur_model* m = nullptr;
  const std::string dir = kKeras + "/graphs/" + (suite.empty() ? "" : suite + "/") + "keras2/";
  EXPECT_RECUR_OK(recur_model_open(&m, (dir + name + ".keras").c_str()));
  return Model(m);
}

// The first call of a fixture case: inputs concatenated, timesteps, expected outputs concatenated.
struct Call {
  int32_t batch = 0;
  std::vector<int32_t> timesteps;
  std::vector<float> inputs, outputs;
};

Call first_call(const std::string& name) {
  std::ifstream f(kKeras + "/graphs/keras2.json");
  const json doc = json::parse(f);
  Call k;
  for (const auto& c : doc.at("cases")) {
    if (c.at("name") != name) continue;
    const auto& call = c.at("calls").at(0);
    for (const auto& x : call.at("inputs")) {
      const auto shape = x.at("shape").get<std::vector<int64_t>>();
      k.batch = static_cast<int32_t>(shape[0]);
      k.timesteps.push_back(shape.size() > 1 ? static_cast<int32_t>(shape[1]) : 0);
      for (float v : x.at("data").get<std::vector<float>>()) k.inputs.push_back(v);
    }
    for (const auto& y : call.at("outputs"))
      for (float v : y.at("data").get<std::vector<float>>()) k.outputs.push_back(v);
    return k;
  }
  ADD_FAILURE() << "no fixture case " << name;
  return k;
}

std::vector<float> run(const recur_model* m, const Call& c) {
  const int32_t n_in = static_cast<int32_t>(c.timesteps.size());
  size_t n = 0;
  EXPECT_RECUR_OK(recur_model_outputs_length(m, c.batch, c.timesteps.data(), n_in, &n));
  std::vector<float> y(n);
  EXPECT_RECUR_OK(recur_model_run_inputs(m, c.batch, c.timesteps.data(), n_in, c.inputs.data(), c.inputs.size(),
                                         nullptr, 0, y.data(), y.size()));
  return y;
}

double max_error(const std::vector<float>& got, const std::vector<float>& want) {
  EXPECT_EQ(got.size(), want.size());
  double e = 0.0;
  for (std::size_t i = 0; i < got.size() && i < want.size(); ++i) e = std::max(e, double(std::fabs(got[i] - want[i])));
  return e;
}

std::string precision_of(const recur_model* m) {
  const char* p = nullptr;
  EXPECT_RECUR_OK(recur_model_get_precision(m, &p));
  return p ? p : "";
}

// Keras's outputs of these cases are of order 1 (tanh/sigmoid gates, small Dense heads): bf16
// and int8 weights move them by well under 0.05 (docs/precision.md lists the errors).
constexpr double kReducedBound = 0.05;

TEST(CApiPrecision, Float32IsKerasNumbersBitForBitAndReducedPrecisionsStayClose) {
  RECUR_SKIP_WITHOUT_FILES();
  for (const char* name : {"multi_io", "branches_concat", "simple_rnn", "bidirectional_return_state",
                           "stateful_functional_lstm_gru"}) {
    Model m = open_case(name);
    const Call c = first_call(name);
    EXPECT_EQ(precision_of(m.get()), "float32");
    const std::vector<float> plain = run(m.get(), c);
    const double plain_error = max_error(plain, c.outputs);
    EXPECT_LT(plain_error, 1e-5) << name;
    ASSERT_RECUR_OK(recur_model_reset_states(m.get()));
    ASSERT_RECUR_OK(recur_model_set_precision(m.get(), "float32"));
    const std::vector<float> explicit_f32 = run(m.get(), c);
    EXPECT_EQ(explicit_f32, plain) << name << ": float32 set explicitly";
    EXPECT_EQ(max_error(explicit_f32, c.outputs), plain_error) << name;
    for (const char* p : {"bf16", "int8"}) {
      ASSERT_RECUR_OK(recur_model_reset_states(m.get()));
      ASSERT_RECUR_OK(recur_model_set_precision(m.get(), p));
      EXPECT_EQ(precision_of(m.get()), p);
      const double e = max_error(run(m.get(), c), c.outputs);
      EXPECT_LT(e, kReducedBound) << name << " " << p;
      EXPECT_GT(e, plain_error) << name << " " << p << " changed nothing";
    }
    ASSERT_RECUR_OK(recur_model_reset_states(m.get()));
    ASSERT_RECUR_OK(recur_model_set_precision(m.get(), "float32"));
    EXPECT_EQ(run(m.get(), c), plain) << name << ": back to float32";
  }
}

TEST(CApiPrecision, ModelLayersTakeTheModelsPrecision) {
  RECUR_SKIP_WITHOUT_FILES();
  Model m = open_case("multi_io");
  ASSERT_RECUR_OK(recur_model_set_precision(m.get(), "int8"));
  int found = 0;
  for (int32_t i = 0;; ++i) {
    const char *name = nullptr, *cls = nullptr;
    if (recur_model_layer(m.get(), i, &name, &cls, nullptr, nullptr, nullptr, nullptr) != RECUR_OK) break;
    if (std::string(cls) != "GRU") continue;
    recur_layer* l = nullptr;
    ASSERT_RECUR_OK(recur_model_get_layer(m.get(), name, &l));
    rt::Layer layer(l);
    const char* p = nullptr;
    ASSERT_RECUR_OK(recur_layer_get_precision(l, &p));
    EXPECT_STREQ(p, "int8");
    ++found;
  }
  EXPECT_EQ(found, 1);
}

TEST(CApiPrecision, LayerPrecisionRoundTripsAndKeepsTheWeights) {
  rt::Layer l = rt::make(rt::options(RECUR_LAYER_GRU, 7, 5));
  const char* p = nullptr;
  ASSERT_RECUR_OK(recur_layer_get_precision(l.get(), &p));
  EXPECT_STREQ(p, "float32");
  const std::vector<float> before = rt::all_weights(l.get());
  for (const char* name : {"bf16", "int8", "float32"}) {
    ASSERT_RECUR_OK(recur_layer_set_precision(l.get(), name));
    ASSERT_RECUR_OK(recur_layer_get_precision(l.get(), &p));
    EXPECT_STREQ(p, name);
    EXPECT_EQ(rt::all_weights(l.get()), before) << name;
  }
}

TEST(CApiPrecision, BadNamesAndNullsAreRefused) {
  rt::Layer l = rt::make(rt::options(RECUR_LAYER_LSTM, 3, 2));
  for (const char* bad : {"", "fp16", "Int8", "float", "bfloat16"}) {
    EXPECT_RECUR_ERR(recur_layer_set_precision(l.get(), bad), RECUR_ERR_INVALID_ARGUMENT,
                     "expected \"float32\" (the default, Keras's numbers), \"bf16\" or \"int8\"");
  }
  EXPECT_RECUR_ERR(recur_layer_set_precision(l.get(), nullptr), RECUR_ERR_INVALID_ARGUMENT, "precision");
  EXPECT_RECUR_ERR(recur_layer_set_precision(nullptr, "int8"), RECUR_ERR_INVALID_ARGUMENT, "layer");
  EXPECT_RECUR_ERR(recur_layer_get_precision(l.get(), nullptr), RECUR_ERR_INVALID_ARGUMENT, "precision");
  const char* p = nullptr;
  ASSERT_RECUR_OK(recur_layer_get_precision(l.get(), &p));
  EXPECT_STREQ(p, "float32") << "a refused name changes nothing";
  EXPECT_RECUR_ERR(recur_model_set_precision(nullptr, "int8"), RECUR_ERR_INVALID_ARGUMENT, "model");
  EXPECT_RECUR_ERR(recur_model_get_precision(nullptr, &p), RECUR_ERR_INVALID_ARGUMENT, "model");
}

TEST(CApiPrecision, ModelsWithoutRecurrentLayersRefuseReducedPrecision) {
  RECUR_SKIP_WITHOUT_FILES();
  Model m = open_case("attn_causal_call", "attention");  // Dense and Attention only
  EXPECT_RECUR_ERR(recur_model_set_precision(m.get(), "int8"), RECUR_ERR_UNSUPPORTED, "no recurrent layer");
  EXPECT_RECUR_ERR(recur_model_set_precision(m.get(), "nope"), RECUR_ERR_INVALID_ARGUMENT, "\"bf16\"");
  EXPECT_RECUR_OK(recur_model_set_precision(m.get(), "float32"));
  EXPECT_EQ(precision_of(m.get()), "float32");
}

// On a GPU (the emulator plugin under c_api_device_gpu_emulator, or a real one).
TEST(CApiDevicePrecision, TheGpuRunsFloat32Only) {
  int32_t count = 0;
  ASSERT_RECUR_OK(recur_device_count(&count));
  if (count == 0) {
    recur_device_check("cuda");
    GTEST_SKIP() << "no GPU backend can run here: " << recur_last_error();
  }
  rt::Layer on_gpu = rt::make(rt::options(RECUR_LAYER_GRU, 4, 3));
  ASSERT_RECUR_OK(recur_layer_set_device(on_gpu.get(), "cuda"));
  EXPECT_RECUR_ERR(recur_layer_set_precision(on_gpu.get(), "int8"), RECUR_ERR_UNSUPPORTED,
                   "the GPU runs float32 only");
  EXPECT_RECUR_OK(recur_layer_set_precision(on_gpu.get(), "float32"));

  rt::Layer reduced = rt::make(rt::options(RECUR_LAYER_LSTM, 4, 3));
  ASSERT_RECUR_OK(recur_layer_set_precision(reduced.get(), "bf16"));
  EXPECT_RECUR_ERR(recur_layer_set_device(reduced.get(), "cuda"), RECUR_ERR_UNSUPPORTED, "the GPU runs float32 only");
  // "auto" keeps it on the CPU.
  ASSERT_RECUR_OK(recur_layer_set_device(reduced.get(), "auto"));
  recur_device_info info;
  std::memset(&info, 0, sizeof info);
  info.version = RECUR_DEVICE_INFO_VERSION;
  ASSERT_RECUR_OK(recur_layer_get_device(reduced.get(), &info));
  EXPECT_STREQ(info.backend, "cpu");

  if (!RECUR_TEST_WITH_FILES) return;
  Model m = open_case("multi_io");
  ASSERT_RECUR_OK(recur_model_set_device(m.get(), "cuda"));
  EXPECT_RECUR_ERR(recur_model_set_precision(m.get(), "int8"), RECUR_ERR_UNSUPPORTED, "the GPU runs float32 only");
  EXPECT_EQ(precision_of(m.get()), "float32");
  ASSERT_RECUR_OK(recur_model_set_device(m.get(), "cpu"));
  ASSERT_RECUR_OK(recur_model_set_precision(m.get(), "int8"));
  EXPECT_RECUR_ERR(recur_model_set_device(m.get(), "cuda"), RECUR_ERR_UNSUPPORTED, "the GPU runs float32 only");
}

}  // namespace
