// SPDX-License-Identifier: Apache-2.0
// The recurrent state of a batch of streams (h, or h and c), with its own scratch space.
// A stateful layer owns one; callers may create any number and step them against one shared,
// read-only layer, each state used by one thread at a time.
#pragma once

#include <memory>
#include <vector>

#include "recur/backend.hpp"
#include "recur/device.hpp"
#include "recur/tensor.hpp"

namespace recur {

namespace gpu {
class DeviceState;
}

class State {
 public:
  State(int num_states, Index batch, int units);
  ~State();
  State(State&&) noexcept;
  State& operator=(State&&) noexcept;

  int num_states() const { return static_cast<int>(tensors_.size()); }
  Index batch() const { return batch_; }
  int units() const { return units_; }
  Index size() const { return static_cast<Index>(tensors_.size()) * batch_ * units_; }

  RowMatrix& tensor(int i) { return tensors_[static_cast<std::size_t>(i)]; }
  const RowMatrix& tensor(int i) const { return tensors_[static_cast<std::size_t>(i)]; }
  RowMatrix* tensors() { return tensors_.data(); }

  void reset();                            // all zeros
  bool all_zero() const;
  // Reads/writes all states concatenated: [h (B*u), c (B*u)].
  void get(float* out, std::size_t len) const;
  void set(const float* in, std::size_t len, int num_given, const char* what);

  SequenceWorkspace& workspace() { return workspace_; }

  // Device residency: while a GPU copy is current, the host tensors are stale and get/set/reset
  // go through it. The GPU runner owns the copy's layout.
  Placement placement() const;
  // Moves the tensors to a device ("cpu" brings them home). Throws Error(unsupported) when a GPU
  // cannot run; the state stays where it was.
  void set_device(const DeviceRequest& request);
  gpu::DeviceState* device_state() { return device_.get(); }
  // Whether a copy on GPU `ordinal` is current (false for ordinal < 0, the CPU).
  bool lives_on(int ordinal) const;
  void attach_device(std::unique_ptr<gpu::DeviceState> device);  // the copy becomes current
  void detach_device();                                           // downloads, then frees the copy
  // The copy on GPU `ordinal`, made first when the state lives elsewhere: from the current tensors
  // when `upload`, else unwritten (the caller fills all of it, or drops it with drop_device()).
  gpu::DeviceState* resident_on(int ordinal, bool upload = true);
  // Frees the copy without reading it back: the host tensors become current again.
  void drop_device();
  // Brings the host tensors up to date (a no-op on the CPU).
  void sync_to_host();
  // The last output of the stream (what a masked step repeats); zeros after reset() or set().
  RowMatrix& carried_output() { return carried_output_; }

 private:
  std::vector<RowMatrix> tensors_;
  Index batch_;
  int units_;
  SequenceWorkspace workspace_;
  RowMatrix carried_output_;
  std::unique_ptr<gpu::DeviceState> device_;
};

}  // namespace recur
