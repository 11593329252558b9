// SPDX-License-Identifier: Apache-2.0
#include "recur/log.hpp"

#include <atomic>
#include <mutex>
#include <shared_mutex>

#include "io/printable.hpp"

namespace recur::log {
namespace {

constexpr std::size_t kMaxLogBytes = 16384;

// Messages hold the sink's lock shared while it runs, so set_sink (exclusive) waits for running
// calls and the old sink is never called after set_sink returns.
struct Registry {
  std::shared_mutex mutex;
  Sink sink = nullptr;
  void* user_data = nullptr;
  std::atomic<int> min_level{1 << 20};  // above every level: off
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: messages may come during static destruction
  return *r;
}

}  // namespace

void set_sink(Sink sink, void* user_data, int min_level) {
  Registry& r = registry();
  std::unique_lock<std::shared_mutex> lock(r.mutex);
  r.sink = sink;
  r.user_data = user_data;
  r.min_level.store(sink ? min_level : 1 << 20, std::memory_order_relaxed);
}

bool enabled(Level level) noexcept {
  return static_cast<int>(level) >= registry().min_level.load(std::memory_order_relaxed);
}

void emit(Level level, const std::string& message) {
  Registry& r = registry();
  std::shared_lock<std::shared_mutex> lock(r.mutex);
  if (!r.sink || static_cast<int>(level) < r.min_level.load(std::memory_order_relaxed)) return;
  // Messages quote names from model files: escaped, so none reaches a terminal or log file raw.
  const std::string printable = io::printable(message, kMaxLogBytes);
  r.sink(r.user_data, static_cast<int>(level), printable.c_str());
}

}  // namespace recur::log
