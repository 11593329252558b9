// SPDX-License-Identifier: Apache-2.0
// The device functions of the C ABI (recur.h, "Devices"): every error path, the CPU routes that
// must always work, and, when a GPU backend can run (a GPU with librecur_cuda.so, or the GPU
// emulator plugin named by RECUR_CUDA_PLUGIN), GPU results against the CPU's.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <thread>

#include "c_api_test_util.hpp"

namespace {

const std::string kModels = RECUR_TEST_MODELS_DIR;
// Input (B, T, 1) -> Masking -> Discretization -> Reshape -> Embedding -> GRU: Discretization has no
// GPU kernel.
const std::string kNoKernelModel =
    std::string(RECUR_TEST_KERAS_DIR) + "/graphs/preprocessing/keras3/discretization_drops_mask.keras";
// Input (B, T, 1) -> Discretization (one-hot) -> LSTM.
const std::string kNoKernelFirstModel =
    std::string(RECUR_TEST_KERAS_DIR) + "/graphs/preprocessing/keras3/discretization_one_hot_lstm.keras";
// GPU results differ from the CPU's in the last bits only (other summation orders in cuBLAS/cuDNN).
constexpr float kGpuTolerance = 1e-5f;
// The CPU backend's matrix products round a batch of N rows differently from a batch of M (plain
// recur_layer_forward with B = 2 and B = 6 differs in the last bit of some rows), so a batched
// step equals per-state steps up to float rounding, not bit for bit (seen: 3e-8 after 40 steps).
constexpr float kBatchRounding = 1e-6f;
const char* const kBadDevices[] = {"gpu", "cuda:-1", "cuda:x", "CUDA", "", "cuda:", "cuda0", "cpu ", "auto:0", "cuda:0x"};

using Model = rt::Model;

int32_t device_count() {
  int32_t n = -1;
  EXPECT_RECUR_OK(recur_device_count(&n));
  return n;
}

// What recur_device_check says about "cuda" (empty when a GPU can run).
std::string why_no_gpu() {
  return recur_device_check("cuda") == RECUR_OK ? std::string() : std::string(recur_last_error());
}

// A message that says which part of the GPU stack is missing.
bool names_what_is_missing(const std::string& message) {
  for (const char* part : {"plugin", "driver", "GPU", "cuDNN"})
    if (message.find(part) != std::string::npos) return true;
  return false;
}

#define SKIP_WITHOUT_GPU()                                                                      \
  do {                                                                                          \
    if (device_count() == 0) GTEST_SKIP() << "no GPU backend can run here: " << why_no_gpu();  \
  } while (0)

#define SKIP_WITH_GPU()                                                                                 \
  do {                                                                                                  \
    if (device_count() > 0) GTEST_SKIP() << "a GPU backend can run here; the GPU tests cover \"cuda\""; \
  } while (0)

recur_device_info info_struct() {
  recur_device_info info;
  std::memset(&info, 0, sizeof info);
  info.version = RECUR_DEVICE_INFO_VERSION;
  return info;
}

recur_device_info layer_device(const recur_layer* l) {
  recur_device_info info = info_struct();
  EXPECT_RECUR_OK(recur_layer_get_device(l, &info));
  return info;
}

recur_device_info state_device(const recur_state* s) {
  recur_device_info info = info_struct();
  EXPECT_RECUR_OK(recur_state_get_device(s, &info));
  return info;
}

recur_device_info model_device(const recur_model* m, int32_t index) {
  recur_device_info info = info_struct();
  EXPECT_RECUR_OK(recur_model_get_device(m, index, &info));
  return info;
}

void expect_on_cpu(const recur_device_info& info, const std::string& requested) {
  ASSERT_NE(info.requested, nullptr);
  ASSERT_NE(info.backend, nullptr);
  ASSERT_NE(info.path, nullptr);
  ASSERT_NE(info.reason, nullptr);
  ASSERT_NE(info.device_name, nullptr);
  EXPECT_EQ(std::string(info.requested), requested);
  EXPECT_STREQ(info.backend, "cpu");
  EXPECT_STREQ(info.path, "cpu");
  EXPECT_STRNE(info.reason, "");
  EXPECT_STREQ(info.device_name, "");
}

void expect_on_gpu(const recur_device_info& info) {
  EXPECT_STREQ(info.backend, "cuda:0");
  EXPECT_TRUE(std::string(info.path) == "cudnn" || std::string(info.path) == "kernel") << info.path;
  EXPECT_STRNE(info.reason, "");
  EXPECT_STRNE(info.device_name, "");
}

float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float d = 0.0f;
  for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

rt::Layer gru(int32_t units = 4, int32_t input = 3, bool return_sequences = true) {
  recur_layer_options o = rt::options(RECUR_LAYER_GRU, units, input);
  o.return_sequences = return_sequences;
  return rt::make(o);
}

rt::Layer lstm(int32_t units = 4, int32_t input = 3) {
  recur_layer_options o = rt::options(RECUR_LAYER_LSTM, units, input);
  o.return_sequences = 1;
  return rt::make(o);
}

rt::Layer simple_rnn(int32_t units = 4, int32_t input = 3) {
  recur_layer_options o = rt::options(RECUR_LAYER_SIMPLE_RNN, units, input);
  o.return_sequences = 1;
  return rt::make(o);
}

// The sequence layers the device tests step: GRU, LSTM and SimpleRNN (return_sequences).
const int32_t kSequenceTypes[] = {RECUR_LAYER_GRU, RECUR_LAYER_LSTM, RECUR_LAYER_SIMPLE_RNN};

rt::Layer sequence_layer(int32_t type, int32_t units, int32_t input) {
  return type == RECUR_LAYER_LSTM ? lstm(units, input)
                                  : type == RECUR_LAYER_SIMPLE_RNN ? simple_rnn(units, input) : gru(units, input);
}

const char* type_name(int32_t type) {
  return type == RECUR_LAYER_LSTM ? "LSTM" : type == RECUR_LAYER_SIMPLE_RNN ? "SimpleRNN" : "GRU";
}

// A (B, T) mask with holes: valid steps 1, 0, 1, 1, 0, ... shifted per row.
std::vector<uint8_t> holey_mask(int32_t B, int32_t T) {
  std::vector<uint8_t> m(static_cast<std::size_t>(B) * T);
  for (int32_t b = 0; b < B; ++b)
    for (int32_t t = 0; t < T; ++t) m[static_cast<std::size_t>(b) * T + t] = (t + b) % 3 != 1;
  return m;
}

std::vector<float> forward(recur_layer* l, const std::vector<float>& x, int32_t B, int32_t T,
                           const std::vector<uint8_t>* mask = nullptr) {
  size_t n = 0;
  EXPECT_RECUR_OK(recur_layer_output_length(l, B, T, &n));
  std::vector<float> y(n);
  EXPECT_RECUR_OK(recur_layer_forward(l, x.data(), x.size(), B, T, mask ? mask->data() : nullptr,
                                      mask ? mask->size() : 0, nullptr, 0, 0, 0, y.data(), y.size(), nullptr, 0));
  return y;
}

Model open_model(const std::string& relative) {
  recur_model* m = nullptr;
  EXPECT_RECUR_OK(recur_model_open(&m, (kModels + "/" + relative).c_str()));
  return Model(m);
}

std::vector<float> run_model(const recur_model* m, const std::vector<float>& x, int32_t B, int32_t T) {
  size_t n = 0;
  EXPECT_RECUR_OK(recur_model_output_length(m, B, T, &n));
  std::vector<float> y(n);
  EXPECT_RECUR_OK(recur_model_run(m, x.data(), x.size(), B, T, nullptr, 0, y.data(), y.size()));
  return y;
}

}  // namespace

// ------------------------------------------------------------------------------ library calls

TEST(CApiDevice, CountArguments) {
  EXPECT_RECUR_ERR(recur_device_count(nullptr), RECUR_ERR_INVALID_ARGUMENT, "recur_device_count: count is NULL");
  EXPECT_GE(device_count(), 0);
}

TEST(CApiDevice, CheckRejectsWhatIsNotADeviceString) {
  EXPECT_RECUR_ERR(recur_device_check(nullptr), RECUR_ERR_INVALID_ARGUMENT, "recur_device_check: device is NULL");
  for (const char* bad : kBadDevices) {
    SCOPED_TRACE(std::string("device \"") + bad + "\"");
    EXPECT_RECUR_ERR(recur_device_check(bad), RECUR_ERR_INVALID_ARGUMENT, "recur_device_check: device");
    EXPECT_RECUR_ERR(recur_device_check(bad), RECUR_ERR_INVALID_ARGUMENT, "\"cuda:N\"");  // lists the forms
  }
}

TEST(CApiDevice, CpuAndAutoAlwaysPass) {
  EXPECT_RECUR_OK(recur_device_check("cpu"));
  EXPECT_RECUR_OK(recur_device_check("auto"));
}

TEST(CApiDevice, CudaWithoutGpuSaysWhatIsMissing) {
  SKIP_WITH_GPU();
  for (const char* cuda : {"cuda", "cuda:0", "cuda:3"}) {
    SCOPED_TRACE(cuda);
    EXPECT_RECUR_ERR(recur_device_check(cuda), RECUR_ERR_UNSUPPORTED, "cuda:");
    EXPECT_TRUE(names_what_is_missing(recur_last_error())) << recur_last_error();
  }
}

TEST(CApiDevice, CudaOrdinalBeyondTheGpusFails) {
  SKIP_WITHOUT_GPU();
  const std::string beyond = "cuda:" + std::to_string(device_count());
  EXPECT_RECUR_ERR(recur_device_check(beyond.c_str()), RECUR_ERR_UNSUPPORTED, beyond);
  EXPECT_RECUR_OK(recur_device_check("cuda"));
  EXPECT_RECUR_OK(recur_device_check("cuda:0"));
}

// ------------------------------------------------------------------------------------- layers

TEST(CApiDevice, LayerStartsOnTheCpu) {
  rt::Layer l = gru();
  expect_on_cpu(layer_device(l.get()), "cpu");
}

TEST(CApiDevice, LayerErrors) {
  rt::Layer l = gru();
  recur_device_info info = info_struct();
  EXPECT_RECUR_ERR(recur_layer_set_device(nullptr, "cpu"), RECUR_ERR_INVALID_ARGUMENT,
                   "recur_layer_set_device: layer is NULL");
  EXPECT_RECUR_ERR(recur_layer_set_device(l.get(), nullptr), RECUR_ERR_INVALID_ARGUMENT,
                   "recur_layer_set_device: device is NULL");
  for (const char* bad : kBadDevices) {
    SCOPED_TRACE(std::string("device \"") + bad + "\"");
    EXPECT_RECUR_ERR(recur_layer_set_device(l.get(), bad), RECUR_ERR_INVALID_ARGUMENT, "recur_layer_set_device: device");
  }
  EXPECT_RECUR_ERR(recur_layer_get_device(nullptr, &info), RECUR_ERR_INVALID_ARGUMENT,
                   "recur_layer_get_device: layer is NULL");
  EXPECT_RECUR_ERR(recur_layer_get_device(l.get(), nullptr), RECUR_ERR_INVALID_ARGUMENT,
                   "recur_layer_get_device: info is NULL");
  for (uint32_t version : {0u, 2u, 0xFFFFFFFFu}) {
    info.version = version;
    EXPECT_RECUR_ERR(recur_layer_get_device(l.get(), &info), RECUR_ERR_UNSUPPORTED, "RECUR_DEVICE_INFO_VERSION");
  }
  expect_on_cpu(layer_device(l.get()), "cpu");  // nothing above moved it

  recur_layer* dead = gru().release();
  recur_layer_destroy(dead);
  info.version = RECUR_DEVICE_INFO_VERSION;
  EXPECT_RECUR_ERR(recur_layer_set_device(dead, "cpu"), RECUR_ERR_STATE, "recur_layer_set_device: layer is not a live");
  EXPECT_RECUR_ERR(recur_layer_get_device(dead, &info), RECUR_ERR_STATE, "recur_layer_get_device: layer is not a live");
}

TEST(CApiDevice, CpuAndAutoKeepResults) {
  for (bool is_lstm : {false, true}) {
    SCOPED_TRACE(is_lstm ? "LSTM" : "GRU");
    rt::Layer l = is_lstm ? lstm() : gru();
    const int32_t B = 2, T = 5;
    const std::vector<float> x = rt::data(static_cast<std::size_t>(B) * T * 3);
    const std::vector<uint8_t> mask = holey_mask(B, T);
    const std::vector<float> before = forward(l.get(), x, B, T, &mask);

    ASSERT_RECUR_OK(recur_layer_set_device(l.get(), "cpu"));
    expect_on_cpu(layer_device(l.get()), "cpu");
    EXPECT_EQ(forward(l.get(), x, B, T, &mask), before);

    ASSERT_RECUR_OK(recur_layer_set_device(l.get(), "auto"));
    const recur_device_info info = layer_device(l.get());
    EXPECT_STREQ(info.requested, "auto");
    if (device_count() == 0) {
      expect_on_cpu(info, "auto");
      EXPECT_TRUE(names_what_is_missing(info.reason)) << "auto on the CPU must say why: " << info.reason;
      EXPECT_EQ(forward(l.get(), x, B, T, &mask), before);
    } else {
      expect_on_gpu(info);
      EXPECT_LE(max_diff(forward(l.get(), x, B, T, &mask), before), kGpuTolerance);
    }
    ASSERT_RECUR_OK(recur_layer_set_device(l.get(), "cpu"));
    EXPECT_EQ(forward(l.get(), x, B, T, &mask), before);
  }
}

TEST(CApiDevice, FailedCudaLeavesTheLayerUsableOnTheCpu) {
  SKIP_WITH_GPU();
  rt::Layer l = gru();
  const std::vector<float> x = rt::data(2 * 4 * 3);
  const std::vector<float> before = forward(l.get(), x, 2, 4);
  for (const char* cuda : {"cuda", "cuda:1"}) {
    SCOPED_TRACE(cuda);
    EXPECT_RECUR_ERR(recur_layer_set_device(l.get(), cuda), RECUR_ERR_UNSUPPORTED, "cuda:");
    EXPECT_TRUE(names_what_is_missing(recur_last_error())) << recur_last_error();
    expect_on_cpu(layer_device(l.get()), "cpu");
    EXPECT_EQ(forward(l.get(), x, 2, 4), before);
  }
  // From "auto" too: a failed move keeps what was asked before.
  ASSERT_RECUR_OK(recur_layer_set_device(l.get(), "auto"));
  EXPECT_RECUR_ERR(recur_layer_set_device(l.get(), "cuda"), RECUR_ERR_UNSUPPORTED, "cuda:");
  expect_on_cpu(layer_device(l.get()), "auto");
  EXPECT_EQ(forward(l.get(), x, 2, 4), before);
}

TEST(CApiDevice, InfoStringsStayValidAcrossQueries) {
  rt::Layer l = gru();
  ASSERT_RECUR_OK(recur_layer_set_device(l.get(), "auto"));
  const recur_device_info first = layer_device(l.get());
  const std::string reason = first.reason;
  std::vector<std::thread> threads;
  std::atomic<int> changed{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        recur_device_info info = info_struct();
        if (recur_layer_get_device(l.get(), &info) != RECUR_OK || info.reason != first.reason) ++changed;
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(changed.load(), 0) << "repeated queries must hand out the same strings";
  EXPECT_EQ(std::string(first.reason), reason);
}

// ----------------------------------------------------------------------------- forward_device

TEST(CApiDevice, ForwardDeviceNeedsAGpuLayer) {
  rt::Layer l = gru();
  float buf[64] = {0};
  EXPECT_RECUR_ERR(recur_layer_forward_device(nullptr, nullptr, buf, 1, 1, nullptr, 0, nullptr, 0, buf, nullptr),
                   RECUR_ERR_INVALID_ARGUMENT, "recur_layer_forward_device: layer is NULL");
  for (const char* device : {"cpu", "auto"}) {
    ASSERT_RECUR_OK(recur_layer_set_device(l.get(), device));
    if (std::string(layer_device(l.get()).backend) != "cpu") continue;  // auto found a GPU
    EXPECT_RECUR_ERR(recur_layer_forward_device(l.get(), nullptr, buf, 1, 1, nullptr, 0, nullptr, 0, buf, nullptr),
                     RECUR_ERR_STATE, "recur_layer_set_device");
    // The device is reported before any pointer: NULLs still say "not on a GPU".
    EXPECT_RECUR_ERR(
        recur_layer_forward_device(l.get(), nullptr, nullptr, 0, 0, nullptr, 0, nullptr, 0, nullptr, nullptr),
        RECUR_ERR_STATE, "recur_layer_forward_device: the layer runs on the CPU");
  }
  recur_layer* dead = gru().release();
  recur_layer_destroy(dead);
  EXPECT_RECUR_ERR(recur_layer_forward_device(dead, nullptr, buf, 1, 1, nullptr, 0, nullptr, 0, buf, nullptr),
                   RECUR_ERR_STATE, "layer is not a live handle");
}

TEST(CApiDevice, ForwardDeviceArgumentsOnAGpuLayer) {
  SKIP_WITHOUT_GPU();
  rt::Layer l = gru();
  ASSERT_RECUR_OK(recur_layer_set_device(l.get(), "cuda"));
  float buf[64] = {0};
  EXPECT_RECUR_ERR(recur_layer_forward_device(l.get(), nullptr, nullptr, 1, 1, nullptr, 0, nullptr, 0, buf, nullptr),
                   RECUR_ERR_INVALID_ARGUMENT, "d_input is NULL");
  EXPECT_RECUR_ERR(recur_layer_forward_device(l.get(), nullptr, buf, 1, 1, nullptr, 0, nullptr, 0, nullptr, nullptr),
                   RECUR_ERR_INVALID_ARGUMENT, "d_output is NULL");
  EXPECT_RECUR_ERR(recur_layer_forward_device(l.get(), nullptr, buf, 0, 1, nullptr, 0, nullptr, 0, buf, nullptr),
                   RECUR_ERR_INVALID_ARGUMENT, "batch must be positive");
  EXPECT_RECUR_ERR(recur_layer_forward_device(l.get(), nullptr, buf, 1, -1, nullptr, 0, nullptr, 0, buf, nullptr),
                   RECUR_ERR_INVALID_ARGUMENT, "timesteps must be positive");
}

// ------------------------------------------------------------------------------------- states

TEST(CApiDevice, StateDevice) {
  rt::Layer l = gru();
  rt::State s = rt::make_state(l.get(), 2);
  const recur_device_info info = state_device(s.get());
  EXPECT_STREQ(info.backend, "cpu");
  EXPECT_STREQ(info.path, "cpu");
  EXPECT_STREQ(info.device_name, "");

  recur_device_info bad = info_struct();
  EXPECT_RECUR_ERR(recur_state_get_device(nullptr, &bad), RECUR_ERR_INVALID_ARGUMENT,
                   "recur_state_get_device: state is NULL");
  EXPECT_RECUR_ERR(recur_state_get_device(s.get(), nullptr), RECUR_ERR_INVALID_ARGUMENT,
                   "recur_state_get_device: info is NULL");
  bad.version = RECUR_DEVICE_INFO_VERSION + 1;
  EXPECT_RECUR_ERR(recur_state_get_device(s.get(), &bad), RECUR_ERR_UNSUPPORTED, "RECUR_DEVICE_INFO_VERSION");
  recur_state* dead = rt::make_state(l.get(), 1).release();
  recur_state_destroy(dead);
  bad.version = RECUR_DEVICE_INFO_VERSION;
  EXPECT_RECUR_ERR(recur_state_get_device(dead, &bad), RECUR_ERR_STATE, "recur_state_get_device: state is not a live");
}

TEST(CApiDevice, StateSetDeviceErrors) {
  rt::Layer l = gru();
  rt::State s = rt::make_state(l.get(), 2);
  const std::vector<float> h = rt::data(2 * 4);
  ASSERT_RECUR_OK(recur_state_set(s.get(), h.data(), h.size(), 1));
  EXPECT_RECUR_ERR(recur_state_set_device(nullptr, "cpu"), RECUR_ERR_INVALID_ARGUMENT,
                   "recur_state_set_device: state is NULL");
  EXPECT_RECUR_ERR(recur_state_set_device(s.get(), nullptr), RECUR_ERR_INVALID_ARGUMENT, "device");
  EXPECT_RECUR_ERR(recur_state_set_device(s.get(), "gpu"), RECUR_ERR_INVALID_ARGUMENT,
                   "expected \"cpu\", \"cuda\"");
  ASSERT_RECUR_OK(recur_state_set_device(s.get(), "cpu"));
  ASSERT_RECUR_OK(recur_state_set_device(s.get(), "auto"));
  if (device_count() == 0) {
    EXPECT_STREQ(state_device(s.get()).backend, "cpu");
    EXPECT_RECUR_ERR(recur_state_set_device(s.get(), "cuda"), RECUR_ERR_UNSUPPORTED, "cuda:0: ");
  }
  // Wherever it went, the values are the ones set.
  std::vector<float> back(h.size());
  ASSERT_RECUR_OK(recur_state_get(s.get(), back.data(), back.size()));
  EXPECT_EQ(back, h);
  recur_state* dead = rt::make_state(l.get(), 1).release();
  recur_state_destroy(dead);
  EXPECT_RECUR_ERR(recur_state_set_device(dead, "cpu"), RECUR_ERR_STATE, "recur_state_set_device: state is not a live");
}

namespace {

// Steps states of batches `batches` `steps` times through forward_states, and copies of them one
// by one through forward_state with T = 1; outputs and final states must agree within
// `tolerance`.
void expect_states_equal_single_steps(recur_layer* layer, const std::vector<int32_t>& batches, int steps,
                                      float tolerance) {
  recur_layer_info li;
  li.version = RECUR_LAYER_INFO_VERSION;
  ASSERT_RECUR_OK(recur_layer_get_info(layer, &li));
  const int32_t F = li.input_size, U = li.units;
  std::vector<rt::State> batched, single;
  std::vector<recur_state*> handles;
  int32_t rows = 0;
  for (std::size_t i = 0; i < batches.size(); ++i) {
    batched.push_back(rt::make_state(layer, batches[i]));
    single.push_back(rt::make_state(layer, batches[i]));
    const std::vector<float> h0 = rt::data(static_cast<std::size_t>(li.num_states) * batches[i] * U, 0.3f * i, 0.5f);
    ASSERT_RECUR_OK(recur_state_set(batched.back().get(), h0.data(), h0.size(), li.num_states));
    ASSERT_RECUR_OK(recur_state_set(single.back().get(), h0.data(), h0.size(), li.num_states));
    handles.push_back(batched.back().get());
    rows += batches[i];
  }
  for (int step = 0; step < steps; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    const std::vector<float> x = rt::data(static_cast<std::size_t>(rows) * F, 0.7f * step);
    std::vector<uint8_t> mask(static_cast<std::size_t>(rows));
    for (int32_t r = 0; r < rows; ++r) mask[static_cast<std::size_t>(r)] = (r + step) % 4 != 2;  // holes
    std::vector<float> got(static_cast<std::size_t>(rows) * U), want(got.size());
    ASSERT_RECUR_OK(recur_layer_forward_states(layer, handles.data(), static_cast<int32_t>(handles.size()), x.data(),
                                               x.size(), mask.data(), mask.size(), got.data(), got.size()));
    int32_t row = 0;
    for (std::size_t i = 0; i < batches.size(); ++i) {
      const std::size_t off = static_cast<std::size_t>(row);
      ASSERT_RECUR_OK(recur_layer_forward_state(layer, single[i].get(), x.data() + off * F,
                                                static_cast<std::size_t>(batches[i]) * F, 1, mask.data() + off,
                                                static_cast<std::size_t>(batches[i]), want.data() + off * U,
                                                static_cast<std::size_t>(batches[i]) * U));
      row += batches[i];
    }
    EXPECT_LE(max_diff(got, want), tolerance);
  }
  for (std::size_t i = 0; i < batches.size(); ++i) {
    SCOPED_TRACE("final state " + std::to_string(i));
    const std::size_t n = static_cast<std::size_t>(li.num_states) * batches[i] * U;
    std::vector<float> a(n), b(n);
    ASSERT_RECUR_OK(recur_state_get(batched[i].get(), a.data(), a.size()));
    ASSERT_RECUR_OK(recur_state_get(single[i].get(), b.data(), b.size()));
    EXPECT_LE(max_diff(a, b), tolerance);
  }
}

}  // namespace

TEST(CApiDevice, ForwardStatesEqualsForwardStateOnTheCpu) {
  for (int32_t type : kSequenceTypes) {
    SCOPED_TRACE(type_name(type));
    rt::Layer l = sequence_layer(type, 5, 3);
    expect_states_equal_single_steps(l.get(), {1, 3, 2}, 40, kBatchRounding);
    expect_states_equal_single_steps(l.get(), {1, 1, 1, 1, 1}, 20, kBatchRounding);
    // One state: the same batch either way, so the same numbers.
    expect_states_equal_single_steps(l.get(), {4}, 5, 0.0f);
  }
  // return_sequences=False writes the same (rows, units) for one step.
  rt::Layer last = gru(4, 3, false);
  expect_states_equal_single_steps(last.get(), {2, 1}, 3, kBatchRounding);
}

TEST(CApiDevice, ForwardStatesWithoutMask) {
  rt::Layer l = gru();
  rt::State a = rt::make_state(l.get(), 2), b = rt::make_state(l.get(), 1);
  rt::State a1 = rt::make_state(l.get(), 2), b1 = rt::make_state(l.get(), 1);
  recur_state* both[] = {a.get(), b.get()};
  const std::vector<float> x = rt::data(3 * 3);
  std::vector<float> got(3 * 4), want(3 * 4);
  ASSERT_RECUR_OK(recur_layer_forward_states(l.get(), both, 2, x.data(), x.size(), nullptr, 0, got.data(), got.size()));
  ASSERT_RECUR_OK(recur_layer_forward_state(l.get(), a1.get(), x.data(), 6, 1, nullptr, 0, want.data(), 8));
  ASSERT_RECUR_OK(recur_layer_forward_state(l.get(), b1.get(), x.data() + 6, 3, 1, nullptr, 0, want.data() + 8, 4));
  EXPECT_LE(max_diff(got, want), kBatchRounding);
}

TEST(CApiDevice, ForwardStatesErrors) {
  rt::Layer l = gru(4, 3);
  rt::Layer other = gru(6, 3);
  rt::Layer lstm_layer = lstm(4, 3);
  rt::State s0 = rt::make_state(l.get(), 2), s1 = rt::make_state(l.get(), 1);
  rt::State wide = rt::make_state(other.get(), 1), two = rt::make_state(lstm_layer.get(), 1);
  std::vector<float> x(3 * 3, 0.5f), y(3 * 4);
  std::vector<uint8_t> mask(3, 1);
  const char* fn = "recur_layer_forward_states";
  auto call_n = [&](const recur_layer* layer, std::vector<recur_state*> states, int32_t n) {
    return recur_layer_forward_states(layer, states.data(), n, x.data(), x.size(), mask.data(), mask.size(), y.data(),
                                      y.size());
  };
  auto call = [&](const recur_layer* layer, std::vector<recur_state*> states) {
    return call_n(layer, states, static_cast<int32_t>(states.size()));
  };
  EXPECT_RECUR_ERR(call(nullptr, {s0.get(), s1.get()}), RECUR_ERR_INVALID_ARGUMENT, "layer is NULL");
  EXPECT_RECUR_ERR(recur_layer_forward_states(l.get(), nullptr, 2, x.data(), x.size(), nullptr, 0, y.data(), y.size()),
                   RECUR_ERR_INVALID_ARGUMENT, std::string(fn) + ": states is NULL");
  EXPECT_RECUR_ERR(call_n(l.get(), {s0.get(), s1.get()}, 0), RECUR_ERR_INVALID_ARGUMENT, "num_states must be positive");
  EXPECT_RECUR_ERR(call_n(l.get(), {s0.get(), s1.get()}, -3), RECUR_ERR_INVALID_ARGUMENT, "num_states");
  EXPECT_RECUR_ERR(call(l.get(), {s0.get(), nullptr}), RECUR_ERR_INVALID_ARGUMENT, "states[1] is NULL");
  EXPECT_RECUR_ERR(call(l.get(), {s1.get(), s1.get()}), RECUR_ERR_INVALID_ARGUMENT,
                   "states[0] and states[1] are the same state");
  EXPECT_RECUR_ERR(call(l.get(), {s0.get(), s1.get(), s0.get()}), RECUR_ERR_INVALID_ARGUMENT,
                   "states[0] and states[2] are the same state");
  // States shaped for other layers: more units, or h and c for a GRU.
  EXPECT_RECUR_ERR(call(l.get(), {s0.get(), wide.get()}), RECUR_ERR_SHAPE, "state");
  EXPECT_RECUR_ERR(call(l.get(), {s0.get(), two.get()}), RECUR_ERR_SHAPE, "state");
  // Lengths that do not add up to the states' rows (2 + 1 = 3).
  EXPECT_RECUR_ERR(recur_layer_forward_states(l.get(), std::vector<recur_state*>{s0.get()}.data(), 1, x.data(),
                                              x.size(), nullptr, 0, y.data(), 2 * 4),
                   RECUR_ERR_SHAPE, "input");
  std::vector<recur_state*> pair{s0.get(), s1.get()};
  EXPECT_RECUR_ERR(recur_layer_forward_states(l.get(), pair.data(), 2, x.data(), x.size(), nullptr, 0, y.data(),
                                              y.size() - 1),
                   RECUR_ERR_SHAPE, "output");
  EXPECT_RECUR_ERR(recur_layer_forward_states(l.get(), pair.data(), 2, x.data(), x.size(), mask.data(), 2, y.data(),
                                              y.size()),
                   RECUR_ERR_SHAPE, "mask");
  EXPECT_RECUR_ERR(recur_layer_forward_states(l.get(), pair.data(), 2, nullptr, x.size(), nullptr, 0, y.data(),
                                              y.size()),
                   RECUR_ERR_INVALID_ARGUMENT, "input");
  EXPECT_RECUR_ERR(recur_layer_forward_states(l.get(), pair.data(), 2, x.data(), x.size(), nullptr, 0, nullptr,
                                              y.size()),
                   RECUR_ERR_INVALID_ARGUMENT, "output");
  // A cell steps with recur_cell_call.
  rt::Layer cell = rt::make(rt::options(RECUR_LAYER_GRU_CELL, 4, 3));
  EXPECT_RECUR_ERR(call(cell.get(), {s0.get(), s1.get()}), RECUR_ERR_STATE, "cell");
  // Destroyed handles.
  recur_state* dead_state = rt::make_state(l.get(), 1).release();
  recur_state_destroy(dead_state);
  EXPECT_RECUR_ERR(call(l.get(), {s0.get(), dead_state}), RECUR_ERR_STATE, "states[1] is not a live handle");
  recur_layer* dead_layer = gru().release();
  recur_layer_destroy(dead_layer);
  EXPECT_RECUR_ERR(call(dead_layer, {s0.get(), s1.get()}), RECUR_ERR_STATE, "layer is not a live handle");
  // None of the failures above stepped a state.
  std::vector<float> h(2 * 4, 1.0f);
  ASSERT_RECUR_OK(recur_state_get(s0.get(), h.data(), h.size()));
  EXPECT_EQ(h, std::vector<float>(2 * 4, 0.0f));
}

// ------------------------------------------------------------------------------------- models

TEST(CApiDevice, ModelCpuAndAutoKeepResults) {
  RECUR_SKIP_WITHOUT_FILES();
  Model m = open_model("keras3/bigru.keras");
  ASSERT_NE(m, nullptr);
  const int32_t B = 3, T = 6;
  const std::vector<float> x = rt::data(static_cast<std::size_t>(B) * T * 3);
  const std::vector<float> before = run_model(m.get(), x, B, T);
  expect_on_cpu(model_device(m.get(), -1), "cpu");

  ASSERT_RECUR_OK(recur_model_set_device(m.get(), "cpu"));
  expect_on_cpu(model_device(m.get(), -1), "cpu");
  EXPECT_EQ(run_model(m.get(), x, B, T), before);

  ASSERT_RECUR_OK(recur_model_set_device(m.get(), "auto"));
  recur_model_info mi;
  mi.version = RECUR_MODEL_INFO_VERSION;
  ASSERT_RECUR_OK(recur_model_get_info(m.get(), &mi));
  const recur_device_info whole = model_device(m.get(), -1);
  if (device_count() == 0) {
    expect_on_cpu(whole, "auto");
    EXPECT_TRUE(names_what_is_missing(whole.reason)) << whole.reason;
    for (int32_t i = 0; i < mi.num_layers; ++i) {
      SCOPED_TRACE("layer " + std::to_string(i));
      const recur_device_info layer = model_device(m.get(), i);
      EXPECT_STREQ(layer.backend, "cpu");
      EXPECT_STREQ(layer.path, "cpu");
      EXPECT_STRNE(layer.reason, "");
    }
    EXPECT_EQ(run_model(m.get(), x, B, T), before);
  } else {
    expect_on_gpu(whole);
    EXPECT_LE(max_diff(run_model(m.get(), x, B, T), before), kGpuTolerance);
  }
}

TEST(CApiDevice, ModelErrors) {
  RECUR_SKIP_WITHOUT_FILES();
  Model m = open_model("keras3/bigru.keras");
  ASSERT_NE(m, nullptr);
  recur_model_info mi;
  mi.version = RECUR_MODEL_INFO_VERSION;
  ASSERT_RECUR_OK(recur_model_get_info(m.get(), &mi));
  recur_device_info info = info_struct();
  EXPECT_RECUR_ERR(recur_model_set_device(nullptr, "cpu"), RECUR_ERR_INVALID_ARGUMENT,
                   "recur_model_set_device: model is NULL");
  EXPECT_RECUR_ERR(recur_model_set_device(m.get(), nullptr), RECUR_ERR_INVALID_ARGUMENT,
                   "recur_model_set_device: device is NULL");
  for (const char* bad : kBadDevices) {
    SCOPED_TRACE(std::string("device \"") + bad + "\"");
    EXPECT_RECUR_ERR(recur_model_set_device(m.get(), bad), RECUR_ERR_INVALID_ARGUMENT, "recur_model_set_device: device");
  }
  EXPECT_RECUR_ERR(recur_model_get_device(nullptr, -1, &info), RECUR_ERR_INVALID_ARGUMENT,
                   "recur_model_get_device: model is NULL");
  EXPECT_RECUR_ERR(recur_model_get_device(m.get(), -1, nullptr), RECUR_ERR_INVALID_ARGUMENT,
                   "recur_model_get_device: info is NULL");
  for (int32_t index : {-2, mi.num_layers, 1 << 30}) {
    SCOPED_TRACE(index);
    EXPECT_RECUR_ERR(recur_model_get_device(m.get(), index, &info), RECUR_ERR_INVALID_ARGUMENT, "layer_index");
  }
  info.version = 7;
  EXPECT_RECUR_ERR(recur_model_get_device(m.get(), -1, &info), RECUR_ERR_UNSUPPORTED, "RECUR_DEVICE_INFO_VERSION");
  info.version = RECUR_DEVICE_INFO_VERSION;

  recur_model* dead = open_model("keras3/bigru.keras").release();
  recur_model_destroy(dead);
  EXPECT_RECUR_ERR(recur_model_set_device(dead, "cpu"), RECUR_ERR_STATE, "model is not a live handle");
  EXPECT_RECUR_ERR(recur_model_get_device(dead, -1, &info), RECUR_ERR_STATE, "model is not a live handle");
}

TEST(CApiDevice, FailedCudaLeavesTheModelUsableOnTheCpu) {
  RECUR_SKIP_WITHOUT_FILES();
  SKIP_WITH_GPU();
  Model m = open_model("keras2/bigru.h5");
  ASSERT_NE(m, nullptr);
  const std::vector<float> x = rt::data(2 * 4 * 3);
  const std::vector<float> before = run_model(m.get(), x, 2, 4);
  EXPECT_RECUR_ERR(recur_model_set_device(m.get(), "cuda"), RECUR_ERR_UNSUPPORTED, "cuda:");
  EXPECT_TRUE(names_what_is_missing(recur_last_error())) << recur_last_error();
  expect_on_cpu(model_device(m.get(), -1), "cpu");
  EXPECT_EQ(run_model(m.get(), x, 2, 4), before);
}

// ---------------------------------------------------------------- GPU (a GPU or the emulator)

TEST(CApiDeviceGpu, LayersMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  struct Case {
    const char* name;
    int32_t type;
    int32_t reset_after;
    const char* activation;
    bool mask;
  } cases[] = {
      {"GRU (cuDNN's)", RECUR_LAYER_GRU, RECUR_DEFAULT, nullptr, false},
      {"GRU reset_after=False", RECUR_LAYER_GRU, 0, nullptr, false},
      {"GRU with a holey mask", RECUR_LAYER_GRU, RECUR_DEFAULT, nullptr, true},
      {"LSTM", RECUR_LAYER_LSTM, RECUR_DEFAULT, nullptr, false},
      {"LSTM relu with a holey mask", RECUR_LAYER_LSTM, RECUR_DEFAULT, "relu", true},
      {"SimpleRNN", RECUR_LAYER_SIMPLE_RNN, RECUR_DEFAULT, nullptr, false},
      {"SimpleRNN relu with a holey mask", RECUR_LAYER_SIMPLE_RNN, RECUR_DEFAULT, "relu", true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    recur_layer_options o = rt::options(c.type, 6, 3);
    o.return_sequences = 1;
    o.reset_after = c.reset_after;
    o.activation = c.activation;
    rt::Layer l = rt::make(o);
    const int32_t B = 3, T = 7;
    const std::vector<float> x = rt::data(static_cast<std::size_t>(B) * T * 3);
    const std::vector<uint8_t> mask = holey_mask(B, T);
    const std::vector<float> cpu = forward(l.get(), x, B, T, c.mask ? &mask : nullptr);
    ASSERT_RECUR_OK(recur_layer_set_device(l.get(), "cuda"));
    const recur_device_info info = layer_device(l.get());
    EXPECT_STREQ(info.requested, "cuda:0");
    expect_on_gpu(info);
    std::printf("[ device   ] %s: %s via %s on %s (%s)\n", c.name, info.backend, info.path, info.device_name,
                info.reason);
    EXPECT_LE(max_diff(forward(l.get(), x, B, T, c.mask ? &mask : nullptr), cpu), kGpuTolerance);
    ASSERT_RECUR_OK(recur_layer_set_device(l.get(), "cpu"));
    EXPECT_EQ(forward(l.get(), x, B, T, c.mask ? &mask : nullptr), cpu);
  }
}

TEST(CApiDeviceGpu, StatesLiveOnTheGpuAndMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  for (int32_t type : kSequenceTypes) {
    SCOPED_TRACE(type_name(type));
    const bool is_lstm = type == RECUR_LAYER_LSTM;
    rt::Layer cpu = sequence_layer(type, 5, 3);
    rt::Layer dev = sequence_layer(type, 5, 3);  // same seed: same weights
    ASSERT_RECUR_OK(recur_layer_set_device(dev.get(), "cuda"));
    rt::State sc = rt::make_state(cpu.get(), 2), sd = rt::make_state(dev.get(), 2);
    const std::vector<float> x = rt::data(2 * 4 * 3);
    std::vector<float> yc(2 * 4 * 5), yd(yc.size());
    ASSERT_RECUR_OK(recur_layer_forward_state(cpu.get(), sc.get(), x.data(), x.size(), 4, nullptr, 0, yc.data(), yc.size()));
    ASSERT_RECUR_OK(recur_layer_forward_state(dev.get(), sd.get(), x.data(), x.size(), 4, nullptr, 0, yd.data(), yd.size()));
    EXPECT_LE(max_diff(yc, yd), kGpuTolerance);
    const recur_device_info info = state_device(sd.get());
    EXPECT_STREQ(info.backend, "cuda:0");
    EXPECT_STREQ(info.path, "device-resident");
    const std::size_t n = static_cast<std::size_t>(is_lstm ? 2 : 1) * 2 * 5;
    std::vector<float> hc(n), hd(n);
    ASSERT_RECUR_OK(recur_state_get(sc.get(), hc.data(), hc.size()));
    ASSERT_RECUR_OK(recur_state_get(sd.get(), hd.data(), hd.size()));
    EXPECT_LE(max_diff(hc, hd), kGpuTolerance);
    // Stepped by a CPU layer, the state comes back to the host.
    ASSERT_RECUR_OK(recur_layer_forward_state(cpu.get(), sd.get(), x.data(), x.size(), 4, nullptr, 0, yd.data(), yd.size()));
    EXPECT_STREQ(state_device(sd.get()).backend, "cpu");
  }
}

TEST(CApiDeviceGpu, StatesStartOnTheirLayersDeviceAndMoveOnRequest) {
  SKIP_WITHOUT_GPU();
  rt::Layer l = lstm(5, 3);
  ASSERT_RECUR_OK(recur_layer_set_device(l.get(), "cuda"));
  rt::State s = rt::make_state(l.get(), 2);
  EXPECT_STREQ(state_device(s.get()).backend, "cuda:0");
  EXPECT_STREQ(state_device(s.get()).path, "device-resident");
  const std::vector<float> hc = rt::data(2 * 2 * 5);
  ASSERT_RECUR_OK(recur_state_set(s.get(), hc.data(), hc.size(), 2));
  ASSERT_RECUR_OK(recur_state_set_device(s.get(), "cpu"));
  EXPECT_STREQ(state_device(s.get()).backend, "cpu");
  std::vector<float> back(hc.size());
  ASSERT_RECUR_OK(recur_state_get(s.get(), back.data(), back.size()));
  EXPECT_EQ(back, hc);
  ASSERT_RECUR_OK(recur_state_set_device(s.get(), "cuda:0"));
  EXPECT_STREQ(state_device(s.get()).path, "device-resident");
  ASSERT_RECUR_OK(recur_state_reset(s.get()));
  ASSERT_RECUR_OK(recur_state_get(s.get(), back.data(), back.size()));
  EXPECT_EQ(back, std::vector<float>(hc.size(), 0.0f));
}

TEST(CApiDeviceGpu, ForwardStatesMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  for (int32_t type : kSequenceTypes) {
    SCOPED_TRACE(type_name(type));
    rt::Layer l = sequence_layer(type, 5, 3);
    ASSERT_RECUR_OK(recur_layer_set_device(l.get(), "cuda"));
    expect_states_equal_single_steps(l.get(), {1, 3, 2}, 4, kGpuTolerance);
  }
}

// The GPU emulator plugin keeps "device" memory on the host, so host buffers stand in for the
// device pointers a CUDA caller would pass; a real GPU needs cudaMalloc'd ones (CUDA interop).
TEST(CApiDeviceGpu, ForwardDeviceMatchesForward) {
  SKIP_WITHOUT_GPU();
  for (int32_t type : kSequenceTypes) {
    SCOPED_TRACE(type_name(type));
    const bool is_lstm = type == RECUR_LAYER_LSTM;
    rt::Layer l = sequence_layer(type, 5, 3);
    const int32_t B = 3, T = 6, ns = is_lstm ? 2 : 1;
    const std::vector<float> x = rt::data(static_cast<std::size_t>(B) * T * 3);
    const std::vector<float> h0 = rt::data(static_cast<std::size_t>(ns) * B * 5, 1.0f, 0.4f);
    const std::vector<uint8_t> mask = holey_mask(B, T);
    std::vector<float> want(static_cast<std::size_t>(B) * T * 5), want_final(h0.size());
    ASSERT_RECUR_OK(recur_layer_forward(l.get(), x.data(), x.size(), B, T, mask.data(), mask.size(), h0.data(),
                                        h0.size(), ns, 0, want.data(), want.size(), want_final.data(),
                                        want_final.size()));  // on the CPU
    ASSERT_RECUR_OK(recur_layer_set_device(l.get(), "cuda"));
    const std::string name = layer_device(l.get()).device_name;
    if (name.rfind("recur GPU emulator", 0) != 0) GTEST_SKIP() << "needs device memory on " << name;
    std::vector<float> got(want.size()), got_final(want_final.size());
    ASSERT_RECUR_OK(recur_layer_forward_device(l.get(), nullptr, x.data(), B, T, mask.data(), mask.size(), h0.data(),
                                               ns, got.data(), got_final.data()));
    EXPECT_LE(max_diff(got, want), kGpuTolerance);
    EXPECT_LE(max_diff(got_final, want_final), kGpuTolerance);
    EXPECT_RECUR_ERR(recur_layer_forward_device(l.get(), nullptr, x.data(), B, T, mask.data(), mask.size() - 1,
                                                nullptr, 0, got.data(), nullptr),
                     RECUR_ERR_SHAPE, "mask");
  }
}

// Many states stepped on device buffers: the same numbers as recur_layer_forward_states (emulator:
// host buffers stand in for device pointers, as above).
TEST(CApiDeviceGpu, ForwardStatesDeviceMatchesForwardStates) {
  SKIP_WITHOUT_GPU();
  for (int32_t type : kSequenceTypes) {
    SCOPED_TRACE(type_name(type));
    rt::Layer l = sequence_layer(type, 5, 3);
    const std::vector<int32_t> batches{1, 3, 2};
    std::vector<rt::State> host, dev;
    std::vector<recur_state*> hh, dh;
    ASSERT_RECUR_OK(recur_layer_set_device(l.get(), "cuda"));
    const std::string name = layer_device(l.get()).device_name;
    if (name.rfind("recur GPU emulator", 0) != 0) GTEST_SKIP() << "needs device memory on " << name;
    // On the CPU, the call says where the layer must be first.
    rt::Layer cpu_layer = sequence_layer(type, 5, 3);
    rt::State cpu_state = rt::make_state(cpu_layer.get(), 1);
    std::vector<recur_state*> one{cpu_state.get()};
    std::vector<float> x1(3), y1(5);
    EXPECT_RECUR_ERR(recur_layer_forward_states_device(cpu_layer.get(), nullptr, one.data(), 1, x1.data(), nullptr, 0,
                                                       y1.data()),
                     RECUR_ERR_STATE, "recur_layer_set_device");
    for (int32_t b : batches) {
      host.push_back(rt::make_state(l.get(), b));
      dev.push_back(rt::make_state(l.get(), b));
      hh.push_back(host.back().get());
      dh.push_back(dev.back().get());
    }
    const int32_t rows = 6;
    for (int step = 0; step < 3; ++step) {
      SCOPED_TRACE("step " + std::to_string(step));
      const std::vector<float> x = rt::data(static_cast<std::size_t>(rows) * 3, 0.5f * step);
      std::vector<uint8_t> mask(rows);
      for (int32_t r = 0; r < rows; ++r) mask[static_cast<std::size_t>(r)] = (r + step) % 3 != 1;
      std::vector<float> want(static_cast<std::size_t>(rows) * 5), got(want.size());
      ASSERT_RECUR_OK(recur_layer_forward_states(l.get(), hh.data(), 3, x.data(), x.size(), mask.data(), mask.size(),
                                                 want.data(), want.size()));
      ASSERT_RECUR_OK(recur_layer_forward_states_device(l.get(), nullptr, dh.data(), 3, x.data(), mask.data(),
                                                        mask.size(), got.data()));
      EXPECT_EQ(got, want);
    }
    // One state holding all the rows (the slab path) gives the same numbers as the host call.
    rt::State slab_host = rt::make_state(l.get(), rows), slab_dev = rt::make_state(l.get(), rows);
    std::vector<recur_state*> one_host{slab_host.get()}, one_dev{slab_dev.get()};
    for (int step = 0; step < 3; ++step) {
      const std::vector<float> x = rt::data(static_cast<std::size_t>(rows) * 3, 0.25f * step);
      std::vector<uint8_t> mask(rows);
      for (int32_t r = 0; r < rows; ++r) mask[static_cast<std::size_t>(r)] = (r + step) % 4 != 1;
      std::vector<float> want(static_cast<std::size_t>(rows) * 5), got(want.size());
      ASSERT_RECUR_OK(recur_layer_forward_states(l.get(), one_host.data(), 1, x.data(), x.size(), mask.data(),
                                                 mask.size(), want.data(), want.size()));
      ASSERT_RECUR_OK(recur_layer_forward_states_device(l.get(), nullptr, one_dev.data(), 1, x.data(), mask.data(),
                                                        mask.size(), got.data()));
      EXPECT_EQ(got, want) << "one state, step " << step;
    }
    // Bad arguments change no state.
    std::vector<float> before(static_cast<std::size_t>(type == RECUR_LAYER_LSTM ? 2 : 1) * 3 * 5), after(before.size());
    ASSERT_RECUR_OK(recur_state_get(dh[1], before.data(), before.size()));
    std::vector<float> x(static_cast<std::size_t>(rows) * 3), y(static_cast<std::size_t>(rows) * 5);
    std::vector<uint8_t> mask(rows, 1);
    EXPECT_RECUR_ERR(recur_layer_forward_states_device(l.get(), nullptr, dh.data(), 3, nullptr, nullptr, 0, y.data()),
                     RECUR_ERR_INVALID_ARGUMENT, "d_input");
    EXPECT_RECUR_ERR(recur_layer_forward_states_device(l.get(), nullptr, dh.data(), 3, x.data(), nullptr, 0, nullptr),
                     RECUR_ERR_INVALID_ARGUMENT, "d_output");
    EXPECT_RECUR_ERR(recur_layer_forward_states_device(l.get(), nullptr, dh.data(), 0, x.data(), nullptr, 0, y.data()),
                     RECUR_ERR_INVALID_ARGUMENT, "num_states");
    std::vector<recur_state*> twice{dh[0], dh[1], dh[0]};
    EXPECT_RECUR_ERR(recur_layer_forward_states_device(l.get(), nullptr, twice.data(), 3, x.data(), nullptr, 0, y.data()),
                     RECUR_ERR_INVALID_ARGUMENT, "the same state");
    EXPECT_RECUR_ERR(recur_layer_forward_states_device(l.get(), nullptr, dh.data(), 3, x.data(), mask.data(),
                                                       mask.size() - 1, y.data()),
                     RECUR_ERR_SHAPE, "mask");
    ASSERT_RECUR_OK(recur_state_get(dh[1], after.data(), after.size()));
    EXPECT_EQ(after, before);
  }
}

// Keras 3 on JAX repeats h itself at a masked step (from h0 on, where TensorFlow repeats zeros):
// every GPU route runs it, against the CPU with nonzero initial states and steps masked before any
// valid one. The right-padded mask with an empty row takes cuDNN's route for the GRU; the holey one
// recur's kernels.
TEST(CApiDeviceGpu, JaxMaskedLoopsMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  const int32_t B = 3, T = 5, U = 5, F = 3;
  std::vector<uint8_t> padded(static_cast<std::size_t>(B) * T, 0);
  for (int32_t t = 0; t < 3; ++t) padded[static_cast<std::size_t>(t)] = 1;  // row 0: 3 steps, row 1: none
  for (int32_t t = 0; t < T; ++t) padded[static_cast<std::size_t>(2 * T + t)] = 1;
  std::vector<uint8_t> holey = holey_mask(B, T);
  for (int32_t t = 0; t < T; ++t) holey[static_cast<std::size_t>(T + t)] = t >= 2;  // row 1 starts masked
  for (int32_t type : kSequenceTypes) {
    for (int32_t zero_output : {0, 1}) {
      SCOPED_TRACE(std::string(type_name(type)) + (zero_output ? ", zero_output_for_mask" : ""));
      recur_layer_options o = rt::options(type, U, F);
      o.return_sequences = 1;
      o.zero_output_for_mask = zero_output;
      rt::Layer cpu = rt::make(o), dev = rt::make(o);  // same seed: same weights
      for (recur_layer* l : {cpu.get(), dev.get()}) ASSERT_RECUR_OK(recur_layer_set_keras_backend(l, "jax"));
      ASSERT_RECUR_OK(recur_layer_set_device(dev.get(), "cuda"));
      const int32_t ns = type == RECUR_LAYER_LSTM ? 2 : 1;
      const std::vector<float> x = rt::data(static_cast<std::size_t>(B) * T * F);
      const std::vector<float> h0 = rt::data(static_cast<std::size_t>(ns) * B * U, 1.0f, 0.6f);

      // Whole sequences with initial states.
      for (const std::vector<uint8_t>* mask : {&padded, &holey}) {
        std::vector<float> want(static_cast<std::size_t>(B) * T * U), got(want.size());
        std::vector<float> want_final(h0.size()), got_final(h0.size());
        ASSERT_RECUR_OK(recur_layer_forward(cpu.get(), x.data(), x.size(), B, T, mask->data(), mask->size(), h0.data(),
                                            h0.size(), ns, 0, want.data(), want.size(), want_final.data(),
                                            want_final.size()));
        ASSERT_RECUR_OK(recur_layer_forward(dev.get(), x.data(), x.size(), B, T, mask->data(), mask->size(), h0.data(),
                                            h0.size(), ns, 0, got.data(), got.size(), got_final.data(),
                                            got_final.size()));
        EXPECT_LE(max_diff(got, want), kGpuTolerance) << (mask == &padded ? "right-padded" : "holey");
        EXPECT_LE(max_diff(got_final, want_final), kGpuTolerance);
        // Row 1's first step is masked: it repeats h0 (or is 0).
        for (int32_t j = 0; j < U; ++j)
          EXPECT_EQ(got[static_cast<std::size_t>(T * U + j)], zero_output ? 0.0f : h0[static_cast<std::size_t>(U + j)]);
      }

      // A stream from a set state, one step and then three at a time (the state stays resident).
      rt::State sc = rt::make_state(cpu.get(), B), sd = rt::make_state(dev.get(), B);
      ASSERT_RECUR_OK(recur_state_set(sc.get(), h0.data(), h0.size(), ns));
      ASSERT_RECUR_OK(recur_state_set(sd.get(), h0.data(), h0.size(), ns));
      for (int32_t steps : {1, 3}) {
        SCOPED_TRACE("stream call of " + std::to_string(steps) + " steps");
        std::vector<uint8_t> m(static_cast<std::size_t>(B) * steps);
        for (std::size_t i = 0; i < m.size(); ++i) m[i] = i % 3 == 2;  // every row's first step masked
        const std::vector<float> xs(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(B * steps * F));
        std::vector<float> want(static_cast<std::size_t>(B) * steps * U), got(want.size());
        ASSERT_RECUR_OK(recur_layer_forward_state(cpu.get(), sc.get(), xs.data(), xs.size(), steps, m.data(), m.size(),
                                                  want.data(), want.size()));
        ASSERT_RECUR_OK(recur_layer_forward_state(dev.get(), sd.get(), xs.data(), xs.size(), steps, m.data(), m.size(),
                                                  got.data(), got.size()));
        EXPECT_LE(max_diff(got, want), kGpuTolerance);
        EXPECT_STREQ(state_device(sd.get()).path, "device-resident");
      }

      // Many streams stepped as one batch, their states set apart.
      std::vector<rt::State> hs, ds;
      std::vector<recur_state*> hh, dh;
      const std::vector<int32_t> batches{1, 2};
      for (std::size_t i = 0; i < batches.size(); ++i) {
        const std::vector<float> s0 = rt::data(static_cast<std::size_t>(ns) * batches[i] * U, 2.0f + i, 0.7f);
        hs.push_back(rt::make_state(cpu.get(), batches[i]));
        ds.push_back(rt::make_state(dev.get(), batches[i]));
        ASSERT_RECUR_OK(recur_state_set(hs.back().get(), s0.data(), s0.size(), ns));
        ASSERT_RECUR_OK(recur_state_set(ds.back().get(), s0.data(), s0.size(), ns));
        hh.push_back(hs.back().get());
        dh.push_back(ds.back().get());
      }
      for (int step = 0; step < 3; ++step) {
        SCOPED_TRACE("forward_states step " + std::to_string(step));
        const std::vector<float> xs = rt::data(3 * F, 0.5f * step);
        const std::vector<uint8_t> m{static_cast<uint8_t>(step > 0), static_cast<uint8_t>(step == 1), 0};
        std::vector<float> want(3 * U), got(want.size());
        ASSERT_RECUR_OK(recur_layer_forward_states(cpu.get(), hh.data(), 2, xs.data(), xs.size(), m.data(), m.size(),
                                                   want.data(), want.size()));
        ASSERT_RECUR_OK(recur_layer_forward_states(dev.get(), dh.data(), 2, xs.data(), xs.size(), m.data(), m.size(),
                                                   got.data(), got.size()));
        EXPECT_LE(max_diff(got, want), kGpuTolerance);
      }
      for (std::size_t i = 0; i < batches.size(); ++i) {
        std::vector<float> a(static_cast<std::size_t>(ns) * batches[i] * U), b(a.size());
        ASSERT_RECUR_OK(recur_state_get(hh[i], a.data(), a.size()));
        ASSERT_RECUR_OK(recur_state_get(dh[i], b.data(), b.size()));
        EXPECT_LE(max_diff(a, b), kGpuTolerance) << "state " << i;
      }

      // Device buffers (the emulator's are host memory, as above).
      const std::string name = layer_device(dev.get()).device_name;
      if (name.rfind("recur GPU emulator", 0) != 0) {
        std::printf("[ skipped  ] the device-buffer calls: they need device memory on %s\n", name.c_str());
        continue;
      }
      std::vector<float> want(static_cast<std::size_t>(B) * T * U), got(want.size());
      std::vector<float> want_final(h0.size()), got_final(h0.size());
      ASSERT_RECUR_OK(recur_layer_forward(cpu.get(), x.data(), x.size(), B, T, holey.data(), holey.size(), h0.data(),
                                          h0.size(), ns, 0, want.data(), want.size(), want_final.data(),
                                          want_final.size()));
      ASSERT_RECUR_OK(recur_layer_forward_device(dev.get(), nullptr, x.data(), B, T, holey.data(), holey.size(),
                                                 h0.data(), ns, got.data(), got_final.data()));
      EXPECT_LE(max_diff(got, want), kGpuTolerance) << "forward_device";
      EXPECT_LE(max_diff(got_final, want_final), kGpuTolerance) << "forward_device";
      const std::vector<float> xs = rt::data(3 * F, 0.25f);
      const std::vector<uint8_t> m{0, 1, 0};
      std::vector<float> want_s(3 * U), got_s(want_s.size());
      ASSERT_RECUR_OK(recur_layer_forward_states(cpu.get(), hh.data(), 2, xs.data(), xs.size(), m.data(), m.size(),
                                                 want_s.data(), want_s.size()));
      ASSERT_RECUR_OK(recur_layer_forward_states_device(dev.get(), nullptr, dh.data(), 2, xs.data(), m.data(), m.size(),
                                                        got_s.data()));
      EXPECT_LE(max_diff(got_s, want_s), kGpuTolerance) << "forward_states_device";
    }
  }
}

// Every layer of a model on a GPU reports where it runs: the recurrent ones and every layer with a
// GPU kernel (Masking among them) on the GPU.
TEST(CApiDeviceGpu, ModelMatchesTheCpu) {
  RECUR_SKIP_WITHOUT_FILES();
  SKIP_WITHOUT_GPU();
  for (const char* file : {"keras3/bigru.keras", "keras2/binone.h5", "keras3/tokens.keras"}) {
    SCOPED_TRACE(file);
    Model m = open_model(file);
    ASSERT_NE(m, nullptr);
    const bool tokens = std::string(file).find("tokens") != std::string::npos;
    std::vector<float> x = rt::data(3 * 6 * 3);
    if (tokens) {
      x.resize(3 * 6);
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7) % 5);  // ids, some 0 (masked)
    }
    const std::vector<float> cpu = run_model(m.get(), x, 3, 6);
    ASSERT_RECUR_OK(recur_model_set_device(m.get(), "cuda"));
    expect_on_gpu(model_device(m.get(), -1));
    recur_model_info mi;
    mi.version = RECUR_MODEL_INFO_VERSION;
    ASSERT_RECUR_OK(recur_model_get_info(m.get(), &mi));
    for (int32_t i = 0; i < mi.num_layers; ++i) {
      const char* cls = nullptr;
      int32_t recurrent = 0;
      ASSERT_RECUR_OK(recur_model_layer(m.get(), i, nullptr, &cls, nullptr, nullptr, nullptr, &recurrent));
      SCOPED_TRACE(cls);
      const recur_device_info layer = model_device(m.get(), i);
      expect_on_gpu(layer);
      if (!recurrent) {
        EXPECT_STREQ(layer.path, "kernel");
      }
    }
    EXPECT_LE(max_diff(run_model(m.get(), x, 3, 6), cpu), kGpuTolerance);
    ASSERT_RECUR_OK(recur_model_set_device(m.get(), "cpu"));
    EXPECT_EQ(run_model(m.get(), x, 3, 6), cpu);
  }
}

namespace {
// The debug log line each whole-model run on a GPU writes: what crossed between host and device.
std::mutex heard_mutex;
std::vector<std::string> heard_runs;
void hear_runs(void*, int32_t, const char* message) {
  if (std::string(message).find("' ran on cuda:") == std::string::npos) return;
  std::lock_guard<std::mutex> lock(heard_mutex);
  heard_runs.push_back(message);
}
std::vector<std::string> runs_heard(const recur_model* m, const std::vector<float>& x) {
  {
    std::lock_guard<std::mutex> lock(heard_mutex);
    heard_runs.clear();
  }
  recur_set_log_callback(hear_runs, nullptr, RECUR_LOG_DEBUG);
  run_model(m, x, 3, 6);
  recur_set_log_callback(nullptr, nullptr, RECUR_LOG_DEBUG);
  std::lock_guard<std::mutex> lock(heard_mutex);
  return heard_runs;
}
}  // namespace

// A model on a GPU copies its inputs up once and its outputs down once; a layer without a GPU
// kernel (the adaptive poolings here) is the only other place a tensor crosses, and the layer and
// the run say so.
TEST(CApiDeviceGpu, ModelTensorsStayOnTheDevice) {
  RECUR_SKIP_WITHOUT_FILES();
  SKIP_WITHOUT_GPU();
  {
    // Embedding (ids read on the host) -> GRU -> LSTM -> Dense: nothing goes up, the output comes down.
    Model m = open_model("keras3/tokens.keras");
    ASSERT_RECUR_OK(recur_model_set_device(m.get(), "cuda"));
    std::vector<float> ids(3 * 6);
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<float>(1 + i % 4);
    const std::vector<std::string> runs = runs_heard(m.get(), ids);
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_NE(runs[0].find(": 0 upload(s) [], 1 download(s) [model output"), std::string::npos) << runs[0];
  }
  {
    // Input -> Masking -> Bidirectional(GRU) -> TimeDistributed(Dense): the input goes up, the output
    // comes down (Masking's flags, one byte per step, come down inside its call).
    Model m = open_model("keras3/bigru.keras");
    ASSERT_RECUR_OK(recur_model_set_device(m.get(), "cuda"));
    const std::vector<std::string> runs = runs_heard(m.get(), rt::data(3 * 6 * 3));
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_NE(runs[0].find(": 1 upload(s) [model input '"), std::string::npos) << runs[0];
    EXPECT_NE(runs[0].find("], 1 download(s) [model output"), std::string::npos) << runs[0];
  }
  {
    // Masking -> Discretization (CPU) -> Reshape -> Embedding -> GRU: the Masking's output comes
    // down to the Discretization, whose ids stay on the host for the Embedding (Reshape follows them).
    recur_model* raw = nullptr;
    ASSERT_RECUR_OK(recur_model_open(&raw, kNoKernelModel.c_str()));
    Model m(raw);
    const std::vector<float> x = rt::data(3 * 6 * 1);
    const std::vector<float> cpu = run_model(m.get(), x, 3, 6);
    ASSERT_RECUR_OK(recur_model_set_device(m.get(), "cuda"));
    recur_model_info mi;
    mi.version = RECUR_MODEL_INFO_VERSION;
    ASSERT_RECUR_OK(recur_model_get_info(m.get(), &mi));
    int32_t on_cpu = 0;
    for (int32_t i = 0; i < mi.num_layers; ++i) {
      const char* cls = nullptr;
      ASSERT_RECUR_OK(recur_model_layer(m.get(), i, nullptr, &cls, nullptr, nullptr, nullptr, nullptr));
      const recur_device_info layer = model_device(m.get(), i);
      if (std::string(cls) != "Discretization") {
        expect_on_gpu(layer);
        continue;
      }
      // recur has no GPU kernel for it: it says so, and what that costs.
      EXPECT_STREQ(layer.backend, "cpu");
      EXPECT_NE(std::string(layer.reason).find(std::string("no GPU kernel for ") + cls), std::string::npos) << layer.reason;
      EXPECT_NE(std::string(layer.reason).find("copied"), std::string::npos) << layer.reason;
      ++on_cpu;
    }
    EXPECT_EQ(on_cpu, 1);
    const std::vector<std::string> runs = runs_heard(m.get(), x);
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_NE(runs[0].find(": 1 upload(s) [model input 'x'], 2 download(s) [layer 'discretization' (Discretization): "
                           "recur has no GPU kernel for Discretization"),
              std::string::npos)
        << runs[0];
    EXPECT_LE(max_diff(run_model(m.get(), x, 3, 6), cpu), kGpuTolerance);
  }
  {
    // Discretization (CPU) -> LSTM: the model input stays on the host, the Discretization's output
    // goes up.
    recur_model* raw = nullptr;
    ASSERT_RECUR_OK(recur_model_open(&raw, kNoKernelFirstModel.c_str()));
    Model m(raw);
    const std::vector<float> x = rt::data(3 * 6 * 1);
    const std::vector<float> cpu = run_model(m.get(), x, 3, 6);
    ASSERT_RECUR_OK(recur_model_set_device(m.get(), "cuda"));
    const std::vector<std::string> runs = runs_heard(m.get(), x);
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_NE(runs[0].find(": 1 upload(s) [layer 'lstm' (LSTM) reads the output of 'discretization', which ran on the "
                           "CPU], 1 download(s) [model output"),
              std::string::npos)
        << runs[0];
    EXPECT_LE(max_diff(run_model(m.get(), x, 3, 6), cpu), kGpuTolerance);
  }
  {
    // Bidirectional(LSTM) alone: the input goes up, the outputs come down.
    Model m = open_model("keras3/binone.keras");
    ASSERT_RECUR_OK(recur_model_set_device(m.get(), "cuda"));
    const std::vector<std::string> runs = runs_heard(m.get(), rt::data(3 * 6 * 3));
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_NE(runs[0].find(": 1 upload(s) [model input '"), std::string::npos) << runs[0];
    EXPECT_NE(runs[0].find("2 download(s) [model output"), std::string::npos) << runs[0];
  }
}

namespace {
// The log lines of the GPU runs `f` makes.
template <class F>
std::vector<std::string> runs_heard_in(F&& f) {
  {
    std::lock_guard<std::mutex> lock(heard_mutex);
    heard_runs.clear();
  }
  recur_set_log_callback(hear_runs, nullptr, RECUR_LOG_DEBUG);
  f();
  recur_set_log_callback(nullptr, nullptr, RECUR_LOG_DEBUG);
  std::lock_guard<std::mutex> lock(heard_mutex);
  return heard_runs;
}

rt::Stream new_stream(const recur_model* m, int32_t batch) {
  recur_model_state* raw = nullptr;
  EXPECT_RECUR_OK(recur_model_state_create(&raw, m, batch));
  return rt::Stream(raw);
}

// Steps st through steps [t0, t0 + n) of x (B rows of T steps of F floats); the call's status in *rc.
std::vector<float> step_stream(recur_model_state* st, const std::vector<float>& x, int32_t B, int32_t T, int32_t F,
                               int32_t t0, int32_t n, recur_status* rc = nullptr) {
  std::vector<float> in;
  for (int32_t b = 0; b < B; ++b)
    in.insert(in.end(), x.begin() + (b * T + t0) * F, x.begin() + (b * T + t0 + n) * F);
  size_t in_len = 0, out_len = 0;
  EXPECT_RECUR_OK(recur_model_state_lengths(st, n, &in_len, &out_len));
  EXPECT_EQ(in_len, in.size());
  std::vector<float> y(out_len);
  const recur_status s = recur_model_state_step(st, n, in.data(), in.size(), nullptr, 0, y.data(), y.size());
  if (rc) *rc = s;
  else EXPECT_EQ(s, RECUR_OK) << recur_last_error();
  return y;
}

std::vector<uint8_t> save_stream(const recur_model_state* st) {
  size_t n = 0;
  recur_model_state_save(st, nullptr, 0, &n);  // the length it needs
  std::vector<uint8_t> bytes(n);
  EXPECT_RECUR_OK(recur_model_state_save(st, bytes.data(), bytes.size(), &n));
  return bytes;
}
}  // namespace

// The causal stream steps of the attention layers and the 1D convolutions keep their past keys,
// values and steps on the GPU: a step copies its inputs up and its outputs down, nothing else, and
// such a stream saves, steps beside others in one call (on the GPU too) and moves to the CPU as the
// same stream stepped on the CPU does.
TEST(CApiDeviceGpu, CausalStreamsKeepTheirPastOnTheDevice) {
  RECUR_SKIP_WITHOUT_FILES();
  SKIP_WITHOUT_GPU();
  struct Case {
    const char* file;
    int32_t features;
  };
  const Case cases[] = {{"attention/keras3/attn_causal_masked.keras", 3},
                        {"attention/keras3/mha_causal.keras", 3},
                        {"attention/keras3/additive_attention_causal.keras", 3},
                        {"attention/keras2/mha_causal.keras", 3},
                        {"attention/keras2/attn_causal_masked.keras", 3},
                        {"sequence_conv/keras2/separable_conv_causal_gru.keras", 2}};
  constexpr int32_t B = 2, T = 7;
  // Pieces of 2 steps: their queries are the last two of the steps attended over.
  const int32_t pieces[] = {1, 1, 2, 1, 2};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    const int32_t F = c.features;
    const std::string path = std::string(RECUR_TEST_KERAS_DIR) + "/graphs/" + c.file;
    recur_model *raw_cpu = nullptr, *raw_gpu = nullptr;
    ASSERT_RECUR_OK(recur_model_open(&raw_cpu, path.c_str()));
    ASSERT_RECUR_OK(recur_model_open(&raw_gpu, path.c_str()));
    Model cpu(raw_cpu), gpu(raw_gpu);
    ASSERT_RECUR_OK(recur_model_set_device(gpu.get(), "cuda"));
    std::vector<float> x = rt::data(static_cast<std::size_t>(B * T * F));
    for (int32_t f = 0; f < F; ++f) x[static_cast<std::size_t>((1 * T + 3) * F + f)] = 0.0f;  // masked where a Masking reads
    rt::Stream sc = new_stream(cpu.get(), B), sg = new_stream(gpu.get(), B);
    std::vector<uint8_t> saved;
    int32_t t0 = 0;
    for (const int32_t n : pieces) {
      const std::vector<float> want = step_stream(sc.get(), x, B, T, F, t0, n);
      std::vector<float> got;
      const std::vector<std::string> runs = runs_heard_in([&] { got = step_stream(sg.get(), x, B, T, F, t0, n); });
      EXPECT_LE(max_diff(got, want), kGpuTolerance) << "steps " << t0 << " to " << t0 + n - 1;
      ASSERT_EQ(runs.size(), 1u);
      EXPECT_NE(runs[0].find(": 1 upload(s) [model input 'x'], 1 download(s) [model output"), std::string::npos)
          << runs[0];
      t0 += n;
      if (t0 == 2) saved = save_stream(sg.get());  // its past on the GPU
    }

    // The snapshot holds the GPU's past: loaded into a CPU stream, it goes on as the CPU's did.
    rt::Stream loaded = new_stream(cpu.get(), B), again = new_stream(cpu.get(), B);
    ASSERT_RECUR_OK(recur_model_state_load(loaded.get(), saved.data(), saved.size()));
    step_stream(again.get(), x, B, T, F, 0, 2);
    EXPECT_EQ(step_stream(loaded.get(), x, B, T, F, 2, 5), step_stream(again.get(), x, B, T, F, 2, 5));

    // A GPU stream moved to the CPU mid-way (the model goes, its stream follows at its next step).
    rt::Stream moved = new_stream(gpu.get(), B), stays = new_stream(cpu.get(), B);
    step_stream(moved.get(), x, B, T, F, 0, 3);
    step_stream(stays.get(), x, B, T, F, 0, 3);
    ASSERT_RECUR_OK(recur_model_set_device(gpu.get(), "cpu"));
    EXPECT_LE(max_diff(step_stream(moved.get(), x, B, T, F, 3, 2), step_stream(stays.get(), x, B, T, F, 3, 2)),
              kGpuTolerance);
    // ... and back: its past, now on the host, goes up once.
    ASSERT_RECUR_OK(recur_model_set_device(gpu.get(), "cuda"));
    std::vector<float> got;
    const std::vector<std::string> runs = runs_heard_in([&] { got = step_stream(moved.get(), x, B, T, F, 5, 2); });
    EXPECT_LE(max_diff(got, step_stream(stays.get(), x, B, T, F, 5, 2)), kGpuTolerance);
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_NE(runs[0].find("the stream's past steps"), std::string::npos) << runs[0];

    // Two GPU streams of one row each, stepped in one call after a step alone (their past on the
    // GPU), against the CPU's stream of both rows.
    rt::Stream r0 = new_stream(gpu.get(), 1), r1 = new_stream(gpu.get(), 1), both = new_stream(cpu.get(), B);
    const std::vector<float> x0(x.begin(), x.begin() + T * F), x1(x.begin() + T * F, x.end());
    step_stream(r0.get(), x0, 1, T, F, 0, 2);
    step_stream(r1.get(), x1, 1, T, F, 0, 2);
    step_stream(both.get(), x, B, T, F, 0, 2);
    std::vector<float> in;
    for (int32_t b = 0; b < B; ++b) in.insert(in.end(), x.begin() + (b * T + 2) * F, x.begin() + (b * T + 3) * F);
    const recur_tensor tin = rt::tensor("x", RECUR_DTYPE_FLOAT32, in.data(), in.size(), {B, 1, F});
    const std::vector<float> want = step_stream(both.get(), x, B, T, F, 2, 1);
    std::vector<float> y(want.size());
    recur_output out;
    ASSERT_RECUR_OK(recur_output_init(&out, RECUR_OUTPUT_VERSION));
    int32_t out_rank = 0;
    int64_t out_dims[RECUR_MAX_RANK];
    ASSERT_RECUR_OK(recur_model_output(gpu.get(), 0, &out.name, &out_rank, out_dims));
    out.data = y.data();
    out.capacity = y.size();
    recur_model_state* pair[2] = {r0.get(), r1.get()};
    recur_status rc = RECUR_OK;
    const std::vector<std::string> batched =
        runs_heard_in([&] { rc = recur_model_states_step_named(pair, 2, &tin, 1, &out, 1, nullptr); });
    ASSERT_EQ(rc, RECUR_OK) << recur_last_error();
    EXPECT_LE(max_diff(y, want), kGpuTolerance);
    // One run on the GPU for both (their pasts joined on the host go up with the batch).
    ASSERT_EQ(batched.size(), 1u);
    EXPECT_NE(batched[0].find("1 download(s) [model output"), std::string::npos) << batched[0];
  }
}
