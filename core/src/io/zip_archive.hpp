// SPDX-License-Identifier: Apache-2.0
// Read-only access to the members of a zip archive (a .keras file), with size limits checked
// before anything is inflated.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct zip;

namespace recur::io {

class ZipArchive {
 public:
  // Throws Error(io) naming the file if it is missing or not a zip archive.
  static ZipArchive open(const std::string& path);
  // An archive held in memory (kept alive by the archive); `display_name` is used in messages.
  static ZipArchive open_memory(std::shared_ptr<const std::vector<char>> bytes, const std::string& display_name);
  ZipArchive(ZipArchive&& other) noexcept;
  ZipArchive(const ZipArchive&) = delete;
  ZipArchive& operator=(const ZipArchive&) = delete;
  ZipArchive& operator=(ZipArchive&&) = delete;
  ~ZipArchive();

  bool contains(const std::string& member) const;
  // Reads a member whole; fails if it is missing, larger than `max_bytes`, or corrupt.
  std::vector<char> read(const std::string& member, std::uint64_t max_bytes) const;

 private:
  ZipArchive(zip* archive, std::string path) : archive_(archive), path_(std::move(path)) {}
  zip* archive_;
  std::string path_;
  std::shared_ptr<const std::vector<char>> bytes_;  // the image of an archive opened from memory
};

}  // namespace recur::io
