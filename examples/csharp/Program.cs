// SPDX-License-Identifier: Apache-2.0
// recur from C#: opens the bundled Keras models (Keras 2 and Keras 3, .keras and .h5), runs the
// sample token sequences through them and prints recur's outputs next to Keras's, like
// examples/c. Exits non-zero if any output differs from Keras by more than 1e-5.
//
// Build: mcs -out:RecurExample.exe -r:Recur.dll Program.cs   (next to Recur.dll, librecur_csharp.so
//        and librecur.so.0)
// Run:   mono RecurExample.exe examples/models
using System;
using System.Globalization;
using System.IO;
using System.Linq;
using Recur;

static class Program {
  static float[][] ReadMatrix(string path) {
    return File.ReadAllLines(path)
        .Where(line => line.Trim().Length > 0)
        .Select(line => line.Split(new[] { ' ', '\t' }, StringSplitOptions.RemoveEmptyEntries)
                            .Select(v => float.Parse(v, CultureInfo.InvariantCulture)).ToArray())
        .ToArray();
  }

  static bool RunModel(string file, float[][] ids, float[][] keras) {
    int batch = ids.Length, steps = ids[0].Length, cols = keras[0].Length;
    using (Model model = Model.Open(file)) {
      ModelInfo info = model.Info;
      Console.WriteLine();
      Console.WriteLine("== {0} (Keras {1}, {2} layers, {3}) ==", file, info.KerasVersion, info.NumLayers,
                        info.Runnable ? "runnable" : info.Unsupported);
      if (info.OutputSize != cols) {
        Console.Error.WriteLine("error: the model has {0} outputs per sample, the Keras file {1}", info.OutputSize, cols);
        return false;
      }
      // Token ids as integers, by the model's input name; the first output, by its name.
      var tokens = new NamedTensor(model.Input(0).Name, ids.SelectMany(row => row).Select(v => (long)v).ToArray(),
                                   new long[] { batch, steps });
      float[] output = model.Run(new[] { tokens })[model.OutputNames[0]].Values;
      double worst = 0;
      Console.WriteLine("  sample  {0,-26} {1,-26}", "recur", "Keras");
      for (int b = 0; b < batch; ++b) {
        Console.Write("  {0,6} ", b);
        for (int j = 0; j < cols; ++j) Console.Write(" {0,12:F9}", (double)output[b * cols + j]);
        Console.Write(" ");
        for (int j = 0; j < cols; ++j) {
          worst = Math.Max(worst, Math.Abs((double)output[b * cols + j] - keras[b][j]));
          Console.Write(" {0,12:F9}", (double)keras[b][j]);
        }
        Console.WriteLine();
      }
      Console.WriteLine("  max abs difference to Keras: {0:G3}", worst);
      if (worst > 1e-5) {
        Console.Error.WriteLine("error: {0} differs from Keras by {1:G3}", file, worst);
        return false;
      }
      return true;
    }
  }

  static int Main(string[] args) {
    CultureInfo.CurrentCulture = CultureInfo.InvariantCulture;
    string dir = args.Length > 0 ? args[0] : "examples/models";
    Console.WriteLine("recur {0} (C# binding)", Library.Version);
    try {
      float[][] ids = ReadMatrix(Path.Combine(dir, "sentiment_inputs.txt"));
      Console.WriteLine();
      Console.WriteLine("sample token sequences (B={0}, T={1}, 0 = padding):", ids.Length, ids[0].Length);
      foreach (var row in ids) Console.WriteLine("  " + string.Concat(row.Select(v => ((int)v).ToString().PadLeft(3))));
      bool ok = true;
      foreach (string dialect in new[] { "keras2", "keras3" }) {
        float[][] keras = ReadMatrix(Path.Combine(dir, "sentiment_" + dialect + "_keras.txt"));
        foreach (string format in new[] { "keras", "h5" })
          ok = RunModel(Path.Combine(dir, "sentiment_" + dialect + "." + format), ids, keras) && ok;
      }
      if (!ok) return 1;
    } catch (RecurException e) {
      Console.Error.WriteLine("error: {0} (status {1}, {2})", e.Message, e.Status, e.StatusName);
      return 1;
    }
    Console.WriteLine();
    Console.WriteLine("example finished");
    return 0;
  }
}
