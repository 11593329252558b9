// SPDX-License-Identifier: Apache-2.0
// Quoting what an input holds in a message: safe to print and of bounded length, however large or
// hostile the input (a layer entry whose "units" is a list of a million numbers must not become a
// message of megabytes). `printable` is inline: the CLI's .npy reader quotes file contents with it
// too, without linking the library's internals.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <cstddef>
#include <cstdio>
#include <string>

namespace recur::io {

// The byte count a UTF-8 character starting with byte c claims (1 to 4), 0 for a byte no
// character starts with.
inline int utf8_lead_length(unsigned char c) {
  return c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
}

// The length of the valid UTF-8 character at s[0] (of n bytes), or 0 where none starts (overlong
// forms, surrogates and code points past U+10FFFF included, as Python and TensorFlow refuse them).
inline std::size_t utf8_char_at(const char* s, std::size_t n) {
  if (n == 0) return 0;
  const auto c = static_cast<unsigned char>(s[0]);
  const auto len = static_cast<std::size_t>(utf8_lead_length(c));
  if (len <= 1 || len > n) return len == 1 ? 1 : 0;
  unsigned long cp = c & (0x7F >> len);
  for (std::size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[k]);
    if ((b >> 6) != 0x2) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  const unsigned long least = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
  return cp < least || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) ? 0 : len;
}

// A byte string made printable (non-UTF-8 and control bytes become \xNN); one longer than max_bytes
// is cut to at most max_bytes, and "..." follows.
inline std::string printable(const std::string& s, std::size_t max_bytes = 400) {
  std::string out;
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int len = utf8_lead_length(c);
    bool valid = len > 0 && i + static_cast<std::size_t>(len) <= s.size();
    for (int k = 1; valid && k < len; ++k) valid = (static_cast<unsigned char>(s[i + k]) >> 6) == 0x2;
    const bool keep = valid && (c >= 0x20 || len > 1) && c != 0x7F;
    if (out.size() + (keep ? static_cast<std::size_t>(len) : 4) > max_bytes) {
      out += "...";  // never splits a character or an escape
      break;
    }
    if (keep) {
      out.append(s, i, static_cast<std::size_t>(len));
      i += static_cast<std::size_t>(len);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
      ++i;
    }
  }
  return out;
}

// The offset of the first byte of `s` that does not start valid UTF-8 (utf8_char_at), or npos.
inline std::size_t utf8_error_at(const char* s, std::size_t n) {
  for (std::size_t i = 0; i < n;) {
    const std::size_t len = utf8_char_at(s + i, n - i);
    if (len == 0) return i;
    i += len;
  }
  return std::string::npos;
}

// A JSON value as it would be written, made printable and cut the same way.
std::string excerpt(const nlohmann::json& v);

}  // namespace recur::io
