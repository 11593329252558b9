#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Spark benchmark (not a test; docs/spark.md has its figures): rows per second scoring one
# Parquet file of sequences with the Keras 3 fixture model (Masking, GRU, LSTM, Dense), through
# recur-spark (Java) and recur.spark (Python) at local[1] and local[2], against the recur CLI
# scoring the same rows, padded and masked, in one process and one call.
#
#   integrations/spark/bench/bench.sh [BUILD_DIR] [ROWS]      (default: build, 100000)
#
# Needs the build's recur-spark.jar, recur.jar, Python binding and CLI, and BUILD_DIR/spark-venv
# (integrations/spark/deps.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
rows=${2:-100000}
py=$build/spark-venv/bin/python
jars=$(echo "$build"/spark-venv/lib/python3*/site-packages/pyspark/jars)
model=$src/integrations/spark/tests/fixtures/gru_masking_keras3.keras
out=$build/spark-bench
mkdir -p "$out"
for f in "$py" "$build/integrations/spark/recur-spark.jar" "$build/cli/recur"; do
  [[ -e $f ]] || { echo "bench.sh: $f missing: build first (and run integrations/spark/deps.sh $build)" >&2; exit 1; }
done

"$py" - "$out" "$rows" <<'PY'
import sys, numpy as np, pyarrow as pa, pyarrow.parquet as pq
out, n = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(7)
lens = rng.integers(1, 13, size=n)
x = np.zeros((n, 12, 4), np.float32)
mask = np.zeros((n, 12), bool)
for i, t in enumerate(lens):
    x[i, :t] = rng.normal(size=(t, 4)) + 0.01
    mask[i, :t] = True
seq = pa.array([x[i, :t].tolist() for i, t in enumerate(lens)], type=pa.list_(pa.list_(pa.float32())))
# Eight files, so that Spark reads them as several partitions (one file of one row group is one task).
import os, shutil
shutil.rmtree(out + "/bench.parquet", ignore_errors=True)
if os.path.isfile(out + "/bench.parquet"): os.remove(out + "/bench.parquet")
os.makedirs(out + "/bench.parquet")
table = pa.table({"id": pa.array(np.arange(n, dtype=np.int64)), "seq": seq})
for k in range(8):
    pq.write_table(table.slice(k * n // 8, (k + 1) * n // 8 - k * n // 8), out + "/bench.parquet/part-%d.parquet" % k)
np.save(out + "/x.npy", x)
np.save(out + "/mask.npy", mask)
print("data: %d rows, %d steps in all (1 to 12 each), 4 features" % (n, lens.sum()))
PY

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$py" - "$build/cli/recur" "$model" "$out" "$rows" <<'PY'
import resource, subprocess, sys, time
cli, model, out, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
best = None
for _ in range(3):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN); t0 = time.perf_counter()
    subprocess.run([cli, "run", model, "-i", out + "/x.npy", "-m", out + "/mask.npy", "-o", out + "/cli_out.npz",
                    "--threads", "1"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0; r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime
    if best is None or wall < best[0]:
        best = (wall, cpu)
print("cli recur run (1 process, 1 thread, one padded+masked batch): %d rows in %.3f s (best of 3): %.0f rows/s, "
      "CPU %.1f us/row" % (n, best[0], n / best[0], best[1] * 1e6 / n))
PY

mapfile -t jvm < "$src/integrations/spark/jvm-options.txt"  # as the tests run Spark (CMakeLists.txt)
jvm+=(-Dlog4j2.configurationFile=$src/integrations/spark/tests/log4j2.properties)
cp="$build/integrations/spark/recur-spark.jar:$build/bindings/java/recur.jar:$build/integrations/spark/test-classes:$jars/*"
for master in 'local[1]' 'local[2]'; do
  java "${jvm[@]}" -cp "$cp" recur.spark.SparkBench "$master" "$out/bench.parquet" "$model" 256 3 2>/dev/null
done
cd "$out"  # Spark's Python workers put their working folder first on sys.path
for master in 'local[1]' 'local[2]'; do
  PYTHONPATH=$build/bindings/python "$py" "$here/bench_python.py" "$master" "$out/bench.parquet" "$model" 256 3 2>/dev/null
done
