#include "recur/state.hpp"

#include <cstring>

#include "recur/error.hpp"

namespace recur {

State::State(int num_states, Index batch, int units) : batch_(batch), units_(units) {
  if (num_states < 1 || num_states > 2)
    fail(Error::Code::invalid_argument, "state: expected 1 or 2 state tensors, got ", num_states);
  if (batch <= 0) fail(Error::Code::invalid_argument, "batch: expected a positive batch size, got ", batch);
  if (units <= 0) fail(Error::Code::invalid_argument, "units: expected a positive integer, got ", units);
  tensors_.assign(static_cast<std::size_t>(num_states), RowMatrix::Zero(batch, units));
  carried_output_ = RowMatrix::Zero(batch, units);
}

void State::reset() {
  for (auto& t : tensors_) t.setZero();
  carried_output_.setZero();
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
}

}  // namespace recur
