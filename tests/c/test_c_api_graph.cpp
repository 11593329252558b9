// SPDX-License-Identifier: Apache-2.0
// The model-graph C ABI (0.4): inputs and outputs, runs of several inputs, stateful models and
// their states, Keras backend semantics, model streams (many streams, many threads, one model),
// models opened from memory, and every error path of those calls.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "c_api_test_util.hpp"

namespace {

using json = nlohmann::json;

const std::string kKeras = RECUR_TEST_KERAS_DIR;

using Model = rt::Model;
using Stream = rt::Stream;

std::string graph_file(const std::string& name, const char* ext = "keras") {
  return kKeras + "/graphs/keras2/" + name + "." + ext;
}

Model open(const std::string& path) {
  recur_model* m = nullptr;
  EXPECT_RECUR_OK(recur_model_open(&m, path.c_str()));
  return Model(m);
}

// Keras's first call of a fixture case: its inputs concatenated, their timesteps, its outputs.
struct Call {
  int32_t batch = 0;
  std::vector<int32_t> timesteps;
  std::vector<float> inputs;
  std::vector<std::vector<float>> outputs;
  std::vector<std::vector<int64_t>> input_shapes;
};

std::vector<Call> calls_of(const std::string& name) {
  std::ifstream f(kKeras + "/graphs/keras2.json");
  const json doc = json::parse(f);
  for (const auto& c : doc.at("cases")) {
    if (c.at("name") != name) continue;
    std::vector<Call> out;
    for (const auto& call : c.at("calls")) {
      Call k;
      for (const auto& x : call.at("inputs")) {
        const auto shape = x.at("shape").get<std::vector<int64_t>>();
        k.batch = static_cast<int32_t>(shape[0]);
        k.timesteps.push_back(shape.size() > 1 ? static_cast<int32_t>(shape[1]) : 0);
        for (float v : x.at("data").get<std::vector<float>>()) k.inputs.push_back(v);
        k.input_shapes.push_back(shape);
      }
      for (const auto& y : call.at("outputs")) k.outputs.push_back(y.at("data").get<std::vector<float>>());
      out.push_back(k);
    }
    return out;
  }
  ADD_FAILURE() << "no fixture case " << name;
  return {};
}

std::vector<float> run(const recur_model* m, const Call& c) {
  size_t n = 0;
  EXPECT_RECUR_OK(recur_model_outputs_length(m, c.batch, c.timesteps.data(), static_cast<int32_t>(c.timesteps.size()), &n));
  std::vector<float> y(n);
  EXPECT_RECUR_OK(recur_model_run_inputs(m, c.batch, c.timesteps.data(), static_cast<int32_t>(c.timesteps.size()),
                                         c.inputs.data(), c.inputs.size(), nullptr, 0, y.data(), y.size()));
  return y;
}

std::vector<float> flat(const std::vector<std::vector<float>>& parts) {
  std::vector<float> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, double tol = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol * std::max(1.0f, std::fabs(want[i]))) << i;
}

}  // namespace

TEST(CApiGraph, InputsAndOutputsInKerasOrder) {
  RECUR_SKIP_WITHOUT_FILES();  // every case opens a Keras model file
  Model m = open(graph_file("multi_io"));
  int32_t ni = 0, no = 0;
  ASSERT_RECUR_OK(recur_model_num_inputs(m.get(), &ni));
  ASSERT_RECUR_OK(recur_model_num_outputs(m.get(), &no));
  EXPECT_EQ(ni, 2);
  EXPECT_EQ(no, 2);
  const char* name = nullptr;
  int32_t rank = 0, ids = -1;
  int64_t dims[RECUR_MAX_RANK];
  ASSERT_RECUR_OK(recur_model_input(m.get(), 0, &name, &rank, dims, &ids));
  EXPECT_STREQ(name, "seq");
  EXPECT_EQ(rank, 3);
  EXPECT_EQ(dims[0], -1);
  EXPECT_EQ(dims[2], 4);
  EXPECT_EQ(ids, 0);
  ASSERT_RECUR_OK(recur_model_input(m.get(), 1, &name, &rank, dims, nullptr));
  EXPECT_STREQ(name, "static");
  EXPECT_EQ(rank, 2);
  EXPECT_EQ(dims[1], 5);
  ASSERT_RECUR_OK(recur_model_output(m.get(), 1, &name, &rank, dims));
  EXPECT_STREQ(name, "value");
  // Every out pointer may be NULL.
  EXPECT_RECUR_OK(recur_model_input(m.get(), 0, nullptr, nullptr, nullptr, nullptr));
  EXPECT_RECUR_ERR(recur_model_input(m.get(), 2, &name, &rank, dims, nullptr), RECUR_ERR_INVALID_ARGUMENT, "index 2");
  EXPECT_RECUR_ERR(recur_model_output(m.get(), -1, &name, &rank, dims), RECUR_ERR_INVALID_ARGUMENT, "index -1");
  EXPECT_RECUR_ERR(recur_model_num_inputs(m.get(), nullptr), RECUR_ERR_INVALID_ARGUMENT, "count");
  EXPECT_RECUR_ERR(recur_model_num_inputs(nullptr, &ni), RECUR_ERR_INVALID_ARGUMENT, "model");
  int32_t seq = -1;
  ASSERT_RECUR_OK(recur_model_input_sequence(m.get(), 0, &seq));
  EXPECT_EQ(seq, 1);
  ASSERT_RECUR_OK(recur_model_input_sequence(m.get(), 1, &seq));
  EXPECT_EQ(seq, 0);  // (B, 5) features
  EXPECT_RECUR_ERR(recur_model_input_sequence(m.get(), 2, &seq), RECUR_ERR_INVALID_ARGUMENT, "index 2");
  int32_t none = 0;
  ASSERT_RECUR_OK(recur_model_num_stateful_layers(m.get(), &none));
  EXPECT_EQ(none, 0);

  // Concrete output dims for a run: (B, units) here, whatever the sequence's length.
  const int32_t ts[2] = {9, 0};
  ASSERT_RECUR_OK(recur_model_output_dims(m.get(), 0, 4, ts, 2, dims, &rank));
  EXPECT_EQ(rank, 2);
  EXPECT_EQ(dims[0], 4);
  size_t in_len = 0;
  ASSERT_RECUR_OK(recur_model_inputs_length(m.get(), 4, ts, 2, &in_len));
  EXPECT_EQ(in_len, size_t(4 * 9 * 4 + 4 * 5));
  EXPECT_RECUR_ERR(recur_model_output_dims(m.get(), 0, 4, ts, 1, dims, &rank), RECUR_ERR_INVALID_ARGUMENT,
                   "num_timesteps");
  EXPECT_RECUR_ERR(recur_model_output_dims(m.get(), 0, 0, ts, 2, dims, &rank), RECUR_ERR_INVALID_ARGUMENT, "batch");
  EXPECT_RECUR_ERR(recur_model_outputs_length(m.get(), 4, nullptr, 2, &in_len), RECUR_ERR_INVALID_ARGUMENT,
                   "timesteps");
}

TEST(CApiGraph, RunInputsMatchesKerasAndChecksEveryLength) {
  RECUR_SKIP_WITHOUT_FILES();  // every case opens a Keras model file
  Model m = open(graph_file("multi_io"));
  const Call c = calls_of("multi_io").at(0);
  expect_near(run(m.get(), c), flat(c.outputs));
  size_t n = 0;
  ASSERT_RECUR_OK(recur_model_outputs_length(m.get(), c.batch, c.timesteps.data(), 2, &n));
  std::vector<float> y(n);
  const int32_t* ts = c.timesteps.data();
  EXPECT_RECUR_ERR(recur_model_run_inputs(m.get(), c.batch, ts, 2, c.inputs.data(), c.inputs.size() - 1, nullptr, 0,
                                          y.data(), y.size()),
                   RECUR_ERR_SHAPE, "'seq'");
  EXPECT_RECUR_ERR(recur_model_run_inputs(m.get(), c.batch, ts, 2, c.inputs.data(), c.inputs.size(), nullptr, 0,
                                          y.data(), y.size() + 1),
                   RECUR_ERR_SHAPE, "outputs");
  EXPECT_RECUR_ERR(recur_model_run_inputs(m.get(), c.batch, ts, 2, nullptr, c.inputs.size(), nullptr, 0, y.data(),
                                          y.size()),
                   RECUR_ERR_INVALID_ARGUMENT, "inputs");
  std::vector<uint8_t> masks(static_cast<std::size_t>(c.batch * c.timesteps[0]), 1);
  EXPECT_RECUR_ERR(recur_model_run_inputs(m.get(), c.batch, ts, 2, c.inputs.data(), c.inputs.size(), masks.data(),
                                          masks.size() - 1, y.data(), y.size()),
                   RECUR_ERR_SHAPE, "masks");
  // An all-valid mask of the sequence input changes nothing.
  ASSERT_RECUR_OK(recur_model_run_inputs(m.get(), c.batch, ts, 2, c.inputs.data(), c.inputs.size(), masks.data(),
                                         masks.size(), y.data(), y.size()));
  expect_near(y, flat(c.outputs));
  // The one-input call refuses a model with two inputs, saying what to use.
  EXPECT_RECUR_ERR(recur_model_run(m.get(), c.inputs.data(), c.inputs.size(), c.batch, 7, nullptr, 0, y.data(),
                                   y.size()),
                   RECUR_ERR_INVALID_ARGUMENT, "recur_model_run_inputs");
}

TEST(CApiGraph, OpenFromMemoryEqualsOpenFromFile) {
  RECUR_SKIP_WITHOUT_FILES();  // every case opens a Keras model file
  for (const char* ext : {"keras", "h5"}) {
    SCOPED_TRACE(ext);
    const std::vector<char> bytes = rt::file_bytes(graph_file("seq2seq_initial_state", ext));
    ASSERT_FALSE(bytes.empty());
    recur_model* raw = nullptr;
    ASSERT_RECUR_OK(recur_model_open_memory(&raw, bytes.data(), bytes.size(), "seq2seq"));
    Model m(raw);
    const Call c = calls_of("seq2seq_initial_state").at(0);
    expect_near(run(m.get(), c), flat(c.outputs));
  }
  recur_model* raw = nullptr;
  EXPECT_CREATE_ERR(raw, recur_model_open_memory(&raw, nullptr, 10, "x"), RECUR_ERR_INVALID_ARGUMENT, "data");
  const char junk[] = "definitely not a model";
  EXPECT_CREATE_ERR(raw, recur_model_open_memory(&raw, junk, 0, "x"), RECUR_ERR_INVALID_ARGUMENT, "len");
  EXPECT_CREATE_ERR(raw, recur_model_open_memory(&raw, junk, sizeof junk, "asset.bin"), RECUR_ERR_IO, "asset.bin");
  // Truncated images fail cleanly, naming what stood for the file.
  const std::vector<char> bytes = rt::file_bytes(graph_file("multi_io", "keras"));
  for (std::size_t cut : {std::size_t(10), bytes.size() / 3, bytes.size() - 5}) {
    EXPECT_CREATE_ERR(raw, recur_model_open_memory(&raw, bytes.data(), cut, "cut.keras"), RECUR_ERR_IO, "cut.keras");
  }
  const std::vector<char> h5 = rt::file_bytes(graph_file("multi_io", "h5"));
  for (std::size_t cut : {std::size_t(100), h5.size() / 2}) {
    EXPECT_CREATE_ERR(raw, recur_model_open_memory(&raw, h5.data(), cut, "cut.h5"), RECUR_ERR_IO, "cut.h5");
  }
}

TEST(CApiGraph, StatefulModelCarriesStatesBetweenRunsLikeKeras) {
  RECUR_SKIP_WITHOUT_FILES();  // every case opens a Keras model file
  Model m = open(graph_file("stateful_functional_lstm_gru", "h5"));
  int32_t stateful = 0;
  ASSERT_RECUR_OK(recur_model_is_stateful(m.get(), &stateful));
  EXPECT_EQ(stateful, 1);
  std::ifstream f(kKeras + "/graphs/keras2.json");
  const json doc = json::parse(f);
  const std::vector<Call> calls = calls_of("stateful_functional_lstm_gru");
  std::size_t i = 0;
  for (const auto& c : doc.at("cases")) {
    if (c.at("name") != "stateful_functional_lstm_gru") continue;
    for (const auto& call : c.at("calls")) {
      if (call.value("reset_states_before", false)) {
        ASSERT_RECUR_OK(recur_model_reset_states(m.get()));
      }
      expect_near(run(m.get(), calls.at(i)), flat(calls.at(i).outputs));
      ++i;
    }
  }
  ASSERT_GT(i, 2u);
  // The stateful layers, in config order, with their shapes; the input's batch is fixed.
  int32_t count = 0;
  ASSERT_RECUR_OK(recur_model_num_stateful_layers(m.get(), &count));
  ASSERT_EQ(count, 2);
  const char* lname = nullptr;
  int32_t ns = 0, batch = 0, units = 0;
  ASSERT_RECUR_OK(recur_model_stateful_layer(m.get(), 0, &lname, &ns, &batch, &units));
  EXPECT_EQ(ns, 2);  // the LSTM first: h and c
  EXPECT_EQ(batch, 3);
  const std::string stateful_layer = lname;
  ASSERT_RECUR_OK(recur_model_stateful_layer(m.get(), 1, &lname, &ns, nullptr, nullptr));
  EXPECT_EQ(ns, 1);
  EXPECT_RECUR_ERR(recur_model_stateful_layer(m.get(), 2, &lname, &ns, &batch, &units), RECUR_ERR_INVALID_ARGUMENT,
                   "index 2");
  int64_t dims[RECUR_MAX_RANK];
  ASSERT_RECUR_OK(recur_model_input(m.get(), 0, nullptr, nullptr, dims, nullptr));
  EXPECT_EQ(dims[0], 3);
  size_t len = 0;
  ASSERT_RECUR_OK(recur_model_states_length(m.get(), stateful_layer.c_str(), &len));
  EXPECT_EQ(len, size_t(2 * 3 * units));
  std::vector<float> s(len), back(len);
  for (std::size_t k = 0; k < len; ++k) s[k] = 0.01f * static_cast<float>(k);
  ASSERT_RECUR_OK(recur_model_set_states(m.get(), stateful_layer.c_str(), s.data(), s.size()));
  ASSERT_RECUR_OK(recur_model_get_states(m.get(), stateful_layer.c_str(), back.data(), back.size()));
  EXPECT_EQ(s, back);
  ASSERT_RECUR_OK(recur_model_reset_states(m.get()));
  ASSERT_RECUR_OK(recur_model_get_states(m.get(), stateful_layer.c_str(), back.data(), back.size()));
  for (float v : back) EXPECT_EQ(v, 0.0f);
  EXPECT_RECUR_ERR(recur_model_set_states(m.get(), stateful_layer.c_str(), s.data(), s.size() - 1), RECUR_ERR_SHAPE,
                   "len");
  EXPECT_RECUR_ERR(recur_model_get_states(m.get(), "no_such_layer", back.data(), back.size()),
                   RECUR_ERR_INVALID_ARGUMENT, "no_such_layer");
  EXPECT_RECUR_ERR(recur_model_states_length(m.get(), "dense", &len), RECUR_ERR_INVALID_ARGUMENT, "dense");
  // A stateful model has a fixed batch.
  Call wrong = calls.at(0);
  wrong.batch = 2;
  size_t n = 0;
  EXPECT_RECUR_ERR(recur_model_outputs_length(m.get(), 2, wrong.timesteps.data(), 1, &n), RECUR_ERR_SHAPE, "batch");
  // A model without stateful layers says so.
  Model plain = open(graph_file("multi_io"));
  ASSERT_RECUR_OK(recur_model_is_stateful(plain.get(), &stateful));
  EXPECT_EQ(stateful, 0);
}

TEST(CApiGraph, KerasBackendChoice) {
  RECUR_SKIP_WITHOUT_FILES();  // every case opens a Keras model file
  Model m = open(graph_file("multi_io"));
  EXPECT_RECUR_ERR(recur_model_set_keras_backend(m.get(), "theano"), RECUR_ERR_INVALID_ARGUMENT, "jax");
  EXPECT_RECUR_ERR(recur_model_set_keras_backend(m.get(), "jax"), RECUR_ERR_UNSUPPORTED, "Keras 3");
  EXPECT_RECUR_ERR(recur_model_set_keras_backend(m.get(), nullptr), RECUR_ERR_INVALID_ARGUMENT, "backend");
  EXPECT_RECUR_OK(recur_model_set_keras_backend(m.get(), "tensorflow"));
  recur_layer* layer = nullptr;
  ASSERT_RECUR_OK(recur_layer_create_from_json(
      &layer, R"({"class_name": "GRU", "config": {"units": 3, "return_sequences": true}})", 2, RECUR_DIALECT_KERAS3, nullptr));
  EXPECT_RECUR_OK(recur_layer_set_keras_backend(layer, "jax"));
  EXPECT_RECUR_ERR(recur_layer_set_keras_backend(layer, "numpy!"), RECUR_ERR_INVALID_ARGUMENT, "backend");
  // JAX: a masked step before the first valid one outputs h0; TensorFlow outputs zeros.
  const float x[4] = {1, 2, 3, 4};  // (1, 2, 2)
  const uint8_t mask[2] = {0, 1};
  const float h0[3] = {0.5f, -0.25f, 0.125f};
  float y_jax[6], y_tf[6];
  ASSERT_RECUR_OK(recur_layer_forward(layer, x, 4, 1, 2, mask, 2, h0, 3, 1, 0, y_jax, 6, nullptr, 0));
  ASSERT_RECUR_OK(recur_layer_set_keras_backend(layer, "tensorflow"));
  ASSERT_RECUR_OK(recur_layer_forward(layer, x, 4, 1, 2, mask, 2, h0, 3, 1, 0, y_tf, 6, nullptr, 0));
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(y_jax[k], h0[k]);
    EXPECT_EQ(y_tf[k], 0.0f);
    EXPECT_EQ(y_jax[3 + k], y_tf[3 + k]);  // the valid step is the same
  }
  recur_layer_destroy(layer);
  recur_layer* k2 = nullptr;
  ASSERT_RECUR_OK(recur_layer_create_from_json(&k2, R"({"class_name": "GRU", "config": {"units": 3}})", 2,
                                               RECUR_DIALECT_KERAS2, nullptr));
  EXPECT_RECUR_ERR(recur_layer_set_keras_backend(k2, "jax"), RECUR_ERR_UNSUPPORTED, "Keras 2");
  recur_layer_destroy(k2);
}

TEST(CApiGraph, StreamsGiveTheWholeRunsOutputs) {
  RECUR_SKIP_WITHOUT_FILES();  // every case opens a Keras model file
  Model m = open(graph_file("merges_masked"));
  const char* why = nullptr;
  ASSERT_RECUR_OK(recur_model_streamable(m.get(), &why));
  ASSERT_STREQ(why, "");
  const Call c = calls_of("merges_masked").at(0);
  const int32_t B = c.batch, T = c.timesteps[0];
  const int32_t F = static_cast<int32_t>(c.input_shapes[0][2]);
  const std::vector<float> whole = run(m.get(), c);
  // Several streams of the same batch on one model, each on its own thread, fed 1, 2, 3... steps.
  auto stream_all = [&](std::vector<float>& got) {
    recur_model_state* raw = nullptr;
    ASSERT_RECUR_OK(recur_model_state_create(&raw, m.get(), B));
    Stream s(raw);
    std::vector<std::vector<float>> outs(6);
    for (int32_t t0 = 0, n = 1; t0 < T; t0 += n, ++n) {
      n = std::min(n, T - t0);
      std::vector<float> piece;
      for (int32_t b = 0; b < B; ++b)
        piece.insert(piece.end(), c.inputs.begin() + (b * T + t0) * F, c.inputs.begin() + (b * T + t0 + n) * F);
      size_t in_len = 0, out_len = 0;
      ASSERT_RECUR_OK(recur_model_state_lengths(s.get(), n, &in_len, &out_len));
      ASSERT_EQ(in_len, piece.size());
      int64_t d[RECUR_MAX_RANK];
      int32_t r = 0;
      ASSERT_RECUR_OK(recur_model_state_output_dims(s.get(), 5, n, d, &r));
      ASSERT_EQ(r, 3);
      EXPECT_EQ(d[0], B);
      EXPECT_EQ(d[1], n);  // the steps of this call
      EXPECT_EQ(static_cast<size_t>(6 * d[0] * d[1] * d[2]), out_len);
      std::vector<float> y(out_len);
      ASSERT_RECUR_OK(recur_model_state_step(s.get(), n, piece.data(), piece.size(), nullptr, 0, y.data(), y.size()));
      // Six (B, n, u) outputs: put each row's steps back in (B, T, u) order.
      const std::size_t u = y.size() / 6 / static_cast<std::size_t>(B * n);
      for (std::size_t k = 0; k < 6; ++k) {
        if (outs[k].empty()) outs[k].assign(static_cast<std::size_t>(B * T) * u, 0.0f);
        for (int32_t b = 0; b < B; ++b)
          std::copy(y.begin() + static_cast<long>(k * B * n * u + b * n * u),
                    y.begin() + static_cast<long>(k * B * n * u + (b + 1) * n * u),
                    outs[k].begin() + static_cast<long>((b * T + t0) * u));
      }
    }
    got = flat(outs);
  };
  std::vector<std::vector<float>> results(4);
  std::vector<std::thread> threads;
  for (auto& r : results) threads.emplace_back([&] { stream_all(r); });
  for (auto& t : threads) t.join();
  for (const auto& r : results) expect_near(r, whole, 1e-6);

  // A state outlives its model, and reset starts a new stream.
  recur_model_state* raw = nullptr;
  ASSERT_RECUR_OK(recur_model_state_create(&raw, m.get(), B));
  Stream s(raw);
  m.reset();
  size_t in_len = 0, out_len = 0;
  ASSERT_RECUR_OK(recur_model_state_lengths(s.get(), T, &in_len, &out_len));
  std::vector<float> y1(out_len), y2(out_len);
  ASSERT_RECUR_OK(recur_model_state_step(s.get(), T, c.inputs.data(), c.inputs.size(), nullptr, 0, y1.data(), y1.size()));
  ASSERT_RECUR_OK(recur_model_state_reset(s.get()));
  ASSERT_RECUR_OK(recur_model_state_step(s.get(), T, c.inputs.data(), c.inputs.size(), nullptr, 0, y2.data(), y2.size()));
  EXPECT_EQ(y1, y2);
  expect_near(y1, whole, 1e-6);
  // Argument errors.
  EXPECT_RECUR_ERR(recur_model_state_step(s.get(), 0, c.inputs.data(), c.inputs.size(), nullptr, 0, y1.data(), y1.size()),
                   RECUR_ERR_INVALID_ARGUMENT, "timesteps");
  EXPECT_RECUR_ERR(recur_model_state_step(s.get(), T, c.inputs.data(), c.inputs.size() - 1, nullptr, 0, y1.data(),
                                          y1.size()),
                   RECUR_ERR_SHAPE, "inputs");
  EXPECT_RECUR_ERR(recur_model_state_step(s.get(), T, c.inputs.data(), c.inputs.size(), nullptr, 0, y1.data(),
                                          y1.size() - 1),
                   RECUR_ERR_SHAPE, "outputs");
  int64_t d[RECUR_MAX_RANK];
  EXPECT_RECUR_ERR(recur_model_state_output_dims(s.get(), 6, 1, d, nullptr), RECUR_ERR_INVALID_ARGUMENT, "index 6");
  EXPECT_RECUR_ERR(recur_model_state_output_dims(s.get(), 0, 0, d, nullptr), RECUR_ERR_INVALID_ARGUMENT, "timesteps");
  EXPECT_RECUR_ERR(recur_model_state_step(nullptr, T, c.inputs.data(), c.inputs.size(), nullptr, 0, y1.data(), y1.size()),
                   RECUR_ERR_INVALID_ARGUMENT, "state");
}

TEST(CApiGraph, ModelsThatCannotStreamSayWhichLayer) {
  RECUR_SKIP_WITHOUT_FILES();  // every case opens a Keras model file
  const struct {
    const char* file;
    const char* layer;
  } cases[] = {
      {"bidirectional_backward_layer", "Bidirectional"},
      {"pooling", "Pooling1D"},
      {"seq2seq_initial_state", "initial_state"},
      {"conv1d_padding", "Conv1D"},
      {"reshape_permute_flatten", "Permute"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    Model m = open(graph_file(c.file));
    const char* why = nullptr;
    ASSERT_RECUR_OK(recur_model_streamable(m.get(), &why));
    EXPECT_NE(std::string(why).find(c.layer), std::string::npos) << why;
    recur_model_state* s = nullptr;
    EXPECT_CREATE_ERR(s, recur_model_state_create(&s, m.get(), 2), RECUR_ERR_UNSUPPORTED, c.layer);
  }
  Model m = open(graph_file("merges_masked"));
  recur_model_state* s = nullptr;
  EXPECT_CREATE_ERR(s, recur_model_state_create(&s, m.get(), 0), RECUR_ERR_INVALID_ARGUMENT, "batch");
  EXPECT_CREATE_ERR(s, recur_model_state_create(&s, nullptr, 1), RECUR_ERR_INVALID_ARGUMENT, "model");
  recur_model_state_destroy(nullptr);
}
