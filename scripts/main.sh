#!/usr/bin/env bash
# The main job: install what is missing, build recur, and run the C example, which loads
# librecur with dlopen, builds a GRU and an LSTM from Keras JSON and runs a masked batch.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DRECUR_BUILD_TESTS=OFF
cmake --build build -j"$(nproc)"
build/examples/c/recur_example_c build/c_api/librecur.so.0
