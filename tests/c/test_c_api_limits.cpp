// SPDX-License-Identifier: Apache-2.0
// Resource limits (0.5): every limit can be read, set and restored, every one of them refuses
// what goes over it with RECUR_ERR_LIMIT and a message naming it, raising it lets the same call
// through, and a refused call changes nothing. Also the status classes of malformed JSON.
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "c_api_test_util.hpp"

namespace {

const std::string kModels = RECUR_TEST_MODELS_DIR;

// Sets a limit for one test and puts the default back afterwards, whatever happens.
class ScopedLimit {
 public:
  ScopedLimit(int32_t which, uint64_t value) : which_(which) {
    EXPECT_EQ(recur_set_limit(which, value), RECUR_OK) << recur_last_error();
  }
  ~ScopedLimit() { recur_set_limit(which_, 0); }

 private:
  int32_t which_;
};

void expect_limit(recur_status st, const char* limit_name) {
  EXPECT_EQ(st, RECUR_ERR_LIMIT) << recur_last_error();
  const std::string msg = recur_last_error();
  EXPECT_NE(msg.find(std::string(" ") + limit_name + " limit of "), std::string::npos) << msg;
  EXPECT_NE(msg.find("recur_set_limit("), std::string::npos) << msg;
}

TEST(CApiLimits, GetSetDefaultAndRestore) {
  const uint64_t defaults[] = {65536,       1u << 20,   256ull << 20, 1ull << 30, 4ull << 30,
                               1ull << 30,  256ull << 20, 512ull << 20, 1u << 20,  1ull << 31,
                               1ull << 38};
  for (int32_t i = RECUR_LIMIT_UNITS; i <= RECUR_LIMIT_RUN_WORK; ++i) {
    uint64_t v = 0, d = 0;
    ASSERT_RECUR_OK(recur_default_limit(i, &d));
    EXPECT_EQ(d, defaults[i]) << "limit " << i;
    ASSERT_RECUR_OK(recur_get_limit(i, &v));
    EXPECT_EQ(v, d);
    ASSERT_RECUR_OK(recur_set_limit(i, 12345));
    ASSERT_RECUR_OK(recur_get_limit(i, &v));
    EXPECT_EQ(v, 12345u);
    ASSERT_RECUR_OK(recur_set_limit(i, 0));  // back to the default
    ASSERT_RECUR_OK(recur_get_limit(i, &v));
    EXPECT_EQ(v, d);
  }
  EXPECT_STREQ(recur_status_string(RECUR_ERR_LIMIT), "over a resource limit");
}

TEST(CApiLimits, BadArguments) {
  uint64_t v = 7;
  for (int32_t bad : {-1, 11, 1000}) {
    EXPECT_EQ(recur_get_limit(bad, &v), RECUR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(recur_last_error()).find("limit: expected a recur_limit"), std::string::npos)
        << recur_last_error();
    EXPECT_EQ(recur_set_limit(bad, 5), RECUR_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(recur_default_limit(bad, &v), RECUR_ERR_INVALID_ARGUMENT);
  }
  EXPECT_EQ(v, 7u);
  EXPECT_EQ(recur_get_limit(RECUR_LIMIT_UNITS, nullptr), RECUR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(recur_last_error()).find("value"), std::string::npos) << recur_last_error();
  EXPECT_EQ(recur_default_limit(RECUR_LIMIT_UNITS, nullptr), RECUR_ERR_INVALID_ARGUMENT);
}

TEST(CApiLimits, UnitsAndWeightBytes) {
  recur_layer* l = nullptr;
  // Creation runs no initializer, so a big layer is refused (or made) at once, by its sizes.
  recur_layer_options o = rt::options(RECUR_LAYER_GRU, 70000, 4);
  expect_limit(recur_layer_create(&l, &o), "units");
  EXPECT_EQ(l, nullptr);
  EXPECT_NE(std::string(recur_last_error()).find("units (GRU): 70000 is over"), std::string::npos)
      << recur_last_error();
  {
    ScopedLimit raise(RECUR_LIMIT_UNITS, 100000);
    expect_limit(recur_layer_create(&l, &o), "weight_bytes");  // 3 * 70000^2 floats
  }
  o = rt::options(RECUR_LAYER_LSTM, 64, 32);
  {
    ScopedLimit lower(RECUR_LIMIT_WEIGHT_BYTES, 4 * 4 * 64 * (32 + 64));
    expect_limit(recur_layer_create(&l, &o), "weight_bytes");
    EXPECT_EQ(l, nullptr);
  }
  rt::Layer ok = rt::make(o);  // the default lets it through
  // The same through JSON.
  expect_limit(recur_layer_create_from_json(&l, R"({"class_name":"LSTM","config":{"units":100000}})", 8,
                                            RECUR_DIALECT_KERAS3, nullptr),
               "units");
}

// The weight limit charges what the CPU kernels hold: each gate padded to whole panels (2 vectors
// of columns). A 1-unit GRU of 65536 inputs is 786 KB in Keras's layout and 25 MB held by the
// AVX-512 kernels; charged by Keras's size it got under a 1 MiB limit.
TEST(CApiLimits, WeightBytesCountPaddedGates) {
  const std::string set = recur_cpu_kernels();
  const uint64_t nr = set == "avx512" ? 32 : set == "avx2" ? 16 : 8;
  const uint64_t features = 1000, gates = 3;
  const uint64_t keras = 4 * (features * gates + gates + 2 * gates);
  const uint64_t held = 4 * (features * gates * nr + gates * nr + 2 * gates * nr);
  recur_layer* l = nullptr;
  recur_layer_options o = rt::options(RECUR_LAYER_GRU, 1, static_cast<int32_t>(features));
  {
    ScopedLimit lower(RECUR_LIMIT_WEIGHT_BYTES, held - 1);
    ASSERT_GT(held - 1, keras);
    expect_limit(recur_layer_create(&l, &o), "weight_bytes");
    EXPECT_EQ(l, nullptr);
    const std::string msg = recur_last_error();
    EXPECT_NE(msg.find("units=1 and input_size=1000 (each gate held padded to " + std::to_string(nr) +
                       " columns by the " + set + " kernels): needs " + std::to_string(held) + " bytes"),
              std::string::npos)
        << msg;
  }
  {
    ScopedLimit exact(RECUR_LIMIT_WEIGHT_BYTES, held);
    ASSERT_RECUR_OK(recur_layer_create(&l, &o));
    size_t floats = 0;
    ASSERT_RECUR_OK(recur_layer_weights_length(l, &floats));
    EXPECT_EQ(4 * floats, keras);  // Keras's layout (reset_after: 2 x 3 biases) is what it reports
    recur_layer_destroy(l);
  }
  // A width of whole panels is charged its Keras size: nothing is padded.
  o = rt::options(RECUR_LAYER_GRU, static_cast<int32_t>(nr), 4);
  {
    ScopedLimit exact(RECUR_LIMIT_WEIGHT_BYTES, 4 * (4 * gates * nr + nr * gates * nr + 2 * gates * nr));
    ASSERT_RECUR_OK(recur_layer_create(&l, &o));
    recur_layer_destroy(l);
  }
  // And through JSON, as the fuzzer found it.
  ScopedLimit mib(RECUR_LIMIT_WEIGHT_BYTES, 1u << 20);
  expect_limit(recur_layer_create_from_json(&l, R"({"class_name":"GRU","config":{"units":1}})", 65536,
                                            RECUR_DIALECT_KERAS3, nullptr),
               "weight_bytes");
  EXPECT_EQ(l, nullptr);
}

TEST(CApiLimits, BatchAndStateBytes) {
  recur_layer* l = nullptr;
  // A 100-byte config asking for a stateful batch of 10^8.
  const char* big = R"({"class_name":"GRU","config":{"units":4,"stateful":true,"batch_input_shape":[100000000,3,8]}})";
  expect_limit(recur_layer_create_from_json(&l, big, 0, RECUR_DIALECT_KERAS2, nullptr), "batch");
  const char* wide = R"({"class_name":"LSTM","config":{"units":4096,"stateful":true,"batch_input_shape":[8192,3,8]}})";
  expect_limit(recur_layer_create_from_json(&l, wide, 0, RECUR_DIALECT_KERAS2, nullptr), "state_bytes");
  EXPECT_EQ(l, nullptr);

  rt::Layer layer = rt::make(rt::options(RECUR_LAYER_LSTM, 8, 4));
  recur_state* s = nullptr;
  expect_limit(recur_state_create(&s, layer.get(), (1 << 20) + 1), "batch");
  EXPECT_EQ(s, nullptr);
  {
    ScopedLimit lower(RECUR_LIMIT_STATE_BYTES, 3 * 16 * 8 * 4 - 1);  // h, c and the carried output
    expect_limit(recur_state_create(&s, layer.get(), 16), "state_bytes");
    EXPECT_EQ(s, nullptr);
  }
  rt::State ok = rt::make_state(layer.get(), 16);
  ScopedLimit raise(RECUR_LIMIT_BATCH, 200000000);
  ScopedLimit raise_state(RECUR_LIMIT_STATE_BYTES, 1ull << 40);
  // Only the batch limit stood in the way: with it raised the same config fails on nothing else
  // before allocating, so check with a small one instead of allocating 10^8 rows.
  const char* fits = R"({"class_name":"GRU","config":{"units":4,"stateful":true,"batch_input_shape":[3000000,3,8]}})";
  rt::Layer stateful = rt::make_json(fits, 0, RECUR_DIALECT_KERAS2);
}

// A cell's dropout masks are sized by the batch the caller names, with no buffer of the caller's
// behind it (out may be NULL): the batch and state_bytes limits bound them.
TEST(CApiLimits, CellDropoutMasks) {
  recur_layer_options o = rt::options(RECUR_LAYER_LSTM_CELL, 64, 64);
  o.dropout = 0.5f;
  o.recurrent_dropout = 0.5f;
  rt::Layer cell = rt::make(o);
  int32_t count = -1;
  expect_limit(recur_cell_get_dropout_mask(cell.get(), (1 << 20) + 1, 1, nullptr, 0, &count), "batch");
  expect_limit(recur_cell_get_recurrent_dropout_mask(cell.get(), (1 << 20) + 1, 1, nullptr, 0, &count), "batch");
  // 2^20 rows pass the batch limit; 4 masks of (2^20, 64) are 1 GiB, over the 256 MiB default.
  expect_limit(recur_cell_get_recurrent_dropout_mask(cell.get(), 1 << 20, 1, nullptr, 0, &count), "state_bytes");
  {
    ScopedLimit lower(RECUR_LIMIT_STATE_BYTES, 4 * 8 * 64 * 4 - 1);
    expect_limit(recur_cell_get_recurrent_dropout_mask(cell.get(), 8, 1, nullptr, 0, &count), "state_bytes");
  }
  EXPECT_EQ(count, -1);  // nothing written on error
  // Within the limits, and no refused call left a mask of its batch cached.
  ASSERT_EQ(recur_cell_get_recurrent_dropout_mask(cell.get(), 8, 1, nullptr, 0, &count), RECUR_OK)
      << recur_last_error();
  EXPECT_EQ(count, 4);
  std::vector<float> masks(4 * 8 * 64);
  ASSERT_EQ(recur_cell_get_recurrent_dropout_mask(cell.get(), 8, 1, masks.data(), masks.size(), &count), RECUR_OK)
      << recur_last_error();
}

// An OrthogonalRegularizer's penalty compares every pair of rows (or columns): a kernel of 65536
// rows, small as a weight, asks for a 65536 x 65536 product. Its size is checked against
// tensor_bytes before any work; the loss count and names need no penalty and stay available.
TEST(CApiLimits, OrthogonalRegularizerProduct) {
  const char* wide = R"({"class_name":"GRU","config":{"units":1,"kernel_regularizer":)"
                     R"({"class_name":"OrthogonalRegularizer","config":{"factor":0.01,"mode":"rows"}}}})";
  rt::Layer l = rt::make_json(wide, 65536, RECUR_DIALECT_KERAS3);
  int32_t count = -1;
  float value = -7.0f;
  expect_limit(recur_layer_get_losses(l.get(), &value, 1, &count), "tensor_bytes");
  EXPECT_NE(std::string(recur_last_error()).find("kernel_regularizer"), std::string::npos) << recur_last_error();
  EXPECT_EQ(count, -1);
  EXPECT_EQ(value, -7.0f);
  ASSERT_EQ(recur_layer_get_losses(l.get(), nullptr, 0, &count), RECUR_OK) << recur_last_error();
  EXPECT_EQ(count, 1);
  const char* name = nullptr;
  ASSERT_EQ(recur_layer_loss_name(l.get(), 0, &name), RECUR_OK) << recur_last_error();
  EXPECT_STREQ(name, "kernel");

  // 600 rows: a 1.4 MB product, refused under 1 MiB and computed under 2 MiB.
  rt::Layer narrow = rt::make_json(wide, 600, RECUR_DIALECT_KERAS3);
  {
    ScopedLimit lower(RECUR_LIMIT_TENSOR_BYTES, 1 << 20);
    expect_limit(recur_layer_get_losses(narrow.get(), &value, 1, &count), "tensor_bytes");
  }
  ScopedLimit fits(RECUR_LIMIT_TENSOR_BYTES, 2 << 20);
  ASSERT_EQ(recur_layer_get_losses(narrow.get(), &value, 1, &count), RECUR_OK) << recur_last_error();
  EXPECT_EQ(count, 1);
  EXPECT_TRUE(value > 0.0f && value < 0.01f) << value;  // factor 0.01 times a mean |cosine| below 1
}

TEST(CApiLimits, ModelFileWeightAndTensorBytes) {
  RECUR_SKIP_WITHOUT_FILES();
  const std::string path = kModels + "/keras3/tokens.keras";
  const std::vector<char> bytes = rt::file_bytes(path);
  ASSERT_FALSE(bytes.empty());
  recur_model* m = nullptr;
  {
    ScopedLimit lower(RECUR_LIMIT_FILE_BYTES, bytes.size() - 1);
    expect_limit(recur_model_open(&m, path.c_str()), "file_bytes");
    expect_limit(recur_model_open_memory(&m, bytes.data(), bytes.size(), "tokens.keras"), "file_bytes");
    EXPECT_EQ(m, nullptr);
  }
  {
    ScopedLimit lower(RECUR_LIMIT_WEIGHT_BYTES, 64);
    expect_limit(recur_model_open(&m, path.c_str()), "weight_bytes");
    EXPECT_EQ(m, nullptr);
  }
  ASSERT_RECUR_OK(recur_model_open_memory(&m, bytes.data(), bytes.size(), "tokens.keras"));
  const int32_t steps = 5;
  size_t in_len = 0, out_len = 0;
  ASSERT_RECUR_OK(recur_model_inputs_length(m, 2, &steps, 1, &in_len));
  ASSERT_RECUR_OK(recur_model_outputs_length(m, 2, &steps, 1, &out_len));
  std::vector<float> in(in_len, 1.0f), out(out_len, -7.0f), want(out_len);
  ASSERT_RECUR_OK(recur_model_run_inputs(m, 2, &steps, 1, in.data(), in.size(), nullptr, 0, want.data(), want.size()));
  {
    ScopedLimit lower(RECUR_LIMIT_TENSOR_BYTES, 16);
    expect_limit(recur_model_run_inputs(m, 2, &steps, 1, in.data(), in.size(), nullptr, 0, out.data(), out.size()),
                 "tensor_bytes");
    for (float v : out) ASSERT_EQ(v, -7.0f) << "a refused run wrote its output";
  }
  ASSERT_RECUR_OK(recur_model_run_inputs(m, 2, &steps, 1, in.data(), in.size(), nullptr, 0, out.data(), out.size()));
  EXPECT_EQ(out, want);
  recur_model_destroy(m);
}

TEST(CApiLimits, RecurrentModelStreamChecksItsStates) {
  RECUR_SKIP_WITHOUT_FILES();
  recur_model* m = nullptr;
  ASSERT_RECUR_OK(recur_model_open(&m, (kModels + "/keras3/tokens.keras").c_str()));
  recur_model_state* s = nullptr;
  if (recur_model_streamable(m, nullptr) == RECUR_OK) {
    expect_limit(recur_model_state_create(&s, m, (1 << 20) + 1), "batch");
    EXPECT_EQ(s, nullptr);
  }
  recur_model_destroy(m);
}

// Malformed JSON is a parse error, a field of the wrong type an invalid argument; neither is
// ever an internal error.
TEST(CApiStatusClasses, LayerJson) {
  struct Case {
    const char* json;
    recur_status want;
    const char* says;
  } cases[] = {
      {R"({"class_name":"GRU","config":{"units":1e309}})", RECUR_ERR_PARSE, "malformed JSON"},
      {R"({"class_name":"GRU","config":{"units":4,"dropout":-1e400}})", RECUR_ERR_PARSE, "malformed JSON"},
      {R"({"class_name":"GRU","config":{"units":4,)", RECUR_ERR_PARSE, "malformed JSON"},
      {"[1,2]", RECUR_ERR_PARSE, "expected an object"},
      {R"({"class_name":"GRU","config":{"units":"4"}})", RECUR_ERR_INVALID_ARGUMENT, "units"},
      {R"({"class_name":"GRU","config":{"units":4,"kernel_initializer":{"class_name":5}}})",
       RECUR_ERR_INVALID_ARGUMENT, "kernel_initializer"},
      {R"({"class_name":"GRU","config":{"units":4,"kernel_regularizer":{"class_name":"L1L2","config":{"l1":"x"}}}})",
       RECUR_ERR_INVALID_ARGUMENT, "kernel_regularizer.l1"},
      {R"({"class_name":"GRU","config":{"units":4,"activation":[1]}})", RECUR_ERR_INVALID_ARGUMENT, "activation"},
      {R"({"class_name":"Dense","config":{"units":4}})", RECUR_ERR_UNSUPPORTED, "class_name"},
      {R"({"class_name":"GRU","config":{"units":4,"stateful":true,"batch_input_shape":[100000000,3,8]}})",
       RECUR_ERR_LIMIT, "batch limit"},
      // Integers beyond int's range are refused, never wrapped (2^32 + 2 must not pass as 2).
      {R"({"class_name":"GRU","config":{"units":4,"stateful":true,"batch_input_shape":[4294967298,3,8]}})",
       RECUR_ERR_INVALID_ARGUMENT, "out of range"},
      {R"({"class_name":"GRU","config":{"units":4,"stateful":true,"batch_size":4294967298}})",
       RECUR_ERR_INVALID_ARGUMENT, "batch_size: 4294967298 is out of range"},
      {R"({"class_name":"GRU","config":{"units":4,"batch_input_shape":[null,3,4294967304]}})",
       RECUR_ERR_INVALID_ARGUMENT, "out of range"},
      {R"({"class_name":"GRU","config":{"units":18446744073709551615}})", RECUR_ERR_INVALID_ARGUMENT,
       "units: 18446744073709551615 is out of range"},
      {R"({"class_name":"GRU","config":{"units":4,"kernel_constraint":{"class_name":"MaxNorm","config":{"axis":4294967296}}}})",
       RECUR_ERR_INVALID_ARGUMENT, "kernel_constraint.axis"},
  };
  for (const Case& c : cases) {
    recur_layer* l = nullptr;
    EXPECT_EQ(recur_layer_create_from_json(&l, c.json, 8, RECUR_DIALECT_KERAS2, nullptr), c.want) << c.json;
    EXPECT_NE(std::string(recur_last_error()).find(c.says), std::string::npos) << recur_last_error();
    EXPECT_EQ(l, nullptr);
  }
  // Nesting deep enough to overflow a recursive printer is refused before parsing.
  for (const std::string field : {"activation", "kernel_initializer", "units"}) {
    const std::string deep = R"({"class_name":"GRU","config":{"units":4,")" + field + "\":" +
                             std::string(200000, '[') + std::string(200000, ']') + "}}";
    recur_layer* l = nullptr;
    EXPECT_EQ(recur_layer_create_from_json(&l, deep.c_str(), 8, RECUR_DIALECT_KERAS2, nullptr), RECUR_ERR_PARSE);
    EXPECT_NE(std::string(recur_last_error()).find("nested deeper than 256"), std::string::npos) << recur_last_error();
  }
}

TEST(CApiStatusClasses, DirectoryIsNotAModel) {
  RECUR_SKIP_WITHOUT_FILES();
  recur_model* m = nullptr;
  EXPECT_EQ(recur_model_open(&m, kModels.c_str()), RECUR_ERR_IO);
  EXPECT_NE(std::string(recur_last_error()).find("is a directory"), std::string::npos) << recur_last_error();
  EXPECT_EQ(m, nullptr);
}

}  // namespace
