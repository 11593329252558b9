#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds that are not the host's default, each with the tests it can run:
#   scripts/cross.sh static   librecur.a with and without file support (host): a test subset, a C
#                             program linked statically against each, their dynamic dependencies;
#                             the one with files is the whole project (library, CLI, tests,
#                             examples) built with clang in C++17 where clang is installed, its
#                             unit tests run too: code only GCC accepts fails here
#   scripts/cross.sh arm64    ARM64 Linux (cmake/toolchains/aarch64-linux-gnu.cmake), tests under
#                             qemu-aarch64
#   scripts/cross.sh windows  Windows x64 (cmake/toolchains/x86_64-w64-mingw32.cmake): recur.dll,
#                             tests under wine64, and the C# binding's native glue
#                             librecur_csharp.dll; libzip is cross-built from Debian's source first
# scripts/install-deps.sh --cross installs what they need. Each builds only the library and the
# test programs it runs (no CLI, bindings, examples or GPU plugin).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=$(nproc)
common=(-DCMAKE_BUILD_TYPE=Release -DRECUR_BUILD_TESTS=ON -DRECUR_BUILD_CUDA=OFF -DRECUR_BUILD_BINDINGS=OFF
        -DRECUR_BUILD_CLI=OFF -DRECUR_BUILD_EXAMPLES=OFF -DRECUR_UNITY_BUILD=ON)
if command -v ccache >/dev/null && [[ "${CCACHE_DISABLE:-0}" != 1 ]]; then
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"
  common+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
test_targets=(recur_unit_tests recur_c_api_tests recur_keras_parity)

# The emulated subset: the core's unit tests, the C ABI tests, the whole Keras layer parity suite
# (every fixture, plus the model-file cases) and the whole-model parity suite. Left out under
# emulation: the stress and thread tests (16 threads under an emulator take minutes and test the
# host's threading more than the port).
emulated_exclude='CApiStress\.|CApiThreads\.|NumThreadsApi\.ConcurrentCalls|Shapes/NumThreads|c_api_num_threads_split_'
# qemu-aarch64 7.2 (Debian 12) on CI's kernel never returns from joining a thread: even a
# three-line std::thread program hangs. Under it, the tests that start threads are left out too.
qemu_thread_tests='Sequence\.(ChunkedProjectionOnSeveralThreads|StepsGiveBitwiseTheSameNumbersWhicheverWayTheyReadTheWeights)|CApiDevice\.InfoStringsStayValidAcrossQueries|CApiGraph\.StreamsGiveTheWholeRunsOutputs|CApiLifecycle\.LastErrorIs|Allocations\..*_t2|Initializers\.EntropySeedsAreDistinctAcrossThreads|Cancel\.(OneThreadStopsBetweenTimesteps|SeveralThreadsAllStop|StatefulLayerKeepsItsStates)|GpuHostCopy\.'

stripped_size() {  # bytes of a stripped copy of $2, stripped with $1
  local tmp
  tmp=$(mktemp)
  "$1" --strip-unneeded -o "$tmp" "$2"
  stat -c %s "$tmp"
  rm -f "$tmp"
}

case "${1:-}" in
  static)
    for files in ON OFF; do
      dir=build-static-files-$files
      options=(-DRECUR_BUILD_SHARED=OFF -DRECUR_WITH_FILES=$files)
      targets=(recur recur_c_api_tests recur_keras_parity)
      clang=0
      # One build with clang in C++17 checks both compilers' dialects at the cost of one build: the
      # whole project, as the Release pass builds it with GCC.
      if [[ $files == ON ]] && command -v clang++ >/dev/null; then
        clang=1 dir=build-static-clang
        options+=(-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CXX_STANDARD=17
                  -DRECUR_BUILD_CLI=ON -DRECUR_BUILD_EXAMPLES=ON)
        targets=(all)
      elif [[ $files == ON ]]; then
        echo "static: no clang++ (scripts/install-deps.sh --fuzz): built with the default compiler only"
      fi
      echo "static: $dir ($(((clang)) && echo "clang, C++17, the whole project" || echo "default compiler"))"
      cmake -S . -B "$dir" "${common[@]}" "${options[@]}" >/dev/null
      cmake --build "$dir" -j"$jobs" --target "${targets[@]}"
      # The core's unit tests do not depend on how librecur is packaged: the C ABI and parity only
      # (and the unit tests once with clang, whose code generation they check).
      if ((clang)); then "$dir/tests/recur_unit_tests" --gtest_brief=1; fi
      # recur.hpp's tests too: a static archive carries the core's C++ symbols beside the wrapper's.
      (cd "$dir" && ctest --output-on-failure -j"$jobs" -R '^(CApi|CppWrapper|NumThreadsApi|Shapes/)')
      # Keras parity on the kernel set this CPU picks, every case once (the summary test runs them
      # all: counted as one test, as ctest's parity runs are).
      # Its table of every case is printed only when it fails.
      if ! "$dir/tests/recur_keras_parity" --gtest_filter='KerasParitySummary.*' --gtest_brief=1 \
           >"$dir/keras_parity.log" 2>&1; then
        cat "$dir/keras_parity.log"
        exit 1
      fi
      grep -E '^(parity|device|\[  PASSED )' "$dir/keras_parity.log"
      # A C program against librecur.a alone: the C++ runtime and, with files, libzip and zlib.
      libs=(-lstdc++ -lm -pthread)
      args=()
      if [[ $files == ON ]]; then libs+=(-lzip -lz); else args+=(--no-files); fi
      cc -std=c99 -Wall -Wextra -Werror -DRECUR_STATIC -Ic_api/include tests/static/static_link.c \
         "$dir/c_api/librecur.a" "${libs[@]}" -o "$dir/static_link"
      "$dir/static_link" "${args[@]}"
      needed=$(readelf -d "$dir/static_link" | grep NEEDED || true)
      echo "$needed"
      if grep -q librecur <<<"$needed"; then echo "static_link needs librecur at run time" >&2; exit 1; fi
      if [[ $files == OFF ]] && grep -Eq 'libzip|libz\.|libhdf5' <<<"$needed"; then
        echo "the build without file support still needs libzip, zlib or libhdf5" >&2
        exit 1
      fi
      echo "librecur.a (RECUR_WITH_FILES=$files), stripped: $(stripped_size strip "$dir/c_api/librecur.a") bytes"
    done
    ;;
  arm64)
    dir=build-arm64
    cmake -S . -B "$dir" --toolchain cmake/toolchains/aarch64-linux-gnu.cmake "${common[@]}" >/dev/null
    cmake --build "$dir" -j"$jobs" --target recur "${test_targets[@]}" recur_graph_parity recur_allocation_tests
    # ctest runs each program through qemu-aarch64 (CMAKE_CROSSCOMPILING_EMULATOR).
    (cd "$dir" && ctest --output-on-failure -j"$jobs" --timeout 600 -E "$emulated_exclude|$qemu_thread_tests")
    # qemu-aarch64's default CPU has the dot-product extension, so the neon set's int8 GEMM ran sdot
    # above; an Armv8.0 Cortex-A72 has none: the portable int8 path's tests, once more.
    QEMU_CPU=cortex-a72 qemu-aarch64 -L /usr/aarch64-linux-gnu "$dir/tests/recur_unit_tests" \
      --gtest_filter='Precision.*:CpuKernels.*' --gtest_brief=1
    # The parity summary's worst errors on the neon kernels, for the log.
    qemu-aarch64 -L /usr/aarch64-linux-gnu "$dir/tests/recur_keras_parity" --gtest_filter='KerasParitySummary.*' |
      grep -E '^(parity|device)'
    echo "librecur.so (aarch64), stripped: $(stripped_size aarch64-linux-gnu-strip "$dir/c_api/librecur.so.0"*) bytes"
    ;;
  windows)
    # libzip for MinGW from Debian's source package, built once into build-deps/mingw.
    prefix=$root/build-deps/mingw
    if [[ ! -f $prefix/lib/libzip.a ]]; then
      mkdir -p build-deps
      (cd build-deps && rm -rf libzip-*/ && apt-get source -qq libzip >/dev/null)
      src=$(ls -d build-deps/libzip-*/ | head -n1)
      cmake -S "$src" -B build-deps/libzip-build --toolchain "$root/cmake/toolchains/x86_64-w64-mingw32.cmake" \
            -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" -DBUILD_SHARED_LIBS=OFF \
            -DENABLE_BZIP2=OFF -DENABLE_LZMA=OFF -DENABLE_ZSTD=OFF -DENABLE_OPENSSL=OFF -DENABLE_GNUTLS=OFF \
            -DENABLE_MBEDTLS=OFF -DENABLE_COMMONCRYPTO=OFF -DENABLE_WINDOWS_CRYPTO=OFF -DBUILD_TOOLS=OFF \
            -DBUILD_REGRESS=OFF -DBUILD_EXAMPLES=OFF -DBUILD_DOC=OFF >/dev/null
      cmake --build build-deps/libzip-build -j"$jobs"
      cmake --install build-deps/libzip-build >/dev/null
    fi
    # nlohmann-json's package names /usr/include, where glibc's C headers would shadow MinGW's: a copy
    # of its CMake package in the prefix points at its headers alone.
    if [[ ! -d $prefix/share/cmake/nlohmann_json ]]; then
      mkdir -p "$prefix/share/cmake" "$prefix/include"
      cp -r /usr/share/cmake/nlohmann_json "$prefix/share/cmake/"
      ln -sfn /usr/include/nlohmann "$prefix/include/nlohmann"
    fi
    dir=build-windows
    cmake -S . -B "$dir" --toolchain cmake/toolchains/x86_64-w64-mingw32.cmake -DRECUR_MINGW_PREFIX="$prefix" \
          -Dnlohmann_json_DIR="$prefix/share/cmake/nlohmann_json" "${common[@]}" >/dev/null
    export WINEPREFIX=$root/$dir/wineprefix WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
    wine=$(command -v wine64 || echo /usr/lib/wine/wine64)
    "$wine" wineboot --init >/dev/null 2>&1 || true  # the prefix, before ctest starts several wines at once
    cmake --build "$dir" -j"$jobs" --target recur "${test_targets[@]}" recur_graph_parity
    # A test that fails under wine gets a second try: wine's own client now and then drops its
    # connection to wineserver mid-test ("wine client error: recvmsg: Connection reset by peer").
    (cd "$dir" && ctest --output-on-failure -j"$jobs" --timeout 600 --repeat until-pass:2 -E "$emulated_exclude")
    echo "recur.dll, stripped: $(stripped_size x86_64-w64-mingw32-strip "$dir/bin/recur.dll") bytes"
    # The C# binding's native side for Windows: SWIG's C glue as librecur_csharp.dll (the name
    # Recur.dll's DllImport asks for), linked against recur.dll's import library. No Windows .NET
    # runtime is here to load Recur.dll, so a C program loads the glue under wine and calls recur
    # through it.
    glue=$dir/csharp
    rm -rf "$glue" && mkdir -p "$glue/generated"
    swig -csharp -namespace Recur -dllimport librecur_csharp -Ibindings -Ic_api/include \
         -outdir "$glue/generated" -o "$glue/recurCSHARP_wrap.c" bindings/recur.i
    x86_64-w64-mingw32-gcc-posix -O2 -shared -fno-strict-aliasing -Ic_api/include -o "$glue/librecur_csharp.dll" \
      "$glue/recurCSHARP_wrap.c" "$dir/c_api/librecur.dll.a" -static-libgcc \
      -Wl,-Bstatic,--whole-archive -lwinpthread -Wl,--no-whole-archive,-Bdynamic
    x86_64-w64-mingw32-gcc-posix -std=c99 -Wall -Wextra -Werror -O2 -Ic_api/include \
      -o "$glue/csharp_glue_load.exe" tests/windows/csharp_glue_load.c "$dir/c_api/librecur.dll.a" -static-libgcc
    cp "$dir/bin/recur.dll" "$glue/"
    (cd "$glue" && "$wine" ./csharp_glue_load.exe)
    echo "librecur_csharp.dll: $(x86_64-w64-mingw32-objdump -p "$glue/librecur_csharp.dll" | grep -c 'CSharp_') exported entry points"
    ;;
  *)
    echo "usage: $0 static|arm64|windows" >&2
    exit 2
    ;;
esac
