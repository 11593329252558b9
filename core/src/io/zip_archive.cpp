// SPDX-License-Identifier: Apache-2.0
#include "zip_archive.hpp"

#include <zip.h>

#include <algorithm>

#include "recur/error.hpp"

namespace recur::io {

ZipArchive ZipArchive::open(const std::string& path) {
  int err = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &err);
  if (!z) {
    zip_error_t e;
    zip_error_init_with_code(&e, err);
    const std::string why = zip_error_strerror(&e);
    zip_error_fini(&e);
    fail(Error::Code::io, path, ": not a readable zip archive (", why, ")");
  }
  return ZipArchive(z, path);
}

ZipArchive ZipArchive::open_memory(std::shared_ptr<const std::vector<char>> bytes, const std::string& display_name) {
  zip_error_t e;
  zip_error_init(&e);
  // The source reads the caller's buffer in place (freep 0): `bytes` outlives the archive.
  zip_source_t* src = zip_source_buffer_create(bytes->data(), bytes->size(), 0, &e);
  zip_t* z = src ? zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &e) : nullptr;
  if (!z) {
    const std::string why = zip_error_strerror(&e);
    zip_error_fini(&e);
    if (src) zip_source_free(src);
    fail(Error::Code::io, display_name, ": not a readable zip archive (", why, ")");
  }
  zip_error_fini(&e);
  ZipArchive a(z, display_name);
  a.bytes_ = std::move(bytes);
  return a;
}

ZipArchive::ZipArchive(ZipArchive&& other) noexcept
    : archive_(other.archive_), path_(std::move(other.path_)), bytes_(std::move(other.bytes_)) {
  other.archive_ = nullptr;
}

ZipArchive::~ZipArchive() {
  if (archive_) zip_discard(archive_);
}

bool ZipArchive::contains(const std::string& member) const {
  return zip_name_locate(archive_, member.c_str(), 0) >= 0;
}

std::vector<char> ZipArchive::read(const std::string& member, std::uint64_t max_bytes) const {
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat(archive_, member.c_str(), 0, &st) != 0)
    fail(Error::Code::io, path_, ": the archive has no member '", member, "'");
  if (!(st.valid & ZIP_STAT_SIZE)) fail(Error::Code::io, path_, ": ", member, ": unknown uncompressed size");
  if (st.size > max_bytes)
    fail(Error::Code::io, path_, ": ", member, ": declares ", st.size, " bytes, more than the ", max_bytes,
         " allowed");
  zip_file_t* f = zip_fopen(archive_, member.c_str(), 0);
  if (!f) fail(Error::Code::io, path_, ": ", member, ": cannot be opened (", zip_strerror(archive_), ")");
  // Grow the buffer as data really arrives: the declared size is only an upper bound, so a small
  // hostile archive cannot make recur allocate max_bytes up front.
  std::vector<char> data;
  std::uint64_t got = 0;
  while (got < st.size) {
    const std::uint64_t step = std::min<std::uint64_t>(st.size - got, std::uint64_t(1) << 20);
    data.resize(static_cast<std::size_t>(got + step));
    const zip_int64_t n = zip_fread(f, data.data() + got, step);
    if (n <= 0) break;
    got += static_cast<std::uint64_t>(n);
  }
  data.resize(static_cast<std::size_t>(got));
  // One more read must hit the end: a member longer than declared is corrupt.
  char extra = 0;
  const zip_int64_t tail = got == st.size ? zip_fread(f, &extra, 1) : -1;
  const std::string why = zip_file_strerror(f);
  zip_fclose(f);
  if (got != st.size && why == "No error")
    fail(Error::Code::io, path_, ": ", member, ": truncated or corrupt (it holds ", got, " bytes, its header declares ",
         st.size, ")");
  if (got != st.size || tail != 0)
    fail(Error::Code::io, path_, ": ", member, ": truncated or corrupt (", why, ")");
  return data;
}

}  // namespace recur::io
