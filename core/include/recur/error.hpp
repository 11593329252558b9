// SPDX-License-Identifier: Apache-2.0
// Errors raised inside the core. The C ABI maps each Error::Code to a recur_status.
#pragma once

#include <cstddef>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace recur {

class Error : public std::runtime_error {
 public:
  enum class Code {
    invalid_argument,  // a value that is not allowed (unknown name, negative units, ...)
    shape,             // lengths or dimensions that do not agree
    unsupported,       // valid Keras, but not in this dialect or not implemented
    parse,             // malformed JSON
    state,             // the object cannot do this (not stateful, not a cell, ...)
    io,                // file access
    limit,             // over a resource limit (recur/limits.hpp)
    cancelled,         // the run's cancel flag was set (recur/cancel.hpp)
  };

  Error(Code code, std::string message) : std::runtime_error(std::move(message)), code_(code) {}
  Code code() const noexcept { return code_; }

 private:
  Code code_;
};

namespace detail {
// Messages quote names and values from the caller's input. However large or hostile that is, a
// message is printable (control and non-UTF-8 bytes become \xNN) and at most kMaxMessageBytes
// long (a longer one is cut there, and "..." follows).
constexpr std::size_t kMaxMessageBytes = 2048;
std::string bounded_message(const std::string& message);

inline void append(std::ostringstream&) {}
template <typename T, typename... Rest>
void append(std::ostringstream& os, const T& value, const Rest&... rest) {
  os << value;
  append(os, rest...);
}
}  // namespace detail

// Builds the message from its parts, so call sites read like the message itself.
template <typename... Parts>
[[noreturn]] void fail(Error::Code code, const Parts&... parts) {
  std::ostringstream os;
  detail::append(os, parts...);
  throw Error(code, detail::bounded_message(os.str()));
}

}  // namespace recur
