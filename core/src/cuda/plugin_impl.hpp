// SPDX-License-Identifier: Apache-2.0
// The plugin table (gpu_plugin_abi.h), written once over a platform so the CUDA plugin and the
// host emulator share validation, staging, step_rows and the model ops. A platform provides:
//   using Exec = ...;                       the execution policy (see runner.hpp)
//   static constexpr const char* kName;     the table's name
//   static constexpr int64_t kProjectionBudget;  floats of projected inputs held at once
//   static int probe(int32_t* count, std::string& err);
//   static std::string device_name(int32_t device);
//   static void check_usable(int32_t device);   throws GpuError for a device the build cannot use
// Every function catches all exceptions and answers with a code and a message.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "attention_ops.hpp"
#include "cudnn_route.hpp"
#include "host_copy.hpp"
#include "norm_ops.hpp"
#include "pool_ops.hpp"
#include "gpu_common.hpp"
#include "runner.hpp"
#include "tensor_ops.hpp"

namespace recur::gpu {

inline void write_message(char* out, std::size_t len, const std::string& msg) {
  if (!out || len == 0) return;
  const std::size_t n = std::min(len - 1, msg.size());
  std::memcpy(out, msg.data(), n);
  out[n] = '\0';
}

template <class F>
int guarded(char* err, std::size_t err_len, const F& f) {
  try {
    f();
    return RECUR_GPU_OK;
  } catch (const GpuError& e) {
    write_message(err, err_len, e.what());
    return e.code();
  } catch (const std::bad_alloc&) {
    write_message(err, err_len, "host allocation failed");
    return RECUR_GPU_ERR_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    write_message(err, err_len, e.what());
    return RECUR_GPU_ERR_CUDA;
  } catch (...) {
    write_message(err, err_len, "unknown error in the GPU plugin");
    return RECUR_GPU_ERR_CUDA;
  }
}

template <class Platform>
class Plugin {
  using Exec = typename Platform::Exec;

  // A device block freed with the policy.
  struct DeviceBlock {
    void* p = nullptr;
    DeviceBlock() = default;
    DeviceBlock(const DeviceBlock&) = delete;
    DeviceBlock& operator=(const DeviceBlock&) = delete;
    ~DeviceBlock() {
      if (p) Exec::release(p);
    }
  };

  struct Layer {
    recur_gpu_layer_desc desc{};
    LayerSpec spec;
    std::unique_ptr<DeviceBlock> weights;  // kernel, recurrent and biases in one block
    DeviceWeights w;
    std::unique_ptr<cuda::CudnnRoute> cudnn;
    // Which layer and which weights, for the keys of replayed calls: an address may be reused.
    uint64_t id = next_id();
    uint64_t generation = 0;

    static uint64_t next_id() {
      static std::atomic<uint64_t> counter{0};
      return ++counter;
    }
  };

  struct Buffer {
    int32_t device = 0;
    int64_t floats = 0;
    DeviceBlock block;
  };

  static void check_device(int32_t device) {
    int32_t count = 0;
    std::string err;
    const int rc = Platform::probe(&count, err);
    if (rc != RECUR_GPU_OK) fail(rc, err);
    if (device < 0 || device >= count)
      fail(RECUR_GPU_ERR_NO_DEVICE, "no GPU " + std::to_string(device) + " (" + std::to_string(count) + " found)");
    Platform::check_usable(device);
  }

  // ---- layers -----------------------------------------------------------------------------

  static int layer_create(const recur_gpu_layer_desc* desc, void** out, char* err, std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(desc && out, "layer_create: null argument");
      *out = nullptr;
      check_device(desc->device);
      auto layer = std::make_unique<Layer>();
      layer->desc = *desc;
      layer->spec = make_spec(*desc);
      if (desc->cudnn_capable) {
        std::string msg;
        layer->cudnn = cuda::make_cudnn_route(*desc, msg);
        if (!layer->cudnn) fail(RECUR_GPU_ERR_CUDA, "cuDNN route: " + msg);
      }
      *out = layer.release();
    });
  }

  static int layer_set_weights(void* handle, const recur_gpu_weights* wts, char* err, std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(handle && wts, "layer_set_weights: null argument");
      Layer& L = *static_cast<Layer*>(handle);
      const LayerSpec& s = L.spec;
      const int64_t W = s.width();
      check(wts->kernel && wts->recurrent, "layer_set_weights: kernel and recurrent are required");
      check(!s.use_bias || wts->input_bias, "layer_set_weights: the layer uses a bias but input_bias is NULL");
      check(!(s.reset_after && s.use_bias) || wts->recurrent_bias,
            "layer_set_weights: a reset_after GRU with bias needs recurrent_bias");
      check(!L.cudnn || (wts->cudnn_params && wts->regions && wts->num_regions > 0),
            "layer_set_weights: a cudnn_capable layer needs cudnn_params and regions");

      Arena measure;
      auto carve = [&](Arena& a, DeviceWeights& w) {
        w.kernel = a.take<float>(s.input_size * W);
        w.recurrent = a.take<float>(s.units * W);
        w.input_bias = s.use_bias ? a.take<float>(W) : nullptr;
        w.recurrent_bias = s.reset_after && s.use_bias ? a.take<float>(W) : nullptr;
      };
      DeviceWeights w;
      carve(measure, w);
      auto block = std::make_unique<DeviceBlock>();
      block->p = Exec::alloc(L.desc.device, measure.size());
      Arena at(static_cast<char*>(block->p));
      carve(at, w);
      Exec ex(L.desc.device, nullptr);
      auto upload = [&](const float* dst, const float* src, int64_t n) {
        ex.copy(const_cast<float*>(dst), src, static_cast<std::size_t>(n) * sizeof(float), Copy::h2d);
      };
      upload(w.kernel, wts->kernel, s.input_size * W);
      upload(w.recurrent, wts->recurrent, s.units * W);
      if (w.input_bias) upload(w.input_bias, wts->input_bias, W);
      if (w.recurrent_bias) upload(w.recurrent_bias, wts->recurrent_bias, W);
      ex.sync();
      if (L.cudnn) {
        std::string msg;
        const int rc = L.cudnn->set_weights(*wts, msg);
        if (rc != RECUR_GPU_OK) fail(rc, msg);
      }
      L.weights = std::move(block);
      L.w = w;
      ++L.generation;
    });
  }

  static void run_impl(const Layer& L, const recur_gpu_run& r) {
    const auto t_enter = CallProfile::Clock::now();
    const LayerSpec& s = L.spec;
    check(L.weights != nullptr, "layer_run: weights were never set");
    check(r.route == RECUR_GPU_ROUTE_KERNEL || r.route == RECUR_GPU_ROUTE_CUDNN, "layer_run: unknown route");
    check(r.memory == RECUR_GPU_MEMORY_HOST || r.memory == RECUR_GPU_MEMORY_DEVICE, "layer_run: unknown memory kind");
    check(r.batch >= 0 && r.timesteps >= 0, "layer_run: negative batch or timesteps");
    check(r.num_inputs == 1 || r.num_inputs == s.gates(), "layer_run: num_inputs must be 1 or the gate count");
    const bool cudnn = r.route == RECUR_GPU_ROUTE_CUDNN;
    if (cudnn) {
      check(L.cudnn != nullptr, "layer_run: route CUDNN on a layer that is not cudnn_capable");
      check(!r.mask && !r.recurrent_masks && r.num_inputs == 1,
            "layer_run: route CUDNN takes one input and lengths, not a mask, recurrent masks or per-gate inputs");
    }
    const int64_t B = r.batch, T = r.timesteps, rows = B * T, u = s.units, F = s.input_size, Bu = B * u;
    const int ns = s.num_states(), G = s.gates();
    check(r.inputs || rows == 0, "layer_run: inputs is NULL");
    for (int g = 0; g < r.num_inputs && rows > 0; ++g) check(r.inputs[g] != nullptr, "layer_run: an input is NULL");
    const bool host = r.memory == RECUR_GPU_MEMORY_HOST;
    const bool host_states = host && !r.states_on_device;
    check(r.states || B == 0 || !host, "layer_run: states is NULL");

    Exec ex(L.desc.device, r.stream);
    // Device views of the run's tensors: staged copies of host memory, else the caller's. Host
    // memory goes up in one copy and comes down in one, through the thread's pinned block, laid
    // out as [inputs | mask | recurrent masks | states | carried_in] up and [states | carried_in |
    // carried_out | last | sequence] down.
    const float* inputs[4] = {nullptr, nullptr, nullptr, nullptr};
    float* states = r.states;
    const float* carried_in = r.carried_in;
    float* carried_out = r.carried_out;
    float* seq = r.sequence_output;
    float* last = r.last_output;
    uint8_t* mask = nullptr;
    float* rmasks = nullptr;
    // The last output of a resident stream is its carried output: it comes down from there.
    const bool last_from_carried = host && !host_states && r.last_output && r.carried_out;
    // Large page-locked arrays go straight between the caller's memory and the device.
    const auto direct = [&](const void* p, int64_t floats) {
      return host && p && floats >= (int64_t(1) << 18) && Exec::is_pinned(p);
    };
    bool direct_in[4] = {false, false, false, false};
    for (int g = 0; g < r.num_inputs; ++g) direct_in[g] = direct(r.inputs ? r.inputs[g] : nullptr, rows * F);
    const bool direct_seq = direct(r.sequence_output, rows * u);
    float* last_slot = nullptr;  // where the last output lands in the staging block
    char* up_begin = nullptr;    // the staged region: [up_begin, up_end) up, [down_begin, down_end) down
    std::size_t up_end = 0, down_end = 0;
    RunBuffers rb;
    auto carve = [&](Arena& a) {
      for (int g = 0; g < r.num_inputs; ++g)
        if (direct_in[g]) inputs[g] = a.take<float>(rows * F);
      up_begin = a.take<char>(0);
      for (int g = 0; g < r.num_inputs; ++g)
        if (host && !direct_in[g]) inputs[g] = a.take<float>(rows * F);
      if (r.mask) mask = a.take<uint8_t>(rows);
      if (r.recurrent_masks) rmasks = a.take<float>(G * Bu);
      if (!r.states) states = a.take<float>(ns * Bu);  // device memory without states: zeros
      if (host_states) {
        states = a.take<float>(ns * Bu);
        if (r.carried_in) carried_in = a.take<float>(Bu);
      }
      up_end = a.size();
      if (host_states && r.carried_out) carried_out = a.take<float>(Bu);
      if (host && r.last_output) {
        last_slot = a.take<float>(Bu);
        last = last_from_carried ? nullptr : last_slot;
      }
      if (host && r.sequence_output && !direct_seq) seq = a.take<float>(rows * u);
      down_end = a.size();
      if (direct_seq) seq = a.take<float>(rows * u);
      if (!cudnn) rb = carve_run(a, s, B, T, r.num_inputs, r.recurrent_masks != nullptr, Platform::kProjectionBudget);
    };
    Arena measure;
    carve(measure);
    char* base = static_cast<char*>(ex.scratch(measure.size()));
    Arena scratch(base);
    carve(scratch);
    const auto offset = [&](const void* dev) { return static_cast<std::size_t>(static_cast<const char*>(dev) - base); };
    const std::size_t up_from = offset(up_begin);
    // What comes down: from the states (host states) or the first staged output on; the last
    // output of a resident stream separately.
    std::size_t down_begin = down_end;
    if (host_states) down_begin = offset(states);
    else if (last && last == last_slot) down_begin = offset(last);
    else if (seq && host && !direct_seq) down_begin = offset(seq);

    const auto bytes = [](int64_t floats) { return static_cast<std::size_t>(floats) * sizeof(float); };
    // The staging block mirrors the staged region of the scratch block.
    char* staging = host ? static_cast<char*>(ex.host_staging(down_end - up_from)) : nullptr;
    const auto staged = [&](const void* dev) { return staging + (offset(dev) - up_from); };
    auto t_prepared = t_enter;
    if (host) {
      for (int g = 0; g < r.num_inputs && rows > 0; ++g)
        if (!direct_in[g]) host_copy(staged(inputs[g]), r.inputs[g], bytes(rows * F));
      if (mask) host_copy(staged(mask), r.mask, static_cast<std::size_t>(rows));
      if (rmasks) host_copy(staged(rmasks), r.recurrent_masks, bytes(G * Bu));
      if (host_states && Bu > 0) {
        host_copy(staged(states), r.states, bytes(ns * Bu));
        if (r.carried_in) host_copy(staged(carried_in), r.carried_in, bytes(Bu));
      }
      t_prepared = CallProfile::Clock::now();
    } else {
      for (int g = 0; g < r.num_inputs && rows > 0; ++g) inputs[g] = r.inputs[g];
    }

    // With RECUR_CUDA_ZERO_COPY=1, a stream's step (one timestep of host memory, fused with its
    // projection) hands its kernels the staging block itself in place of the staged region: no copy
    // is queued for what it stages.
    bool any_direct = direct_seq;
    for (int g = 0; g < r.num_inputs; ++g) any_direct = any_direct || direct_in[g];
    const bool zero_copy = host && !cudnn && T == 1 && rb.plan.fuse_projection && !any_direct && zero_copy_steps();
    char* const staged_view = zero_copy ? static_cast<char*>(Exec::device_view(staging)) : nullptr;
    const auto kernel_side = [&](auto* dev) {
      const char* c = reinterpret_cast<const char*>(dev);
      if (!zero_copy || !dev || c < base + up_from || c >= base + down_end) return dev;
      return reinterpret_cast<decltype(dev)>(staged_view + (c - (base + up_from)));
    };

    // The call's device work: uploads, compute, downloads.
    auto enqueue = [&] {
      if (host) {
        ex.mark(0);
        for (int g = 0; g < r.num_inputs && rows > 0; ++g)
          if (direct_in[g]) ex.copy(const_cast<float*>(inputs[g]), r.inputs[g], bytes(rows * F), Copy::h2d);
        if (!zero_copy) ex.copy(base + up_from, staging, up_end - up_from, Copy::h2d);
        ex.mark(1);
      } else {
        if (mask && rows > 0) ex.copy(mask, r.mask, static_cast<std::size_t>(rows), Copy::h2d);
        if (rmasks && Bu > 0) ex.copy(rmasks, r.recurrent_masks, bytes(G * Bu), Copy::h2d);
      }
      if (!r.states && Bu > 0) ex.for_each(ns * Bu, FillZero{states});

      if (cudnn) {
        recur_gpu_run d = r;
        d.memory = RECUR_GPU_MEMORY_DEVICE;
        d.states_on_device = 0;
        d.zero_states = !r.states;  // cuDNN then reads no initial states (as the raw call does)
        d.stream = ex.stream();
        d.inputs = inputs;
        d.states = states;
        d.carried_in = carried_in;
        d.carried_out = carried_out;
        d.sequence_output = seq;
        d.last_output = last;
        std::string msg;
        const int rc = L.cudnn->run(d, ex.stream(), msg);
        if (rc != RECUR_GPU_OK) fail(rc, msg);
      } else {
        const float* kernel_inputs[4] = {nullptr, nullptr, nullptr, nullptr};
        for (int g = 0; g < r.num_inputs; ++g) kernel_inputs[g] = kernel_side(inputs[g]);
        SequenceArgs a;
        a.inputs = kernel_inputs;
        a.num_inputs = r.num_inputs;
        a.batch = B;
        a.timesteps = T;
        a.time_major = r.time_major != 0;
        a.go_backwards = r.go_backwards != 0;
        a.mask = kernel_side(mask);
        a.zero_output_for_mask = r.zero_output_for_mask != 0;
        a.unrolled_mask_quirk = r.unrolled_mask_quirk != 0;
        a.recurrent_masks = kernel_side(rmasks);
        a.states = kernel_side(states);
        a.carried_in = kernel_side(carried_in);
        a.carried_out = kernel_side(carried_out);
        a.sequence_output = kernel_side(seq);
        a.last_output = kernel_side(last);
        run_sequence(ex, s, L.w, a, rb);
      }

      if (host) {
        ex.mark(2);
        if (down_end > down_begin && !zero_copy)
          ex.copy(staging + (down_begin - up_from), base + down_begin, down_end - down_begin, Copy::d2h);
        if (last_from_carried && Bu > 0) ex.copy(staged(last_slot), carried_out, bytes(Bu), Copy::d2h);
        if (direct_seq && rows > 0) ex.copy(r.sequence_output, seq, bytes(rows * u), Copy::d2h);
        ex.mark(3);
      }
    };
    // A stream's step (one timestep of host memory, fused with its projection, so no library calls)
    // repeats with the same operations on the same memory: it is replayed as a CUDA graph.
    if (host && !cudnn && T == 1 && rb.plan.fuse_projection && !any_direct) {
      const auto word = [](const void* p) { return static_cast<uint64_t>(reinterpret_cast<std::uintptr_t>(p)); };
      const std::vector<uint64_t> key = {
          L.id, L.generation, word(ex.stream()), word(base), word(staging), static_cast<uint64_t>(B),
          static_cast<uint64_t>(r.num_inputs), word(r.states), word(r.carried_in), word(r.carried_out),
          static_cast<uint64_t>((r.mask ? 1 : 0) | (r.last_output ? 2 : 0) | (r.sequence_output ? 4 : 0) |
                                (r.states_on_device ? 8 : 0) | (r.zero_output_for_mask ? 16 : 0) |
                                (r.time_major ? 32 : 0) | (r.go_backwards ? 64 : 0) | (r.unrolled_mask_quirk ? 128 : 0) |
                                (r.recurrent_masks ? 256 : 0)),
          up_from, up_end, down_begin, down_end};
      ex.mark(0);  // (a replayed graph's device time is measured as a whole)
      ex.replay(key, enqueue);
      ex.mark(3);
    } else {
      enqueue();
    }

    // A run returns with its outputs written, so callers may read them (or free their buffers).
    const auto t_enqueued = CallProfile::Clock::now();
    ex.sync();
    const auto t_synced = CallProfile::Clock::now();
    if (host) {
      if (host_states && Bu > 0) {
        host_copy(r.states, staged(states), bytes(ns * Bu));
        if (r.carried_out) host_copy(r.carried_out, staged(carried_out), bytes(Bu));
      }
      if (r.last_output && Bu > 0) host_copy(r.last_output, staged(last_slot), bytes(Bu));
      if (r.sequence_output && rows > 0 && !direct_seq) host_copy(r.sequence_output, staged(seq), bytes(rows * u));
      if (CallProfile::on()) {
        CallTimes t;
        t.prepare_us = CallProfile::us(t_enter, t_prepared);
        t.enqueue_us = CallProfile::us(t_prepared, t_enqueued);
        t.wait_us = CallProfile::us(t_enqueued, t_synced);
        t.finish_us = CallProfile::us(t_synced, CallProfile::Clock::now());
        ex.device_times(t);
        CallProfile::add(t);
      }
    }
  }

  static int layer_run(void* handle, const recur_gpu_run* run, char* err, std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(handle && run, "layer_run: null argument");
      run_impl(*static_cast<const Layer*>(handle), *run);
    });
  }

  static void layer_destroy(void* handle) {
    try {
      delete static_cast<Layer*>(handle);
    } catch (...) {
      // A failing device free at teardown has nobody left to report to.
    }
  }

  static void step_rows_impl(const Layer& L, const recur_gpu_step_rows& st) {
    const LayerSpec& s = L.spec;
    check(L.weights != nullptr, "layer_step_rows: weights were never set");
    const int64_t R = st.rows, u = s.units, F = s.input_size;
    check(R >= 0, "layer_step_rows: negative rows");
    check(st.memory == RECUR_GPU_MEMORY_HOST || st.memory == RECUR_GPU_MEMORY_DEVICE, "layer_step_rows: unknown memory kind");
    if (R == 0) return;
    check(st.h_rows && st.carried_rows && st.input && st.output, "layer_step_rows: null argument");
    check(!s.lstm() || st.c_rows, "layer_step_rows: an LSTM needs c_rows");
    const int ns = s.num_states();
    const bool host = st.memory == RECUR_GPU_MEMORY_HOST;
    const std::size_t ptr_bytes = static_cast<std::size_t>(R) * sizeof(float*);

    Exec ex(L.desc.device, host ? nullptr : st.stream);
    // The host data goes up in one copy: pointer arrays, input (host memory) and mask, in this order.
    float** h_ptrs = nullptr;
    float** c_ptrs = nullptr;
    float** carried_ptrs = nullptr;
    const float* input = host ? nullptr : st.input;
    float* staged_input = nullptr;
    uint8_t* mask = nullptr;
    float* states = nullptr;
    float* carried = nullptr;
    float* out = nullptr;
    std::size_t upload_bytes = 0, staged_bytes = 0;
    RunBuffers rb;
    auto carve = [&](Arena& a) {
      h_ptrs = a.take<float*>(R);
      if (s.lstm()) c_ptrs = a.take<float*>(R);
      carried_ptrs = a.take<float*>(R);
      if (host) staged_input = a.take<float>(R * F);
      if (st.mask) mask = a.take<uint8_t>(R);
      upload_bytes = a.size();
      if (host) out = a.take<float>(R * u);
      staged_bytes = a.size();
      states = a.take<float>(ns * R * u);
      carried = a.take<float>(R * u);
      rb = carve_run(a, s, R, 1, 1, false, Platform::kProjectionBudget);
    };
    Arena measure;
    carve(measure);
    char* base = static_cast<char*>(ex.scratch(measure.size()));
    Arena scratch(base);
    carve(scratch);
    if (host) input = staged_input;

    // Host data goes up in one copy and the output comes down in one, through the pinned block.
    char* staging = static_cast<char*>(ex.host_staging(staged_bytes));
    auto stage = [&](const void* dev, const void* src, std::size_t n) {
      host_copy(staging + (static_cast<const char*>(dev) - base), src, n);
    };
    stage(h_ptrs, st.h_rows, ptr_bytes);
    if (c_ptrs) stage(c_ptrs, st.c_rows, ptr_bytes);
    stage(carried_ptrs, st.carried_rows, ptr_bytes);
    if (host) stage(staged_input, st.input, static_cast<std::size_t>(R * F) * sizeof(float));
    if (mask) stage(mask, st.mask, static_cast<std::size_t>(R));
    ex.copy(base, staging, upload_bytes, Copy::h2d);

    float* c_block = s.lstm() ? states + R * u : nullptr;
    ex.for_each(R * u, MoveRows{h_ptrs, c_ptrs, carried_ptrs, states, c_block, carried, u, false});
    SequenceArgs a;
    const float* inputs[1] = {input};
    a.inputs = inputs;
    a.batch = R;
    a.timesteps = 1;
    a.mask = mask;
    a.zero_output_for_mask = st.zero_output_for_mask != 0;
    a.states = states;
    a.carried_in = carried;
    a.carried_out = carried;  // the step's output: it comes down from there
    run_sequence(ex, s, L.w, a, rb);
    ex.for_each(R * u, MoveRows{h_ptrs, c_ptrs, carried_ptrs, states, c_block, carried, u, true});
    const std::size_t out_bytes = static_cast<std::size_t>(R * u) * sizeof(float);
    if (!host) {
      ex.copy(st.output, carried, out_bytes, Copy::d2d);
      ex.sync();  // the staging block and the scratch are the thread's: free once the work is done
      return;
    }
    const bool direct_out = R * u >= (int64_t(1) << 18) && Exec::is_pinned(st.output);
    char* out_staged = staging + (reinterpret_cast<char*>(out) - base);
    ex.copy(direct_out ? static_cast<void*>(st.output) : out_staged, carried, out_bytes, Copy::d2h);
    ex.sync();
    if (!direct_out) host_copy(st.output, out_staged, out_bytes);
  }

  static int layer_step_rows(void* handle, const recur_gpu_step_rows* step, char* err, std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(handle && step, "layer_step_rows: null argument");
      step_rows_impl(*static_cast<const Layer*>(handle), *step);
    });
  }

  // ---- buffers ----------------------------------------------------------------------------

  static int buffer_alloc(int32_t device, int64_t floats, void** out, char* err, std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(out != nullptr && floats >= 0, "buffer_alloc: bad argument");
      *out = nullptr;
      check_device(device);
      auto buf = std::make_unique<Buffer>();
      buf->device = device;
      buf->floats = floats;
      buf->block.p = Exec::alloc(device, static_cast<std::size_t>(floats) * sizeof(float));
      *out = buf.release();
    });
  }

  static void buffer_free(void* buffer) {
    try {
      delete static_cast<Buffer*>(buffer);
    } catch (...) {
      // As layer_destroy.
    }
  }

  static void check_range(const Buffer& b, int64_t offset, int64_t floats, const char* fn) {
    check(offset >= 0 && floats >= 0 && offset <= b.floats && floats <= b.floats - offset,
          std::string(fn) + ": range outside the buffer");
  }

  static int buffer_upload(void* buffer, int64_t offset, const float* src, int64_t floats, char* err,
                           std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(buffer && (src || floats == 0), "buffer_upload: null argument");
      Buffer& b = *static_cast<Buffer*>(buffer);
      check_range(b, offset, floats, "buffer_upload");
      if (floats == 0) return;
      Exec ex(b.device, nullptr);
      ex.copy(static_cast<float*>(b.block.p) + offset, src, static_cast<std::size_t>(floats) * sizeof(float),
              Copy::h2d);
      ex.sync();
    });
  }

  static int buffer_download(const void* buffer, int64_t offset, float* dst, int64_t floats, char* err,
                             std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(buffer && (dst || floats == 0), "buffer_download: null argument");
      const Buffer& b = *static_cast<const Buffer*>(buffer);
      check_range(b, offset, floats, "buffer_download");
      Exec ex(b.device, nullptr);
      if (floats > 0)
        ex.copy(dst, static_cast<const float*>(b.block.p) + offset, static_cast<std::size_t>(floats) * sizeof(float),
                Copy::d2h);
      ex.sync();  // also orders the model ops queued before it
    });
  }

  static float* buffer_device_pointer(void* buffer) {
    return buffer ? static_cast<float*>(static_cast<Buffer*>(buffer)->block.p) : nullptr;
  }

  // ---- model ops --------------------------------------------------------------------------

  static void check_activation(int32_t act, int32_t hs) {
    check(act >= 0 && act < kActCount, "unknown activation code");
    check(hs >= 0 && hs < kHardSigmoidFormCount, "unknown hard_sigmoid variant");
  }

  static int dense(int32_t device, const float* x, int64_t rows, int64_t in, const float* w, const float* b,
                   int64_t out, int32_t act, int32_t hs, float* y, char* err, std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(rows >= 0 && in >= 0 && out >= 0, "dense: negative size");
      check((x && w && y) || rows * out == 0, "dense: null argument");
      check_activation(act, hs);
      Exec ex(device, nullptr);
      ex.gemm(rows, out, in, x, in, w, out, y, out);
      activate_rows(ex, y, rows, out, act, hs, b);
    });
  }

  static int activate(int32_t device, float* data, int64_t rows, int64_t cols, int32_t act, int32_t hs, char* err,
                      std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(rows >= 0 && cols >= 0 && (data || rows * cols == 0), "activate: bad argument");
      check_activation(act, hs);
      Exec ex(device, nullptr);
      activate_rows(ex, data, rows, cols, act, hs, nullptr);
    });
  }

  static int gather_rows(int32_t device, const float* table, int64_t cols, const int32_t* host_ids, int64_t n,
                         float* out, char* err, std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(n >= 0 && cols >= 0, "gather_rows: negative size");
      if (n == 0 || cols == 0) return;
      check(table && host_ids && out, "gather_rows: null argument");
      Exec ex(device, nullptr);
      auto* ids = static_cast<int32_t*>(ex.scratch(static_cast<std::size_t>(n) * sizeof(int32_t)));
      ex.copy(ids, host_ids, static_cast<std::size_t>(n) * sizeof(int32_t), Copy::h2d);
      ex.for_each(n * cols, GatherIds{table, ids, out, cols});
    });
  }

  static int binary(int32_t device, int32_t op, const float* a, const float* b, int64_t n, float* out, char* err,
                    std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(op >= RECUR_GPU_OP_ADD && op <= RECUR_GPU_OP_MIN, "binary: unknown op");
      check(n >= 0 && ((a && b && out) || n == 0), "binary: bad argument");
      Exec ex(device, nullptr);
      ex.for_each(n, Binary{op, a, b, out});
    });
  }

  static int copy2d(int32_t device, const float* src, int64_t src_stride, float* dst, int64_t dst_stride, int64_t rows,
                    int64_t cols, char* err, std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(rows >= 0 && cols >= 0 && src_stride >= cols && dst_stride >= cols, "copy2d: bad sizes");
      check((src && dst) || rows * cols == 0, "copy2d: null argument");
      Exec ex(device, nullptr);
      ex.for_each(rows * cols, Copy2d{src, dst, src_stride, dst_stride, cols});
    });
  }

  static int copy_blocks(int32_t device, const float* const* src, float* const* dst, const int64_t* counts, int64_t n,
                         char* err, std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(n >= 0, "copy_blocks: negative block count");
      if (n == 0) return;
      check(src && dst && counts, "copy_blocks: null argument");
      // The blocks go up as one host array (pageable: the copy has read it when it returns):
      // sources, destinations, then the running totals.
      static_assert(sizeof(float*) == sizeof(int64_t), "device pointers travel as 64-bit words");
      std::vector<int64_t> up(static_cast<std::size_t>(3 * n + 1));
      int64_t k = 0, total = 0;
      for (int64_t i = 0; i < n; ++i) {
        check(counts[i] >= 0 && counts[i] <= (int64_t(1) << 40), "copy_blocks: a block size out of range");
        if (counts[i] == 0) continue;
        check(src[i] && dst[i], "copy_blocks: null block pointer");
        std::memcpy(&up[static_cast<std::size_t>(k)], &src[i], sizeof(int64_t));
        std::memcpy(&up[static_cast<std::size_t>(n + k)], &dst[i], sizeof(int64_t));
        up[static_cast<std::size_t>(2 * n + k)] = total;
        total += counts[i];
        ++k;
      }
      if (k == 0) return;
      up[static_cast<std::size_t>(2 * n + k)] = total;
      Exec ex(device, nullptr);
      auto* dev = static_cast<int64_t*>(ex.scratch(up.size() * sizeof(int64_t)));
      ex.copy(dev, up.data(), up.size() * sizeof(int64_t), Copy::h2d);
      ex.for_each(total, CopyBlocks{reinterpret_cast<const float* const*>(dev), reinterpret_cast<float* const*>(dev + n),
                                    dev + 2 * n, k});
    });
  }

  // ---- normalization and activation layers with arguments (implementations)

  static int normalize(int32_t device, int32_t kind, const float* x, int64_t batch, int64_t positions,
                       int64_t channels, int64_t groups, float epsilon, const float* gamma, const float* beta, float* y,
                       char* err, std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(kind >= RECUR_GPU_NORM_LAYER && kind <= RECUR_GPU_NORM_UNIT_KERAS2, "normalize: unknown kind");
      check(batch >= 0 && positions >= 0 && channels > 0 && groups > 0 && channels % groups == 0,
            "normalize: bad sizes");
      check(kind != RECUR_GPU_NORM_RMS || gamma, "normalize: RMS needs gamma");
      const int64_t n = batch * positions * channels;
      check((x && y) || n == 0, "normalize: null argument");
      if (n == 0) return;
      const NormLayout l{positions, channels, groups, channels / groups};
      const int64_t ng = batch * groups;
      Exec ex(device, nullptr);
      // Each group's statistics first (a serial loop, for the CPU's sums), then every element at once.
      auto* stats = static_cast<float*>(ex.scratch(static_cast<std::size_t>(2 * ng) * sizeof(float)));
      ex.for_each(ng, NormStats{x, stats, l, kind, epsilon});
      ex.for_each(n, NormApply{x, y, stats, gamma, beta, l, kind});
    });
  }

  static int broadcast_op(int32_t device, int32_t kind, const float* x, int32_t rank, const int64_t* dims,
                          const int64_t* strides, const float* p, const float* q, float* y, char* err,
                          std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(kind == RECUR_GPU_BCAST_AFFINE || kind == RECUR_GPU_BCAST_PRELU, "broadcast_op: unknown kind");
      check(rank >= 1 && rank <= kMaxBroadcastRank && dims && strides, "broadcast_op: bad rank");
      BroadcastOp f{x, y, p, q, {}, {}, rank, kind};
      int64_t n = 1;
      for (int32_t d = 0; d < rank; ++d) {
        check(dims[d] >= 0 && strides[d] >= 0, "broadcast_op: negative size or stride");
        f.dims[d] = dims[d];
        f.strides[d] = strides[d];
        n *= dims[d];
      }
      if (n == 0) return;
      check(x && y && p && (q || kind == RECUR_GPU_BCAST_PRELU), "broadcast_op: null argument");
      Exec ex(device, nullptr);
      ex.for_each(n, f);
    });
  }

  static int activate_args(int32_t device, int32_t kind, const float* x, int64_t n, float a, float b, float c,
                           int32_t flags, float* y, char* err, std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(kind >= RECUR_GPU_ACT_RELU && kind <= RECUR_GPU_ACT_THRESHOLDED, "activate_args: unknown kind");
      check((flags & ~RECUR_GPU_ACT_HAS_MAX) == 0, "activate_args: unknown flags");
      check(n >= 0 && ((x && y) || n == 0), "activate_args: bad argument");
      if (n == 0) return;
      Exec ex(device, nullptr);
      ex.for_each(n, ArgActivation{x, y, kind, flags, a, b, c});
    });
  }

  static int softmax_axis(int32_t device, const float* x, int64_t outer, int64_t n, int64_t inner, int32_t log_sum_exp,
                          const uint8_t* host_mask, int64_t mask_rows, int64_t mask_cols, int64_t last, int64_t prev,
                          int32_t mode, float* y, char* err, std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(outer >= 0 && n >= 0 && inner >= 0, "softmax_axis: negative size");
      check(mode >= RECUR_GPU_SOFTMAX_MASK_ADD && mode <= RECUR_GPU_SOFTMAX_MASK_REPLACE_ZERO,
            "softmax_axis: unknown mask mode");
      check(!host_mask || (last > 0 && prev > 0 && (mask_rows == 1 || mask_rows == prev) &&
                           (mask_cols == 1 || mask_cols == last)),
            "softmax_axis: the mask does not broadcast against the input");
      if (outer * n * inner == 0) return;
      check(x && y, "softmax_axis: null argument");
      Exec ex(device, nullptr);
      uint8_t* mask = nullptr;
      if (host_mask) {
        const auto bytes = static_cast<std::size_t>(mask_rows * mask_cols);
        mask = static_cast<uint8_t*>(ex.scratch(bytes));
        ex.copy(mask, host_mask, bytes, Copy::h2d);
      }
      ex.for_each(outer * inner,
                  SoftmaxAxis{x, y, mask, n, inner, mask_rows, mask_cols, last, prev, mode, log_sum_exp != 0});
    });
  }

  // ---- end of normalization and activation layers (implementations)

  // ---- pooling, convolution, padding (implementations)
  static int pool1d(int32_t device, int32_t kind, const float* x, int64_t B, int64_t T, int64_t F, int32_t channels_first,
                    int64_t pool, int64_t strides, int64_t pad, int64_t To, const uint8_t* host_mask, int64_t mask_len,
                    float* y, char* err, std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(kind >= RECUR_GPU_POOL_MAX && kind <= RECUR_GPU_POOL_MASKED_SELECT, "pool1d: unknown kind");
      check(B >= 0 && T >= 0 && F >= 0 && To >= 0 && pool > 0 && strides > 0 && pad >= 0, "pool1d: bad sizes");
      const bool masked = kind == RECUR_GPU_POOL_MASKED_MULTIPLY || kind == RECUR_GPU_POOL_MASKED_SELECT;
      check(!masked || mask_len == T || mask_len == 1, "pool1d: mask_len must be steps or 1");
      const int64_t n = B * To * F;
      if (n == 0) return;
      check(x && y && (!masked || host_mask), "pool1d: null argument");
      Exec ex(device, nullptr);
      uint8_t* mask = nullptr;
      if (masked && B * mask_len > 0) {
        // The host mask goes up into the call's scratch first.
        const auto bytes = static_cast<std::size_t>(B * mask_len);
        mask = static_cast<uint8_t*>(ex.scratch(bytes));
        ex.copy(mask, host_mask, bytes, Copy::h2d);
      }
      ex.for_each(n, PoolTime{x, y, mask, T, F, To, pool, strides, pad, mask_len, kind, channels_first != 0});
    });
  }

  static int conv1d(int32_t device, const float* x, int64_t B, int64_t T, int64_t cin, const float* kernel, int64_t k,
                    int64_t groups, int64_t cout, const float* bias, int64_t strides, int64_t dilation, int64_t pad,
                    int64_t To, int32_t act, int32_t hs, float* y, char* err, std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(B >= 0 && T >= 0 && To >= 0 && k > 0 && groups > 0 && cin > 0 && cout > 0 && strides > 0 && dilation > 0 &&
                pad >= 0,
            "conv1d: bad sizes");
      check(cin % groups == 0 && cout % groups == 0, "conv1d: in_channels and out_channels must be multiples of groups");
      check_activation(act, hs);
      const int64_t n = B * To * cout;
      if (n == 0) return;
      check(x && kernel && y, "conv1d: null argument");
      Exec ex(device, nullptr);
      ex.for_each(n, Conv1dTime{x, kernel, bias, y, T, cin, cout, k, groups, strides, dilation, pad, To});
      activate_rows(ex, y, B * To, cout, act, hs, nullptr);  // the bias is in already, as the CPU adds it first
    });
  }

  static int conv1d_transpose(int32_t device, const float* x, int64_t B, int64_t T, int64_t cin, const float* kernel,
                              int64_t k, int64_t filters, const float* bias, int64_t strides, int64_t dilation,
                              int64_t pad, int64_t To, int32_t act, int32_t hs, float* y, char* err,
                              std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(B >= 0 && T >= 0 && To >= 0 && k > 0 && cin > 0 && filters > 0 && strides > 0 && dilation > 0 && pad >= 0,
            "conv1d_transpose: bad sizes");
      check_activation(act, hs);
      const int64_t n = B * To * filters;
      if (n == 0) return;
      check(x && kernel && y, "conv1d_transpose: null argument");
      Exec ex(device, nullptr);
      ex.for_each(n, Conv1dTransposeTime{x, kernel, bias, y, T, cin, filters, k, strides, dilation, pad, To});
      activate_rows(ex, y, B * To, filters, act, hs, nullptr);
    });
  }

  static int fill(int32_t device, float* y, int64_t n, float value, char* err, std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(n >= 0 && (y || n == 0), "fill: bad argument");
      if (n == 0) return;
      Exec ex(device, nullptr);
      ex.for_each(n, FillValue{y, value});
    });
  }
  // ---- end of pooling, convolution, padding (implementations)

  // ---- attention and tensor layers (implementations)
  static int project(int32_t device, const float* x, int64_t rows, int64_t c, const float* w, const float* b, int64_t n,
                     float* y, int64_t y_stride, char* err, std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(rows >= 0 && c >= 0 && n >= 0 && y_stride >= n, "project: bad sizes");
      if (rows * n == 0) return;
      check(y && (c == 0 || (x && w)), "project: null argument");
      Exec ex(device, nullptr);
      ex.for_each(rows * n, ProjectRows{x, w, b, y, c, n, y_stride});
    });
  }

  static int attention(int32_t device, const recur_gpu_attention* a, char* err, std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(a != nullptr, "attention: null argument");
      check(a->score >= RECUR_GPU_ATTN_DOT && a->score <= RECUR_GPU_ATTN_ADDITIVE, "attention: unknown score");
      check((a->flags & ~127) == 0, "attention: unknown flags");
      check(!(a->flags & RECUR_GPU_ATTN_CAUSAL_LAST) || ((a->flags & RECUR_GPU_ATTN_CAUSAL) && a->q_steps <= a->v_steps),
            "attention: CAUSAL_LAST needs CAUSAL and no more query steps than value steps");
      check(a->batch >= 0 && a->heads > 0 && a->q_steps >= 0 && a->v_steps >= 0 && a->key_dim >= 0 && a->value_dim >= 0,
            "attention: bad sizes");
      check(a->query_stride >= a->heads * a->key_dim && a->key_stride >= a->heads * a->key_dim &&
                a->value_stride >= a->heads * a->value_dim && a->output_stride >= a->heads * a->value_dim,
            "attention: a stride shorter than its rows");
      const int64_t rows = a->batch * a->heads * a->q_steps, logits = rows * a->v_steps;
      if (rows == 0) return;
      check(a->scores && a->output && (logits == 0 || (a->query && a->key && a->value)),
            "attention: null argument");
      check(a->score != RECUR_GPU_ATTN_ADDITIVE || a->feature_scale || a->key_dim == 0,
            "attention: ADDITIVE needs feature_scale");
      Exec ex(device, nullptr);
      // Both host masks go up in the call's one scratch block.
      const auto q_bytes = a->host_query_mask ? static_cast<std::size_t>(a->batch * a->q_steps) : 0;
      const auto v_bytes = a->host_value_mask ? static_cast<std::size_t>(a->batch * a->v_steps) : 0;
      AttentionCall call{*a, nullptr, nullptr};
      if (q_bytes + v_bytes) {
        auto* m = static_cast<uint8_t*>(ex.scratch(q_bytes + v_bytes));
        if (q_bytes) ex.copy(m, a->host_query_mask, q_bytes, Copy::h2d);
        if (v_bytes) ex.copy(m + q_bytes, a->host_value_mask, v_bytes, Copy::h2d);
        call.q_mask = q_bytes ? m : nullptr;
        call.v_mask = v_bytes ? m + q_bytes : nullptr;
      }
      if (logits) {
        ex.for_each(logits, AttentionLogits{call});
        ex.for_each(rows, AttentionSoftmax{call});
      }
      ex.for_each(a->batch * a->q_steps * a->heads * a->value_dim, AttentionOutput{call});
    });
  }

  static int gather_strided(int32_t device, const float* x, int64_t x_floats, int64_t offset, int32_t rank,
                            const int64_t* dims, const int64_t* strides, float* y, char* err, std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(rank >= 1 && rank <= kMaxStridedRank && dims && strides, "gather_strided: bad rank");
      GatherStrided f{x + offset, y, {}, {}, rank};
      int64_t n = 1, lo = offset, hi = offset;  // the lowest and highest offsets read
      for (int32_t d = 0; d < rank; ++d) {
        check(dims[d] >= 0, "gather_strided: a negative size");
        f.dims[d] = dims[d];
        f.strides[d] = strides[d];
        n *= dims[d];
        if (dims[d] > 0) (strides[d] < 0 ? lo : hi) += (dims[d] - 1) * strides[d];
      }
      if (n == 0) return;
      check(x && y, "gather_strided: null argument");
      check(lo >= 0 && hi < x_floats, "gather_strided: offsets outside the input");
      Exec ex(device, nullptr);
      ex.for_each(n, f);
    });
  }

  static int mask_rows(int32_t device, const float* x, int64_t rows, int64_t width, float value, float* y,
                       uint8_t* host_keep, char* err, std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(rows >= 0 && width >= 0, "mask_rows: bad sizes");
      if (rows == 0) return;
      check(host_keep && ((x && y) || width == 0), "mask_rows: null argument");
      Exec ex(device, nullptr);
      auto* keep = static_cast<uint8_t*>(ex.scratch(static_cast<std::size_t>(rows)));
      ex.for_each(rows, MaskRowFlags{x, keep, width, value});
      ex.for_each(rows * width, MaskRowValues{x, y, keep, width});
      ex.copy(host_keep, keep, static_cast<std::size_t>(rows), Copy::d2h);
      ex.sync();
    });
  }

  static int dot(int32_t device, const float* x, const float* y, int64_t batch, int64_t xo, int64_t k, int64_t xi,
                 int64_t yo, int64_t yi, float* out, char* err, std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(batch >= 0 && xo >= 0 && k >= 0 && xi >= 0 && yo >= 0 && yi >= 0, "dot: bad sizes");
      const int64_t n = batch * xo * xi * yo * yi;
      if (n == 0) return;
      check(out && (k == 0 || (x && y)), "dot: null argument");
      Exec ex(device, nullptr);
      ex.for_each(n, DotBatched{x, y, out, xo, k, xi, yo, yi});
    });
  }

  static int einsum(int32_t device, const float* x, const float* kernel, int32_t letters, int32_t out_letters,
                    const int64_t* sizes, const int64_t* x_strides, const int64_t* k_strides, const float* bias,
                    const int64_t* bias_strides, float* y, char* err, std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(letters >= 1 && letters <= Einsum::kMaxLetters && out_letters >= 0 && out_letters <= letters && sizes &&
                x_strides && k_strides && (!bias || bias_strides),
            "einsum: bad letters");
      Einsum f{x, kernel, bias, y, {}, {}, {}, {}, letters, out_letters, 1};
      int64_t n = 1;
      for (int32_t j = 0; j < letters; ++j) {
        check(sizes[j] >= 0 && x_strides[j] >= 0 && k_strides[j] >= 0, "einsum: a negative size or stride");
        f.size[j] = sizes[j], f.sx[j] = x_strides[j], f.sk[j] = k_strides[j];
        f.sb[j] = bias && j < out_letters ? bias_strides[j] : 0;
        if (j < out_letters) n *= sizes[j];
        else f.summed *= sizes[j];
      }
      if (n == 0) return;
      check(y && (f.summed == 0 || (x && kernel)), "einsum: null argument");
      Exec ex(device, nullptr);
      ex.for_each(n, f);
    });
  }
  // ---- end of attention and tensor layers (implementations)

  // ---- op nodes and merges (implementations)

  static int elementwise(int32_t device, const recur_gpu_elementwise* e, char* err, std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(e != nullptr, "elementwise: null argument");
      const int32_t n = e->num_inputs;
      check(n >= 1 && n <= ElementwiseFold::kMaxInputs, "elementwise: num_inputs out of range");
      check(e->op >= RECUR_GPU_OP_ADD && e->op <= RECUR_GPU_OP_COPY, "elementwise: unknown op");
      const bool unary = e->op >= RECUR_GPU_OP_LOGICAL_NOT;
      const bool pairwise = e->op >= RECUR_GPU_OP_NOT_EQUAL && e->op <= RECUR_GPU_OP_LOGICAL_XOR;
      check(unary ? n == 1 : pairwise ? n == 2 : n >= 2, "elementwise: the wrong number of inputs for the op");
      check(e->rank >= 1 && e->rank <= kMaxStridedRank && e->dims && e->strides && e->inputs && e->input_floats,
            "elementwise: bad rank or null argument");
      ElementwiseFold f{};
      f.rank = e->rank, f.n = n, f.op = e->op, f.out = e->out;
      int64_t total = 1;
      for (int32_t d = 0; d < e->rank; ++d) {
        check(e->dims[d] >= 0, "elementwise: a negative size");
        f.dims[d] = e->dims[d];
        total *= e->dims[d];
      }
      for (int32_t k = 0; k < n; ++k) {
        f.in[k] = e->inputs[k];
        int64_t hi = 0;  // the highest offset input k reads
        for (int32_t d = 0; d < e->rank; ++d) {
          const int64_t st = e->strides[k * e->rank + d];
          check(st >= 0, "elementwise: a negative stride");
          f.strides[k][d] = st;
          if (e->dims[d] > 0) hi += (e->dims[d] - 1) * st;
        }
        if (!e->inputs[k]) {
          check(e->constants != nullptr, "elementwise: a NULL input without constants");
          f.constant[k] = e->constants[k];
        } else {
          check(total == 0 || hi < e->input_floats[k], "elementwise: offsets outside an input");
        }
      }
      if (total == 0) return;
      check(e->out != nullptr, "elementwise: null output");
      Exec ex(device, nullptr);
      if (e->masks) {
        check(e->rank >= 3 && (e->op == RECUR_GPU_OP_MUL || e->op == RECUR_GPU_OP_MAX || e->op == RECUR_GPU_OP_MIN),
              "elementwise: masks need rank >= 3 and MUL, MAX or MIN");
        const int64_t bt = e->dims[0] * e->dims[1];
        int32_t count = 0;
        for (int32_t k = 0; k < n; ++k) count += e->masks[k] ? 1 : 0;
        auto* bytes = count ? static_cast<uint8_t*>(ex.scratch(static_cast<std::size_t>(count * bt))) : nullptr;
        for (int32_t k = 0, at = 0; k < n; ++k) {
          if (!e->masks[k]) continue;
          f.mask[k] = bytes + at * bt;
          ex.copy(bytes + at * bt, e->masks[k], static_cast<std::size_t>(bt), Copy::h2d);
          ++at;
        }
        f.masked = count > 0;
      }
      ex.for_each(total, f);
    });
  }

  static int reduce(int32_t device, int32_t kind, const float* x, int32_t rank, const int64_t* dims, uint32_t axes,
                    float* y, char* err, std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(kind >= RECUR_GPU_REDUCE_SUM && kind <= RECUR_GPU_REDUCE_ALL, "reduce: unknown kind");
      check(rank >= 1 && rank <= kMaxStridedRank && dims, "reduce: bad rank");
      check((axes >> rank) == 0, "reduce: an axis beyond the rank");
      Reduce f{x, y, {}, {}, {}, {}, 0, 0, kind, 1};
      int64_t out = 1, total = 1, stride[kMaxStridedRank];
      for (int32_t d = rank; d-- > 0;) {
        check(dims[d] >= 0, "reduce: a negative size");
        stride[d] = total;
        total *= dims[d];
      }
      // The kept and the reduced axes, each in order, with x's strides.
      for (int32_t d = 0; d < rank; ++d) {
        if (axes & (1u << d)) {
          f.red_size[f.reduced] = dims[d], f.red_stride[f.reduced++] = stride[d];
          f.count *= dims[d];
        } else {
          f.kept_size[f.kept] = dims[d], f.kept_stride[f.kept++] = stride[d];
          out *= dims[d];
        }
      }
      if (out == 0) return;
      check(y && (total == 0 || x), "reduce: null argument");
      Exec ex(device, nullptr);
      ex.for_each(out, f);
    });
  }
  // ---- end of op nodes and merges (implementations)

  static int probe(int32_t* count, char* err, std::size_t err_len) {
    return guarded(err, err_len, [&] {
      check(count != nullptr, "probe: null argument");
      *count = 0;
      std::string msg;
      const int rc = Platform::probe(count, msg);
      if (rc != RECUR_GPU_OK) fail(rc, msg);
    });
  }

  static int device_name(int32_t device, char* out, std::size_t out_len) {
    return guarded(out, out_len, [&] {
      check_device(device);
      write_message(out, out_len, Platform::device_name(device));
    });
  }

 public:
  static const recur_gpu_plugin* table(uint32_t core_abi_version, const char* build_id) {
    if (core_abi_version != RECUR_GPU_PLUGIN_ABI_VERSION) return nullptr;
    static const recur_gpu_plugin t = {
        RECUR_GPU_PLUGIN_ABI_VERSION,
        static_cast<uint32_t>(sizeof(recur_gpu_plugin)),
        build_id,
        Platform::kName,
        &probe,
        &device_name,
        &layer_create,
        &layer_set_weights,
        &layer_run,
        &layer_destroy,
        &buffer_alloc,
        &buffer_free,
        &buffer_upload,
        &buffer_download,
        &buffer_device_pointer,
        &layer_step_rows,
        &dense,
        &activate,
        &gather_rows,
        &binary,
        &copy2d,
        // ---- normalization and activation layers with arguments
        &normalize,
        &broadcast_op,
        &activate_args,
        &softmax_axis,
        // ---- end of normalization and activation layers
        // ---- pooling, convolution, padding
        &pool1d,
        &conv1d,
        &conv1d_transpose,
        &fill,
        // ---- end of pooling, convolution, padding
        &project,
        &attention,
        &gather_strided,
        &mask_rows,
        &dot,
        &einsum,
        &elementwise,
        &reduce,
        &copy_blocks,
    };
    return &t;
  }
};

}  // namespace recur::gpu
