// SPDX-License-Identifier: Apache-2.0
// The recur CLI's input readers (cli/npy.cpp). The first byte picks the reader: 2, the rest is a
// .txt of texts for a string input (read_text_lines, from a memory file); other even values, a
// .npy image (parse_npy); odd, a .npz archive read from a memory file (read_npz takes a path). An
// array that parses is encoded again and must parse back to the same values; texts must be UTF-8
// lines without line breaks or NULs, one per element.
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fuzz_common.hpp"
#include "io/printable.hpp"
#include "npy.hpp"

namespace {

void round_trip(const recur_cli::Array& a) {
  if (a.data.size() > (std::size_t(1) << 20)) return;
  const recur_cli::Array b = recur_cli::parse_npy(recur_cli::encode_npy(a), "round trip");
  if (b.shape != a.shape || b.data.size() != a.data.size() ||
      (!a.data.empty() && std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) != 0)) {
    std::fprintf(stderr, "fuzz_npy: an array did not survive encode_npy + parse_npy\n");
    std::abort();
  }
}

// A file name for the archive: a memory file, written afresh for every input.
std::string memory_file(const std::uint8_t* data, std::size_t size) {
  static int fd = memfd_create("fuzz.npz", 0);
  if (fd < 0) std::abort();
  if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) std::abort();
  return "/proc/self/fd/" + std::to_string(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  try {
    if (data[0] == 2) {
      const recur_cli::Array a = recur_cli::read_text_lines(memory_file(data + 1, size - 1));
      if (a.shape.size() != 1 || a.texts.size() != static_cast<std::size_t>(a.shape[0]) || !a.data.empty()) std::abort();
      for (const std::string& t : a.texts)
        if (t.find('\n') != std::string::npos || t.find('\0') != std::string::npos ||
            recur::io::utf8_error_at(t.data(), t.size()) != std::string::npos)
          std::abort();
    } else if ((data[0] & 1) == 0) {
      round_trip(recur_cli::parse_npy(std::string(reinterpret_cast<const char*>(data) + 1, size - 1), "fuzz.npy"));
    } else {
      for (const auto& named : recur_cli::read_npz(memory_file(data + 1, size - 1))) round_trip(named.second);
    }
  } catch (const recur_cli::NpyError& e) {
    recur_fuzz::check_message_text(e.what(), true);  // the CLI prints it
  }
  return 0;
}
