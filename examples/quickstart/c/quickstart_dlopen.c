/* recur quick start through dlopen, with no link-time dependency on librecur.
 * Usage: quickstart_dlopen [MODEL [LIBRARY]]   (LIBRARY: the full path of librecur.so.0) */
#include <dlfcn.h>
#include <stdio.h>
#include <recur/recur.h>

typedef recur_status (*open_fn)(recur_model **, const char *);
typedef recur_status (*run_fn)(const recur_model *, const float *, size_t, int32_t, int32_t, const uint8_t *, size_t,
                               float *, size_t);
typedef const char *(*last_error_fn)(void);

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "examples/models/sentiment_keras3.keras";
  void *lib = dlopen(argc > 2 ? argv[2] : "librecur.so.0", RTLD_NOW);
  if (!lib) return fprintf(stderr, "%s\n", dlerror()), 1;
  open_fn open = (open_fn)dlsym(lib, "recur_model_open");
  run_fn run = (run_fn)dlsym(lib, "recur_model_run");
  last_error_fn last_error = (last_error_fn)dlsym(lib, "recur_last_error");
  float ids[10] = {12, 13, 18, 11, 15, 16, 5, 2, 6, 6}, probs[2];
  recur_model *model = NULL;
  recur_status s = open(&model, path);
  if (s == RECUR_OK) s = run(model, ids, 10, 1, 10, NULL, 0, probs, 2);  /* batch 1, 10 steps */
  if (s == RECUR_OK) printf("%.9f %.9f\n", probs[0], probs[1]);
  else fprintf(stderr, "%s\n", last_error());
  return s == RECUR_OK ? 0 : 1;
}
