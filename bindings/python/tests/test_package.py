# SPDX-License-Identifier: Apache-2.0
"""The package folder as the wheel holds it: the extension loads the librecur.so.0 beside it (not
one the system's loader would find elsewhere), and its version is the project's."""
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from recur import _native

SOURCE = Path(__file__).resolve().parents[3]
PACKAGE = Path(_native.__file__).resolve().parent


def test_extension_is_for_this_python():
    assert Path(_native.__file__).name == "_native" + sysconfig.get_config_var("EXT_SUFFIX")


def test_librecur_loaded_from_the_package_folder():
    # RUNPATH $ORIGIN: the copy beside _native, whatever LD_LIBRARY_PATH or the system holds.
    with open("/proc/self/maps") as maps:
        loaded = {line.split()[-1] for line in maps if line.rstrip().endswith("librecur.so.0")}
    assert loaded == {str(PACKAGE / "librecur.so.0")}


def test_librecur_beside_the_extension_wins_over_ld_library_path(tmp_path):
    # Another librecur.so.0 on LD_LIBRARY_PATH (an installed recur of another version, say).
    shutil.copy(PACKAGE / "librecur.so.0", tmp_path / "librecur.so.0")
    env = dict(os.environ, LD_LIBRARY_PATH=str(tmp_path))
    code = ("import recur._native\n"
            "print(sorted({l.split()[-1] for l in open('/proc/self/maps') if l.rstrip().endswith('librecur.so.0')}))")
    out = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, check=True,
                         universal_newlines=True).stdout
    assert out.strip() == repr([str(PACKAGE / "librecur.so.0")])


def test_version_is_the_projects():
    text = (SOURCE / "CMakeLists.txt").read_text(encoding="utf-8")
    project = re.search(r"project\(\s*recur\s+VERSION\s+([0-9.]+)", text).group(1)
    assert _native.recur_binding_version() == project


def test_package_folder_holds_what_the_wheel_ships():
    names = set(os.listdir(PACKAGE))
    assert {"__init__.py", "librecur.so.0", "_native" + sysconfig.get_config_var("EXT_SUFFIX")} <= names
    sources = {p.name for p in (SOURCE / "bindings" / "python" / "recur").glob("*.py")}
    assert sources <= names
