/* SPDX-License-Identifier: Apache-2.0 */
/* A C program linked statically against librecur.a (scripts/cross.sh static): one SimpleRNN built
 * from its Keras config, weights set through the C ABI, two steps checked against the formula
 * h_t = tanh(W x_t + U h_{t-1} + b). Exit 0 on success. With "--no-files", recur_model_open must
 * answer RECUR_ERR_UNSUPPORTED (a library built with RECUR_WITH_FILES=OFF). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "recur/recur.h"

int main(int argc, char **argv) {
  const char *json = "{\"class_name\": \"SimpleRNN\", \"config\": {\"units\": 1, \"return_sequences\": true}}";
  const float weights[3] = {0.5f, 0.25f, 0.1f}; /* kernel (1x1), recurrent kernel (1x1), bias (1) */
  const float x[2] = {1.0f, 2.0f};
  float y[2] = {0.0f, 0.0f};
  double h1, h2;
  recur_layer *layer = NULL;
  recur_model *model = NULL;
  recur_status s;

  if (recur_layer_create_from_json(&layer, json, 1, RECUR_DIALECT_KERAS3, NULL) != RECUR_OK ||
      recur_layer_set_weights(layer, weights, 3) != RECUR_OK ||
      recur_layer_forward(layer, x, 2, 1, 2, NULL, 0, NULL, 0, 0, 0, y, 2, NULL, 0) != RECUR_OK) {
    fprintf(stderr, "recur: %s\n", recur_last_error());
    return 1;
  }
  recur_layer_destroy(layer);
  h1 = tanh(0.5 * 1.0 + 0.1);
  h2 = tanh(0.5 * 2.0 + 0.25 * h1 + 0.1);
  if (fabs(y[0] - h1) > 1e-6 || fabs(y[1] - h2) > 1e-6) {
    fprintf(stderr, "SimpleRNN: got %.9g %.9g, want %.9g %.9g\n", y[0], y[1], h1, h2);
    return 1;
  }
  if (argc > 1 && strcmp(argv[1], "--no-files") == 0) {
    s = recur_model_open(&model, "model.keras");
    if (s != RECUR_ERR_UNSUPPORTED || model != NULL) {
      fprintf(stderr, "recur_model_open: want RECUR_ERR_UNSUPPORTED, got %d (%s)\n", (int)s, recur_last_error());
      return 1;
    }
    printf("recur_model_open: %s\n", recur_last_error());
  }
  printf("recur %s (%s kernels): SimpleRNN matches tanh(Wx + Uh + b): %.7f %.7f\n", recur_version_string(),
         recur_cpu_kernels(), y[0], y[1]);
  return 0;
}
