// recur quick start in C#: open a Keras model, run one sequence of token ids, print the prediction.
using System;
using System.Globalization;
using Recur;

static class Quickstart {
  static void Main(string[] args) {
    float[] ids = { 12, 13, 18, 11, 15, 16, 5, 2, 6, 6 };  // the first sample of sentiment_inputs.npy
    using (Model model = Model.Open(args.Length > 0 ? args[0] : "sentiment_keras3.keras")) {
      float[] probs = model.Run(ids, 1, 10);  // batch 1, 10 steps: P(negative), P(positive)
      Console.WriteLine(string.Format(CultureInfo.InvariantCulture, "prediction: {0:F9} {1:F9}", probs[0], probs[1]));
    }
  }
}
