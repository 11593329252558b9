// SPDX-License-Identifier: Apache-2.0
// Process-wide resource limits. Every size that comes from a file, a JSON config or an argument
// is checked against them before anything is allocated, so a small hostile input cannot make recur
// take unbounded memory. They are generous for real models and can be raised (or lowered) at run
// time; a value over a limit is an Error with Code::limit that names the limit.
#pragma once

#include <cstdint>
#include <string>

namespace recur {

enum class Limit : int {
  units = 0,         // units of one recurrent layer
  batch = 1,         // batch of a stateful layer, a state or a model state
  state_bytes = 2,   // the states one stateful layer, state or model state holds; a cell's dropout masks
  weight_bytes = 3,  // the weights of one layer, or of all the layers of one model
  file_bytes = 4,    // a model file, or one member of a .keras archive
  tensor_bytes = 5,  // one tensor a model allocates while it runs
  // Budgets over the whole, not one thing at a time:
  total_state_bytes = 6,  // the states of all the stateful layers of one model, or of one model stream
  run_bytes = 7,          // the peak of the tensors live at once in one run or stream step, planned before it starts
  timesteps = 8,          // the timesteps one layer creates (RepeatVector n, UpSampling1D's output)
  init_work = 9,          // the work (multiply-adds) of one initializer that grows faster than its output (Orthogonal)
  run_work = 10,          // the work of one run or stream step (multiply-adds and elements), planned before it starts
};
constexpr int kNumLimits = 11;

std::uint64_t limit(Limit which);
std::uint64_t default_limit(Limit which);
// 0 restores the default.
void set_limit(Limit which, std::uint64_t value);
const char* limit_name(Limit which);  // "units", "batch", ...
Limit limit_from_int(int which);      // Error(invalid_argument) for an unknown one

// Throws Error(Code::limit) naming `what`, the amount and the limit when `amount` exceeds it.
// `amount` is a double so that products of hostile sizes cannot wrap around.
void check_limit(Limit which, double amount, const std::string& what);

}  // namespace recur
