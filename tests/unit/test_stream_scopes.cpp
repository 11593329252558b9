// SPDX-License-Identifier: Apache-2.0
// A stream keys its states by (op, call site); a nested model's graph runs at each of its call
// sites with a site base of its own (StreamStates::scope), so that a layer inside a model called
// twice keeps two states, and the bases stay apart from every graph's own node ids.
#include <gtest/gtest.h>

#include <climits>
#include <string>
#include <vector>

#include "model/graph.hpp"
#include "recur/error.hpp"

namespace {

using namespace recur;

class NoOp : public graph::Op {
 public:
  std::vector<graph::Spec> build(const std::vector<graph::Spec>& in, const std::vector<graph::Spec>&,
                                 const graph::BuildContext&) override {
    return in;
  }
  std::vector<graph::Value> forward(const graph::CallInputs&, graph::RunContext&, int) const override { return {}; }
};

TEST(StreamScopes, EachCallSiteOfAModelGetsItsOwnRangeOfSites) {
  NoOp model, other;
  graph::StreamStates st;
  const int a = st.scope(&model, 3, 10), b = st.scope(&model, 4, 10), c = st.scope(&other, 3, 7);
  EXPECT_GE(a, graph::kMaxGraphNodes);  // past the top-level graph's node ids
  // Disjoint ranges of 10, 10 and 7 sites.
  const std::vector<std::pair<int, int>> ranges = {{a, a + 10}, {b, b + 10}, {c, c + 7}};
  for (std::size_t i = 0; i < ranges.size(); ++i)
    for (std::size_t j = i + 1; j < ranges.size(); ++j)
      EXPECT_TRUE(ranges[i].second <= ranges[j].first || ranges[j].second <= ranges[i].first) << i << " " << j;
  // The same call site finds the same base at every step, and after a reset.
  EXPECT_EQ(st.scope(&model, 3, 10), a);
  st.reset();
  EXPECT_EQ(st.scope(&model, 4, 10), b);
}

TEST(StreamScopes, MoreSitesThanAStreamCanKeyIsALimitError) {
  NoOp model;
  model.name = "encoder";
  graph::StreamStates st;
  try {
    st.scope(&model, 0, static_cast<std::size_t>(INT_MAX));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Error::Code::limit);
    EXPECT_NE(std::string(e.what()).find("'encoder'"), std::string::npos) << e.what();
  }
}

}  // namespace
