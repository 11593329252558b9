// recur quick start: open a Keras model, run one sequence of ten token ids, print its probabilities.
using System;
using System.Globalization;
using Recur;

static class Quickstart {
  static void Main(string[] args) {
    float[] ids = { 12, 13, 18, 11, 15, 16, 5, 2, 6, 6 };
    using (var model = Model.Open(args.Length > 0 ? args[0] : "examples/models/sentiment_keras3.keras")) {
      float[] probs = model.Run(ids, 1, 10);   // batch 1, 10 timesteps
      Console.WriteLine(string.Format(CultureInfo.InvariantCulture, "{0:F9} {1:F9}", (double)probs[0], (double)probs[1]));
    }
  }
}
