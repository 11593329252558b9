#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The tests (docs/testing.md).
#
#   scripts/test.sh --quick   the Release build and its whole ctest suite: unit, C ABI, Keras layer
#                             and model parity (every CPU kernel set and the GPU emulator), CLI,
#                             examples, valgrind memcheck, fuzz-corpus replays, the Java, C#, Go and
#                             Python bindings (the Python wheel too, in a fresh venv), the Flink
#                             and Spark integrations (their jars from PyPI, fetched once); the
#                             GPU plugin only where an NVIDIA driver is present
#   scripts/test.sh           everything CI runs: the Release build with the bindings and the GPU
#                             plugin (when the CUDA toolkit and cuDNN are present) and its whole
#                             suite, then the packaging tests (scripts/package-test.sh), the cross
#                             builds (scripts/cross.sh static, arm64, windows; the static one with
#                             file support is the whole project built with clang in C++17), the
#                             suite again under AddressSanitizer + UndefinedBehaviorSanitizer, the
#                             thread tests under ThreadSanitizer, and (with clang) each fuzz target
#                             for 20 s
#
# Each pass's output is also kept in build-logs/<pass>.log. A failed pass does not stop the
# others; the last line counts the tests of every pass ("N passed, N failed": ctest's and gtest's
# counts, and one per fuzz target and per pass that has neither), and the exit status is non-zero
# when anything failed. GPU tests skip, saying why, without a GPU.
# Passes left out with =1: RECUR_SKIP_PACKAGES, RECUR_SKIP_STATIC, RECUR_SKIP_ARM64,
# RECUR_SKIP_WINDOWS, RECUR_SKIP_SANITIZERS, RECUR_SKIP_TSAN, RECUR_SKIP_FUZZ.
set -uo pipefail
cd "$(dirname "$0")/.."
quick=0
case "${1:-}" in
  --quick) quick=1 ;;
  "") ;;
  -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "test.sh: unknown argument '$1' (--quick, or nothing for every test)" >&2; exit 2 ;;
esac
skip() { local v=RECUR_SKIP_$1; [[ "${!v:-0}" == 1 ]]; }
jobs=$(nproc)
logs=$PWD/build-logs
mkdir -p "$logs"
begin=$SECONDS

passed=0 failed=0 failed_passes=()
# Runs one pass (a command, in a subshell with set -e), its output to the terminal and to
# build-logs/<name>.log, and adds its tests to the totals.
run_pass() {
  local name=$1
  shift
  local start=$SECONDS
  printf '\n=== %s\n' "$name"
  (set -e; "$@") 2>&1 | tee "$logs/$name.log"
  count_pass "$name" "${PIPESTATUS[0]}" $((SECONDS - start))
}
# The same in the background, its output to the log only, for a pass that leaves a core idle (one
# process at a time) beside one that builds; end_pass waits for it and prints its output.
declare -A bg_pid bg_start
start_pass() {
  local name=$1
  shift
  printf '\n=== %s (in the background, beside the next pass)\n' "$name"
  bg_start[$name]=$SECONDS
  (set -e; "$@") >"$logs/$name.log" 2>&1 &
  bg_pid[$name]=$!
}
end_pass() {
  local name=$1 rc=0
  wait "${bg_pid[$name]}" || rc=$?
  printf '\n=== %s\n' "$name"
  cat "$logs/$name.log"
  count_pass "$name" "$rc" $((SECONDS - bg_start[$name]))
}
# Counts a finished pass's tests from its log: ctest's closing lines plus those of GoogleTest
# programs run outside ctest, or fuzz.sh's table (one test per target), else the pass as one test.
count_pass() {
  local name=$1 rc=$2 secs=$3 log=$logs/$1.log p=0 f=0 gp gf
  if grep -Eq 'tests passed, [0-9]+ tests? failed out of [0-9]+|^\[  PASSED  \] [0-9]+ tests?\.' "$log"; then
    # (No ctest line: "0 0".)
    read -r p f < <(sed -nE 's/.*tests passed, ([0-9]+) tests? failed out of ([0-9]+).*/\1 \2/p' "$log" |
                    awk '{f += $1; t += $2} END {print t - f, f + 0}')
    gp=$(sed -nE 's/^\[  PASSED  \] ([0-9]+) tests?\..*/\1/p' "$log" | awk '{s += $1} END {print s + 0}')
    gf=$(sed -nE 's/^\[  FAILED  \] ([0-9]+) tests?, listed below.*/\1/p' "$log" | awk '{s += $1} END {print s + 0}')
    # Where ctest counted a failure, GoogleTest's lines may be that test's output it printed: not
    # counted twice.
    if ((f == 0)); then p=$((p + gp)) f=$((f + gf)); fi
  elif grep -Eq '^fuzz_[a-z0-9_]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+' "$log"; then
    # scripts/fuzz.sh's table: target, executions, exec/s, findings, spurious.
    read -r p f < <(awk '/^fuzz_[a-z0-9_]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+/ {if ($4 == 0) p++; else f++}
                         END {print p + 0, f + 0}' "$log")
  else
    ((rc == 0)) && p=1
  fi
  # A pass that failed outside what it counted (a build, an install, a check of its own).
  if ((rc != 0 && f == 0)); then f=1; fi
  passed=$((passed + p)) failed=$((failed + f))
  if ((rc == 0 && f == 0)); then
    printf '=== %s: ok, %d passed (%d s)\n' "$name" "$p" "$secs"
  else
    failed_passes+=("$name")
    printf '=== %s: FAILED, %d passed, %d failed (%d s; log: %s)\n' "$name" "$p" "$f" "$secs" "$log"
  fi
}

# The GPU plugin is built for the quick pass only where a GPU can run it; the full run builds it
# wherever the CUDA toolkit and cuDNN are found (its linkage and package are checked). Every part is
# named, so that what scripts/main.sh left in build/'s cache (no tests, no bindings) does not stay.
release_options=(-DCMAKE_BUILD_TYPE=Release -DRECUR_BUILD_TESTS=ON -DRECUR_BUILD_BINDINGS=ON -DRECUR_BUILD_CLI=ON
                 -DRECUR_BUILD_EXAMPLES=ON)
if ((quick)) && ! command -v nvidia-smi >/dev/null && [[ ! -e /proc/driver/nvidia ]]; then
  release_options+=(-DRECUR_BUILD_CUDA=OFF)
else
  release_options+=(-URECUR_BUILD_CUDA)  # back to its default: on where the toolkit and cuDNN are found
fi
# The Python binding's tests need NumPy, pytest and mypy, which Debian 12's python3 may not have and PEP
# 668 keeps pip from installing into: they go into a venv in the build folder, made from the very
# python3 the extension is built for (Python3_EXECUTABLE), so both are of one version. Made once,
# and again when python3 changes; without it (no network, say) the Python tests skip, saying why.
python_venv() {
  local base venv=$PWD/build/python-venv
  base=$(python3 -c 'import sys; print(sys.executable)') || return 0
  local want have
  want=$("$base" -c 'import sys; print(sys.prefix, sys.version)')
  have=$("$venv/bin/python" -c 'import sys, numpy, pytest, mypy; print(sys.base_prefix, sys.version)' 2>/dev/null || true)
  if [[ $have != "$want" ]]; then
    echo "python tests: making build/python-venv (NumPy, pytest, mypy) from $base"
    rm -rf "$venv"
    if ! { "$base" -m venv "$venv" && "$venv/bin/python" -m pip install -q numpy pytest mypy; }; then
      echo "python tests: WARNING: could not make build/python-venv with NumPy and pytest; the Python tests will skip" >&2
      rm -rf "$venv"
      release_options+=(-DPython3_EXECUTABLE="$base" -DRECUR_PYTHON_TEST_EXECUTABLE="$base")
      return 0
    fi
  fi
  release_options+=(-DPython3_EXECUTABLE="$base" -DRECUR_PYTHON_TEST_EXECUTABLE="$venv/bin/python")
}
release() {
  python_venv
  integrations/spark/deps.sh build  # PySpark (Spark's jars, pandas, PyArrow) in build/spark-venv for the spark_* tests
  integrations/flink/deps.sh build/flink-deps  # Flink's jars for the flink_* tests (they skip without)
  cmake -S . -B build "${release_options[@]}" >"$logs/release-configure.log" || { cat "$logs/release-configure.log"; exit 1; }
  cmake --build build -j"$jobs"
  cd build
  ctest --output-on-failure -j"$jobs"
}

# AddressSanitizer + UBSan over the whole suite but the bindings (none of their tests run in a
# sanitizer build: the JVM, mono and Go test binaries cannot load the sanitizer runtime; the
# Release pass runs them, the Go and C# ones with LeakSanitizer) and the CUDA plugin (its host code
# is the GPU emulator's, which this build does sanitize; its device code needs a GPU). Debug (-O0):
# at -O1 the parity suite ran 7 times faster, but compiling took over twice as long, a net loss.
asan() {
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DRECUR_UNITY_BUILD=ON \
        -DRECUR_SANITIZE=ON -DRECUR_BUILD_TESTS=ON -DRECUR_BUILD_CUDA=OFF -DRECUR_BUILD_BINDINGS=OFF \
        >"$logs/asan-configure.log" || { cat "$logs/asan-configure.log"; exit 1; }
  cmake --build build-asan -j"$jobs"
  cd build-asan
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j"$jobs"
}

# ThreadSanitizer over the C ABI's thread and stress tests: states stepping one layer and one model
# from 16 threads, concurrent opens and destroys, per-thread errors, limits changing.
tsan() {
  cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRECUR_UNITY_BUILD=ON -DRECUR_SANITIZE_THREAD=ON \
        -DRECUR_BUILD_TESTS=ON -DRECUR_BUILD_CUDA=OFF -DRECUR_BUILD_BINDINGS=OFF -DRECUR_BUILD_CLI=OFF \
        -DRECUR_BUILD_EXAMPLES=OFF \
        >"$logs/tsan-configure.log" || { cat "$logs/tsan-configure.log"; exit 1; }
  cmake --build build-tsan -j"$jobs" --target recur_thread_tests
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp" \
    build-tsan/tests/recur_thread_tests \
    --gtest_filter='CApiStress.*:CApiThreads.*:NumThreadsApi.*:Shapes/NumThreads.*:CApiGraph.Streams*'
}

# A short run of every fuzz target (scripts/fuzz.sh --ci: 20 s each; any crash, leak, hang or OOM
# fails), two targets at a time: each fuzzer is one process, so one at a time left a core idle.
fuzz() {
  JOBS=$jobs scripts/fuzz.sh --ci --build-only
  local first=(fuzz_layer_json fuzz_keras fuzz_keras_structured fuzz_model_graph)
  local second=(fuzz_h5 fuzz_npy fuzz_c_api fuzz_model_state_load)
  local rc1=0 rc2=0
  scripts/fuzz.sh --ci --no-build "${first[@]}" >"$logs/fuzz-1.log" 2>&1 &
  local pid=$!
  scripts/fuzz.sh --ci --no-build "${second[@]}" >"$logs/fuzz-2.log" 2>&1 || rc2=$?
  wait "$pid" || rc1=$?
  cat "$logs/fuzz-1.log" "$logs/fuzz-2.log"
  ((rc1 == 0 && rc2 == 0))
}

if ((quick)); then
  scripts/install-deps.sh --test --bindings || exit 1
  run_pass release release
else
  groups=(--test --bindings --packaging --fuzz)
  if ! skip ARM64 || ! skip WINDOWS; then groups+=(--cross); fi
  scripts/install-deps.sh "${groups[@]}" || exit 1
  run_pass release release
  # On the build above (nothing rebuilt): install into a scratch prefix and build and run the C++, C,
  # Java, C#, NuGet and Go consumers against it, then build the .deb packages, install them with
  # dpkg -i, use them and remove them (as root only). Most of it is one process at a time (javac,
  # mcs, go, cpack, dpkg), so it runs beside the static builds, which keep the other core busy.
  if ! skip PACKAGES; then
    if skip STATIC; then
      run_pass packages scripts/package-test.sh build
    else
      start_pass packages scripts/package-test.sh build
    fi
  fi
  for step in static arm64 windows; do
    skip "${step^^}" || run_pass "cross-$step" scripts/cross.sh "$step"
    if [[ $step == static ]] && ! skip PACKAGES && ! skip STATIC; then end_pass packages; fi
  done
  skip SANITIZERS || run_pass asan asan
  skip TSAN || run_pass tsan tsan
  if ! skip FUZZ; then
    if command -v clang++ >/dev/null; then
      run_pass fuzz fuzz
    else
      echo "fuzz: skipped: no clang++ (scripts/install-deps.sh --fuzz)"
    fi
  fi
fi

printf '\n%s: %d min %d s' "$( ((quick)) && echo "test.sh --quick" || echo test.sh)" \
  $(((SECONDS - begin) / 60)) $(((SECONDS - begin) % 60))
if ((${#failed_passes[@]})); then printf '; failed: %s' "${failed_passes[*]}"; fi
printf '\n%d passed, %d failed\n' "$passed" "$failed"
((${#failed_passes[@]} == 0))
