#!/usr/bin/env bash
# Every test: install what is missing, build (with the GPU plugin when the CUDA toolkit and cuDNN
# are present), run the whole suite with ctest, then build again with AddressSanitizer +
# UndefinedBehaviorSanitizer and run the suite there too, and (with clang) each fuzz target for 20 s.
# GPU tests skip, saying why, without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DRECUR_BUILD_TESTS=ON
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs")

if [[ "${RECUR_SKIP_SANITIZERS:-0}" != 1 ]]; then
  # The CUDA plugin is left out here: its host code is the same source as the GPU emulator's,
  # which this build does sanitize, and its device code cannot run without a GPU.
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DRECUR_SANITIZE=ON -DRECUR_BUILD_TESTS=ON -DRECUR_BUILD_CUDA=OFF
  cmake --build build-asan -j"$jobs"
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j"$jobs")
fi

# A short run of every fuzz target (libFuzzer needs clang): any crash, leak, hang or OOM fails.
if command -v clang++ >/dev/null && [[ "${RECUR_SKIP_FUZZ:-0}" != 1 ]]; then
  scripts/fuzz.sh --ci
fi
