// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the C ABI tests. Only the public header is used: these tests see the library
// exactly as a C caller does.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "recur/recur.h"

// Tests that open model files skip, saying why, in a library built without file support.
#define RECUR_SKIP_WITHOUT_FILES()                                                             \
  do {                                                                                         \
    if (!RECUR_TEST_WITH_FILES)                                                                \
      GTEST_SKIP() << "recur was built without model-file support (RECUR_WITH_FILES=OFF)"; \
  } while (0)

namespace rt {

// A file's bytes ({} when it cannot be read), e.g. a model for recur_model_open_memory.
inline std::vector<char> file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

struct LayerDeleter {
  void operator()(recur_layer* l) const { recur_layer_destroy(l); }
};
struct StateDeleter {
  void operator()(recur_state* s) const { recur_state_destroy(s); }
};
struct ModelDeleter {
  void operator()(recur_model* m) const { recur_model_destroy(m); }
};
struct StreamDeleter {
  void operator()(recur_model_state* s) const { recur_model_state_destroy(s); }
};
struct RunOptionsDeleter {
  void operator()(recur_run_options* o) const { recur_run_options_destroy(o); }
};
using Layer = std::unique_ptr<recur_layer, LayerDeleter>;
using State = std::unique_ptr<recur_state, StateDeleter>;
using Model = std::unique_ptr<recur_model, ModelDeleter>;
using Stream = std::unique_ptr<recur_model_state, StreamDeleter>;
using RunOptions = std::unique_ptr<recur_run_options, RunOptionsDeleter>;

// A named model input, initialised by recur_tensor_init first (over garbage: it must set every field).
inline recur_tensor tensor(const char* name, int32_t dtype, const void* data, size_t length, std::vector<int64_t> dims) {
  recur_tensor t;
  std::memset(&t, 0xAB, sizeof t);
  EXPECT_EQ(recur_tensor_init(&t, RECUR_TENSOR_VERSION), RECUR_OK);
  t.name = name;
  t.dtype = dtype;
  t.data = data;
  t.length = length;
  t.rank = static_cast<int32_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) t.dims[i] = dims[i];
  return t;
}

// Options with defaults, the given shape and a fixed seed (deterministic initial weights).
inline recur_layer_options options(int32_t type, int32_t units, int32_t input_size,
                                   int32_t dialect = RECUR_DIALECT_KERAS3) {
  recur_layer_options o;
  std::memset(&o, 0xAB, sizeof o);  // garbage first: options_init must set every field
  EXPECT_EQ(recur_layer_options_init(&o, RECUR_LAYER_OPTIONS_VERSION), RECUR_OK);
  o.type = type;
  o.units = units;
  o.input_size = input_size;
  o.dialect = dialect;
  o.seed = 1234;
  return o;
}

inline Layer make(const recur_layer_options& o) {
  recur_layer* l = nullptr;
  const recur_status s = recur_layer_create(&l, &o);
  EXPECT_EQ(s, RECUR_OK) << recur_last_error();
  EXPECT_NE(l, nullptr);
  return Layer(l);
}

inline Layer make_json(const std::string& json, int32_t input_size = 0, int32_t dialect = RECUR_DIALECT_AUTO) {
  recur_layer* l = nullptr;
  const recur_status s = recur_layer_create_from_json(&l, json.c_str(), input_size, dialect, nullptr);
  EXPECT_EQ(s, RECUR_OK) << recur_last_error() << "\n" << json;
  return Layer(l);
}

inline State make_state(const recur_layer* l, int32_t batch) {
  recur_state* s = nullptr;
  const recur_status st = recur_state_create(&s, l, batch);
  EXPECT_EQ(st, RECUR_OK) << recur_last_error();
  return State(s);
}

// Deterministic data: a smooth, sign-changing sequence.
inline std::vector<float> data(std::size_t n, float phase = 0.0f, float scale = 0.8f) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * std::sin(0.37f * static_cast<float>(i) + phase);
  return v;
}

inline std::vector<float> all_weights(const recur_layer* l) {
  std::size_t n = 0;
  EXPECT_EQ(recur_layer_weights_length(l, &n), RECUR_OK) << recur_last_error();
  std::vector<float> w(n);
  EXPECT_EQ(recur_layer_get_weights(l, w.data(), w.size()), RECUR_OK) << recur_last_error();
  return w;
}

inline std::vector<float> weight(const recur_layer* l, int32_t index) {
  int64_t dims[2] = {0, 0};
  int32_t nd = 0;
  EXPECT_EQ(recur_layer_weight_shape(l, index, dims, &nd), RECUR_OK) << recur_last_error();
  std::size_t n = 1;
  for (int32_t i = 0; i < nd; ++i) n *= static_cast<std::size_t>(dims[i]);
  std::vector<float> w(n);
  EXPECT_EQ(recur_layer_get_weight(l, index, w.data(), w.size()), RECUR_OK) << recur_last_error();
  return w;
}

// Sets a known message on this thread, so an error check sees the message of the call under
// test and not a stale one.
inline std::string prime_error() {
  recur_layer_options o;
  EXPECT_EQ(recur_layer_options_init(&o, 999u), RECUR_ERR_UNSUPPORTED);
  return recur_last_error();
}

inline ::testing::AssertionResult check_error(recur_status got, recur_status want, const std::string& needle,
                                              const std::string& sentinel, const char* expr) {
  const std::string msg = recur_last_error();
  const char* ss = recur_status_string(got);
  if (got != want)
    return ::testing::AssertionFailure() << expr << "\n  returned " << got << " (" << ss << "), expected " << want
                                         << " (" << recur_status_string(want) << ")\n  message: " << msg;
  if (ss == nullptr || std::string(ss).empty() || std::string(ss) == "unknown status")
    return ::testing::AssertionFailure() << expr << ": recur_status_string gave no description for " << got;
  if (msg == sentinel)
    return ::testing::AssertionFailure() << expr << ": recur_last_error() was not set by the failing call";
  if (msg.find(needle) == std::string::npos)
    return ::testing::AssertionFailure() << expr << "\n  message \"" << msg << "\" does not mention \"" << needle
                                         << "\"";
  return ::testing::AssertionSuccess();
}

}  // namespace rt

// Checks the status code and that recur_last_error() (set by this very call) contains `needle`.
#define EXPECT_RECUR_ERR(call, code, needle)                                                      \
  do {                                                                                            \
    const std::string rt_sentinel_ = ::rt::prime_error();                                         \
    const recur_status rt_status_ = (call);                                                       \
    EXPECT_TRUE(::rt::check_error(rt_status_, (code), (needle), rt_sentinel_, #call));            \
  } while (0)

// The same for a create function: also checks that *out was set to NULL.
#define EXPECT_CREATE_ERR(out, call, code, needle)                                                \
  do {                                                                                            \
    static int rt_dummy_;                                                                         \
    (out) = reinterpret_cast<decltype(out)>(&rt_dummy_);                                          \
    EXPECT_RECUR_ERR(call, code, needle);                                                         \
    EXPECT_EQ((out), nullptr) << "a failing create must set *out to NULL: " #call;              \
  } while (0)

#define ASSERT_RECUR_OK(call) ASSERT_EQ((call), RECUR_OK) << #call << ": " << recur_last_error()
#define EXPECT_RECUR_OK(call) EXPECT_EQ((call), RECUR_OK) << #call << ": " << recur_last_error()
