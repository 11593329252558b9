// SPDX-License-Identifier: Apache-2.0
// One streaming step (batch 1, T=1, input size = units) through the C# binding against the same
// step through the C ABI (a loop in C, recur_binding_c_step_ns), in the same process.
// Prints the numbers; never asserts timings.
using System;
using System.Diagnostics;
using Recur;

static class RecurBench {
  static double BindingStepNs(Layer layer, State state, float[] input, float[] output, int iterations) {
    var sw = Stopwatch.StartNew();
    for (int i = 0; i < iterations; ++i) layer.ForwardState(state, input, 1, output);
    sw.Stop();
    return sw.Elapsed.TotalMilliseconds * 1e6 / iterations;
  }

  static int Main() {
    Console.WriteLine("recur " + Library.Version + " C# binding benchmark (mono " + Environment.Version + ")");
    Console.WriteLine("one streaming step: batch 1, T=1, GRU, input size = units; best of 15 alternating rounds");
    // units 1 is a probe of the pure per-call cost (its C step takes only tens of ns).
    foreach (int units in new[] { 1, 64, 256 }) {
      using (var o = new LayerOptions(LayerType.Gru, units, units)) {
        o.Seed = 1;
        using (var layer = Layer.Create(o))
        using (var state = new State(layer, 1)) {
          var input = new float[units];
          for (int i = 0; i < units; ++i) input[i] = (float)Math.Sin(i * 0.1);
          var output = new float[units];
          int iterations = units == 1 ? 400000 : units == 64 ? 40000 : 4000;
          // Warm-up (JIT, caches), then check that steady-state calls do not allocate.
          BindingStepNs(layer, state, input, output, iterations / 10);
          Library.CStepNanoseconds(layer, state, input, output, iterations / 10);
          long gcBefore = GC.CollectionCount(0);
          // The best round of each is the least disturbed by other processes on the machine.
          const int rounds = 15;
          var c = new double[rounds];
          var b = new double[rounds];
          for (int r = 0; r < rounds; ++r) {
            c[r] = Library.CStepNanoseconds(layer, state, input, output, iterations);
            b[r] = BindingStepNs(layer, state, input, output, iterations);
          }
          long gcs = GC.CollectionCount(0) - gcBefore;
          Array.Sort(c);
          Array.Sort(b);
          Console.WriteLine("units {0,4}: C ABI {1,9:F1} ns/step, C# binding {2,9:F1} ns/step, overhead {3,7:F1} ns/call " +
                            "({4:F1}%), gen-0 GCs during the timed loops: {5}",
                            units, c[0], b[0], b[0] - c[0], 100.0 * (b[0] - c[0]) / c[0], gcs);
        }
      }
    }
    Console.WriteLine("benchmark finished");
    return 0;
  }
}
