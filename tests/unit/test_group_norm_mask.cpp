// SPDX-License-Identifier: Apache-2.0
// GroupNormalization on a masked input: Keras 3 passes the mask on and leaves it out of the
// statistics; Keras 2 broadcasts the (batch, steps) mask against (batch, steps, channels) from the
// last axis and fails, so recur refuses the masked call by name there.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "model/graph.hpp"
#include "recur/error.hpp"

namespace {

using namespace recur;
using graph::json;

graph::Value run_group_norm(Dialect dialect) {
  graph::BuildContext ctx;
  ctx.dialect = DialectInfo::latest(dialect);
  const json entry = {{"class_name", "GroupNormalization"},
                      {"config", {{"name", "gn"}, {"groups", 1}, {"center", false}, {"scale", false}}}};
  std::shared_ptr<graph::Op> op = graph::make_op(entry, ctx, "layers/gn");
  op->name = "gn";
  graph::Spec in;
  in.dims = {-1, 2, 1};
  op->build({in}, {}, ctx);
  graph::Value x;
  x.shape = {1, 2, 1};
  x.data = {1.0f, 3.0f};
  x.mask = std::make_shared<const std::vector<std::uint8_t>>(std::vector<std::uint8_t>{1, 0});
  graph::RunContext run;
  graph::CallInputs ci;
  ci.main = {&x};
  return op->forward(ci, run, 0).at(0);
}

TEST(GroupNormMask, Keras3PassesTheMaskOnAndNormalizesEveryStep) {
  const graph::Value y = run_group_norm(Dialect::keras3);
  ASSERT_TRUE(y.mask);
  EXPECT_EQ(*y.mask, (std::vector<std::uint8_t>{1, 0}));
  // Mean 2 and variance 1 over both steps, masked or not (epsilon 1e-3).
  EXPECT_LT(y.data[0], 0.0f);
  EXPECT_NEAR(y.data[0], -y.data[1], 1e-6);
}

TEST(GroupNormMask, Keras2RefusesAMaskedInputByName) {
  try {
    run_group_norm(Dialect::keras2);
    FAIL() << "a masked Keras 2 GroupNormalization ran";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Error::Code::unsupported);
    EXPECT_NE(std::string(e.what()).find("GroupNormalization 'gn': a masked input"), std::string::npos) << e.what();
  }
}

}  // namespace
