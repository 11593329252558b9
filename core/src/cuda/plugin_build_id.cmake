# SPDX-License-Identifier: Apache-2.0
# RECUR_PLUGIN_BUILD_ID: "recur <project version> abi <RECUR_GPU_PLUGIN_ABI_VERSION>", the string a
# GPU plugin reports and the core compares with its own. Read from gpu_plugin_abi.h so the ABI
# number has one source; include this file wherever the string is needed (plugins and the core).
# A change of the header (a new ABI version) re-runs the configure step, so the string follows.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/core/include/recur/gpu_plugin_abi.h)
file(STRINGS ${PROJECT_SOURCE_DIR}/core/include/recur/gpu_plugin_abi.h _recur_abi_line
  REGEX "^#define RECUR_GPU_PLUGIN_ABI_VERSION [0-9]+")
string(REGEX REPLACE ".* ([0-9]+).*" "\\1" _recur_abi "${_recur_abi_line}")
if(NOT _recur_abi MATCHES "^[0-9]+$")
  message(FATAL_ERROR "RECUR_GPU_PLUGIN_ABI_VERSION not found in gpu_plugin_abi.h")
endif()
set(RECUR_PLUGIN_BUILD_ID "recur ${PROJECT_VERSION} abi ${_recur_abi}")
