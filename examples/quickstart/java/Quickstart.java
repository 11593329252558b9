// recur quick start: open a Keras model, run one sequence of ten token ids, print its probabilities.
import java.util.Locale;
import recur.Model;

public class Quickstart {
  public static void main(String[] args) {
    float[] ids = {12, 13, 18, 11, 15, 16, 5, 2, 6, 6};
    try (Model model = Model.open(args.length > 0 ? args[0] : "examples/models/sentiment_keras3.keras")) {
      float[] probs = model.run(ids, 1, 10);   // batch 1, 10 timesteps
      System.out.printf(Locale.ROOT, "%.9f %.9f%n", probs[0], probs[1]);
    }
  }
}
