// SPDX-License-Identifier: Apache-2.0
// Cancelling a run from another thread. The caller of a run installs its flag on the running
// thread with a CancelScope; the graph checks it between layers and the recurrent loop between
// timesteps, each check one relaxed atomic load. A cancelled run throws Error(Code::cancelled).
#pragma once

#include <atomic>

namespace recur {

class CancelScope {
 public:
  // `flag` (may be null: nothing to watch) must outlive the scope.
  explicit CancelScope(const std::atomic<bool>* flag) noexcept;
  ~CancelScope();
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

 private:
  const std::atomic<bool>* previous_;
};

// The flag this thread's run watches (null when none): the recurrent loop carries it into the
// worker threads of a multi-threaded layer.
const std::atomic<bool>* cancel_flag() noexcept;
inline bool cancelled(const std::atomic<bool>* flag) noexcept {
  return flag && flag->load(std::memory_order_relaxed);
}
// Throws Error(Code::cancelled) when this thread's run has been cancelled.
void throw_if_cancelled();

}  // namespace recur
