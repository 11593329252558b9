/* SPDX-License-Identifier: Apache-2.0 */
/* Plugins that are wrong in one way each, to show the core refuses them with a clear message
 * instead of calling into them. Built several times with one FAKE_* macro defined. */
#include <stddef.h>
#include <string.h>

#include "recur/gpu_plugin_abi.h"

#define STR_(x) #x
#define STR(x) STR_(x)

static int probe(int32_t *count, char *err, size_t len) {
#if defined(FAKE_NO_DRIVER)
  strncpy(err, "CUDA driver version is insufficient for CUDA runtime version", len - 1);
  (void)count;
  return RECUR_GPU_ERR_NO_DRIVER;
#else
  (void)err;
  (void)len;
  *count = 0;
  return RECUR_GPU_OK;
#endif
}

static recur_gpu_plugin table;

__attribute__((visibility("default")))
#if defined(FAKE_NO_ENTRY)
const recur_gpu_plugin *some_other_symbol(uint32_t abi)
#else
const recur_gpu_plugin *recur_gpu_plugin_entry(uint32_t abi)
#endif
{
  (void)abi;
#if defined(FAKE_REFUSES)
  return NULL;
#endif
  table.abi_version = RECUR_GPU_PLUGIN_ABI_VERSION;
  table.struct_size = sizeof table;
  table.build_id = "recur " RECUR_PROJECT_VERSION " abi " STR(RECUR_GPU_PLUGIN_ABI_VERSION);
  table.name = "fake";
  table.probe = probe;
#if defined(FAKE_WRONG_ABI)
  table.abi_version = 999;
#elif defined(FAKE_WRONG_BUILD)
  table.build_id = "recur 0.0.1 abi 1";
#elif defined(FAKE_SMALL_TABLE)
  table.struct_size = 16;
#endif
  return &table;
}
