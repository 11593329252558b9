// SPDX-License-Identifier: Apache-2.0
// Integer token ids reach an Embedding's lookup exactly: an id above 2^24, which float32 cannot
// hold, picks its own row (through graph::Ids), while the same id as a float picks its neighbour.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/graph.hpp"
#include "recur/error.hpp"

namespace {

using namespace recur;
using graph::json;

TEST(EmbeddingIds, IdsAbove2To24PickTheirOwnRow) {
  const std::int64_t rows = (std::int64_t(1) << 24) + 2;  // ids 0 .. 2^24 + 1
  graph::BuildContext ctx;
  ctx.dialect = DialectInfo::latest(Dialect::keras3);
  const json entry = {{"class_name", "Embedding"},
                      {"config", {{"name", "emb"}, {"input_dim", rows}, {"output_dim", 1}}}};
  std::shared_ptr<graph::Op> op = graph::make_op(entry, ctx, "layers/emb");
  graph::Spec in;
  in.dims = {-1, -1};
  in.ids = true;
  op->build({in}, {}, ctx);
  std::vector<graph::StoredWeight> w(1);
  w[0].shape = {rows, 1};
  w[0].data.assign(static_cast<std::size_t>(rows), 0.0f);
  const std::int64_t big = (std::int64_t(1) << 24) + 1;
  w[0].data[static_cast<std::size_t>(big - 1)] = 3.0f;  // what float(2^24 + 1) = 2^24 picks
  w[0].data[static_cast<std::size_t>(big)] = 7.0f;
  op->load(w, false, "test");

  graph::Value x;
  x.shape = {1, 2};
  x.data = {static_cast<float>(big), 1.0f};
  graph::RunContext run;
  graph::CallInputs ci;
  ci.main = {&x};
  EXPECT_EQ(op->forward(ci, run, 0).at(0).data[0], 3.0f) << "as a float the id rounds to 2^24";

  x.ids = std::make_shared<const graph::Ids>(graph::Ids{{big, 1}, "tokens"});
  const graph::Value y = op->forward(ci, run, 0).at(0);
  EXPECT_EQ(y.data[0], 7.0f) << "as an integer it picks row 2^24 + 1";
  EXPECT_EQ(y.data[1], 0.0f);

  x.ids = std::make_shared<const graph::Ids>(graph::Ids{{1, rows}, "tokens"});
  try {
    op->forward(ci, run, 0);
    FAIL() << "an id past input_dim was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Error::Code::invalid_argument);
    const std::string m = e.what();
    for (const std::string& needle : {std::string("input 'tokens'"), "token id " + std::to_string(rows),
                                      std::string("position 1 (0, 1)"), "[0, " + std::to_string(rows) + ")",
                                      std::string("Embedding 'emb'")})
      EXPECT_NE(m.find(needle), std::string::npos) << needle << " not in: " << m;
  }
}

}  // namespace
