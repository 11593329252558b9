// SPDX-License-Identifier: Apache-2.0
#include "recur/cancel.hpp"

#include <chrono>
#include <cmath>

#include "recur/error.hpp"

namespace recur {
namespace {
thread_local const std::atomic<bool>* tls_flag = nullptr;
thread_local std::int64_t tls_deadline = 0, tls_start = 0;
}  // namespace

std::int64_t steady_now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

CancelScope::CancelScope(const std::atomic<bool>* flag, double timeout_s) noexcept
    : previous_(tls_flag), previous_deadline_(tls_deadline), previous_start_(tls_start) {
  tls_flag = flag;
  if (timeout_s > 0 && std::isfinite(timeout_s)) {
    tls_start = steady_now_ns();
    // A timeout past ~292 years is none at all.
    const double ns = timeout_s * 1e9;
    const std::int64_t deadline = ns < 9e18 ? tls_start + static_cast<std::int64_t>(ns) : 0;
    // A nested call keeps the sooner of its own deadline and its caller's.
    tls_deadline = previous_deadline_ && (!deadline || previous_deadline_ < deadline) ? previous_deadline_ : deadline;
  }
}
CancelScope::~CancelScope() {
  tls_flag = previous_;
  tls_deadline = previous_deadline_;
  tls_start = previous_start_;
}

const std::atomic<bool>* cancel_flag() noexcept { return tls_flag; }
std::int64_t run_deadline_ns() noexcept { return tls_deadline; }

void throw_if_cancelled() {
  if (cancelled(tls_flag))
    fail(Error::Code::cancelled, "the run was cancelled (recur_run_options_cancel); nothing it would have changed has changed");
  if (past_deadline(tls_deadline)) {
    const double ran_ms = double(steady_now_ns() - tls_start) / 1e6, allowed_ms = double(tls_deadline - tls_start) / 1e6;
    fail(Error::Code::limit, "deadline passed after ", static_cast<long long>(ran_ms), " ms (the run's timeout is ",
         static_cast<long long>(allowed_ms), " ms; recur_run_options_set_timeout raises it); nothing it would have "
         "changed has changed");
  }
}

}  // namespace recur
