// SPDX-License-Identifier: Apache-2.0
// Little-endian byte writing and bounds-checked reading for model-stream snapshots
// (ModelStream::save/load). The reader never reads past its end and never allocates for a count
// before checking that the bytes left can hold it, so hostile snapshots fail with a message.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "recur/error.hpp"

namespace recur::snapshot {

// Floats go as their little-endian bit patterns: a plain copy on little-endian hosts.
inline bool little_endian() {
  const std::uint16_t one = 1;
  std::uint8_t first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

inline std::uint32_t crc32(const std::uint8_t* p, std::size_t n) {
  static const auto table = [] {
    std::vector<std::uint32_t> t(256);
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

class Writer {
 public:
  std::vector<std::uint8_t> bytes;
  void u8(std::uint8_t v) { bytes.push_back(v); }
  void u32(std::uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  void u64(std::uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  void str(const std::string& s) {
    u32(static_cast<std::uint32_t>(s.size()));
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  void floats(const float* p, std::size_t n) {
    if (little_endian()) {
      const std::size_t at = bytes.size();
      bytes.resize(at + 4 * n);
      if (n) std::memcpy(bytes.data() + at, p, 4 * n);
      return;
    }
    bytes.reserve(bytes.size() + 4 * n);
    for (std::size_t i = 0; i < n; ++i) {
      std::uint32_t b;
      std::memcpy(&b, p + i, 4);
      u32(b);
    }
  }
};

class Reader {
 public:
  Reader(const std::uint8_t* p, std::size_t n) : p_(p), n_(n) {}
  std::size_t left() const { return n_ - at_; }
  std::size_t at() const { return at_; }
  std::uint8_t u8(const char* what) {
    need(1, what);
    return p_[at_++];
  }
  std::uint32_t u32(const char* what) {
    need(4, what);
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(p_[at_ + i]) << (8 * i);
    at_ += 4;
    return v;
  }
  std::uint64_t u64(const char* what) {
    need(8, what);
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(p_[at_ + i]) << (8 * i);
    at_ += 8;
    return v;
  }
  std::int64_t i64(const char* what) { return static_cast<std::int64_t>(u64(what)); }
  std::string str(const char* what, std::size_t max_len) {
    const std::uint32_t n = u32(what);
    if (n > max_len) fail(Error::Code::invalid_argument, "model state snapshot: ", what, " is ", n, " bytes long, at most ", max_len, " expected: the data is corrupt");
    need(n, what);
    std::string s(reinterpret_cast<const char*>(p_ + at_), n);
    at_ += n;
    return s;
  }
  // `n` floats into `out` (resized): the bytes left are checked first.
  void floats(std::vector<float>& out, std::uint64_t n, const char* what) {
    if (n > left() / 4) truncated(what);
    out.resize(static_cast<std::size_t>(n));
    if (little_endian()) {
      if (n) std::memcpy(out.data(), p_ + at_, static_cast<std::size_t>(4 * n));
      at_ += static_cast<std::size_t>(4 * n);
      return;
    }
    for (std::size_t i = 0; i < out.size(); ++i) {
      const std::uint32_t b = u32(what);
      std::memcpy(&out[i], &b, 4);
    }
  }
  void floats(float* out, std::uint64_t n, const char* what) {
    if (n > left() / 4) truncated(what);
    if (little_endian()) {
      if (n) std::memcpy(out, p_ + at_, static_cast<std::size_t>(4 * n));
      at_ += static_cast<std::size_t>(4 * n);
      return;
    }
    for (std::uint64_t i = 0; i < n; ++i) {
      const std::uint32_t b = u32(what);
      std::memcpy(out + i, &b, 4);
    }
  }
  void bytes(std::vector<std::uint8_t>& out, std::uint64_t n, const char* what) {
    if (n > left()) truncated(what);
    out.assign(p_ + at_, p_ + at_ + n);
    at_ += static_cast<std::size_t>(n);
  }
  [[noreturn]] void truncated(const char* what) const {
    fail(Error::Code::invalid_argument, "model state snapshot: truncated: ", what, " runs past the end of the data (", n_,
         " bytes); pass every byte recur_model_state_save wrote");
  }

 private:
  void need(std::size_t k, const char* what) const {
    if (k > left()) truncated(what);
  }
  const std::uint8_t* p_;
  std::size_t n_;
  std::size_t at_ = 0;
};

}  // namespace recur::snapshot
