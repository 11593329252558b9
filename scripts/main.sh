#!/usr/bin/env bash
# The main job: install what is missing, build recur, then run the bundled Keras model (a trained
# Embedding -> masked GRU -> LSTM -> Dense network, saved by Keras 2 and Keras 3 as .keras and
# .h5) through the C example (dlopen), the C++ example and the `recur` command-line tool, showing
# recur's outputs next to Keras's, on the GPU when one can run ("auto") and on the CPU otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DRECUR_BUILD_TESTS=OFF
cmake --build build -j"$(nproc)"

echo "== C example (dlopen): layers from Keras JSON, then the bundled model files =="
build/examples/c/recur_example_c build/c_api/librecur.so.0 examples/models

echo
echo "== C++ example (recur.hpp): the model on the best device (auto), then streaming =="
build/examples/cpp/recur_example_cpp examples/models auto

echo
echo "== recur CLI =="
build/cli/recur devices
build/cli/recur info examples/models/sentiment_keras3.keras
for d in keras2 keras3; do
  for f in keras h5; do
    echo "-- recur verify examples/models/sentiment_$d.$f against Keras's predictions"
    build/cli/recur verify "examples/models/sentiment_$d.$f" --input examples/models/sentiment_inputs.npy \
      --expected "examples/models/sentiment_${d}_keras.npy" --device auto
  done
done
