# SPDX-License-Identifier: Apache-2.0
"""Builds the wheel of recur's Python package: `pip wheel bindings/python -w dist/` from the
source tree's root (or `pip install bindings/python`).

The build step configures recur's CMake project (two folders up) with only what the package needs,
builds its target recur_python_package and copies the package folder it makes,
<build>/bindings/python/recur/ (the .py files, the extension _native, librecur.so.0 and, when
asked for, the GPU plugin librecur_cuda.so), stripped, into the wheel. The version is the one of
project(VERSION) in the top CMakeLists.txt.

Environment:
  RECUR_PYTHON_BUILD_DIR  the CMake build folder to use (relative: to the source tree's root). One
                          that is already configured (it has a CMakeCache.txt, e.g. the source
                          tree's build/) is only built, its options kept; it must have been
                          configured for this Python (-DPython3_EXECUTABLE). Default:
                          <source>/build-python, configured here.
  RECUR_PYTHON_CUDA       ON: build the GPU plugin (needs the CUDA toolkit and cuDNN 9) and put it
                          in the wheel beside librecur.so.0.
  RECUR_CMAKE_ARGS        more arguments for the configure step, e.g.
                          "-DRECUR_ARCH_FLAGS=-march=x86-64-v3" (split as a shell would).
  RECUR_SOURCE_DIR        recur's source tree (absolute), when this folder is not inside it (a
                          copy of bindings/python built elsewhere, as pip before 21.3 did).
  CMAKE_BUILD_PARALLEL_LEVEL  parallel build jobs (default: the number of CPUs).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import setuptools
from setuptools import Distribution, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
PROJECT_RE = re.compile(r"^\s*project\(\s*recur\s+VERSION\s+([0-9]+\.[0-9]+\.[0-9]+)", re.MULTILINE)


def say(message):
    print("recur setup.py: " + message, flush=True)


def fail(message):
    sys.stderr.write("recur setup.py: " + message + "\n")
    raise SystemExit(1)


def source_dir():
    """The recur source tree: RECUR_SOURCE_DIR, else the folder two levels above this file."""
    given = os.environ.get("RECUR_SOURCE_DIR")
    root = Path(given).resolve() if given else HERE.parent.parent
    top = root / "CMakeLists.txt"
    if top.is_file() and (root / "bindings" / "python" / "CMakeLists.txt").is_file() \
            and PROJECT_RE.search(top.read_text(encoding="utf-8")):
        return root
    if given:
        fail("RECUR_SOURCE_DIR=%s is not recur's source tree (no CMakeLists.txt with "
             "project(recur VERSION ...) and bindings/python/CMakeLists.txt there)" % given)
    fail("%s is not inside recur's source tree, so there is nothing to build the package from. "
         "Build from the source tree (pip wheel <recur>/bindings/python; pip 21.3 or later builds "
         "in place, older pips build a copy elsewhere), or set RECUR_SOURCE_DIR=<recur>." % HERE)


def project_version(root):
    return PROJECT_RE.search((root / "CMakeLists.txt").read_text(encoding="utf-8")).group(1)


def build_dir(root):
    # A relative folder is taken from the source tree's root (pip runs this file in bindings/python).
    given = os.environ.get("RECUR_PYTHON_BUILD_DIR")
    return (root / given).resolve() if given else root / "build-python"


def cached_python(cache):
    match = re.search(r"^Python3_EXECUTABLE:[A-Z]+=(.*)$", cache.read_text(encoding="utf-8", errors="replace"),
                      re.MULTILINE)
    return match.group(1).strip() if match else None


def env_on(name):
    return os.environ.get(name, "").strip().upper() in ("1", "ON", "TRUE", "YES")


class BinaryDistribution(Distribution):
    """The package holds native code: a platform wheel (cp3XX-cp3XX-linux_<arch>), not py3-none-any."""

    def has_ext_modules(self):
        return True


class CMakeBuild(build_ext):
    """Builds recur_python_package with CMake and copies its package folder into build_lib."""

    def run(self):
        if self.inplace:
            fail("editable installs are not supported: build the package with CMake (cmake --build "
                 "build --target recur_python_package) and use PYTHONPATH=build/bindings/python")
        root = source_dir()
        cuda = env_on("RECUR_PYTHON_CUDA")
        given = os.environ.get("RECUR_PYTHON_BUILD_DIR")
        build = build_dir(root)
        cmake = shutil.which("cmake")
        if not cmake:
            fail("cmake not found: install CMake 3.22 or later (Debian: apt-get install cmake), and "
                 "recur's build dependencies (scripts/install-deps.sh --main; SWIG and python3-dev)")

        cache = build / "CMakeCache.txt"
        reuse = bool(given) and cache.is_file()
        if not reuse and cache.is_file() and cached_python(cache) != sys.executable:
            # FindPython keeps the headers it found for another Python of the same minor version.
            say("%s was configured for another Python: configuring afresh" % build)
            cache.unlink()
        if not reuse:
            args = [cmake, "-S", str(root), "-B", str(build),
                    "-DCMAKE_BUILD_TYPE=Release",
                    "-DPython3_EXECUTABLE=" + sys.executable,
                    "-DRECUR_BUILD_SHARED=ON", "-DRECUR_WITH_FILES=ON",
                    "-DRECUR_BUILD_TESTS=OFF", "-DRECUR_BUILD_CLI=OFF", "-DRECUR_BUILD_EXAMPLES=OFF",
                    "-DRECUR_BUILD_BINDINGS=ON", "-DRECUR_BUILD_PYTHON=ON", "-DRECUR_BUILD_JAVA=OFF",
                    "-DRECUR_BUILD_CSHARP=OFF", "-DRECUR_BUILD_GO=OFF",
                    "-DRECUR_BUILD_CUDA=" + ("ON" if cuda else "OFF")]
            args += shlex.split(os.environ.get("RECUR_CMAKE_ARGS", ""))
            say("configuring recur in %s" % build)
            out = self.run_tool(args, capture=True)
            # find_package(SWIG) and the Python headers are optional for the CMake project (the
            # binding is skipped without them); here they are what is being built.
            for line in out.splitlines():
                if "SWIG not found" in line or ("Python binding:" in line and "skipped" in line):
                    fail("CMake cannot build the Python binding: %s. Install SWIG 4 and the headers of "
                         "this Python (Debian: apt-get install swig python3-dev)" % line.strip(" -"))
        if reuse and cuda and "\nRECUR_BUILD_CUDA:BOOL=ON\n" not in cache.read_text(errors="replace"):
            fail("RECUR_PYTHON_CUDA=ON, but %s is configured with RECUR_BUILD_CUDA off: configure it with "
                 "-DRECUR_BUILD_CUDA=ON, or unset RECUR_PYTHON_BUILD_DIR" % build)
        targets = ["recur_python_package"] + (["recur_cuda"] if cuda else [])
        jobs = [] if os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") else ["-j", str(os.cpu_count() or 1)]
        hint = ("" if not reuse else " (%s is used as configured: are RECUR_BUILD_BINDINGS and RECUR_BUILD_PYTHON "
                "on there, and were SWIG and the Python headers found?)" % build)
        self.run_tool([cmake, "--build", str(build), "--target"] + targets + jobs, hint=hint)

        package = build / "bindings" / "python" / "recur"
        ext = sysconfig.get_config_var("EXT_SUFFIX")
        if not (package / ("_native" + ext)).is_file():
            found = ", ".join(sorted(p.name for p in package.glob("_native*"))) or "no extension"
            fail("%s holds %s, not _native%s, the extension this Python (%s) imports: configure %s "
                 "with -DPython3_EXECUTABLE=%s, or build elsewhere (unset RECUR_PYTHON_BUILD_DIR)"
                 % (package, found, ext, sys.version.split()[0], build, sys.executable))
        dest = Path(self.build_lib) / "recur"
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        libraries = []
        for item in sorted(package.iterdir()):
            name = item.name
            if name.startswith(".") or name == "__pycache__":
                continue  # the build's stamp file, byte code
            if name.startswith("_native.") and name.endswith(".so") and name != "_native" + ext:
                continue  # built for another Python in the same folder
            if name == "librecur_cuda.so":
                continue  # only when asked for, below
            if item.is_dir():
                shutil.copytree(item, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(item, dest / name)
                if name.endswith(".so") or ".so." in name:
                    libraries.append(dest / name)
        # librecur's shared dependencies that a machine with only Python lacks travel along:
        # libzip (Debian's python3 brings zlib, bzip2 and OpenSSL, not libzip). The extension's
        # DT_RPATH $ORIGIN, which glibc also searches for librecur's own dependencies, finds it.
        for dep, soname in self.bundled_dependencies(dest / "librecur.so.0"):
            shutil.copy2(dep, dest / soname)
            libraries.append(dest / soname)
        if cuda:
            plugin = build / "c_api" / "librecur_cuda.so"
            if not plugin.is_file():
                fail("RECUR_PYTHON_CUDA=ON but %s was not built (is RECUR_BUILD_CUDA on in %s?)" % (plugin, build))
            shutil.copy2(plugin, dest / plugin.name)
            libraries.append(dest / plugin.name)
        self.strip(libraries)

    def run_tool(self, args, capture=False, hint=""):
        say(" ".join(shlex.quote(a) for a in args))
        if not capture:
            if subprocess.call(args) != 0:
                fail("command failed: " + " ".join(shlex.quote(a) for a in args) + hint)
            return ""
        proc = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
        sys.stdout.write(proc.stdout)
        if proc.returncode != 0:
            fail("command failed: " + " ".join(shlex.quote(a) for a in args))
        return proc.stdout

    BUNDLED = ("libzip.so.",)

    def bundled_dependencies(self, library):
        """(file, SONAME) of each of library's NEEDED entries named in BUNDLED, as ldd resolves it."""
        ldd = shutil.which("ldd")
        if not ldd:
            fail("ldd not found: it tells which libzip librecur.so.0 uses, to bundle it in the wheel")
        deps = []
        for line in self.run_tool([ldd, str(library)], capture=True).splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[1] == "=>" and parts[0].startswith(self.BUNDLED):
                if parts[2] == "not":
                    fail("%s needs %s, which the loader does not find" % (library, parts[0]))
                deps.append((Path(os.path.realpath(parts[2])), parts[0]))
        return deps

    def strip(self, libraries):
        # Debug symbols are most of librecur's size; the dynamic symbols stay.
        strip = os.environ.get("STRIP") or shutil.which("strip")
        if not strip:
            self.warn("no strip found: the shared libraries go into the wheel unstripped")
            return
        for lib in libraries:
            self.run_tool([strip, "--strip-unneeded", str(lib)])

    def get_outputs(self):
        return []

    def get_source_files(self):
        return []


def license_metadata():
    # setuptools 77 reads a licence as an SPDX expression (PEP 639) and its files into
    # dist-info/licenses/; older ones (the last for Python 3.8 is 75) take a classifier.
    major = int(re.match(r"[0-9]+", setuptools.__version__).group(0))
    files = ["LICENSE", "THIRD_PARTY"]  # links to the source tree's root files
    if major >= 77:
        return {"license_expression": "Apache-2.0", "license_files": files}, []
    return {"license": "Apache-2.0", "license_files": files}, ["License :: OSI Approved :: Apache Software License"]


ROOT = source_dir()
LICENSE_ARGS, LICENSE_CLASSIFIERS = license_metadata()
# setuptools' own scratch folders (build/, recur.egg-info/) go into the build folder, not beside
# this file in the source tree.
SCRATCH = build_dir(ROOT) / "bindings" / "python" / "setuptools"
SCRATCH.mkdir(parents=True, exist_ok=True)
setup(
    name="recur",
    version=project_version(ROOT),
    description="Keras recurrent layers and the models around them, run natively with Keras's numbers",
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    python_requires=">=3.8",
    install_requires=["numpy"],
    classifiers=[
        "Development Status :: 4 - Beta",
        "Intended Audience :: Developers",
        "Intended Audience :: Science/Research",
        "Operating System :: POSIX :: Linux",
        "Programming Language :: C++",
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3 :: Only",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ] + LICENSE_CLASSIFIERS,
    # The package comes from the CMake build (CMakeBuild), not from setuptools' discovery.
    packages=[],
    py_modules=[],
    distclass=BinaryDistribution,
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
    options={"build": {"build_base": str(SCRATCH / "build")}, "egg_info": {"egg_base": str(SCRATCH)}},
    **LICENSE_ARGS,
)
