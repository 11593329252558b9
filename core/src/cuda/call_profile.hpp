// SPDX-License-Identifier: Apache-2.0
// RECUR_CUDA_PROFILE=1 (read once): where the time of the plugin's host-memory layer calls goes.
// Each such call records its host stages (checks and staging, enqueueing the device work, waiting
// for it, copying the results out) and, from CUDA events, its device stages (upload, compute,
// download); at exit the plugin prints the medians of each to stderr. Without the variable nothing
// is recorded and the calls create no events.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <vector>

#include "gpu_common.hpp"

namespace recur::gpu {

struct CallTimes {
  double prepare_us = 0.0;   // entry to the first device operation: checks, carving, staging copies
  double enqueue_us = 0.0;   // queueing the uploads, kernels and downloads
  double wait_us = 0.0;      // the synchronize
  double finish_us = 0.0;    // copying the results out of the staging block
  double device_us = -1.0;   // from the first device operation to the last, from events
  double upload_us = -1.0;   // device stages from events (-1: not measured; a replayed graph
  double compute_us = -1.0;  // has its total only)
  double download_us = -1.0;
  bool replayed = false;     // the call's device work was a replayed CUDA graph
};

class CallProfile {
 public:
  static bool on() {
    static const bool enabled = env_is("RECUR_CUDA_PROFILE", "1");
    return enabled;
  }

  static void add(const CallTimes& t) {
    CallProfile& p = instance();
    std::lock_guard<std::mutex> lock(p.mu_);
    if (p.calls_.size() < kMaxCalls) p.calls_.push_back(t);
  }

  ~CallProfile() {
    if (calls_.empty()) return;
    auto median = [&](double CallTimes::*field) {
      std::vector<double> v;
      for (const CallTimes& c : calls_)
        if (c.*field >= 0.0) v.push_back(c.*field);
      if (v.empty()) return -1.0;
      std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
      return v[v.size() / 2];
    };
    std::size_t replayed = 0;
    for (const CallTimes& c : calls_) replayed += c.replayed ? 1 : 0;
    char device[200] = "not measured (no device events)";
    if (median(&CallTimes::device_us) >= 0.0)
      std::snprintf(device, sizeof device, "%.1f in all", median(&CallTimes::device_us));
    // The stages of the calls queued op by op (a replayed graph has its device time whole).
    std::vector<CallTimes> eager;
    for (const CallTimes& c : calls_)
      if (!c.replayed && c.compute_us >= 0.0) eager.push_back(c);
    char stages[200] = "";
    if (!eager.empty()) {
      std::swap(eager, calls_);
      std::snprintf(stages, sizeof stages, " (the %zu calls queued op by op: upload %.1f, compute %.1f, download %.1f)",
                    calls_.size(), median(&CallTimes::upload_us), median(&CallTimes::compute_us),
                    median(&CallTimes::download_us));
      std::swap(eager, calls_);
    }
    std::fprintf(stderr,
                 "recur cuda profile: %zu host-memory layer calls (%zu replayed as CUDA graphs); medians in us: host "
                 "prepare %.1f, enqueue %.1f, wait %.1f, finish %.1f; device %s%s\n",
                 calls_.size(), replayed, median(&CallTimes::prepare_us), median(&CallTimes::enqueue_us),
                 median(&CallTimes::wait_us), median(&CallTimes::finish_us), device, stages);
  }

  using Clock = std::chrono::steady_clock;
  static double us(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::micro>(b - a).count();
  }

 private:
  static constexpr std::size_t kMaxCalls = 1 << 20;
  static CallProfile& instance() {
    static CallProfile p;
    return p;
  }
  std::mutex mu_;
  std::vector<CallTimes> calls_;
};

}  // namespace recur::gpu
