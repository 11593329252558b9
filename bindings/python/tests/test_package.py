# SPDX-License-Identifier: Apache-2.0
"""The package folder as the wheel holds it: the extension loads the librecur.so.0 beside it (not
one the system's loader would find elsewhere), and its version is the project's."""
import os
import re
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


def test_version_is_the_projects():
    text = (SOURCE / "CMakeLists.txt").read_text(encoding="utf-8")
    project = re.search(r"project\(\s*recur\s+VERSION\s+([0-9.]+)", text).group(1)
    assert _native.recur_binding_version() == project


def test_package_folder_holds_what_the_wheel_ships():
    names = set(os.listdir(PACKAGE))
    assert {"__init__.py", "librecur.so.0", "_native" + sysconfig.get_config_var("EXT_SUFFIX")} <= names
    sources = {p.name for p in (SOURCE / "bindings" / "python" / "recur").glob("*.py")}
    assert sources <= names
