// SPDX-License-Identifier: Apache-2.0
// A library built without file support (RECUR_WITH_FILES=OFF) keeps the model-file functions (the
// ABI does not change) and answers RECUR_ERR_UNSUPPORTED, saying why. (That layers built from JSON
// still match Keras there is the parity suite's job: it runs in that build too.)
#include "c_api_test_util.hpp"

namespace {

bool says_no_file_support(const char* message) {
  return std::string(message).find("built without model-file support") != std::string::npos;
}

}  // namespace

TEST(CApiFileSupport, ModelFunctionsSayTheLibraryHasNoFileSupport) {
  if (RECUR_TEST_WITH_FILES) GTEST_SKIP() << "this library reads model files (RECUR_WITH_FILES=ON)";
  recur_model* m = nullptr;
  const std::string path = std::string(RECUR_TEST_MODELS_DIR) + "/keras3/tokens.keras";
  EXPECT_EQ(recur_model_open(&m, path.c_str()), RECUR_ERR_UNSUPPORTED);
  EXPECT_EQ(m, nullptr);
  EXPECT_TRUE(says_no_file_support(recur_last_error())) << recur_last_error();
  EXPECT_NE(std::string(recur_last_error()).find("tokens.keras"), std::string::npos) << recur_last_error();

  const std::vector<char> bytes = rt::file_bytes(path);
  ASSERT_FALSE(bytes.empty()) << path;
  EXPECT_EQ(recur_model_open_memory(&m, bytes.data(), bytes.size(), "tokens.keras"), RECUR_ERR_UNSUPPORTED);
  EXPECT_EQ(m, nullptr);
  EXPECT_TRUE(says_no_file_support(recur_last_error())) << recur_last_error();

  // Argument errors are reported as before: callers see the same contract either way.
  EXPECT_EQ(recur_model_open(nullptr, path.c_str()), RECUR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(recur_model_open(&m, nullptr), RECUR_ERR_INVALID_ARGUMENT);
}
