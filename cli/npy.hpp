// SPDX-License-Identifier: Apache-2.0
// Minimal .npy / .npz reading and writing for the recur command-line tool.
//
// read_npy accepts format versions 1, 2 and 3, C order only, and the dtypes
// <f4 <f8 <f2 <i1 <i2 <i4 <i8 <u1 <u2 <u4 <u8 |b1 |i1 |u1 (1-byte types with any byte-order
// character), all converted to float32; integer arrays also keep their exact values as int64.
// write_npy writes version 1.0 '<f4'. .npz archives are zip files whose members are
// "<name>.npy" (read: stored or deflated; write: stored).
// Every problem throws NpyError with a message that names the file and the problem.
#ifndef RECUR_CLI_NPY_HPP
#define RECUR_CLI_NPY_HPP

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace recur_cli {

class NpyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Array {
  std::vector<std::int64_t> shape;  // () for a scalar
  std::vector<float> data;          // row-major, product(shape) values
  std::string dtype;                // the dtype the file declared ("<f4" for written arrays)
  // Integer dtypes only: the exact values (token ids must not round through float32). A uint64
  // value above int64's range is not held: int_overflow is then the flat index of the first.
  std::vector<std::int64_t> ints;
  std::size_t int_overflow = static_cast<std::size_t>(-1);
  std::uint64_t int_overflow_value = 0;

  // A .txt of texts (read_text_lines): one string per element, UTF-8; data is empty.
  std::vector<std::string> texts;
  bool is_text = false;

  bool integer() const { return !ints.empty() || int_overflow != static_cast<std::size_t>(-1); }

  std::size_t size() const { return data.size(); }
};

// Largest header accepted (numpy itself refuses headers above 10000 bytes by default).
constexpr std::size_t kMaxNpyHeader = 64 * 1024;
// Largest .npz member read into memory.
constexpr std::uint64_t kMaxNpzMember = std::uint64_t(1) << 32;

// Parses .npy bytes; `name` is used in messages (a path or "archive.npz:member.npy").
Array parse_npy(const std::string& bytes, const std::string& name);
// Reads a .npy file.
Array read_npy(const std::string& path);
// Reads a .txt of texts for a string model input: one text per line ("\n" or "\r\n" ends a line;
// the last may lack it), shape (lines,). Refuses an empty file and text that is not UTF-8.
Array read_text_lines(const std::string& path);
// The .npy bytes of `a` (version 1.0, '<f4', C order, header padded to 64 bytes).
std::string encode_npy(const Array& a);
void write_npy(const std::string& path, const Array& a);

// Members in archive order; names without the ".npy" suffix.
using NamedArrays = std::vector<std::pair<std::string, Array>>;
NamedArrays read_npz(const std::string& path);
void write_npz(const std::string& path, const NamedArrays& arrays);

// numpy's name of a .npy dtype: "<f8" -> "float64", "|b1" -> "bool", "<i4" -> "int32".
std::string dtype_name(const std::string& descr);

// Whether the file starts like a zip archive (an .npz), whatever its name.
bool is_zip_file(const std::string& path);

// "(2, 3, 4)"
std::string shape_string(const std::vector<std::int64_t>& shape);

}  // namespace recur_cli

#endif
