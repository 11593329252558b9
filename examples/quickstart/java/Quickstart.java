// recur quick start in Java: open a Keras model, run one sequence of token ids, print the prediction.
import java.util.Locale;
import recur.Model;

public class Quickstart {
  public static void main(String[] args) {
    float[] ids = {12, 13, 18, 11, 15, 16, 5, 2, 6, 6};  // the first sample of sentiment_inputs.npy
    try (Model model = Model.open(args.length > 0 ? args[0] : "sentiment_keras3.keras")) {
      float[] probs = model.run(ids, 1, 10);  // batch 1, 10 steps: P(negative), P(positive)
      System.out.printf(Locale.ROOT, "prediction: %.9f %.9f%n", probs[0], probs[1]);  // Keras: 0.999587297 0.000412621826
    }
  }
}
