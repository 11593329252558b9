// recur quick start in C++: open a Keras model, run one sequence of token ids, print the prediction.
#include <cstdio>
#include <vector>

#include "recur/recur.hpp"

int main(int argc, char** argv) {
  const std::vector<float> ids = {12, 13, 18, 11, 15, 16, 5, 2, 6, 6};  // the first sample of sentiment_inputs.npy
  try {
    recur::Model model(argc > 1 ? argv[1] : "sentiment_keras3.keras");
    const std::vector<float> probs = model.run(ids, 1, 10);     // batch 1, 10 steps: P(negative), P(positive)
    std::printf("prediction: %.9f %.9f\n", probs[0], probs[1]);  // Keras: 0.999587297 0.000412621826
  } catch (const recur::Error& e) {
    std::fprintf(stderr, "recur: %s\n", e.what());
    return 1;
  }
  return 0;
}
