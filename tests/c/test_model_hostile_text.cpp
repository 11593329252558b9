// SPDX-License-Identifier: Apache-2.0
// Hostile configs and assets of the text layers (TextVectorization, StringLookup) in Keras-saved
// models: each is refused with a status and a message naming the argument, never a crash or an
// allocation past the limits.
#include <hdf5.h>

#include "keras_config_edit.hpp"

namespace {

using keras_edit::json;

const std::string kKeras = RECUR_TEST_KERAS_DIR;
const std::string kTv = kKeras + "/graphs/text/keras3/text_vectorization_lstm.keras";
const std::string kTv2 = kKeras + "/graphs/text/keras2/text_vectorization_lstm.keras";
const std::string kSl = kKeras + "/graphs/text/keras3/string_lookup_gru.keras";

// Runs the model on texts (run_zeros feeds floats, which a string input refuses): the edited
// file's first failure.
keras_edit::Opened run_texts(const std::string& file, const std::vector<const char*>& texts, int64_t width) {
  keras_edit::Opened r;
  recur_model* m = nullptr;
  r.status = recur_model_open(&m, file.c_str());
  if (r.status == RECUR_OK) {
    recur_tensor in;
    recur_tensor_init(&in, RECUR_TENSOR_VERSION);
    in.name = "text";
    in.dtype = RECUR_DTYPE_STRING;
    in.data = texts.data();
    in.length = texts.size();
    in.rank = 2;
    in.dims[0] = static_cast<int64_t>(texts.size()) / width;
    in.dims[1] = width;
    std::vector<float> buf(64);
    recur_output out;
    recur_output_init(&out, RECUR_OUTPUT_VERSION);
    out.name = "out";
    out.data = buf.data();
    out.capacity = buf.size();
    r.status = recur_model_run_named(m, &in, 1, &out, 1, nullptr);
  }
  if (r.status != RECUR_OK) r.message = recur_last_error();
  recur_model_destroy(m);
  return r;
}

// A copy of `file` with its members changed by `edit` (name -> bytes), opened and run on texts.
keras_edit::Opened edit_members(const std::string& file,
                                const std::function<void(std::vector<std::pair<std::string, std::string>>&)>& edit) {
  auto members = keras_edit::read_members(file);
  edit(members);
  const std::string p = (std::filesystem::temp_directory_path() / ("recur_hostile_text_" + std::to_string(::getpid()) + ".keras")).string();
  keras_edit::write_members(p, members);
  auto r = run_texts(p, {"the cat", "sat", ""}, 1);
  std::error_code ec;
  std::filesystem::remove(p, ec);
  return r;
}

void expect_refused(const std::string& file, const std::string& layer, const char* key, const json& bad, const char* needle) {
  keras_edit::expect_refused(file, layer, key, std::vector<json>{bad}, needle);
}

TEST(ModelHostileText, TheUneditedFilesRunOnTextAndRefuseFloats) {
  EXPECT_EQ(run_texts(kTv, {"the cat", "sat", ""}, 1).status, RECUR_OK);
  EXPECT_EQ(run_texts(kTv2, {"the cat", "sat", ""}, 1).status, RECUR_OK);
  // open_edited runs floats: a string input refuses them, naming it.
  const auto r = keras_edit::open_edited(kTv, [](json&) {});
  EXPECT_EQ(r.status, RECUR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(r.message.find("input 'text' holds strings"), std::string::npos) << r.message;
}

TEST(ModelHostileText, VocabularyOfTheWrongType) {
  for (const char* f : {kTv.c_str(), kSl.c_str()}) {
    const std::string layer = std::string(f) == kTv ? "text_vectorization" : "string_lookup";
    expect_refused(f, layer, "vocabulary", json(5), "vocabulary: expected a list of strings");
    expect_refused(f, layer, "vocabulary", json::array({"a", 2}), "vocabulary[1]: expected a string");
    expect_refused(f, layer, "vocabulary", json::object(), "vocabulary: expected");
    expect_refused(f, layer, "vocabulary", json("/etc/vocabulary.txt"), "is a file outside the model file");
    expect_refused(f, layer, "vocabulary", json::array({"a", "b", "a"}), "the token 'a' repeats");
  }
  expect_refused(kSl, "string_lookup", "vocabulary", json::array({"a", "", "b"}), "the mask token");
}

TEST(ModelHostileText, MaxTokens) {
  expect_refused(kTv, "text_vectorization", "max_tokens", json(double(1) * (1ull << 40)), "max_tokens");
  expect_refused(kTv, "text_vectorization", "max_tokens", json(1), "max_tokens must be greater than 1");
  expect_refused(kTv, "text_vectorization", "max_tokens", json("16"), "max_tokens: expected an integer");
  expect_refused(kTv, "text_vectorization", "max_tokens", json(4), "more than max_tokens=4");
  // A huge max_tokens that the vocabulary fits allocates nothing in "int" mode.
  const auto r = keras_edit::open_edited(kTv, [](json& c) {
    keras_edit::layer(c, "text_vectorization")["config"]["max_tokens"] = (1 << 30) - 1;
    keras_edit::layer(c, "text_vectorization")["config"]["pad_to_max_tokens"] = true;
  });
  EXPECT_EQ(r.status, RECUR_ERR_INVALID_ARGUMENT) << r.message;  // the float run, refused for its strings
  EXPECT_NE(r.message.find("holds strings"), std::string::npos) << r.message;
}

TEST(ModelHostileText, UnknownStandardizeSplitAndModes) {
  expect_refused(kTv, "text_vectorization", "standardize", json("upper"), "standardize: \"upper\"");
  expect_refused(kTv, "text_vectorization", "standardize", json::object({{"class_name", "MyFn"}}), "standardize");
  expect_refused(kTv, "text_vectorization", "standardize", json(3), "standardize");
  expect_refused(kTv, "text_vectorization", "split", json("comma"), "split: \"comma\"");
  expect_refused(kTv, "text_vectorization", "split", json(true), "split");
  expect_refused(kTv, "text_vectorization", "output_mode", json("tf_idf"), "output_mode 'tf_idf' is not supported");
  expect_refused(kTv, "text_vectorization", "output_mode", json("bogus"), "output_mode: expected");
  expect_refused(kTv, "text_vectorization", "output_sequence_length", json(-2), "output_sequence_length must be positive");
  expect_refused(kTv, "text_vectorization", "output_sequence_length", json("6"), "output_sequence_length: expected an integer");
  expect_refused(kTv, "text_vectorization", "ragged", json(true), "ragged=True");
  expect_refused(kTv, "text_vectorization", "sparse", json(true), "sparse=True");
  expect_refused(kTv, "text_vectorization", "encoding", json("latin-1"), "encoding 'latin-1'");
}

TEST(ModelHostileText, ShapesAndModesThatDoNotFit) {
  expect_refused(kTv, "text_vectorization", "output_mode", json("multi_hot"), "output_sequence_length is set only with");
  // A split text input is (B,) or (B, 1); without a split, (B, tokens).
  auto r = keras_edit::open_edited(kTv, [](json& c) { keras_edit::layer(c, "text")["config"]["batch_shape"] = json::array({nullptr, 2}); });
  EXPECT_NE(r.message.find("TextVectorization: a split input must be (batch,) or (batch, 1)"), std::string::npos) << r.message;
  r = keras_edit::open_edited(kTv, [](json& c) {
    keras_edit::layer(c, "text")["config"]["batch_shape"] = json::array({nullptr});
    keras_edit::layer(c, "text_vectorization")["config"]["split"] = nullptr;
  });
  EXPECT_NE(r.message.find("with split=None the input must be (batch, tokens)"), std::string::npos) << r.message;
  r = keras_edit::open_edited(kSl, [](json& c) {
    keras_edit::layer(c, "text")["config"]["batch_shape"] = json::array({nullptr, 5, 1});
    keras_edit::layer(c, "string_lookup")["config"]["output_mode"] = "count";
  });
  EXPECT_NE(r.message.find("StringLookup: output_mode multi_hot/count takes (batch,) or (batch, tokens)"), std::string::npos)
      << r.message;
}

// The ngrams of a row are counted against the tensor limit before any is made.
TEST(ModelHostileText, NgramsPastTheTensorLimit) {
  uint64_t old = 0;
  ASSERT_EQ(recur_get_limit(RECUR_LIMIT_TENSOR_BYTES, &old), RECUR_OK);
  ASSERT_EQ(recur_set_limit(RECUR_LIMIT_TENSOR_BYTES, 8192), RECUR_OK);
  std::string text;
  while (text.size() < 6000) text += "the cat ";
  const auto r = run_texts(kKeras + "/graphs/text/keras3/text_vectorization_ragged_bigrams.keras", {text.c_str(), "a", "b"}, 1);
  EXPECT_EQ(r.status, RECUR_ERR_LIMIT);
  EXPECT_NE(r.message.find("the ngrams of row 0"), std::string::npos) << r.message;
  ASSERT_EQ(recur_set_limit(RECUR_LIMIT_TENSOR_BYTES, old), RECUR_OK);
}

TEST(ModelHostileText, BadNgrams) {
  for (const json& bad : {json(0), json(-1), json(1 << 20), json::array(), json::array({1, "2"}), json::array({0}),
                          json("2"), json(2.5)})
    expect_refused(kTv, "text_vectorization", "ngrams", bad, "ngrams");
}

TEST(ModelHostileText, StringLookupOptions) {
  expect_refused(kSl, "string_lookup", "num_oov_indices", json(-1), "num_oov_indices must be >= 0");
  expect_refused(kSl, "string_lookup", "num_oov_indices", json(3), "num_oov_indices=3");
  expect_refused(kSl, "string_lookup", "num_oov_indices", json("1"), "num_oov_indices: expected an integer");
  expect_refused(kSl, "string_lookup", "invert", json(true), "invert=True");
  expect_refused(kSl, "string_lookup", "mask_token", json(5), "mask_token: expected a string");
  expect_refused(kSl, "string_lookup", "oov_token", json::array(), "oov_token: expected a string");
  expect_refused(kSl, "string_lookup", "output_mode", json("one_hot"), "output_mode 'one_hot' is not supported");
}

TEST(ModelHostileText, StringsOnlyReachTextLayers) {
  // A float model whose Input says "string": the layer it feeds is refused, named.
  const auto r = keras_edit::open_edited(kKeras + "/graphs/keras3/masking_sequential.keras", [](json& c) {
    for (auto& l : c["config"]["layers"])
      if (l["class_name"] == "InputLayer") l["config"]["dtype"] = "string";
  });
  EXPECT_NE(r.status, RECUR_OK);
  EXPECT_NE(r.message.find("takes a string tensor"), std::string::npos) << r.message;
  // A text layer given numbers.
  const auto t = keras_edit::open_edited(kTv, [](json& c) { keras_edit::layer(c, "text")["config"]["dtype"] = "float32"; });
  EXPECT_EQ(t.status, RECUR_ERR_UNSUPPORTED);
  EXPECT_NE(t.message.find("TextVectorization: expected a string tensor"), std::string::npos) << t.message;
}

// Keras reads the vocabulary in text mode, where "\r\n" ends a line as "\n" does.
TEST(ModelHostileText, CrLfVocabularyReadsAsKerasReadsIt) {
  const std::string asset = "assets/layers/text_vectorization/vocabulary.txt";
  auto members = keras_edit::read_members(kTv);
  for (auto& [name, data] : members)
    if (name == asset) {
      std::string crlf;
      for (char c : data) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
      data = crlf;
    }
  const std::string p = (std::filesystem::temp_directory_path() / ("recur_crlf_" + std::to_string(::getpid()) + ".keras")).string();
  keras_edit::write_members(p, members);
  auto run = [](const std::string& file) {
    recur_model* m = nullptr;
    EXPECT_EQ(recur_model_open(&m, file.c_str()), RECUR_OK) << recur_last_error();
    const char* texts[3] = {"the cat sat", "dogs end", "unknown"};
    recur_tensor in;
    recur_tensor_init(&in, RECUR_TENSOR_VERSION);
    in.name = "text";
    in.dtype = RECUR_DTYPE_STRING;
    in.data = texts;
    in.length = 3;
    in.rank = 2;
    in.dims[0] = 3;
    in.dims[1] = 1;
    std::vector<float> buf(6);
    recur_output out;
    recur_output_init(&out, RECUR_OUTPUT_VERSION);
    out.name = "out";
    out.data = buf.data();
    out.capacity = buf.size();
    EXPECT_EQ(recur_model_run_named(m, &in, 1, &out, 1, nullptr), RECUR_OK) << recur_last_error();
    recur_model_destroy(m);
    return buf;
  };
  EXPECT_EQ(run(kTv), run(p));
  std::error_code ec;
  std::filesystem::remove(p, ec);
}

TEST(ModelHostileText, BadVocabularyAssets) {
  const std::string asset = "assets/layers/text_vectorization/vocabulary.txt";
  auto r = edit_members(kTv, [&](auto& ms) {
    ms.erase(std::remove_if(ms.begin(), ms.end(), [&](const auto& m) { return m.first.rfind("assets/", 0) == 0; }), ms.end());
  });
  EXPECT_EQ(r.status, RECUR_ERR_IO);
  EXPECT_NE(r.message.find(asset + ": missing"), std::string::npos) << r.message;
  r = edit_members(kTv, [&](auto& ms) {
    for (auto& [name, data] : ms)
      if (name == asset) data += "\ncaf\xC3";
  });
  EXPECT_EQ(r.status, RECUR_ERR_IO);
  EXPECT_NE(r.message.find("not valid UTF-8"), std::string::npos) << r.message;
  r = edit_members(kTv, [&](auto& ms) {
    for (auto& [name, data] : ms)
      if (name == asset) data += "\nthe";
  });
  EXPECT_NE(r.status, RECUR_OK);
  EXPECT_NE(r.message.find("the token 'the' repeats"), std::string::npos) << r.message;
  r = edit_members(kTv, [&](auto& ms) {
    for (auto& [name, data] : ms)
      if (name == asset) data.clear();
  });
  EXPECT_NE(r.status, RECUR_OK);
  EXPECT_NE(r.message.find("the vocabulary is empty"), std::string::npos) << r.message;
}

// A legacy .h5 keeps no assets: a text layer whose config holds no vocabulary (an adapted one, as
// Keras 3 saves it there) is refused, naming the layer and what to do.
TEST(ModelHostileText, AnH5WithoutTheVocabularyIsRefused) {
  const std::string src = kKeras + "/graphs/text/keras3/string_lookup_gru.h5";
  const std::string p = (std::filesystem::temp_directory_path() / ("recur_novocab_" + std::to_string(::getpid()) + ".h5")).string();
  std::filesystem::copy_file(src, p, std::filesystem::copy_options::overwrite_existing);
  {
    const hid_t f = H5Fopen(p.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    const hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    const hid_t a = H5Aopen_by_name(f, "/", "model_config", H5P_DEFAULT, H5P_DEFAULT);
    ASSERT_GE(a, 0);
    const hid_t ft = H5Aget_type(a);
    H5Tset_cset(t, H5Tget_cset(ft));  // HDF5 converts no strings between character sets
    H5Tclose(ft);
    char* text = nullptr;
    ASSERT_GE(H5Aread(a, t, &text), 0);
    json config = json::parse(text);
    H5free_memory(text);
    H5Aclose(a);
    keras_edit::layer(config, "string_lookup")["config"]["vocabulary"] = nullptr;
    const std::string edited = config.dump();
    ASSERT_GE(H5Adelete_by_name(f, "/", "model_config", H5P_DEFAULT), 0);
    const hid_t sp = H5Screate(H5S_SCALAR);
    const hid_t b = H5Acreate_by_name(f, "/", "model_config", t, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const char* w = edited.c_str();
    ASSERT_GE(H5Awrite(b, t, &w), 0);
    H5Aclose(b);
    H5Sclose(sp);
    H5Tclose(t);
    H5Fclose(f);
  }
  const auto r = run_texts(p, {"the", "cat", "", "x", "y", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}, 5);
  EXPECT_EQ(r.status, RECUR_ERR_UNSUPPORTED);
  EXPECT_NE(r.message.find("StringLookup: the vocabulary is not in this file"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("save the model as .keras"), std::string::npos) << r.message;
  std::error_code ec;
  std::filesystem::remove(p, ec);
}

}  // namespace
