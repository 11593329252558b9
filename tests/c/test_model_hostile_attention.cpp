// SPDX-License-Identifier: Apache-2.0
// Hostile configs of the attention layers in Keras-saved models: each is refused with a status and
// a message naming the layer's argument, never a crash or an allocation past the limits; and Keras
// 2's older `causal` config argument runs as the use_causal_mask call it replaced.
#include <algorithm>
#include <cmath>
#include <fstream>

#include "keras_config_edit.hpp"

namespace {

using keras_edit::json;
using keras_edit::expect_refused;

const std::string kKeras = RECUR_TEST_KERAS_DIR;
const std::string kK3 = kKeras + "/graphs/attention/keras3/";
const std::string kK2 = kKeras + "/graphs/attention/keras2/";

TEST(ModelHostileAttention, TheUneditedFilesRun) {
  for (const char* f : {"attn_text_lstm", "attn_query_value_key", "mha_cross_scores", "mha_keywords", "additive_attention"}) {
    const auto r = keras_edit::open_edited(kK3 + f + ".keras", [](json&) {});
    EXPECT_EQ(r.status, RECUR_OK) << f << ": " << r.message;
  }
}

TEST(ModelHostileAttention, NumHeadsZeroNegativeHugeOrNotAnInteger) {
  for (const json& bad : {json(0), json(-2), json("2"), json(2.5), json(std::int64_t(1) << 40), json(1 << 29), json(100000)})
    expect_refused(kK3 + "mha_cross_scores.keras", "multi_head_attention", [&](json& l) { l["config"]["num_heads"] = bad; },
                   {"num_heads"}, bad.dump());
}

TEST(ModelHostileAttention, KeyAndValueDimsOfTheWrongTypeOrSize) {
  for (const json& bad : {json("3"), json(0), json(-1), json::array({3, 3})})
    expect_refused(kK3 + "mha_cross_scores.keras", "multi_head_attention", [&](json& l) { l["config"]["key_dim"] = bad; },
                   {"key_dim"}, bad.dump());
  expect_refused(kK3 + "mha_cross_scores.keras", "multi_head_attention", [](json& l) { l["config"]["value_dim"] = -4; },
                 {"value_dim"}, "value_dim -4");
  const auto r = keras_edit::open_edited(kK3 + "mha_cross_scores.keras", [](json& c) {
    keras_edit::layer(c, "multi_head_attention")["config"].erase("key_dim");
  });
  EXPECT_NE(r.status, RECUR_OK);
  EXPECT_NE(r.message.find("key_dim"), std::string::npos) << r.message;
}

TEST(ModelHostileAttention, WeightsOfAnotherShapeThanTheConfigMakes) {
  // key_dim 4 where the file holds (features, 2 heads, 3) kernels.
  expect_refused(kK3 + "mha_cross_scores.keras", "multi_head_attention", [](json& l) { l["config"]["key_dim"] = 4; },
                 {"query_dense", "does not fit"}, "key_dim 4");
  // output_shape 6 where the output kernel is (2, 2, 5).
  expect_refused(kK3 + "mha_cross_scores.keras", "multi_head_attention", [](json& l) { l["config"]["output_shape"] = 6; },
                 {"output_dense", "does not fit"}, "output_shape 6");
  // A bias the file does not hold.
  expect_refused(kK3 + "mha_cross_scores.keras", "multi_head_attention", [](json& l) { l["config"]["use_bias"] = true; },
                 {"multi_head_attention", "weight"}, "use_bias");
  // Attention's scale, which the file does not hold.
  expect_refused(kK3 + "attn_text_lstm.keras", "attention", [](json& l) { l["config"]["use_scale"] = true; },
                 {"attention", "weight"}, "use_scale");
}

TEST(ModelHostileAttention, UnsupportedOrUnknownOptions) {
  for (const json& bad : {json("general"), json(3), json("")})
    expect_refused(kK3 + "attn_text_lstm.keras", "attention", [&](json& l) { l["config"]["score_mode"] = bad; }, {"score_mode"},
                   bad.dump());
  for (const json& bad : {json::array({2}), json::array({1, 2}), json(0), json("1")})
    expect_refused(kK3 + "mha_cross_scores.keras", "multi_head_attention", [&](json& l) { l["config"]["attention_axes"] = bad; },
                   {"attention_axes"}, bad.dump());
  expect_refused(kK3 + "mha_cross_scores.keras", "multi_head_attention",
                 [](json& l) { l["config"]["output_shape"] = json::array({2, 3}); }, {"output_shape"}, "output_shape [2, 3]");
  expect_refused(kK3 + "mha_cross_scores.keras", "multi_head_attention", [](json& l) { l["config"]["dropout"] = "x"; },
                 {"dropout"}, "dropout");
  expect_refused(kK3 + "mha_cross_scores.keras", "multi_head_attention", [](json& l) { l["config"]["use_gate"] = true; },
                 {"use_gate"}, "use_gate");
  expect_refused(kK3 + "mha_cross_scores.keras", "multi_head_attention", [](json& l) { l["config"]["sliding_window"] = 2; },
                 {"sliding_window"}, "sliding_window");
  expect_refused(kK3 + "additive_attention.keras", "additive_attention", [](json& l) { l["config"]["dropout"] = 7; },
                 {"dropout"}, "dropout 7");
}

TEST(ModelHostileAttention, CallArgumentsOfTheWrongType) {
  expect_refused(kK3 + "attn_causal_call.keras", "attention",
                 [](json& l) { l["inbound_nodes"][0]["kwargs"]["use_causal_mask"] = "yes"; }, {"attention", "use_causal_mask"},
                 "use_causal_mask");
  expect_refused(kK3 + "mha_cross_scores.keras", "multi_head_attention",
                 [](json& l) { l["inbound_nodes"][0]["kwargs"]["return_attention_scores"] = 1; },
                 {"multi_head_attention", "return_attention_scores"}, "return_attention_scores");
}

TEST(ModelHostileAttention, InputsOfTheWrongNumberRankOrArgument) {
  expect_refused(kK3 + "attn_text_lstm.keras", "attention",
                 [](json& l) { l["inbound_nodes"][0]["args"][0].erase(1); }, {"'attention'", "[query, value]", "got 1"}, "one input");
  expect_refused(kK3 + "attn_text_lstm.keras", "attention",
                 [](json& l) {
                   json& node = l["inbound_nodes"][0];
                   node["kwargs"]["value"] = node["args"][0][1];
                   node["args"][0].erase(1);
                 },
                 {"'attention'", "'value'"}, "value by keyword");
  expect_refused(kK3 + "mha_keywords.keras", "multi_head_attention", [](json& l) { l["inbound_nodes"][0]["kwargs"].erase("query"); },
                 {"'multi_head_attention'", "query"}, "no query");
  expect_refused(kK3 + "mha_keywords.keras", "multi_head_attention",
                 [](json& l) {
                   json& kw = l["inbound_nodes"][0]["kwargs"];
                   kw["bias"] = kw["key"];
                   kw.erase("key");
                 },
                 {"multi_head_attention", "'bias'"}, "a tensor as bias");
  expect_refused(kK3 + "mha_keywords.keras", "multi_head_attention",
                 [](json& l) {
                   json& node = l["inbound_nodes"][0];
                   node["args"] = json::array({node["kwargs"]["query"]});
                 },
                 {"multi_head_attention", "two tensors for the same argument"}, "query twice");
  expect_refused(kK3 + "mha_keywords.keras", "multi_head_attention",
                 [](json& l) {
                   json& node = l["inbound_nodes"][0];
                   json& kw = node["kwargs"];
                   node["args"] = json::array({kw["query"], kw["value"], kw["key"], kw["query"]});
                   node["kwargs"] = json::object();
                 },
                 {"multi_head_attention", "more than 3 positional"}, "four positional tensors");
  const auto steps = keras_edit::open_edited(kK3 + "mha_cross_scores.keras", [](json& c) {
    keras_edit::layer(c, "key_in")["config"]["batch_shape"] = json::array({nullptr, 4, 2});
  });
  EXPECT_NE(steps.status, RECUR_OK);
  EXPECT_NE(steps.message.find("same steps"), std::string::npos) << steps.message;
  const auto r = keras_edit::open_edited(kK3 + "attn_query_value_key.keras", [](json& c) {
    keras_edit::layer(c, "q")["config"]["batch_shape"] = json::array({nullptr, 5, 3, 1});
  });
  EXPECT_EQ(r.status, RECUR_ERR_UNSUPPORTED);
  EXPECT_NE(r.message.find("(batch, steps, features)"), std::string::npos) << r.message;
  const auto m = keras_edit::open_edited(kK3 + "mha_attention_mask_input.keras", [](json& c) {
    keras_edit::layer(c, "attention_mask")["config"]["batch_shape"] = json::array({nullptr, 6, 5});
  });
  EXPECT_NE(m.status, RECUR_OK);
  EXPECT_NE(m.message.find("attention_mask (None, 6, 5)"), std::string::npos) << m.message;
}

TEST(ModelHostileAttention, QueryAndKeyFeaturesThatDiffer) {
  // Attention's dot product needs the query's features (3) in the key: the key input becomes 5 wide.
  const auto r = keras_edit::open_edited(kK3 + "attn_query_value_key.keras", [](json& c) {
    keras_edit::layer(c, "k")["config"]["batch_shape"] = json::array({nullptr, 6, 5});
  });
  EXPECT_NE(r.status, RECUR_OK);
  EXPECT_NE(r.message.find("'attention'"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("query's features (3)"), std::string::npos) << r.message;
  // A value of other steps than the key.
  const auto s = keras_edit::open_edited(kK3 + "attn_query_value_key.keras", [](json& c) {
    keras_edit::layer(c, "v")["config"]["batch_shape"] = json::array({nullptr, 4, 2});
  });
  EXPECT_NE(s.status, RECUR_OK);
  EXPECT_NE(s.message.find("same steps"), std::string::npos) << s.message;
}

// Keras 2 releases before use_causal_mask saved `causal: true` in the layer's config: the call
// argument taken out and the config argument put in, the file gives Keras's numbers for the call.
TEST(ModelHostileAttention, Keras2CausalConfigRunsAsTheCausalCall) {
  std::ifstream f(kKeras + "/graphs/attention/keras2.json");
  ASSERT_TRUE(f);
  const json doc = json::parse(f);
  json want;
  for (const auto& c : doc.at("cases"))
    if (c.at("name") == "attn_causal_call") want = c.at("calls")[0];
  ASSERT_FALSE(want.is_null());
  auto members = keras_edit::read_members(kK2 + "attn_causal_call.keras");
  for (auto& [name, data] : members)
    if (name == "config.json") {
      json config = json::parse(data);
      json& l = keras_edit::layer(config, "attention");
      for (auto& t : l["inbound_nodes"][0]) t[3] = json::object();
      l["config"]["causal"] = true;
      data = config.dump();
    }
  const std::string path = (std::filesystem::temp_directory_path() / ("recur_causal_" + std::to_string(::getpid()) + ".keras")).string();
  keras_edit::write_members(path, members);
  recur_model* m = nullptr;
  ASSERT_EQ(recur_model_open(&m, path.c_str()), RECUR_OK) << recur_last_error();
  std::filesystem::remove(path);
  const auto x = want.at("inputs")[0].at("data").get<std::vector<float>>();
  const auto y = want.at("outputs")[0].at("data").get<std::vector<float>>();
  const int32_t steps = 6;
  std::vector<float> out(y.size());
  ASSERT_EQ(recur_model_run_inputs(m, 3, &steps, 1, x.data(), x.size(), nullptr, 0, out.data(), out.size()), RECUR_OK)
      << recur_last_error();
  for (std::size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(out[i], y[i], 1e-5 * std::max(1.0f, std::fabs(y[i]))) << i;
  recur_model_destroy(m);
}

// Steps `x` (batch 3, `T` steps of `F` floats, row-major) through `st` in pieces of 1, 2, 3...
// steps: the sequence outputs of every piece, interleaved back into (3, T, ...) order.
std::vector<float> stream_pieces(recur_model_state* st, const std::vector<float>& x, int32_t T, int32_t F, int32_t out_per_step) {
  std::vector<float> got(static_cast<std::size_t>(3 * T * out_per_step));
  for (int32_t t0 = 0, chunk = 1; t0 < T; t0 += chunk, chunk = std::min(chunk + 1, 3)) {
    const int32_t n = std::min(chunk, T - t0);
    std::vector<float> in;
    for (int32_t b = 0; b < 3; ++b)
      in.insert(in.end(), x.begin() + (b * T + t0) * F, x.begin() + (b * T + t0 + n) * F);
    std::vector<float> out(static_cast<std::size_t>(3 * n * out_per_step));
    EXPECT_EQ(recur_model_state_step(st, n, in.data(), in.size(), nullptr, 0, out.data(), out.size()), RECUR_OK)
        << recur_last_error();
    for (int32_t b = 0; b < 3; ++b)
      std::copy_n(out.begin() + b * n * out_per_step, n * out_per_step, got.begin() + (b * T + t0) * out_per_step);
  }
  return got;
}

// A causal self-attention's stream keeps the past keys and values; a reset forgets them, so the
// same sequence streamed again gives Keras's numbers again.
TEST(ModelStreamAttention, ResetForgetsThePastSteps) {
  std::ifstream f(kKeras + "/graphs/attention/keras3.json");
  ASSERT_TRUE(f);
  const json doc = json::parse(f);
  for (const char* name : {"attn_causal_call", "mha_causal", "attn_causal_masked"}) {
    json call;
    for (const auto& c : doc.at("cases"))
      if (c.at("name") == name) call = c.at("calls")[0];
    ASSERT_FALSE(call.is_null()) << name;
    recur_model* m = nullptr;
    ASSERT_EQ(recur_model_open(&m, (kK3 + name + ".keras").c_str()), RECUR_OK) << recur_last_error();
    recur_model_state* st = nullptr;
    ASSERT_EQ(recur_model_state_create(&st, m, 3), RECUR_OK) << recur_last_error();
    const auto x = call.at("inputs")[0].at("data").get<std::vector<float>>();
    const auto y = call.at("outputs")[0].at("data").get<std::vector<float>>();
    for (int pass = 0; pass < 2; ++pass) {
      const auto got = stream_pieces(st, x, 6, 3, 2);
      ASSERT_EQ(got.size(), y.size());
      for (std::size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(got[i], y[i], 1e-5 * std::max(1.0f, std::fabs(y[i]))) << name << " " << i;
      ASSERT_EQ(recur_model_state_reset(st), RECUR_OK);
    }
    recur_model_state_destroy(st);
    recur_model_destroy(m);
  }
}

// A streamed query step with nothing unmasked to attend to yet (Keras spreads it over the whole
// sequence) is refused naming the layer, and the stream stays as it was before the step: on
// `device` ("cpu", or "cuda" where a GPU can run, else skipped saying why).
void refuses_a_step_with_nothing_to_attend_to(const char* device) {
  if (recur_device_check(device) != RECUR_OK) GTEST_SKIP() << device << ": " << recur_last_error();
  const std::string path = keras_edit::write_edited(kK3 + "mha_text_masked.keras", [](json& config) {
    keras_edit::layer(config, "multi_head_attention")["inbound_nodes"][0]["kwargs"]["use_causal_mask"] = true;
  });
  recur_model* m = nullptr;
  ASSERT_EQ(recur_model_open(&m, path.c_str()), RECUR_OK) << recur_last_error();
  std::filesystem::remove(path);
  ASSERT_EQ(recur_model_set_device(m, device), RECUR_OK) << recur_last_error();
  const char* why = nullptr;
  ASSERT_EQ(recur_model_streamable(m, &why), RECUR_OK);
  ASSERT_STREQ(why, "");
  recur_model_state *a = nullptr, *b = nullptr;
  ASSERT_EQ(recur_model_state_create(&a, m, 3), RECUR_OK) << recur_last_error();
  ASSERT_EQ(recur_model_state_create(&b, m, 3), RECUR_OK) << recur_last_error();
  const std::vector<float> first = {3, 5, 1, 7, 2, 2}, padded = {0, 4, 9}, next = {6, 1, 8};
  std::vector<float> out_a(6), out_b(6), out_a2(6);  // Dense(2) after LSTM(3): (3, 2)
  ASSERT_EQ(recur_model_state_step(a, 2, first.data(), first.size(), nullptr, 0, out_a.data(), out_a.size()), RECUR_OK) << recur_last_error();
  ASSERT_EQ(recur_model_state_step(b, 2, first.data(), first.size(), nullptr, 0, out_b.data(), out_b.size()), RECUR_OK) << recur_last_error();
  EXPECT_EQ(recur_model_state_step(a, 1, padded.data(), padded.size(), nullptr, 0, out_a.data(), out_a.size()), RECUR_ERR_UNSUPPORTED);
  const std::string msg = recur_last_error();
  EXPECT_NE(msg.find("'multi_head_attention'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("whole sequence"), std::string::npos) << msg;
  ASSERT_EQ(recur_model_state_step(a, 1, next.data(), next.size(), nullptr, 0, out_a2.data(), out_a2.size()), RECUR_OK) << recur_last_error();
  ASSERT_EQ(recur_model_state_step(b, 1, next.data(), next.size(), nullptr, 0, out_b.data(), out_b.size()), RECUR_OK) << recur_last_error();
  EXPECT_EQ(out_a2, out_b);
  recur_model_state_destroy(a);
  recur_model_state_destroy(b);
  recur_model_destroy(m);
}

TEST(ModelStreamAttention, AStepWithNothingToAttendToIsRefusedAndTheStreamKept) {
  refuses_a_step_with_nothing_to_attend_to("cpu");
}

// The same on a GPU, where the stream keeps its past keys and values: refused before it runs.
TEST(CApiDeviceGpu, CausalStreamStepWithNothingToAttendToIsRefused) { refuses_a_step_with_nothing_to_attend_to("cuda"); }

}  // namespace
