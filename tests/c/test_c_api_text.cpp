// SPDX-License-Identifier: Apache-2.0
// String inputs (C ABI 0.7): RECUR_DTYPE_STRING tensors for models whose Input has dtype "string"
// (TextVectorization, StringLookup), recur_model_input_dtype, and every bad string input refused
// with a status and a message naming the input.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "c_api_test_util.hpp"
#include "recur/recur.hpp"

namespace {

const std::string kKeras = RECUR_TEST_KERAS_DIR;

rt::Model open(const std::string& rel) {
  recur_model* m = nullptr;
  EXPECT_EQ(recur_model_open(&m, (kKeras + "/" + rel).c_str()), RECUR_OK) << rel << ": " << recur_last_error();
  return rt::Model(m);
}

// A (B, 1) text input named "text" and one output "out".
struct TextRun {
  std::vector<const char*> texts;
  recur_tensor in{};
  std::vector<float> buf = std::vector<float>(64, -7.0f);
  recur_output out{};
  explicit TextRun(std::vector<const char*> t, int64_t width = 1) : texts(std::move(t)) {
    EXPECT_EQ(recur_tensor_init(&in, RECUR_TENSOR_VERSION), RECUR_OK);
    in.name = "text";
    in.dtype = RECUR_DTYPE_STRING;
    in.data = texts.data();
    in.length = texts.size();
    in.rank = 2;
    in.dims[0] = static_cast<int64_t>(texts.size()) / width;
    in.dims[1] = width;
    EXPECT_EQ(recur_output_init(&out, RECUR_OUTPUT_VERSION), RECUR_OK);
    out.name = "out";
    out.data = buf.data();
    out.capacity = buf.size();
  }
  recur_status run(const recur_model* m) { return recur_model_run_named(m, &in, 1, &out, 1, nullptr); }
};

TEST(CApiText, VersionIsAtLeast07) {
  EXPECT_GE(RECUR_VERSION_MINOR, 7);  // string tensors since 0.7
  EXPECT_EQ(RECUR_DTYPE_STRING, 4);
}

TEST(CApiText, InputDtypeReportsStrings) {
  RECUR_SKIP_WITHOUT_FILES();
  const rt::Model m = open("graphs/text/keras3/text_vectorization_lstm.keras");
  int32_t dtype = 0, ids = -1;
  ASSERT_EQ(recur_model_input_dtype(m.get(), 0, &dtype), RECUR_OK) << recur_last_error();
  EXPECT_EQ(dtype, RECUR_DTYPE_STRING);
  ASSERT_EQ(recur_model_input(m.get(), 0, nullptr, nullptr, nullptr, &ids), RECUR_OK);
  EXPECT_EQ(ids, 0) << "a string input holds no token ids";
  EXPECT_RECUR_ERR(recur_model_input_dtype(m.get(), 1, &dtype), RECUR_ERR_INVALID_ARGUMENT, "index 1");
  EXPECT_RECUR_ERR(recur_model_input_dtype(m.get(), 0, nullptr), RECUR_ERR_INVALID_ARGUMENT, "dtype");
  EXPECT_RECUR_ERR(recur_model_input_dtype(nullptr, 0, &dtype), RECUR_ERR_INVALID_ARGUMENT, "model");
  // A numeric model's inputs: float32, or int64 for token ids.
  const rt::Model f = open("graphs/keras3/masking_sequential.keras");
  ASSERT_EQ(recur_model_input_dtype(f.get(), 0, &dtype), RECUR_OK);
  EXPECT_EQ(dtype, RECUR_DTYPE_FLOAT32);
  const rt::Model ids_model = open("graphs/text/keras3/string_lookup_gru.keras");
  ASSERT_EQ(recur_model_input_dtype(ids_model.get(), 0, &dtype), RECUR_OK);
  EXPECT_EQ(dtype, RECUR_DTYPE_STRING);
}

TEST(CApiText, RunsAndRepeats) {
  RECUR_SKIP_WITHOUT_FILES();
  const rt::Model m = open("graphs/text/keras3/text_vectorization_lstm.keras");
  TextRun a({"The cat sat", "naïve «café»", ""});
  ASSERT_EQ(a.run(m.get()), RECUR_OK) << recur_last_error();
  EXPECT_EQ(a.out.rank, 2);
  EXPECT_EQ(a.out.dims[0], 3);
  EXPECT_EQ(a.out.length, 6u);
  // Case and ASCII punctuation are standardized away: the same ids, the same numbers.
  TextRun b({"THE cat, SAT!", "naïve «café»", "!?"});
  ASSERT_EQ(b.run(m.get()), RECUR_OK) << recur_last_error();
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(a.buf[i], b.buf[i]) << i;
}

TEST(CApiText, BadStringsNameTheInput) {
  RECUR_SKIP_WITHOUT_FILES();
  const rt::Model m = open("graphs/text/keras3/text_vectorization_lstm.keras");
  {
    TextRun r({"ok", nullptr, "ok"});
    EXPECT_RECUR_ERR(r.run(m.get()), RECUR_ERR_INVALID_ARGUMENT, "inputs[0] ('text').data[1]: the string is NULL");
    EXPECT_EQ(r.buf[0], -7.0f) << "a failed run writes nothing";
  }
  for (const char* bad : {"caf\xC3", "\xC3\x28", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xFF"}) {
    TextRun r({"ok", "ok", bad});
    EXPECT_RECUR_ERR(r.run(m.get()), RECUR_ERR_INVALID_ARGUMENT, "('text').data[2]: not valid UTF-8");
  }
  {
    TextRun r({"a", "b", "c"});
    r.in.dtype = RECUR_DTYPE_FLOAT32;
    const float f[3] = {1, 2, 3};
    r.in.data = f;
    EXPECT_RECUR_ERR(r.run(m.get()), RECUR_ERR_INVALID_ARGUMENT, "('text').dtype: the input holds strings");
  }
  {
    TextRun r({"a", "b", "c"});
    r.in.length = 2;
    EXPECT_RECUR_ERR(r.run(m.get()), RECUR_ERR_SHAPE, "('text').length");
  }
  {
    TextRun r({"a", "b", "c"});
    r.in.data = nullptr;
    EXPECT_RECUR_ERR(r.run(m.get()), RECUR_ERR_INVALID_ARGUMENT, "('text').data: is NULL");
  }
  {
    TextRun r({"a", "b", "c"});
    const uint8_t mask[3] = {1, 1, 1};
    r.in.mask = mask;
    r.in.mask_length = 3;
    EXPECT_RECUR_ERR(r.run(m.get()), RECUR_ERR_INVALID_ARGUMENT, "('text').mask");
  }
  {
    TextRun r({"a", "b", "c", "d", "e", "f"}, 2);  // (3, 2): a split text input is (B, 1)
    EXPECT_RECUR_ERR(r.run(m.get()), RECUR_ERR_SHAPE, "('text').dims");
  }
  {
    TextRun r({"a", "b", "c"});
    r.in.dtype = 9;
    EXPECT_RECUR_ERR(r.run(m.get()), RECUR_ERR_INVALID_ARGUMENT, "RECUR_DTYPE_STRING (4)");
  }
}

TEST(CApiText, StringsToANumericInputAreRefused) {
  RECUR_SKIP_WITHOUT_FILES();
  const rt::Model m = open("graphs/keras3/masking_sequential.keras");
  const char* name = nullptr;
  int32_t rank = 0;
  int64_t dims[RECUR_MAX_RANK];
  ASSERT_EQ(recur_model_input(m.get(), 0, &name, &rank, dims, nullptr), RECUR_OK);
  std::vector<const char*> texts(static_cast<std::size_t>(3 * 4 * dims[2]), "x");
  recur_tensor in;
  ASSERT_EQ(recur_tensor_init(&in, RECUR_TENSOR_VERSION), RECUR_OK);
  in.name = name;
  in.dtype = RECUR_DTYPE_STRING;
  in.data = texts.data();
  in.length = texts.size();
  in.rank = 3;
  in.dims[0] = 3;
  in.dims[1] = 4;
  in.dims[2] = dims[2];
  EXPECT_RECUR_ERR(recur_model_run_named(m.get(), &in, 1, nullptr, 0, nullptr), RECUR_ERR_INVALID_ARGUMENT,
                   "RECUR_DTYPE_STRING, but the input holds numbers");
}

TEST(CApiText, FloatEntryPointsAndStreamsRefuseText) {
  RECUR_SKIP_WITHOUT_FILES();
  const rt::Model m = open("graphs/text/keras3/text_vectorization_lstm.keras");
  int32_t steps = 1;
  std::vector<float> in(3), out(6);
  EXPECT_RECUR_ERR(recur_model_run_inputs(m.get(), 3, &steps, 1, in.data(), in.size(), nullptr, 0, out.data(), out.size()),
                   RECUR_ERR_INVALID_ARGUMENT, "input 'text' holds strings");
  const char* why = nullptr;
  ASSERT_EQ(recur_model_streamable(m.get(), &why), RECUR_OK);
  ASSERT_NE(why, nullptr);
  EXPECT_NE(std::string(why).find("layer 'text_vectorization' (TextVectorization)"), std::string::npos) << why;
  recur_model_state* s = nullptr;
  EXPECT_CREATE_ERR(s, recur_model_state_create(&s, m.get(), 3), RECUR_ERR_UNSUPPORTED, "text_vectorization");
}

// Without output_sequence_length the ids are padded to the longest row: the output's size is
// known after the run, and a buffer too small is refused with nothing written.
TEST(CApiText, RaggedOutputsAreCheckedAfterTheRun) {
  RECUR_SKIP_WITHOUT_FILES();
  const rt::Model m = open("graphs/text/keras3/text_vectorization_ragged_bigrams.keras");
  TextRun r({"the cat", "dogs cats the cat sat", ""});
  recur_output shape = r.out;
  ASSERT_EQ(recur_model_output_shapes(m.get(), &r.in, 1, &shape, 1), RECUR_OK) << recur_last_error();
  EXPECT_EQ(shape.length, 6u);
  r.out.capacity = 5;
  EXPECT_RECUR_ERR(r.run(m.get()), RECUR_ERR_SHAPE, "capacity");
  EXPECT_EQ(r.buf[0], -7.0f);
  r.out.capacity = r.buf.size();
  ASSERT_EQ(r.run(m.get()), RECUR_OK) << recur_last_error();
  EXPECT_EQ(r.out.length, 6u);
}

TEST(CApiText, UnknownTokenWithoutOovIndexNamesTheLayer) {
  RECUR_SKIP_WITHOUT_FILES();
  const rt::Model m = open("graphs/text/keras3/string_lookup_count.keras");
  TextRun ok({"the", "cat", "", "café", "unknown", "sat", "sat", "sat", "sat", "sat", "", "", "", "", ""}, 5);
  ASSERT_EQ(ok.run(m.get()), RECUR_OK) << recur_last_error();
  TextRun bad({"the", "cat", "", "café", "zebra", "sat", "sat", "sat", "sat", "sat", "", "", "", "", ""}, 5);
  EXPECT_RECUR_ERR(bad.run(m.get()), RECUR_ERR_INVALID_ARGUMENT, "'zebra' is not in the vocabulary");
}

// Sizing the outputs of a stateful text model runs it to count the tokens, and leaves its states
// as they were.
TEST(CApiText, OutputShapesOfAStatefulTextModelKeepTheStates) {
  RECUR_SKIP_WITHOUT_FILES();
  const rt::Model m = open("graphs/text/keras3/text_vectorization_stateful_gru.keras");
  TextRun first({"the cat sat", "dogs", ""});
  ASSERT_EQ(first.run(m.get()), RECUR_OK) << recur_last_error();
  ASSERT_EQ(recur_model_reset_states(m.get()), RECUR_OK);
  TextRun again({"the cat sat", "dogs", ""});
  recur_output shape = again.out;
  ASSERT_EQ(recur_model_output_shapes(m.get(), &again.in, 1, &shape, 1), RECUR_OK) << recur_last_error();
  EXPECT_EQ(shape.length, 6u);
  ASSERT_EQ(again.run(m.get()), RECUR_OK) << recur_last_error();
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(first.buf[i], again.buf[i]) << i;
  // Without the reset the states carry on: another output.
  TextRun carried({"the cat sat", "dogs", ""});
  ASSERT_EQ(carried.run(m.get()), RECUR_OK);
  EXPECT_NE(carried.buf[0], first.buf[0]);
}

// recur.hpp: texts as std::string, and TensorInfo::strings.
TEST(CApiText, CppWrapperTakesStrings) {
  RECUR_SKIP_WITHOUT_FILES();
  const recur::Model m(kKeras + "/graphs/text/keras3/text_vectorization_lstm.keras");
  ASSERT_EQ(m.inputs().size(), 1u);
  EXPECT_TRUE(m.inputs()[0].strings);
  EXPECT_FALSE(m.inputs()[0].token_ids);
  const std::vector<std::string> texts = {"The cat sat", "naïve «café»", ""};
  const auto out = m.run({recur::Input("text", texts, {3, 1})});
  TextRun c({"The cat sat", "naïve «café»", ""});
  ASSERT_EQ(c.run(m.get()), RECUR_OK) << recur_last_error();
  ASSERT_EQ(out.at(0).data.size(), 6u);
  for (std::size_t i = 0; i < 6; ++i) EXPECT_EQ(out[0].data[i], c.buf[i]) << i;
}

}  // namespace
