#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fetches what the Spark integration's build and tests need into a venv under the build tree:
# PySpark from PyPI (its pyspark/jars folder holds Spark's jars, which the Java part compiles and
# runs against; no Maven repository is needed) with pandas and PyArrow (mapInPandas, Parquet).
#
#   integrations/spark/deps.sh [BUILD_DIR]     (default: build) -> BUILD_DIR/spark-venv
#
# Idempotent and quiet when the venv is already there. Made from the python3 the Python binding
# is built for, so that the recur extension of the build tree imports in it. Exits 0 even when
# it cannot fetch (no network): the spark_* tests then skip, saying why and naming this script.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
mkdir -p "$build"
venv=$(cd "$build" && pwd)/spark-venv
# Spark 4 runs on Java 17 or 21; its Python API takes pandas 2 (it warns on 3) and PyArrow >= 11.
pins=("pyspark>=4.0,<5" "pandas>=2.0,<3" "pyarrow>=11" "numpy")
py=${RECUR_SPARK_PYTHON:-python3}

have_all() {
  "$venv/bin/python" - <<'PY' 2>/dev/null
import os, sys, pyspark, pandas, pyarrow, numpy
jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
sys.exit(0 if any(n.startswith("spark-sql_") for n in os.listdir(jars)) else 1)
PY
}
if [[ -x $venv/bin/python ]] && have_all; then
  exit 0
fi
if ! command -v javac >/dev/null || ! javac -version 2>&1 | grep -Eq 'javac (1[7-9]|2[0-9])'; then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    echo "spark deps: installing openjdk-17-jdk-headless (apt)"
    { apt-get install -y -q openjdk-17-jdk-headless >/dev/null 2>&1 ||
      { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q openjdk-17-jdk-headless >/dev/null 2>&1; }; } ||
      echo "spark deps: WARNING: could not install openjdk-17-jdk-headless; the spark_* tests will skip" >&2
  else
    echo "spark deps: WARNING: Spark 4 needs a Java 17+ JDK (apt-get install openjdk-17-jdk-headless)" >&2
  fi
fi
echo "spark deps: making $venv (pyspark, pandas, pyarrow from PyPI; about 500 MB, once)"
rm -rf "$venv"
if ! { "$py" -m venv "$venv" && "$venv/bin/python" -m pip install -q --disable-pip-version-check "${pins[@]}"; } ||
   ! have_all; then
  echo "spark deps: WARNING: could not install ${pins[*]} into $venv; the spark_* tests will skip" >&2
  rm -rf "$venv"
fi
exit 0
