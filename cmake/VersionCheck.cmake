# SPDX-License-Identifier: Apache-2.0
# One version for everything: project(VERSION) names the .deb packages, recur.pc, the CMake
# package, the jar and its pom, the NuGet package and the C# assembly; recur.h's
# RECUR_VERSION_MAJOR/MINOR/PATCH are what the library reports at run time. They must agree.
file(STRINGS ${PROJECT_SOURCE_DIR}/c_api/include/recur/recur.h recur_version_lines
     REGEX "^#define RECUR_VERSION_(MAJOR|MINOR|PATCH) +[0-9]+")
foreach(part MAJOR MINOR PATCH)
  set(RECUR_HEADER_VERSION_${part} "")
  foreach(line IN LISTS recur_version_lines)
    if(line MATCHES "^#define RECUR_VERSION_${part} +([0-9]+)")
      set(RECUR_HEADER_VERSION_${part} ${CMAKE_MATCH_1})
    endif()
  endforeach()
endforeach()
set(RECUR_HEADER_VERSION "${RECUR_HEADER_VERSION_MAJOR}.${RECUR_HEADER_VERSION_MINOR}.${RECUR_HEADER_VERSION_PATCH}")
if(NOT RECUR_HEADER_VERSION STREQUAL PROJECT_VERSION)
  message(FATAL_ERROR "Version mismatch: CMakeLists.txt says project(recur VERSION ${PROJECT_VERSION}) but "
    "c_api/include/recur/recur.h says ${RECUR_HEADER_VERSION} (RECUR_VERSION_MAJOR/MINOR/PATCH). Every package "
    "takes its version from project(VERSION) and the library reports recur.h's: set both to the same version.")
endif()
