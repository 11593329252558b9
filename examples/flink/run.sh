#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds and runs RecurFlinkExample in a local MiniCluster against the build tree's jars:
#   examples/flink/run.sh [BUILD] [MODEL.keras] [EVENTS.csv]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
model=${2:-integrations/flink/tests/fixtures/gru.keras}
lib=$(grep -E '^RECUR_FLINK_JARS:' "$build/CMakeCache.txt" | cut -d= -f2)
cp="$build/integrations/flink/recur-flink.jar:$build/bindings/java/recur.jar"
for j in "$lib"/flink-dist-*.jar "$lib"/log4j-*.jar; do cp="$cp:$j"; done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
javac --release 17 -d "$out" -cp "$cp" examples/flink/RecurFlinkExample.java
opens=()
for p in java.util java.lang java.lang.reflect java.io java.net java.nio sun.nio.ch java.time java.util.concurrent \
         java.util.concurrent.atomic java.text java.math; do opens+=("--add-opens=java.base/$p=ALL-UNNAMED"); done
java "${opens[@]}" -Dlog4j.configurationFile=integrations/flink/tests/log4j2-test.properties -cp "$out:$cp" \
  RecurFlinkExample "$model" ${3:+"$3"}
