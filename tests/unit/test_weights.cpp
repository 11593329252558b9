// SPDX-License-Identifier: Apache-2.0
// Keras weight layouts and the CuDNN conversions of keras_semantics.md §3.4, with input size != units.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "recur/error.hpp"
#include "recur/layer.hpp"
#include "recur/weights.hpp"

namespace recur {
namespace {

using Vec = std::vector<float>;

// numpy: Kc_g.T.reshape((F, u), order='F'), written out literally.
RowMatrix fortran_convert_block(const RowMatrix& kc_g) {
  const Index F = kc_g.rows(), u = kc_g.cols();
  const RowMatrix m = kc_g.transpose();  // (u, F)
  std::vector<float> fortran_flat(static_cast<std::size_t>(u * F));
  for (Index j = 0; j < F; ++j)
    for (Index i = 0; i < u; ++i) fortran_flat[static_cast<std::size_t>(i + j * u)] = m(i, j);
  RowMatrix r(F, u);
  for (Index a = 0; a < u; ++a)
    for (Index c = 0; c < F; ++c) r(c, a) = fortran_flat[static_cast<std::size_t>(c + a * F)];
  return r;
}

RowMatrix random_matrix(Index rows, Index cols, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  RowMatrix m(rows, cols);
  for (Index i = 0; i < m.size(); ++i) m.data()[i] = d(gen);
  return m;
}

TEST(CudnnConversion, KernelMatchesKerasFortranReshapePerGate) {
  const Index F = 5, u = 3;
  for (int gates : {3, 4}) {
    const RowMatrix kc = random_matrix(F, gates * u, 1);
    const RowMatrix kn = cudnn_kernel_to_native(kc, gates, u);
    for (int g = 0; g < gates; ++g) {
      const RowMatrix expect = fortran_convert_block(kc.middleCols(g * u, u));
      EXPECT_TRUE(kn.middleCols(g * u, u).isApprox(expect, 0.0f)) << "gate " << g;
    }
    EXPECT_TRUE(native_kernel_to_cudnn(kn, gates, u) == kc) << "round trip";
  }
}

TEST(CudnnConversion, RecurrentBlocksTranspose) {
  const RowMatrix uc = random_matrix(4, 12, 2);
  const RowMatrix un = transpose_gate_blocks(uc, 3, 4);
  for (int g = 0; g < 3; ++g) EXPECT_TRUE(un.middleCols(g * 4, 4) == uc.middleCols(g * 4, 4).transpose());
}

LayerConfig config(LayerKind kind, int units, int input) {
  LayerConfig c = LayerConfig::defaults(kind, DialectInfo::latest(Dialect::keras2));
  c.units = units;
  c.input_size = input;
  c.return_sequences = true;
  c.seed = 3;
  return c;
}

Vec run(Layer& layer, const Vec& x, Index B, Index T, Vec* states) {
  LayerCall c;
  Vec out(layer.output_size(B, T));
  states->assign(static_cast<std::size_t>(layer.num_states() * B * layer.config().units), 0.0f);
  c.input = x.data();
  c.input_len = x.size();
  c.batch = B;
  c.timesteps = T;
  c.output = out.data();
  c.output_len = out.size();
  c.final_state = states->data();
  c.final_state_len = states->size();
  layer.call(c);
  return out;
}

TEST(CudnnLayers, CudnnGruEqualsResetAfterGruWithConvertedWeights) {
  const int F = 5, u = 3;
  Layer cudnn(config(LayerKind::cudnn_gru, u, F));
  LayerConfig gc = config(LayerKind::gru, u, F);
  gc.reset_after = true;
  Layer gru(gc);
  const RowMatrix kc = random_matrix(F, 3 * u, 4), uc = random_matrix(u, 3 * u, 5), bc = random_matrix(1, 6 * u, 6);
  cudnn.set_weight(0, kc.data(), static_cast<std::size_t>(kc.size()), nullptr, 0);
  cudnn.set_weight(1, uc.data(), static_cast<std::size_t>(uc.size()), nullptr, 0);
  cudnn.set_weight(2, bc.data(), static_cast<std::size_t>(bc.size()), nullptr, 0);
  RowMatrix kn(F, 3 * u), un(u, 3 * u);
  for (int g = 0; g < 3; ++g) {
    kn.middleCols(g * u, u) = fortran_convert_block(kc.middleCols(g * u, u));
    un.middleCols(g * u, u) = uc.middleCols(g * u, u).transpose();
  }
  const std::int64_t bias_dims[2] = {2, 3 * u};  // (6u,) reshaped to (2, 3u)
  gru.set_weight(0, kn.data(), static_cast<std::size_t>(kn.size()), nullptr, 0);
  gru.set_weight(1, un.data(), static_cast<std::size_t>(un.size()), nullptr, 0);
  gru.set_weight(2, bc.data(), static_cast<std::size_t>(bc.size()), bias_dims, 2);
  std::mt19937 gen(8);
  std::normal_distribution<float> d;
  Vec x(2 * 4 * F);
  for (auto& v : x) v = d(gen);
  Vec s1, s2;
  const Vec a = run(cudnn, x, 2, 4, &s1), b = run(gru, x, 2, 4, &s2);
  EXPECT_EQ(a, b);
  EXPECT_EQ(s1, s2);
}

TEST(CudnnLayers, CudnnLstmEqualsLstmWithSummedBias) {
  const int F = 2, u = 4;
  Layer cudnn(config(LayerKind::cudnn_lstm, u, F));
  Layer lstm(config(LayerKind::lstm, u, F));
  const RowMatrix kc = random_matrix(F, 4 * u, 14), uc = random_matrix(u, 4 * u, 15), bc = random_matrix(1, 8 * u, 16);
  cudnn.set_weight(0, kc.data(), static_cast<std::size_t>(kc.size()), nullptr, 0);
  cudnn.set_weight(1, uc.data(), static_cast<std::size_t>(uc.size()), nullptr, 0);
  cudnn.set_weight(2, bc.data(), static_cast<std::size_t>(bc.size()), nullptr, 0);
  RowMatrix kn(F, 4 * u), un(u, 4 * u);
  for (int g = 0; g < 4; ++g) {
    kn.middleCols(g * u, u) = fortran_convert_block(kc.middleCols(g * u, u));
    un.middleCols(g * u, u) = uc.middleCols(g * u, u).transpose();
  }
  const RowMatrix bn = bc.leftCols(4 * u) + bc.rightCols(4 * u);
  lstm.set_weight(0, kn.data(), static_cast<std::size_t>(kn.size()), nullptr, 0);
  lstm.set_weight(1, un.data(), static_cast<std::size_t>(un.size()), nullptr, 0);
  lstm.set_weight(2, bn.data(), static_cast<std::size_t>(bn.size()), nullptr, 0);
  std::mt19937 gen(9);
  std::normal_distribution<float> d;
  Vec x(3 * 5 * F);
  for (auto& v : x) v = d(gen);
  Vec s1, s2;
  const Vec a = run(cudnn, x, 3, 5, &s1), b = run(lstm, x, 3, 5, &s2);
  EXPECT_EQ(a, b);
  EXPECT_EQ(s1, s2);
}

TEST(Weights, GruRejectsCudnnBiasShapeAndKeepsItsWeights) {
  LayerConfig c = config(LayerKind::gru, 3, 2);
  Layer gru(c);
  const Tensor before = gru.weight(2);
  const Vec cudnn_bias(18, 1.0f);
  const std::int64_t dims[1] = {18};
  try {
    gru.set_weight(2, cudnn_bias.data(), cudnn_bias.size(), dims, 1);
    FAIL() << "a (6u,) bias must not fit GRU(reset_after=True)";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Error::Code::shape);
    EXPECT_NE(std::string(e.what()).find("(2, 9)"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(gru.weight(2).value == before.value);
}

TEST(Weights, ShapesPerKind) {
  struct Case {
    LayerKind kind;
    bool reset_after;
    std::vector<Index> bias;
  };
  const int F = 3, u = 2;
  for (const Case& k : {Case{LayerKind::gru, true, {2, 6}}, Case{LayerKind::gru, false, {6}},
                        Case{LayerKind::lstm, true, {8}}, Case{LayerKind::cudnn_gru, true, {12}},
                        Case{LayerKind::cudnn_lstm, true, {16}}}) {
    LayerConfig c = config(k.kind, u, F);
    c.reset_after = k.reset_after;
    Layer l(c);
    const Index G = c.gates();
    ASSERT_EQ(l.num_weights(), 3u);
    EXPECT_EQ(l.weight_spec(0).shape, (std::vector<Index>{F, G * u}));
    EXPECT_EQ(l.weight_spec(1).shape, (std::vector<Index>{u, G * u}));
    EXPECT_EQ(l.weight_spec(2).shape, k.bias) << kind_name(k.kind);
  }
}

}  // namespace
}  // namespace recur
