#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: install what is missing, build recur, then run the bundled Keras model (a trained
# Embedding -> masked GRU -> LSTM -> Dense network, saved by Keras 2 and Keras 3 as .keras and
# .h5) through the C example (dlopen), the C++ example and the `recur` command-line tool, showing
# recur's outputs next to Keras's, on the GPU when one can run and on the CPU otherwise.
#
# It builds only what it runs: the library, the two examples and the CLI (no tests, no bindings);
# the GPU plugin only where an NVIDIA driver is present. `recur devices` says once where the model
# can run and why not on a GPU; everything after it runs on the device that resolved. The build's
# output goes to build/build.log (its warnings, if any, are printed).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --main

# The GPU plugin is built (when the CUDA toolkit and cuDNN 9 are found) only where a GPU can run it.
configure=(-DCMAKE_BUILD_TYPE=Release -DRECUR_BUILD_TESTS=OFF -DRECUR_BUILD_BINDINGS=OFF -DRECUR_BUILD_EXAMPLES=ON
           -DRECUR_BUILD_CLI=ON)
if command -v nvidia-smi >/dev/null || [[ -e /proc/driver/nvidia ]]; then
  gpu_driver=1
  configure+=(-URECUR_BUILD_CUDA)  # its default: on where the CUDA toolkit and cuDNN are found
else
  gpu_driver=0
  configure+=(-DRECUR_BUILD_CUDA=OFF)
fi
mkdir -p build
echo "== building recur (configure: build/configure.log, build: build/build.log)"
if ((!gpu_driver)); then
  echo "   no NVIDIA driver here (neither nvidia-smi nor /proc/driver/nvidia): the GPU plugin is not built" \
       "and the model runs on the CPU"
fi
if ! cmake -S . -B build "${configure[@]}" >build/configure.log 2>&1; then
  cat build/configure.log >&2
  exit 1
fi
targets=(recur recur_example_c recur_example_cpp recur_cli)
if grep -q '^RECUR_BUILD_CUDA:BOOL=ON' build/CMakeCache.txt; then
  targets+=(recur_cuda)
  echo "   with the GPU plugin (librecur_cuda.so)"
elif ((gpu_driver)); then
  echo "   without the GPU plugin: no CUDA toolkit with cuDNN 9 found (build/configure.log)"
fi
if ! cmake --build build -j"$(nproc)" --target "${targets[@]}" >build/build.log 2>&1; then
  tail -n 60 build/build.log >&2
  echo "the build failed; the whole log is build/build.log" >&2
  exit 1
fi
warnings=$(grep -c 'warning:' build/build.log || true)
if ((warnings)); then
  echo "   $warnings compiler warning(s):"
  grep -A3 'warning:' build/build.log | sed 's/^/   /'
fi

echo
echo "== recur devices: where the model can run, and why not on a GPU"
devices=$(build/cli/recur devices)
echo "$devices"
# The first GPU when one is usable, else the CPU: what "auto" resolves to, asked for once.
if grep -Eq '^cuda devices: [1-9]' <<<"$devices"; then device=cuda; else device=cpu; fi
echo "-> running on: $device"

echo
echo "== C example (dlopen): layers from Keras JSON, then the bundled model files =="
build/examples/c/recur_example_c build/c_api/librecur.so.0 examples/models

echo
echo "== C++ example (recur.hpp): the model on $device, then streaming =="
build/examples/cpp/recur_example_cpp examples/models "$device"

echo
echo "== recur CLI =="
build/cli/recur info examples/models/sentiment_keras3.keras
for d in keras2 keras3; do
  for f in keras h5; do
    echo "-- recur verify examples/models/sentiment_$d.$f against Keras's predictions"
    build/cli/recur verify "examples/models/sentiment_$d.$f" --input examples/models/sentiment_inputs.npy \
      --expected "examples/models/sentiment_${d}_keras.npy" --device "$device"
  done
done
