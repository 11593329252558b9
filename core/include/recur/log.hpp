// SPDX-License-Identifier: Apache-2.0
// What recur decided and why (kernel set, device routes, fallbacks, model summaries, limits),
// reported to one process-wide sink the application installs. Messages are only built when a
// sink wants their level, so an unlogged decision costs one relaxed atomic load.
#pragma once

#include <sstream>
#include <string>

namespace recur::log {

enum class Level : int { debug = 0, info = 1, warning = 2, error = 3 };

using Sink = void (*)(void* user_data, int level, const char* message);

// Installs `sink` (null: logging off) for messages at `min_level` and above. When it returns, no
// call of the previous sink is running or will start. Must not be called from inside a sink.
void set_sink(Sink sink, void* user_data, int min_level);
bool enabled(Level level) noexcept;
void emit(Level level, const std::string& message);

template <typename... Parts>
void write(Level level, const Parts&... parts) {
  if (!enabled(level)) return;
  std::ostringstream os;
  (os << ... << parts);
  emit(level, os.str());
}

}  // namespace recur::log
