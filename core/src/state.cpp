// SPDX-License-Identifier: Apache-2.0
#include "recur/state.hpp"

#include <cstring>

#include "gpu/gpu_layer.hpp"
#include "recur/error.hpp"
#include "recur/limits.hpp"

namespace recur {

State::State(int num_states, Index batch, int units) : batch_(batch), units_(units) {
  if (num_states < 1 || num_states > 2)
    fail(Error::Code::invalid_argument, "state: expected 1 or 2 state tensors, got ", num_states);
  if (batch <= 0) fail(Error::Code::invalid_argument, "batch: expected a positive batch size, got ", batch);
  if (units <= 0) fail(Error::Code::invalid_argument, "units: expected a positive integer, got ", units);
  check_limit(Limit::batch, static_cast<double>(batch), "batch (state)");
  // The states and the carried output.
  check_limit(Limit::state_bytes, 4.0 * (num_states + 1) * static_cast<double>(batch) * units,
              "state: batch=" + std::to_string(batch) + " and units=" + std::to_string(units));
  tensors_.assign(static_cast<std::size_t>(num_states), RowMatrix::Zero(batch, units));
  carried_output_ = RowMatrix::Zero(batch, units);
}

State::~State() = default;
State::State(State&&) noexcept = default;
State& State::operator=(State&&) noexcept = default;

void State::reset() {
  for (auto& t : tensors_) t.setZero();
  carried_output_.setZero();
  if (device_) device_->zero();
}

Placement State::placement() const {
  Placement p;
  if (!device_) {
    p.reason = "the state is in host memory";
    return p;
  }
  p.requested = p.backend = "cuda:" + std::to_string(device_->ordinal());
  p.ordinal = device_->ordinal();
  p.path = "device-resident";
  p.reason = "stepped by a layer on " + p.backend + "; it stays there between calls";
  p.device_name = gpu::device_name(device_->ordinal());
  return p;
}

void State::set_device(const DeviceRequest& request) {
  int ordinal = -1;
  if (request.kind == DeviceRequest::Kind::cuda) {
    check_device(request);
    ordinal = request.ordinal;
  } else if (request.kind == DeviceRequest::Kind::automatic && gpu_device_count() > 0) {
    ordinal = 0;
  }
  if (ordinal < 0) {
    detach_device();
    return;
  }
  if (device_ && device_->ordinal() == ordinal) return;
  auto moved = std::make_unique<gpu::DeviceState>(ordinal, num_states(), batch_, units_);
  detach_device();
  attach_device(std::move(moved));
}

void State::attach_device(std::unique_ptr<gpu::DeviceState> device) {
  device->upload(tensors_, carried_output_);
  device_ = std::move(device);
}

void State::detach_device() {
  if (!device_) return;
  device_->download(tensors_, carried_output_);
  device_.reset();
}

bool State::lives_on(int ordinal) const { return ordinal >= 0 && device_ && device_->ordinal() == ordinal; }

gpu::DeviceState* State::resident_on(int ordinal, bool upload) {
  if (lives_on(ordinal)) return device_.get();
  // Allocated first: when the device has no room, the state stays where it was.
  auto d = std::make_unique<gpu::DeviceState>(ordinal, num_states(), batch_, units_);
  detach_device();
  if (upload) d->upload(tensors_, carried_output_);
  device_ = std::move(d);
  return device_.get();
}

void State::drop_device() { device_.reset(); }

void State::sync_to_host() {
  if (device_) device_->download(tensors_, carried_output_);
}

bool State::all_zero() const {
  for (const auto& t : tensors_)
    if ((t.array() != 0.0f).any()) return false;
  return true;
}

void State::get(float* out, std::size_t len) const {
  if (!out) fail(Error::Code::invalid_argument, "out: is NULL");
  if (len != static_cast<std::size_t>(size()))
    fail(Error::Code::shape, "out: expected ", size(), " floats (", num_states(), " state tensor(s) of shape (",
         batch_, ", ", units_, ")), got ", len);
  if (device_) {
    device_->download_states(out);
    return;
  }
  const std::size_t each = static_cast<std::size_t>(batch_ * units_);
  for (std::size_t i = 0; i < tensors_.size(); ++i)
    std::memcpy(out + i * each, tensors_[i].data(), each * sizeof(float));
}

void State::set(const float* in, std::size_t len, int num_given, const char* what) {
  if (num_given != num_states())
    fail(Error::Code::shape, what, ": expected ", num_states(), " state tensor(s) (", num_states() == 1 ? "h" : "h, c",
         "), but received ", num_given);
  if (!in) fail(Error::Code::invalid_argument, what, ": is NULL");
  if (len != static_cast<std::size_t>(size()))
    fail(Error::Code::shape, what, ": expected ", size(), " floats (", num_states(), " x (", batch_, ", ", units_,
         ")), got ", len);
  const std::size_t each = static_cast<std::size_t>(batch_ * units_);
  for (std::size_t i = 0; i < tensors_.size(); ++i)
    std::memcpy(tensors_[i].data(), in + i * each, each * sizeof(float));
  carried_output_.setZero();  // a new starting point begins a new stream
  if (device_) device_->upload_states(in);
}

}  // namespace recur
