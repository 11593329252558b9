/* SPDX-License-Identifier: Apache-2.0 */
/* Compiled with -std=c89 -pedantic -Werror by the c89_header test. */
#include "recur/recur.h"

int recur_header_c89_check(void) {
  recur_layer_options opts;
  recur_status st = recur_layer_options_init(&opts, RECUR_LAYER_OPTIONS_VERSION);
  return st == RECUR_OK ? 0 : 1;
}

/* The 0.6 additions: plain structs and the one callback type. */
static void recur_header_c89_log(void *user_data, int32_t level, const char *message) {
  (void)user_data;
  (void)level;
  (void)message;
}

int recur_header_c89_named(const recur_model *model) {
  recur_tensor in;
  recur_output out;
  recur_run_options *options = NULL;
  recur_status st;
  if (recur_tensor_init(&in, RECUR_TENSOR_VERSION) != RECUR_OK) return 1;
  if (recur_output_init(&out, RECUR_OUTPUT_VERSION) != RECUR_OK) return 1;
  in.dtype = RECUR_DTYPE_INT64;
  if (recur_run_options_create(&options) != RECUR_OK) return 1;
  st = recur_model_run_named(model, &in, 1, &out, 1, options);
  recur_run_options_destroy(options);
  recur_set_log_callback(recur_header_c89_log, NULL, RECUR_LOG_INFO);
  return st == RECUR_ERR_CANCELLED ? 2 : 0;
}
