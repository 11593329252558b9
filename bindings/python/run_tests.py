# SPDX-License-Identifier: Apache-2.0
"""Runs one pytest file of bindings/python/tests for ctest (bindings/python/tests.cmake), against
the package in the build tree (PYTHONPATH). Exit status 77, which ctest reports as skipped, with
the reason printed, when this Python lacks pytest or NumPy.

Usage: run_tests.py TEST_FILE SOABI   (SOABI: that of the Python the extension was built for)
       run_tests.py --mypy PACKAGE_DIR SOABI   (mypy over the built package; skipped without mypy)
"""
import importlib.util
import os
import sys
import sysconfig


def run_mypy(package):
    if importlib.util.find_spec("mypy") is None:
        print("SKIPPED: %s has no mypy (scripts/test.sh puts it in build/python-venv)" % sys.executable)
        return 77
    from mypy import api

    out, err, status = api.run(["--ignore-missing-imports", "--no-incremental", "--cache-dir", os.devnull, package])
    sys.stdout.write(out + err)
    return status


def main():
    test_file, built_for = sys.argv[1], sys.argv[-1]
    here = sysconfig.get_config_var("SOABI")
    if here != built_for:
        print("%s (Python %s) cannot import the extension built here: it was built for %s, this Python "
              "loads %s. Configure with -DRECUR_PYTHON_TEST_EXECUTABLE naming a Python of the version "
              "Python3_EXECUTABLE is (or the reverse)." % (sys.executable, sys.version.split()[0], built_for, here))
        return 1
    if test_file == "--mypy":
        return run_mypy(sys.argv[2])
    missing = [name for name in ("pytest", "numpy") if importlib.util.find_spec(name) is None]
    if missing:
        print("SKIPPED: %s has no %s. scripts/test.sh makes build/python-venv with them; or run "
              "'%s -m venv VENV && VENV/bin/pip install numpy pytest' and configure with "
              "-DRECUR_PYTHON_TEST_EXECUTABLE=VENV/bin/python" % (sys.executable, " or ".join(missing), sys.executable))
        return 77

    import pytest

    # -rs: say why each skipped test skipped. No cache folder and no byte code in the source tree.
    sys.dont_write_bytecode = True
    return pytest.main(["-q", "-rs", "-p", "no:cacheprovider", test_file])


# Python put this script's folder first on sys.path: it holds the source package recur/, which has
# no extension; the package under test is the build tree's, on PYTHONPATH. Done on import too: a
# multiprocessing "spawn" child imports this file as its __main__ module (as __mp_main__), and
# must neither see the source package nor run the tests again (hence the guard below).
_here = os.path.dirname(os.path.realpath(__file__))
sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != _here]

if __name__ == "__main__":
    sys.exit(main())
