#!/usr/bin/env bash
# Installs the Debian 12 packages recur builds and tests with, skipping those already present.
# dpkg-dev and file give cpack's .deb packages their library dependencies (dpkg-shlibdeps); nuget packs
# and installs the C# NuGet package in scripts/package-test.sh, and maven with Debian's compiler and
# resources plugins builds a Maven project against the installed artifact there.
set -euo pipefail

packages=(build-essential cmake pkg-config libeigen3-dev nlohmann-json3-dev libgtest-dev libgmock-dev
          binutils libhdf5-dev libzip-dev libcli11-dev clang libclang-rt-14-dev valgrind
          swig default-jdk-headless junit5 mono-mcs mono-runtime nunit-console libnunit-cil-dev golang-go
          dpkg-dev file nuget maven libmaven-compiler-plugin-java libmaven-resources-plugin-java)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
echo "installing: ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
