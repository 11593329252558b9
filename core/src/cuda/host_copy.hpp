// SPDX-License-Identifier: Apache-2.0
// Copies between a caller's host arrays and the plugin's pinned staging block.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <system_error>
#include <thread>
#include <vector>

namespace recur::gpu {

// memcpy, split over up to `threads` threads (0: half the cores, at most 8) when it is large:
// staging a call's host arrays through the pinned block is bound by one core's copy rate (a few
// GB/s), several times slower than the transfer that follows it.
inline void host_copy(void* dst, const void* src, std::size_t n, std::size_t threads = 0) {
  constexpr std::size_t kPerThread = std::size_t(2) << 20;
  if (threads == 0) threads = std::min<std::size_t>(std::max(1u, std::thread::hardware_concurrency()) / 2, 8);
  const std::size_t parts = std::min<std::size_t>(n / kPerThread, threads);
  if (parts < 2) {
    if (n) std::memcpy(dst, src, n);
    return;
  }
  const std::size_t step = (n / parts + 4095) / 4096 * 4096;
  std::vector<std::thread> workers;
  try {
    for (std::size_t at = step; at < n; at += step)
      workers.emplace_back([=] {
        std::memcpy(static_cast<char*>(dst) + at, static_cast<const char*>(src) + at, std::min(step, n - at));
      });
  } catch (const std::system_error&) {
    // No more threads: this one copies what is left.
    for (std::size_t at = step * (workers.size() + 1); at < n; at += step)
      std::memcpy(static_cast<char*>(dst) + at, static_cast<const char*>(src) + at, std::min(step, n - at));
  }
  std::memcpy(dst, src, std::min(step, n));
  for (auto& w : workers) w.join();
}

}  // namespace recur::gpu
