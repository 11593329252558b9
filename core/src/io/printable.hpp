// Quoting what an input holds in a message: safe to print and of bounded length, however large or
// hostile the input (a layer entry whose "units" is a list of a million numbers must not become a
// message of megabytes).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <cstddef>
#include <string>

namespace recur::io {

// A byte string made printable (non-UTF-8 and control bytes become \xNN); one longer than max_bytes
// is cut to at most max_bytes, and "..." follows.
std::string printable(const std::string& s, std::size_t max_bytes = 400);

// A JSON value as it would be written, made printable and cut the same way.
std::string excerpt(const nlohmann::json& v);

}  // namespace recur::io
