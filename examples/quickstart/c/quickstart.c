/* recur quick start: open a Keras model, run one sequence of ten token ids, print its probabilities. */
#include <stdio.h>
#include <recur/recur.h>

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "examples/models/sentiment_keras3.keras";
  float ids[10] = {12, 13, 18, 11, 15, 16, 5, 2, 6, 6}, probs[2];
  recur_model *model = NULL;
  recur_status s = recur_model_open(&model, path);
  if (s == RECUR_OK) s = recur_model_run(model, ids, 10, 1, 10, NULL, 0, probs, 2);  /* batch 1, 10 steps */
  if (s == RECUR_OK) printf("%.9f %.9f\n", probs[0], probs[1]);
  else fprintf(stderr, "%s\n", recur_last_error());
  recur_model_destroy(model);
  return s == RECUR_OK ? 0 : 1;
}
