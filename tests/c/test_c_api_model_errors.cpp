// SPDX-License-Identifier: Apache-2.0
// Error paths of the model-file functions that need no model file: NULL handles and pointers,
// missing and corrupt files. (Opening real .keras/.h5 files is covered with the model tests.)
#include <cstdio>
#include <fstream>
#include <functional>

#include "c_api_test_util.hpp"

namespace {

std::string temp_file(const std::string& name, const std::string& contents) {
  const std::string path = ::testing::TempDir() + "recur_c_api_" + name;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << contents;
  return path;
}

}  // namespace

TEST(CApiModelErrors, NullModelHandleEverywhere) {
  recur_model_info info;
  info.version = RECUR_MODEL_INFO_VERSION;
  const char* s = nullptr;
  int32_t i = 0;
  size_t n = 0;
  recur_layer* layer = nullptr;
  float buf[8] = {0};
  struct Fn {
    const char* name;
    std::function<recur_status()> call;
  };
  const Fn fns[] = {
      {"recur_model_get_info", [&] { return recur_model_get_info(nullptr, &info); }},
      {"recur_model_layer", [&] { return recur_model_layer(nullptr, 0, &s, &s, &s, &i, &i, &i); }},
      {"recur_model_get_layer", [&] { return recur_model_get_layer(nullptr, "gru", &layer); }},
      {"recur_model_output_length", [&] { return recur_model_output_length(nullptr, 1, 1, &n); }},
      {"recur_model_run", [&] { return recur_model_run(nullptr, buf, 2, 1, 2, nullptr, 0, buf, 2); }},
  };
  for (const Fn& f : fns) {
    SCOPED_TRACE(f.name);
    EXPECT_RECUR_ERR(f.call(), RECUR_ERR_INVALID_ARGUMENT, "model is NULL");
    EXPECT_RECUR_ERR(f.call(), RECUR_ERR_INVALID_ARGUMENT, f.name);
  }
  EXPECT_EQ(layer, nullptr);
  recur_model_destroy(nullptr);  // no-op
}

TEST(CApiModelErrors, OpenArguments) {
  RECUR_SKIP_WITHOUT_FILES();
  recur_model* m = nullptr;
  EXPECT_RECUR_ERR(recur_model_open(nullptr, "model.keras"), RECUR_ERR_INVALID_ARGUMENT, "out");
  EXPECT_CREATE_ERR(m, recur_model_open(&m, nullptr), RECUR_ERR_INVALID_ARGUMENT, "path");
}

TEST(CApiModelErrors, OpenMissingFile) {
  RECUR_SKIP_WITHOUT_FILES();
  recur_model* m = nullptr;
  const std::string path = ::testing::TempDir() + "recur_c_api_no_such_model.keras";
  std::remove(path.c_str());
  EXPECT_CREATE_ERR(m, recur_model_open(&m, path.c_str()), RECUR_ERR_IO, "recur_c_api_no_such_model.keras");
}

TEST(CApiModelErrors, OpenCorruptFiles) {
  RECUR_SKIP_WITHOUT_FILES();
  const struct {
    const char* name;
    std::string contents;
  } files[] = {
      {"empty.keras", ""},
      {"text.h5", "this is not a Keras model at all\n"},
      {"truncated_zip.keras", std::string("PK\x03\x04\x14\x00\x00\x00", 8)},
      {"truncated_hdf5.h5", std::string("\x89HDF\r\n\x1a\n\x00\x00", 10)},
  };
  for (const auto& f : files) {
    SCOPED_TRACE(f.name);
    const std::string path = temp_file(f.name, f.contents);
    recur_model* m = nullptr;
    EXPECT_CREATE_ERR(m, recur_model_open(&m, path.c_str()), RECUR_ERR_IO, f.name);
    recur_model_destroy(m);
    std::remove(path.c_str());
  }
}
