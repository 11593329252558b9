// SPDX-License-Identifier: Apache-2.0
// The cuDNN route's emulated twin (tests/gpu_emulator/emulated_cudnn.cpp) against the CPU backend:
// a cuDNN weight space packed here by hand from Keras weights (cudnn_rnn.md §2.4, independently of
// the core's packer), run through the route's checks, planning and post-processing, must give the
// CPU backend's outputs, last output, carried output and final states for every masking case the
// core sends to cuDNN.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "cuda/cudnn_route.hpp"
#include "recur/backend.hpp"
#include "recur/cell.hpp"
#include "recur/config.hpp"

namespace recur {
namespace {

using Vec = std::vector<float>;
constexpr float kTol = 1e-5f;

Vec random_vec(Index n, unsigned seed, float scale = 0.6f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  Vec v(static_cast<std::size_t>(n));
  for (auto& x : v) x = dist(gen);
  return v;
}

RowMatrix random_matrix(Index rows, Index cols, unsigned seed) {
  const Vec v = random_vec(rows * cols, seed);
  return Eigen::Map<const RowMatrix>(v.data(), rows, cols);
}

struct Layer {
  bool gru;
  int units;
  int input;
  LayerConfig config;
  CellParams params;
};

Layer make_layer(bool gru, int units, int input) {
  Layer l{gru,
          units,
          input,
          LayerConfig::defaults(gru ? LayerKind::gru : LayerKind::lstm, DialectInfo::latest(Dialect::keras3)),
          {}};
  l.config.units = units;
  l.config.input_size = input;
  const int G = gru ? 3 : 4;
  l.params.kernel = random_matrix(input, G * units, 11);
  l.params.recurrent = random_matrix(units, G * units, 12);
  l.params.input_bias = random_matrix(1, G * units, 13);
  if (gru) l.params.recurrent_bias = random_matrix(1, G * units, 14);
  return l;
}

// The cuDNN weight space of one unidirectional layer: matrices in linLayerID order (W_g = the
// transpose of Keras's gate block), then biases. cuDNN's GRU gates are (r, z, h), Keras's (z, r, h);
// LSTM gates are (i, f, c, o) in both, and Keras's LSTM bias is cuDNN's recurrent bias.
struct WeightSpace {
  Vec params;
  std::vector<recur_gpu_cudnn_region> regions;
};

WeightSpace pack(const Layer& l) {
  const int G = l.gru ? 3 : 4, u = l.units;
  const int keras_gate_gru[3] = {1, 0, 2};
  auto keras_gate = [&](int g) { return l.gru ? keras_gate_gru[g] : g; };
  WeightSpace w;
  int64_t at = 0;
  for (int id = 0; id < 2 * G; ++id) {
    const RowMatrix& src = id < G ? l.params.kernel : l.params.recurrent;
    const int cols = id < G ? l.input : u, kg = keras_gate(id % G);
    w.regions.push_back({id, 0, at, u, cols});
    for (int j = 0; j < u; ++j)
      for (int i = 0; i < cols; ++i) w.params.push_back(src(i, kg * u + j));
    at += int64_t(u) * cols;
  }
  for (int id = 0; id < 2 * G; ++id) {
    const int kg = keras_gate(id % G);
    w.regions.push_back({id, 1, at, u, 1});
    for (int j = 0; j < u; ++j) {
      float v;
      if (l.gru)
        v = (id < G ? l.params.input_bias : l.params.recurrent_bias)(kg * u + j);
      else
        v = id < G ? 0.0f : l.params.input_bias(kg * u + j);
      w.params.push_back(v);
    }
    at += u;
  }
  return w;
}

recur_gpu_layer_desc describe(const Layer& l) {
  recur_gpu_layer_desc d{};
  d.cell = l.gru ? RECUR_GPU_CELL_GRU : RECUR_GPU_CELL_LSTM;
  d.units = l.units;
  d.input_size = l.input;
  d.reset_after = 1;
  d.use_bias = 1;
  d.activation = static_cast<int32_t>(l.config.activation.kind);
  d.recurrent_activation = static_cast<int32_t>(l.config.recurrent_activation.kind);
  d.cudnn_capable = 1;
  return d;
}

recur_gpu_weights weights_of(const WeightSpace& w) {
  recur_gpu_weights g{};
  g.cudnn_params = w.params.data();
  g.cudnn_params_len = static_cast<int64_t>(w.params.size());
  g.regions = w.regions.data();
  g.num_regions = static_cast<int32_t>(w.regions.size());
  return g;
}

std::unique_ptr<cuda::CudnnRoute> make_route(const Layer& l, const WeightSpace& w) {
  std::string err;
  auto route = cuda::make_cudnn_route(describe(l), err);
  EXPECT_TRUE(route) << err;
  if (!route) return nullptr;
  EXPECT_EQ(route->set_weights(weights_of(w), err), RECUR_GPU_OK) << err;
  return route;
}

struct Case {
  const char* name;
  std::vector<int32_t> lengths;  // empty: no mask (B = 3)
  bool go_backwards = false;
  bool zero_output_for_mask = false;
  bool time_major = false;
  bool carried = false;         // a carried-in output (else null: zeros)
  bool initial_states = false;  // random initial states (else zeros)
  bool sequence_output = true;
  bool alias_carried = false;  // carried_out is the carried_in buffer, as a stream's state holds it
  Index timesteps = 6;
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

struct Outputs {
  Vec sequence, last, carried, states;
};

void expect_near(const Vec& got, const Vec& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], kTol) << what << " [" << i << "]";
}

class CudnnRouteEmulated : public ::testing::TestWithParam<std::tuple<bool, Case>> {};

TEST_P(CudnnRouteEmulated, MatchesCpuBackend) {
  const bool gru = std::get<0>(GetParam());
  const Case& c = std::get<1>(GetParam());
  const Layer l = make_layer(gru, 5, 4);
  const Index B = c.lengths.empty() ? 3 : static_cast<Index>(c.lengths.size()), T = c.timesteps;
  const Index u = l.units, F = l.input, ns = gru ? 1 : 2;
  auto row = [&](Index b, Index t) { return c.time_major ? t * B + b : b * T + t; };
  const Vec x = random_vec(B * T * F, 21, 1.0f);
  const Vec h0 = c.initial_states ? random_vec(ns * B * u, 22) : Vec(static_cast<std::size_t>(ns * B * u), 0.0f);
  const Vec carried_in = random_vec(B * u, 23);

  // The CPU backend with the equivalent byte mask.
  Outputs want;
  {
    Cell cell(l.config);
    cell.set_params(l.params);
    std::vector<std::uint8_t> mask;
    if (!c.lengths.empty()) {
      mask.assign(static_cast<std::size_t>(B * T), 0);
      for (Index b = 0; b < B; ++b)
        for (Index t = 0; t < c.lengths[static_cast<std::size_t>(b)]; ++t)
          mask[static_cast<std::size_t>(row(b, t))] = 1;
    }
    std::vector<RowMatrix> states(static_cast<std::size_t>(ns));
    for (Index s = 0; s < ns; ++s)
      states[static_cast<std::size_t>(s)] = Eigen::Map<const RowMatrix>(h0.data() + s * B * u, B, u);
    RowMatrix carried = Eigen::Map<const RowMatrix>(carried_in.data(), B, u);
    want.sequence.assign(static_cast<std::size_t>(B * T * u), 0.0f);
    want.last.assign(static_cast<std::size_t>(B * u), 0.0f);
    const float* xs = x.data();
    SequenceJob job;
    job.inputs = &xs;
    job.batch = B;
    job.timesteps = T;
    job.time_major = c.time_major;
    job.go_backwards = c.go_backwards;
    job.mask = mask.empty() ? nullptr : mask.data();
    job.zero_output_for_mask = c.zero_output_for_mask;
    job.states = states.data();
    job.carried_output = c.carried ? &carried : nullptr;
    job.sequence_output = want.sequence.data();
    job.last_output = want.last.data();
    SequenceWorkspace ws;
    cpu_backend().run_sequence(cell, job, ws);
    want.carried = c.carried ? Vec(carried.data(), carried.data() + carried.size()) : want.last;
    for (const auto& s : states) want.states.insert(want.states.end(), s.data(), s.data() + s.size());
  }

  const WeightSpace w = pack(l);
  auto route = make_route(l, w);
  ASSERT_TRUE(route);
  Outputs got;
  got.sequence.assign(static_cast<std::size_t>(B * T * u), -7.0f);  // garbage the route must overwrite
  got.last.assign(static_cast<std::size_t>(B * u), -7.0f);
  got.carried = c.alias_carried ? carried_in : Vec(static_cast<std::size_t>(B * u), -7.0f);
  got.states = h0;
  const float* xs = x.data();
  recur_gpu_run r{};
  r.route = RECUR_GPU_ROUTE_CUDNN;
  r.memory = RECUR_GPU_MEMORY_DEVICE;
  r.batch = B;
  r.timesteps = T;
  r.time_major = c.time_major;
  r.go_backwards = c.go_backwards;
  r.num_inputs = 1;
  r.inputs = &xs;
  r.lengths = c.lengths.empty() ? nullptr : c.lengths.data();
  r.zero_output_for_mask = c.zero_output_for_mask;
  r.states = got.states.data();
  r.carried_in = c.alias_carried ? got.carried.data() : (c.carried ? carried_in.data() : nullptr);
  r.carried_out = got.carried.data();
  r.sequence_output = c.sequence_output ? got.sequence.data() : nullptr;
  r.last_output = got.last.data();
  std::string err;
  ASSERT_EQ(route->run(r, nullptr, err), RECUR_GPU_OK) << err;

  if (c.sequence_output) expect_near(got.sequence, want.sequence, "sequence output");
  expect_near(got.last, want.last, "last output");
  expect_near(got.carried, want.carried, "carried output");
  expect_near(got.states, want.states, "final states");
}

const std::vector<int32_t> kPadded = {6, 3, 0, 1, 5};

std::vector<Case> cases() {
  std::vector<Case> v;
  auto add = [&](Case c) { v.push_back(std::move(c)); };
  add({"no_mask", {}});
  add({"no_mask_backwards", {}, true});
  add({"no_mask_time_major", {}, false, false, true});
  add({"full_lengths", {6, 6, 6}});
  add({"full_lengths_backwards", {6, 6, 6}, true});
  add({"padded", kPadded});
  add({"padded_backwards", kPadded, true});
  add({"padded_zero_output", kPadded, false, true});
  add({"padded_backwards_zero_output", kPadded, true, true});
  add({"padded_time_major", kPadded, false, false, true});
  add({"padded_time_major_backwards", kPadded, true, false, true});
  add({"padded_carried", kPadded, false, false, false, true});
  add({"padded_backwards_carried", kPadded, true, false, false, true});
  add({"padded_initial_states", kPadded, false, false, false, false, true});
  add({"padded_backwards_initial_states_carried", kPadded, true, false, false, true, true});
  add({"padded_last_output_only", kPadded, false, false, false, true, true, false});
  add({"padded_backwards_last_output_only", kPadded, true, false, false, true, true, false});
  add({"padded_carried_aliased", kPadded, false, false, false, true, true, true, true});
  add({"padded_backwards_carried_aliased", kPadded, true, false, false, true, true, true, true});
  add({"all_zero_lengths_carried", {0, 0}, false, false, false, true, true});
  add({"all_zero_lengths_backwards_zero_output", {0, 0}, true, true, false, true, true});
  add({"single_step", {1, 0, 1}, false, false, false, true, true, true, false, 1});
  add({"no_timesteps", {}, false, false, false, true, true, true, false, 0});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Cases, CudnnRouteEmulated, ::testing::Combine(::testing::Bool(), ::testing::ValuesIn(cases())),
                         [](const ::testing::TestParamInfo<std::tuple<bool, Case>>& info) {
                           return std::string(std::get<0>(info.param) ? "GRU_" : "LSTM_") +
                                  std::get<1>(info.param).name;
                         });

// input != units, so a transposed or reinterpreted matrix would not go unnoticed.
TEST(CudnnRouteEmulatedWeights, RegionMismatchNamesTheRegion) {
  const Layer l = make_layer(true, 5, 4);
  WeightSpace w = pack(l);
  w.regions[2].offset += 1;  // linLayerID 2 matrix
  std::string err;
  auto route = cuda::make_cudnn_route(describe(l), err);
  ASSERT_TRUE(route) << err;
  EXPECT_EQ(route->set_weights(weights_of(w), err), RECUR_GPU_ERR_INVALID);
  EXPECT_NE(err.find("linLayerID 2 matrix"), std::string::npos) << err;
  EXPECT_NE(err.find("offset 41"), std::string::npos) << err;  // recur's (wrong) offset
  EXPECT_NE(err.find("offset 40"), std::string::npos) << err;  // cuDNN's

  w = pack(l);
  std::swap(w.regions[1].rows, w.regions[1].cols);
  EXPECT_EQ(route->set_weights(weights_of(w), err), RECUR_GPU_ERR_INVALID);
  EXPECT_NE(err.find("linLayerID 1 matrix"), std::string::npos) << err;

  w = pack(l);
  w.regions[7] = w.regions[6];  // linLayerID 0 bias described twice, 1 bias missing
  EXPECT_EQ(route->set_weights(weights_of(w), err), RECUR_GPU_ERR_INVALID);
  EXPECT_NE(err.find("linLayerID 0 bias"), std::string::npos) << err;

  w = pack(l);
  w.regions.pop_back();
  EXPECT_EQ(route->set_weights(weights_of(w), err), RECUR_GPU_ERR_INVALID);
  EXPECT_NE(err.find("12 regions"), std::string::npos) << err;

  // A failed set_weights leaves the route unusable rather than running stale weights.
  const float* xs = nullptr;
  Vec states(5, 0.0f);
  recur_gpu_run r{};
  r.route = RECUR_GPU_ROUTE_CUDNN;
  r.memory = RECUR_GPU_MEMORY_DEVICE;
  r.batch = 1;
  r.timesteps = 1;
  r.num_inputs = 1;
  r.inputs = &xs;
  r.states = states.data();
  EXPECT_EQ(route->run(r, nullptr, err), RECUR_GPU_ERR_INVALID);
}

TEST(CudnnRouteEmulatedWeights, WeightSpaceSizeMismatchNamesBothSizes) {
  const Layer l = make_layer(false, 5, 4);
  WeightSpace w = pack(l);
  w.params.push_back(0.0f);
  std::string err;
  auto route = cuda::make_cudnn_route(describe(l), err);
  ASSERT_TRUE(route) << err;
  EXPECT_EQ(route->set_weights(weights_of(w), err), RECUR_GPU_ERR_INVALID);
  // 4 * (5*4 + 5*5 + 2*5) = 220 floats.
  EXPECT_NE(err.find("220 floats"), std::string::npos) << err;
  EXPECT_NE(err.find("221 floats"), std::string::npos) << err;
}

TEST(CudnnRouteEmulatedRuns, RejectsWhatTheCoreMustNotSend) {
  const Layer l = make_layer(true, 5, 4);
  recur_gpu_layer_desc d = describe(l);
  d.reset_after = 0;
  std::string err;
  EXPECT_FALSE(cuda::make_cudnn_route(d, err));
  EXPECT_NE(err.find("reset_after"), std::string::npos) << err;

  auto route = make_route(l, pack(l));
  ASSERT_TRUE(route);
  const Vec x(static_cast<std::size_t>(2 * 3 * 4), 0.5f);
  Vec states(10, 0.0f), out(30, 0.0f);
  const float* xs = x.data();
  const std::uint8_t mask[6] = {1, 1, 1, 1, 0, 1};
  const int32_t bad_lengths[2] = {3, 4};
  recur_gpu_run r{};
  r.route = RECUR_GPU_ROUTE_CUDNN;
  r.memory = RECUR_GPU_MEMORY_DEVICE;
  r.batch = 2;
  r.timesteps = 3;
  r.num_inputs = 1;
  r.inputs = &xs;
  r.states = states.data();
  r.sequence_output = out.data();

  recur_gpu_run bad = r;
  bad.lengths = bad_lengths;
  EXPECT_EQ(route->run(bad, nullptr, err), RECUR_GPU_ERR_INVALID);
  EXPECT_NE(err.find("row 1 has length 4"), std::string::npos) << err;
  bad = r;
  bad.mask = mask;
  EXPECT_EQ(route->run(bad, nullptr, err), RECUR_GPU_ERR_INVALID);
  bad = r;
  bad.route = RECUR_GPU_ROUTE_KERNEL;
  EXPECT_EQ(route->run(bad, nullptr, err), RECUR_GPU_ERR_INVALID);
  bad = r;
  bad.memory = RECUR_GPU_MEMORY_HOST;
  EXPECT_EQ(route->run(bad, nullptr, err), RECUR_GPU_ERR_INVALID);
  EXPECT_EQ(route->run(r, nullptr, err), RECUR_GPU_OK) << err;
}

}  // namespace
}  // namespace recur
