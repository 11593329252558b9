// SPDX-License-Identifier: Apache-2.0
// A layer's twin on a GPU: its weights uploaded through the plugin, the route its calls take,
// and the Backend that runs the core's sequence jobs there.
#pragma once

#include <cstdint>
#include <vector>

#include "gpu/runtime.hpp"
#include "recur/backend.hpp"
#include "recur/config.hpp"
#include "recur/gpu_plan.hpp"

namespace recur {
class State;
}

namespace recur::gpu {

// A State's tensors on the device, one buffer laid out [h | c | carried output], each (B, u).
class DeviceState {
 public:
  DeviceState(int ordinal, int num_states, Index batch, int units);
  int ordinal() const { return buffer_.ordinal(); }
  float* states() const { return buffer_.data(); }
  float* carried() const { return buffer_.data() + num_states_ * batch_ * units_; }
  void upload(const std::vector<RowMatrix>& tensors, const RowMatrix& carried);
  void download(std::vector<RowMatrix>& tensors, RowMatrix& carried) const;
  void download_states(float* out) const;  // ns x (B, u)
  void upload_states(const float* in);      // and zeroes the carried output
  void zero();

 private:
  DeviceBuffer buffer_;
  int num_states_;
  Index batch_;
  int units_;
};

class GpuLayer {
 public:
  GpuLayer(const LayerConfig& config, int ordinal);
  ~GpuLayer();
  GpuLayer(const GpuLayer&) = delete;
  GpuLayer& operator=(const GpuLayer&) = delete;

  int ordinal() const { return ordinal_; }
  const PathChoice& path() const { return path_; }
  const recur_gpu_plugin& table() const { return *table_; }
  void upload(const CellParams& params);

  // A core sequence job on host buffers, or (resident != null) with the states on the device.
  void run_job(const SequenceJob& job, DeviceState* resident) const;
  // Caller-held device buffers; states (ns x (B,u)) on the device, or null for zero states (the
  // final states are then dropped); carried output zero.
  // job carries the shape, the mask and the masking rules (Layer::sequence_job); its host
  // pointers are ignored.
  void run_device(void* stream, const SequenceJob& job, const float* d_input, float* d_states, float* d_sequence_output,
                  float* d_last_output) const;
  // The same with a stream's resident states (and carried output), in and out.
  void run_device_resident(const SequenceJob& job, const float* d_input, const DeviceState& resident,
                           float* d_sequence_output, float* d_last_output, void* stream) const;
  // One step for rows spread over resident states.
  void step_rows(const recur_gpu_step_rows& step) const;

 private:
  recur_gpu_run device_run(void* stream, const SequenceJob& job, const float* const* inputs, MaskPlan& plan) const;
  recur_gpu_run run_of(const SequenceJob& job, MaskPlan& plan) const;
  void call(const recur_gpu_run& run) const;

  const LayerConfig& config_;
  int ordinal_;
  const recur_gpu_plugin* table_;
  PathChoice path_;
  void* handle_ = nullptr;
};

// The Backend seam on a GPU: runs jobs with host buffers through the layer's twin.
class GpuBackend final : public Backend {
 public:
  explicit GpuBackend(const GpuLayer& layer) : layer_(layer) {}
  const char* name() const override { return "cuda"; }
  void run_sequence(const Cell& cell, const SequenceJob& job, SequenceWorkspace& ws) const override;

 private:
  const GpuLayer& layer_;
};

}  // namespace recur::gpu
