// SPDX-License-Identifier: Apache-2.0
// A main for the fuzz targets without libFuzzer (any compiler): every file under the given paths
// (directories are walked, recursively, in name order) goes through LLVMFuzzerTestOneInput once.
// The ctest replays of tests/fuzz/regressions and tests/fuzz/corpus run through it. As a stand-in
// for libFuzzer's -rss_limit_mb / -malloc_limit_mb, a process that grows past
// RECUR_REPLAY_RSS_LIMIT_MB (1024) fails, naming the input that made it grow.
#include <algorithm>
#include <sys/resource.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const fs::path p = argv[i];
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      for (const auto& e : fs::recursive_directory_iterator(p))
        if (e.is_regular_file() && e.path().filename().string()[0] != '.') files.push_back(e.path());
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      std::fprintf(stderr, "replay: %s: no such file or directory\n", argv[i]);
      return 2;
    }
  }
  std::sort(files.begin(), files.end());
  const char* limit_env = std::getenv("RECUR_REPLAY_RSS_LIMIT_MB");
  const long limit_kb = (limit_env ? std::atol(limit_env) : 1024) * 1024;
  const auto start = std::chrono::steady_clock::now();
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "replay: %s: read error\n", f.c_str());
      return 2;
    }
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", f.c_str(), bytes.size());
    // A copy of exactly the file's size, as libFuzzer passes it: reads past the end are caught.
    std::vector<std::uint8_t> exact(bytes.begin(), bytes.end());
    LLVMFuzzerTestOneInput(exact.empty() ? nullptr : exact.data(), exact.size());
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0 && limit_kb > 0 && ru.ru_maxrss > limit_kb) {
      std::fprintf(stderr, "replay: %s: the process grew to %ld MB, over the %ld MB limit\n", f.c_str(),
                   ru.ru_maxrss / 1024, limit_kb / 1024);
      return 1;
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("replay: %zu inputs in %.2f s\n", files.size(), s);
  return 0;
}
