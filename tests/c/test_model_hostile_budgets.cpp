// SPDX-License-Identifier: Apache-2.0
// Budgets over the whole (0.8): small hostile models whose every part is under its own limit but
// whose sum is not, refused up front with RECUR_ERR_LIMIT (a message naming the limit, the amount
// and how to raise it) before the memory is taken: the process's peak RSS stays small. Each test
// runs in a process of its own (gtest_discover_tests), so ru_maxrss measures that test alone.
#include <sys/resource.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "c_api_test_util.hpp"
#include "keras_config_edit.hpp"

namespace {

using keras_edit::json;

const std::string kKeras = RECUR_TEST_KERAS_DIR;
const std::string kRepeat = kKeras + "/graphs/keras3/encoder_decoder_repeat.keras";
const std::string kStateful = kKeras + "/graphs/keras3/stateful_sequential_gru.keras";

// The most memory a refusal may take beyond what the process held before (the model, its small
// weights): well under any of the amounts refused below (at least 1 GiB each).
constexpr long kSmallKiB = 192 * 1024;

long peak_rss_kib() {
  struct rusage u {};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

void expect_budget(recur_status st, const std::string& message, const char* limit, const char* enum_name) {
  EXPECT_EQ(st, RECUR_ERR_LIMIT) << message;
  EXPECT_NE(message.find(std::string(" ") + limit + " limit of "), std::string::npos) << message;
  EXPECT_NE(message.find(std::string("recur_set_limit(") + enum_name), std::string::npos) << message;
  if (std::string(limit).find("bytes") != std::string::npos) {
    EXPECT_NE(message.find("needs "), std::string::npos) << message;  // the amount asked for
  }
}

// Row 1: 16 stateful GRUs of 31 units at batch 2^20: each one's states (248 MiB) are under
// state_bytes, all of them (3.9 GiB) are not.
TEST(ModelBudgets, ManyStatefulLayersTogetherOverTotalStateBytes) {
  const long before = peak_rss_kib();
  const auto r = keras_edit::open_edited(kStateful, [](json& c) {
    json& layers = c["config"]["layers"];
    json input = layers[0], gru = layers[1];
    input["config"]["batch_shape"] = json::array({1 << 20, 7, 3});
    json out = json::array({input});
    int features = 3;
    for (int k = 0; k < 16; ++k) {
      json g = gru;
      g["config"]["name"] = "gru_" + std::to_string(k);
      g["config"]["units"] = 31;
      g["config"]["stateful"] = true;
      g["config"]["return_sequences"] = true;
      g["build_config"] = json{{"input_shape", json::array({1 << 20, 7, features})}};
      features = 31;
      out.push_back(g);
    }
    layers = out;
  });
  expect_budget(r.status, r.message, "total_state_bytes", "RECUR_LIMIT_TOTAL_STATE_BYTES");
  EXPECT_NE(r.message.find("gru_1"), std::string::npos) << r.message;  // the second one goes over
  // The first layer's states (248 MiB, under the total) were made; the second's never were.
  EXPECT_LT(peak_rss_kib() - before, 256 * 1024 + kSmallKiB);
}

// The three RepeatVector outputs of a (batch 20) run of the encoder: each under tensor_bytes.
json three_repeat_outputs(json& c, int n) {
  json& layers = c["config"]["layers"];
  json rv = keras_edit::layer(c, "repeat_vector");
  rv["config"]["n"] = n;
  json outs = json::array();
  for (const char* name : {"repeat_vector", "repeat_vector_b", "repeat_vector_c"}) {
    if (std::string(name) != "repeat_vector") {
      json copy = rv;
      copy["name"] = name;
      copy["config"]["name"] = name;
      layers.push_back(copy);
    } else {
      keras_edit::layer(c, "repeat_vector")["config"]["n"] = n;
    }
    outs.push_back(json::array({name, 0, 0}));
  }
  c["config"]["output_layers"] = outs;
  return c;
}

// Row 2: three outputs of 0.37 GiB each (batch 20 x 1,000,000 steps x 5): together over
// run_bytes, refused before the run (and before the output buffers are looked at).
TEST(ModelBudgets, LiveTensorsTogetherOverRunBytes) {
  std::string path;
  {
    // Written once and reopened, so the model stays open for the run below.
    const auto members = keras_edit::read_members(kRepeat);
    auto edited = members;
    for (auto& [name, data] : edited)
      if (name == "config.json") {
        json c = json::parse(data);
        three_repeat_outputs(c, 1000000);
        data = c.dump();
      }
    path = (std::filesystem::temp_directory_path() / ("recur_budget_" + std::to_string(::getpid()) + ".keras")).string();
    keras_edit::write_members(path, edited);
  }
  recur_model* m = nullptr;
  ASSERT_RECUR_OK(recur_model_open(&m, path.c_str()));
  std::filesystem::remove(path);
  int32_t n_out = 0;
  ASSERT_RECUR_OK(recur_model_num_outputs(m, &n_out));
  EXPECT_EQ(n_out, 3);
  const long before = peak_rss_kib();
  const int32_t steps = 7;
  std::vector<float> in(20 * 7 * 3, 0.5f), out(1);
  const recur_status st = recur_model_run_inputs(m, 20, &steps, 1, in.data(), in.size(), nullptr, 0, out.data(), out.size());
  const std::string msg = recur_last_error();
  expect_budget(st, msg, "run_bytes", "RECUR_LIMIT_RUN_BYTES");
  EXPECT_NE(msg.find("(20, 7, 3)"), std::string::npos) << msg;       // the inputs it planned for
  EXPECT_NE(msg.find("RepeatVector"), std::string::npos) << msg;     // where the peak falls
  EXPECT_LT(peak_rss_kib() - before, kSmallKiB);
  // Raised, the same run gets past the plan (to the output buffer's size check).
  ASSERT_RECUR_OK(recur_set_limit(RECUR_LIMIT_RUN_BYTES, 4ull << 30));
  EXPECT_EQ(recur_model_run_inputs(m, 20, &steps, 1, in.data(), in.size(), nullptr, 0, out.data(), out.size()),
            RECUR_ERR_SHAPE)
      << recur_last_error();
  ASSERT_RECUR_OK(recur_set_limit(RECUR_LIMIT_RUN_BYTES, 0));
  recur_model_destroy(m);
}

// The same model with small outputs runs: the plan refuses only what goes over.
TEST(ModelBudgets, LiveTensorsUnderRunBytesRun) {
  const auto r = keras_edit::open_edited(kRepeat, [](json& c) { three_repeat_outputs(c, 9); });
  EXPECT_EQ(r.status, RECUR_OK) << r.message;
}

// Row 3: RepeatVector(50,000,000) before a GRU: refused when the model opens.
TEST(ModelBudgets, RepeatVectorOverTimesteps) {
  const long before = peak_rss_kib();
  const auto r = keras_edit::open_edited(kRepeat, [](json& c) {
    keras_edit::layer(c, "repeat_vector")["config"]["n"] = 50000000;
  });
  EXPECT_EQ(r.status, RECUR_ERR_LIMIT) << r.message;
  EXPECT_NE(r.message.find(" timesteps limit of 1048576"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("50000000"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("RepeatVector"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("recur_set_limit(RECUR_LIMIT_TIMESTEPS"), std::string::npos) << r.message;
  EXPECT_LT(peak_rss_kib() - before, kSmallKiB);
}

// Row 4: a GRU of 4000 units from a few bytes of JSON whose recurrent kernel starts Orthogonal: the
// QR's cubic work is refused before it starts (and before its matrices are allocated).
TEST(ModelBudgets, OrthogonalInitializerOverInitWork) {
  const std::string j =
      R"({"class_name": "GRU", "config": {"units": 4000, "recurrent_initializer": {"class_name": "Orthogonal", "config": {}}}})";
  const long before = peak_rss_kib();
  recur_layer* l = nullptr;
  recur_status st = recur_layer_create_from_json(&l, j.c_str(), 3, RECUR_DIALECT_AUTO, nullptr);
  std::string msg = st == RECUR_OK ? "" : recur_last_error();
  if (st == RECUR_OK) {  // created lazily: the first use initializes
    std::vector<float> in(3, 0.5f), out(4000);
    st = recur_layer_forward(l, in.data(), in.size(), 1, 1, nullptr, 0, nullptr, 0, 0, 0, out.data(), out.size(),
                             nullptr, 0);
    msg = recur_last_error();
    recur_layer_destroy(l);
  }
  expect_budget(st, msg, "init_work", "RECUR_LIMIT_INIT_WORK");
  EXPECT_NE(msg.find("12000 x 4000"), std::string::npos) << msg;
  EXPECT_NE(msg.find("192000000000 is over"), std::string::npos) << msg;  // 12000 x 4000^2
  // The layer's own weights (a 4000 x 12000 recurrent kernel, 183 MiB) exist; the QR's float64
  // copies of it (366 MiB and more) must not have been made.
  EXPECT_LT(peak_rss_kib() - before, 4000L * 12000 * 4 / 1024 + kSmallKiB / 2);
}

// A model state's recurrent layers together (a Bidirectional's two halves here): over
// total_state_bytes at the batch asked for, refused before any state is made.
TEST(ModelBudgets, StreamStatesTogetherOverTotalStateBytes) {
  recur_model* m = nullptr;
  ASSERT_RECUR_OK(recur_model_open(&m, (kKeras + "/graphs/keras3/masking_sequential.keras").c_str()));
  recur_model_state* s = nullptr;
  ASSERT_RECUR_OK(recur_model_state_create(&s, m, 1000));  // fits the default
  recur_model_state_destroy(s);
  s = nullptr;
  ASSERT_RECUR_OK(recur_set_limit(RECUR_LIMIT_TOTAL_STATE_BYTES, 1024));
  const recur_status st = recur_model_state_create(&s, m, 1000);
  expect_budget(st, recur_last_error(), "total_state_bytes", "RECUR_LIMIT_TOTAL_STATE_BYTES");
  EXPECT_EQ(s, nullptr);
  ASSERT_RECUR_OK(recur_set_limit(RECUR_LIMIT_TOTAL_STATE_BYTES, 0));
  recur_model_destroy(m);
}

// A weightless layer appended after the RepeatVector (its output the model's output): `cls` with
// `config`, reading the RepeatVector's output (twice for an attention's query and value).
json with_layer_after_repeat(json& c, int n, const std::string& cls, const json& config, int inputs) {
  keras_edit::layer(c, "repeat_vector")["config"]["n"] = n;
  json l = keras_edit::layer(c, "repeat_vector");
  l["class_name"] = cls;
  l["name"] = "heavy";
  json cfg = config;
  cfg["name"] = "heavy";
  cfg["trainable"] = true;
  cfg["dtype"] = l["config"]["dtype"];
  l["config"] = cfg;
  l.erase("build_config");
  json arg = l["inbound_nodes"][0]["args"][0];
  arg["config"]["shape"] = json::array({nullptr, n, 5});
  arg["config"]["keras_history"] = json::array({"repeat_vector", 0, 0});
  l["inbound_nodes"][0]["args"] = inputs == 1 ? json::array({arg}) : json::array({json::array({arg, arg})});
  c["config"]["layers"].push_back(l);
  c["config"]["output_layers"] = json::array({json::array({"heavy", 0, 0})});
  return c;
}

// Runs an opened model on one (1, 7, 3) row with an output buffer of `capacity` floats.
recur_status run_one_row(recur_model* m, std::size_t capacity) {
  const int32_t steps = 7;
  std::vector<float> in(7 * 3, 0.5f), out(capacity);
  return recur_model_run_inputs(m, 1, &steps, 1, in.data(), in.size(), nullptr, 0, out.data(), out.size());
}

// Work no size limit bounds: weightless layers whose loops grow faster than their tensors. A
// MaxPooling1D window of a million steps over a million steps (20 MB in, 20 MB out) and a
// self-attention over 65,536 steps (1.3 MB in and out) would run for hours; the plan refuses
// them before they start, naming the layer.
TEST(ModelBudgets, WeightlessLayersOverRunWork) {
  struct Case {
    const char* cls;
    json config;
    int n, inputs;
  };
  const Case cases[] = {
      {"MaxPooling1D", json{{"pool_size", 1000000}, {"strides", 1}, {"padding", "same"}, {"data_format", "channels_last"}},
       1000000, 1},
      {"Attention", json{{"use_scale", false}, {"score_mode", "dot"}, {"dropout", 0.0}}, 65536, 2},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE(k.cls);
    std::string path;
    {
      auto members = keras_edit::read_members(kRepeat);
      for (auto& [name, data] : members)
        if (name == "config.json") {
          json c = json::parse(data);
          with_layer_after_repeat(c, k.n, k.cls, k.config, k.inputs);
          data = c.dump();
        }
      path = (std::filesystem::temp_directory_path() / ("recur_work_" + std::to_string(::getpid()) + ".keras")).string();
      keras_edit::write_members(path, members);
    }
    recur_model* m = nullptr;
    ASSERT_RECUR_OK(recur_model_open(&m, path.c_str()));
    std::filesystem::remove(path);
    const long before = peak_rss_kib();
    const recur_status st = run_one_row(m, static_cast<std::size_t>(k.n) * 5);
    const std::string msg = recur_last_error();
    EXPECT_EQ(st, RECUR_ERR_LIMIT) << msg;
    EXPECT_NE(msg.find(" run_work limit of "), std::string::npos) << msg;
    EXPECT_NE(msg.find("recur_set_limit(RECUR_LIMIT_RUN_WORK"), std::string::npos) << msg;
    EXPECT_NE(msg.find("layer 'heavy' (" + std::string(k.cls) + ")"), std::string::npos) << msg;  // where the work is
    EXPECT_NE(msg.find("(1, 7, 3)"), std::string::npos) << msg;  // the inputs it planned for
    EXPECT_LT(peak_rss_kib() - before, kSmallKiB);  // refused before the RepeatVector ran
    recur_model_destroy(m);
  }
}

// The same layers at sizes that fit run, and lowering the limit refuses a run that fitted (0
// restores the default).
TEST(ModelBudgets, RunWorkLimitFollowsTheSetting) {
  uint64_t def = 0;
  ASSERT_RECUR_OK(recur_default_limit(RECUR_LIMIT_RUN_WORK, &def));
  EXPECT_EQ(def, uint64_t(1) << 38);
  const auto small = keras_edit::open_edited(kRepeat, [](json& c) {
    with_layer_after_repeat(c, 64, "MaxPooling1D",
                            json{{"pool_size", 8}, {"strides", 1}, {"padding", "same"}, {"data_format", "channels_last"}}, 1);
  });
  EXPECT_EQ(small.status, RECUR_OK) << small.message;
  recur_model* m = nullptr;
  ASSERT_RECUR_OK(recur_model_open(&m, kRepeat.c_str()));
  EXPECT_RECUR_OK(run_one_row(m, 10));
  ASSERT_RECUR_OK(recur_set_limit(RECUR_LIMIT_RUN_WORK, 1000));
  const recur_status st = run_one_row(m, 10);
  EXPECT_EQ(st, RECUR_ERR_LIMIT);
  EXPECT_NE(std::string(recur_last_error()).find("is over the run_work limit of 1000"), std::string::npos) << recur_last_error();
  ASSERT_RECUR_OK(recur_set_limit(RECUR_LIMIT_RUN_WORK, 0));
  EXPECT_RECUR_OK(run_one_row(m, 10));
  recur_model_destroy(m);
}

// A timeout: a run past it stops with RECUR_ERR_LIMIT, one within it runs; bad timeouts are refused.
TEST(ModelBudgets, RunTimeout) {
  recur_model* m = nullptr;
  ASSERT_RECUR_OK(recur_model_open(&m, kRepeat.c_str()));
  recur_run_options* o = nullptr;
  ASSERT_RECUR_OK(recur_run_options_create(&o));
  double t = -1;
  ASSERT_RECUR_OK(recur_run_options_get_timeout(o, &t));
  EXPECT_EQ(t, 0.0);
  for (double bad : {-1.0, std::numeric_limits<double>::infinity(), std::nan("")})
    EXPECT_RECUR_ERR(recur_run_options_set_timeout(o, bad), RECUR_ERR_INVALID_ARGUMENT, "seconds");
  EXPECT_RECUR_ERR(recur_run_options_get_timeout(o, nullptr), RECUR_ERR_INVALID_ARGUMENT, "seconds");
  std::vector<float> in(3 * 7 * 3, 0.5f), out(3 * 5 * 64, 0.0f);
  recur_tensor x;
  recur_tensor_init(&x, RECUR_TENSOR_VERSION);
  x.name = "x";
  x.rank = 3;
  x.dims[0] = 3;
  x.dims[1] = 7;
  x.dims[2] = 3;
  x.data = in.data();
  x.length = in.size();
  recur_output y;
  recur_output_init(&y, RECUR_OUTPUT_VERSION);
  y.name = "time_distributed";
  y.data = out.data();
  y.capacity = out.size();
  ASSERT_RECUR_OK(recur_run_options_set_timeout(o, 1e-9));
  ASSERT_RECUR_OK(recur_run_options_get_timeout(o, &t));
  EXPECT_EQ(t, 1e-9);
  EXPECT_RECUR_ERR(recur_model_run_named(m, &x, 1, &y, 1, o), RECUR_ERR_LIMIT, "deadline passed after ");
  EXPECT_NE(std::string(recur_last_error()).find("recur_run_options_set_timeout"), std::string::npos);
  ASSERT_RECUR_OK(recur_run_options_set_timeout(o, 3600));
  EXPECT_RECUR_OK(recur_model_run_named(m, &x, 1, &y, 1, o));
  ASSERT_RECUR_OK(recur_run_options_set_timeout(o, 0));
  EXPECT_RECUR_OK(recur_model_run_named(m, &x, 1, &y, 1, o));
  recur_run_options_destroy(o);
  recur_model_destroy(m);
}

}  // namespace
