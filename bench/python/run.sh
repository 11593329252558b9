#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# recur's Python API against ONNX Runtime and LiteRT in one process (README.md): makes the venv
# and the models if missing, builds recur's Python package if missing, runs bench.py and prints
# the Markdown tables (results/results.md; results-quick/ with --quick).
#
#   bench/python/run.sh [--quick] [bench.py options, e.g. --threads 1]
#
# RECUR_BUILD_DIR: recur's build directory (default: build/). BENCH_VENV: the benchmark venv
# (default: $RECUR_BUILD_DIR/bench-python-venv). KERAS_PYTHON: a Python with tensorflow and
# tf_keras to make the models (default: a venv made from requirements-keras.txt in
# $RECUR_BUILD_DIR/bench-keras-venv). PYTHON: the interpreter the venvs are made from; it must be
# the one recur's package was built for.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BUILD=$(realpath -m "${RECUR_BUILD_DIR:-$REPO/build}")
VENV=${BENCH_VENV:-$BUILD/bench-python-venv}
MODELS=$BUILD/bench-python-models
SYS_PY=${PYTHON:-python3}

OUT="$HERE/results"
for a in "$@"; do
  [ "$a" = "--quick" ] && OUT="$HERE/results-quick"  # never overwrites a full run's results
done

say() { printf '\n== %s\n' "$*" >&2; }

if [ ! -e "$BUILD/bindings/python/recur/.sources" ]; then
  say "building recur's Python package (Release) in $BUILD"
  cmake -S "$REPO" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release
  cmake --build "$BUILD" -j"$(nproc)" --target recur_python_package
fi
if grep -qs '^CMAKE_BUILD_TYPE:STRING=Debug' "$BUILD/CMakeCache.txt"; then
  echo "warning: $BUILD is a Debug build; recur's times will not mean much" >&2
fi

if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV"
  "$SYS_PY" -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import numpy, onnx, onnxruntime, ai_edge_litert' >/dev/null 2>&1; then
  say "installing $HERE/requirements.txt"
  "$VENV/bin/python" -m pip install -q -r "$HERE/requirements.txt"
fi

if [ -z "${KERAS_PYTHON:-}" ]; then
  KV=$BUILD/bench-keras-venv
  if [ ! -x "$KV/bin/python" ]; then
    say "creating $KV (TensorFlow and tf_keras, to make the models)"
    "$SYS_PY" -m venv "$KV"
  fi
  if ! "$KV/bin/python" -c 'import tensorflow, tf_keras' >/dev/null 2>&1; then
    "$KV/bin/python" -m pip install -q -r "$HERE/requirements-keras.txt"
  fi
  KERAS_PYTHON=$KV/bin/python
fi
if [ ! -e "$MODELS/reference.npz" ] || [ "$HERE/make_models.py" -nt "$MODELS/reference.npz" ]; then
  say "making the models with Keras in $MODELS"
  TF_CPP_MIN_LOG_LEVEL=3 "$KERAS_PYTHON" "$HERE/make_models.py" "$MODELS" >&2
fi

say "running"
export PYTHONPATH="$BUILD/bindings/python${PYTHONPATH:+:$PYTHONPATH}"
# LiteRT logs its delegate choice on stderr once per interpreter.
"$VENV/bin/python" "$HERE/bench.py" --models "$MODELS" --out "$OUT" --build "$BUILD/bench-python" \
  --keras-python "$KERAS_PYTHON" "$@"
cat "$OUT/results.md"
