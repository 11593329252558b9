/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A program that carries its Keras model inside the binary: the bytes of
 * examples/models/sentiment_keras3.keras are compiled in as a C array (written at build time by
 * cmake/EmbedFile.cmake) and opened with recur_model_open_memory, so the program needs no model
 * file next to it, only librecur.
 *
 * Given the folder of the bundled model's samples (argv[1], e.g. examples/models), it runs the
 * sample token sequences and compares the predictions with the ones Keras computed
 * (sentiment_keras3_keras.txt); exits non-zero above 1e-5.
 *
 * Build:  cmake -DINPUT=examples/models/sentiment_keras3.keras -DOUTPUT=model_data.c
 *               -DNAME=recur_model_data -P cmake/EmbedFile.cmake
 *         cc -std=c99 examples/embed/main.c model_data.c $(pkg-config --cflags --libs recur) -lm
 * Run:    ./a.out examples/models
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recur/recur.h"

extern const unsigned char recur_model_data[];
extern const size_t recur_model_data_size;

/* Reads a whitespace-separated matrix of numbers, one row per line; NULL on error. */
static float *read_matrix(const char *path, int *rows, int *cols) {
  FILE *f = fopen(path, "r");
  float *v = NULL;
  size_t n = 0, cap = 0;
  int c = 0, ch, in_row = 0;
  *rows = *cols = 0;
  if (f == NULL) {
    fprintf(stderr, "error: cannot open %s\n", path);
    return NULL;
  }
  for (;;) {
    double x;
    while ((ch = fgetc(f)) == ' ' || ch == '\t' || ch == '\r') {
    }
    if (ch == '\n' || ch == EOF) {
      if (in_row) {
        if (*cols == 0) *cols = c;
        if (c != *cols) break;
        ++*rows;
      }
      c = in_row = 0;
      if (ch == EOF) {
        fclose(f);
        return v;
      }
      continue;
    }
    ungetc(ch, f);
    if (fscanf(f, "%lf", &x) != 1) break;
    if (n == cap) {
      float *grown = (float *)realloc(v, (cap = cap ? cap * 2 : 64) * sizeof *v);
      if (grown == NULL) break;
      v = grown;
    }
    v[n++] = (float)x;
    ++c;
    in_row = 1;
  }
  fprintf(stderr, "error: %s is not a matrix of numbers\n", path);
  fclose(f);
  free(v);
  return NULL;
}

static int failed(recur_status status, const char *what) {
  if (status == RECUR_OK) return 0;
  fprintf(stderr, "error: %s: %s: %s\n", what, recur_status_string(status), recur_last_error());
  return 1;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "examples/models";
  char path[1024];
  recur_model *model = NULL;
  recur_model_info info;
  float *ids = NULL, *keras = NULL, *out = NULL;
  int rows = 0, cols = 0, krows = 0, kcols = 0, b, j, ok = 0;
  size_t out_len = 0;
  double worst = 0.0;

  printf("recur %s; model embedded in the binary: %lu bytes\n", recur_version_string(),
         (unsigned long)recur_model_data_size);
  if (failed(recur_model_open_memory(&model, recur_model_data, recur_model_data_size, "sentiment_keras3.keras"),
             "recur_model_open_memory"))
    return 1;
  memset(&info, 0, sizeof info);
  info.version = RECUR_MODEL_INFO_VERSION;
  if (failed(recur_model_get_info(model, &info), "recur_model_get_info")) goto done;
  printf("opened from memory: Keras %s, %d layers, %s\n", info.keras_version, (int)info.num_layers,
         info.runnable ? "runnable" : info.unsupported);

  snprintf(path, sizeof path, "%s/sentiment_inputs.txt", dir);
  if ((ids = read_matrix(path, &rows, &cols)) == NULL) goto done;
  snprintf(path, sizeof path, "%s/sentiment_keras3_keras.txt", dir);
  if ((keras = read_matrix(path, &krows, &kcols)) == NULL) goto done;
  if (krows != rows || kcols != info.output_size) {
    fprintf(stderr, "error: %d x %d Keras predictions for %d samples of %d outputs\n", krows, kcols, rows,
            (int)info.output_size);
    goto done;
  }
  if (failed(recur_model_output_length(model, rows, cols, &out_len), "recur_model_output_length")) goto done;
  if ((out = (float *)malloc(out_len * sizeof *out)) == NULL) goto done;
  if (failed(recur_model_run(model, ids, (size_t)rows * (size_t)cols, rows, cols, NULL, 0, out, out_len),
             "recur_model_run"))
    goto done;
  printf("  sample  %-26s %-26s\n", "recur", "Keras");
  for (b = 0; b < rows; ++b) {
    printf("  %6d ", b);
    for (j = 0; j < kcols; ++j) printf(" %12.9f", (double)out[b * kcols + j]);
    printf(" ");
    for (j = 0; j < kcols; ++j) {
      double d = fabs((double)out[b * kcols + j] - (double)keras[b * kcols + j]);
      if (d > worst) worst = d;
      printf(" %12.9f", (double)keras[b * kcols + j]);
    }
    printf("\n");
  }
  printf("  max abs difference to Keras: %.3g\n", worst);
  ok = worst <= 1e-5;
  if (!ok) fprintf(stderr, "error: the embedded model differs from Keras by %.3g\n", worst);

done:
  free(out);
  free(keras);
  free(ids);
  recur_model_destroy(model);
  if (!ok) return 1;
  printf("example finished\n");
  return 0;
}
