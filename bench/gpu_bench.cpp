// SPDX-License-Identifier: Apache-2.0
// recur_gpu_bench: recur's GPU routes, through the public C ABI, against cudnnRNNForward called
// directly on the same weights and shapes. See README.md for what each line measures.
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <utility>
#include <string>
#include <vector>

#include "recur/recur.h"

namespace {

constexpr int kWarmup = 5;
constexpr int kRepeats = 30;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "recur_gpu_bench: %s\n", what.c_str());
  std::exit(1);
}

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) die(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

void check_cudnn(cudnnStatus_t s, const char* what) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  char reason[512] = {0};
  cudnnGetLastErrorString(reason, sizeof reason);
  die(std::string(what) + ": " + cudnnGetErrorString(s) + (reason[0] ? std::string(": ") + reason : ""));
}

void check_recur(recur_status s, const char* what) {
  if (s != RECUR_OK) die(std::string(what) + ": " + recur_status_string(s) + ": " + recur_last_error());
}

std::vector<float> random_vec(size_t n, unsigned seed, float scale) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

// Median wall time of `run` (which must wait for its own GPU work), after warm-up calls.
double median_ms(const std::function<void()>& run, int repeats = kRepeats) {
  for (int i = 0; i < kWarmup; ++i) run();
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Medians of two runs timed in alternation (a, b, a, b, ...), so drifting clocks and a busy host
// weigh on both alike.
std::pair<double, double> median_pair_ms(const std::function<void()>& a, const std::function<void()>& b,
                                         int repeats = 3 * kRepeats) {
  for (int i = 0; i < kWarmup; ++i) {
    a();
    b();
  }
  std::vector<double> ta, tb;
  for (int i = 0; i < repeats; ++i) {
    for (int which = 0; which < 2; ++which) {
      const auto t0 = std::chrono::steady_clock::now();
      (which == 0 ? a : b)();
      (which == 0 ? ta : tb).push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  std::sort(ta.begin(), ta.end());
  std::sort(tb.begin(), tb.end());
  return {ta[ta.size() / 2], tb[tb.size() / 2]};
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) die("comparing outputs of different sizes");
  double m = 0.0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, double(std::fabs(a[i] - b[i])));
  return m;
}

template <class T>
struct DeviceBuffer {
  T* p = nullptr;
  size_t n = 0;
  explicit DeviceBuffer(size_t count) : n(count) {
    check_cuda(cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)), "cudaMalloc");
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(p); }
  void upload(const std::vector<T>& v) {
    check_cuda(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  }
  std::vector<T> download() const {
    std::vector<T> v(n);
    check_cuda(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
    return v;
  }
};

struct Shape {
  int batch, timesteps, input, units;
};

// A layer's Keras weights, flat in get_weights order: kernel (F, G*u), recurrent_kernel (u, G*u),
// bias ((2, 3u) for GRU reset_after=True, else (G*u)).
struct KerasWeights {
  bool gru;
  int F, u, G;
  std::vector<float> flat;
  float kernel(int i, int c) const { return flat[size_t(i) * G * u + c]; }
  float recurrent(int k, int c) const { return flat[size_t(F) * G * u + size_t(k) * G * u + c]; }
  float bias(int row, int c) const { return flat[size_t(F + u) * G * u + size_t(row) * G * u + c]; }
};

// cudnnRNNForward called directly: the reference recur is compared with and timed against.
class RawCudnn {
 public:
  RawCudnn(cudnnHandle_t handle, cudaStream_t stream, const KerasWeights& w, const Shape& s)
      : handle_(handle), stream_(stream), s_(s), gru_(w.gru) {
    check_cudnn(cudnnCreateDropoutDescriptor(&dropout_), "cudnnCreateDropoutDescriptor");
    check_cudnn(cudnnSetDropoutDescriptor(dropout_, handle_, 0.0f, nullptr, 0, 0), "cudnnSetDropoutDescriptor");
    check_cudnn(cudnnCreateRNNDescriptor(&rnn_), "cudnnCreateRNNDescriptor");
    check_cudnn(
        cudnnSetRNNDescriptor_v8(rnn_, CUDNN_RNN_ALGO_STANDARD, gru_ ? CUDNN_GRU : CUDNN_LSTM, CUDNN_RNN_DOUBLE_BIAS,
                                 CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT,
                                 CUDNN_FMA_MATH, s.input, s.units, s.units, 1, dropout_, CUDNN_RNN_PADDED_IO_ENABLED),
        "cudnnSetRNNDescriptor_v8");
    std::vector<int> lengths(size_t(s.batch), s.timesteps);
    float fill = 0.0f;
    check_cudnn(cudnnCreateRNNDataDescriptor(&x_desc_), "cudnnCreateRNNDataDescriptor");
    check_cudnn(cudnnCreateRNNDataDescriptor(&y_desc_), "cudnnCreateRNNDataDescriptor");
    check_cudnn(cudnnSetRNNDataDescriptor(x_desc_, CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED,
                                          s.timesteps, s.batch, s.input, lengths.data(), &fill),
                "cudnnSetRNNDataDescriptor(x)");
    check_cudnn(cudnnSetRNNDataDescriptor(y_desc_, CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED,
                                          s.timesteps, s.batch, s.units, lengths.data(), &fill),
                "cudnnSetRNNDataDescriptor(y)");
    check_cudnn(cudnnCreateTensorDescriptor(&h_desc_), "cudnnCreateTensorDescriptor");
    const int dims[3] = {1, s.batch, s.units}, strides[3] = {s.batch * s.units, s.units, 1};
    check_cudnn(cudnnSetTensorNdDescriptor(h_desc_, CUDNN_DATA_FLOAT, 3, dims, strides), "cudnnSetTensorNdDescriptor");
    check_cuda(cudaMalloc(&lengths_, lengths.size() * sizeof(int)), "cudaMalloc");
    check_cuda(cudaMemcpy(lengths_, lengths.data(), lengths.size() * sizeof(int), cudaMemcpyHostToDevice),
               "cudaMemcpy");

    check_cudnn(cudnnGetRNNWeightSpaceSize(handle_, rnn_, &weight_bytes_), "cudnnGetRNNWeightSpaceSize");
    check_cuda(cudaMalloc(&weights_, weight_bytes_), "cudaMalloc");
    upload_weights(w);
    check_cudnn(
        cudnnGetRNNTempSpaceSizes(handle_, rnn_, CUDNN_FWD_MODE_INFERENCE, x_desc_, &work_bytes_, &reserve_bytes_),
        "cudnnGetRNNTempSpaceSizes");
    if (work_bytes_) check_cuda(cudaMalloc(&work_, work_bytes_), "cudaMalloc");
    if (reserve_bytes_) check_cuda(cudaMalloc(&reserve_, reserve_bytes_), "cudaMalloc");
  }
  RawCudnn(const RawCudnn&) = delete;
  RawCudnn& operator=(const RawCudnn&) = delete;
  ~RawCudnn() {
    cudaFree(reserve_);
    cudaFree(work_);
    cudaFree(weights_);
    cudaFree(lengths_);
    cudnnDestroyTensorDescriptor(h_desc_);
    cudnnDestroyRNNDataDescriptor(y_desc_);
    cudnnDestroyRNNDataDescriptor(x_desc_);
    cudnnDestroyRNNDescriptor(rnn_);
    cudnnDestroyDropoutDescriptor(dropout_);
  }

  // Zero initial states; y (B, T, u), hy and cy (B, u). Waits for the result.
  void forward(const float* x, float* y, float* hy, float* cy) {
    check_cudnn(cudnnSetStream(handle_, stream_), "cudnnSetStream");
    check_cudnn(cudnnRNNForward(handle_, rnn_, CUDNN_FWD_MODE_INFERENCE, lengths_, x_desc_, x, y_desc_, y, h_desc_,
                                nullptr, hy, h_desc_, nullptr, gru_ ? nullptr : cy, weight_bytes_, weights_,
                                work_bytes_, work_, reserve_bytes_, reserve_),
                "cudnnRNNForward");
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

 private:
  // Keras -> cuDNN (cudnn_rnn.md §2.4): W_g is the transpose of Keras's gate block; cuDNN's GRU
  // gates are (r, z, h) where Keras's are (z, r, h); Keras's LSTM bias is cuDNN's recurrent bias.
  void upload_weights(const KerasWeights& w) {
    std::vector<float> space(weight_bytes_ / sizeof(float), 0.0f);
    cudnnTensorDescriptor_t m_desc = nullptr, b_desc = nullptr;
    check_cudnn(cudnnCreateTensorDescriptor(&m_desc), "cudnnCreateTensorDescriptor");
    check_cudnn(cudnnCreateTensorDescriptor(&b_desc), "cudnnCreateTensorDescriptor");
    const int G = w.G, u = w.u;
    for (int id = 0; id < 2 * G; ++id) {
      void* m = nullptr;
      void* b = nullptr;
      check_cudnn(cudnnGetRNNWeightParams(handle_, rnn_, 0, weight_bytes_, weights_, id, m_desc, &m, b_desc, &b),
                  "cudnnGetRNNWeightParams");
      const size_t m_at = size_t(static_cast<char*>(m) - static_cast<char*>(weights_)) / sizeof(float);
      const size_t b_at = size_t(static_cast<char*>(b) - static_cast<char*>(weights_)) / sizeof(float);
      const int g = id % G, kg = w.gru ? (g == 0 ? 1 : g == 1 ? 0 : 2) : g;
      const bool on_input = id < G;
      const int cols = on_input ? w.F : u;
      for (int j = 0; j < u; ++j) {
        for (int i = 0; i < cols; ++i)
          space[m_at + size_t(j) * cols + i] = on_input ? w.kernel(i, kg * u + j) : w.recurrent(i, kg * u + j);
        space[b_at + j] = w.gru ? w.bias(on_input ? 0 : 1, kg * u + j) : (on_input ? 0.0f : w.bias(0, kg * u + j));
      }
    }
    cudnnDestroyTensorDescriptor(b_desc);
    cudnnDestroyTensorDescriptor(m_desc);
    check_cuda(cudaMemcpy(weights_, space.data(), weight_bytes_, cudaMemcpyHostToDevice), "cudaMemcpy weights");
  }

  cudnnHandle_t handle_;
  cudaStream_t stream_;
  Shape s_;
  bool gru_;
  cudnnDropoutDescriptor_t dropout_ = nullptr;
  cudnnRNNDescriptor_t rnn_ = nullptr;
  cudnnRNNDataDescriptor_t x_desc_ = nullptr, y_desc_ = nullptr;
  cudnnTensorDescriptor_t h_desc_ = nullptr;
  int* lengths_ = nullptr;
  void* weights_ = nullptr;
  size_t weight_bytes_ = 0;
  void* work_ = nullptr;
  size_t work_bytes_ = 0;
  void* reserve_ = nullptr;
  size_t reserve_bytes_ = 0;
};

struct LayerSpec {
  bool gru = true;
  int reset_after = 1;
  const char* recurrent_activation = nullptr;  // NULL: sigmoid
  int go_backwards = 0;
  int zero_output_for_mask = 0;
};

// A recur layer with return_sequences=True on `device`, with the given flat Keras weights.
recur_layer* make_layer(const LayerSpec& spec, const Shape& s, const std::vector<float>* weights, const char* device) {
  recur_layer_options o;
  check_recur(recur_layer_options_init(&o, RECUR_LAYER_OPTIONS_VERSION), "recur_layer_options_init");
  o.type = spec.gru ? RECUR_LAYER_GRU : RECUR_LAYER_LSTM;
  o.units = s.units;
  o.input_size = s.input;
  o.return_sequences = 1;
  o.reset_after = spec.gru ? spec.reset_after : RECUR_DEFAULT;
  o.recurrent_activation = spec.recurrent_activation;
  o.go_backwards = spec.go_backwards;
  o.zero_output_for_mask = spec.zero_output_for_mask;
  recur_layer* layer = nullptr;
  check_recur(recur_layer_create(&layer, &o), "recur_layer_create");
  if (weights) check_recur(recur_layer_set_weights(layer, weights->data(), weights->size()), "recur_layer_set_weights");
  check_recur(recur_layer_set_device(layer, device), "recur_layer_set_device");
  return layer;
}

std::vector<float> random_weights(recur_layer* layer, unsigned seed) {
  size_t n = 0;
  check_recur(recur_layer_weights_length(layer, &n), "recur_layer_weights_length");
  return random_vec(n, seed, 0.08f);
}

std::string route_of(const recur_layer* layer) {
  recur_device_info info{};
  info.version = RECUR_DEVICE_INFO_VERSION;
  check_recur(recur_layer_get_device(layer, &info), "recur_layer_get_device");
  return std::string(info.backend) + "/" + info.path;
}

// recur_layer_forward on host buffers (H2D and D2H included).
void forward_host(recur_layer* layer, const Shape& s, const std::vector<float>& x, const std::vector<uint8_t>* mask,
                  std::vector<float>& out) {
  out.resize(size_t(s.batch) * s.timesteps * s.units);
  check_recur(recur_layer_forward(layer, x.data(), x.size(), s.batch, s.timesteps, mask ? mask->data() : nullptr,
                                  mask ? mask->size() : 0, nullptr, 0, 0, 0, out.data(), out.size(), nullptr, 0),
              "recur_layer_forward");
}

// recur_layer_forward_device on device buffers; waits for the stream.
void forward_device(recur_layer* layer, cudaStream_t stream, const Shape& s, const float* d_x,
                    const std::vector<uint8_t>* mask, float* d_out) {
  check_recur(recur_layer_forward_device(layer, stream, d_x, s.batch, s.timesteps, mask ? mask->data() : nullptr,
                                         mask ? mask->size() : 0, nullptr, 0, d_out, nullptr),
              "recur_layer_forward_device");
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

std::string shape_name(const Shape& s) {
  return "B=" + std::to_string(s.batch) + " T=" + std::to_string(s.timesteps) + " F=" + std::to_string(s.input) +
         " u=" + std::to_string(s.units);
}

// A mask with holes (not right-padded): route "kernel" on a GPU.
std::vector<uint8_t> holed_mask(const Shape& s) {
  std::vector<uint8_t> m(size_t(s.batch) * s.timesteps, 1);
  for (int b = 0; b < s.batch; ++b)
    for (int t = 0; t < s.timesteps; ++t)
      if ((b + t) % 7 == 3) m[size_t(b) * s.timesteps + t] = 0;
  return m;
}

void bench_shape(cudnnHandle_t handle, cudaStream_t stream, bool gru, const Shape& s) {
  const char* cell = gru ? "GRU" : "LSTM";
  const size_t nx = size_t(s.batch) * s.timesteps * s.input, ny = size_t(s.batch) * s.timesteps * s.units;
  const std::vector<float> x = random_vec(nx, 1, 1.0f);
  DeviceBuffer<float> d_x(nx), d_y(ny), d_out(ny), d_hy(size_t(s.batch) * s.units), d_cy(size_t(s.batch) * s.units);
  d_x.upload(x);

  // The cuDNN-capable layer and raw cuDNN on the same weights.
  LayerSpec spec;
  spec.gru = gru;
  recur_layer* gpu = make_layer(spec, s, nullptr, "cpu");
  const std::vector<float> weights = random_weights(gpu, 2);
  check_recur(recur_layer_set_weights(gpu, weights.data(), weights.size()), "recur_layer_set_weights");
  check_recur(recur_layer_set_device(gpu, "cuda"), "recur_layer_set_device");
  KerasWeights kw{gru, s.input, s.units, gru ? 3 : 4, weights};
  RawCudnn raw(handle, stream, kw, s);

  raw.forward(d_x.p, d_y.p, d_hy.p, d_cy.p);
  const std::vector<float> want = d_y.download();
  forward_device(gpu, stream, s, d_x.p, nullptr, d_out.p);
  const double diff_device = max_abs_diff(d_out.download(), want);
  std::vector<float> host_out;
  forward_host(gpu, s, x, nullptr, host_out);
  const double diff_host = max_abs_diff(host_out, want);

  const auto [t_cudnn, t_device] = median_pair_ms([&] { raw.forward(d_x.p, d_y.p, d_hy.p, d_cy.p); },
                                                  [&] { forward_device(gpu, stream, s, d_x.p, nullptr, d_out.p); });
  const double t_host = median_ms([&] { forward_host(gpu, s, x, nullptr, host_out); });
  // The copies a host-memory call cannot avoid, at their best: the inputs up and the outputs down
  // between pinned host memory and the device, measured alone.
  float *pinned_x = nullptr, *pinned_y = nullptr;
  check_cuda(cudaMallocHost(&pinned_x, nx * sizeof(float)), "cudaMallocHost");
  check_cuda(cudaMallocHost(&pinned_y, ny * sizeof(float)), "cudaMallocHost");
  std::copy(x.begin(), x.end(), pinned_x);
  const double t_copies = median_ms([&] {
    check_cuda(cudaMemcpyAsync(d_x.p, pinned_x, nx * sizeof(float), cudaMemcpyHostToDevice, stream), "H2D");
    check_cuda(cudaMemcpyAsync(pinned_y, d_y.p, ny * sizeof(float), cudaMemcpyDeviceToHost, stream), "D2H");
    check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  });
  // recur with the same arrays page-locked: they go straight to and from the device.
  std::vector<float> out_pinned(ny);
  const double t_host_pinned = median_ms([&] {
    check_recur(recur_layer_forward(gpu, pinned_x, nx, s.batch, s.timesteps, nullptr, 0, nullptr, 0, 0, 0, pinned_y, ny,
                                    nullptr, 0),
                "recur_layer_forward");
  });
  std::copy(pinned_y, pinned_y + ny, out_pinned.begin());
  const double diff_pinned = max_abs_diff(out_pinned, want);
  cudaFreeHost(pinned_x);
  cudaFreeHost(pinned_y);
  std::printf("%-4s %-26s route %-12s max|recur-cuDNN| device %.2e host %.2e\n", cell, shape_name(s).c_str(),
              route_of(gpu).c_str(), diff_device, diff_host);
  std::printf("     cuDNN %9.3f ms | recur device %9.3f ms (x%.2f) | recur host %9.3f ms (x%.2f, H2D/D2H included)\n",
              t_cudnn, t_device, t_device / t_cudnn, t_host, t_host / t_cudnn);
  std::printf("     pinned H2D+D2H alone %9.3f ms | recur host / (cuDNN + pinned copies) x%.2f\n", t_copies,
              t_host / (t_cudnn + t_copies));
  std::printf("     recur host, page-locked arrays %9.3f ms (x%.2f of cuDNN + pinned copies), max|recur-cuDNN| %.2e\n",
              t_host_pinned, t_host_pinned / (t_cudnn + t_copies), diff_pinned);

  // recur's own kernels on the same shape, each checked against recur on the CPU.
  struct KernelCase {
    const char* name;
    LayerSpec spec;
    bool holes;
  };
  std::vector<KernelCase> cases;
  if (gru) {
    LayerSpec ra0 = spec;
    ra0.reset_after = 0;
    cases.push_back({"GRU reset_after=0", ra0, false});
  } else {
    LayerSpec hard = spec;
    hard.recurrent_activation = "hard_sigmoid";
    cases.push_back({"LSTM hard_sigmoid", hard, false});
  }
  cases.push_back({"mask with holes", spec, true});
  for (const KernelCase& k : cases) {
    recur_layer* cpu = make_layer(k.spec, s, nullptr, "cpu");
    const std::vector<float> kweights = k.holes ? weights : random_weights(cpu, 3);
    check_recur(recur_layer_set_weights(cpu, kweights.data(), kweights.size()), "recur_layer_set_weights");
    recur_layer* dev = make_layer(k.spec, s, &kweights, "cuda");
    const std::vector<uint8_t> mask = holed_mask(s);
    const std::vector<uint8_t>* m = k.holes ? &mask : nullptr;
    std::vector<float> ref;
    forward_host(cpu, s, x, m, ref);
    forward_device(dev, stream, s, d_x.p, m, d_out.p);
    const double diff = max_abs_diff(d_out.download(), ref);
    const auto [t_raw, t] = median_pair_ms([&] { raw.forward(d_x.p, d_y.p, d_hy.p, d_cy.p); },
                                           [&] { forward_device(dev, stream, s, d_x.p, m, d_out.p); });
    std::printf("     %-18s route %-12s max|gpu-cpu| %.2e  device %9.3f ms (x%.2f of cuDNN, %.3f ms alongside)\n",
                k.name, route_of(dev).c_str(), diff, t, t / t_raw, t_raw);
    recur_layer_destroy(dev);
    recur_layer_destroy(cpu);
  }
  recur_layer_destroy(gpu);
}

// recur's cuDNN route against recur on the CPU where it rewrites cuDNN's results: right-padded
// masks with a zero-length row, go_backwards, zero_output_for_mask, initial states. Returns the
// number of failures.
int check_cudnn_route() {
  const Shape s{5, 7, 6, 8};
  const int lengths[5] = {7, 3, 0, 1, 6};
  std::vector<uint8_t> mask(size_t(s.batch) * s.timesteps, 0);
  for (int b = 0; b < s.batch; ++b)
    for (int t = 0; t < lengths[b]; ++t) mask[size_t(b) * s.timesteps + t] = 1;
  const std::vector<float> x = random_vec(size_t(s.batch) * s.timesteps * s.input, 6, 1.0f);
  int failures = 0, cases = 0;
  double worst = 0.0;
  for (bool gru : {true, false})
    for (int backwards : {0, 1})
      for (int zero_output : {0, 1})
        for (bool masked : {false, true}) {
          LayerSpec spec;
          spec.gru = gru;
          spec.go_backwards = backwards;
          spec.zero_output_for_mask = zero_output;
          recur_layer* cpu = make_layer(spec, s, nullptr, "cpu");
          const std::vector<float> weights = random_weights(cpu, 7);
          check_recur(recur_layer_set_weights(cpu, weights.data(), weights.size()), "recur_layer_set_weights");
          recur_layer* dev = make_layer(spec, s, &weights, "cuda");
          const int ns = gru ? 1 : 2;
          const std::vector<float> h0 = random_vec(size_t(ns) * s.batch * s.units, 8, 0.5f);
          std::vector<float> out[2], state[2];
          recur_layer* layers[2] = {cpu, dev};
          for (int i = 0; i < 2; ++i) {
            out[i].resize(size_t(s.batch) * s.timesteps * s.units);
            state[i].resize(h0.size());
            check_recur(
                recur_layer_forward(layers[i], x.data(), x.size(), s.batch, s.timesteps, masked ? mask.data() : nullptr,
                                    masked ? mask.size() : 0, h0.data(), h0.size(), ns, 0, out[i].data(), out[i].size(),
                                    state[i].data(), state[i].size()),
                "recur_layer_forward");
          }
          const double diff = std::max(max_abs_diff(out[1], out[0]), max_abs_diff(state[1], state[0]));
          worst = std::max(worst, diff);
          ++cases;
          if (diff > 1e-4) {
            ++failures;
            std::printf("FAIL cuDNN route %s go_backwards=%d zero_output_for_mask=%d mask=%s: max|gpu-cpu| %.2e\n",
                        gru ? "GRU" : "LSTM", backwards, zero_output, masked ? "right-padded" : "none", diff);
          }
          recur_layer_destroy(dev);
          recur_layer_destroy(cpu);
        }
  std::printf(
      "cuDNN route vs CPU (padded mask with a zero-length row, go_backwards, zero_output_for_mask, "
      "initial states): %d/%d cases agree, max|gpu-cpu| %.2e\n",
      cases - failures, cases, worst);
  return failures;
}

// One step of n independent streams (batch-1 states) of a GRU with 256 units.
void bench_streams(int n) {
  const Shape s{n, 1, 256, 256};
  LayerSpec spec;
  recur_layer* cpu = make_layer(spec, s, nullptr, "cpu");
  const std::vector<float> weights = random_weights(cpu, 4);
  check_recur(recur_layer_set_weights(cpu, weights.data(), weights.size()), "recur_layer_set_weights");
  recur_layer* dev = make_layer(spec, s, &weights, "cuda");
  std::vector<recur_state*> states(size_t(n), nullptr);
  for (auto& st : states) check_recur(recur_state_create(&st, dev, 1), "recur_state_create");
  const std::vector<float> x = random_vec(size_t(n) * s.input, 5, 1.0f);
  std::vector<float> out(size_t(n) * s.units), ref;
  auto step = [&] {
    check_recur(
        recur_layer_forward_states(dev, states.data(), n, x.data(), x.size(), nullptr, 0, out.data(), out.size()),
        "recur_layer_forward_states");
  };
  step();  // from zero states: equals one batch-n step on the CPU
  forward_host(cpu, s, x, nullptr, ref);
  const double diff = max_abs_diff(out, ref);
  const double t = median_ms(step);
  std::printf("streams %6d  route %-12s max|gpu-cpu| %.2e  %9.3f ms per step (%8.3f us per stream)\n", n,
              route_of(dev).c_str(), diff, t, 1000.0 * t / n);
  // The same step with the inputs and outputs in device memory (recur_layer_forward_states_device):
  // what a server that keeps its tensors on the GPU pays, without the host copies.
  std::vector<recur_state*> fresh(size_t(n), nullptr);
  for (auto& st : fresh) check_recur(recur_state_create(&st, dev, 1), "recur_state_create");
  DeviceBuffer<float> dx(x.size()), dy(out.size());
  dx.upload(x);
  auto step_device = [&](std::vector<recur_state*>& sts) {
    check_recur(recur_layer_forward_states_device(dev, nullptr, sts.data(), static_cast<int32_t>(sts.size()), dx.p,
                                                  nullptr, 0, dy.p),
                "recur_layer_forward_states_device");
  };
  step_device(fresh);
  const double diff_device = max_abs_diff(dy.download(), ref);
  const double t_device = median_ms([&] { step_device(fresh); });
  std::printf("streams %6d  device memory        max|gpu-cpu| %.2e  %9.3f ms per step (%8.3f us per stream)\n", n,
              diff_device, t_device, 1000.0 * t_device / n);
  // The streams as the rows of one state (one slab of device memory): no gather or scatter.
  recur_state* slab = nullptr;
  check_recur(recur_state_create(&slab, dev, n), "recur_state_create");
  std::vector<recur_state*> one{slab};
  step_device(one);
  const double diff_slab = max_abs_diff(dy.download(), ref);
  const double t_slab = median_ms([&] { step_device(one); });
  std::printf("streams %6d  one state, device    max|gpu-cpu| %.2e  %9.3f ms per step (%8.3f us per stream)\n", n,
              diff_slab, t_slab, 1000.0 * t_slab / n);
  recur_state_destroy(slab);
  for (auto* st : fresh) recur_state_destroy(st);
  for (auto* st : states) recur_state_destroy(st);
  recur_layer_destroy(dev);
  recur_layer_destroy(cpu);
}

// One step of one stream (batch 1, recur_layer_forward_state) of GRU(256) and LSTM(256) from host
// memory, and what such a step cannot avoid: the floors of a synchronize, and of one small pinned
// copy each way, measured alone.
void bench_one_stream(cudaStream_t stream) {
  const Shape s{1, 1, 256, 256};
  for (bool gru : {true, false}) {
    LayerSpec spec;
    spec.gru = gru;
    recur_layer* cpu = make_layer(spec, s, nullptr, "cpu");
    const std::vector<float> weights = random_weights(cpu, 9);
    check_recur(recur_layer_set_weights(cpu, weights.data(), weights.size()), "recur_layer_set_weights");
    recur_layer* dev = make_layer(spec, s, &weights, "cuda");
    recur_state *st_dev = nullptr, *st_cpu = nullptr;
    check_recur(recur_state_create(&st_dev, dev, 1), "recur_state_create");
    check_recur(recur_state_create(&st_cpu, cpu, 1), "recur_state_create");
    const std::vector<float> x = random_vec(size_t(s.input) * 16, 10, 1.0f);
    std::vector<float> out(size_t(s.units)), ref(size_t(s.units));
    // Sixteen steps on both, compared step by step.
    double diff = 0.0;
    for (int k = 0; k < 16; ++k) {
      const float* xk = x.data() + size_t(k) * s.input;
      check_recur(recur_layer_forward_state(dev, st_dev, xk, size_t(s.input), 1, nullptr, 0, out.data(), out.size()),
                  "recur_layer_forward_state");
      check_recur(recur_layer_forward_state(cpu, st_cpu, xk, size_t(s.input), 1, nullptr, 0, ref.data(), ref.size()),
                  "recur_layer_forward_state");
      diff = std::max(diff, max_abs_diff(out, ref));
    }
    const double t = median_ms(
        [&] {
          check_recur(recur_layer_forward_state(dev, st_dev, x.data(), size_t(s.input), 1, nullptr, 0, out.data(),
                                                out.size()),
                      "recur_layer_forward_state");
        },
        200);
    std::printf("one stream %-4s u=256 F=256  route %-12s max|gpu-cpu| over 16 steps %.2e  %8.1f us per step\n",
                gru ? "GRU" : "LSTM", route_of(dev).c_str(), diff, 1000.0 * t);
    recur_state_destroy(st_dev);
    recur_state_destroy(st_cpu);
    recur_layer_destroy(dev);
    recur_layer_destroy(cpu);
  }
  float* pinned = nullptr;
  DeviceBuffer<float> d(1024);
  check_cuda(cudaMallocHost(&pinned, 1024 * sizeof(float)), "cudaMallocHost");
  const double t_sync = median_ms([&] { check_cuda(cudaStreamSynchronize(stream), "sync"); }, 200);
  const double t_copies = median_ms(
      [&] {
        check_cuda(cudaMemcpyAsync(d.p, pinned, 256 * sizeof(float), cudaMemcpyHostToDevice, stream), "H2D");
        check_cuda(cudaMemcpyAsync(pinned, d.p, 256 * sizeof(float), cudaMemcpyDeviceToHost, stream), "D2H");
        check_cuda(cudaStreamSynchronize(stream), "sync");
      },
      200);
  const double t_three = median_ms(
      [&] {
        check_cuda(cudaMemcpyAsync(d.p, pinned, 256 * sizeof(float), cudaMemcpyHostToDevice, stream), "H2D");
        check_cuda(cudaMemsetAsync(d.p + 512, 0, 256 * sizeof(float), stream), "memset");
        check_cuda(cudaMemcpyAsync(pinned, d.p, 256 * sizeof(float), cudaMemcpyDeviceToHost, stream), "D2H");
        check_cuda(cudaStreamSynchronize(stream), "sync");
      },
      200);
  cudaFreeHost(pinned);
  std::printf("one stream floors: synchronize alone %.1f us | 1 KB pinned H2D + D2H + synchronize %.1f us | "
              "with one device op between them %.1f us\n",
              1000.0 * t_sync, 1000.0 * t_copies, 1000.0 * t_three);
}

// Streams of a model (GRU(64) -> LSTM(64) -> Dense(4) over 16 features, bench/cpu/models), one
// step each, on the GPU: all of them in one call (recur_model_states_step_named, the states
// gathered and scattered on the device) against one call per stream, and the one call's numbers
// against the same streams stepped on the CPU.
void bench_model_streams(const char* file) {
  recur_model *dev = nullptr, *cpu = nullptr;
  check_recur(recur_model_open(&dev, file), "recur_model_open");
  check_recur(recur_model_open(&cpu, file), "recur_model_open");
  check_recur(recur_model_set_device(dev, "cuda"), "recur_model_set_device");
  const char* in_name = nullptr;
  const char* out_name = nullptr;
  int32_t rank = 0, ids = 0;
  int64_t dims[RECUR_MAX_RANK];
  check_recur(recur_model_input(dev, 0, &in_name, &rank, dims, &ids), "recur_model_input");
  if (rank != 3 || dims[2] <= 0 || ids) die(std::string(file) + ": expected one float input (batch, steps, features)");
  const int64_t F = dims[2];
  check_recur(recur_model_output(dev, 0, &out_name, &rank, dims), "recur_model_output");
  const int64_t W = dims[rank - 1];  // the output's floats per row (one step, one row per stream)
  for (int n : {1, 16, 256, 4096}) {
    const size_t count = static_cast<size_t>(n);
    std::vector<recur_model_state*> on_dev(count), on_cpu(count), alone(count);
    for (int i = 0; i < n; ++i) {
      check_recur(recur_model_state_create(&on_dev[size_t(i)], dev, 1), "recur_model_state_create");
      check_recur(recur_model_state_create(&on_cpu[size_t(i)], cpu, 1), "recur_model_state_create");
      check_recur(recur_model_state_create(&alone[size_t(i)], dev, 1), "recur_model_state_create");
    }
    const std::vector<float> x = random_vec(size_t(n) * size_t(F), 21, 1.0f);
    std::vector<float> y(size_t(n) * size_t(W)), ref(size_t(n) * size_t(W));
    auto step = [&](recur_model_state* const* states, int count, const float* xs, float* ys) {
      recur_tensor t;
      recur_tensor_init(&t, RECUR_TENSOR_VERSION);
      t.name = in_name;
      t.data = xs;
      t.length = size_t(count) * size_t(F);
      t.rank = 3;
      t.dims[0] = count;
      t.dims[1] = 1;
      t.dims[2] = F;
      recur_output o;
      recur_output_init(&o, RECUR_OUTPUT_VERSION);
      o.name = out_name;
      o.data = ys;
      o.capacity = size_t(count) * size_t(W);
      check_recur(recur_model_states_step_named(states, count, &t, 1, &o, 1, nullptr), "recur_model_states_step_named");
    };
    // Three steps on both devices from zero states, compared after each.
    double diff = 0.0;
    for (int k = 0; k < 3; ++k) {
      step(on_dev.data(), n, x.data(), y.data());
      step(on_cpu.data(), n, x.data(), ref.data());
      diff = std::max(diff, max_abs_diff(y, ref));
    }
    const double t_batch = median_ms([&] { step(on_dev.data(), n, x.data(), y.data()); });
    std::printf("model streams %5d  one call    max|gpu-cpu| over 3 steps %.2e  %9.3f ms per step (%8.3f us per stream)\n",
                n, diff, t_batch, 1000.0 * t_batch / n);
    if (n <= 256) {
      const double t_alone = median_ms([&] {
        for (int i = 0; i < n; ++i) step(&alone[size_t(i)], 1, x.data() + size_t(i) * size_t(F), y.data());
      });
      std::printf("model streams %5d  one by one                              %9.3f ms per step (%8.3f us per stream, "
                  "%.1fx the one call)\n",
                  n, t_alone, 1000.0 * t_alone / n, t_alone / t_batch);
    }
    for (int i = 0; i < n; ++i) {
      recur_model_state_destroy(on_dev[size_t(i)]);
      recur_model_state_destroy(on_cpu[size_t(i)]);
      recur_model_state_destroy(alone[size_t(i)]);
    }
  }
  recur_model_destroy(dev);
  recur_model_destroy(cpu);
}

}  // namespace

int main(int argc, char** argv) {
  // --one-stream: only the one-stream steps and their floors (for RECUR_CUDA_PROFILE=1).
  const bool one_stream_only = argc > 1 && std::strcmp(argv[1], "--one-stream") == 0;
  if (argc > 1 && !one_stream_only) {
    std::fprintf(stderr, "usage: recur_gpu_bench [--one-stream]\n");
    return 2;
  }
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    std::printf("no CUDA device: %s\n", cudaGetErrorString(e));
    return 0;
  }
  if (count == 0) {
    std::printf("no CUDA device: cudaGetDeviceCount found none\n");
    return 0;
  }
  check_cuda(cudaSetDevice(0), "cudaSetDevice");
  // The 1024-unit layers' orthogonal initializers (run before their weights are set) are over the
  // default init_work limit.
  check_recur(recur_set_limit(RECUR_LIMIT_INIT_WORK, uint64_t(1) << 40), "recur_set_limit");
  cudnnHandle_t handle = nullptr;
  check_cudnn(cudnnCreate(&handle), "cudnnCreate");
  if (recur_device_check("cuda") != RECUR_OK) die(std::string("recur cannot use the GPU: ") + recur_last_error());
  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::printf("%s (compute %d.%d), cuDNN %zu, recur %s; median of %d warm runs, wall time to completion\n", prop.name,
              prop.major, prop.minor, cudnnGetVersion(), recur_version_string(), kRepeats);
  cudaStream_t stream = nullptr;
  check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");

  if (one_stream_only) {
    bench_one_stream(stream);
    cudaStreamDestroy(stream);
    cudnnDestroy(handle);
    return 0;
  }
  const int failures = check_cudnn_route();
  const Shape shapes[] = {{64, 100, 256, 256}, {128, 50, 1024, 1024}};
  for (bool gru : {true, false})
    for (const Shape& s : shapes) bench_shape(handle, stream, gru, s);
  bench_one_stream(stream);
  for (int n : {1, 64, 1024, 16384}) bench_streams(n);
  bench_model_streams(RECUR_BENCH_STREAMS_MODEL);

  cudaStreamDestroy(stream);
  cudnnDestroy(handle);
  return failures ? 1 : 0;
}
