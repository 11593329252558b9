// SPDX-License-Identifier: Apache-2.0
// Hostile configs of ZeroPadding1D, Cropping1D and UpSampling1D in a Keras-saved model: each is
// refused with a status and a message naming the argument; sizes past the tensor limit are
// Error(limit) before anything is allocated. And Flatten(data_format='channels_first') on a GPU.
#include <filesystem>

#include "c_api_test_util.hpp"
#include "keras_config_edit.hpp"

namespace {

using keras_edit::json;
using keras_edit::expect_refused;

const std::string kKeras = RECUR_TEST_KERAS_DIR;
const std::string kPad = kKeras + "/graphs/reshaping/keras3/pad_crop_masked.keras";
const std::string kUp = kKeras + "/graphs/reshaping/keras3/upsampling_masked.keras";
// Its output is the last LSTM state: a huge padding stays inside the model.
const std::string kPadVar = kKeras + "/graphs/reshaping/keras3/pad_crop_variable_length.keras";

TEST(ModelHostileReshaping, TheUneditedFilesRun) {
  for (const std::string& f : {kPad, kUp}) {
    const auto r = keras_edit::open_edited(f, [](json&) {});
    EXPECT_EQ(r.status, RECUR_OK) << f << ": " << r.message;
  }
}

TEST(ModelHostileReshaping, ZeroPaddingIsOneOrTwoNonNegativeIntegers) {
  expect_refused(kPad, "zero_padding1d", "padding",
                 {json(-1), json::array({1}), json::array({1, 2, 3}), json("2"), json::array({1, -1}), json(1e12), json(1.5)},
                 "padding");
  expect_refused(kPad, "zero_padding1d", "data_format", {json("channels_middle")}, "data_format");
}

TEST(ModelHostileReshaping, ZeroPaddingPastTheTensorLimit) {
  const auto r = keras_edit::open_edited(kPadVar, [](json& c) {
    keras_edit::layer(c, "zero_padding1d")["config"]["padding"] = json::array({1 << 30, 1 << 30});
  });
  EXPECT_EQ(r.status, RECUR_ERR_LIMIT) << r.message;
  EXPECT_NE(r.message.find("ZeroPadding1D"), std::string::npos) << r.message;
}

TEST(ModelHostileReshaping, CroppingMustLeaveSteps) {
  expect_refused(kPad, "cropping1d", "cropping", {json(-1), json::array({1}), json("1"), json::array({0, -2})}, "cropping");
  const auto r = keras_edit::open_edited(kPad, [](json& c) { keras_edit::layer(c, "cropping1d")["config"]["cropping"] = json::array({5, 5}); });
  EXPECT_NE(r.status, RECUR_OK);
  EXPECT_NE(r.message.find("cropping (5, 5)"), std::string::npos) << r.message;
}

// A time axis of unknown length: the cropping is checked when the steps are known, at run time
// (4 steps, padded to 7, cropped by 8).
TEST(ModelHostileReshaping, CroppingPastTheStepsAtRunTime) {
  const auto r = keras_edit::open_edited(kPadVar, [](json& c) { keras_edit::layer(c, "cropping1d")["config"]["cropping"] = json::array({4, 4}); });
  EXPECT_EQ(r.status, RECUR_ERR_SHAPE) << r.message;
  EXPECT_NE(r.message.find("cropping (4, 4)"), std::string::npos) << r.message;
}

TEST(ModelHostileReshaping, UpSamplingSizeIsAPositiveInteger) {
  expect_refused(kUp, "up_sampling1d", "size", {json(0), json(-2), json("2"), json(2.5), json(1e12)}, "size");
}

TEST(ModelHostileReshaping, UpSamplingPastTheTensorLimit) {
  // The second UpSampling1D repeats the first's output: the LSTM after it keeps the outputs small
  // (the Dense output, as long, is dropped).
  const auto r = keras_edit::open_edited(kUp, [](json& c) {
    keras_edit::layer(c, "up_sampling1d")["config"]["size"] = 1 << 28;
    c["config"]["output_layers"].erase(0);
  });
  EXPECT_EQ(r.status, RECUR_ERR_LIMIT) << r.message;
  EXPECT_NE(r.message.find("UpSampling1D"), std::string::npos) << r.message;
}

std::string heard_run;
void hear_run(void*, int32_t, const char* message) {
  if (std::string(message).find("' ran on cuda:") != std::string::npos) heard_run = message;
}

// Both outputs of reshape_permute_flatten (x (B, 6, 3), v (B, 24)) for batch 2.
std::vector<float> run_both(const recur_model* m) {
  const std::vector<float> x = rt::data(2 * 6 * 3), v = rt::data(2 * 24, 1.0f);
  const recur_tensor in[2] = {rt::tensor("x", RECUR_DTYPE_FLOAT32, x.data(), x.size(), {2, 6, 3}),
                              rt::tensor("v", RECUR_DTYPE_FLOAT32, v.data(), v.size(), {2, 24})};
  std::vector<float> y(2 * 2 * 2);
  recur_output out[2];
  for (int32_t k = 0; k < 2; ++k) {
    EXPECT_EQ(recur_output_init(&out[k], RECUR_OUTPUT_VERSION), RECUR_OK);
    int32_t rank = 0;
    int64_t dims[RECUR_MAX_RANK];
    EXPECT_EQ(recur_model_output(m, k, &out[k].name, &rank, dims), RECUR_OK) << recur_last_error();
    out[k].data = y.data() + 4 * k;
    out[k].capacity = 4;
  }
  EXPECT_EQ(recur_model_run_named(m, in, 2, out, 2, nullptr), RECUR_OK) << recur_last_error();
  return y;
}

// Flatten(data_format='channels_first') moves the channels axis last before flattening: on a GPU
// that transpose is a strided read on the device, with the CPU's numbers and no copy.
TEST(CApiDeviceGpu, FlattenChannelsFirstTransposesOnTheDevice) {
  if (recur_device_check("cuda") != RECUR_OK) GTEST_SKIP() << "cuda: " << recur_last_error();
  const std::string file = kKeras + "/graphs/keras3/reshape_permute_flatten.keras";
  const std::string path = keras_edit::write_edited(file, [](json& config) {
    keras_edit::layer(config, "flatten")["config"]["data_format"] = "channels_first";
  });
  recur_model *plain = nullptr, *cpu = nullptr, *gpu = nullptr;
  ASSERT_EQ(recur_model_open(&plain, file.c_str()), RECUR_OK) << recur_last_error();
  ASSERT_EQ(recur_model_open(&cpu, path.c_str()), RECUR_OK) << recur_last_error();
  ASSERT_EQ(recur_model_open(&gpu, path.c_str()), RECUR_OK) << recur_last_error();
  std::filesystem::remove(path);
  rt::Model p(plain), c(cpu), g(gpu);
  ASSERT_EQ(recur_model_set_device(g.get(), "cuda"), RECUR_OK) << recur_last_error();
  const std::vector<float> want = run_both(c.get());
  EXPECT_NE(want, run_both(p.get()));  // the order of the flattened features matters to the Dense after it
  heard_run.clear();
  recur_set_log_callback(hear_run, nullptr, RECUR_LOG_DEBUG);
  const std::vector<float> got = run_both(g.get());
  recur_set_log_callback(nullptr, nullptr, RECUR_LOG_DEBUG);
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f) << i;
  EXPECT_NE(heard_run.find(": 2 upload(s) [model input 'x' | model input 'v'], 2 download(s) [model output"),
            std::string::npos)
      << heard_run;
  const char* backend = nullptr;
  for (int32_t i = 0;; ++i) {
    const char* cls = nullptr;
    if (recur_model_layer(g.get(), i, nullptr, &cls, nullptr, nullptr, nullptr, nullptr) != RECUR_OK) break;
    if (std::string(cls) != "Flatten") continue;
    recur_device_info info;
    info.version = RECUR_DEVICE_INFO_VERSION;
    ASSERT_EQ(recur_model_get_device(g.get(), i, &info), RECUR_OK) << recur_last_error();
    backend = info.backend;
    EXPECT_STREQ(info.backend, "cuda:0") << info.reason;
  }
  EXPECT_NE(backend, nullptr) << "no Flatten layer";
}

}  // namespace
