// SPDX-License-Identifier: Apache-2.0
// Read-only access to the parts of an HDF5 file that Keras writes: groups, string attributes and
// float datasets. recur's own reader for the subset of the format h5py and libhdf5 write (see
// docs/architecture.md): the whole file is held in memory and every read is checked against its
// size, so a corrupt or hostile file gives an Error, never a crash or a hang. Every failure is an
// Error(io) naming the file and the object path; sizes are checked before anything is allocated.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "printable.hpp"

namespace recur::io {

class H5File {
 public:
  // Opens a file on disk. Throws Error(io) if it is missing or not HDF5.
  static H5File open_path(const std::string& path);
  // Opens an HDF5 file held in memory (e.g. model.weights.h5 inside a .keras zip).
  // `display_name` is used in messages.
  static H5File open_image(std::vector<char> bytes, const std::string& display_name);

  H5File(H5File&& other) noexcept;
  H5File& operator=(H5File&&) = delete;
  H5File(const H5File&) = delete;
  ~H5File();

  const std::string& name() const { return name_; }

  bool exists(const std::string& path) const;  // "" or "/" is the root group
  bool is_group(const std::string& path) const;
  bool is_dataset(const std::string& path) const;
  std::vector<std::string> children(const std::string& group) const;  // in creation/name order

  bool has_attribute(const std::string& object, const std::string& attr) const;
  // A string attribute (fixed or variable length, scalar or one element).
  std::string attribute_string(const std::string& object, const std::string& attr) const;
  // A string-array attribute (h5py writes weight_names / layer_names this way); a scalar string
  // gives one element; an empty numeric array gives none.
  std::vector<std::string> attribute_strings(const std::string& object, const std::string& attr) const;

  // A float dataset of rank <= 5 (float32/float64/integers are converted to float32). A dataset
  // that declares more than `max_elements` values is rejected before anything is allocated.
  std::vector<float> read_floats(const std::string& path, std::vector<std::int64_t>& shape,
                                 std::uint64_t max_elements = std::uint64_t(1) << 28) const;

 private:
  struct Parser;  // the format reader (hdf5_file.cpp), one per call
  struct Cache;   // the groups' members, read once (hdf5_file.cpp)
  H5File(std::vector<char> bytes, std::string name, bool in_memory);
  [[noreturn]] void fail_at(const std::string& path, const std::string& problem) const;

  std::string name_;
  std::vector<char> bytes_;  // the whole file
  bool in_memory_ = false;   // an image: messages read "name:/path" instead of "name: /path"
  std::uint64_t base_ = 0;   // the superblock's base address: file addresses are relative to it
  std::uint64_t root_ = 0;   // the root group's object header
  int offset_size_ = 8;      // bytes in a file address
  int length_size_ = 8;      // bytes in a file length
  std::shared_ptr<Cache> cache_;
};

}  // namespace recur::io
