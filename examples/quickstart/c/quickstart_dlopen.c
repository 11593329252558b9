/* recur quick start in C through dlopen, with no link-time dependency on librecur.
 * Usage: quickstart_dlopen MODEL [LIBRARY]   (LIBRARY: the full path of librecur.so.0) */
#include <dlfcn.h>
#include <stdio.h>
#include <recur/recur.h>

typedef recur_status (*open_fn)(recur_model **, const char *);
typedef recur_status (*run_fn)(const recur_model *, const float *, size_t, int32_t, int32_t, const uint8_t *, size_t,
                               float *, size_t);
typedef const char *(*last_error_fn)(void);

int main(int argc, char **argv) {
  void *lib = dlopen(argc > 2 ? argv[2] : "librecur.so.0", RTLD_NOW);
  if (!lib) return fprintf(stderr, "%s\n", dlerror()), 1;
  open_fn open = (open_fn)dlsym(lib, "recur_model_open");
  run_fn run = (run_fn)dlsym(lib, "recur_model_run");
  last_error_fn last_error = (last_error_fn)dlsym(lib, "recur_last_error");
  const float ids[10] = {12, 13, 18, 11, 15, 16, 5, 2, 6, 6}; /* the first sample of sentiment_inputs.npy */
  float probs[2];                                             /* P(negative), P(positive) */
  recur_model *model = NULL;
  if (open(&model, argc > 1 ? argv[1] : "sentiment_keras3.keras") != RECUR_OK ||
      run(model, ids, 10, 1, 10, NULL, 0, probs, 2) != RECUR_OK)
    return fprintf(stderr, "recur: %s\n", last_error()), 1;
  printf("prediction: %.9f %.9f\n", probs[0], probs[1]); /* Keras: 0.999587297 0.000412621826 */
  return 0;
}
