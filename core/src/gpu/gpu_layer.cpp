// SPDX-License-Identifier: Apache-2.0
#include "gpu/gpu_layer.hpp"

#include <cstring>
#include <string>

#include "recur/error.hpp"

namespace recur::gpu {
namespace {

std::string layer_label(const LayerConfig& c) {
  return std::string(kind_name(c.kind)) + (c.name.empty() ? "" : " '" + c.name + "'");
}

}  // namespace

// ----- DeviceState -----

DeviceState::DeviceState(int ordinal, int num_states, Index batch, int units)
    : buffer_(ordinal, (num_states + 1) * batch * units), num_states_(num_states), batch_(batch), units_(units) {}

void DeviceState::upload(const std::vector<RowMatrix>& tensors, const RowMatrix& carried) {
  const std::int64_t each = batch_ * units_;
  for (int s = 0; s < num_states_; ++s) buffer_.upload(s * each, tensors[static_cast<std::size_t>(s)].data(), each);
  if (carried.rows() == batch_ && carried.cols() == units_) {
    buffer_.upload(num_states_ * each, carried.data(), each);
  } else {
    const std::vector<float> zeros(static_cast<std::size_t>(each), 0.0f);
    buffer_.upload(num_states_ * each, zeros.data(), each);
  }
}

void DeviceState::download(std::vector<RowMatrix>& tensors, RowMatrix& carried) const {
  const std::int64_t each = batch_ * units_;
  for (int s = 0; s < num_states_; ++s) buffer_.download(s * each, tensors[static_cast<std::size_t>(s)].data(), each);
  carried.resize(batch_, units_);
  buffer_.download(num_states_ * each, carried.data(), each);
}

void DeviceState::download_states(float* out) const { buffer_.download(0, out, num_states_ * batch_ * units_); }

void DeviceState::upload_states(const float* in) {
  const std::int64_t each = batch_ * units_;
  buffer_.upload(0, in, num_states_ * each);
  const std::vector<float> zeros(static_cast<std::size_t>(each), 0.0f);
  buffer_.upload(num_states_ * each, zeros.data(), each);
}

void DeviceState::zero() {
  const std::vector<float> zeros(static_cast<std::size_t>((num_states_ + 1) * batch_ * units_), 0.0f);
  buffer_.upload(0, zeros.data(), static_cast<std::int64_t>(zeros.size()));
}

// ----- GpuLayer -----

GpuLayer::GpuLayer(const LayerConfig& c, int ordinal)
    : config_(c), ordinal_(ordinal), table_(&require_device(ordinal)), path_(choose_path(c)) {
  recur_gpu_layer_desc d{};
  d.device = ordinal;
  d.cell = c.is_simple_rnn() ? RECUR_GPU_CELL_SIMPLE_RNN : (c.is_gru() ? RECUR_GPU_CELL_GRU : RECUR_GPU_CELL_LSTM);
  d.units = c.units;
  d.input_size = c.input_size;
  d.reset_after = c.is_gru() && c.reset_after ? 1 : 0;
  d.use_bias = c.use_bias ? 1 : 0;
  // Mirrors Cell: the LSTM implementation-2 bias (and CuDNNLSTM's) is added after x@K + h@U.
  d.bias_in_projection =
      c.use_bias && (!c.is_lstm() || c.effective_implementation() == 1) && c.kind != LayerKind::cudnn_lstm;
  d.activation = static_cast<std::int32_t>(c.activation.kind);
  d.activation_hard_sigmoid = static_cast<std::int32_t>(c.activation.hard_sigmoid);
  d.recurrent_activation = static_cast<std::int32_t>(c.recurrent_activation.kind);
  d.recurrent_activation_hard_sigmoid = static_cast<std::int32_t>(c.recurrent_activation.hard_sigmoid);
  d.cudnn_capable = path_.cudnn ? 1 : 0;
  char err[512] = {0};
  const int rc = table_->layer_create(&d, &handle_, err, sizeof err);
  if (rc != RECUR_GPU_OK) {
    handle_ = nullptr;
    raise(rc, err, "creating " + layer_label(c) + " on cuda:" + std::to_string(ordinal));
  }
}

GpuLayer::~GpuLayer() {
  if (handle_) table_->layer_destroy(handle_);
}

void GpuLayer::upload(const CellParams& p) {
  recur_gpu_weights w{};
  w.kernel = p.kernel.data();
  w.recurrent = p.recurrent.data();
  w.input_bias = p.input_bias.size() ? p.input_bias.data() : nullptr;
  w.recurrent_bias = p.recurrent_bias.size() ? p.recurrent_bias.data() : nullptr;
  CudnnWeights packed;
  if (path_.cudnn) {
    packed = pack_cudnn_weights(config_, p);
    w.cudnn_params = packed.params.data();
    w.cudnn_params_len = static_cast<std::int64_t>(packed.params.size());
    w.regions = packed.regions.data();
    w.num_regions = static_cast<std::int32_t>(packed.regions.size());
  }
  char err[512] = {0};
  const int rc = table_->layer_set_weights(handle_, &w, err, sizeof err);
  if (rc != RECUR_GPU_OK) raise(rc, err, "uploading the weights of " + layer_label(config_));
}

// The run `job` asks for: its shape, masking rules and inputs count, and the route its mask plans
// (kept in `plan`, which must outlive the run). Memory, pointers and states are the caller's.
recur_gpu_run GpuLayer::run_of(const SequenceJob& job, MaskPlan& plan) const {
  recur_gpu_run run{};
  run.batch = job.batch;
  run.timesteps = job.timesteps;
  run.time_major = job.time_major;
  run.go_backwards = job.go_backwards;
  run.zero_output_for_mask = job.zero_output_for_mask;
  run.unrolled_mask_quirk = job.unrolled_mask_quirk;
  run.num_inputs = job.num_inputs;
  plan = plan_mask(job.mask, job.batch, job.timesteps, config_.time_major);
  const CallRoute route = choose_call_route(path_, job.timesteps, &plan, job.num_inputs > 1,
                                            job.recurrent_masks != nullptr, job.unrolled_mask_quirk && job.mask);
  run.route = route.cudnn ? RECUR_GPU_ROUTE_CUDNN : RECUR_GPU_ROUTE_KERNEL;
  // cuDNN takes lengths, not masks; the kernels take the mask as it is.
  run.mask = route.cudnn ? nullptr : job.mask;
  run.lengths = route.lengths ? route.lengths->data() : nullptr;
  return run;
}

// Keras 3 on JAX: a masked step repeats h itself, so the output a run carries in is its initial h
// (the states' first plane; no states are zeros, as that output is then).
static void carry_initial_h(recur_gpu_run& run, const SequenceJob& job) {
  if (job.output_starts_at_state) run.carried_in = run.states;
}

void GpuLayer::call(const recur_gpu_run& run) const {
  char err[512] = {0};
  const int rc = table_->layer_run(handle_, &run, err, sizeof err);
  if (rc != RECUR_GPU_OK) raise(rc, err, "running " + layer_label(config_) + " on cuda:" + std::to_string(ordinal_));
}

void GpuLayer::run_job(const SequenceJob& job, DeviceState* resident) const {
  const Index B = job.batch, u = config_.units;
  const int ns = config_.num_states();
  MaskPlan plan;
  recur_gpu_run run = run_of(job, plan);
  std::vector<float> recurrent_masks;
  if (job.recurrent_masks) {
    for (const auto& m : *job.recurrent_masks) recurrent_masks.insert(recurrent_masks.end(), m.data(), m.data() + m.size());
    run.recurrent_masks = recurrent_masks.data();
  }
  if (resident) {
    // States stay on the device; the plugin takes the inputs up and the outputs down in one copy
    // each.
    run.memory = RECUR_GPU_MEMORY_HOST;
    run.states_on_device = 1;
    run.inputs = job.inputs;
    run.sequence_output = job.sequence_output;
    run.last_output = job.sequence_output ? nullptr : job.last_output;
    run.states = resident->states();
    run.carried_in = resident->carried();
    run.carried_out = resident->carried();
    carry_initial_h(run, job);
    call(run);
    return;
  }

  run.memory = RECUR_GPU_MEMORY_HOST;
  run.inputs = job.inputs;
  std::vector<float> states(static_cast<std::size_t>(ns * B * u));
  for (int s = 0; s < ns; ++s)
    std::memcpy(states.data() + s * B * u, job.states[s].data(), static_cast<std::size_t>(B * u) * sizeof(float));
  run.states = states.data();
  const bool carries = job.carried_output && job.carried_output->rows() == B && job.carried_output->cols() == u;
  RowMatrix carried_out;
  if (carries) run.carried_in = job.carried_output->data();
  if (job.carried_output) {
    carried_out.resize(B, u);
    run.carried_out = carried_out.data();
  }
  carry_initial_h(run, job);
  run.sequence_output = job.sequence_output;
  run.last_output = job.last_output;
  call(run);
  for (int s = 0; s < ns; ++s)
    std::memcpy(job.states[s].data(), states.data() + s * B * u, static_cast<std::size_t>(B * u) * sizeof(float));
  if (job.carried_output) *job.carried_output = std::move(carried_out);
}

// A run on caller-held device buffers (one input).
recur_gpu_run GpuLayer::device_run(void* stream, const SequenceJob& job, const float* const* inputs,
                                   MaskPlan& plan) const {
  recur_gpu_run run = run_of(job, plan);
  run.memory = RECUR_GPU_MEMORY_DEVICE;
  run.stream = stream;
  run.inputs = inputs;
  return run;
}

void GpuLayer::run_device(void* stream, const SequenceJob& job, const float* d_input, float* d_states,
                          float* d_sequence_output, float* d_last_output) const {
  const float* inputs[1] = {d_input};
  MaskPlan plan;
  recur_gpu_run run = device_run(stream, job, inputs, plan);
  run.states = d_states;
  carry_initial_h(run, job);
  run.sequence_output = d_sequence_output;
  run.last_output = d_last_output;
  call(run);
}

void GpuLayer::run_device_resident(const SequenceJob& job, const float* d_input, const DeviceState& resident,
                                   float* d_sequence_output, float* d_last_output, void* stream) const {
  const float* inputs[1] = {d_input};
  MaskPlan plan;
  recur_gpu_run run = device_run(stream, job, inputs, plan);
  run.states = resident.states();
  run.carried_in = resident.carried();
  run.carried_out = resident.carried();
  carry_initial_h(run, job);
  run.sequence_output = d_sequence_output;
  run.last_output = d_last_output;
  call(run);
}

void GpuLayer::step_rows(const recur_gpu_step_rows& step) const {
  char err[512] = {0};
  const int rc = table_->layer_step_rows(handle_, &step, err, sizeof err);
  if (rc != RECUR_GPU_OK)
    raise(rc, err, "stepping " + std::to_string(step.rows) + " streams of " + layer_label(config_) + " on cuda:" +
                       std::to_string(ordinal_));
}

// ----- GpuBackend -----

void GpuBackend::run_sequence(const Cell&, const SequenceJob& job, SequenceWorkspace&) const {
  layer_.run_job(job, nullptr);
}

}  // namespace recur::gpu
