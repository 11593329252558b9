// SPDX-License-Identifier: Apache-2.0
// The model-file readers of a build without file support (RECUR_WITH_FILES=OFF): no libzip, no
// zlib, no HDF5 reader. The model loader refuses before it gets here (model.cpp); these bodies
// only satisfy the graph's weight-loading code, which is compiled either way and never reached.
#include "hdf5_file.hpp"
#include "recur/error.hpp"
#include "zip_archive.hpp"

namespace recur::io {
namespace {

[[noreturn]] void no_files(const std::string& name) {
  fail(Error::Code::unsupported, name, ": recur was built without model-file support (RECUR_WITH_FILES=OFF)");
}

}  // namespace

H5File H5File::open_path(const std::string& path) { no_files(path); }
H5File H5File::open_image(std::vector<char>, const std::string& display_name) { no_files(display_name); }
H5File::H5File(H5File&& other) noexcept = default;
H5File::~H5File() = default;
void H5File::fail_at(const std::string&, const std::string&) const { no_files(name_); }
bool H5File::exists(const std::string&) const { no_files(name_); }
bool H5File::is_group(const std::string&) const { no_files(name_); }
bool H5File::is_dataset(const std::string&) const { no_files(name_); }
std::vector<std::string> H5File::children(const std::string&) const { no_files(name_); }
bool H5File::has_attribute(const std::string&, const std::string&) const { no_files(name_); }
std::string H5File::attribute_string(const std::string&, const std::string&) const { no_files(name_); }
std::vector<std::string> H5File::attribute_strings(const std::string&, const std::string&) const { no_files(name_); }
std::vector<float> H5File::read_floats(const std::string&, std::vector<std::int64_t>&, std::uint64_t) const {
  no_files(name_);
}

ZipArchive ZipArchive::open(const std::string& path) { no_files(path); }
ZipArchive ZipArchive::open_memory(std::shared_ptr<const std::vector<char>>, const std::string& display_name) {
  no_files(display_name);
}
ZipArchive::ZipArchive(ZipArchive&& other) noexcept
    : archive_(other.archive_), path_(std::move(other.path_)), bytes_(std::move(other.bytes_)) {
  other.archive_ = nullptr;
}
ZipArchive::~ZipArchive() = default;
bool ZipArchive::contains(const std::string&) const { no_files(path_); }
std::vector<char> ZipArchive::read(const std::string&, std::uint64_t) const { no_files(path_); }

}  // namespace recur::io
