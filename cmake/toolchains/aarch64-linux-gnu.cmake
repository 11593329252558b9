# SPDX-License-Identifier: Apache-2.0
# ARM64 Linux with Debian's cross compilers (crossbuild-essential-arm64) and arm64 libraries
# installed through multiarch (libzip-dev:arm64, zlib1g-dev:arm64; scripts/install-deps.sh --cross).
# Eigen, nlohmann-json and GoogleTest's sources are header-only or built here, from the host's
# /usr/include and /usr/src. Tests run under qemu-aarch64 (package qemu-user), so ctest works.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
find_program(RECUR_QEMU_AARCH64 qemu-aarch64)
if(RECUR_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${RECUR_QEMU_AARCH64} -L /usr/aarch64-linux-gnu)
endif()
# Multiarch: the target's libraries live in /usr/lib/aarch64-linux-gnu, which find_library
# searches first for this CMAKE_LIBRARY_ARCHITECTURE; headers may come from the host's
# /usr/include (Eigen, nlohmann-json: no architecture of their own). pkg-config sees only the
# target's .pc files.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")
