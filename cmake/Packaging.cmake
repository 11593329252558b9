# SPDX-License-Identifier: Apache-2.0
# Packages (cpack): one Debian package per install component, named and split as Debian splits a
# library, and lintian-clean (scripts/package-test.sh checks; docs/install.md describes them).
# Run from a configured and built folder:  (cd build && cpack -G DEB)
#   librecur0        runtime   librecur.so.0 in the multiarch libdir (/usr/lib/x86_64-linux-gnu)
#   librecur0-cuda   cuda      librecur_cuda.so, the GPU plugin (when the CUDA toolkit and cuDNN were found)
#   librecur-dev     dev       headers, the librecur.so link, recur.pc, the CMake package
#   recur-tools      cli       the `recur` command-line tool
#   librecur-java    java      recur.jar (share/java, and the Maven layout in share/maven-repo),
#                              librecur_java.so (<libdir>/jni, on Debian's default java.library.path)
#   librecur-cil     csharp    Recur.dll and librecur_csharp.so for mono (lib/cli/recur)
#   golang-recur-dev go        the Go module's source (share/recur/go/recur), built by cgo through recur.pc
# Shared-library dependencies come from dpkg-shlibdeps; those between the packages from the
# components' DEPENDS below, at this exact version (one build, one ABI).
set(CPACK_PACKAGE_NAME recur)
set(CPACK_PACKAGE_VENDOR "recur developers")
set(RECUR_DEB_MAINTAINER "recur developers <maintainers@recur.dev>")
set(CPACK_PACKAGE_CONTACT "${RECUR_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${RECUR_DEB_MAINTAINER}")
set(CPACK_PACKAGE_HOMEPAGE_URL "https://recur.dev")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
# No CPACK_PACKAGE_DESCRIPTION_SUMMARY: cpack would put it before each package's own synopsis (the
# first line of CPACK_DEBIAN_<COMPONENT>_DESCRIPTION), turning that into a line of the long
# description. cpack indents the long description and writes " ." for its empty lines; its lines
# stay within lintian's 80 columns, and none may start with a dot.
set(CPACK_PACKAGE_INSTALL_DIRECTORY recur)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Stripped binaries, as Debian ships them (its -dbgsym packages are not made here).
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
# librecur.so.0 is in the package being built, not installed: dpkg-shlibdeps looks for it here.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR}/c_api)
# Only the components that have install rules in this build become packages (a binding whose
# toolchain was not found installs nothing).
get_cmake_property(RECUR_COMPONENTS COMPONENTS)
set(CPACK_COMPONENTS_ALL ${RECUR_COMPONENTS})
list(FILTER CPACK_COMPONENTS_ALL EXCLUDE REGEX "^Unspecified$")

# Each package's /usr/share/doc/<package>: the machine-readable copyright (DEP-5), the Debian
# changelog (gzip -9n, as Debian policy and lintian want it) and THIRD_PARTY. Only for the
# components this build installs, so that no package holds nothing but documents.
set(RECUR_DEB_PACKAGE_runtime librecur0)
set(RECUR_DEB_PACKAGE_cuda librecur0-cuda)
set(RECUR_DEB_PACKAGE_dev librecur-dev)
set(RECUR_DEB_PACKAGE_cli recur-tools)
set(RECUR_DEB_PACKAGE_java librecur-java)
set(RECUR_DEB_PACKAGE_csharp librecur-cil)
set(RECUR_DEB_PACKAGE_go golang-recur-dev)
if(NOT WIN32)
  string(TIMESTAMP RECUR_DEB_DATE "%a, %d %b %Y %H:%M:%S +0000" UTC)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/debian/changelog.in ${PROJECT_BINARY_DIR}/cpack/doc/changelog.Debian @ONLY)
  execute_process(COMMAND gzip -9nf ${PROJECT_BINARY_DIR}/cpack/doc/changelog.Debian RESULT_VARIABLE recur_gzip_rc)
  if(NOT recur_gzip_rc EQUAL 0)
    message(FATAL_ERROR "gzip -9n of ${PROJECT_BINARY_DIR}/cpack/doc/changelog.Debian failed (${recur_gzip_rc})")
  endif()
  foreach(component IN LISTS CPACK_COMPONENTS_ALL)
    if(NOT RECUR_DEB_PACKAGE_${component})
      message(FATAL_ERROR "cmake/Packaging.cmake: install component '${component}' has no package name")
    endif()
    install(FILES ${PROJECT_SOURCE_DIR}/cmake/debian/copyright ${PROJECT_BINARY_DIR}/cpack/doc/changelog.Debian.gz
                  ${PROJECT_SOURCE_DIR}/THIRD_PARTY
      DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/${RECUR_DEB_PACKAGE_${component}} COMPONENT ${component})
  endforeach()
endif()

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME ${RECUR_DEB_PACKAGE_runtime})
# A shlibs file, so that dpkg-shlibdeps maps librecur.so.0 to librecur0 for packages built against
# it. Written here rather than with CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS, which applies to every
# package and warns about the bindings' plugins (no soname).
file(WRITE ${PROJECT_BINARY_DIR}/cpack/runtime/shlibs
  "librecur ${PROJECT_VERSION_MAJOR} librecur0 (>= ${PROJECT_VERSION})\n")
# The loader's cache is refreshed by dpkg's ldconfig trigger, as Debian's library packages do,
# not by maintainer scripts: cpack writes a postinst and a postrm that call ldconfig for a package
# with a library in /usr/lib unless the control files name their own. Naming files that do not
# exist stops that and adds nothing (cpack copies only the control files that exist).
file(WRITE ${PROJECT_BINARY_DIR}/cpack/runtime/triggers "activate-noawait ldconfig\n")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/cpack/runtime/shlibs
  ${PROJECT_BINARY_DIR}/cpack/runtime/triggers
  ${PROJECT_BINARY_DIR}/cpack/no-maintainer-scripts/postinst ${PROJECT_BINARY_DIR}/cpack/no-maintainer-scripts/postrm)
file(REMOVE ${PROJECT_BINARY_DIR}/cpack/no-maintainer-scripts/postinst ${PROJECT_BINARY_DIR}/cpack/no-maintainer-scripts/postrm)
set(CPACK_DEBIAN_CUDA_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/cpack/runtime/triggers
  ${PROJECT_BINARY_DIR}/cpack/no-maintainer-scripts/postinst ${PROJECT_BINARY_DIR}/cpack/no-maintainer-scripts/postrm)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "Keras recurrent layers with Keras's numbers - shared library
recur runs Keras GRU, LSTM and SimpleRNN layers (and CuDNNGRU/CuDNNLSTM and
the cells) and whole Keras models (.keras and .h5 files) with the numbers
Keras computes, behind a small C ABI.

This package holds the shared library librecur.so.0.")

set(CPACK_DEBIAN_CUDA_PACKAGE_NAME librecur0-cuda)
# No shlibdeps: CUDA's cuBLAS and cuDNN come from NVIDIA's installers, not from Debian packages
# that dpkg-shlibdeps could name; librecur reports a missing one when a "cuda" device is asked for.
set(CPACK_DEBIAN_CUDA_PACKAGE_SHLIBDEPS OFF)
# The C and C++ runtimes it links (readelf -d); the exact versions come with librecur0's own.
set(CPACK_DEBIAN_CUDA_PACKAGE_DEPENDS "libc6, libgcc-s1, libstdc++6")
set(CPACK_DEBIAN_CUDA_DESCRIPTION "Keras recurrent layers with Keras's numbers - NVIDIA GPU plugin
librecur_cuda.so, loaded by librecur.so.0 when a cuda device is asked for.
It needs the NVIDIA driver, cuBLAS and cuDNN 9, which this package does not
depend on (NVIDIA ships them).")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME librecur-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_DESCRIPTION "Keras recurrent layers with Keras's numbers - development files
The C header recur/recur.h, the C++ header recur/recur.hpp, the librecur.so
link, the pkg-config file recur.pc and the CMake package
(find_package(recur), target recur::recur).")

set(CPACK_DEBIAN_CLI_PACKAGE_NAME recur-tools)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION science)
set(CPACK_DEBIAN_CLI_DESCRIPTION "Keras recurrent layers with Keras's numbers - command-line tool
recur info / run / verify: describes a Keras model file, runs it on the
inputs of .npy/.npz files and compares the outputs with Keras's.")

set(CPACK_DEBIAN_JAVA_PACKAGE_NAME librecur-java)
set(CPACK_DEBIAN_JAVA_PACKAGE_SECTION java)
# No dependency on a JRE: Debian's Java policy leaves that to the programs that use a library jar.
set(CPACK_DEBIAN_JAVA_DESCRIPTION "Keras recurrent layers with Keras's numbers - Java binding
/usr/share/java/recur.jar (package recur, Maven coordinates dev.recur:recur)
and its JNI library librecur_java.so.")

set(CPACK_DEBIAN_CSHARP_PACKAGE_NAME librecur-cil)
set(CPACK_DEBIAN_CSHARP_PACKAGE_SECTION cli-mono)
set(CPACK_DEBIAN_CSHARP_PACKAGE_DEPENDS "mono-runtime")
set(CPACK_DEBIAN_CSHARP_DESCRIPTION "Keras recurrent layers with Keras's numbers - C# binding
Recur.dll (namespace Recur) for mono, with its native glue
librecur_csharp.so, in /usr/lib/cli/recur.")

set(CPACK_DEBIAN_GO_PACKAGE_NAME golang-recur-dev)
set(CPACK_DEBIAN_GO_PACKAGE_SECTION golang)
set(CPACK_DEBIAN_GO_PACKAGE_ARCHITECTURE all)
set(CPACK_DEBIAN_GO_PACKAGE_DEPENDS "golang-go, pkg-config")
set(CPACK_DEBIAN_GO_DESCRIPTION "Keras recurrent layers with Keras's numbers - Go module source
The module recur.dev/recur (SWIG wrapper included) in
/usr/share/recur/go/recur, for a go.mod replace directive; cgo builds it
against librecur-dev through pkg-config.")

include(CPack)
cpack_add_component(runtime DISPLAY_NAME "Shared library")
cpack_add_component(cuda DISPLAY_NAME "GPU plugin" DEPENDS runtime)
cpack_add_component(dev DISPLAY_NAME "Development files" DEPENDS runtime)
cpack_add_component(cli DISPLAY_NAME "Command-line tool" DEPENDS runtime)
cpack_add_component(java DISPLAY_NAME "Java binding" DEPENDS runtime)
cpack_add_component(csharp DISPLAY_NAME "C# binding" DEPENDS runtime)
cpack_add_component(go DISPLAY_NAME "Go module source" DEPENDS dev)

# README.md's quotes of the quick-start programs (examples/quickstart) must be the files as they
# are; the packaging tests run them (scripts/package-test.sh).
if(RECUR_BUILD_TESTS AND NOT WIN32)
  add_test(NAME readme_quickstart_snippets COMMAND ${PROJECT_SOURCE_DIR}/tests/packaging/check_readme_snippets.sh)
  # Every source file carries its SPDX licence line (LICENSE is Apache-2.0).
  add_test(NAME spdx_headers COMMAND ${PROJECT_SOURCE_DIR}/tests/packaging/check_spdx.sh)
endif()
