#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the Python wheel, recur-<version>-cp3XX-cp3XX-linux_<arch>.whl, with
# `pip wheel bindings/python` (bindings/python/setup.py: CMake on this source tree), and with
# --check tests it as a user gets it: a fresh venv (python -m venv) with only NumPy (from PyPI) and
# the wheel installed, which, run from a folder outside the source tree, predicts the bundled model
# examples/models/sentiment_keras3.keras on the quick start's ten token ids and must give Keras's
# probabilities (examples/models/sentiment_keras3_keras.txt, first row) within 1e-6. It prints the
# wheel's size and the time of `import recur` (python -X importtime).
#
#   scripts/python-wheel.sh [--check] [--python PYTHON] [--build-dir DIR] [--out DIR]
#
#   --python     the Python to build for (default: python3); the wheel is for its version
#   --build-dir  a CMake build folder to reuse (RECUR_PYTHON_BUILD_DIR; an already configured one,
#                e.g. build/, is only built); default: build-python/, configured by setup.py
#   --out        where the wheel goes (default: dist/)
# Exit status 77 (ctest: skipped) when PYTHON has no venv module (Debian: apt-get install python3-venv).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
check=0 python=python3 build_dir="" out=$src/dist
while (($#)); do
  case $1 in
    --check) check=1 ;;
    --python) python=${2:?--python needs a value}; shift ;;
    --build-dir) build_dir=${2:?--build-dir needs a value}; shift ;;
    --out) out=${2:?--out needs a value}; shift ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "python-wheel.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
command -v "$python" >/dev/null || { echo "python-wheel.sh: no $python" >&2; exit 1; }
version=$(sed -nE 's/^project\(recur VERSION ([0-9.]+).*/\1/p' "$src/CMakeLists.txt")
tag=$("$python" -c 'import sys; print("cp%d%d" % sys.version_info[:2])')
arch=$(uname -m)
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/recur-*.whl

if [[ -n $build_dir ]]; then export RECUR_PYTHON_BUILD_DIR=$(realpath -m "$build_dir"); fi
echo "== pip wheel bindings/python (Python $("$python" -c 'import platform; print(platform.python_version())'))"
(cd "$src" && "$python" -m pip wheel --no-deps bindings/python -w "$out")
wheel=$out/recur-$version-$tag-$tag-linux_$arch.whl
if [[ ! -f $wheel ]]; then
  echo "python-wheel.sh: pip wrote no $(basename "$wheel"); $out holds: $(ls "$out")" >&2
  exit 1
fi
size=$(stat -c %s "$wheel")
echo "wheel: $wheel ($size bytes)"
((check)) || exit 0

echo "== the wheel's contents and metadata"
"$python" - "$wheel" "$version" "$src/bindings/python/recur" <<'END'
import os
import sys
import sysconfig
import zipfile

wheel, version, sources = sys.argv[1:4]
names = zipfile.ZipFile(wheel).namelist()
info = "recur-%s.dist-info/" % version
read = lambda name: zipfile.ZipFile(wheel).read(name).decode()
want = ["recur/" + n for n in sorted(os.listdir(sources)) if n.endswith((".py", ".pyi")) or n == "py.typed"]
want += ["recur/_native" + sysconfig.get_config_var("EXT_SUFFIX"), "recur/librecur.so.0", "recur/libzip.so.4"]
problems = ["%s is missing" % n for n in want if n not in names]
problems += ["%s has no %s" % (info, f) for f in ("LICENSE", "THIRD_PARTY")
             if info + f not in names and info + "licenses/" + f not in names]
problems += ["%s should not be in the wheel" % n for n in names
             if not n.startswith(info) and n not in want and n != "recur/librecur_cuda.so"]
metadata = read(info + "METADATA").splitlines()
for line in ("Name: recur", "Version: " + version, "Requires-Dist: numpy", "Requires-Python: >=3.8"):
    if line not in metadata:
        problems.append("METADATA lacks '%s'" % line)
if "License-Expression: Apache-2.0" not in metadata and "License: Apache-2.0" not in metadata:
    problems.append("METADATA names no Apache-2.0 licence")
if "Root-Is-Purelib: false" not in read(info + "WHEEL").splitlines():
    problems.append("WHEEL does not say Root-Is-Purelib: false (a platform wheel)")
for p in problems:
    print("FAILED: " + p)
print("%d files, %s" % (len(names), "as expected" if not problems else "%d problems" % len(problems)))
sys.exit(1 if problems else 0)
END

if ! "$python" -c 'import ensurepip, venv' 2>/dev/null; then
  echo "SKIPPED: $python has no venv module with pip (ensurepip) to make a fresh venv (Debian: apt-get install python3-venv)"
  exit 77
fi
# Outside the source tree (and its build folders), so that nothing but the installed wheel is importable.
work=$(mktemp -d "${TMPDIR:-/tmp}/recur-wheel-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "== fresh venv in $work/venv: NumPy and the wheel"
"$python" -m venv "$work/venv"
venv_python=$work/venv/bin/python
"$venv_python" -m pip install -q --only-binary numpy numpy
"$venv_python" -m pip install -q --no-deps "$wheel"
"$venv_python" -m pip list --format=freeze
# Stripped: no static symbol table left (the dynamic one is what the loader needs).
for lib in "$("$venv_python" -c 'import os, sysconfig; print(os.path.join(sysconfig.get_path("platlib"), "recur"))')"/*.so*; do
  if readelf -S --wide "$lib" | grep -q ' \.symtab '; then echo "FAILED: $lib is not stripped" >&2; exit 1; fi
done
mkdir "$work/run"
cd "$work/run"
env -u PYTHONPATH -u LD_LIBRARY_PATH "$venv_python" - "$src/examples/models/sentiment_keras3.keras" \
    "$src/examples/models/sentiment_keras3_keras.txt" "$work/venv" <<'END'
import os
import sys

import numpy as np
import recur

model_path, keras_path, venv = sys.argv[1:4]
if not os.path.realpath(recur.__file__).startswith(os.path.realpath(venv) + os.sep):
    sys.exit("recur was imported from %s, not from the venv" % recur.__file__)
# The wheel's own librecur and libzip are the ones loaded (a machine with only Python has no libzip).
package = os.path.realpath(os.path.dirname(recur.__file__))
with open("/proc/self/maps") as f:
    loaded = {os.path.basename(p): p for p in (l.split()[-1] for l in f if "/lib" in l)}
for lib in ("librecur.so.0", "libzip.so.4"):
    if os.path.dirname(os.path.realpath(loaded.get(lib, "?"))) != package:
        sys.exit("%s was loaded from %s, not from the wheel's %s" % (lib, loaded.get(lib, "nowhere"), package))
with open(keras_path) as f:
    keras = [float(v) for v in f.readline().split()]
ids = np.array([[12, 13, 18, 11, 15, 16, 5, 2, 6, 6]], dtype=np.int32)
got = np.asarray(recur.load_model(model_path).predict(ids), dtype=np.float64).reshape(-1)
print("recur %s from %s" % (recur.__version__, os.path.dirname(recur.__file__)))
print("recur:", " ".join("%.9f" % v for v in got))
print("Keras:", " ".join("%.9g" % v for v in keras))
if got.shape != (len(keras),):
    sys.exit("recur gave %d probabilities, Keras %d" % (got.size, len(keras)))
worst = float(np.max(np.abs(got - np.array(keras))))
print("largest difference: %.3g (tolerance 1e-6)" % worst)
sys.exit(0 if worst <= 1e-6 else "recur's probabilities differ from Keras's by more than 1e-6")
END
# The cumulative time of the module `recur` (its own imports included; NumPy is imported on first
# use), in a new process: the first time after the install, then again (the files cached).
import_ms() {
  env -u PYTHONPATH "$venv_python" -X importtime -c 'import recur' 2>&1 |
    awk -F'|' '$3 ~ /^ *recur *$/ {gsub(/ /, "", $2); printf "%.1f", $2 / 1000}'
}
first=$(import_ms)
echo "wheel size: $size bytes; import recur: $first ms the first time, $(import_ms) ms the second"
