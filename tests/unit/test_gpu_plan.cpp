// SPDX-License-Identifier: Apache-2.0
// The host side of the GPU backend, which runs everywhere: device strings, the route each layer
// and call takes and why, masks as cuDNN lengths, and the cuDNN weight space packed from every
// Keras layout (checked by evaluating cuDNN's own equations on the packed buffer).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "recur/device.hpp"
#include "recur/error.hpp"
#include "recur/gpu_plan.hpp"
#include "recur/layer.hpp"

namespace recur {
namespace {

using Vec = std::vector<float>;

LayerConfig make(LayerKind kind, int units, int input, Dialect d = Dialect::keras3) {
  LayerConfig c = LayerConfig::defaults(kind, DialectInfo::latest(d));
  c.units = units;
  c.input_size = input;
  c.seed = 3;
  return c;
}

Vec random_vec(std::size_t n, unsigned seed, float scale = 0.5f) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  Vec v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

// ----- device strings -----

TEST(DeviceRequest, ParsesEveryAcceptedForm) {
  EXPECT_EQ(DeviceRequest::parse("cpu", "device").kind, DeviceRequest::Kind::cpu);
  EXPECT_EQ(DeviceRequest::parse("auto", "device").kind, DeviceRequest::Kind::automatic);
  const DeviceRequest c = DeviceRequest::parse("cuda", "device");
  EXPECT_EQ(c.kind, DeviceRequest::Kind::cuda);
  EXPECT_EQ(c.ordinal, 0);
  EXPECT_EQ(DeviceRequest::parse("cuda:3", "device").ordinal, 3);
  EXPECT_EQ(DeviceRequest::parse("cuda:12", "device").to_string(), "cuda:12");
  EXPECT_EQ(DeviceRequest::parse("auto", "device").to_string(), "auto");
}

TEST(DeviceRequest, RejectsEverythingElseNamingTheArgument) {
  for (const char* bad : {"", "gpu", "CUDA", "cuda:", "cuda:-1", "cuda:x", "cuda0", "cuda:1:2", "cpu ", " auto",
                          "cuda:99999999"}) {
    try {
      DeviceRequest::parse(bad, "device");
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Error::Code::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("device: expected \"cpu\", \"cuda\""), std::string::npos) << e.what();
    }
  }
}

// ----- routes -----

TEST(GpuPath, CudnnOnlyWhereCudnnComputesTheSameFunction) {
  EXPECT_TRUE(gpu::choose_path(make(LayerKind::gru, 8, 4)).cudnn);
  EXPECT_TRUE(gpu::choose_path(make(LayerKind::lstm, 8, 4)).cudnn);
  EXPECT_TRUE(gpu::choose_path(make(LayerKind::cudnn_gru, 8, 4, Dialect::keras2)).cudnn);
  EXPECT_TRUE(gpu::choose_path(make(LayerKind::cudnn_lstm, 8, 4, Dialect::keras2)).cudnn);

  LayerConfig g = make(LayerKind::gru, 8, 4);
  g.reset_after = false;
  gpu::PathChoice p = gpu::choose_path(g);
  EXPECT_FALSE(p.cudnn);
  EXPECT_NE(p.reason.find("reset_after=False"), std::string::npos) << p.reason;

  LayerConfig l = make(LayerKind::lstm, 8, 4, Dialect::keras2);
  l.recurrent_activation = parse_activation("hard_sigmoid", l.dialect, "recurrent_activation");
  p = gpu::choose_path(l);
  EXPECT_FALSE(p.cudnn);
  EXPECT_NE(p.reason.find("recurrent_activation=hard_sigmoid"), std::string::npos) << p.reason;

  LayerConfig r = make(LayerKind::gru, 8, 4);
  r.activation = parse_activation("relu", r.dialect, "activation");
  p = gpu::choose_path(r);
  EXPECT_FALSE(p.cudnn);
  EXPECT_NE(p.reason.find("activation=relu"), std::string::npos) << p.reason;

  EXPECT_FALSE(gpu::choose_path(make(LayerKind::gru_cell, 8, 4)).cudnn);
  EXPECT_FALSE(gpu::choose_path(make(LayerKind::lstm_cell, 8, 4)).cudnn);
}

TEST(GpuPath, SimpleRnnTakesRecursKernelsWithTheReason) {
  for (Dialect d : {Dialect::keras2, Dialect::keras3}) {
    for (const char* act : {"tanh", "relu"}) {
      LayerConfig c = make(LayerKind::simple_rnn, 8, 4, d);
      c.activation = parse_activation(act, c.dialect, "activation");
      const gpu::PathChoice p = gpu::choose_path(c);
      EXPECT_FALSE(p.cudnn);
      EXPECT_NE(p.reason.find("SimpleRNN"), std::string::npos) << p.reason;
      EXPECT_NE(p.reason.find("recur's kernels"), std::string::npos) << p.reason;
      // No call takes cuDNN: not even one without a mask.
      const gpu::MaskPlan none = gpu::plan_mask(nullptr, 2, 3, false);
      EXPECT_FALSE(gpu::choose_call_route(p, 3, &none, false, false, false).cudnn);
    }
  }
  const gpu::PathChoice cell = gpu::choose_path(make(LayerKind::simple_rnn_cell, 8, 4));
  EXPECT_FALSE(cell.cudnn);
  EXPECT_NE(cell.reason.find("SimpleRNNCell steps one timestep per call"), std::string::npos) << cell.reason;
}

TEST(GpuMaskPlan, RightPaddedMasksBecomeLengths) {
  // B = 3, T = 4, batch-major: [1111], [1100], [0000]
  const std::vector<std::uint8_t> m{1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0};
  const gpu::MaskPlan p = gpu::plan_mask(m.data(), 3, 4, false);
  EXPECT_TRUE(p.right_padded);
  EXPECT_FALSE(p.all_valid);
  EXPECT_EQ(p.lengths, (std::vector<std::int32_t>{4, 2, 0}));

  // The same mask time-major: element (t, b) at t*B + b.
  std::vector<std::uint8_t> tm(12);
  for (int b = 0; b < 3; ++b)
    for (int t = 0; t < 4; ++t) tm[static_cast<std::size_t>(t * 3 + b)] = m[static_cast<std::size_t>(b * 4 + t)];
  EXPECT_EQ(gpu::plan_mask(tm.data(), 3, 4, true).lengths, (std::vector<std::int32_t>{4, 2, 0}));

  const std::vector<std::uint8_t> ones(12, 1);
  EXPECT_TRUE(gpu::plan_mask(ones.data(), 3, 4, false).all_valid);
  EXPECT_TRUE(gpu::plan_mask(nullptr, 3, 4, false).all_valid);
}

TEST(GpuMaskPlan, HolesAndLeftPaddingAreNotLengths) {
  const std::vector<std::uint8_t> hole{1, 0, 1, 1};
  EXPECT_FALSE(gpu::plan_mask(hole.data(), 1, 4, false).right_padded);
  const std::vector<std::uint8_t> left{0, 0, 1, 1};
  EXPECT_FALSE(gpu::plan_mask(left.data(), 1, 4, false).right_padded);
}

TEST(GpuCallRoute, KernelsTakeWhatCudnnCannot) {
  const gpu::PathChoice cudnn{true, ""}, kernel{false, ""};
  const std::vector<std::uint8_t> padded{1, 1, 0}, hole{1, 0, 1};
  const gpu::MaskPlan pp = gpu::plan_mask(padded.data(), 1, 3, false);
  const gpu::MaskPlan hp = gpu::plan_mask(hole.data(), 1, 3, false);
  const gpu::MaskPlan none = gpu::plan_mask(nullptr, 1, 3, false);

  EXPECT_TRUE(gpu::choose_call_route(cudnn, 3, &none, false, false, false).cudnn);
  EXPECT_EQ(gpu::choose_call_route(cudnn, 3, &none, false, false, false).lengths, nullptr);
  const gpu::CallRoute r = gpu::choose_call_route(cudnn, 3, &pp, false, false, false);
  EXPECT_TRUE(r.cudnn);
  ASSERT_NE(r.lengths, nullptr);
  EXPECT_EQ(*r.lengths, (std::vector<std::int32_t>{2}));
  EXPECT_FALSE(gpu::choose_call_route(cudnn, 3, &hp, false, false, false).cudnn);
  EXPECT_FALSE(gpu::choose_call_route(cudnn, 3, &pp, false, false, true).cudnn);   // unroll's mask quirk
  EXPECT_FALSE(gpu::choose_call_route(cudnn, 3, &none, true, false, false).cudnn);  // per-gate input dropout
  EXPECT_FALSE(gpu::choose_call_route(cudnn, 3, &none, false, true, false).cudnn);  // recurrent dropout
  EXPECT_FALSE(gpu::choose_call_route(kernel, 3, &none, false, false, false).cudnn);
  // One timestep (a stream's step) takes recur's fused kernel.
  const gpu::MaskPlan one = gpu::plan_mask(nullptr, 1, 1, false);
  EXPECT_FALSE(gpu::choose_call_route(cudnn, 1, &one, false, false, false).cudnn);
  EXPECT_TRUE(gpu::choose_call_route(cudnn, 2, &none, false, false, false).cudnn);
}

// ----- cuDNN weight space -----

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// cuDNN's equations (cudnn_rnn.md §2.1/§2.2) evaluated on the packed weight space, through the
// regions only: a packing that puts any gate, transpose or bias in the wrong place fails here.
struct CudnnReference {
  const gpu::CudnnWeights& w;
  int gates, u, F;
  const float* matrix(int id) const {
    for (const auto& r : w.regions)
      if (r.lin_layer_id == id && !r.is_bias) return w.params.data() + r.offset;
    return nullptr;
  }
  const float* bias(int id) const {
    for (const auto& r : w.regions)
      if (r.lin_layer_id == id && r.is_bias) return w.params.data() + r.offset;
    return nullptr;
  }
  // (W_id x + bW)[j] and (R_id h + bR)[j]
  float wx(int id, const float* x, int j) const {
    float s = 0.0f;
    for (int i = 0; i < F; ++i) s += matrix(id)[j * F + i] * x[i];
    return s + bias(id)[j];
  }
  float rh(int id, const float* h, int j) const {
    float s = 0.0f;
    for (int k = 0; k < u; ++k) s += matrix(id)[j * u + k] * h[k];
    return s + bias(id)[j];
  }
  void step(const float* x, Vec& h, Vec& c) const {
    Vec nh(static_cast<std::size_t>(u)), nc(static_cast<std::size_t>(u));
    for (int j = 0; j < u; ++j) {
      if (gates == 3) {  // ids: 0 r, 1 z, 2 h on x; 3 r, 4 z, 5 h on h
        const float r = sigmoid(wx(0, x, j) + rh(3, h.data(), j));
        const float z = sigmoid(wx(1, x, j) + rh(4, h.data(), j));
        const float hh = std::tanh(wx(2, x, j) + r * rh(5, h.data(), j));
        nh[static_cast<std::size_t>(j)] = (1.0f - z) * hh + z * h[static_cast<std::size_t>(j)];
      } else {  // i, f, c, o
        const float i = sigmoid(wx(0, x, j) + rh(4, h.data(), j));
        const float f = sigmoid(wx(1, x, j) + rh(5, h.data(), j));
        const float g = std::tanh(wx(2, x, j) + rh(6, h.data(), j));
        const float o = sigmoid(wx(3, x, j) + rh(7, h.data(), j));
        nc[static_cast<std::size_t>(j)] = f * c[static_cast<std::size_t>(j)] + i * g;
        nh[static_cast<std::size_t>(j)] = o * std::tanh(nc[static_cast<std::size_t>(j)]);
      }
    }
    h = nh;
    if (gates == 4) c = nc;
  }
};

void expect_packing_matches_layer(LayerKind kind, Dialect dialect, bool use_bias) {
  const int u = 5, F = 3, T = 4;
  LayerConfig c = make(kind, u, F, dialect);
  c.use_bias = use_bias;
  c.return_sequences = true;
  Layer layer(c);
  for (std::size_t i = 0; i < layer.num_weights(); ++i) {
    const Vec w = random_vec(static_cast<std::size_t>(layer.weight(i).size()), 11 + static_cast<unsigned>(i));
    layer.set_weight(i, w.data(), w.size(), nullptr, 0);
  }
  const gpu::CudnnWeights packed = gpu::pack_cudnn_weights(c, layer.params());
  const int G = c.gates();
  ASSERT_EQ(packed.params.size(), static_cast<std::size_t>(G * (u * F + u * u + 2 * u)));
  ASSERT_EQ(packed.regions.size(), static_cast<std::size_t>(4 * G));
  // The layout model: matrices in id order, then biases in id order, back to back.
  std::int64_t expect_offset = 0;
  for (std::size_t k = 0; k < packed.regions.size(); ++k) {
    const auto& r = packed.regions[k];
    EXPECT_EQ(r.offset, expect_offset);
    EXPECT_EQ(r.lin_layer_id, static_cast<int>(k % static_cast<std::size_t>(2 * G)));
    EXPECT_EQ(r.is_bias, k >= static_cast<std::size_t>(2 * G) ? 1 : 0);
    EXPECT_EQ(r.rows, u);
    EXPECT_EQ(r.cols, r.is_bias ? 1 : (r.lin_layer_id < G ? F : u));
    expect_offset += r.rows * r.cols;
  }

  const Vec x = random_vec(static_cast<std::size_t>(T * F), 99, 1.0f);
  Vec y(static_cast<std::size_t>(T * u));
  LayerCall call;
  call.input = x.data();
  call.input_len = x.size();
  call.batch = 1;
  call.timesteps = T;
  call.output = y.data();
  call.output_len = y.size();
  layer.call(call);

  CudnnReference ref{packed, G, u, F};
  Vec h(static_cast<std::size_t>(u), 0.0f), cs(static_cast<std::size_t>(u), 0.0f);
  for (int t = 0; t < T; ++t) {
    ref.step(x.data() + t * F, h, cs);
    for (int j = 0; j < u; ++j)
      EXPECT_NEAR(h[static_cast<std::size_t>(j)], y[static_cast<std::size_t>(t * u + j)], 2e-6)
          << kind_name(kind) << " t=" << t << " j=" << j;
  }
}

TEST(CudnnPacking, KerasGruResetAfter) { expect_packing_matches_layer(LayerKind::gru, Dialect::keras3, true); }
TEST(CudnnPacking, KerasGruWithoutBias) { expect_packing_matches_layer(LayerKind::gru, Dialect::keras3, false); }
TEST(CudnnPacking, KerasLstm) { expect_packing_matches_layer(LayerKind::lstm, Dialect::keras3, true); }
TEST(CudnnPacking, Keras2LstmWithoutBias) { expect_packing_matches_layer(LayerKind::lstm, Dialect::keras2, false); }
TEST(CudnnPacking, LegacyCudnnGru) { expect_packing_matches_layer(LayerKind::cudnn_gru, Dialect::keras2, true); }
TEST(CudnnPacking, LegacyCudnnLstm) { expect_packing_matches_layer(LayerKind::cudnn_lstm, Dialect::keras2, true); }

}  // namespace
}  // namespace recur
