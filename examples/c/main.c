/* SPDX-License-Identifier: Apache-2.0 */
/*
 * recur from plain C through dlopen: no link-time dependency on librecur.
 *
 * The program loads librecur.so.0 at run time (path from argv[1], else "librecur.so.0" from the
 * loader's search path), resolves every function it uses with dlsym, builds a GRU and an LSTM
 * from the JSON Keras 2 writes for them (layer.to_json() / get_config()), sets deterministic
 * weights with the shapes the library reports, and runs one masked batch through both.
 *
 * Given the folder of the bundled model (argv[2], e.g. examples/models), it then opens the
 * trained Keras model files there (.keras and .h5, from Keras 2 and Keras 3), runs the sample
 * token sequences through them and prints recur's outputs next to the ones Keras computed.
 *
 * recur.h is included for its types and constants only; the function declarations in it are
 * never called directly (they are used in unevaluated sizeof expressions, so the compiler checks
 * that every function pointer below has exactly the header's type).
 *
 * Build:  cc -std=c99 -I c_api/include examples/c/main.c -ldl -lm -o recur_example_c
 * Run:    ./recur_example_c build/c_api/librecur.so.0 examples/models
 */
#if !defined(_POSIX_C_SOURCE) || _POSIX_C_SOURCE < 200809L
#undef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recur/recur.h"

/* ---------------------------------------------------------------------------------------- */
/* The functions this program uses, resolved at run time.                                    */
/* ---------------------------------------------------------------------------------------- */

struct recur_api {
  uint32_t (*version_number)(void);
  const char *(*version_string)(void);
  const char *(*status_string)(recur_status);
  const char *(*last_error)(void);
  recur_status (*layer_create_from_json)(recur_layer **, const char *, int32_t, int32_t, const char *);
  void (*layer_destroy)(recur_layer *);
  recur_status (*layer_get_info)(const recur_layer *, recur_layer_info *);
  recur_status (*layer_output_length)(const recur_layer *, int32_t, int32_t, size_t *);
  recur_status (*layer_num_weights)(const recur_layer *, int32_t *);
  recur_status (*layer_weight_shape)(const recur_layer *, int32_t, int64_t *, int32_t *);
  recur_status (*layer_weight_name)(const recur_layer *, int32_t, const char **);
  recur_status (*layer_set_weight)(recur_layer *, int32_t, const float *, size_t, const int64_t *, int32_t);
  recur_status (*layer_forward)(recur_layer *, const float *, size_t, int32_t, int32_t, const uint8_t *, size_t,
                                const float *, size_t, int32_t, int32_t, float *, size_t, float *, size_t);
  recur_status (*model_open)(recur_model **, const char *);
  void (*model_destroy)(recur_model *);
  recur_status (*model_get_info)(const recur_model *, recur_model_info *);
  recur_status (*model_output_length)(const recur_model *, int32_t, int32_t, size_t *);
  recur_status (*model_run)(const recur_model *, const float *, size_t, int32_t, int32_t, const uint8_t *, size_t,
                            float *, size_t);
};

static struct recur_api api;

/* Compile-time check that a pointer's type is the header's; sizeof does not evaluate its
 * operand, so no reference to the symbol reaches the linker. */
#define RECUR_CHECK_TYPE(field, fn) ((void)sizeof(api.field = fn))

static int resolve(void *lib, const char *symbol, void *slot, size_t size) {
  void *p;
  dlerror();
  p = dlsym(lib, symbol);
  if (p == NULL) {
    const char *why = dlerror();
    fprintf(stderr, "error: %s not found in the library (%s)\n", symbol, why ? why : "NULL symbol");
    return 0;
  }
  memcpy(slot, &p, size); /* POSIX guarantees object and function pointers convert */
  return 1;
}

#define RESOLVE(field, fn)                                                 \
  do {                                                                     \
    RECUR_CHECK_TYPE(field, fn);                                           \
    if (!resolve(lib, #fn, (void *)&api.field, sizeof api.field)) return 0; \
  } while (0)

static int load_api(void *lib) {
  RESOLVE(version_number, recur_version_number);
  RESOLVE(version_string, recur_version_string);
  RESOLVE(status_string, recur_status_string);
  RESOLVE(last_error, recur_last_error);
  RESOLVE(layer_create_from_json, recur_layer_create_from_json);
  RESOLVE(layer_destroy, recur_layer_destroy);
  RESOLVE(layer_get_info, recur_layer_get_info);
  RESOLVE(layer_output_length, recur_layer_output_length);
  RESOLVE(layer_num_weights, recur_layer_num_weights);
  RESOLVE(layer_weight_shape, recur_layer_weight_shape);
  RESOLVE(layer_weight_name, recur_layer_weight_name);
  RESOLVE(layer_set_weight, recur_layer_set_weight);
  RESOLVE(layer_forward, recur_layer_forward);
  RESOLVE(model_open, recur_model_open);
  RESOLVE(model_destroy, recur_model_destroy);
  RESOLVE(model_get_info, recur_model_get_info);
  RESOLVE(model_output_length, recur_model_output_length);
  RESOLVE(model_run, recur_model_run);
  return 1;
}

/* Reports a failed call with the library's message; returns nonzero when `status` is an error. */
static int failed(recur_status status, const char *what) {
  if (status == RECUR_OK) return 0;
  fprintf(stderr, "error: %s failed: %s (%d): %s\n", what, api.status_string(status), (int)status,
          api.last_error());
  return 1;
}

/* ---------------------------------------------------------------------------------------- */
/* The layers, as Keras 2 (tf.keras / tf-keras) serializes them.                             */
/* ---------------------------------------------------------------------------------------- */

static const char *const kGruJson =
    "{\"class_name\": \"GRU\", \"config\": {\"name\": \"gru\", \"trainable\": true, \"dtype\": \"float32\", "
    "\"batch_input_shape\": [null, null, 3], "
    "\"return_sequences\": true, \"return_state\": false, \"go_backwards\": false, \"stateful\": false, "
    "\"unroll\": false, \"time_major\": false, \"units\": 4, \"activation\": \"tanh\", "
    "\"recurrent_activation\": \"sigmoid\", \"use_bias\": true, "
    "\"kernel_initializer\": {\"class_name\": \"GlorotUniform\", \"config\": {\"seed\": null}}, "
    "\"recurrent_initializer\": {\"class_name\": \"Orthogonal\", \"config\": {\"gain\": 1.0, \"seed\": null}}, "
    "\"bias_initializer\": {\"class_name\": \"Zeros\", \"config\": {}}, "
    "\"kernel_regularizer\": null, \"recurrent_regularizer\": null, \"bias_regularizer\": null, "
    "\"activity_regularizer\": null, \"kernel_constraint\": null, \"recurrent_constraint\": null, "
    "\"bias_constraint\": null, \"dropout\": 0.0, \"recurrent_dropout\": 0.0, \"implementation\": 2, "
    "\"reset_after\": true}}";

static const char *const kLstmJson =
    "{\"class_name\": \"LSTM\", \"config\": {\"name\": \"lstm\", \"trainable\": true, \"dtype\": \"float32\", "
    "\"batch_input_shape\": [null, null, 3], "
    "\"return_sequences\": false, \"return_state\": true, \"go_backwards\": false, \"stateful\": false, "
    "\"unroll\": false, \"time_major\": false, \"units\": 4, \"activation\": \"tanh\", "
    "\"recurrent_activation\": \"sigmoid\", \"use_bias\": true, "
    "\"kernel_initializer\": {\"class_name\": \"GlorotUniform\", \"config\": {\"seed\": null}}, "
    "\"recurrent_initializer\": {\"class_name\": \"Orthogonal\", \"config\": {\"gain\": 1.0, \"seed\": null}}, "
    "\"bias_initializer\": {\"class_name\": \"Zeros\", \"config\": {}}, \"unit_forget_bias\": true, "
    "\"kernel_regularizer\": null, \"recurrent_regularizer\": null, \"bias_regularizer\": null, "
    "\"activity_regularizer\": null, \"kernel_constraint\": null, \"recurrent_constraint\": null, "
    "\"bias_constraint\": null, \"dropout\": 0.0, \"recurrent_dropout\": 0.0, \"implementation\": 2}}";

/* The batch: B=2 sequences of T=5 steps with F=3 features. Row 0 is complete; row 1 has a hole
 * at t=1 and two padded steps at the end. A masked step carries the state and repeats the
 * previous output, as in Keras. */
enum { B = 2, T = 5, F = 3 };
static const uint8_t kMask[B * T] = {
    1, 1, 1, 1, 1,
    1, 0, 1, 0, 0,
};

/* ---------------------------------------------------------------------------------------- */

static void print_matrix(const char *label, const float *v, int rows, int cols) {
  int r, c;
  printf("%s\n", label);
  for (r = 0; r < rows; ++r) {
    printf("  [");
    for (c = 0; c < cols; ++c) printf("%s% .6f", c ? ", " : "", (double)v[r * cols + c]);
    printf("]\n");
  }
}

/* Sets every weight of `layer` to sin(i * 0.37 + k) * 0.5 (k = weight index, i = flat index),
 * with the shape the library reports, so that the shape check is exercised too. */
static int set_weights(recur_layer *layer, const char *layer_name) {
  int32_t count = 0, k;
  if (failed(api.layer_num_weights(layer, &count), "recur_layer_num_weights")) return 0;
  for (k = 0; k < count; ++k) {
    int64_t dims[2] = {0, 0};
    int32_t ndims = 0, d;
    size_t n = 1, i;
    const char *name = NULL;
    float *w;
    if (failed(api.layer_weight_shape(layer, k, dims, &ndims), "recur_layer_weight_shape")) return 0;
    if (failed(api.layer_weight_name(layer, k, &name), "recur_layer_weight_name")) return 0;
    for (d = 0; d < ndims; ++d) n *= (size_t)dims[d];
    w = (float *)malloc(n * sizeof *w);
    if (w == NULL) {
      fprintf(stderr, "error: out of memory\n");
      return 0;
    }
    for (i = 0; i < n; ++i) w[i] = (float)(sin((double)i * 0.37 + (double)k) * 0.5);
    if (ndims == 2)
      printf("%s %-16s shape (%lld, %lld)\n", layer_name, name, (long long)dims[0], (long long)dims[1]);
    else
      printf("%s %-16s shape (%lld,)\n", layer_name, name, (long long)dims[0]);
    if (failed(api.layer_set_weight(layer, k, w, n, dims, ndims), "recur_layer_set_weight")) {
      free(w);
      return 0;
    }
    free(w);
  }
  return 1;
}

/* Creates the layer from JSON, sets its weights, runs the batch and prints the results. */
static int run_layer(const char *label, const char *json, const float *input) {
  recur_layer *layer = NULL;
  recur_layer_info info;
  size_t out_len = 0, state_len;
  float *output = NULL, *states = NULL;
  int ok = 0, s;
  char title[96];

  if (failed(api.layer_create_from_json(&layer, json, 0, RECUR_DIALECT_AUTO, NULL), "recur_layer_create_from_json"))
    return 0;
  memset(&info, 0, sizeof info);
  info.version = RECUR_LAYER_INFO_VERSION;
  if (failed(api.layer_get_info(layer, &info), "recur_layer_get_info")) goto done;
  printf("\n== %s: Keras %d, units %d, input size %d, %d state(s), return_sequences=%d ==\n", label,
         (int)info.dialect, (int)info.units, (int)info.input_size, (int)info.num_states, (int)info.return_sequences);
  if (!set_weights(layer, label)) goto done;

  if (failed(api.layer_output_length(layer, B, T, &out_len), "recur_layer_output_length")) goto done;
  state_len = (size_t)info.num_states * B * (size_t)info.units;
  output = (float *)malloc(out_len * sizeof *output);
  states = (float *)malloc(state_len * sizeof *states);
  if (output == NULL || states == NULL) {
    fprintf(stderr, "error: out of memory\n");
    goto done;
  }
  if (failed(api.layer_forward(layer, input, (size_t)B * T * F, B, T, kMask, sizeof kMask, NULL, 0, 0, 0, output,
                               out_len, states, state_len),
             "recur_layer_forward"))
    goto done;

  if (info.return_sequences) {
    int b;
    for (b = 0; b < B; ++b) {
      sprintf(title, "%s output, sequence %d (T=%d x units=%d):", label, b, T, (int)info.units);
      print_matrix(title, output + (size_t)b * T * (size_t)info.units, T, info.units);
    }
  } else {
    sprintf(title, "%s output (B=%d x units=%d):", label, B, (int)info.units);
    print_matrix(title, output, B, info.units);
  }
  for (s = 0; s < info.num_states; ++s) {
    sprintf(title, "%s final state %s (B=%d x units=%d):", label, s == 0 ? "h" : "c", B, (int)info.units);
    print_matrix(title, states + (size_t)s * B * (size_t)info.units, B, info.units);
  }
  ok = 1;

done:
  free(output);
  free(states);
  api.layer_destroy(layer);
  return ok;
}

/* ---------------------------------------------------------------------------------------- */
/* The bundled Keras model: Embedding(mask_zero) -> GRU -> LSTM -> Dense(softmax).           */
/* ---------------------------------------------------------------------------------------- */

/* Reads a whitespace-separated matrix, one row per line. Returns a malloc'd array or NULL. */
static float *read_matrix(const char *path, int *rows, int *cols) {
  FILE *f = fopen(path, "r");
  float *v = NULL;
  size_t n = 0, cap = 0;
  int c = 0, r = 0, in_row = 0, ch;
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
        ++r;
      }
      c = 0;
      in_row = 0;
      if (ch == EOF) {
        fclose(f);
        *rows = r;
        return v;
      }
      continue;
    }
    ungetc(ch, f);
    if (fscanf(f, "%lf", &x) != 1) break;
    if (n == cap) {
      float *grown;
      cap = cap ? cap * 2 : 64;
      grown = (float *)realloc(v, cap * sizeof *v);
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

/* Opens one model file, runs the samples and compares with Keras's predictions. */
static int run_model(const char *file, const float *ids, int batch, int steps, const float *keras, int keras_cols) {
  recur_model *model = NULL;
  recur_model_info info;
  size_t out_len = 0;
  float *out = NULL;
  double worst = 0.0;
  int ok = 0, b, j;

  if (failed(api.model_open(&model, file), "recur_model_open")) return 0;
  memset(&info, 0, sizeof info);
  info.version = RECUR_MODEL_INFO_VERSION;
  if (failed(api.model_get_info(model, &info), "recur_model_get_info")) goto done;
  printf("\n== %s (Keras %s, %d layers, %s) ==\n", file, info.keras_version, (int)info.num_layers,
         info.runnable ? "runnable" : info.unsupported);
  if (info.output_size != keras_cols) {
    fprintf(stderr, "error: the model has %d outputs per sample, the Keras file %d\n", (int)info.output_size,
            keras_cols);
    goto done;
  }
  if (failed(api.model_output_length(model, batch, steps, &out_len), "recur_model_output_length")) goto done;
  out = (float *)malloc(out_len * sizeof *out);
  if (out == NULL) goto done;
  if (failed(api.model_run(model, ids, (size_t)batch * (size_t)steps, batch, steps, NULL, 0, out, out_len),
             "recur_model_run"))
    goto done;
  printf("  sample  %-26s %-26s\n", "recur", "Keras");
  for (b = 0; b < batch; ++b) {
    printf("  %6d ", b);
    for (j = 0; j < keras_cols; ++j) printf(" %12.9f", (double)out[b * keras_cols + j]);
    printf(" ");
    for (j = 0; j < keras_cols; ++j) {
      const double d = fabs((double)out[b * keras_cols + j] - (double)keras[b * keras_cols + j]);
      if (d > worst) worst = d;
      printf(" %12.9f", (double)keras[b * keras_cols + j]);
    }
    printf("\n");
  }
  printf("  max abs difference to Keras: %.3g\n", worst);
  ok = worst <= 1e-5;
  if (!ok) fprintf(stderr, "error: %s differs from Keras by %.3g\n", file, worst);

done:
  free(out);
  api.model_destroy(model);
  return ok;
}

static int run_bundled_models(const char *dir) {
  static const char *const dialects[] = {"keras2", "keras3"};
  static const char *const formats[] = {"keras", "h5"};
  char path[1024];
  int rows = 0, cols = 0, krows = 0, kcols = 0, d, f, ok = 1;
  float *ids, *keras = NULL;

  snprintf(path, sizeof path, "%s/sentiment_inputs.txt", dir);
  ids = read_matrix(path, &rows, &cols);
  if (ids == NULL) return 0;
  printf("\nsample token sequences (B=%d, T=%d, 0 = padding):\n", rows, cols);
  for (d = 0; d < rows; ++d) {
    int t;
    printf("  ");
    for (t = 0; t < cols; ++t) printf("%3d", (int)ids[d * cols + t]);
    printf("\n");
  }
  for (d = 0; d < 2 && ok; ++d) {
    snprintf(path, sizeof path, "%s/sentiment_%s_keras.txt", dir, dialects[d]);
    free(keras);
    keras = read_matrix(path, &krows, &kcols);
    if (keras == NULL || krows != rows) {
      ok = 0;
      break;
    }
    for (f = 0; f < 2 && ok; ++f) {
      snprintf(path, sizeof path, "%s/sentiment_%s.%s", dir, dialects[d], formats[f]);
      ok = run_model(path, ids, rows, cols, keras, kcols);
    }
  }
  free(keras);
  free(ids);
  return ok;
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "librecur.so.0";
  void *lib;
  float input[B * T * F];
  int i, ok;

  lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "error: cannot load %s: %s\n", path, dlerror());
    return 2;
  }
  if (!load_api(lib)) {
    dlclose(lib);
    return 2;
  }
  printf("recur %s loaded from %s\n", api.version_string(), path);
  if (api.version_number() / 10000 != RECUR_VERSION_MAJOR) {
    fprintf(stderr, "error: library major version %u does not match the header's %d\n",
            (unsigned)(api.version_number() / 10000), RECUR_VERSION_MAJOR);
    dlclose(lib);
    return 2;
  }

  for (i = 0; i < B * T * F; ++i) input[i] = (float)(cos((double)i * 0.5) * 0.8);
  printf("mask: sequence 0 = 1 1 1 1 1, sequence 1 = 1 0 1 0 0 (a hole at t=1, padding at t=3..4)\n");

  ok = run_layer("GRU", kGruJson, input) && run_layer("LSTM", kLstmJson, input);
  if (ok && argc > 2) ok = run_bundled_models(argv[2]);
  dlclose(lib);
  if (!ok) return 1;
  printf("\nexample finished\n");
  return 0;
}
