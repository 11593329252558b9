// SPDX-License-Identifier: Apache-2.0
// Integers read from untrusted configs. A JSON number is checked before it narrows to int:
// converting a float outside int's range is undefined behaviour, and an integer outside it wraps
// (2^32 + 1 would pass as 1).
#pragma once

#include <nlohmann/json.hpp>
#include <cstdint>
#include <limits>
#include <vector>

namespace recur::io {

// v as an int, when it is an integer (not a float) in [lo, hi]; false for anything else. lo and
// hi lie within int's range.
inline bool int_in(const nlohmann::json& v, std::int64_t lo, std::int64_t hi, int& out) {
  if (!v.is_number_integer()) return false;
  std::int64_t i = 0;
  if (v.is_number_unsigned()) {
    const std::uint64_t u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return false;
    i = static_cast<std::int64_t>(u);
  } else {
    i = v.get<std::int64_t>();
  }
  if (i < lo || i > hi) return false;
  out = static_cast<int>(i);
  return true;
}

constexpr std::int64_t kIntMin = std::numeric_limits<int>::min();
constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();

// Keras's "an integer or a list of integers" (an axis argument), each within int's range; false
// for anything else, out then holds no promise.
inline bool int_or_ints(const nlohmann::json& v, std::vector<int>& out) {
  out.clear();
  if (!v.is_array()) return int_in(v, kIntMin, kIntMax, out.emplace_back());
  for (const auto& e : v)
    if (!int_in(e, kIntMin, kIntMax, out.emplace_back())) return false;
  return true;
}

}  // namespace recur::io
