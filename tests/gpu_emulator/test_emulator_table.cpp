// SPDX-License-Identifier: Apache-2.0
// The plugin table (core/src/cuda/plugin_impl.hpp, shared with librecur_cuda.so) through the
// emulator's C entry point: staging of host and device memory, step_rows over scattered state
// buffers, the model ops, argument errors and concurrent runs, against the CPU backend.
// RECUR_GPU_PLUGIN_UNDER_TEST=/path/to/librecur_cuda.so runs the same tests on a real GPU (they
// skip, printing probe's message, where the plugin finds no usable device).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "recur/activations.hpp"
#include "recur/backend.hpp"
#include "recur/cell.hpp"
#include "recur/config.hpp"
#include "recur/gpu_plugin_abi.h"

namespace recur {
namespace {

using Vec = std::vector<float>;
constexpr float kTol = 1e-5f;

const char* plugin_path() {
  const char* env = std::getenv("RECUR_GPU_PLUGIN_UNDER_TEST");
  return env && *env ? env : RECUR_GPU_EMULATOR_PATH;
}

recur_gpu_plugin_entry_fn plugin_entry() {
  void* h = dlopen(plugin_path(), RTLD_NOW | RTLD_LOCAL);
  return h ? reinterpret_cast<recur_gpu_plugin_entry_fn>(dlsym(h, RECUR_GPU_PLUGIN_ENTRY)) : nullptr;
}

const recur_gpu_plugin* plugin() {
  static const recur_gpu_plugin* table = [] {
    const recur_gpu_plugin_entry_fn entry = plugin_entry();
    return entry ? entry(RECUR_GPU_PLUGIN_ABI_VERSION) : nullptr;
  }();
  return table;
}

bool is_emulator() { return plugin() && std::string(plugin()->name) == "emulator"; }

// Skips a test when the plugin under test has no usable device (a CUDA plugin without a GPU).
#define REQUIRE_DEVICE()                                                           \
  do {                                                                             \
    ASSERT_NE(plugin(), nullptr) << plugin_path() << ": " << dlerror();            \
    int32_t count_ = 0;                                                            \
    char err_[256] = "";                                                           \
    if (plugin()->probe(&count_, err_, sizeof err_) != RECUR_GPU_OK || count_ < 1) \
      GTEST_SKIP() << "no usable device: " << err_;                                \
  } while (0)

Vec random_vec(std::size_t n, std::mt19937& gen, float scale = 1.0f) {
  std::normal_distribution<float> d(0.0f, scale);
  Vec v(n);
  for (auto& x : v) x = d(gen);
  return v;
}

void expect_near(const Vec& a, const Vec& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], kTol) << what << " at " << i;
}

// A layer on both sides: a CPU Cell and an emulator layer with the same weights.
struct Pair {
  LayerConfig cfg;
  std::unique_ptr<Cell> cell;
  void* layer = nullptr;
  int G = 3, ns = 1, u = 0, F = 0;

  Pair(LayerKind kind, int units, int input, unsigned seed, int lstm_impl = 2) {
    const bool gru = kind == LayerKind::gru, simple = kind == LayerKind::simple_rnn;
    cfg = LayerConfig::defaults(kind, DialectInfo::latest(Dialect::keras3));
    cfg.units = units;
    cfg.input_size = input;
    cfg.implementation = lstm_impl;
    cell = std::make_unique<Cell>(cfg);
    G = cell->gates();
    ns = cell->num_states();
    u = units;
    F = input;
    const Index W = cell->width();
    std::mt19937 gen(seed);
    CellParams p;
    p.kernel = Eigen::Map<const RowMatrix>(random_vec(static_cast<std::size_t>(F * W), gen, 0.5f).data(), F, W);
    p.recurrent = Eigen::Map<const RowMatrix>(random_vec(static_cast<std::size_t>(u * W), gen, 0.5f).data(), u, W);
    p.input_bias = Eigen::Map<const RowVector>(random_vec(static_cast<std::size_t>(W), gen, 0.3f).data(), W);
    if (gru) p.recurrent_bias = Eigen::Map<const RowVector>(random_vec(static_cast<std::size_t>(W), gen, 0.3f).data(), W);
    cell->set_params(p);

    recur_gpu_layer_desc d{};
    d.cell = simple ? RECUR_GPU_CELL_SIMPLE_RNN : (gru ? RECUR_GPU_CELL_GRU : RECUR_GPU_CELL_LSTM);
    d.units = units;
    d.input_size = input;
    d.reset_after = gru;
    d.use_bias = 1;
    d.bias_in_projection = gru || simple || lstm_impl == 1;
    d.activation = static_cast<int32_t>(Activation::tanh);
    d.activation_hard_sigmoid = static_cast<int32_t>(HardSigmoid::keras3);
    d.recurrent_activation = static_cast<int32_t>(Activation::sigmoid);
    d.recurrent_activation_hard_sigmoid = static_cast<int32_t>(HardSigmoid::keras3);
    char err[256] = "";
    EXPECT_EQ(plugin()->layer_create(&d, &layer, err, sizeof err), RECUR_GPU_OK) << err;
    recur_gpu_weights w{};
    w.kernel = p.kernel.data();
    w.recurrent = p.recurrent.data();
    w.input_bias = p.input_bias.data();
    w.recurrent_bias = gru ? p.recurrent_bias.data() : nullptr;
    EXPECT_EQ(plugin()->layer_set_weights(layer, &w, err, sizeof err), RECUR_GPU_OK) << err;
  }
  ~Pair() { plugin()->layer_destroy(layer); }

  // CPU reference of a run; states (ns*B*u) and carried (B*u) in and out.
  void cpu_run(const Vec& x, Index B, Index T, const std::vector<std::uint8_t>* mask, bool back, bool zero, Vec& states,
               Vec* carried, Vec& seq, Vec& last) const {
    std::vector<RowMatrix> st(static_cast<std::size_t>(ns));
    for (int s = 0; s < ns; ++s) st[static_cast<std::size_t>(s)] = Eigen::Map<const RowMatrix>(states.data() + s * B * u, B, u);
    RowMatrix car;
    if (carried) car = Eigen::Map<const RowMatrix>(carried->data(), B, u);
    const float* xs[1] = {x.data()};
    SequenceJob job;
    job.inputs = xs;
    job.batch = B;
    job.timesteps = T;
    job.go_backwards = back;
    job.mask = mask ? mask->data() : nullptr;
    job.zero_output_for_mask = zero;
    job.states = st.data();
    job.carried_output = carried ? &car : nullptr;
    seq.assign(static_cast<std::size_t>(B * T * u), 0.0f);
    last.assign(static_cast<std::size_t>(B * u), 0.0f);
    job.sequence_output = seq.data();
    job.last_output = last.data();
    SequenceWorkspace ws;
    cpu_backend().run_sequence(*cell, job, ws);
    for (int s = 0; s < ns; ++s)
      std::memcpy(states.data() + s * B * u, st[static_cast<std::size_t>(s)].data(), sizeof(float) * B * u);
    if (carried) std::memcpy(carried->data(), car.data(), sizeof(float) * B * u);
  }
};

TEST(GpuEmulatorTable, EntryAndProbe) {
  ASSERT_NE(plugin(), nullptr) << plugin_path() << ": " << dlerror();
  const recur_gpu_plugin* p = plugin();
  EXPECT_EQ(p->abi_version, static_cast<uint32_t>(RECUR_GPU_PLUGIN_ABI_VERSION));
  EXPECT_EQ(p->struct_size, sizeof(recur_gpu_plugin));
  EXPECT_EQ(std::string(p->build_id).rfind("recur ", 0), 0u) << p->build_id;
  EXPECT_NE(std::string(p->build_id).find(" abi " + std::to_string(RECUR_GPU_PLUGIN_ABI_VERSION)), std::string::npos);
  EXPECT_EQ(plugin_entry()(RECUR_GPU_PLUGIN_ABI_VERSION + 1), nullptr);
  int32_t count = -1;
  char err[256] = "";
  const int rc = p->probe(&count, err, sizeof err);
  char name[256] = "";
  if (is_emulator()) {
    EXPECT_EQ(rc, RECUR_GPU_OK);
    EXPECT_EQ(count, 1);
    EXPECT_EQ(p->device_name(0, name, sizeof name), RECUR_GPU_OK);
    EXPECT_STREQ(name, "recur GPU emulator (host memory, no CUDA)");
  } else if (rc != RECUR_GPU_OK) {
    // A CUDA plugin on a machine without a GPU: a code that says what is missing, and a message.
    EXPECT_TRUE(rc == RECUR_GPU_ERR_NO_DRIVER || rc == RECUR_GPU_ERR_NO_DEVICE || rc == RECUR_GPU_ERR_NO_CUDNN) << rc;
    EXPECT_GT(std::strlen(err), 10u);
    EXPECT_EQ(p->device_name(0, name, sizeof name), rc);
    std::printf("probe: %s\n", err);
    return;
  }
  EXPECT_EQ(p->device_name(count, name, sizeof name), RECUR_GPU_ERR_NO_DEVICE);
}

TEST(GpuEmulatorTable, HostAndDeviceMemoryRunsMatchCpu) {
  REQUIRE_DEVICE();
  const recur_gpu_plugin* p = plugin();
  for (int cell = 0; cell < 4; ++cell) {  // GRU, LSTM implementation 2 and 1, SimpleRNN
    const LayerKind kind = cell == 0 ? LayerKind::gru : (cell == 3 ? LayerKind::simple_rnn : LayerKind::lstm);
    Pair pair(kind, 5, 3, 40 + cell, cell == 2 ? 1 : 2);
    const Index B = 3, T = 7, u = 5;
    std::mt19937 gen(7 + cell);
    const Vec x = random_vec(static_cast<std::size_t>(B * T * 3), gen);
    std::vector<std::uint8_t> mask(static_cast<std::size_t>(B * T), 1);
    for (std::size_t i = 0; i < mask.size(); i += 3) mask[i] = 0;
    const Vec states0 = random_vec(static_cast<std::size_t>(pair.ns * B * u), gen);
    const Vec carried0 = random_vec(static_cast<std::size_t>(B * u), gen);

    Vec cpu_states = states0, cpu_carried = carried0, cpu_seq, cpu_last;
    pair.cpu_run(x, B, T, &mask, true, true, cpu_states, &cpu_carried, cpu_seq, cpu_last);

    Vec states = states0, carried_out(static_cast<std::size_t>(B * u)), seq(cpu_seq.size()), last(cpu_last.size());
    const float* xs[1] = {x.data()};
    recur_gpu_run r{};
    r.route = RECUR_GPU_ROUTE_KERNEL;
    r.memory = RECUR_GPU_MEMORY_HOST;
    r.batch = B;
    r.timesteps = T;
    r.go_backwards = 1;
    r.num_inputs = 1;
    r.inputs = xs;
    r.mask = mask.data();
    r.zero_output_for_mask = 1;
    r.states = states.data();
    r.carried_in = carried0.data();
    r.carried_out = carried_out.data();
    r.sequence_output = seq.data();
    r.last_output = last.data();
    char err[256] = "";
    ASSERT_EQ(p->layer_run(pair.layer, &r, err, sizeof err), RECUR_GPU_OK) << err;
    expect_near(seq, cpu_seq, "host sequence output");
    expect_near(last, cpu_last, "host last output");
    expect_near(states, cpu_states, "host states");
    expect_near(carried_out, cpu_carried, "host carried output");

    // The same run over device buffers (carried in and out aliased, as a stream keeps them).
    auto alloc = [&](const Vec& init, Index n) {
      void* b = nullptr;
      EXPECT_EQ(p->buffer_alloc(0, n, &b, err, sizeof err), RECUR_GPU_OK) << err;
      if (!init.empty()) {
        EXPECT_EQ(p->buffer_upload(b, 0, init.data(), n, err, sizeof err), RECUR_GPU_OK) << err;
      }
      return b;
    };
    void* dx = alloc(x, B * T * 3);
    void* dstate = alloc(states0, pair.ns * B * u);
    void* dcar = alloc(carried0, B * u);
    void* dseq = alloc({}, B * T * u);
    void* dlast = alloc({}, B * u);
    const float* dxs[1] = {p->buffer_device_pointer(dx)};
    r.memory = RECUR_GPU_MEMORY_DEVICE;
    r.inputs = dxs;
    r.states = p->buffer_device_pointer(dstate);
    r.carried_in = p->buffer_device_pointer(dcar);
    r.carried_out = p->buffer_device_pointer(dcar);
    r.sequence_output = p->buffer_device_pointer(dseq);
    r.last_output = p->buffer_device_pointer(dlast);
    ASSERT_EQ(p->layer_run(pair.layer, &r, err, sizeof err), RECUR_GPU_OK) << err;
    auto download = [&](void* b, Index n) {
      Vec v(static_cast<std::size_t>(n));
      EXPECT_EQ(p->buffer_download(b, 0, v.data(), n, err, sizeof err), RECUR_GPU_OK) << err;
      return v;
    };
    expect_near(download(dseq, B * T * u), cpu_seq, "device sequence output");
    expect_near(download(dlast, B * u), cpu_last, "device last output");
    expect_near(download(dstate, pair.ns * B * u), cpu_states, "device states");
    expect_near(download(dcar, B * u), cpu_carried, "device carried output");
    for (void* b : {dx, dstate, dcar, dseq, dlast}) p->buffer_free(b);
  }
}

TEST(GpuEmulatorTable, StepRowsMatchesOneStepPerStream) {
  REQUIRE_DEVICE();
  const recur_gpu_plugin* p = plugin();
  for (LayerKind kind : {LayerKind::gru, LayerKind::lstm, LayerKind::simple_rnn}) {
    const bool lstm = kind == LayerKind::lstm;
    const int k = static_cast<int>(kind);
    Pair pair(kind, 4, 3, 60 + k);
    const int streams = 5, u = 4, F = 3;
    std::mt19937 gen(3 + k);
    char err[256] = "";
    // Each stream's h, c and carried output live in their own buffer: [h | c | carried].
    std::vector<void*> bufs(streams);
    std::vector<Vec> h(streams), c(streams), car(streams);
    for (int s = 0; s < streams; ++s) {
      h[s] = random_vec(u, gen);
      c[s] = random_vec(u, gen);
      car[s] = random_vec(u, gen);
      ASSERT_EQ(p->buffer_alloc(0, 3 * u, &bufs[s], err, sizeof err), RECUR_GPU_OK) << err;
      Vec all = h[s];
      all.insert(all.end(), c[s].begin(), c[s].end());
      all.insert(all.end(), car[s].begin(), car[s].end());
      ASSERT_EQ(p->buffer_upload(bufs[s], 0, all.data(), 3 * u, err, sizeof err), RECUR_GPU_OK) << err;
    }
    for (int step = 0; step < 3; ++step) {
      // Streams 4, 1, 3 step (in that row order); stream 1 is masked on step 1.
      const std::vector<int> order = {4, 1, 3};
      const Index R = static_cast<Index>(order.size());
      const Vec x = random_vec(static_cast<std::size_t>(R * F), gen);
      std::vector<std::uint8_t> mask = {1, static_cast<std::uint8_t>(step == 1 ? 0 : 1), 1};
      std::vector<float*> hp, cp, carp;
      for (int s : order) {
        float* base = p->buffer_device_pointer(bufs[s]);
        hp.push_back(base);
        cp.push_back(base + u);
        carp.push_back(base + 2 * u);
      }
      Vec out(static_cast<std::size_t>(R * u), -1.0f);
      recur_gpu_step_rows st{};
      st.rows = R;
      st.h_rows = hp.data();
      st.c_rows = lstm ? cp.data() : nullptr;
      st.carried_rows = carp.data();
      st.input = x.data();
      st.mask = mask.data();
      st.zero_output_for_mask = step == 1;
      st.output = out.data();
      ASSERT_EQ(p->layer_step_rows(pair.layer, &st, err, sizeof err), RECUR_GPU_OK) << err;

      for (Index r = 0; r < R; ++r) {
        const int s = order[static_cast<std::size_t>(r)];
        Vec states = h[s];
        if (lstm) states.insert(states.end(), c[s].begin(), c[s].end());
        const Vec xr(x.begin() + r * F, x.begin() + (r + 1) * F);
        std::vector<std::uint8_t> m = {mask[static_cast<std::size_t>(r)]};
        Vec seq, last;
        pair.cpu_run(xr, 1, 1, &m, false, st.zero_output_for_mask, states, &car[s], seq, last);
        h[s].assign(states.begin(), states.begin() + u);
        if (lstm) c[s].assign(states.begin() + u, states.end());
        expect_near(Vec(out.begin() + r * u, out.begin() + (r + 1) * u), last, "step output");
      }
      for (int s = 0; s < streams; ++s) {
        Vec all(static_cast<std::size_t>(3 * u));
        ASSERT_EQ(p->buffer_download(bufs[s], 0, all.data(), 3 * u, err, sizeof err), RECUR_GPU_OK) << err;
        expect_near(Vec(all.begin(), all.begin() + u), h[s], "stream h");
        if (lstm) expect_near(Vec(all.begin() + u, all.begin() + 2 * u), c[s], "stream c");
        expect_near(Vec(all.begin() + 2 * u, all.end()), car[s], "stream carried output");
      }
    }
    for (void* b : bufs) p->buffer_free(b);
  }
}

TEST(GpuEmulatorTable, StepRowsManyStreams) {
  // The serving case: 16384 streams, each state in its own slot of one big buffer, stepped in a
  // shuffled order, against one CPU batch step.
  REQUIRE_DEVICE();
  const recur_gpu_plugin* p = plugin();
  const Index R = 16384, u = 8, F = 5;
  Pair pair(LayerKind::lstm, u, F, 90);
  std::mt19937 gen(12);
  Vec h = random_vec(static_cast<std::size_t>(R * u), gen), c = random_vec(static_cast<std::size_t>(R * u), gen);
  Vec car(static_cast<std::size_t>(R * u), 0.0f);
  const Vec x = random_vec(static_cast<std::size_t>(R * F), gen);
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(R), 1);
  for (Index r = 0; r < R; r += 7) mask[static_cast<std::size_t>(r)] = 0;
  std::vector<Index> slot(static_cast<std::size_t>(R));  // row r lives in slot[r]
  for (Index r = 0; r < R; ++r) slot[static_cast<std::size_t>(r)] = (r * 7919) % R;

  char err[256] = "";
  void* buf = nullptr;
  ASSERT_EQ(p->buffer_alloc(0, 3 * R * u, &buf, err, sizeof err), RECUR_GPU_OK) << err;
  float* base = p->buffer_device_pointer(buf);
  std::vector<float*> hp, cp, carp;
  for (Index r = 0; r < R; ++r) {
    const Index s = slot[static_cast<std::size_t>(r)];
    ASSERT_EQ(p->buffer_upload(buf, s * 3 * u, h.data() + r * u, u, err, sizeof err), RECUR_GPU_OK);
    ASSERT_EQ(p->buffer_upload(buf, s * 3 * u + u, c.data() + r * u, u, err, sizeof err), RECUR_GPU_OK);
    ASSERT_EQ(p->buffer_upload(buf, s * 3 * u + 2 * u, car.data() + r * u, u, err, sizeof err), RECUR_GPU_OK);
    hp.push_back(base + s * 3 * u);
    cp.push_back(base + s * 3 * u + u);
    carp.push_back(base + s * 3 * u + 2 * u);
  }
  Vec out(static_cast<std::size_t>(R * u));
  recur_gpu_step_rows st{};
  st.rows = R;
  st.h_rows = hp.data();
  st.c_rows = cp.data();
  st.carried_rows = carp.data();
  st.input = x.data();
  st.mask = mask.data();
  st.output = out.data();
  ASSERT_EQ(p->layer_step_rows(pair.layer, &st, err, sizeof err), RECUR_GPU_OK) << err;

  Vec states = h;
  states.insert(states.end(), c.begin(), c.end());
  Vec seq, last;
  pair.cpu_run(x, R, 1, &mask, false, false, states, &car, seq, last);
  expect_near(out, last, "outputs");
  Vec all(static_cast<std::size_t>(3 * R * u));
  ASSERT_EQ(p->buffer_download(buf, 0, all.data(), 3 * R * u, err, sizeof err), RECUR_GPU_OK);
  for (Index r = 0; r < R; ++r) {
    const float* s = all.data() + slot[static_cast<std::size_t>(r)] * 3 * u;
    for (Index j = 0; j < u; ++j) {
      ASSERT_NEAR(s[j], states[static_cast<std::size_t>(r * u + j)], kTol) << "h of row " << r;
      ASSERT_NEAR(s[u + j], states[static_cast<std::size_t>(R * u + r * u + j)], kTol) << "c of row " << r;
      ASSERT_NEAR(s[2 * u + j], car[static_cast<std::size_t>(r * u + j)], kTol) << "carried of row " << r;
    }
  }
  p->buffer_free(buf);
}

TEST(GpuEmulatorTable, ModelOps) {
  REQUIRE_DEVICE();
  const recur_gpu_plugin* p = plugin();
  char err[256] = "";
  std::mt19937 gen(9);
  const Index rows = 3, in = 4, out = 5;
  const Vec x = random_vec(rows * in, gen), w = random_vec(in * out, gen), b = random_vec(out, gen);
  void* buf = nullptr;
  ASSERT_EQ(p->buffer_alloc(0, 64, &buf, err, sizeof err), RECUR_GPU_OK) << err;
  float* d = p->buffer_device_pointer(buf);
  ASSERT_EQ(p->buffer_upload(buf, 0, x.data(), rows * in, err, sizeof err), RECUR_GPU_OK);
  ASSERT_EQ(p->buffer_upload(buf, 12, w.data(), in * out, err, sizeof err), RECUR_GPU_OK);
  ASSERT_EQ(p->buffer_upload(buf, 32, b.data(), out, err, sizeof err), RECUR_GPU_OK);
  ASSERT_EQ(p->dense(0, d, rows, in, d + 12, d + 32, out, static_cast<int32_t>(Activation::softmax), 2, d + 40, err,
                     sizeof err),
            RECUR_GPU_OK)
      << err;
  Vec y(rows * out), ref(rows * out);
  ASSERT_EQ(p->buffer_download(buf, 40, y.data(), rows * out, err, sizeof err), RECUR_GPU_OK);
  for (Index r = 0; r < rows; ++r)
    for (Index o = 0; o < out; ++o) {
      float acc = 0.0f;
      for (Index i = 0; i < in; ++i) acc += x[r * in + i] * w[i * out + o];
      ref[r * out + o] = acc + b[o];
    }
  apply_activation({Activation::softmax, HardSigmoid::keras3}, ref.data(), rows, out);
  expect_near(y, ref, "dense + softmax");

  // binary, gather_rows, copy2d over the same buffer.
  ASSERT_EQ(p->binary(0, RECUR_GPU_OP_AVERAGE, d, d + 12, 4, d + 56, err, sizeof err), RECUR_GPU_OK);
  const int32_t ids[2] = {2, 0};
  ASSERT_EQ(p->gather_rows(0, d, in, ids, 2, d + 40, err, sizeof err), RECUR_GPU_OK);
  ASSERT_EQ(p->copy2d(0, d, in, d + 48, 2, 2, 2, err, sizeof err), RECUR_GPU_OK);
  Vec all(64);
  ASSERT_EQ(p->buffer_download(buf, 0, all.data(), 64, err, sizeof err), RECUR_GPU_OK);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(all[56 + i], (x[i] + w[i]) / 2.0f);
  for (int j = 0; j < 4; ++j) {
    EXPECT_EQ(all[40 + j], x[2 * in + j]);
    EXPECT_EQ(all[44 + j], x[j]);
  }
  EXPECT_EQ(all[48], x[0]);
  EXPECT_EQ(all[49], x[1]);
  EXPECT_EQ(all[50], x[4]);
  EXPECT_EQ(all[51], x[5]);
  ASSERT_EQ(p->activate(0, d + 40, 2, 4, static_cast<int32_t>(Activation::relu), 2, err, sizeof err), RECUR_GPU_OK);
  EXPECT_EQ(p->binary(0, 7, d, d, 1, d, err, sizeof err), RECUR_GPU_ERR_INVALID);
  EXPECT_EQ(p->buffer_download(buf, 60, all.data(), 5, err, sizeof err), RECUR_GPU_ERR_INVALID);
  EXPECT_NE(std::string(err).find("outside"), std::string::npos) << err;
  p->buffer_free(buf);
}

// copy_blocks (ABI 8) moves blocks of any sizes in one call, empty ones skipped, and refuses
// what it cannot copy.
TEST(GpuEmulatorTable, CopyBlocks) {
  REQUIRE_DEVICE();
  const recur_gpu_plugin* p = plugin();
  char err[256] = "";
  void* buf = nullptr;
  ASSERT_EQ(p->buffer_alloc(0, 64, &buf, err, sizeof err), RECUR_GPU_OK) << err;
  float* d = p->buffer_device_pointer(buf);
  Vec v(64);
  for (int i = 0; i < 64; ++i) v[i] = static_cast<float>(i);
  ASSERT_EQ(p->buffer_upload(buf, 0, v.data(), 64, err, sizeof err), RECUR_GPU_OK) << err;
  // Blocks of 5, 0, 1 and 9 floats from [0, 32) to [32, 64), out of order.
  const float* src[4] = {d + 10, d + 3, d, d + 20};
  float* dst[4] = {d + 50, d + 40, d + 33, d + 40};
  const int64_t counts[4] = {5, 0, 1, 9};
  ASSERT_EQ(p->copy_blocks(0, src, dst, counts, 4, err, sizeof err), RECUR_GPU_OK) << err;
  ASSERT_EQ(p->copy_blocks(0, src, dst, counts, 0, err, sizeof err), RECUR_GPU_OK) << err;
  Vec all(64);
  ASSERT_EQ(p->buffer_download(buf, 0, all.data(), 64, err, sizeof err), RECUR_GPU_OK) << err;
  Vec want = v;
  for (int i = 0; i < 5; ++i) want[50 + i] = v[10 + i];
  want[33] = v[0];
  for (int i = 0; i < 9; ++i) want[40 + i] = v[20 + i];
  for (int i = 0; i < 64; ++i) EXPECT_EQ(all[i], want[i]) << "float " << i;

  auto refused = [&](int rc, const char* what) {
    EXPECT_EQ(rc, RECUR_GPU_ERR_INVALID) << what;
    EXPECT_NE(std::string(err).find("copy_blocks"), std::string::npos) << err;
  };
  refused(p->copy_blocks(0, src, dst, counts, -1, err, sizeof err), "a negative block count");
  refused(p->copy_blocks(0, nullptr, dst, counts, 4, err, sizeof err), "no sources");
  refused(p->copy_blocks(0, src, dst, nullptr, 4, err, sizeof err), "no sizes");
  const int64_t negative[1] = {-2};
  refused(p->copy_blocks(0, src, dst, negative, 1, err, sizeof err), "a negative block size");
  const float* null_src[1] = {nullptr};
  refused(p->copy_blocks(0, null_src, dst, counts, 1, err, sizeof err), "a null block");
  ASSERT_EQ(p->buffer_download(buf, 0, all.data(), 64, err, sizeof err), RECUR_GPU_OK) << err;
  for (int i = 0; i < 64; ++i) EXPECT_EQ(all[i], want[i]) << "float " << i << " after the refusals";
  p->buffer_free(buf);
}

// The element-wise ops of ABI 4 round as the CPU's std::max/std::min and operators do (NaN
// included), and fill writes its value.
TEST(GpuEmulatorTable, BinaryOpsAndFill) {
  REQUIRE_DEVICE();
  const recur_gpu_plugin* p = plugin();
  char err[256] = "";
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Vec a{1.5f, -2.0f, nan, 3.0f}, b{0.25f, 4.0f, 1.0f, nan};
  void* buf = nullptr;
  ASSERT_EQ(p->buffer_alloc(0, 12, &buf, err, sizeof err), RECUR_GPU_OK) << err;
  float* d = p->buffer_device_pointer(buf);
  ASSERT_EQ(p->buffer_upload(buf, 0, a.data(), 4, err, sizeof err), RECUR_GPU_OK);
  ASSERT_EQ(p->buffer_upload(buf, 4, b.data(), 4, err, sizeof err), RECUR_GPU_OK);
  auto run = [&](int32_t op) {
    EXPECT_EQ(p->binary(0, op, d, d + 4, 4, d + 8, err, sizeof err), RECUR_GPU_OK) << err;
    Vec y(4);
    EXPECT_EQ(p->buffer_download(buf, 8, y.data(), 4, err, sizeof err), RECUR_GPU_OK);
    return y;
  };
  auto same = [](float x, float y) { return (std::isnan(x) && std::isnan(y)) || x == y; };
  const Vec sub = run(RECUR_GPU_OP_SUB), mx = run(RECUR_GPU_OP_MAX), mn = run(RECUR_GPU_OP_MIN);
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(same(sub[i], a[i] - b[i])) << i;
    EXPECT_TRUE(same(mx[i], std::max(a[i], b[i]))) << i;
    EXPECT_TRUE(same(mn[i], std::min(a[i], b[i]))) << i;
  }
  ASSERT_EQ(p->fill(0, d + 8, 3, -0.5f, err, sizeof err), RECUR_GPU_OK) << err;
  Vec f(4);
  ASSERT_EQ(p->buffer_download(buf, 8, f.data(), 4, err, sizeof err), RECUR_GPU_OK);
  EXPECT_EQ(f[0], -0.5f);
  EXPECT_EQ(f[2], -0.5f);
  EXPECT_TRUE(same(f[3], mn[3]));  // past n: untouched
  p->buffer_free(buf);
}

// Each model op of ABI 4 refuses what the core should never send with RECUR_GPU_ERR_INVALID and a
// message naming the op, and writes nothing.
TEST(GpuEmulatorTable, ModelOpsRefuseBadArguments) {
  REQUIRE_DEVICE();
  const recur_gpu_plugin* p = plugin();
  char err[256] = "";
  void* buf = nullptr;
  ASSERT_EQ(p->buffer_alloc(0, 16, &buf, err, sizeof err), RECUR_GPU_OK) << err;
  float* d = p->buffer_device_pointer(buf);
  const int64_t dims[2] = {2, 2}, strides[2] = {0, 1}, bad_dims[2] = {2, -1};
  auto refused = [&](int rc, const char* op) {
    EXPECT_EQ(rc, RECUR_GPU_ERR_INVALID) << op;
    EXPECT_NE(std::string(err).find(op), std::string::npos) << err;
  };
  refused(p->normalize(0, 99, d, 1, 2, 2, 1, 1e-3f, nullptr, nullptr, d, err, sizeof err), "normalize");
  refused(p->normalize(0, RECUR_GPU_NORM_LAYER, d, 1, 2, 3, 2, 1e-3f, nullptr, nullptr, d, err, sizeof err),
          "normalize");  // 3 channels in 2 groups
  refused(p->normalize(0, RECUR_GPU_NORM_RMS, d, 1, 2, 2, 1, 1e-3f, nullptr, nullptr, d, err, sizeof err),
          "normalize");  // RMS without gamma
  refused(p->broadcast_op(0, 99, d, 2, dims, strides, d, d, d, err, sizeof err), "broadcast_op");
  refused(p->broadcast_op(0, RECUR_GPU_BCAST_AFFINE, d, 9, dims, strides, d, d, d, err, sizeof err), "broadcast_op");
  refused(p->broadcast_op(0, RECUR_GPU_BCAST_AFFINE, d, 2, bad_dims, strides, d, d, d, err, sizeof err),
          "broadcast_op");
  refused(p->activate_args(0, 99, d, 4, 0, 0, 0, 0, d, err, sizeof err), "activate_args");
  refused(p->activate_args(0, RECUR_GPU_ACT_RELU, d, 4, 0, 0, 0, 64, d, err, sizeof err), "activate_args");
  refused(p->activate_args(0, RECUR_GPU_ACT_ELU, nullptr, 4, 0, 0, 0, 0, d, err, sizeof err), "activate_args");
  refused(p->softmax_axis(0, d, -1, 2, 1, 0, nullptr, 0, 0, 0, 0, RECUR_GPU_SOFTMAX_MASK_ADD, d, err, sizeof err),
          "softmax_axis");
  refused(p->softmax_axis(0, d, 1, 2, 1, 0, nullptr, 0, 0, 0, 0, 99, d, err, sizeof err), "softmax_axis");
  refused(p->pool1d(0, 99, d, 1, 4, 1, 0, 2, 2, 0, 2, nullptr, 0, d, err, sizeof err), "pool1d");
  refused(p->pool1d(0, RECUR_GPU_POOL_MAX, d, 1, 4, 1, 0, 0, 2, 0, 2, nullptr, 0, d, err, sizeof err), "pool1d");
  const uint8_t mask[4] = {1, 1, 0, 1};
  refused(p->pool1d(0, RECUR_GPU_POOL_MASKED_SELECT, d, 1, 4, 1, 0, 4, 1, 0, 1, mask, 3, d, err, sizeof err),
          "pool1d");  // a mask of 3 steps for 4
  refused(p->conv1d(0, d, 1, 4, 3, d, 2, 2, 2, nullptr, 1, 1, 0, 3, 0, 2, d, err, sizeof err),
          "conv1d");  // 3 channels in 2 groups
  refused(p->conv1d(0, d, 1, 4, 2, d, 0, 1, 2, nullptr, 1, 1, 0, 3, 0, 2, d, err, sizeof err), "conv1d");
  refused(p->conv1d_transpose(0, d, 1, 4, 2, d, 2, 2, nullptr, 0, 1, 0, 5, 0, 2, d, err, sizeof err),
          "conv1d_transpose");  // strides 0
  refused(p->conv1d_transpose(0, nullptr, 1, 4, 2, d, 2, 2, nullptr, 1, 1, 0, 5, 0, 2, d, err, sizeof err),
          "conv1d_transpose");
  refused(p->fill(0, nullptr, 4, 0.0f, err, sizeof err), "fill");
  refused(p->binary(0, RECUR_GPU_OP_MIN + 1, d, d, 1, d, err, sizeof err), "binary");
  refused(p->project(0, d, 2, 2, d, nullptr, 3, d, 2, err, sizeof err), "project");  // a row stride under n
  refused(p->project(0, nullptr, 2, 2, d, nullptr, 2, d, 2, err, sizeof err), "project");
  recur_gpu_attention a{};
  a.batch = a.heads = a.q_steps = a.v_steps = a.key_dim = a.value_dim = 1;
  a.query_stride = a.key_stride = a.value_stride = a.output_stride = 1;
  a.query = a.key = a.value = d, a.scores = d + 4, a.output = d + 8;
  a.score = 9;
  refused(p->attention(0, &a, err, sizeof err), "attention");
  a.score = RECUR_GPU_ATTN_DOT, a.flags = 128;
  refused(p->attention(0, &a, err, sizeof err), "attention");
  a.flags = RECUR_GPU_ATTN_CAUSAL_LAST;  // without CAUSAL
  refused(p->attention(0, &a, err, sizeof err), "attention");
  a.flags = RECUR_GPU_ATTN_CAUSAL | RECUR_GPU_ATTN_CAUSAL_LAST, a.q_steps = 2;  // more queries than steps
  refused(p->attention(0, &a, err, sizeof err), "attention");
  a.flags = 0, a.q_steps = 1, a.heads = 0;
  refused(p->attention(0, &a, err, sizeof err), "attention");
  a.heads = 2;  // rows of 1 float for 2 heads
  refused(p->attention(0, &a, err, sizeof err), "attention");
  a.heads = 1, a.score = RECUR_GPU_ATTN_ADDITIVE;  // without feature_scale
  refused(p->attention(0, &a, err, sizeof err), "attention");
  refused(p->attention(0, nullptr, err, sizeof err), "attention");
  const int64_t gdims[2] = {2, 3}, gstrides[2] = {1, 2}, backwards[1] = {-1};
  refused(p->gather_strided(0, d, 5, 0, 2, gdims, gstrides, d, err, sizeof err), "gather_strided");  // reads float 5
  refused(p->gather_strided(0, d, 16, 0, 1, gdims, backwards, d, err, sizeof err), "gather_strided");  // reads float -1
  refused(p->gather_strided(0, d, 16, 0, 9, gdims, gstrides, d, err, sizeof err), "gather_strided");
  refused(p->mask_rows(0, d, 2, 2, 0.0f, d, nullptr, err, sizeof err), "mask_rows");  // no host flags
  refused(p->mask_rows(0, d, -1, 2, 0.0f, d, nullptr, err, sizeof err), "mask_rows");
  refused(p->dot(0, d, d, 1, 1, -2, 1, 1, 1, d, err, sizeof err), "dot");
  refused(p->dot(0, nullptr, d, 1, 1, 2, 1, 1, 1, d, err, sizeof err), "dot");
  const int64_t esz[2] = {2, 2}, est[2] = {1, 2}, eneg[2] = {1, -2};
  refused(p->einsum(0, d, d, 13, 1, esz, est, est, nullptr, nullptr, d, err, sizeof err), "einsum");
  refused(p->einsum(0, d, d, 2, 3, esz, est, est, nullptr, nullptr, d, err, sizeof err), "einsum");
  refused(p->einsum(0, d, d, 2, 1, esz, eneg, est, nullptr, nullptr, d, err, sizeof err), "einsum");
  p->buffer_free(buf);
}

// Masking: the flags come back to the host, the rows equal to the mask value become zeros (NaN
// differs from every value); Dot and EinsumDense: float sums over the shared axis, in order.
TEST(GpuEmulatorTable, MaskRowsDotAndEinsum) {
  REQUIRE_DEVICE();
  const recur_gpu_plugin* p = plugin();
  char err[256] = "";
  void* buf = nullptr;
  ASSERT_EQ(p->buffer_alloc(0, 64, &buf, err, sizeof err), RECUR_GPU_OK) << err;
  float* d = p->buffer_device_pointer(buf);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Vec x = {1, 2, -1, -1, nan, -1, 0, -1};  // 4 rows of 2; mask value -1
  ASSERT_EQ(p->buffer_upload(buf, 0, x.data(), 8, err, sizeof err), RECUR_GPU_OK) << err;
  uint8_t keep[4] = {9, 9, 9, 9};
  ASSERT_EQ(p->mask_rows(0, d, 4, 2, -1.0f, d + 8, keep, err, sizeof err), RECUR_GPU_OK) << err;
  EXPECT_EQ(std::vector<int>(keep, keep + 4), (std::vector<int>{1, 0, 1, 1}));
  Vec y(8);
  ASSERT_EQ(p->buffer_download(buf, 8, y.data(), 8, err, sizeof err), RECUR_GPU_OK);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[2], 0.0f);
  EXPECT_EQ(y[3], 0.0f);
  EXPECT_TRUE(std::isnan(y[4]));
  EXPECT_EQ(y[6], 0.0f);

  // x (1, 2, 3, 1) against y (1, 2, 3, 2) over the axis of 3: out (1, 2, 1, 2, 2).
  std::mt19937 gen(5);
  const Vec a = random_vec(6, gen), b = random_vec(12, gen);
  ASSERT_EQ(p->buffer_upload(buf, 16, a.data(), 6, err, sizeof err), RECUR_GPU_OK) << err;
  ASSERT_EQ(p->buffer_upload(buf, 24, b.data(), 12, err, sizeof err), RECUR_GPU_OK) << err;
  ASSERT_EQ(p->dot(0, d + 16, d + 24, 1, 2, 3, 1, 2, 2, d + 40, err, sizeof err), RECUR_GPU_OK) << err;
  Vec out(8), ref(8);
  ASSERT_EQ(p->buffer_download(buf, 40, out.data(), 8, err, sizeof err), RECUR_GPU_OK);
  for (int i = 0; i < 2; ++i)
    for (int pp = 0; pp < 2; ++pp)
      for (int q = 0; q < 2; ++q) {
        float acc = 0.0f;
        for (int c = 0; c < 3; ++c) acc += a[static_cast<std::size_t>(i * 3 + c)] * b[static_cast<std::size_t>((pp * 3 + c) * 2 + q)];
        ref[static_cast<std::size_t>((i * 2 + pp) * 2 + q)] = acc;
      }
  expect_near(out, ref, "dot");

  // EinsumDense 'bc,cd->bd' + a bias per d: letters b, d (the output's), then c (summed).
  const int64_t sizes[3] = {2, 2, 3}, sx[3] = {3, 0, 1}, sk[3] = {0, 1, 2}, sb[2] = {0, 1};
  ASSERT_EQ(p->einsum(0, d + 16, d + 24, 3, 2, sizes, sx, sk, d + 30, sb, d + 48, err, sizeof err), RECUR_GPU_OK) << err;
  Vec e(4), eref(4);
  ASSERT_EQ(p->buffer_download(buf, 48, e.data(), 4, err, sizeof err), RECUR_GPU_OK);
  for (int bb = 0; bb < 2; ++bb)
    for (int dd = 0; dd < 2; ++dd) {
      float acc = 0.0f;
      for (int c = 0; c < 3; ++c) acc += a[static_cast<std::size_t>(bb * 3 + c)] * b[static_cast<std::size_t>(c * 2 + dd)];
      eref[static_cast<std::size_t>(bb * 2 + dd)] = acc + b[static_cast<std::size_t>(6 + dd)];
    }
  expect_near(e, eref, "einsum");
  p->buffer_free(buf);
}

// Strided reads: a transpose, and a slice that runs backwards with a step.
TEST(GpuEmulatorTable, GatherStrided) {
  REQUIRE_DEVICE();
  const recur_gpu_plugin* p = plugin();
  char err[256] = "";
  void* buf = nullptr;
  ASSERT_EQ(p->buffer_alloc(0, 32, &buf, err, sizeof err), RECUR_GPU_OK) << err;
  float* d = p->buffer_device_pointer(buf);
  Vec x(12);
  for (int i = 0; i < 12; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>(i);
  ASSERT_EQ(p->buffer_upload(buf, 0, x.data(), 12, err, sizeof err), RECUR_GPU_OK) << err;
  // x as (3, 4) transposed to (4, 3).
  const int64_t tdims[2] = {4, 3}, tstrides[2] = {1, 4};
  ASSERT_EQ(p->gather_strided(0, d, 12, 0, 2, tdims, tstrides, d + 12, err, sizeof err), RECUR_GPU_OK) << err;
  // x[:, ::-2] of (3, 4): columns 3 and 1.
  const int64_t sdims[2] = {3, 2}, sstrides[2] = {4, -2};
  ASSERT_EQ(p->gather_strided(0, d, 12, 3, 2, sdims, sstrides, d + 24, err, sizeof err), RECUR_GPU_OK) << err;
  Vec y(18);
  ASSERT_EQ(p->buffer_download(buf, 12, y.data(), 18, err, sizeof err), RECUR_GPU_OK);
  EXPECT_EQ(y, (Vec{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, 3, 1, 7, 5, 11, 9}));
  p->buffer_free(buf);
}

// elementwise and reduce against their definitions in recur_gpu_plugin_abi.h, written out here:
// a broadcast fold with a constant, the comparisons with NaN, a unary op, Keras 3's masked merges
// and every reduction over a middle axis and over two axes.
TEST(GpuEmulatorTable, ElementwiseAndReduce) {
  REQUIRE_DEVICE();
  const recur_gpu_plugin* p = plugin();
  char err[256] = "";
  void* buf = nullptr;
  ASSERT_EQ(p->buffer_alloc(0, 128, &buf, err, sizeof err), RECUR_GPU_OK) << err;
  float* d = p->buffer_device_pointer(buf);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto same = [](float x, float y) { return (std::isnan(x) && std::isnan(y)) || x == y; };
  // a (2, 3, 2) minus b (3 values, one per step) minus the constant 0.5: ((a - b) - 0.5).
  std::mt19937 gen(11);
  Vec a = random_vec(12, gen), b = random_vec(3, gen);
  a[5] = nan;
  ASSERT_EQ(p->buffer_upload(buf, 0, a.data(), 12, err, sizeof err), RECUR_GPU_OK) << err;
  ASSERT_EQ(p->buffer_upload(buf, 12, b.data(), 3, err, sizeof err), RECUR_GPU_OK) << err;
  const int64_t dims[3] = {2, 3, 2};
  auto fold = [&](int32_t op, int32_t n, const int64_t* strides, const float* const* inputs, const float* constants,
                  const uint8_t* const* masks, int64_t out_at, std::size_t count) {
    // Sizes by where the input starts: a (at 0) and c2 (at 16) are 12 floats, b (at 12) 3.
    int64_t floats[3] = {0, 0, 0};
    for (int32_t k = 0; k < n; ++k) floats[k] = inputs[k] == d + 12 ? 3 : 12;
    recur_gpu_elementwise e{};
    e.op = op, e.num_inputs = n, e.inputs = inputs, e.input_floats = floats, e.constants = constants;
    e.rank = 3, e.dims = dims, e.strides = strides, e.masks = masks, e.out = d + out_at;
    EXPECT_EQ(p->elementwise(0, &e, err, sizeof err), RECUR_GPU_OK) << err;
    Vec y(count);
    EXPECT_EQ(p->buffer_download(buf, out_at, y.data(), static_cast<int64_t>(count), err, sizeof err), RECUR_GPU_OK);
    return y;
  };
  const int64_t sub_strides[9] = {6, 2, 1, 0, 1, 0, 0, 0, 0};
  const float* sub_in[3] = {d, d + 12, nullptr};
  const float sub_const[3] = {0.0f, 0.0f, 0.5f};
  const Vec sub = fold(RECUR_GPU_OP_SUB, 3, sub_strides, sub_in, sub_const, nullptr, 32, 12);
  for (int i = 0; i < 2; ++i)
    for (int t = 0; t < 3; ++t)
      for (int c = 0; c < 2; ++c) {
        const int k = (i * 3 + t) * 2 + c;
        EXPECT_TRUE(same(sub[k], (a[k] - b[t]) - 0.5f)) << k;
      }
  // a compared with itself shifted by one element: NaN compares unequal.
  const int64_t cmp_strides[6] = {6, 2, 1, 6, 2, 1};
  const float* cmp_in[2] = {d, d + 1};
  const Vec ne = fold(RECUR_GPU_OP_NOT_EQUAL, 2, cmp_strides, cmp_in, nullptr, nullptr, 48, 11);
  const Vec ge = fold(RECUR_GPU_OP_GREATER_EQUAL, 2, cmp_strides, cmp_in, nullptr, nullptr, 48, 11);
  for (int k = 0; k < 11; ++k) {
    EXPECT_EQ(ne[k], a[k] != a[k + 1] ? 1.0f : 0.0f) << k;
    EXPECT_EQ(ge[k], a[k] >= a[k + 1] ? 1.0f : 0.0f) << k;
  }
  const float* one_in[1] = {d};
  const Vec sq = fold(RECUR_GPU_OP_SQRT, 1, cmp_strides, one_in, nullptr, nullptr, 64, 12);
  const Vec tr = fold(RECUR_GPU_OP_TRUNC, 1, cmp_strides, one_in, nullptr, nullptr, 80, 12);
  for (int k = 0; k < 12; ++k) {
    EXPECT_TRUE(same(sq[k], std::sqrt(a[k]))) << k;
    EXPECT_TRUE(same(tr[k], std::trunc(a[k]))) << k;
  }
  // Keras 3's masked merges over (2, 3, 2) with masks per (i, t): input 0 masked at (0, 1) and
  // (1, 2), input 1 at (0, 1) and (1, 0).
  const uint8_t m0[6] = {1, 0, 1, 1, 1, 0}, m1[6] = {1, 0, 1, 0, 1, 1};
  const uint8_t* masks[2] = {m0, m1};
  const float* two_in[2] = {d, d + 16};
  const Vec c2 = random_vec(12, gen);
  ASSERT_EQ(p->buffer_upload(buf, 16, c2.data(), 12, err, sizeof err), RECUR_GPU_OK) << err;
  const Vec mul = fold(RECUR_GPU_OP_MUL, 2, cmp_strides, two_in, nullptr, masks, 80, 12);
  const Vec mx = fold(RECUR_GPU_OP_MAX, 2, cmp_strides, two_in, nullptr, masks, 96, 12);
  for (int bt = 0; bt < 6; ++bt)
    for (int c = 0; c < 2; ++c) {
      const int k = bt * 2 + c;
      const float x = a[k], y = c2[k];
      const float want_mul = !m0[bt] && !m1[bt] ? 0.0f : (m0[bt] ? x : 1.0f) * (m1[bt] ? y : 1.0f);
      const float want_max = !m0[bt] && !m1[bt] ? x : !m0[bt] ? y : !m1[bt] ? x : std::max(x, y);
      EXPECT_TRUE(same(mul[k], want_mul)) << k;
      EXPECT_TRUE(same(mx[k], want_max)) << k;
    }

  // Reductions of c2 as (2, 3, 2) over axis 1, and over axes 0 and 2.
  auto reduce = [&](int32_t kind, uint32_t axes, std::size_t count) {
    EXPECT_EQ(p->reduce(0, kind, d + 16, 3, dims, axes, d + 112, err, sizeof err), RECUR_GPU_OK) << err;
    Vec y(count);
    EXPECT_EQ(p->buffer_download(buf, 112, y.data(), static_cast<int64_t>(count), err, sizeof err), RECUR_GPU_OK);
    return y;
  };
  for (int32_t kind = RECUR_GPU_REDUCE_SUM; kind <= RECUR_GPU_REDUCE_ALL; ++kind) {
    SCOPED_TRACE("reduce kind " + std::to_string(kind));
    auto start = [&] {
      return kind == RECUR_GPU_REDUCE_ALL ? 1.0f : kind == RECUR_GPU_REDUCE_MAX ? -INFINITY
             : kind == RECUR_GPU_REDUCE_MIN ? INFINITY : 0.0f;
    };
    auto step = [&](float acc, float v) {
      switch (kind) {
        case RECUR_GPU_REDUCE_MAX: return std::max(acc, v);
        case RECUR_GPU_REDUCE_MIN: return std::min(acc, v);
        case RECUR_GPU_REDUCE_ANY: return (acc != 0.0f) || (v != 0.0f) ? 1.0f : 0.0f;
        case RECUR_GPU_REDUCE_ALL: return (acc != 0.0f) && (v != 0.0f) ? 1.0f : 0.0f;
        default: return acc + v;
      }
    };
    const Vec mid = reduce(kind, 2u, 4);  // (2, 2)
    for (int i = 0; i < 2; ++i)
      for (int c = 0; c < 2; ++c) {
        float acc = start();
        for (int t = 0; t < 3; ++t) acc = step(acc, c2[(i * 3 + t) * 2 + c]);
        if (kind == RECUR_GPU_REDUCE_MEAN) acc = acc / 3.0f;
        EXPECT_EQ(mid[i * 2 + c], acc) << i << "," << c;
      }
    const Vec outer = reduce(kind, 5u, 3);  // (3): axes 0 and 2, in row-major order
    for (int t = 0; t < 3; ++t) {
      float acc = start();
      for (int i = 0; i < 2; ++i)
        for (int c = 0; c < 2; ++c) acc = step(acc, c2[(i * 3 + t) * 2 + c]);
      if (kind == RECUR_GPU_REDUCE_MEAN) acc = acc / 4.0f;
      EXPECT_EQ(outer[t], acc) << t;
    }
  }

  // Refusals name the op and write nothing.
  auto refused = [&](int rc, const char* op) {
    EXPECT_EQ(rc, RECUR_GPU_ERR_INVALID) << op;
    EXPECT_NE(std::string(err).find(op), std::string::npos) << err;
  };
  const int64_t floats[3] = {12, 3, 12};
  recur_gpu_elementwise e{};
  e.op = RECUR_GPU_OP_ADD, e.num_inputs = 2, e.inputs = two_in, e.input_floats = floats, e.rank = 3, e.dims = dims,
  e.strides = cmp_strides, e.out = d + 80;
  e.op = 99;
  refused(p->elementwise(0, &e, err, sizeof err), "elementwise");
  e.op = RECUR_GPU_OP_SQRT;  // a unary op given two inputs
  refused(p->elementwise(0, &e, err, sizeof err), "elementwise");
  e.op = RECUR_GPU_OP_ADD, e.num_inputs = 9;
  refused(p->elementwise(0, &e, err, sizeof err), "elementwise");
  e.num_inputs = 2, e.input_floats = floats + 1;  // input 0 is 3 floats: reads past it
  refused(p->elementwise(0, &e, err, sizeof err), "elementwise");
  e.input_floats = floats, e.masks = masks;  // masks with ADD
  refused(p->elementwise(0, &e, err, sizeof err), "elementwise");
  e.masks = nullptr, e.rank = 9;
  refused(p->elementwise(0, &e, err, sizeof err), "elementwise");
  e.rank = 3;
  const float* null_in[2] = {d, nullptr};
  e.inputs = null_in;  // a constant without constants
  refused(p->elementwise(0, &e, err, sizeof err), "elementwise");
  refused(p->elementwise(0, nullptr, err, sizeof err), "elementwise");
  refused(p->reduce(0, 99, d, 3, dims, 1u, d + 112, err, sizeof err), "reduce");
  refused(p->reduce(0, RECUR_GPU_REDUCE_SUM, d, 3, dims, 8u, d + 112, err, sizeof err), "reduce");  // axis 3 of 3
  refused(p->reduce(0, RECUR_GPU_REDUCE_SUM, d, 0, dims, 0u, d + 112, err, sizeof err), "reduce");
  refused(p->reduce(0, RECUR_GPU_REDUCE_SUM, nullptr, 3, dims, 1u, d + 112, err, sizeof err), "reduce");
  p->buffer_free(buf);
}

// The attention ops against their definition in recur_gpu_plugin_abi.h, written out here: two heads
// of dot-product attention over strided rows with every mask and the causal rule (also with the
// queries as the last steps, a stream's step after its past), and the additive and concat scores.
TEST(GpuEmulatorTable, AttentionOps) {
  REQUIRE_DEVICE();
  const recur_gpu_plugin* p = plugin();
  char err[256] = "";
  std::mt19937 gen(11);
  const Index B = 2, Tq = 3, Tv = 4, H = 2, dk = 3, dv = 2, W = H * (dk + dv), C = 5;
  const Vec x = random_vec(B * Tq * C, gen), wq = random_vec(C * H * dk, gen), bq = random_vec(H * dk, gen);
  const Vec kv = random_vec(B * Tv * W, gen), fs = random_vec(dk, gen), am = {1, 0, 1, 1, 1, 1, 0, 1, 0, 1, 1, 1,
                                                                               1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1};
  const uint8_t qmask[B * Tq] = {1, 1, 0, 1, 0, 1}, vmask[B * Tv] = {1, 1, 1, 0, 0, 1, 1, 1};
  void* buf = nullptr;
  const Index n = 512;
  ASSERT_EQ(p->buffer_alloc(0, n, &buf, err, sizeof err), RECUR_GPU_OK) << err;
  float* d = p->buffer_device_pointer(buf);
  Index at = 0;
  auto put = [&](const Vec& v) {
    const Index o = at;
    EXPECT_EQ(p->buffer_upload(buf, o, v.data(), static_cast<int64_t>(v.size()), err, sizeof err), RECUR_GPU_OK) << err;
    at += static_cast<Index>(v.size());
    return o;
  };
  const Index ox = put(x), owq = put(wq), obq = put(bq), okv = put(kv), ofs = put(fs), oam = put(am);
  const Index oq = at, os = oq + B * Tq * H * dk, oy = os + B * H * Tq * Tv;
  ASSERT_LE(oy + B * Tq * H * dv, n);
  auto get = [&](Index o, Index count) {
    Vec v(static_cast<std::size_t>(count));
    EXPECT_EQ(p->buffer_download(buf, o, v.data(), count, err, sizeof err), RECUR_GPU_OK) << err;
    return v;
  };

  // The query projected into rows of H * dk, with a bias.
  ASSERT_EQ(p->project(0, d + ox, B * Tq, C, d + owq, d + obq, H * dk, d + oq, H * dk, err, sizeof err), RECUR_GPU_OK)
      << err;
  Vec q_ref(static_cast<std::size_t>(B * Tq * H * dk));
  for (Index r = 0; r < B * Tq; ++r)
    for (Index o = 0; o < H * dk; ++o) {
      double acc = 0;
      for (Index i = 0; i < C; ++i) acc += double(x[r * C + i]) * wq[i * H * dk + o];
      q_ref[r * H * dk + o] = static_cast<float>(acc) + bq[o];
    }
  expect_near(get(oq, B * Tq * H * dk), q_ref, "project");

  const std::pair<int, bool> variants[] = {{RECUR_GPU_ATTN_DOT, false}, {RECUR_GPU_ATTN_DOT, true},
                                           {RECUR_GPU_ATTN_ADDITIVE, false}, {RECUR_GPU_ATTN_CONCAT, false}};
  for (const auto& variant : variants) {
    const int score = variant.first;  // (no structured binding: C++17 lambdas cannot capture one)
    const bool last = variant.second;
    SCOPED_TRACE(std::to_string(score) + (last ? " CAUSAL_LAST" : ""));
    const Index heads = score == RECUR_GPU_ATTN_DOT ? H : 1;
    recur_gpu_attention a{};
    a.score = score;
    a.flags = score == RECUR_GPU_ATTN_DOT ? RECUR_GPU_ATTN_PRESCALE_QUERY | RECUR_GPU_ATTN_CAUSAL |
                                                RECUR_GPU_ATTN_QUERY_MASKS_SCORES | RECUR_GPU_ATTN_ZERO_MASKED |
                                                (last ? RECUR_GPU_ATTN_CAUSAL_LAST : 0)
                                          : RECUR_GPU_ATTN_SCALE_LOGITS | RECUR_GPU_ATTN_REPLACE_MASKED;
    a.batch = B, a.heads = heads, a.q_steps = Tq, a.v_steps = Tv, a.key_dim = dk, a.value_dim = dv;
    a.query = d + oq, a.query_stride = H * dk;
    a.key = d + okv, a.key_stride = W;
    a.value = d + okv + H * dk, a.value_stride = W;
    a.scale = 0.7f, a.concat_weight = -1.3f, a.feature_scale = d + ofs;
    a.host_query_mask = qmask, a.host_value_mask = vmask;
    a.attention_mask = score == RECUR_GPU_ATTN_DOT ? d + oam : nullptr;
    a.scores = d + os, a.output = d + oy, a.output_stride = H * dv;
    ASSERT_EQ(p->attention(0, &a, err, sizeof err), RECUR_GPU_OK) << err;

    Vec s_ref(static_cast<std::size_t>(B * heads * Tq * Tv)), y_ref(static_cast<std::size_t>(B * Tq * H * dv));
    // One head (additive, concat) writes the first dv floats of each output row: the rest are
    // compared with what the buffer holds.
    y_ref = get(oy, B * Tq * H * dv);
    for (Index b = 0; b < B; ++b)
      for (Index h = 0; h < heads; ++h)
        for (Index i = 0; i < Tq; ++i) {
          const float* qi = q_ref.data() + (b * Tq + i) * H * dk + h * dk;
          const bool q_kept = qmask[b * Tq + i] != 0;
          float* row = s_ref.data() + ((b * heads + h) * Tq + i) * Tv;
          auto kept = [&](Index j) {
            bool k = vmask[b * Tv + j] != 0;
            if (score == RECUR_GPU_ATTN_DOT)
              k = k && j <= i + (last ? Tv - Tq : 0) && am[(b * Tq + i) * Tv + j] != 0.0f && q_kept;
            return k;
          };
          for (Index j = 0; j < Tv; ++j) {
            const float* kj = kv.data() + (b * Tv + j) * W + h * dk;
            double acc = 0;
            float l;
            if (score == RECUR_GPU_ATTN_DOT) {
              for (Index c = 0; c < dk; ++c) acc += double(qi[c] * 0.7f) * kj[c];
              l = static_cast<float>(acc);
            } else if (score == RECUR_GPU_ATTN_ADDITIVE) {
              for (Index c = 0; c < dk; ++c) acc += double(fs[c] * std::tanh(qi[c] + kj[c]));
              l = static_cast<float>(acc);
            } else {
              for (Index c = 0; c < dk; ++c) acc += std::tanh(0.7f * (qi[c] + kj[c]));
              l = -1.3f * static_cast<float>(acc);
            }
            if (!kept(j)) l = score == RECUR_GPU_ATTN_DOT ? l - 1e9f : -1e9f;
            row[j] = l;
          }
          double m = row[0], sum = 0;
          for (Index j = 1; j < Tv; ++j) m = std::max(m, double(row[j]));
          for (Index j = 0; j < Tv; ++j) sum += std::exp(double(row[j]) - m);
          for (Index j = 0; j < Tv; ++j) row[j] = static_cast<float>(std::exp(double(row[j]) - m) / sum);
          if (score == RECUR_GPU_ATTN_DOT)
            for (Index j = 0; j < Tv; ++j)
              if (!kept(j)) row[j] = 0.0f;
          for (Index c = 0; c < dv; ++c) {
            double acc = 0;
            for (Index j = 0; j < Tv; ++j) acc += double(row[j]) * kv[(b * Tv + j) * W + H * dk + h * dv + c];
            // A masked query's output is 0 unless the query mask masks its scores instead.
            y_ref[(b * Tq + i) * H * dv + h * dv + c] = score != RECUR_GPU_ATTN_DOT && !q_kept ? 0.0f : static_cast<float>(acc);
          }
        }
    expect_near(get(os, B * heads * Tq * Tv), s_ref, "attention scores");
    expect_near(get(oy, B * Tq * H * dv), y_ref, "attention output");
  }
  p->buffer_free(buf);
}

TEST(GpuEmulatorTable, ArgumentErrorsAreCodesWithMessages) {
  REQUIRE_DEVICE();
  const recur_gpu_plugin* p = plugin();
  char err[256] = "";
  recur_gpu_layer_desc d{};
  d.cell = RECUR_GPU_CELL_GRU;
  d.units = 0;
  d.input_size = 2;
  void* layer = nullptr;
  EXPECT_EQ(p->layer_create(&d, &layer, err, sizeof err), RECUR_GPU_ERR_INVALID);
  EXPECT_NE(std::string(err).find("units"), std::string::npos) << err;
  d.units = 2;
  d.cell = 3;  // not a RECUR_GPU_CELL_*
  EXPECT_EQ(p->layer_create(&d, &layer, err, sizeof err), RECUR_GPU_ERR_INVALID);
  EXPECT_NE(std::string(err).find("cell"), std::string::npos) << err;
  d.cell = RECUR_GPU_CELL_GRU;
  d.activation = 99;
  EXPECT_EQ(p->layer_create(&d, &layer, err, sizeof err), RECUR_GPU_ERR_INVALID);
  d.activation = 1;
  d.device = 1000;
  EXPECT_EQ(p->layer_create(&d, &layer, err, sizeof err), RECUR_GPU_ERR_NO_DEVICE);
  d.device = 0;
  ASSERT_EQ(p->layer_create(&d, &layer, err, sizeof err), RECUR_GPU_OK) << err;
  recur_gpu_run r{};
  r.num_inputs = 1;
  EXPECT_EQ(p->layer_run(layer, &r, err, sizeof err), RECUR_GPU_ERR_INVALID);
  EXPECT_NE(std::string(err).find("weights"), std::string::npos) << err;
  const Vec k(2 * 6, 0.1f), u(2 * 6, 0.1f);
  recur_gpu_weights w{};
  w.kernel = k.data();
  w.recurrent = u.data();
  ASSERT_EQ(p->layer_set_weights(layer, &w, err, sizeof err), RECUR_GPU_OK) << err;
  r.route = RECUR_GPU_ROUTE_CUDNN;
  EXPECT_EQ(p->layer_run(layer, &r, err, sizeof err), RECUR_GPU_ERR_INVALID);
  EXPECT_NE(std::string(err).find("cudnn_capable"), std::string::npos) << err;
  r.route = RECUR_GPU_ROUTE_KERNEL;
  r.num_inputs = 2;
  EXPECT_EQ(p->layer_run(layer, &r, err, sizeof err), RECUR_GPU_ERR_INVALID);
  // A tiny message buffer still gets a NUL-terminated prefix.
  char tiny[4] = {'x', 'x', 'x', 'x'};
  EXPECT_EQ(p->layer_run(layer, &r, tiny, sizeof tiny), RECUR_GPU_ERR_INVALID);
  EXPECT_EQ(tiny[3], '\0');
  p->layer_destroy(layer);
}

TEST(GpuEmulatorTable, ConcurrentRunsOnOneLayer) {
  REQUIRE_DEVICE();
  const recur_gpu_plugin* p = plugin();
  Pair pair(LayerKind::lstm, 6, 4, 77);
  const Index B = 4, T = 9, u = 6;
  std::vector<Vec> results(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 gen(static_cast<unsigned>(t % 2));  // pairs of threads run the same inputs
      const Vec x = random_vec(static_cast<std::size_t>(B * T * 4), gen);
      Vec states(static_cast<std::size_t>(2 * B * u), 0.0f), seq(static_cast<std::size_t>(B * T * u));
      const float* xs[1] = {x.data()};
      recur_gpu_run r{};
      r.memory = RECUR_GPU_MEMORY_HOST;
      r.batch = B;
      r.timesteps = T;
      r.num_inputs = 1;
      r.inputs = xs;
      r.states = states.data();
      r.sequence_output = seq.data();
      char err[256] = "";
      for (int rep = 0; rep < 20; ++rep) {
        std::fill(states.begin(), states.end(), 0.0f);
        if (p->layer_run(pair.layer, &r, err, sizeof err) != RECUR_GPU_OK) return;
      }
      results[static_cast<std::size_t>(t)] = seq;
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t) {
    ASSERT_FALSE(results[static_cast<std::size_t>(t)].empty());
    EXPECT_EQ(results[static_cast<std::size_t>(t)], results[static_cast<std::size_t>(t % 2)]) << "thread " << t;
  }
}

}  // namespace
}  // namespace recur
