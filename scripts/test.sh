#!/usr/bin/env bash
# Every test: install what is missing, build (with the GPU plugin when the CUDA toolkit and cuDNN
# are present), run the whole suite with ctest, then the packaging tests on that build
# (scripts/package-test.sh: installs and their consumers, the .deb packages), then scripts/cross.sh:
# the static library (with and without file support), ARM64 Linux (tests under qemu-aarch64) and
# Windows x64 (tests under wine64). Then build again with AddressSanitizer +
# UndefinedBehaviorSanitizer and run the suite there too, then the thread tests under
# ThreadSanitizer and (with clang) each fuzz target for 20 s. GPU tests skip, saying why, without
# a GPU. RECUR_SKIP_PACKAGES / RECUR_SKIP_STATIC / RECUR_SKIP_ARM64 / RECUR_SKIP_WINDOWS /
# RECUR_SKIP_SANITIZERS / RECUR_SKIP_TSAN / RECUR_SKIP_FUZZ=1 leave a step out.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${RECUR_SKIP_ARM64:-0}" == 1 && "${RECUR_SKIP_WINDOWS:-0}" == 1 ]]; then
  scripts/install-deps.sh
else
  scripts/install-deps.sh --cross
fi
jobs=$(nproc)

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DRECUR_BUILD_TESTS=ON
cmake --build build -j"$jobs"
(cd build && ctest --output-on-failure -j"$jobs")

if [[ "${RECUR_SKIP_PACKAGES:-0}" != 1 ]]; then
  # On the build above (nothing rebuilt): install into a scratch prefix and build and run the
  # C++, C, Java, C#, NuGet and Go consumers against it, then build the .deb packages, install
  # them with dpkg -i, use them and remove them (as root only). About a minute on 2 cores.
  scripts/package-test.sh build
fi

for step in static arm64 windows; do
  skip=RECUR_SKIP_${step^^}
  if [[ "${!skip:-0}" != 1 ]]; then
    start=$SECONDS
    scripts/cross.sh "$step"
    echo "cross.sh $step: $((SECONDS - start)) s"
  fi
done

if [[ "${RECUR_SKIP_SANITIZERS:-0}" != 1 ]]; then
  # The CUDA plugin is left out here: its host code is the same source as the GPU emulator's,
  # which this build does sanitize, and its device code cannot run without a GPU.
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DRECUR_SANITIZE=ON -DRECUR_BUILD_TESTS=ON -DRECUR_BUILD_CUDA=OFF
  cmake --build build-asan -j"$jobs"
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j"$jobs")
fi

if [[ "${RECUR_SKIP_TSAN:-0}" != 1 ]]; then
  # ThreadSanitizer over the C ABI's thread and stress tests: states stepping one layer and one
  # model from 16 threads, concurrent opens and destroys, per-thread errors, limits changing.
  cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRECUR_SANITIZE_THREAD=ON -DRECUR_BUILD_TESTS=ON \
        -DRECUR_BUILD_CUDA=OFF -DRECUR_BUILD_BINDINGS=OFF -DRECUR_BUILD_CLI=OFF -DRECUR_BUILD_EXAMPLES=OFF
  cmake --build build-tsan -j"$jobs" --target recur_c_api_tests
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp" \
    build-tsan/tests/recur_c_api_tests \
    --gtest_filter='CApiStress.*:CApiThreads.*:NumThreadsApi.*:Shapes/NumThreads.*:CApiGraph.Streams*'
fi

# A short run of every fuzz target (libFuzzer needs clang): any crash, leak, hang or OOM fails.
if command -v clang++ >/dev/null && [[ "${RECUR_SKIP_FUZZ:-0}" != 1 ]]; then
  scripts/fuzz.sh --ci
fi
