// recur quick start: open a Keras model, run one sequence of ten token ids, print its probabilities.
#include <cstdio>
#include <vector>
#include <recur/recur.hpp>

int main(int argc, char** argv) try {
  recur::Model model(argc > 1 ? argv[1] : "examples/models/sentiment_keras3.keras");
  std::vector<float> ids = {12, 13, 18, 11, 15, 16, 5, 2, 6, 6};
  std::vector<float> probs = model.run(ids, 1, 10);   // batch 1, 10 timesteps
  std::printf("%.9f %.9f\n", probs[0], probs[1]);
} catch (const recur::Error& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
