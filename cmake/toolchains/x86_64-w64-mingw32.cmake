# SPDX-License-Identifier: Apache-2.0
# Windows x64 with Debian's MinGW-w64 cross compilers (g++-mingw-w64-x86-64-posix: the posix thread
# model, since recur uses std::thread and std::mutex). zlib comes from libz-mingw-w64-dev; libzip
# is cross-built from Debian's source package by scripts/cross.sh into RECUR_MINGW_PREFIX.
# Tests run under wine64 (package wine64), so ctest works.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR AMD64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-posix)
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++-posix)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
find_program(RECUR_WINE64 NAMES wine64 PATHS /usr/lib/wine)
if(RECUR_WINE64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${RECUR_WINE64})
endif()
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32 ${RECUR_MINGW_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# (try_compile reads this file again without the cache: keep the first, complete setting.)
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES RECUR_MINGW_PREFIX)
if(RECUR_MINGW_PREFIX)
  set(ENV{PKG_CONFIG_LIBDIR} "${RECUR_MINGW_PREFIX}/lib/pkgconfig:/usr/x86_64-w64-mingw32/lib/pkgconfig:/usr/share/pkgconfig")
  set(ENV{PKG_CONFIG_PATH} "")
endif()
# zlib linked in too (CMake >= 3.24), so recur.dll needs no zlib1.dll beside it.
set(ZLIB_USE_STATIC_LIBS ON)
# The MinGW runtime (libstdc++, libgcc, winpthread) linked in, so recur.dll and the test programs
# need no DLLs from the compiler next to them.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static-libgcc -static-libstdc++ -Wl,-Bstatic,--whole-archive -lwinpthread -Wl,--no-whole-archive,-Bdynamic")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-static-libgcc -static-libstdc++ -Wl,-Bstatic,--whole-archive -lwinpthread -Wl,--no-whole-archive,-Bdynamic")
set(CMAKE_MODULE_LINKER_FLAGS_INIT "-static-libgcc -static-libstdc++ -Wl,-Bstatic,--whole-archive -lwinpthread -Wl,--no-whole-archive,-Bdynamic")
