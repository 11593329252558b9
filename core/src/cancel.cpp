// SPDX-License-Identifier: Apache-2.0
#include "recur/cancel.hpp"

#include "recur/error.hpp"

namespace recur {
namespace {
thread_local const std::atomic<bool>* tls_flag = nullptr;
}  // namespace

CancelScope::CancelScope(const std::atomic<bool>* flag) noexcept : previous_(tls_flag) { tls_flag = flag; }
CancelScope::~CancelScope() { tls_flag = previous_; }

const std::atomic<bool>* cancel_flag() noexcept { return tls_flag; }

void throw_if_cancelled() {
  if (cancelled(tls_flag))
    fail(Error::Code::cancelled, "the run was cancelled (recur_run_options_cancel); nothing it would have changed has changed");
}

}  // namespace recur
