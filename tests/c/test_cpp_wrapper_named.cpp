// SPDX-License-Identifier: Apache-2.0
// recur.hpp's model API (0.6): inputs()/outputs(), runs by name with vectors and integer ids,
// run_into caller buffers, ModelState streams, RunOptions cancellation and the log callback, with
// errors as recur::Error carrying the status and the library's message.
#include <gtest/gtest.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "c_api_test_util.hpp"
#include "recur/recur.hpp"

namespace {

const std::string kKeras = RECUR_TEST_KERAS_DIR;

std::string graph(const std::string& name) { return kKeras + "/graphs/keras3/" + name + ".keras"; }

std::vector<float> ramp(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = 0.05f * static_cast<float>(static_cast<int>(i % 11) - 5);
  return v;
}

// The positional C run of every output, concatenated.
std::vector<float> positional(const recur::Model& m, int32_t batch, std::vector<int32_t> ts, const std::vector<float>& x) {
  size_t n = 0;
  EXPECT_RECUR_OK(recur_model_outputs_length(m.get(), batch, ts.data(), static_cast<int32_t>(ts.size()), &n));
  std::vector<float> y(n);
  EXPECT_RECUR_OK(recur_model_run_inputs(m.get(), batch, ts.data(), static_cast<int32_t>(ts.size()), x.data(), x.size(),
                                         nullptr, 0, y.data(), y.size()));
  return y;
}

template <typename F>
recur::Error error_of(F&& f) {
  try {
    f();
  } catch (const recur::Error& e) {
    return e;
  }
  ADD_FAILURE() << "no recur::Error thrown";
  return recur::Error(RECUR_OK, "");
}

TEST(CppWrapperNamed, InputsAndOutputs) {
  RECUR_SKIP_WITHOUT_FILES();
  const recur::Model m(graph("multi_io"));
  const auto in = m.inputs();
  ASSERT_EQ(in.size(), 2u);
  EXPECT_EQ(in[0].name, "seq");
  EXPECT_EQ(in[0].dims, (std::vector<std::int64_t>{-1, 7, 4}));
  EXPECT_TRUE(in[0].sequence);
  EXPECT_FALSE(in[0].token_ids);
  EXPECT_EQ(in[1].name, "static");
  EXPECT_FALSE(in[1].sequence);
  EXPECT_EQ(m.output_names(), (std::vector<std::string>{"probs", "value"}));
  const recur::Model ids(graph("embedding_masked_full_row"));
  EXPECT_TRUE(ids.inputs().at(0).token_ids);
  const recur::Model rs(graph("return_state_outputs"));
  EXPECT_EQ(rs.output_names(), (std::vector<std::string>{"gru:0", "gru:1", "lstm:0", "lstm:1", "lstm:2"}));
  EXPECT_EQ(rs.outputs().at(2).dims, (std::vector<std::int64_t>{-1, 7, 3}));
}

TEST(CppWrapperNamed, RunByNameWithVectors) {
  RECUR_SKIP_WITHOUT_FILES();
  const recur::Model m(graph("multi_io"));
  const std::vector<float> seq = ramp(2 * 7 * 4), stat = ramp(10);
  std::vector<float> all = seq;
  all.insert(all.end(), stat.begin(), stat.end());
  const std::vector<float> want = positional(m, 2, {7, 0}, all);
  const std::vector<recur::Input> inputs = {recur::Input("static", stat, {2, 5}), recur::Input("seq", seq, {2, 7, 4})};
  const auto every = m.run(inputs);
  ASSERT_EQ(every.size(), 2u);
  EXPECT_EQ(every[0].name, "probs");
  EXPECT_EQ(every[0].dims, (std::vector<std::int64_t>{2, 3}));
  std::vector<float> joined = every[0].data;
  joined.insert(joined.end(), every[1].data.begin(), every[1].data.end());
  EXPECT_EQ(joined, want);
  const auto value = m.run(inputs, {"value"});
  ASSERT_EQ(value.size(), 1u);
  EXPECT_EQ(value[0].data, every[1].data);
  EXPECT_EQ(m.output_shapes(inputs, {"value", "probs"}),
            (std::vector<std::vector<std::int64_t>>{{2, 2}, {2, 3}}));
  // Into caller buffers, no allocation for the outputs.
  std::vector<float> buf(32, -1.0f);
  std::vector<recur::OutputBuffer> out(1);
  out[0].name = "probs";
  out[0].data = buf.data();
  out[0].capacity = buf.size();
  m.run_into(inputs, out);
  EXPECT_EQ(out[0].length, 6u);
  EXPECT_EQ(out[0].dims, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(std::vector<float>(buf.begin(), buf.begin() + 6), every[0].data);
  EXPECT_EQ(buf[6], -1.0f);
}

TEST(CppWrapperNamed, IntegerIdsAndStreams) {
  RECUR_SKIP_WITHOUT_FILES();
  const recur::Model m(graph("embedding_masked_full_row"));
  const std::vector<std::int64_t> ids64 = {1, 4, 2, 0, 3, 3, 1, 2};  // (2, 4)
  const std::vector<std::int32_t> ids32(ids64.begin(), ids64.end());
  const std::vector<float> idsf(ids64.begin(), ids64.end());
  const std::vector<float> want = positional(m, 2, {4}, idsf);
  EXPECT_EQ(m.run({recur::Input("ids", ids64, {2, 4})}).at(0).data, want);
  EXPECT_EQ(m.run({recur::Input("ids", ids32, {2, 4})}).at(0).data, want);
  recur::ModelState state(m, 2);
  std::vector<float> last;
  for (int k = 0; k < 2; ++k) {
    const std::vector<std::int32_t> piece = {ids32[2 * k], ids32[2 * k + 1], ids32[4 + 2 * k], ids32[5 + 2 * k]};
    last = state.step({recur::Input("ids", piece, {2, 2})}, {"dense"}).at(0).data;
  }
  EXPECT_EQ(last, want);
  recur::ModelState moved = std::move(state);
  moved.reset();
  std::vector<float> buf(4);
  std::vector<recur::OutputBuffer> out(1);
  out[0].name = "dense";
  out[0].data = buf.data();
  out[0].capacity = buf.size();
  moved.step_into({recur::Input("ids", ids32, {2, 4})}, out);
  EXPECT_EQ(buf, want) << "after reset the stream starts afresh";
  const recur::Error e = error_of([&] {
    std::vector<std::int64_t> bad = ids64;
    bad[6] = -1;
    m.run({recur::Input("ids", bad, {2, 4})});
  });
  EXPECT_EQ(e.status(), RECUR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(e.what()).find("token id -1 at position 6 (1, 2)"), std::string::npos) << e.what();
}

// ModelState::step_many: two states of batch 1 stepped in one call give their own steps' numbers.
TEST(CppWrapperNamed, StepManyMatchesStepsOneByOne) {
  RECUR_SKIP_WITHOUT_FILES();
  const recur::Model m(graph("embedding_masked_full_row"));
  recur::ModelState a(m, 1), b(m, 1), c(m, 1), d(m, 1);
  for (int k = 0; k < 3; ++k) {
    const std::vector<std::int32_t> x = {1 + k, 3 - k % 2}, xa = {x[0]}, xb = {x[1]};
    const std::vector<float> ya = a.step({recur::Input("ids", xa, {1, 1})}, {"dense"}).at(0).data;
    const std::vector<float> yb = b.step({recur::Input("ids", xb, {1, 1})}, {"dense"}).at(0).data;
    const recur::Tensor both = recur::ModelState::step_many({&c, &d}, {recur::Input("ids", x, {2, 1})}, {"dense"}).at(0);
    std::vector<float> want = ya;
    want.insert(want.end(), yb.begin(), yb.end());
    ASSERT_EQ(both.data.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(both.data[i], want[i], 1e-6);
  }
  const recur::Error e = error_of([&] { recur::ModelState::step_many({&c, &c}, {recur::Input("ids", std::vector<std::int32_t>{1, 2}, {2, 1})}, {"dense"}); });
  EXPECT_EQ(e.status(), RECUR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(e.what()).find("are the same state"), std::string::npos) << e.what();
}

TEST(CppWrapperNamed, ErrorsCarryStatusAndMessage) {
  RECUR_SKIP_WITHOUT_FILES();
  const recur::Model m(graph("multi_io"));
  const std::vector<float> seq = ramp(56), stat = ramp(10);
  recur::Error e = error_of([&] { m.run({recur::Input("seq", seq, {2, 7, 4}), recur::Input("statik", stat, {2, 5})}); });
  EXPECT_EQ(e.status(), RECUR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(e.what()).find("inputs[1].name: the model has no input 'statik'"), std::string::npos) << e.what();
  e = error_of([&] { m.run({recur::Input("seq", seq, {2, 7, 4}), recur::Input("static", stat, {2, 5})}, {"nope"}); });
  EXPECT_NE(std::string(e.what()).find("no output 'nope'"), std::string::npos) << e.what();
  e = error_of([&] { m.run({recur::Input("seq", seq, {2, 7, 4, 1, 1, 1, 1, 1, 1})}); });
  EXPECT_EQ(e.status(), RECUR_ERR_SHAPE);
  EXPECT_NE(std::string(e.what()).find("rank 9 is above RECUR_MAX_RANK"), std::string::npos) << e.what();
  std::vector<float> small(2);
  std::vector<recur::OutputBuffer> out(1);
  out[0].name = "probs";
  out[0].data = small.data();
  out[0].capacity = small.size();
  e = error_of([&] { m.run_into({recur::Input("seq", seq, {2, 7, 4}), recur::Input("static", stat, {2, 5})}, out); });
  EXPECT_EQ(e.status(), RECUR_ERR_SHAPE);
  EXPECT_NE(std::string(e.what()).find("outputs[0] ('probs').capacity"), std::string::npos) << e.what();
  EXPECT_TRUE(out[0].dims.empty()) << "a failed call writes nothing back";
}

TEST(CppWrapperNamed, RunOptionsCancel) {
  RECUR_SKIP_WITHOUT_FILES();
  recur::Model m(graph("stateful_sequential_gru"));
  EXPECT_TRUE(m.stateful());
  const std::vector<float> x = ramp(3 * 4 * 3);
  const std::vector<recur::Input> in = {recur::Input("input_layer", x, {3, 4, 3})};
  recur::RunOptions options;
  EXPECT_FALSE(options.cancelled());
  options.cancel();
  EXPECT_TRUE(options.cancelled());
  const recur::Error e = error_of([&] { m.run(in, {}, &options); });
  EXPECT_EQ(e.status(), RECUR_ERR_CANCELLED);
  options.reset();
  const auto first = m.run(in, {}, &options);
  m.reset_states();
  EXPECT_EQ(m.run(in).at(0).data, first.at(0).data) << "the cancelled run left the states at zero";
  recur::RunOptions moved = std::move(options);
  EXPECT_FALSE(moved.cancelled());
}

TEST(CppWrapperNamed, LogCallback) {
  std::mutex mutex;
  std::vector<std::string> seen;
  recur::set_log_callback(
      [&](int level, const std::string& message) {
        std::lock_guard<std::mutex> lock(mutex);
        seen.push_back(std::to_string(level) + " " + message);
        throw std::runtime_error("a sink that throws: dropped at the C boundary");
      },
      RECUR_LOG_INFO);
  recur_set_limit(RECUR_LIMIT_BATCH, 0);
  recur::set_log_callback(nullptr);
  const std::size_t n = seen.size();
  recur_set_limit(RECUR_LIMIT_BATCH, 0);
  EXPECT_EQ(seen.size(), n);
  bool kernels = false, limit = false;
  for (const auto& s : seen) {
    kernels = kernels || s.rfind("1 CPU kernels: ", 0) == 0;
    limit = limit || s.find("limit 'batch' set to") != std::string::npos;
  }
  EXPECT_TRUE(kernels);
  EXPECT_TRUE(limit);
  const recur::Error e = error_of([] { recur::set_log_callback([](int, const std::string&) {}, 9); });
  EXPECT_EQ(e.status(), RECUR_ERR_INVALID_ARGUMENT);
}

}  // namespace
