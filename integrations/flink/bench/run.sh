#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Flink integration's benchmark (docs/flink.md): events per second per core of RecurKeyedFunction
# (each key's stream saved in Flink state) against the stateless alternative (each event re-runs
# its key's last N events through recur), for GRU(64) and GRU(256), and the checkpoint size per
# 1000 keys. Needs a build with recur-flink (make recur_flink_tests) and a Python with Keras 3.
#
#   integrations/flink/bench/run.sh [BUILD] [PYTHON]    (build, /work/venvs/keras3/bin/python)
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=${1:-build}
py=${2:-/work/venvs/keras3/bin/python}
out=$build/flink-bench
[[ -f $out/gru256.keras ]] || "$py" integrations/flink/bench/make_bench_models.py "$out"
lib=$(grep -E '^RECUR_FLINK_JARS:' "$build/CMakeCache.txt" | cut -d= -f2)
cp="$build/integrations/flink/test-classes:$build/integrations/flink/recur-flink.jar:$build/bindings/java/recur.jar"
for j in "$lib"/flink-dist-*.jar "$lib"/log4j-*.jar; do cp="$cp:$j"; done
opens=()
for p in java.util java.lang java.lang.reflect java.io java.net java.nio sun.nio.ch java.time java.util.concurrent \
         java.util.concurrent.atomic java.text java.math; do opens+=("--add-opens=java.base/$p=ALL-UNNAMED"); done
lscpu | grep 'Model name' || true
exec java "${opens[@]}" -Dlog4j.configurationFile=integrations/flink/tests/log4j2-test.properties -cp "$cp" \
  recur.flink.FlinkBench "$out"
