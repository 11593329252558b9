// SPDX-License-Identifier: Apache-2.0
// Named runs (0.6): inputs and outputs by name, int32/int64 token ids, per-output buffers, named
// stream steps, and every error path of those calls, each message checked for the argument it
// names.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "c_api_test_util.hpp"

namespace {

const std::string kKeras = RECUR_TEST_KERAS_DIR;

using Model = rt::Model;
using Stream = rt::Stream;

Model open(const std::string& dialect, const std::string& name) {
  recur_model* m = nullptr;
  const std::string path = kKeras + "/graphs/" + dialect + "/" + name + ".keras";
  EXPECT_RECUR_OK(recur_model_open(&m, path.c_str()));
  return Model(m);
}

using rt::tensor;

recur_output output(const char* name, std::vector<float>& buf) {
  recur_output o;
  std::memset(&o, 0xAB, sizeof o);
  EXPECT_RECUR_OK(recur_output_init(&o, RECUR_OUTPUT_VERSION));
  o.name = name;
  o.data = buf.data();
  o.capacity = buf.size();
  return o;
}

std::vector<float> ramp(size_t n, float scale = 0.01f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(static_cast<int>(i % 17) - 8);
  return v;
}

// The positional run (recur_model_run_inputs, parity-tested against Keras) of every output.
std::vector<float> positional(const recur_model* m, int32_t batch, std::vector<int32_t> timesteps,
                              const std::vector<float>& inputs, const std::vector<uint8_t>& masks = {}) {
  size_t n = 0;
  EXPECT_RECUR_OK(recur_model_outputs_length(m, batch, timesteps.data(), static_cast<int32_t>(timesteps.size()), &n));
  std::vector<float> y(n);
  EXPECT_RECUR_OK(recur_model_run_inputs(m, batch, timesteps.data(), static_cast<int32_t>(timesteps.size()), inputs.data(),
                                         inputs.size(), masks.empty() ? nullptr : masks.data(), masks.size(), y.data(),
                                         y.size()));
  return y;
}

// Runs and expects `status` with a message holding every needle.
void expect_error(recur_status got, recur_status status, std::initializer_list<std::string> needles) {
  EXPECT_EQ(got, status) << recur_last_error();
  const std::string msg = recur_last_error();
  for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
}

TEST(CApiNamed, InitSetsDefaultsAndRefusesBadVersions) {
  recur_tensor t;
  std::memset(&t, 0xAB, sizeof t);
  EXPECT_RECUR_OK(recur_tensor_init(&t, RECUR_TENSOR_VERSION));
  EXPECT_EQ(t.version, static_cast<uint32_t>(RECUR_TENSOR_VERSION));
  EXPECT_EQ(t.dtype, RECUR_DTYPE_FLOAT32);
  EXPECT_EQ(t.name, nullptr);
  EXPECT_EQ(t.data, nullptr);
  EXPECT_EQ(t.mask, nullptr);
  EXPECT_EQ(t.rank, 0);
  recur_output o;
  std::memset(&o, 0xAB, sizeof o);
  EXPECT_RECUR_OK(recur_output_init(&o, RECUR_OUTPUT_VERSION));
  EXPECT_EQ(o.data, nullptr);
  EXPECT_EQ(o.capacity, 0u);
  expect_error(recur_tensor_init(nullptr, RECUR_TENSOR_VERSION), RECUR_ERR_INVALID_ARGUMENT, {"tensor"});
  expect_error(recur_tensor_init(&t, 99), RECUR_ERR_UNSUPPORTED, {"version 99"});
  expect_error(recur_output_init(nullptr, RECUR_OUTPUT_VERSION), RECUR_ERR_INVALID_ARGUMENT, {"output"});
  expect_error(recur_output_init(&o, 99), RECUR_ERR_UNSUPPORTED, {"version 99"});
  EXPECT_STREQ(recur_status_string(RECUR_ERR_CANCELLED), "cancelled");
  EXPECT_EQ(recur_version_number(), static_cast<uint32_t>(RECUR_VERSION_NUMBER));
  EXPECT_GE(RECUR_VERSION_MINOR, 6);  // named runs since 0.6
}

// Inputs in reverse order, outputs one at a time and in reverse order: the same numbers as the
// positional run.
TEST(CApiNamed, InputsAndOutputsByNameInAnyOrder) {
  RECUR_SKIP_WITHOUT_FILES();
  for (const char* dialect : {"keras2", "keras3"}) {
    SCOPED_TRACE(dialect);
    Model m = open(dialect, "multi_io");
    const std::vector<float> seq = ramp(2 * 7 * 4), stat = ramp(2 * 5, 0.03f);
    std::vector<float> concat = seq;
    concat.insert(concat.end(), stat.begin(), stat.end());
    const std::vector<float> want = positional(m.get(), 2, {7, 0}, concat);  // probs (2,3) then value (2,2)
    ASSERT_EQ(want.size(), 10u);
    const recur_tensor in[2] = {tensor("static", RECUR_DTYPE_FLOAT32, stat.data(), stat.size(), {2, 5}),
                                tensor("seq", RECUR_DTYPE_FLOAT32, seq.data(), seq.size(), {2, 7, 4})};
    std::vector<float> value(4, -1.0f), probs(16, -1.0f);  // probs: more capacity than needed
    recur_output out[2] = {output("value", value), output("probs", probs)};
    ASSERT_EQ(recur_model_run_named(m.get(), in, 2, out, 2, nullptr), RECUR_OK) << recur_last_error();
    EXPECT_EQ(out[0].rank, 2);
    EXPECT_EQ(out[0].dims[0], 2);
    EXPECT_EQ(out[0].dims[1], 2);
    EXPECT_EQ(out[0].length, 4u);
    EXPECT_EQ(out[1].length, 6u);
    EXPECT_EQ(out[1].dims[1], 3);
    for (size_t i = 0; i < 6; ++i) EXPECT_EQ(probs[i], want[i]) << i;
    for (size_t i = 6; i < 16; ++i) EXPECT_EQ(probs[i], -1.0f) << "beyond length written at " << i;
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(value[i], want[6 + i]) << i;
    // A subset: only "value".
    std::vector<float> only(4);
    recur_output one = output("value", only);
    ASSERT_EQ(recur_model_run_named(m.get(), in, 2, &one, 1, nullptr), RECUR_OK) << recur_last_error();
    EXPECT_EQ(only, value);
    // Shapes without running.
    recur_output shapes[2] = {output("probs", probs), output("value", value)};
    shapes[0].data = nullptr;
    shapes[1].data = nullptr;
    const recur_tensor no_data[2] = {tensor("seq", RECUR_DTYPE_FLOAT32, nullptr, 2 * 9 * 4, {2, 9, 4}),
                                     tensor("static", RECUR_DTYPE_FLOAT32, nullptr, 10, {2, 5})};
    ASSERT_EQ(recur_model_output_shapes(m.get(), no_data, 2, shapes, 2), RECUR_OK) << recur_last_error();
    EXPECT_EQ(shapes[0].rank, 2);
    EXPECT_EQ(shapes[0].length, 6u);
    EXPECT_EQ(shapes[1].length, 4u);
  }
}

// Sequence outputs get their timesteps from the input dims; masks are given per input.
TEST(CApiNamed, TimestepsFromDimsAndMasks) {
  RECUR_SKIP_WITHOUT_FILES();
  Model m = open("keras3", "masking_functional");
  const char* in_name = nullptr;
  int32_t rank = 0;
  int64_t dims[RECUR_MAX_RANK];
  ASSERT_EQ(recur_model_input(m.get(), 0, &in_name, &rank, dims, nullptr), RECUR_OK);
  const char* out_name = nullptr;
  ASSERT_EQ(recur_model_output(m.get(), 0, &out_name, nullptr, nullptr), RECUR_OK);
  const int64_t F = dims[2];
  for (int32_t T : {3, 9}) {
    const std::vector<float> x = ramp(static_cast<size_t>(2 * T * F));
    std::vector<uint8_t> mask(static_cast<size_t>(2 * T), 1);
    mask[1] = 0;
    const std::vector<float> want = positional(m.get(), 2, {T}, x, mask);
    recur_tensor in = tensor(in_name, RECUR_DTYPE_FLOAT32, x.data(), x.size(), {2, T, F});
    in.mask = mask.data();
    in.mask_length = mask.size();
    std::vector<float> y(want.size());
    recur_output out = output(out_name, y);
    ASSERT_EQ(recur_model_run_named(m.get(), &in, 1, &out, 1, nullptr), RECUR_OK) << recur_last_error();
    EXPECT_EQ(y, want);
    EXPECT_EQ(out.length, want.size());
  }
}

// Keras 3 names a layer's several outputs alike: "name:k" selects each, the bare name is refused.
TEST(CApiNamed, RepeatedKeras3OutputNamesAreAddressedByIndex) {
  RECUR_SKIP_WITHOUT_FILES();
  Model m = open("keras3", "return_state_outputs");
  const std::vector<float> x = ramp(2 * 7 * 3);
  const std::vector<float> want = positional(m.get(), 2, {7}, x);  // gru, gru, lstm (2,7,3), lstm, lstm
  const recur_tensor in = tensor("x", RECUR_DTYPE_FLOAT32, x.data(), x.size(), {2, 7, 3});
  std::vector<float> g1(8), l2(6);
  recur_output out[2] = {output("lstm:2", l2), output("gru:1", g1)};
  ASSERT_EQ(recur_model_run_named(m.get(), &in, 1, out, 2, nullptr), RECUR_OK) << recur_last_error();
  EXPECT_EQ(g1, std::vector<float>(want.begin() + 8, want.begin() + 16));
  EXPECT_EQ(l2, std::vector<float>(want.end() - 6, want.end()));
  std::vector<float> any(64);
  recur_output bare = output("lstm", any);
  expect_error(recur_model_run_named(m.get(), &in, 1, &bare, 1, nullptr), RECUR_ERR_INVALID_ARGUMENT,
               {"outputs[0].name", "'lstm' names 3 outputs", "'lstm:0'", "'lstm:2'"});
  recur_output past = output("lstm:3", any);
  expect_error(recur_model_run_named(m.get(), &in, 1, &past, 1, nullptr), RECUR_ERR_INVALID_ARGUMENT,
               {"outputs[0].name", "no output 'lstm:3'", "'gru:0', 'gru:1', 'lstm:0'"});
}

// int32 and int64 ids give the float ids' numbers; out of range ids name the input, the id, its
// position and the range.
TEST(CApiNamed, IntegerTokenIds) {
  RECUR_SKIP_WITHOUT_FILES();
  Model m = open("keras3", "embedding_masked_full_row");
  const std::vector<int32_t> ids32 = {1, 4, 0, 2, 3, 3, 0, 0};  // (2, 4), zeros masked
  const std::vector<int64_t> ids64(ids32.begin(), ids32.end());
  const std::vector<float> idsf(ids32.begin(), ids32.end());
  const std::vector<float> want = positional(m.get(), 2, {4}, idsf);
  for (int32_t dtype : {RECUR_DTYPE_INT32, RECUR_DTYPE_INT64, RECUR_DTYPE_FLOAT32}) {
    SCOPED_TRACE(dtype);
    const void* data = dtype == RECUR_DTYPE_INT32   ? static_cast<const void*>(ids32.data())
                       : dtype == RECUR_DTYPE_INT64 ? static_cast<const void*>(ids64.data())
                                                    : static_cast<const void*>(idsf.data());
    const recur_tensor in = tensor("ids", dtype, data, 8, {2, 4});
    std::vector<float> y(want.size());
    recur_output out = output("dense", y);
    ASSERT_EQ(recur_model_run_named(m.get(), &in, 1, &out, 1, nullptr), RECUR_OK) << recur_last_error();
    EXPECT_EQ(y, want);
  }
  int64_t input_dim = 0;
  {
    const char* cfg = nullptr;
    const char* cls = nullptr;
    int32_t n = 0;
    recur_model_info info{};
    info.version = RECUR_MODEL_INFO_VERSION;
    ASSERT_EQ(recur_model_get_info(m.get(), &info), RECUR_OK);
    for (n = 0; n < info.num_layers; ++n) {
      ASSERT_EQ(recur_model_layer(m.get(), n, nullptr, &cls, &cfg, nullptr, nullptr, nullptr), RECUR_OK);
      if (std::string(cls) == "Embedding") {
        const std::string c = cfg;
        const size_t at = c.find("\"input_dim\":");
        ASSERT_NE(at, std::string::npos);
        input_dim = std::stoll(c.substr(at + 12));
      }
    }
  }
  ASSERT_GT(input_dim, 0);
  std::vector<int64_t> bad = ids64;
  bad[5] = input_dim;  // row 1, step 1
  const recur_tensor in = tensor("ids", RECUR_DTYPE_INT64, bad.data(), 8, {2, 4});
  std::vector<float> y(want.size(), 7.0f);
  recur_output out = output("dense", y);
  expect_error(recur_model_run_named(m.get(), &in, 1, &out, 1, nullptr), RECUR_ERR_INVALID_ARGUMENT,
               {"input 'ids'", "token id " + std::to_string(input_dim), "position 5 (1, 1)",
                "[0, " + std::to_string(input_dim) + ")"});
  EXPECT_EQ(y, std::vector<float>(want.size(), 7.0f)) << "a failed run writes no output";
  bad[5] = -3;
  std::vector<int32_t> bad32(bad.begin(), bad.end());
  const recur_tensor neg32 = tensor("ids", RECUR_DTYPE_INT32, bad32.data(), 8, {2, 4});
  expect_error(recur_model_run_named(m.get(), &neg32, 1, &out, 1, nullptr), RECUR_ERR_INVALID_ARGUMENT,
               {"input 'ids'", "token id -3", "position 5"});
}

// An integer input of a float model is cast as Keras casts it.
TEST(CApiNamed, IntegerInputsOfAFloatModelAreCast) {
  RECUR_SKIP_WITHOUT_FILES();
  Model m = open("keras3", "multi_io");
  std::vector<float> seqf(2 * 7 * 4), statf(10);
  std::vector<int32_t> seq32(seqf.size());
  std::vector<int64_t> stat64(statf.size());
  for (size_t i = 0; i < seqf.size(); ++i) seqf[i] = static_cast<float>(seq32[i] = static_cast<int32_t>(i % 5) - 2);
  for (size_t i = 0; i < statf.size(); ++i) statf[i] = static_cast<float>(stat64[i] = static_cast<int64_t>(i % 3));
  std::vector<float> all = seqf;
  all.insert(all.end(), statf.begin(), statf.end());
  const std::vector<float> want = positional(m.get(), 2, {7, 0}, all);
  const recur_tensor in[2] = {tensor("seq", RECUR_DTYPE_INT32, seq32.data(), seq32.size(), {2, 7, 4}),
                              tensor("static", RECUR_DTYPE_INT64, stat64.data(), stat64.size(), {2, 5})};
  std::vector<float> probs(6), value(4);
  recur_output out[2] = {output("probs", probs), output("value", value)};
  ASSERT_EQ(recur_model_run_named(m.get(), in, 2, out, 2, nullptr), RECUR_OK) << recur_last_error();
  probs.insert(probs.end(), value.begin(), value.end());
  EXPECT_EQ(probs, want);
}

TEST(CApiNamed, InputErrorsNameTheInput) {
  RECUR_SKIP_WITHOUT_FILES();
  Model m = open("keras3", "multi_io");
  const std::vector<float> seq = ramp(2 * 7 * 4), stat = ramp(10);
  std::vector<float> probs(6, 5.0f);
  recur_output out = output("probs", probs);
  auto run = [&](std::vector<recur_tensor> in) {
    return recur_model_run_named(m.get(), in.data(), static_cast<int32_t>(in.size()), &out, 1, nullptr);
  };
  const recur_tensor s = tensor("seq", RECUR_DTYPE_FLOAT32, seq.data(), seq.size(), {2, 7, 4});
  const recur_tensor st = tensor("static", RECUR_DTYPE_FLOAT32, stat.data(), stat.size(), {2, 5});
  expect_error(run({s}), RECUR_ERR_INVALID_ARGUMENT, {"recur_model_run_named", "inputs: input 'static' is missing", "'seq', 'static'"});
  expect_error(run({s, st, s}), RECUR_ERR_INVALID_ARGUMENT, {"inputs[2].name", "'seq' is given twice", "inputs[0]"});
  recur_tensor unknown = st;
  unknown.name = "statik";
  expect_error(run({s, unknown}), RECUR_ERR_INVALID_ARGUMENT, {"inputs[1].name", "no input 'statik'", "'seq', 'static'"});
  recur_tensor noname = st;
  noname.name = nullptr;
  expect_error(run({s, noname}), RECUR_ERR_INVALID_ARGUMENT, {"inputs[1].name is NULL"});
  recur_tensor bad_dtype = st;
  bad_dtype.dtype = 7;
  expect_error(run({s, bad_dtype}), RECUR_ERR_INVALID_ARGUMENT, {"inputs[1] ('static').dtype", "got 7"});
  recur_tensor bad_version = st;
  bad_version.version = 0;
  expect_error(run({s, bad_version}), RECUR_ERR_INVALID_ARGUMENT, {"inputs[1].version", "recur_tensor_init"});
  recur_tensor rank = s;
  rank.rank = 2;
  expect_error(run({rank, st}), RECUR_ERR_SHAPE, {"inputs[0] ('seq').dims", "expected (B, T, 4)", "got (2, 7)"});
  recur_tensor zero_rank = s;
  zero_rank.rank = 0;
  expect_error(run({zero_rank, st}), RECUR_ERR_SHAPE, {"inputs[0] ('seq').rank", "got 0"});
  recur_tensor features = s;
  features.dims[2] = 5;
  features.length = 2 * 7 * 5;
  expect_error(run({features, st}), RECUR_ERR_SHAPE, {"inputs[0] ('seq').dims", "expected (B, T, 4)", "got (2, 7, 5)"});
  recur_tensor batch = st;
  batch.dims[0] = 3;
  batch.length = 15;
  expect_error(run({s, batch}), RECUR_ERR_SHAPE, {"inputs[1] ('static').dims", "batch 3", "batch 2 of input 'seq'"});
  recur_tensor length = s;
  length.length -= 1;
  expect_error(run({length, st}), RECUR_ERR_SHAPE, {"inputs[0] ('seq').length", "(2, 7, 4) hold 56 values", "got 55"});
  recur_tensor null_data = s;
  null_data.data = nullptr;
  expect_error(run({null_data, st}), RECUR_ERR_INVALID_ARGUMENT, {"inputs[0] ('seq').data: is NULL"});
  const std::vector<uint8_t> mask(14, 1);
  recur_tensor mask_static = st;
  mask_static.mask = mask.data();
  mask_static.mask_length = 2;
  expect_error(run({s, mask_static}), RECUR_ERR_INVALID_ARGUMENT, {"inputs[1] ('static').mask", "no timesteps axis"});
  recur_tensor mask_len = s;
  mask_len.mask = mask.data();
  mask_len.mask_length = 13;
  expect_error(run({mask_len, st}), RECUR_ERR_SHAPE, {"inputs[0] ('seq').mask_length", "expected B x T = 14", "got 13"});
  recur_tensor mask_null = s;
  mask_null.mask_length = 14;
  expect_error(run({mask_null, st}), RECUR_ERR_INVALID_ARGUMENT, {"inputs[0] ('seq').mask: is NULL", "mask_length is 14"});
  expect_error(recur_model_run_named(m.get(), nullptr, 2, &out, 1, nullptr), RECUR_ERR_INVALID_ARGUMENT,
               {"inputs is NULL", "num_inputs = 2"});
  expect_error(recur_model_run_named(m.get(), &s, -1, &out, 1, nullptr), RECUR_ERR_INVALID_ARGUMENT,
               {"num_inputs must be >= 0", "got -1"});
  expect_error(recur_model_run_named(nullptr, &s, 1, &out, 1, nullptr), RECUR_ERR_INVALID_ARGUMENT, {"model is NULL"});
  EXPECT_EQ(probs, std::vector<float>(6, 5.0f)) << "failed runs write nothing";
  EXPECT_EQ(out.length, 0u);
  EXPECT_EQ(out.rank, 0);
}

TEST(CApiNamed, OutputErrorsNameTheOutput) {
  RECUR_SKIP_WITHOUT_FILES();
  Model m = open("keras3", "multi_io");
  const std::vector<float> seq = ramp(2 * 7 * 4), stat = ramp(10);
  const recur_tensor in[2] = {tensor("seq", RECUR_DTYPE_FLOAT32, seq.data(), seq.size(), {2, 7, 4}),
                              tensor("static", RECUR_DTYPE_FLOAT32, stat.data(), stat.size(), {2, 5})};
  std::vector<float> a(6), b(6);
  auto run = [&](std::vector<recur_output> out) {
    return recur_model_run_named(m.get(), in, 2, out.data(), static_cast<int32_t>(out.size()), nullptr);
  };
  expect_error(run({output("prob", a)}), RECUR_ERR_INVALID_ARGUMENT, {"outputs[0].name", "no output 'prob'", "'probs', 'value'"});
  expect_error(run({output("probs", a), output("probs", b)}), RECUR_ERR_INVALID_ARGUMENT,
               {"outputs[1].name", "'probs' is asked for twice", "outputs[0]"});
  recur_output small = output("probs", a);
  small.capacity = 5;
  expect_error(run({small}), RECUR_ERR_SHAPE, {"outputs[0] ('probs').capacity", "(2, 3) need 6 floats", "got 5"});
  recur_output null_data = output("value", a);
  null_data.data = nullptr;
  expect_error(run({null_data}), RECUR_ERR_INVALID_ARGUMENT, {"outputs[0] ('value').data: is NULL"});
  recur_output noname = output("value", a);
  noname.name = nullptr;
  expect_error(run({noname}), RECUR_ERR_INVALID_ARGUMENT, {"outputs[0].name is NULL"});
  recur_output version = output("value", a);
  version.version = 2;
  expect_error(run({version}), RECUR_ERR_INVALID_ARGUMENT, {"outputs[0].version", "recur_output_init"});
  expect_error(recur_model_run_named(m.get(), in, 2, nullptr, 1, nullptr), RECUR_ERR_INVALID_ARGUMENT,
               {"outputs is NULL", "num_outputs = 1"});
  expect_error(recur_model_run_named(m.get(), in, 2, nullptr, -2, nullptr), RECUR_ERR_INVALID_ARGUMENT,
               {"num_outputs must be >= 0"});
  EXPECT_RECUR_OK(recur_model_run_named(m.get(), in, 2, nullptr, 0, nullptr));  // no output asked: allowed
  expect_error(recur_model_output_shapes(m.get(), in, 2, nullptr, 1), RECUR_ERR_INVALID_ARGUMENT,
               {"recur_model_output_shapes", "outputs is NULL"});
}

// A stateful model's states advance as with the positional run; a fixed batch is enforced.
TEST(CApiNamed, StatefulModel) {
  RECUR_SKIP_WITHOUT_FILES();
  Model a = open("keras3", "stateful_sequential_gru");
  Model b = open("keras3", "stateful_sequential_gru");
  const std::vector<float> x = ramp(3 * 4 * 3);
  const recur_tensor in = tensor("input_layer", RECUR_DTYPE_FLOAT32, x.data(), x.size(), {3, 4, 3});
  for (int call = 0; call < 2; ++call) {
    const std::vector<float> want = positional(a.get(), 3, {4}, x);
    std::vector<float> y(want.size());
    recur_output out = output("dense", y);
    ASSERT_EQ(recur_model_run_named(b.get(), &in, 1, &out, 1, nullptr), RECUR_OK) << recur_last_error();
    EXPECT_EQ(y, want) << "call " << call;
  }
  const recur_tensor wrong = tensor("input_layer", RECUR_DTYPE_FLOAT32, x.data(), 2 * 6 * 3, {2, 6, 3});
  std::vector<float> y(64);
  recur_output out = output("dense", y);
  expect_error(recur_model_run_named(b.get(), &wrong, 1, &out, 1, nullptr), RECUR_ERR_SHAPE,
               {"inputs[0] ('input_layer').dims", "fixes the batch at 3", "got 2"});
}

// Named steps with int ids equal the whole-sequence run; errors leave the stream where it was.
TEST(CApiNamed, StreamStepsWithIntegerIds) {
  RECUR_SKIP_WITHOUT_FILES();
  Model m = open("keras3", "embedding_masked_full_row");
  const std::vector<int32_t> ids = {1, 4, 2, 0, 3, 3, 1, 2, 4, 1, 0, 0};  // (2, 6)
  const std::vector<float> idsf(ids.begin(), ids.end());
  const std::vector<float> whole = positional(m.get(), 2, {6}, idsf);
  recur_model_state* raw = nullptr;
  ASSERT_EQ(recur_model_state_create(&raw, m.get(), 2), RECUR_OK) << recur_last_error();
  Stream st(raw);
  std::vector<float> y(whole.size());
  for (int k = 0; k < 3; ++k) {  // three steps of two
    const std::vector<int64_t> piece = {ids[static_cast<size_t>(2 * k)], ids[static_cast<size_t>(2 * k + 1)],
                                        ids[static_cast<size_t>(6 + 2 * k)], ids[static_cast<size_t>(7 + 2 * k)]};
    const recur_tensor in = tensor("ids", RECUR_DTYPE_INT64, piece.data(), 4, {2, 2});
    recur_output out = output("dense", y);
    ASSERT_EQ(recur_model_state_output_shapes(st.get(), &in, 1, &out, 1), RECUR_OK) << recur_last_error();
    EXPECT_EQ(out.length, whole.size());
    if (k == 1) {  // a failing step first: out of range, then a batch the stream does not have
      std::vector<int64_t> bad = piece;
      bad[3] = 1 << 30;
      const recur_tensor b = tensor("ids", RECUR_DTYPE_INT64, bad.data(), 4, {2, 2});
      expect_error(recur_model_state_step_named(st.get(), &b, 1, &out, 1, nullptr), RECUR_ERR_INVALID_ARGUMENT,
                   {"recur_model_state_step_named", "input 'ids'", "token id 1073741824", "position 3 (1, 1)"});
      const recur_tensor rows = tensor("ids", RECUR_DTYPE_INT64, piece.data(), 4, {4, 1});
      expect_error(recur_model_state_step_named(st.get(), &rows, 1, &out, 1, nullptr), RECUR_ERR_SHAPE,
                   {"inputs[0] ('ids').dims", "the stream has 2 rows", "batch of 4"});
    }
    ASSERT_EQ(recur_model_state_step_named(st.get(), &in, 1, &out, 1, nullptr), RECUR_OK) << recur_last_error();
  }
  EXPECT_EQ(y, whole) << "streamed in pieces, with failed steps between, equals one run";
  expect_error(recur_model_state_step_named(nullptr, nullptr, 0, nullptr, 0, nullptr), RECUR_ERR_INVALID_ARGUMENT,
               {"recur_model_state_step_named", "state is NULL"});
}

TEST(CApiNamed, StreamStepsFeedEverySequenceInputTheSameSteps) {
  RECUR_SKIP_WITHOUT_FILES();
  Model m = open("keras3", "multi_io");
  recur_model_state* raw = nullptr;
  ASSERT_EQ(recur_model_state_create(&raw, m.get(), 2), RECUR_OK) << recur_last_error();
  Stream st(raw);
  const std::vector<float> seq = ramp(2 * 7 * 4), stat = ramp(10);
  // Whole-sequence run vs the same sequence in steps of 3, 3 and 1.
  std::vector<float> all = seq;
  all.insert(all.end(), stat.begin(), stat.end());
  const std::vector<float> want = positional(m.get(), 2, {7, 0}, all);
  std::vector<float> probs(6), value(4);
  for (int64_t t0 : {0, 3, 6}) {
    const int64_t n = t0 == 6 ? 1 : 3;
    std::vector<float> piece;
    for (int64_t b = 0; b < 2; ++b)
      piece.insert(piece.end(), seq.begin() + (b * 7 + t0) * 4, seq.begin() + (b * 7 + t0 + n) * 4);
    const recur_tensor in[2] = {tensor("static", RECUR_DTYPE_FLOAT32, stat.data(), stat.size(), {2, 5}),
                                tensor("seq", RECUR_DTYPE_FLOAT32, piece.data(), piece.size(), {2, n, 4})};
    recur_output out[2] = {output("value", value), output("probs", probs)};
    ASSERT_EQ(recur_model_state_step_named(st.get(), in, 2, out, 2, nullptr), RECUR_OK) << recur_last_error();
  }
  probs.insert(probs.end(), value.begin(), value.end());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(probs[i], want[i], 1e-6) << i;
}

TEST(CApiNamed, StreamStepSequenceInputsOfDifferentLengthsAreRefused) {
  RECUR_SKIP_WITHOUT_FILES();
  Model m = open("keras3", "merges_mixed_masks");  // sequence inputs a (B, T, 4) and b (B, T, 3)
  recur_model_state* raw = nullptr;
  ASSERT_EQ(recur_model_state_create(&raw, m.get(), 1), RECUR_OK) << recur_last_error();
  Stream st(raw);
  const std::vector<float> a = ramp(2 * 4), b = ramp(3 * 3);
  const recur_tensor in[2] = {tensor("a", RECUR_DTYPE_FLOAT32, a.data(), a.size(), {1, 2, 4}),
                              tensor("b", RECUR_DTYPE_FLOAT32, b.data(), b.size(), {1, 3, 3})};
  std::vector<float> y(3);
  recur_output out = output("lstm", y);
  expect_error(recur_model_state_step_named(st.get(), in, 2, &out, 1, nullptr), RECUR_ERR_SHAPE,
               {"inputs[1] ('b').dims", "3 timesteps", "input 'a' has 2"});
  expect_error(recur_model_state_output_shapes(st.get(), in, 2, &out, 1), RECUR_ERR_SHAPE,
               {"recur_model_state_output_shapes", "inputs[1] ('b').dims"});
  // Inputs of one length step.
  const recur_tensor same[2] = {in[0], tensor("b", RECUR_DTYPE_FLOAT32, b.data(), 2 * 3, {1, 2, 3})};
  EXPECT_EQ(recur_model_state_step_named(st.get(), same, 2, &out, 1, nullptr), RECUR_OK) << recur_last_error();
}

}  // namespace
