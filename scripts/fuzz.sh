#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fuzzing campaign (tests/fuzz/README.md): builds build-fuzz with clang and -DRECUR_FUZZ=ON, runs
# each libFuzzer target (all, or those named) for a while, and prints what each ran and found.
#
#   scripts/fuzz.sh [--time SECONDS | --runs N] [--jobs N] [--build-only | --no-build] [--ci] [target...]
#
#   --time S      seconds per target (default 300; --ci: 20)
#   --runs N      inputs per target instead of a time
#   --jobs N      N parallel fuzzing jobs per target (libFuzzer -jobs/-workers)
#   --build-only  build the fuzzers and stop
#   --no-build    run the fuzzers already in the build folder (built on another machine, say: a
#                 many-core one without clang; it needs the build's shared libraries, e.g. libzip)
#   --ci          every target 20 s; exit 1 on any finding
#
# Each target keeps a working corpus in build-fuzz/corpus/<target> (grown from the committed seeds
# tests/fuzz/corpus/<target> and regressions tests/fuzz/regressions/<target>, which stay as they
# are) and writes crash-/leak-/oom-/timeout- reproducers to build-fuzz/findings/<target>/, with
# libFuzzer's output in build-fuzz/logs/<target>.log. A hang is an input running over 1 s; an
# out-of-memory is one allocation over RECUR_FUZZ_MALLOC_LIMIT_MB (1024) or a process over 2 GiB.
# libFuzzer's alarm counts wall-clock time, so on a busy machine a quick input can be caught: a
# timeout whose input then runs within 1 s three times is moved to findings/<target>/spurious/,
# counted as spurious, and fuzzing goes on for the time left.
# libFuzzer's entropic power schedule is off (-entropic=0): its per-input feature bookkeeping was a
# quarter of each run of the model targets, and without it they run 1.6 times as many inputs.
# Environment: FUZZ_BUILD_DIR (build-fuzz), JOBS (build jobs; nproc), CC/CXX (clang/clang++).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)

all_targets=(fuzz_layer_json fuzz_keras fuzz_keras_structured fuzz_model_graph fuzz_h5 fuzz_npy fuzz_c_api fuzz_graph_budget fuzz_model_state_load)
time_s=300
runs=""
jobs=""
ci=0
build_only=0
no_build=0
targets=()
while (($#)); do
  case "$1" in
    --time) time_s=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --ci) ci=1; time_s=20; shift ;;
    --build-only) build_only=1; shift ;;
    --no-build) no_build=1; shift ;;
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    fuzz_*) targets+=("$1"); shift ;;
    *) echo "fuzz.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
((${#targets[@]})) || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "fuzz.sh: no target '$t' (${all_targets[*]})" >&2; exit 2; }
done

build=${FUZZ_BUILD_DIR:-build-fuzz}
if ((no_build)); then
  for t in "${targets[@]}"; do
    [[ -x "$build/tests/fuzz/$t" ]] || { echo "fuzz.sh: --no-build: $build/tests/fuzz/$t is not built" >&2; exit 2; }
  done
else
  export CC=${CC:-clang} CXX=${CXX:-clang++}
  command -v "$CXX" >/dev/null || { echo "fuzz.sh: $CXX not found (Debian: apt-get install clang libclang-rt-14-dev)" >&2; exit 2; }
  fuzzer_rt=$("$CXX" -print-file-name=libclang_rt.fuzzer-x86_64.a)
  [[ -f "$fuzzer_rt" ]] || { echo "fuzz.sh: $CXX has no libFuzzer runtime (Debian: libclang-rt-14-dev)" >&2; exit 2; }
  mkdir -p "$build"
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DRECUR_FUZZ=ON -DRECUR_UNITY_BUILD=ON >"$build/configure.log" 2>&1 ||
    { cat "$build/configure.log" >&2; exit 1; }
  cmake --build "$build" -j"${JOBS:-$(nproc)}" --target "${targets[@]}"
fi
((build_only)) && exit 0
build=$(cd "$build" && pwd)

# The budget target runs its models with the library's default limits and holds each open and run
# to what recur.h documents for them (about 2 GiB and 10 s; a run has a 2 s timeout of its own):
# an input over that is a finding.
limits_of() {
  case "$1" in
    fuzz_graph_budget) echo "-timeout=10 -rss_limit_mb=2560 -malloc_limit_mb=2048" ;;
    *) echo "-timeout=1 -rss_limit_mb=2048 -malloc_limit_mb=${RECUR_FUZZ_MALLOC_LIMIT_MB:-1024}" ;;
  esac
}

dict_of() {
  case "$1" in
    fuzz_layer_json|fuzz_model_graph) echo json ;;
    fuzz_keras|fuzz_keras_structured) echo keras ;;
    fuzz_h5) echo h5 ;;
    fuzz_npy) echo npy ;;
    *) echo "" ;;
  esac
}

# Allocation stacks of 4 frames: unwinding the default 30 on every allocation was a tenth of a model
# target's time (rerun a reproducer with ASAN_OPTIONS=malloc_context_size=30 for the full stack).
# A 32 MiB quarantine of freed memory (default 256) still holds many inputs' worth, and the memory a
# new allocation gets is then more often in cache: the model targets ran a tenth faster.
# An allocation the allocator cannot serve is a finding, not a NULL: libFuzzer's -malloc_limit_mb
# sees only allocations that succeed, so a request for more than the machine has (32 GiB for an
# orthogonal regularizer's product) returned NULL, became a clean error, and reran "in time".
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0:malloc_context_size=4:quarantine_size_mb=32}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
declare -A execs rate found newest spurious
list_findings() {
  find "$1" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'oom-*' -o -name 'timeout-*' \) | sort
}
total_found=0
for t in "${targets[@]}"; do
  corpus=$build/corpus/$t findings=$build/findings/$t log=$build/logs/$t.log
  mkdir -p "$corpus" "$findings" "$build/logs"
  seeds=("$src/tests/fuzz/corpus/$t")
  [[ -d "$src/tests/fuzz/regressions/$t" ]] && seeds+=("$src/tests/fuzz/regressions/$t")
  read -r -a limits <<<"$(limits_of "$t")"
  args=(-entropic=0 "${limits[@]}" -print_final_stats=1 -artifact_prefix="$findings/")
  [[ -n "$runs" ]] && args+=(-runs="$runs")
  d=$(dict_of "$t")
  [[ -n "$d" ]] && args+=(-dict="$src/tests/fuzz/dict/$d.dict")
  echo "== $t: ${runs:+$runs runs}${runs:-$time_s s} (log: $log)"
  : >"$log"
  if [[ -n "$jobs" ]]; then : >"$build/logs/$t.jobs.log"; fi
  start=$(date +%s)
  found[$t]=0 spurious[$t]=0
  while :; do
    round_args=("${args[@]}")
    if [[ -z "$runs" ]]; then
      left=$((start + time_s - $(date +%s)))
      ((left > 0)) || break
      round_args+=(-max_total_time="$left")
    fi
    before=$(list_findings "$findings")
    round=$build/logs/$t.round.log
    if [[ -n "$jobs" ]]; then
      # Parallel jobs write fuzz-<n>.log into the current folder. The -jobs process copies each job's
      # log into its own output when the job ends, so only the job logs are kept for the stats
      # (counting both had doubled the executions); its own output goes to <target>.jobs.log.
      (cd "$build/logs" && rm -f fuzz-*.log &&
        "$build/tests/fuzz/$t" "${round_args[@]}" -jobs="$jobs" -workers="$jobs" "$corpus" "${seeds[@]}" \
          >>"$build/logs/$t.jobs.log" 2>&1) || true
      cat "$build"/logs/fuzz-*.log >"$round" 2>/dev/null || true
    else
      "$build/tests/fuzz/$t" "${round_args[@]}" "$corpus" "${seeds[@]}" >"$round" 2>&1 || true
    fi
    cat "$round" >>"$log"
    new=$(comm -13 <(echo "$before") <(list_findings "$findings") | grep . || true)
    # A timeout whose input then runs in time, three times over, was the machine being busy (the
    # alarm counts wall-clock time): set aside as spurious, and the campaign goes on for the time left.
    if [[ -n "$new" && -z "$runs" ]] && ! grep -qv '/timeout-' <<<"$new"; then
      all_fast=1
      while read -r f; do
        for _ in 1 2 3; do
          "$build/tests/fuzz/$t" "${limits[@]}" "$f" >/dev/null 2>&1 || { all_fast=0; break; }
        done
      done <<<"$new"
      if ((all_fast)); then
        mkdir -p "$findings/spurious"
        while read -r f; do
          mv "$f" "$findings/spurious/"
          echo "spurious timeout: $(basename "$f") reran three times within 1 s" | tee -a "$log"
          spurious[$t]=$((spurious[$t] + 1))
        done <<<"$new"
        continue
      fi
    fi
    if [[ -n "$new" ]]; then
      found[$t]=$((found[$t] + $(wc -l <<<"$new")))
    elif grep -qE '^==[0-9]+==ERROR|^SUMMARY: (Address|Undefined|Leak)|ERROR: libFuzzer' "$round"; then
      # A run that stopped without a reproducer (e.g. libFuzzer's own deadly signal) is a finding too.
      found[$t]=$((found[$t] + 1))
    fi
    break
  done
  rm -f "$build/logs/$t.round.log"
  secs=$(( $(date +%s) - start ))
  execs[$t]=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | awk '{s += $2} END {print s + 0}')
  rate[$t]=$(( execs[$t] / (secs > 0 ? secs : 1) ))
  newest[$t]=$(list_findings "$findings" | xargs -r ls -t | head -1)
  total_found=$((total_found + found[$t]))
  if ((found[$t])); then
    grep -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|SUMMARY' "$log" | tail -1 | sed 's/^/   /' || true
  fi
done

echo
printf '%-24s %12s %10s %9s %9s  %s\n' target executions exec/s findings spurious "latest reproducer"
for t in "${targets[@]}"; do
  printf '%-24s %12s %10s %9s %9s  %s\n' "$t" "${execs[$t]}" "${rate[$t]}" "${found[$t]}" "${spurious[$t]}" \
    "$( ((found[$t])) && echo "${newest[$t]}" || echo -)"
done
if ((total_found)); then
  echo
  echo "Reproduce: $build/tests/fuzz/<target> <file>; minimise: add -minimize_crash=1 -runs=10000;"
  echo "keep it: copy it to tests/fuzz/regressions/<target>/<what-it-does> (see tests/fuzz/README.md)."
  ((ci)) && exit 1
fi
exit 0
