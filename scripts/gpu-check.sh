#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks recur on an NVIDIA GPU in one command, from a build made on another machine.
#
#   scripts/gpu-check.sh prepare [DIR]   on a development machine with the CUDA toolkit and cuDNN 9:
#                                        a Release build with the GPU plugin (sm_90 + PTX) in DIR
#                                        (default build-gpu), only what the GPU checks need (the C
#                                        ABI, parity and CLI tests, the CLI, recur_gpu_bench, the
#                                        Python package, the Go binding's tests as one `go test -c`
#                                        binary where Go is found), binaries stripped, object files
#                                        removed, the non-system libraries they need copied into
#                                        an archive in DIR/gpu-check; prints the sizes and fails over 64 MiB
#   scripts/gpu-check.sh run [DIR]       on the GPU machine, from the repository root (the same
#                                        commit, DIR carried there as it is): the GPU, driver, CUDA
#                                        and cuDNN versions, then each check with its own time limit
#                                        (all of them within about 8 minutes), continuing after a
#                                        failure, and a summary table; exit status 1 if any check
#                                        failed. Without a GPU each GPU check says "skipped: no GPU"
#                                        and the checks that need none still run.
#
# What `run` checks: the C ABI's device tests (CApiDevice*), the CLI's RunOnCuda, the plugin's
# table on the real plugin (gpu_plugin_table_cuda); Keras parity with every layer on `cuda`
# (keras_parity_cuda: every layer case, .keras and .h5 file) and every whole model on `cuda`
# (keras_graph_parity_cuda); recur_gpu_bench; compute-sanitizer's memcheck, racecheck and synccheck
# over the layer, model and streaming device tests (CApiDeviceGpu.*) and a few parity cases; the Go
# device tests; the Python binding's tests with a GPU (tests/test_device.py). Last, as time allows,
# measurements whose numbers the summary records: where a streaming step's time goes
# (RECUR_CUDA_PROFILE=1), with and without CUDA graphs and with no copies queued for the step's
# input and outputs (RECUR_CUDA_ZERO_COPY=1, whose device tests run first), parity with cuBLAS for
# every GEMM (RECUR_CUDA_GEMM=cublas) and the benchmark with larger steps fused
# (RECUR_CUDA_FUSED_WORK).
#
# Logs: every check's log goes to $OUT if set, else DIR/gpu-logs: summary.txt (the table),
# bench.txt and the failing checks' logs as plain files, and all of them in gpu-logs.tar.gz (at
# most 8 files, none in sub-folders).
#
# The GPU machine needs: the NVIDIA driver, cuBLAS 13 and cuDNN 9 (found in the loader's paths,
# /usr/local/cuda*, or a Python's nvidia-cublas / nvidia-cudnn-cu13 packages); compute-sanitizer
# (in the CUDA toolkit: on PATH or /usr/local/cuda/bin, or set COMPUTE_SANITIZER) for the sanitizer
# checks, which otherwise say "skipped"; a python3 of the version the package was built for (prepare
# prints it; PYTHON=... at prepare picks another) with NumPy and pytest for the Python checks.
# Binaries hold the absolute source and build paths of `prepare`: where those do not exist on the
# GPU machine, `run` links the recorded source folder to the current one (as root, or set
# RECUR_GPU_CHECK_NO_LINK=1 and run from the same path).
#
# Environment: CCACHE_DIR/CCACHE_BASEDIR as usual (ccache is used where found); PYTHON (prepare:
# the Python the extension is built for; run: the Python that runs its tests, default python3);
# RECUR_GPU_CHECK_BUDGET (run: seconds for all checks, default 460); RECUR_GPU_CHECK_ONLY (run: a
# regular expression; only the checks whose names match it run); RECUR_GPU_CHECK_EMULATOR=1
# (run, without a GPU: the checks that go through recur's device API run on the CPU-only emulator
# of the plugin instead of skipping, which rehearses them; the benchmark and sanitizers still skip).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
mode=${1:-}
dir=${2:-build-gpu}
limit_mib=64

usage() { awk 'NR > 2 && /^#/ { sub(/^# ?/, ""); print; next } NR > 2 { exit }' "$0"; }

case "$mode" in
  prepare|run) ;;
  -h|--help|help) usage; exit 0 ;;
  *) echo "gpu-check.sh: expected 'prepare [DIR]' or 'run [DIR]' (see --help)" >&2; exit 2 ;;
esac
case "$dir" in
  /*) build=$dir ;;
  *) build=$root/$dir ;;
esac

# ---- prepare -------------------------------------------------------------------------------------
prepare() {
  local python=${PYTHON:-python3} launcher=() jobs
  jobs=$(nproc)
  command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]] ||
    { echo "prepare: no nvcc (the CUDA toolkit) found: the GPU plugin cannot be built here" >&2; return 1; }
  export PATH=$PATH:/usr/local/cuda/bin
  if command -v ccache >/dev/null; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
              -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  fi
  python=$(command -v "$python") || { echo "prepare: no Python '${PYTHON:-python3}'" >&2; return 1; }
  mkdir -p "$build"
  echo "== configure $build (Python $("$python" -c 'import sys; print(sys.version.split()[0])'))"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DRECUR_BUILD_CUDA=ON "${launcher[@]}" \
    -DRECUR_BUILD_TESTS=ON -DRECUR_BUILD_EXAMPLES=OFF -DRECUR_BUILD_JAVA=OFF -DRECUR_BUILD_CSHARP=OFF \
    -DPython3_EXECUTABLE="$python" >"$build/prepare-configure.log" 2>&1 ||
    { tail -30 "$build/prepare-configure.log"; echo "prepare: cmake failed (log: $build/prepare-configure.log)" >&2; return 1; }
  grep -q '^RECUR_BUILD_CUDA:BOOL=ON' "$build/CMakeCache.txt" && grep -q 'recur: building the GPU plugin' "$build/prepare-configure.log" ||
    { grep 'recur:' "$build/prepare-configure.log"; echo "prepare: the GPU plugin is not configured (CUDA toolkit and cuDNN 9 needed)" >&2; return 1; }

  local targets=(recur recur_cuda recur_c_api_tests recur_keras_parity recur_graph_parity recur_cli
                 recur_cli_e2e_tests recur_gpu_bench recur_gpu_emulator_tests)
  grep -q '^recur_python_package:' <(cmake --build "$build" --target help 2>/dev/null | sed 's/^\.\.\. //;s/ .*//;s/$/:/') &&
    targets+=(recur_python_package)
  local have_go=0
  grep -q '^recur_go:' <(cmake --build "$build" --target help 2>/dev/null | sed 's/^\.\.\. //;s/ .*//;s/$/:/') &&
    { targets+=(recur_go); have_go=1; }
  echo "== build: ${targets[*]}"
  cmake --build "$build" -j"$jobs" --target "${targets[@]}" >"$build/prepare-build.log" 2>&1 ||
    { tail -40 "$build/prepare-build.log"; echo "prepare: build failed (log: $build/prepare-build.log)" >&2; return 1; }

  rm -rf "$build/gpu-check" && mkdir -p "$build/gpu-check"
  if ((have_go)); then
    echo "== go test -c (the Go binding's tests, run with -test.run on the GPU machine)"
    local gomod=$build/bindings/go/module cache=${XDG_CACHE_HOME:-$HOME/.cache}/recur-gpu-check
    (cd "$gomod" && env GOPROXY=off GOFLAGS=-mod=mod CGO_ENABLED=1 GOCACHE="$cache/gocache" GOPATH="$cache/gopath" \
      CGO_CFLAGS="-O2 -I$root/c_api/include" CGO_LDFLAGS="-L$build/c_api -Wl,-rpath,$build/c_api" \
      go test -c -tags recur_no_pkgconfig -ldflags=-s -o "$build/gpu-check/recur_go.test" .) ||
      { echo "prepare: go test -c failed" >&2; return 1; }
  else
    echo "== no Go toolchain (or RECUR_BUILD_GO=OFF): the Go device tests are left out"
  fi

  # What the checks run needs only the binaries: drop objects, static archives and caches.
  echo "== trim"
  find "$build" \( -name '*.o' -o -name '*.a' -o -name '*.obj' \) -type f -delete
  rm -rf "$build/bindings/go/gocache" "$build/bindings/go/gopath" "$build/gpu-logs" "$build/runtime-libs"
  # CMake's compiler checks and try-compile programs (rebuilt only by a fresh configure).
  rm -rf "$build"/CMakeFiles/CheckCUDA "$build"/CMakeFiles/*/CompilerId* "$build"/CMakeFiles/CMakeScratch
  # The targets' dependency and flag files (megabytes), which only a rebuild reads.
  find "$build" -path '*/CMakeFiles/*.dir' -prune -type d -exec rm -rf {} +
  # The Python package holds a copy of librecur.so.0, as the wheel does: a link to the build's here.
  [[ -f $build/bindings/python/recur/librecur.so.0 && ! -L $build/bindings/python/recur/librecur.so.0 ]] &&
    ln -sf ../../../c_api/librecur.so.0 "$build/bindings/python/recur/librecur.so.0"
  find "$build" -path '*CMakeFiles*' \( -name a.out -o -name '*.bin' -o -name '*.ii' \) -type f -delete
  local f
  while IFS= read -r f; do
    case "$(file -b "$f")" in
      ELF*executable*|ELF*shared\ object*) strip --strip-unneeded "$f" 2>/dev/null || true ;;
    esac
  done < <(find "$build" -type f \( -perm -u+x -o -name '*.so*' \) -size +16k)

  # Libraries outside the C and C++ runtimes and the CUDA ones (HDF5, libzip and theirs) may be
  # missing on the GPU machine: an archive of them, of which `run` uses those the machine lacks.
  echo "== runtime libraries"
  local libdir
  libdir=$(mktemp -d)
  local libs
  libs=$(for f in "$build"/c_api/librecur.so* "$build"/tests/recur_* "$build"/cli/recur* "$build"/bench/recur_gpu_bench; do
           [[ -f $f && ! -L $f ]] && ldd "$f" 2>/dev/null
         done | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u)
  for f in $libs; do
    case "$(basename "$f")" in
      libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libstdc++.so*|libgcc_s.so*|libcud*|libcublas*|librecur*) ;;
      *) cp -L "$f" "$libdir/" ;;
    esac
  done
  strip --strip-unneeded "$libdir"/* 2>/dev/null || true
  tar cJf "$build/gpu-check/runtime-libs.tar.xz" -C "$libdir" . && rm -rf "$libdir"

  {
    echo "source_dir=$root"
    echo "build_dir=$build"
    echo "python_version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    echo "python_soabi=$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("SOABI"))')"
    echo "commit=$(git -C "$root" rev-parse HEAD 2>/dev/null)$(git -C "$root" diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
    echo "prepared=$(date -u +%Y-%m-%dT%H:%M:%SZ) on ${HOSTNAME:-unknown}"
  } >"$build/gpu-check/prepared.txt"

  local bytes tree
  bytes=$(du -sb "$build" | cut -f1)
  # The sizes added up (xargs may split the list over several runs).
  tree=$(git -C "$root" ls-files -z | (cd "$root" && xargs -0 stat -c %s 2>/dev/null) | awk '{ s += $1 } END { print s + 0 }')
  awk -v d="$dir" -v b="$bytes" -v t="$tree" 'BEGIN { m = 1048576;
    printf "== %s: %.1f MiB (the tracked files beside it: %.1f MiB, together %.1f MiB)\n", d, b / m, t / m, (b + t) / m }'
  du -sh "$build"/c_api "$build"/tests "$build"/bench "$build"/cli "$build"/bindings "$build"/gpu-check 2>/dev/null | sed 's/^/   /'
  if ((bytes > limit_mib * 1048576)); then
    echo "prepare: $dir is over $limit_mib MiB" >&2
    return 1
  fi
  echo "== ready: on the GPU machine, from the repository root with $dir beside it: scripts/gpu-check.sh run $dir"
}

# ---- run -----------------------------------------------------------------------------------------
logs=""
declare -a names=() results=() times=()
failed=0

# admit NAME SECONDS NEEDS: whether check NAME runs now (its header printed), else its skip
# recorded; sets `secs` to its time limit within what is left of the budget. NEEDS as for step;
# a measurement (NEEDS 2) needs a real GPU.
admit() {
  local name=$1 needs=$3
  secs=$2
  [[ -n ${RECUR_GPU_CHECK_ONLY:-} && ! $name =~ ^(${RECUR_GPU_CHECK_ONLY})$ ]] && return 1
  local left=$((budget - (SECONDS - start)))
  printf '\n=== %s\n' "$name"
  if ((!gpu && (needs == 2 || (needs == 1 && !emulate)))); then
    echo "skipped: no GPU ($why_no_gpu)"
    names+=("$name") results+=("skipped: no GPU") times+=("-")
    return 1
  fi
  if ((left < 15)); then
    echo "skipped: the time budget is spent"
    names+=("$name") results+=("skipped: no time left") times+=("-")
    return 1
  fi
  ((secs > left)) && secs=$left
  return 0
}

# step NAME SECONDS NEEDS CMD...: runs CMD under `timeout`, its output in $logs/NAME.log, the
# last lines on the terminal, and records the result. NEEDS: 0 nothing, 1 a device recur can run
# on (a GPU, or the emulator with RECUR_GPU_CHECK_EMULATOR=1), 2 a real GPU; skipped without it.
step() {
  local name=$1 secs
  admit "$1" "$2" "$3" || return 0
  shift 3
  local t0=$SECONDS rc
  timeout -k 10 "$secs" "$@" >"$logs/$name.log" 2>&1
  rc=$?
  local dt=$((SECONDS - t0)) result
  tail -n "${TAIL_LINES:-8}" "$logs/$name.log"
  case $rc in
    0) result=passed ;;
    77) result="skipped ($(grep -m1 -i 'skip' "$logs/$name.log" | cut -c1-80))" ;;
    124|137) result="FAILED: timed out after ${secs}s"; failed=1 ;;
    *) result="FAILED (exit $rc)"; failed=1 ;;
  esac
  echo "--- $name: $result, ${dt}s"
  names+=("$name") results+=("$result") times+=("${dt}s")
}

# measure NAME SECONDS PATTERN CMD...: runs CMD on a real GPU as step does, for its numbers: the
# summary records its first line matching PATTERN instead of a pass or a failure.
measure() {
  local name=$1 pattern=$3 secs
  admit "$1" "$2" 2 || return 0
  shift 3
  local t0=$SECONDS
  timeout -k 10 "$secs" "$@" >"$logs/$name.log" 2>&1
  tail -n "${TAIL_LINES:-8}" "$logs/$name.log"
  names+=("$name") results+=("measured: $(grep -m1 -E "$pattern" "$logs/$name.log" | sed 's/^ *//' | cut -c1-200)")
  times+=("$((SECONDS - t0))s")
}

# A command that may be missing: skipped with the reason instead of failing.
skip_step() {
  [[ -n ${RECUR_GPU_CHECK_ONLY:-} && ! $1 =~ ^(${RECUR_GPU_CHECK_ONLY})$ ]] && return
  printf '\n=== %s\nskipped: %s\n' "$1" "$2"
  names+=("$1") results+=("skipped: $2") times+=("-")
}

find_lib_dirs() {
  # Folders holding cuBLAS 13 and cuDNN 9, wherever this machine keeps them.
  local cands=() d py
  cands+=(/usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib)
  for d in /usr/local/cuda-*/lib64 /usr/local/cuda-*/lib /usr/lib/x86_64-linux-gnu; do cands+=("$d"); done
  for py in python3 /opt/*/.venv/bin/python3; do
    command -v "$py" >/dev/null 2>&1 || continue
    while IFS= read -r d; do cands+=("$d"); done < <("$py" - 2>/dev/null <<'EOF'
import importlib.util, os
for pkg in ("nvidia.cudnn", "nvidia.cublas", "nvidia.cu13", "nvidia.cuda_runtime"):
    try:
        spec = importlib.util.find_spec(pkg)
    except Exception:
        continue
    for loc in (spec.submodule_search_locations or []) if spec else []:
        print(os.path.join(loc, "lib"))
EOF
)
  done
  local found=() lib
  for lib in libcudnn.so.9 libcublas.so.13 libcublasLt.so.13; do
    if ldconfig -p 2>/dev/null | grep -q "$lib "; then continue; fi
    local hit=""
    for d in "${cands[@]}"; do
      if [[ -e $d/$lib ]]; then hit=$d; break; fi
    done
    [[ -z $hit ]] && hit=$(find /usr/local /opt /usr/lib -name "$lib" -print -quit 2>/dev/null | xargs -r dirname)
    [[ -n $hit ]] && found+=("$hit")
  done
  printf '%s\n' "${found[@]}" | awk '!seen[$0]++' | paste -sd: -
}

run() {
  [[ -f $build/gpu-check/prepared.txt ]] ||
    { echo "run: $dir was not made by 'scripts/gpu-check.sh prepare $dir' (no $dir/gpu-check/prepared.txt)" >&2; exit 2; }
  local src recorded_build
  src=$(sed -n 's/^source_dir=//p' "$build/gpu-check/prepared.txt")
  recorded_build=$(sed -n 's/^build_dir=//p' "$build/gpu-check/prepared.txt")
  logs=${OUT:-$build/gpu-logs}
  mkdir -p "$logs"
  local work=$logs/.steps
  [[ -n ${OUT:-} ]] && work=$(mktemp -d)
  mkdir -p "$work"
  local final_logs=$logs
  logs=$work
  budget=${RECUR_GPU_CHECK_BUDGET:-460}
  start=$SECONDS

  echo "=== recur GPU check: $(date -u +%Y-%m-%dT%H:%M:%SZ) on ${HOSTNAME:-unknown}"
  sed 's/^/    /' "$build/gpu-check/prepared.txt"
  echo "    here: $root (commit $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown))"

  # The binaries name the source and build folders of `prepare`.
  if [[ $recorded_build != "$build" ]]; then
    if [[ -e $src && ! -e $recorded_build ]]; then
      echo "run: $recorded_build is missing although $src exists: run from $src" >&2; exit 2
    fi
    if [[ ! -e $src ]]; then
      if [[ ${RECUR_GPU_CHECK_NO_LINK:-0} == 1 ]]; then
        echo "run: the build names $src, which is not here (RECUR_GPU_CHECK_NO_LINK=1)" >&2; exit 2
      fi
      mkdir -p "$(dirname "$src")" && ln -s "$root" "$src" ||
        { echo "run: cannot link $src to $root: run from $src, or as a user who may create it" >&2; exit 2; }
      echo "    linked $src -> $root (the paths built into the tests)"
    fi
  fi
  local b=$recorded_build

  export PATH=$PATH:/usr/local/cuda/bin
  local cudalibs
  cudalibs=$(find_lib_dirs)
  # Of the libraries carried along, those this machine lacks (its own are used where it has them).
  local rtl=$work/runtime-libs f missing=()
  mkdir -p "$rtl.all" "$rtl"
  [[ -f $b/gpu-check/runtime-libs.tar.xz ]] && tar xJf "$b/gpu-check/runtime-libs.tar.xz" -C "$rtl.all"
  local known
  known=$( (ldconfig -p || /sbin/ldconfig -p) 2>/dev/null | awk '{print $1}')
  for f in "$rtl.all"/*; do
    [[ -e $f ]] || continue
    if ! grep -qxF "$(basename "$f")" <<<"$known"; then
      mv "$f" "$rtl/"
      missing+=("$(basename "$f")")
    fi
  done
  rm -rf "$rtl.all"
  echo "    carried libraries used (not on this machine): ${missing[*]:-none}"
  export LD_LIBRARY_PATH=$rtl${cudalibs:+:$cudalibs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export RECUR_CUDA_PLUGIN=$b/c_api/librecur_cuda.so
  echo "    LD_LIBRARY_PATH=$LD_LIBRARY_PATH"

  # ---- the machine
  gpu=0
  emulate=0
  why_no_gpu="nvidia-smi lists no GPU"
  if ! command -v nvidia-smi >/dev/null; then
    why_no_gpu="no nvidia-smi (no NVIDIA driver)"
  elif [[ -n $(nvidia-smi -L 2>/dev/null) ]]; then
    gpu=1
  fi
  if ((!gpu)) && [[ ${RECUR_GPU_CHECK_EMULATOR:-0} == 1 ]]; then
    emulate=1
    export RECUR_CUDA_PLUGIN=$b/tests/gpu_emulator/librecur_gpu_emulator.so
  fi
  local sanitizer=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer /opt/nvidia/*/compute-sanitizer 2>/dev/null | head -1)}
  local gotest=$b/gpu-check/recur_go.test py=${PYTHON:-python3}
  {
    printf '\n=== machine\n'
    if ((gpu)); then
      nvidia-smi
      nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    else
      echo "no GPU: $why_no_gpu"
    fi
    ((emulate)) && echo "RECUR_GPU_CHECK_EMULATOR=1: \"cuda\" is the CPU-only emulator of the plugin ($RECUR_CUDA_PLUGIN)"
    if command -v nvcc >/dev/null; then nvcc --version | tail -2; else echo "nvcc: not found (only the driver's CUDA version above)"; fi
    local cudnn_h
    cudnn_h=$(ls /usr/local/cuda*/include/cudnn_version.h /usr/include/cudnn_version.h 2>/dev/null | head -1)
    [[ -n $cudnn_h ]] &&
      awk '/#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) /{v[$2]=$3} END{printf "cuDNN headers: %s.%s.%s (%s)\n", v["CUDNN_MAJOR"], v["CUDNN_MINOR"], v["CUDNN_PATCHLEVEL"], FILENAME}' "$cudnn_h"
    python3 -c 'import ctypes; lib = ctypes.CDLL("libcudnn.so.9"); lib.cudnnGetVersion.restype = ctypes.c_size_t; v = lib.cudnnGetVersion(); print("cuDNN library: %d.%d.%d" % (v // 10000, v % 10000 // 100, v % 100))' 2>/dev/null ||
      echo "cuDNN library: not loadable (libcudnn.so.9)"
    echo "\$ recur devices"
    "$b/cli/recur" devices
    echo "compute-sanitizer: ${sanitizer:-not found}"
    echo "Go test binary: $([[ -x $gotest ]] && echo "$gotest" || echo 'not built')"
    echo "python: $("$py" -c 'import sys; print(sys.version.split()[0], sys.executable)' 2>/dev/null || echo "$py not found")"
  } 2>&1 | tee "$logs/machine.log"

  local ct=(ctest --test-dir "$b" --output-on-failure --no-tests=error)
  # ---- the C ABI and C++ device tests (CApiDevice*, incl. CApiDeviceGpu.*; the CLI's RunOnCuda; the
  # plugin's own table), then the emulator's device tests as the CPU reference. (The plugin's
  # linkage, gpu_linkage, is a property of the build, checked where it is built.)
  if command -v ctest >/dev/null; then
    step device_tests 90 1 "${ct[@]}" -R '^(CApiDevice|cli\.Cli\.RunOnCuda$|gpu_plugin_table_cuda$)'
    step device_tests_emulator 60 0 "${ct[@]}" -R '^c_api_device_gpu_emulator$'
  else
    # No CMake here: the same test programs without ctest (the linkage check needs CMake).
    step device_tests 90 1 sh -c "rc=0
      '$b/tests/recur_c_api_tests' --gtest_filter='CApiDevice*' || rc=1
      (cd '$b/tests/cli' && '$b/tests/cli/recur_cli_e2e_tests' --gtest_filter='Cli.RunOnCuda') || rc=1
      RECUR_GPU_PLUGIN_UNDER_TEST='$b/c_api/librecur_cuda.so' '$b/tests/gpu_emulator/recur_gpu_emulator_tests' || rc=1
      exit \$rc"
    step device_tests_emulator 60 0 env RECUR_CUDA_PLUGIN="$b/tests/gpu_emulator/librecur_gpu_emulator.so" \
      "$b/tests/recur_c_api_tests" --gtest_filter='CApiDevice*'
  fi
  # ---- Keras parity on cuda: every layer case (JSON, .keras, .h5), then every whole model.
  TAIL_LINES=30 step keras_parity_cuda 150 1 env RECUR_TEST_DEVICE=cuda "$b/tests/recur_keras_parity" --gtest_filter='KerasParitySummary.*'
  # The case that was over its tolerance on the first GPU run (an LSTM with a linear
  # recurrent_activation, whose rounding errors grow with every step).
  TAIL_LINES=20 step keras_parity_cuda_recact 30 1 env RECUR_TEST_DEVICE=cuda "$b/tests/recur_keras_parity" \
    --gtest_filter='*keras3_recact_linear_lstm_*'
  # Its summary lists the layers whose tensors still cross to the host, with how many runs.
  TAIL_LINES=50 step keras_graph_parity_cuda 90 1 env RECUR_TEST_DEVICE=cuda "$b/tests/recur_graph_parity" --gtest_brief=1
  # ---- the benchmark (its table goes to bench.txt as well).
  TAIL_LINES=60 step gpu_bench 120 2 "$b/bench/recur_gpu_bench"
  # ---- the Go binding's device tests.
  if [[ -x $gotest ]]; then
    step go_device 60 1 env RECUR_SOURCE_DIR="$src" GODEBUG=cgocheck=2 sh -c \
      "cd '$b/bindings/go/module' && exec '$gotest' -test.count=1 -test.v -test.run 'Device|ForwardStates'"
  else
    skip_step go_device "no Go test binary in $dir (no Go toolchain at prepare)"
  fi
  # ---- the Python binding's device tests (and, without a GPU, "auto" on the CPU).
  local soabi pyhere
  soabi=$(sed -n 's/^python_soabi=//p' "$build/gpu-check/prepared.txt")
  pyhere=$("$py" -c 'import sysconfig; print(sysconfig.get_config_var("SOABI"))' 2>/dev/null)
  if [[ ! -d $b/bindings/python/recur ]]; then
    skip_step python_device "no Python package in $dir"
  elif [[ $pyhere != "$soabi" ]]; then
    # Another Python here: build the extension for it from the carried SWIG wrapper, where its
    # headers and a C compiler are present.
    local pyinc pkg=$work/python-pkg
    pyinc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
    if [[ -n $pyhere && -f $pyinc/Python.h && -f $b/bindings/python/gen/recur_python_wrap.c ]] && command -v cc >/dev/null; then
      mkdir -p "$pkg" && cp -rL "$b/bindings/python/recur" "$pkg/" && rm -f "$pkg"/recur/_native.*.so
      step python_build 90 0 cc -O1 -shared -fPIC -fno-strict-aliasing -w -I"$pyinc" -I"$src/c_api/include" \
        "$b/bindings/python/gen/recur_python_wrap.c" -L"$pkg/recur" -l:librecur.so.0 \
        -Wl,-rpath,'$ORIGIN' -Wl,--disable-new-dtags -o "$pkg/recur/_native.$pyhere.so"
      if [[ -f $pkg/recur/_native.$pyhere.so ]]; then
        step python_device 90 0 env PYTHONPATH="$pkg" PYTHONDONTWRITEBYTECODE=1 \
          "$py" "$src/bindings/python/run_tests.py" "$src/bindings/python/tests/test_device.py" "$pyhere"
      else
        skip_step python_device "the extension for $pyhere did not build (python_build.log)"
      fi
    else
      skip_step python_device "$py is ${pyhere:-missing}; the package was built for $soabi and no Python headers or C compiler are here to rebuild it (PYTHON=... at prepare)"
    fi
  else
    step python_device 90 0 env PYTHONPATH="$b/bindings/python" PYTHONDONTWRITEBYTECODE=1 \
      "$py" "$src/bindings/python/run_tests.py" "$src/bindings/python/tests/test_device.py" "$soabi"
  fi

  # ---- compute-sanitizer over the layer, model and streaming device tests (CApiDeviceGpu.*) and
  # the parity cases of Keras 3 stateful layers and every recurrent activation (both routes, masks,
  # go_backwards, initial states).
  local san_filter='CApiDeviceGpu.*:CApiDeviceModelStates.*' parity_filter='Fixtures/KerasParity.MatchesKeras/keras3_stateful_*:Fixtures/KerasParity.MatchesKeras/keras3_recact_*'
  if [[ -z $sanitizer ]]; then
    for tool in memcheck racecheck synccheck; do skip_step "sanitizer_$tool" "no compute-sanitizer (CUDA toolkit) here"; done
  else
    # No --leak-check: the plugin keeps its cuDNN handles for the life of the process on purpose.
    step sanitizer_memcheck 75 2 "$sanitizer" --tool memcheck --error-exitcode 9 --print-limit 20 \
      "$b/tests/recur_c_api_tests" --gtest_filter="$san_filter"
    step sanitizer_racecheck 60 2 "$sanitizer" --tool racecheck --racecheck-report analysis --error-exitcode 9 --print-limit 20 \
      "$b/tests/recur_c_api_tests" --gtest_filter="$san_filter"
    step sanitizer_synccheck 45 2 "$sanitizer" --tool synccheck --error-exitcode 9 --print-limit 20 \
      "$b/tests/recur_c_api_tests" --gtest_filter="$san_filter"
    step sanitizer_memcheck_parity 60 2 env RECUR_TEST_DEVICE=cuda "$sanitizer" --tool memcheck --error-exitcode 9 --print-limit 20 \
      "$b/tests/recur_keras_parity" --gtest_filter="$parity_filter" --gtest_brief=1
    # Whole models on the device: normalization, pooling, convolutions, merges, embeddings (Keras 3).
    step sanitizer_memcheck_graphs 90 2 env RECUR_TEST_DEVICE=cuda "$sanitizer" --tool memcheck --error-exitcode 9 --print-limit 20 \
      "$b/tests/recur_graph_parity" --gtest_brief=1 \
      --gtest_filter='*keras3_sequence_conv*:*keras3_norms*:*keras3_pooling*:*keras3_merging*:*keras3_embedding*:*keras3_activations*'
    # The attention layers, strided reads (Permute, slices) and Masking on the device (ABI 5).
    step sanitizer_memcheck_attention 60 2 env RECUR_TEST_DEVICE=cuda "$sanitizer" --tool memcheck --error-exitcode 9 --print-limit 20 \
      "$b/tests/recur_graph_parity" --gtest_brief=1 \
      --gtest_filter='Graphs/GraphParity.MatchesKeras/keras3_attention*:Graphs/GraphParity.MatchesKeras/keras3_reshaping*:Graphs/GraphParity.MatchesKeras/keras3_tensor_ops*'
  fi
  # ---- last, as time allows, measurements (recorded, not pass or fail): where a streaming step's
  # time goes (RECUR_CUDA_PROFILE=1 over the benchmark's one-stream steps), with CUDA graphs and
  # without (RECUR_CUDA_GRAPHS=0); every layer case with
  # cuBLAS for every GEMM (RECUR_CUDA_GEMM=cublas) instead of the ordered sums of small products, to
  # show what the summation order does; and the benchmark with every step up to 2^26 multiply-adds
  # fused, to show where the fused pass pays.
  TAIL_LINES=6 measure stream_step_profile 60 '^recur cuda profile' env RECUR_CUDA_PROFILE=1 \
    "$b/bench/recur_gpu_bench" --one-stream
  TAIL_LINES=6 measure stream_step_profile_no_graphs 60 '^recur cuda profile' env RECUR_CUDA_PROFILE=1 \
    RECUR_CUDA_GRAPHS=0 "$b/bench/recur_gpu_bench" --one-stream
  # A stream's step with no copies queued for its input and outputs (RECUR_CUDA_ZERO_COPY=1: the
  # kernels read and write the pinned staging block): its device tests, then its time.
  step device_tests_zero_copy 45 1 env RECUR_CUDA_ZERO_COPY=1 "$b/tests/recur_c_api_tests" --gtest_filter='CApiDevice*'
  TAIL_LINES=6 measure stream_step_profile_zero_copy 60 '^recur cuda profile' env RECUR_CUDA_PROFILE=1 \
    RECUR_CUDA_ZERO_COPY=1 "$b/bench/recur_gpu_bench" --one-stream
  TAIL_LINES=12 measure parity_with_cublas_order 120 '^parity: ' env RECUR_CUDA_GEMM=cublas RECUR_TEST_DEVICE=cuda \
    "$b/tests/recur_keras_parity" --gtest_filter='KerasParitySummary.*'
  TAIL_LINES=40 measure gpu_bench_fused_2e26 120 'reset_after=0' env RECUR_CUDA_FUSED_WORK=67108864 "$b/bench/recur_gpu_bench"
  # ---- summary
  local total=$((SECONDS - start)) i
  {
    printf '\n=== summary (%ds, GPU: %s)\n' "$total" "$( ((gpu)) && nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || echo "none: $why_no_gpu$( ((emulate)) && echo '; the emulator ran the device checks')")"
    printf '%-32s %-8s %s\n' check time result
    for i in "${!names[@]}"; do printf '%-32s %-8s %s\n' "${names[$i]}" "${times[$i]}" "${results[$i]}"; done
  } | tee "$logs/summary.txt"

  # At most 8 files come back from $OUT: the summary, the benchmark, the failures' logs, and
  # everything in one archive.
  rm -rf "$rtl"
  tar czf "$final_logs/gpu-logs.tar.gz" -C "$logs" . 2>/dev/null
  cp "$logs/summary.txt" "$final_logs/"
  [[ -f $logs/gpu_bench.log ]] && cp "$logs/gpu_bench.log" "$final_logs/bench.txt"
  local n=3
  for i in "${!names[@]}"; do
    if [[ ${results[$i]} == FAILED* && -f $logs/${names[$i]}.log ]] && ((n < 8)); then
      cp "$logs/${names[$i]}.log" "$final_logs/"
      n=$((n + 1))
    fi
  done
  [[ -n ${OUT:-} ]] && rm -rf "$work"
  echo "logs: $final_logs"
  return $failed
}

if [[ $mode == prepare ]]; then
  prepare
else
  run
fi
