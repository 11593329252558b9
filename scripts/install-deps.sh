#!/usr/bin/env bash
# Installs the Debian 12 packages recur builds and tests with, skipping those already present.
# dpkg-dev and file give cpack's .deb packages their library dependencies (dpkg-shlibdeps); nuget packs
# and installs the C# NuGet package in scripts/package-test.sh, and maven with Debian's compiler and
# resources plugins builds a Maven project against the installed artifact there.
# --cross adds what scripts/cross.sh needs: the ARM64 cross compilers and arm64 libraries
# (multiarch), qemu-user, MinGW-w64 with zlib, wine64, and Debian's source entries (libzip's
# source is cross-built for Windows).
set -euo pipefail

packages=(build-essential cmake pkg-config libeigen3-dev nlohmann-json3-dev libgtest-dev libgmock-dev
          binutils libhdf5-dev libzip-dev libcli11-dev clang libclang-rt-14-dev valgrind
          swig default-jdk-headless junit5 mono-mcs mono-runtime nunit-console libnunit-cil-dev golang-go
          dpkg-dev file nuget maven libmaven-compiler-plugin-java libmaven-resources-plugin-java)
SUDO=""
if [[ $(id -u) -ne 0 ]] && command -v sudo >/dev/null; then
  SUDO=sudo
fi
sources_changed=0
if [[ "${1:-}" == --cross ]]; then
  packages+=(crossbuild-essential-arm64 qemu-user libzip-dev:arm64 zlib1g-dev:arm64
             gcc-mingw-w64-x86-64-posix g++-mingw-w64-x86-64-posix libz-mingw-w64-dev wine64 dpkg-dev)
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $SUDO dpkg --add-architecture arm64
    sources_changed=1
  fi
  if ! grep -rqs '^Types: deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src ' /etc/apt/sources.list; then
    printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: %s\n' \
      /usr/share/keyrings/debian-archive-keyring.gpg | $SUDO tee /etc/apt/sources.list.d/recur-deb-src.sources >/dev/null
    sources_changed=1
  fi
fi
missing=()
for p in "${packages[@]}"; do
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
