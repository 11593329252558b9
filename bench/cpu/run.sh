#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CPU benchmark of recur against oneDNN, PyTorch and ONNX Runtime (README.md): installs what is
# missing, builds the contenders, runs them and writes results/ (results-quick/ with --quick).
#
#   bench/cpu/run.sh [--quick] [driver options, e.g. --shapes seq,batch]
#
# RECUR_BUILD_DIR: recur's build directory (default: the repository's build/); recur is built
# there in Release when its c_api/librecur.so is missing. PYTHON: the interpreter for the venv.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
RECUR_BUILD_DIR=$(realpath -m "${RECUR_BUILD_DIR:-$REPO/build}")
VENV="$HERE/.venv"
JOBS=$(nproc)

OUT="$HERE/results"
for a in "$@"; do
  # A quick run checks the pipeline only; it never overwrites a full run's results.
  [ "$a" = "--quick" ] && OUT="$HERE/results-quick"
done

say() { printf '\n== %s\n' "$*"; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# --- Debian packages -------------------------------------------------------------------------
SYS_PY=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
need=()
for p in libdnnl-dev libeigen3-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
command -v cmake >/dev/null || need+=(cmake)
command -v g++ >/dev/null || need+=(g++)
# Debian's python3 makes venvs with pip only once python3-venv is installed.
"$SYS_PY" -c 'import ensurepip' >/dev/null 2>&1 || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

# --- Python venv -------------------------------------------------------------------------------
if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV"
  "$SYS_PY" -m venv "$VENV"
fi
PY="$VENV/bin/python"
if ! "$PY" -c 'import numpy, matplotlib, onnx, onnxruntime' >/dev/null 2>&1; then
  say "installing numpy matplotlib onnx onnxruntime"
  "$PY" -m pip install -q numpy matplotlib onnx onnxruntime
fi

# Without importing it: the wheel is the CUDA build, and only its CPU libraries are used.
torch_dir() {
  "$PY" - <<'EOF'
import importlib.util, os
spec = importlib.util.find_spec("torch")
print(os.path.dirname(spec.origin) if spec and spec.origin else "")
EOF
}
TORCH_DIR=$(torch_dir)
if [ -z "$TORCH_DIR" ] || [ ! -e "$TORCH_DIR/lib/libtorch_cpu.so" ]; then
  say "installing torch (the wheel alone: its C++ libraries are linked, its Python side is unused)"
  "$PY" -m pip install -q --no-deps torch || echo "warning: torch did not install; the run goes on without it"
  TORCH_DIR=$(torch_dir)
fi
if [ -n "$TORCH_DIR" ] && ldd "$TORCH_DIR/lib/libtorch_cpu.so" | grep -q 'not found'; then
  # libtorch_cpu of the CUDA wheel needs the CUDA runtime and CUPTI libraries at load time even
  # on the CPU; without a system CUDA they come from the small wheels its own metadata names.
  spec=$("$PY" - <<'EOF'
import importlib.metadata as md, re
for req in md.requires("torch") or []:
    m = re.match(r"\s*cuda-toolkit\s*(\[[^\]]*\])?\s*([^;]*)", req)
    if m:
        print("cuda-toolkit[cudart,cupti]" + m.group(2).strip())
        break
EOF
)
  if [ -n "$spec" ]; then
    say "installing $spec for libtorch_cpu's CUDA runtime dependencies"
    "$PY" -m pip install -q "$spec" || true
  fi
  if ldd "$TORCH_DIR/lib/libtorch_cpu.so" | grep -q 'not found'; then
    echo "warning: libtorch_cpu.so cannot load ($(ldd "$TORCH_DIR/lib/libtorch_cpu.so" | grep 'not found' | tr -s ' \t\n' ' ')); no PyTorch contender"
    TORCH_DIR=""
  fi
fi

# --- recur ---------------------------------------------------------------------------------------
if [ ! -e "$RECUR_BUILD_DIR/c_api/librecur.so" ]; then
  say "building recur (Release) in $RECUR_BUILD_DIR"
  cmake -S "$REPO" -B "$RECUR_BUILD_DIR" -DCMAKE_BUILD_TYPE=Release
  cmake --build "$RECUR_BUILD_DIR" -j"$JOBS" --target recur
fi
if grep -qs '^CMAKE_BUILD_TYPE:STRING=Debug' "$RECUR_BUILD_DIR/CMakeCache.txt"; then
  echo "warning: $RECUR_BUILD_DIR is a Debug build; recur's times will not mean much"
fi

# --- the contenders --------------------------------------------------------------------------------
say "building the contenders in $HERE/build"
cmake -S "$HERE" -B "$HERE/build" -DCMAKE_BUILD_TYPE=Release -DRECUR_BUILD_DIR="$RECUR_BUILD_DIR" \
  -DTORCH_DIR="$TORCH_DIR" >/dev/null
cmake --build "$HERE/build" -j"$JOBS" --target native_worker sgemm_peak read_peak
if [ -n "$TORCH_DIR" ]; then
  cmake --build "$HERE/build" -j"$JOBS" --target torch_worker ||
    { echo "warning: torch_worker did not build; no PyTorch contender"; rm -f "$HERE/build/torch_worker"; }
else
  rm -f "$HERE/build/torch_worker"  # not one from an earlier configuration either
fi

# --- run ---------------------------------------------------------------------------------------------
say "running (a process per contender and thread count)"
cd "$HERE"
exec "$PY" driver.py --bin "$HERE/build" --out "$OUT" "$@"
