#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian 12 packages recur builds and tests with, skipping those already present.
#
#   scripts/install-deps.sh [GROUP...]      (no group: every group but --cross)
#
#   --main       build recur and run its examples and CLI (scripts/main.sh): the compiler, CMake,
#                pkg-config, Eigen, nlohmann-json, libzip, zlib, CLI11
#   --test       the test suite (scripts/test.sh --quick): GoogleTest, libhdf5 (hostile model files),
#                valgrind (memcheck tests), python3 (the fixtures' structure check)
#   --bindings   the Java, C#, Go and Python bindings and their tests: SWIG, a JDK with JUnit 5, Mono
#                with NUnit, Go, Python's headers and venv module (scripts/test.sh installs NumPy
#                and pytest into a venv, build/python-venv)
#   --packaging  scripts/package-test.sh: dpkg-dev and file (cpack's library dependencies), NuGet,
#                Maven with Debian's compiler and resources plugins (a Maven consumer build), lintian
#   --fuzz       clang and libFuzzer (scripts/fuzz.sh)
#   --cross      scripts/cross.sh: the ARM64 cross compilers and arm64 libraries (multiarch),
#                qemu-user, MinGW-w64 with zlib, wine64, and source entries for this machine's
#                Debian archive (libzip's source is cross-built for Windows)
# Every group includes --main.
set -euo pipefail

main=(build-essential cmake pkg-config libeigen3-dev nlohmann-json3-dev libzip-dev zlib1g-dev libcli11-dev)
test=(libgtest-dev libgmock-dev libhdf5-dev valgrind binutils python3)
bindings=(swig default-jdk-headless junit5 mono-mcs mono-runtime nunit-console libnunit-cil-dev golang-go python3-dev
          python3-venv)
packaging=(dpkg-dev file lintian nuget maven libmaven-compiler-plugin-java libmaven-resources-plugin-java)
fuzz=(clang libclang-rt-14-dev)
# The cross builds compile GoogleTest from libgtest-dev's sources and the C# glue with SWIG.
cross=(libgtest-dev swig binutils crossbuild-essential-arm64 qemu-user libzip-dev:arm64 zlib1g-dev:arm64
       gcc-mingw-w64-x86-64-posix g++-mingw-w64-x86-64-posix libz-mingw-w64-dev wine64 dpkg-dev)

groups=()
for arg in "$@"; do
  case "$arg" in
    --main|--test|--bindings|--packaging|--fuzz|--cross) groups+=("${arg#--}") ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install-deps.sh: unknown group '$arg' (see --help)" >&2; exit 2 ;;
  esac
done
((${#groups[@]})) || groups=(test bindings packaging fuzz)
packages=("${main[@]}")
for g in "${groups[@]}"; do
  declare -n group=$g
  packages+=("${group[@]}")
  unset -n group
done

SUDO=""
if [[ $(id -u) -ne 0 ]] && command -v sudo >/dev/null; then
  SUDO=sudo
fi

# The apt source files apt reads (sources.list and sources.list.d/*.list, *.sources).
apt_source_files() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [[ -f $f ]] && echo "$f"
  done
}

# deb-src entries for this machine's Debian archive, copied from its `deb` entries for the release
# (VERSION_CODENAME): the same archive, options and keyring, so no host is named here. Entries for
# other suites (security, updates, third-party repositories) are left out: libzip's source is in
# the release itself, and a third-party repository may publish no sources.
deb_src_entries() {
  local codename
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [[ -n $codename ]] || { echo "install-deps.sh: /etc/os-release names no VERSION_CODENAME" >&2; return 1; }
  local f
  while read -r f; do
    case "$f" in
      *.sources)
        # deb822 stanzas, separated by blank lines: those with Types: deb and the release in
        # Suites become Types: deb-src with that suite alone.
        awk -v codename="$codename" '
          function flush() {
            if (is_deb && has_suite && !disabled) {
              printf "Types: deb-src\n%sSuites: %s\n\n", rest, codename
            }
            is_deb = 0; has_suite = 0; disabled = 0; rest = ""
          }
          /^[ \t]*$/ { flush(); next }
          /^#/ { next }
          /^Types:/ { for (i = 2; i <= NF; i++) if ($i == "deb") is_deb = 1; next }
          /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == codename) has_suite = 1; next }
          /^Enabled:[ \t]*no/ { disabled = 1 }
          { rest = rest $0 "\n" }
          END { flush() }' "$f"
        ;;
      *)
        # One-line entries: deb [options] URI suite component...
        awk -v codename="$codename" '
          $1 == "deb" {
            n = 2
            if ($2 ~ /^\[/) { while (n <= NF && $n !~ /\]$/) n++; n++ }
            if ($(n + 1) == codename) { sub(/^deb/, "deb-src"); print }
          }' "$f"
        ;;
    esac
  done < <(apt_source_files)
}

sources_changed=0
if [[ " ${groups[*]} " == *" cross "* ]]; then
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $SUDO dpkg --add-architecture arm64
    sources_changed=1
  fi
  have_src=0
  while read -r f; do
    if grep -Eqs '^(Types:.*deb-src|deb-src )' "$f"; then have_src=1; fi
  done < <(apt_source_files)
  if ((!have_src)); then
    entries=$(deb_src_entries)
    if [[ -z $entries ]]; then
      echo "install-deps.sh: no 'deb' entry for this release in the apt sources to derive a deb-src entry from;" \
           "add one for your Debian mirror (scripts/cross.sh windows runs apt-get source libzip)" >&2
      exit 1
    fi
    # One file per format, so apt reads each entry as written.
    if grep -q '^Types:' <<<"$entries"; then
      grep -v '^deb-src ' <<<"$entries" | $SUDO tee /etc/apt/sources.list.d/recur-deb-src.sources >/dev/null
    fi
    if grep -q '^deb-src ' <<<"$entries"; then
      grep '^deb-src ' <<<"$entries" | $SUDO tee /etc/apt/sources.list.d/recur-deb-src.list >/dev/null
    fi
    sources_changed=1
  fi
fi

missing=()
for p in "${packages[@]}"; do
  [[ " ${missing[*]} " == *" $p "* ]] && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  # apt-source needs the index of the source entries even when every package is present.
  if ((sources_changed)); then $SUDO apt-get update -qq; fi
  exit 0
fi
echo "installing: ${missing[*]}"
if [[ $(id -u) -ne 0 && -z $SUDO ]]; then
  echo "need root or sudo to install: ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
