/* recur quick start in C: open a Keras model, run one sequence of token ids, print the prediction. */
#include <stdio.h>
#include <recur/recur.h>

int main(int argc, char **argv) {
  const float ids[10] = {12, 13, 18, 11, 15, 16, 5, 2, 6, 6}; /* the first sample of sentiment_inputs.npy */
  float probs[2];                                             /* P(negative), P(positive) */
  recur_model *model = NULL;
  if (recur_model_open(&model, argc > 1 ? argv[1] : "sentiment_keras3.keras") != RECUR_OK ||
      recur_model_run(model, ids, 10, 1, 10, NULL, 0, probs, 2) != RECUR_OK) { /* batch 1, 10 steps */
    fprintf(stderr, "recur: %s\n", recur_last_error());
    recur_model_destroy(model);
    return 1;
  }
  printf("prediction: %.9f %.9f\n", probs[0], probs[1]); /* Keras: 0.999587297 0.000412621826 */
  recur_model_destroy(model);
  return 0;
}
