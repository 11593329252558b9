// SPDX-License-Identifier: Apache-2.0
// Which calls of a thread are replayed as CUDA graphs (cuda_exec.cuh), as host-only logic that the
// unit tests drive with a stand-in handle. A key seen for the first time runs as it is; seen again,
// it is captured; from then on it is replayed. The cache holds kGraphs graphs. When it is full, a
// new key is captured only if the least recently used graph has gone unused for kStale calls,
// which it then replaces: calls that take turns over more keys than the cache holds run as they are
// instead of capturing a graph each time (a capture costs several steps).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace recur::gpu {

template <class Handle>
class ReplayCache {
 public:
  static constexpr std::size_t kGraphs = 16, kSeen = 32;
  static constexpr uint64_t kStale = 256;

  enum class Action { run, capture, replay };
  struct Decision {
    Action action = Action::run;
    Handle handle{};
  };

  Decision decide(const std::vector<uint64_t>& key) {
    ++clock_;
    for (Entry& e : entries_) {
      if (e.key == key) {
        e.last_use = clock_;
        return {Action::replay, e.handle};
      }
    }
    const auto seen = std::find(seen_.begin(), seen_.end(), key);
    if (seen == seen_.end()) {
      if (seen_.size() >= kSeen) seen_.erase(seen_.begin());
      seen_.push_back(key);
      return {};
    }
    seen_.erase(seen);
    if (entries_.size() >= kGraphs && clock_ - oldest()->last_use < kStale) return {};
    return {Action::capture, Handle{}};
  }

  // Keeps a graph captured for `key` (after decide said capture); `destroy` gets the one it
  // replaces, if the cache was full.
  template <class Destroy>
  void store(std::vector<uint64_t> key, Handle handle, const Destroy& destroy) {
    if (entries_.size() >= kGraphs) {
      auto old = oldest();
      destroy(old->handle);
      entries_.erase(old);
    }
    entries_.push_back({std::move(key), handle, clock_});
  }

  template <class Destroy>
  void clear(const Destroy& destroy) {
    for (Entry& e : entries_) destroy(e.handle);
    entries_.clear();
    seen_.clear();
  }

  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::vector<uint64_t> key;
    Handle handle{};
    uint64_t last_use = 0;
  };
  typename std::vector<Entry>::iterator oldest() {
    return std::min_element(entries_.begin(), entries_.end(),
                            [](const Entry& a, const Entry& b) { return a.last_use < b.last_use; });
  }

  std::vector<Entry> entries_;
  std::vector<std::vector<uint64_t>> seen_;
  uint64_t clock_ = 0;
};

}  // namespace recur::gpu
