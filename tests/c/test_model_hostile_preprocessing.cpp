// SPDX-License-Identifier: Apache-2.0
// Hostile configs of the preprocessing layers in Keras-saved models: each is refused with a status
// and a message naming the layer's argument, never a crash or an allocation past the limits.
#include "keras_config_edit.hpp"

#include <memory>

namespace {

using keras_edit::json;

const std::string kDir = std::string(RECUR_TEST_KERAS_DIR) + "/graphs/preprocessing/keras3/";

// Edits `key` of layer `name` in `file` to each of `bad`: refused, the message naming `needle`.
void expect_refused(const std::string& file, const std::string& name, const std::string& key, const std::vector<json>& bad,
                    const std::string& needle) {
  keras_edit::expect_refused(kDir + file, name, key, bad, needle);
}

TEST(ModelHostilePreprocessing, TheUneditedFilesRun) {
  for (const char* f : {"normalization_config_gru.keras", "normalization_adapted_lstm.keras", "rescaling_gru.keras",
                        "discretization_embedding_gru.keras", "category_encoding_bags.keras", "integer_lookup_vocab_gru.keras",
                        "integer_lookup_adapted_lstm.keras"}) {
    const auto r = keras_edit::open_edited(kDir + f, [](json&) {});
    EXPECT_EQ(r.status, RECUR_OK) << f << ": " << r.message;
  }
}

TEST(ModelHostilePreprocessing, NormalizationMeanAndVariance) {
  const std::string f = "normalization_config_gru.keras";
  expect_refused(f, "normalization", "mean", {json::array({1.0, 2.0}), json("0.5"), json::array({1.0, "x", 2.0}),
                                              json::array({json::array({1.0}), 2.0, 3.0})},
                 "mean");
  expect_refused(f, "normalization", "variance", {json::array({1.0, -2.0, 0.5})}, "variance holds a negative value");
  expect_refused(f, "normalization", "variance", {json::array({1.0, 2.0, 3.0, 4.0})}, "variance");
  expect_refused(f, "normalization", "variance", {json(nullptr)}, "mean and variance must be given together");
  expect_refused(f, "normalization", "axis", {json("last"), json::array({0})}, "axis");
}

TEST(ModelHostilePreprocessing, NormalizationAxisAgainstItsWeights) {
  // An adapted layer's mean and variance are weights: an axis that keeps other axes does not fit them.
  const auto r = keras_edit::open_edited(kDir + "normalization_adapted_lstm.keras", [](json& c) {
    keras_edit::layer(c, "normalization")["config"]["axis"] = json::array({1, 2});
  });
  EXPECT_NE(r.status, RECUR_OK);
  EXPECT_NE(r.message.find("does not fit"), std::string::npos) << r.message;
}

TEST(ModelHostilePreprocessing, RescalingScaleAndOffset) {
  expect_refused("rescaling_gru.keras", "rescaling", "scale", {json("half"), json::array()}, "scale");
  expect_refused("rescaling_gru.keras", "rescaling", "offset", {json::array({1.0, 2.0})}, "Rescaling");
}

TEST(ModelHostilePreprocessing, DiscretizationBinBoundaries) {
  const std::string f = "discretization_embedding_gru.keras";
  expect_refused(f, "discretization", "bin_boundaries", {json::array({0.5, 0.0, 1.0})}, "bin_boundaries must be sorted");
  expect_refused(f, "discretization", "bin_boundaries", {json::array({0.0, "a"}), json("0.5"), json::array({nullptr})},
                 "bin_boundaries");
  expect_refused(f, "discretization", "output_mode", {json("tf_idf"), json("bogus"), json(3)}, "output_mode");
  expect_refused(f, "discretization", "sparse", {json(true)}, "sparse");
}

TEST(ModelHostilePreprocessing, CategoryEncodingNumTokens) {
  const std::string f = "category_encoding_bags.keras";
  expect_refused(f, "category_encoding", "num_tokens", {json(0), json(-4), json("6"), json(nullptr), json(1e40)},
                 "num_tokens");
  // Many tokens: the (3, num_tokens) output is over the tensor limit when the model runs.
  uint64_t before = 0;
  ASSERT_EQ(recur_get_limit(RECUR_LIMIT_TENSOR_BYTES, &before), RECUR_OK);
  ASSERT_EQ(recur_set_limit(RECUR_LIMIT_TENSOR_BYTES, 1 << 20), RECUR_OK);
  const auto r = keras_edit::open_edited(kDir + "category_encoding_output.keras", [](json& c) {
    keras_edit::layer(c, "category_encoding")["config"]["num_tokens"] = 100000;
  });
  ASSERT_EQ(recur_set_limit(RECUR_LIMIT_TENSOR_BYTES, before), RECUR_OK);
  EXPECT_EQ(r.status, RECUR_ERR_LIMIT) << r.message;
  EXPECT_NE(r.message.find("CategoryEncoding"), std::string::npos) << r.message;
  expect_refused(f, "category_encoding", "output_mode", {json("int"), json("bogus")}, "output_mode");
  expect_refused(f, "category_encoding", "sparse", {json(true)}, "sparse=True");
}

TEST(ModelHostilePreprocessing, CategoryEncodingValueOutOfRangeAtRunTime) {
  recur_model* raw = nullptr;
  ASSERT_EQ(recur_model_open(&raw, (kDir + "category_encoding_bags.keras").c_str()), RECUR_OK) << recur_last_error();
  std::unique_ptr<recur_model, void (*)(recur_model*)> m(raw, recur_model_destroy);
  std::vector<float> seq(3 * 6 * 3, 0.1f);
  std::vector<int32_t> tokens(3 * 5, 1);
  tokens[7] = 6;  // num_tokens is 6
  recur_tensor in[2];
  recur_tensor_init(&in[0], RECUR_TENSOR_VERSION);
  recur_tensor_init(&in[1], RECUR_TENSOR_VERSION);
  in[0].name = "seq";
  in[0].data = seq.data();
  in[0].length = seq.size();
  in[0].rank = 3;
  in[0].dims[0] = 3, in[0].dims[1] = 6, in[0].dims[2] = 3;
  in[1].name = "tokens";
  in[1].dtype = RECUR_DTYPE_INT32;
  in[1].data = tokens.data();
  in[1].length = tokens.size();
  in[1].rank = 2;
  in[1].dims[0] = 3, in[1].dims[1] = 5;
  std::vector<float> y(6);
  recur_output out;
  recur_output_init(&out, RECUR_OUTPUT_VERSION);
  out.name = "dense";
  out.data = y.data();
  out.capacity = y.size();
  EXPECT_EQ(recur_model_run_named(m.get(), in, 2, &out, 1, nullptr), RECUR_ERR_INVALID_ARGUMENT);
  const std::string msg = recur_last_error();
  EXPECT_NE(msg.find("CategoryEncoding 'category_encoding"), std::string::npos) << msg;
  EXPECT_NE(msg.find("value 6 at position 7 is out of range [0, 6)"), std::string::npos) << msg;
  tokens[7] = 5;
  EXPECT_EQ(recur_model_run_named(m.get(), in, 2, &out, 1, nullptr), RECUR_OK) << recur_last_error();
}

TEST(ModelHostilePreprocessing, IntegerLookupVocabulary) {
  const std::string f = "integer_lookup_vocab_gru.keras";
  expect_refused(f, "integer_lookup", "vocabulary", {json("vocab.txt"), json::array({1, "two"}), json::array({1.5}), json(7)},
                 "vocabulary");
  expect_refused(f, "integer_lookup", "vocabulary", {json::array({3, 3})}, "repeats");
  expect_refused(f, "integer_lookup", "vocabulary", {json::array({0, 3})}, "mask token");
  expect_refused(f, "integer_lookup", "vocabulary", {json::array()}, "vocabulary is empty");
  expect_refused(f, "integer_lookup", "num_oov_indices", {json(-1), json("1")}, "num_oov_indices");
  expect_refused(f, "integer_lookup", "output_mode", {json("tf_idf"), json("bogus")}, "output_mode");
  expect_refused(f, "integer_lookup", "mask_token", {json("pad"), json(1.5)}, "mask_token");
  expect_refused(f, "integer_lookup", "sparse", {json(true)}, "sparse");
}

TEST(ModelHostilePreprocessing, OptionsRecurRefusesByName) {
  const std::string lookup = "integer_lookup_vocab_gru.keras";
  expect_refused(lookup, "integer_lookup", "vocabulary_dtype", {json("string")}, "vocabulary_dtype");
  expect_refused(lookup, "integer_lookup", "pad_to_max_tokens", {json(true)}, "pad_to_max_tokens needs max_tokens");
  const auto r = keras_edit::open_edited(kDir + lookup, [](json& c) {
    json& cfg = keras_edit::layer(c, "integer_lookup")["config"];
    cfg["num_oov_indices"] = 2;
    cfg["oov_method"] = "farmhash";
  });
  EXPECT_EQ(r.status, RECUR_ERR_UNSUPPORTED) << r.message;
  EXPECT_NE(r.message.find("oov_method='farmhash'"), std::string::npos) << r.message;
  expect_refused("rescaling_gru.keras", "rescaling", "scale", {json::array({json::array({1.0, 2.0, 3.0})})},
                 "Rescaling: a scale or offset of shape (1, 3)");
  expect_refused("discretization_embedding_gru.keras", "discretization", "bin_boundaries", {json(nullptr)}, "num_bins");
}

TEST(ModelHostilePreprocessing, IntegerLookupHugeVocabulary) {
  uint64_t before = 0;
  ASSERT_EQ(recur_get_limit(RECUR_LIMIT_WEIGHT_BYTES, &before), RECUR_OK);
  ASSERT_EQ(recur_set_limit(RECUR_LIMIT_WEIGHT_BYTES, 4096), RECUR_OK);
  json vocab = json::array();
  for (int i = 1; i <= 1000; ++i) vocab.push_back(i);
  const auto r = keras_edit::open_edited(kDir + "integer_lookup_vocab_gru.keras", [&](json& c) {
    keras_edit::layer(c, "integer_lookup")["config"]["vocabulary"] = vocab;
  });
  ASSERT_EQ(recur_set_limit(RECUR_LIMIT_WEIGHT_BYTES, before), RECUR_OK);
  EXPECT_EQ(r.status, RECUR_ERR_LIMIT) << r.message;
  EXPECT_NE(r.message.find("vocabulary"), std::string::npos) << r.message;
}

TEST(ModelHostilePreprocessing, IntegerLookupIdOutOfVocabularyAtRunTime) {
  // No OOV index and 0 (the zeros the run feeds) not a term: the run fails naming the layer.
  const auto r = keras_edit::open_edited(kDir + "integer_lookup_vocab_gru.keras", [](json& c) {
    json& cfg = keras_edit::layer(c, "integer_lookup")["config"];
    cfg["num_oov_indices"] = 0;
    cfg["mask_token"] = nullptr;
  });
  EXPECT_EQ(r.status, RECUR_ERR_INVALID_ARGUMENT) << r.message;
  EXPECT_NE(r.message.find("IntegerLookup 'integer_lookup'"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("not in the vocabulary"), std::string::npos) << r.message;
}

TEST(ModelHostilePreprocessing, IntegerLookupInvertNeedsInt) {
  const auto r = keras_edit::open_edited(kDir + "integer_lookup_vocab_gru.keras", [](json& c) {
    json& cfg = keras_edit::layer(c, "integer_lookup")["config"];
    cfg["invert"] = true;
    cfg["output_mode"] = "one_hot";
  });
  EXPECT_NE(r.status, RECUR_OK);
  EXPECT_NE(r.message.find("invert"), std::string::npos) << r.message;
}

}  // namespace

namespace {

// An adapted IntegerLookup's vocabulary is an asset of the .keras file: a missing or malformed
// one is refused by name.
keras_edit::Opened open_with_vocabulary(const std::string* text) {
  auto members = keras_edit::read_members(kDir + "integer_lookup_adapted_lstm.keras");
  std::vector<std::pair<std::string, std::string>> kept;
  for (auto& m : members) {
    if (m.first == "assets/layers/integer_lookup/vocabulary.txt") {
      if (!text) continue;
      m.second = *text;
    }
    kept.push_back(m);
  }
  const std::string path = (std::filesystem::temp_directory_path() / ("recur_vocab_" + std::to_string(::getpid()) + ".keras")).string();
  keras_edit::write_members(path, kept);
  keras_edit::Opened r;
  recur_model* m = nullptr;
  r.status = recur_model_open(&m, path.c_str());
  if (r.status == RECUR_OK) {
    r = keras_edit::run_zeros(m);
    recur_model_destroy(m);
  } else {
    r.message = recur_last_error();
  }
  std::error_code ec;
  std::filesystem::remove(path, ec);
  return r;
}

TEST(ModelHostilePreprocessing, IntegerLookupVocabularyAsset) {
  auto r = open_with_vocabulary(nullptr);
  EXPECT_NE(r.status, RECUR_OK);
  EXPECT_NE(r.message.find("assets/layers/integer_lookup/vocabulary.txt is missing"), std::string::npos) << r.message;
  const std::string words = "-1\n-1\n7\nseven\n";
  r = open_with_vocabulary(&words);
  EXPECT_NE(r.status, RECUR_OK);
  EXPECT_NE(r.message.find("line 4 is not an integer: 'seven'"), std::string::npos) << r.message;
  const std::string repeated = "-1\n-1\n7\n7\n";
  r = open_with_vocabulary(&repeated);
  EXPECT_NE(r.status, RECUR_OK);
  EXPECT_NE(r.message.find("repeats 7"), std::string::npos) << r.message;
  const std::string fine = "-1\n-1\n7\n3\n16777219\n16777217\n250\n";
  r = open_with_vocabulary(&fine);
  EXPECT_EQ(r.status, RECUR_OK) << r.message;
}

TEST(ModelHostilePreprocessing, IntegerLookupWithoutVocabulary) {
  const auto r = keras_edit::open_edited(kDir + "integer_lookup_vocab_gru.keras", [](json& c) {
    keras_edit::layer(c, "integer_lookup")["config"]["vocabulary"] = nullptr;
  });
  EXPECT_NE(r.status, RECUR_OK);
  EXPECT_NE(r.message.find("the vocabulary is neither in the config nor in the file"), std::string::npos) << r.message;
}

}  // namespace
