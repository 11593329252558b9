// SPDX-License-Identifier: Apache-2.0
// Cancelling a run from another thread, and a run's deadline. The caller of a run installs its
// flag (and deadline) on the running thread with a CancelScope; the graph checks them between
// layers and the recurrent loop between timesteps, each check one relaxed atomic load (and a
// clock read when a deadline is set). A cancelled run throws Error(Code::cancelled); one past its
// deadline Error(Code::limit).
#pragma once

#include <atomic>
#include <cstdint>

namespace recur {

// A steady-clock instant in nanoseconds; 0 is "no deadline".
std::int64_t steady_now_ns() noexcept;

class CancelScope {
 public:
  // `flag` (may be null: nothing to watch) must outlive the scope. `timeout_s` > 0 sets a
  // deadline that many seconds from now.
  explicit CancelScope(const std::atomic<bool>* flag, double timeout_s = 0) noexcept;
  ~CancelScope();
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

 private:
  const std::atomic<bool>* previous_;
  std::int64_t previous_deadline_, previous_start_;
};

// The flag this thread's run watches (null when none): the recurrent loop carries it into the
// worker threads of a multi-threaded layer.
const std::atomic<bool>* cancel_flag() noexcept;
// This thread's run's deadline (steady_now_ns() units; 0 when none), carried the same way.
std::int64_t run_deadline_ns() noexcept;
inline bool cancelled(const std::atomic<bool>* flag) noexcept {
  return flag && flag->load(std::memory_order_relaxed);
}
inline bool past_deadline(std::int64_t deadline_ns) noexcept { return deadline_ns && steady_now_ns() > deadline_ns; }
// Throws Error(Code::cancelled) when this thread's run has been cancelled, Error(Code::limit) when
// it has passed its deadline.
void throw_if_cancelled();

}  // namespace recur
