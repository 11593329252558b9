/* Compiled with -std=c89 -pedantic -Werror by the c89_header test. */
#include "recur/recur.h"

int recur_header_c89_check(void) {
  recur_layer_options opts;
  recur_status st = recur_layer_options_init(&opts, RECUR_LAYER_OPTIONS_VERSION);
  return st == RECUR_OK ? 0 : 1;
}
