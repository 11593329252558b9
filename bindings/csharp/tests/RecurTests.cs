// SPDX-License-Identifier: Apache-2.0
// Tests of the Recur C# binding: a plain program (no test framework needed) that prints one line
// per test and "N passed, N failed", and exits non-zero on any failure.
// usage: mono RecurTests.exe parity_cases.txt examples/models tests/keras/graphs tests/cli/models
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Runtime.InteropServices;
using System.Threading;
using Recur;

namespace RecurTests {

static partial class Program {
  static string fixturePath, modelDir;
  static int passed, failed;

  static void Check(bool condition, string what) {
    if (!condition) throw new Exception("check failed: " + what);
  }

  static T Throws<T>(Action action, string what) where T : Exception {
    try {
      action();
    } catch (T e) {
      return e;
    } catch (Exception e) {
      throw new Exception(what + ": expected " + typeof(T).Name + ", got " + e.GetType().Name + ": " + e.Message);
    }
    throw new Exception(what + ": expected " + typeof(T).Name + ", nothing was thrown");
  }

  static RecurException Fails(int status, Action action, string what, string messagePart = null) {
    var e = Throws<RecurException>(action, what);
    if (e.Status != status)
      throw new Exception(what + ": expected status " + status + ", got " + e.Status + " (" + e.Message + ")");
    if (string.IsNullOrEmpty(e.Message)) throw new Exception(what + ": empty message");
    if (messagePart != null && e.Message.IndexOf(messagePart, StringComparison.Ordinal) < 0)
      throw new Exception(what + ": message '" + e.Message + "' does not contain '" + messagePart + "'");
    return e;
  }

  static void Run(string name, Action test) {
    try {
      test();
      passed++;
      Console.WriteLine("PASS " + name);
    } catch (Exception e) {
      failed++;
      Console.WriteLine("FAIL " + name + ": " + e);
    }
  }

  static float[] Pattern(long n, double scale, double phase) {
    var v = new float[n];
    for (long i = 0; i < n; ++i) v[i] = (float)(Math.Sin(i * 0.37 + phase) * scale);
    return v;
  }

  static Layer MakeGru(int units, int inputSize, bool returnSequences = true, int seed = 7) {
    using (var o = new LayerOptions(LayerType.Gru, units, inputSize)) {
      o.ReturnSequences = returnSequences ? 1 : 0;
      o.Seed = seed;
      return Layer.Create(o);
    }
  }

  static double MaxDiff(float[] a, float[] b) {
    if (a.Length != b.Length) return double.PositiveInfinity;
    double w = 0;
    for (int i = 0; i < a.Length; ++i) w = Math.Max(w, Math.Abs(a[i] - b[i]));
    return w;
  }

  // ---------------------------------------------------------------------------------------------

  static void Version() {
    Check(!string.IsNullOrEmpty(Library.Version), "version string");
    Check(Library.VersionNumber / 10000 == 0, "major version 0");
    Check(Library.Version == string.Format("{0}.{1}.{2}", Library.VersionNumber / 10000,
                                           Library.VersionNumber / 100 % 100, Library.VersionNumber % 100),
          "version string matches number");
    Check(Library.StatusString(Status.Shape).Length > 0, "status string");
  }

  static void OptionsAndInfo() {
    using (var o = new LayerOptions(LayerType.Lstm, 5, 3)) {
      o.ReturnSequences = 1;
      o.ReturnState = 1;
      o.Activation = "tanh";
      o.KernelInitializer = "glorot_uniform";
      o.Name = "my_lstm";
      o.Seed = 3;
      Check(o.Activation == "tanh" && o.Units == 5 && o.InputSize == 3 && o.Seed == 3, "option round trip");
      using (var l = Layer.Create(o)) {
        var info = l.Info;
        Check(info.Type == LayerType.Lstm && info.Units == 5 && info.InputSize == 3, "info");
        Check(info.NumStates == 2 && info.ReturnSequences && info.ReturnState && !info.IsCell, "info flags");
        Check(info.Dialect == Dialect.Keras3, "default dialect Keras 3");
        Check(l.NumWeights == 3 && info.NumWeights == 3, "3 weights");
        Check(l.WeightName(0) == "kernel" && l.WeightName(1) == "recurrent_kernel" && l.WeightName(2) == "bias",
              "weight names");
        var s0 = l.WeightShape(0);
        Check(s0.Length == 2 && s0[0] == 3 && s0[1] == 20, "kernel shape (3, 20)");
        Check(l.WeightShape(2).Length == 1 && l.WeightShape(2)[0] == 20, "bias shape (20,)");
        Check(l.OutputLength(2, 4) == 2 * 4 * 5, "output length");
        var init = l.GetInitialState(2);
        Check(init.Length == 2 * 2 * 5 && init.All(v => v == 0), "initial state zeros");
      }
    }
  }

  static void WeightsRoundTrip() {
    using (var l = MakeGru(4, 3)) {
      var all = l.GetWeights();
      Check(all.Length == l.WeightsLength && all.Length == 3 * 12 + 4 * 12 + 2 * 12, "weights length");
      var changed = Pattern(all.Length, 0.5, 0.1);
      l.SetWeights(changed);
      Check(MaxDiff(l.GetWeights(), changed) == 0, "set/get weights");
      var k = Pattern(3 * 12, 0.25, 1.0);
      l.SetWeight(0, k);
      Check(MaxDiff(l.GetWeight(0), k) == 0, "set/get weight 0");
      var buffer = new float[4 * 12];
      l.GetWeight(1, buffer);
      Check(MaxDiff(buffer, changed.Skip(36).Take(48).ToArray()) == 0, "get weight into a buffer");
    }
  }

  static void StreamingEqualsSequence() {
    const int B = 3, T = 6, F = 4, U = 5;
    using (var l = MakeGru(U, F, true))
    using (var s = new State(l, B)) {
      Check(s.NumStates == 1 && s.Batch == B && s.Units == U && s.Length == B * U, "state shape");
      var x = Pattern(B * T * F, 1.0, 0.3);
      var whole = l.Forward(x, B, T);
      // Step by step through the state: input (B, 1, F) per step.
      var step = new float[B * F];
      var o = new float[B * U];
      for (int t = 0; t < T; ++t) {
        for (int b = 0; b < B; ++b) Array.Copy(x, (b * T + t) * F, step, b * F, F);
        l.ForwardState(s, step, 1, o);
        for (int b = 0; b < B; ++b)
          for (int u = 0; u < U; ++u)
            Check(Math.Abs(o[b * U + u] - whole[(b * T + t) * U + u]) <= 1e-6, "step " + t + " equals the sequence");
      }
      var h = s.Get();
      s.Reset();
      Check(s.Get().All(v => v == 0), "reset zeroes the state");
      s.Set(h, 1);
      Check(MaxDiff(s.Get(), h) == 0, "state set/get");
    }
  }

  static void ForwardWithMaskAndInitialState() {
    const int B = 2, T = 5, F = 3, U = 4;
    using (var l = MakeGru(U, F, false)) {
      var x = Pattern(B * T * F, 1.0, 0.0);
      var mask = new byte[] { 1, 1, 1, 1, 1, 1, 0, 1, 0, 0 };
      var h0 = Pattern(B * U, 0.5, 2.0);
      var output = new float[l.OutputLength(B, T)];
      var final = new float[B * U];
      l.Forward(x, B, T, mask, h0, 1, false, output, final);
      Check(MaxDiff(output, final) == 0, "GRU last output equals state_h");
      var noMask = new float[output.Length];
      l.Forward(x, B, T, null, h0, 1, false, noMask, null);
      Check(MaxDiff(noMask, output) > 0, "the mask changes the output");
    }
  }

  static void Cells() {
    using (var o = new LayerOptions(LayerType.GruCell, 4, 3)) {
      o.Dropout = 0.5f;
      o.RecurrentDropout = 0.25f;
      o.Seed = 11;
      using (var cell = Layer.Create(o)) {
        Check(cell.Info.IsCell, "is a cell");
        var x = Pattern(2 * 3, 1.0, 0.0);
        var h = Pattern(2 * 4, 0.3, 1.0);
        var output = new float[2 * 4];
        var newH = new float[2 * 4];
        cell.CellCall(x, 2, h, 1, false, output, newH);
        Check(MaxDiff(output, newH) == 0, "GRU cell output == new h");
        var mask = cell.GetDropoutMask(2, true);
        Check(mask.Length > 0 && mask.Length % (2 * 3) == 0, "dropout mask length");
        Check(mask.All(v => v == 0 || Math.Abs(v - 2.0f) < 1e-6), "dropout mask values 0 or 1/(1-rate)");
        var rmask = cell.GetRecurrentDropoutMask(2, true);
        Check(rmask.Length > 0 && rmask.Length % (2 * 4) == 0, "recurrent dropout mask length");
        cell.ResetDropoutMask();
        cell.ResetRecurrentDropoutMask();
        Fails(Status.State, () => cell.Forward(Pattern(6, 1, 0), 2, 1), "forward on a cell");
      }
    }
  }

  static void LossesAndConstraints() {
    using (var o = new LayerOptions(LayerType.Gru, 4, 3)) {
      o.KernelRegularizer = "l2";
      o.KernelConstraint = "non_neg";
      o.Seed = 5;
      using (var l = Layer.Create(o)) {
        var losses = l.GetLosses();
        Check(losses.Length == 1 && losses[0] > 0, "one kernel penalty");
        Check(l.LossName(0) == "kernel", "loss name");
        Check(l.GetWeight(0).Any(v => v < 0), "initial kernel has negative values");
        l.ApplyConstraints();
        Check(l.GetWeight(0).All(v => v >= 0), "non_neg applied");
      }
    }
  }

  static void StatefulLayer() {
    using (var o = new LayerOptions(LayerType.Lstm, 3, 2)) {
      o.Stateful = 1;
      o.BatchSize = 2;
      o.Seed = 1;
      using (var l = Layer.Create(o)) {
        var x = Pattern(2 * 4 * 2, 1.0, 0.5);
        var first = l.Forward(x, 2, 4);
        var states = l.GetStates();
        Check(states.Length == 2 * 2 * 3 && states.Any(v => v != 0), "states after a call");
        var second = l.Forward(x, 2, 4);
        Check(MaxDiff(first, second) > 0, "stateful layer carries its state");
        l.ResetStates();
        Check(l.GetStates().All(v => v == 0), "reset_states");
        Check(MaxDiff(l.Forward(x, 2, 4), first) == 0, "after reset the first output again");
        l.SetStates(states, 2);
        Check(MaxDiff(l.GetStates(), states) == 0, "set_states");
        Check(MaxDiff(l.Forward(x, 2, 4), second) == 0, "set_states restores the stream");
      }
    }
  }

  // ---- errors: status + message, thrown as RecurException ------------------------------------

  static void ErrorPaths() {
    using (var o = new LayerOptions(LayerType.Gru, 0, 3))
      Fails(Status.InvalidArgument, () => Layer.Create(o), "units 0", "units");
    using (var o = new LayerOptions(LayerType.Gru, 4, 3)) {
      o.Activation = "no_such_activation";
      Fails(Status.InvalidArgument, () => Layer.Create(o), "unknown activation", "no_such_activation");
    }
    using (var o = new LayerOptions(LayerType.CuDnnGru, 4, 3))
      Fails(Status.Unsupported, () => Layer.Create(o), "CuDNN in Keras 3");
    Fails(Status.Parse, () => Layer.FromJson("{\"class_name\": \"GRU\", ", 3), "malformed JSON");
    Fails(Status.InvalidArgument, () => Layer.FromJson("{\"class_name\": \"GRU\", \"config\": {\"units\": 4, \"bogus_field\": 1}}", 3),
          "unknown field", "bogus_field");
    using (var l = MakeGru(4, 3)) {
      Fails(Status.Shape, () => l.Forward(new float[5], 2, 3), "wrong input length");
      Fails(Status.Shape, () => l.Forward(new float[18], 2, 3, null, null, 0, false, new float[7], null), "wrong output length");
      Fails(Status.Shape, () => l.Forward(new float[18], 2, 3, new byte[5]), "wrong mask length");
      Fails(Status.State, () => l.ResetStates(), "reset_states on a non-stateful layer", "Layer must be stateful.");
      Fails(Status.InvalidArgument, () => l.SetWeight(7, new float[3]), "weight index");
      Fails(Status.Shape, () => l.SetWeight(0, new float[3]), "weight length");
      Fails(Status.Shape, () => l.SetWeights(new float[3]), "weights length");
      Fails(Status.InvalidArgument, () => l.WeightName(-1), "weight name index");
      Fails(Status.State, () => l.CellCall(new float[3], 1, new float[4], 1, false, new float[4], null), "cell call on a layer");
      Fails(Status.InvalidArgument, () => new State(l, 0), "state batch 0");
      using (var s = new State(l, 2)) {
        Fails(Status.Shape, () => l.ForwardState(s, new float[5], 1, new float[8]), "state input length");
        Fails(Status.Shape, () => s.Set(new float[3], 1), "state set length");
        Fails(Status.Shape, () => s.Get(new float[3]), "state get length");
      }
      using (var other = MakeGru(5, 3))
      using (var s = new State(other, 2))
        Check(Throws<RecurException>(() => l.ForwardState(s, new float[6], 1, new float[8]), "state of another layer").Status < 0,
              "state of another shape");
    }
    using (var cudnn = Layer.FromJson("{\"class_name\": \"CuDNNGRU\", \"config\": {\"units\": 4}}", 3, Dialect.Keras2))
      Fails(Status.Unsupported, () => cudnn.Forward(new float[2 * 3 * 3], 2, 3, new byte[6]), "mask on CuDNN");
    var io = Fails(Status.IO, () => Model.Open("/nonexistent/model.keras"), "missing model file", "/nonexistent/model.keras");
    Check(io.StatusName.Length > 0 && io.ToString().Contains("RecurException"), "exception text");
    string bad = Path.GetTempFileName();
    File.WriteAllText(bad, "not a model");
    try {
      Check(Throws<RecurException>(() => Model.Open(bad), "corrupt model file").Status == Status.IO, "corrupt -> IO");
    } finally {
      File.Delete(bad);
    }
    using (var m = Model.Open(Path.Combine(modelDir, "sentiment_keras3.keras"))) {
      Check(Throws<RecurException>(() => m.GetLayer("no_such_layer"), "unknown layer").Status < 0, "unknown layer name");
      Fails(Status.Shape, () => m.Run(new float[3], 1, 10), "model input length");
      Check(Throws<RecurException>(() => m.LayerAt(1000), "layer index").Status < 0, "layer index");
    }
  }

  static void ManagedArgumentChecks() {
    Throws<ArgumentNullException>(() => Layer.Create(null), "null options");
    Throws<ArgumentNullException>(() => Layer.FromJson(null), "null json");
    Throws<ArgumentNullException>(() => Model.Open((string)null), "null path");
    Throws<ArgumentNullException>(() => new State(null, 1), "null layer");
    using (var l = MakeGru(4, 3)) {
      Throws<ArgumentNullException>(() => l.Forward(null, 1, 1), "null input");
      Throws<ArgumentNullException>(() => l.Forward(new float[3], 1, 1, null, null, 0, false, null, null), "null output");
      Throws<ArgumentNullException>(() => l.ForwardState(null, new float[3], 1, new float[4]), "null state");
      Throws<ArgumentNullException>(() => l.SetWeights(null), "null weights");
      Throws<ArgumentNullException>(() => l.SetWeight(0, null), "null weight");
    }
  }

  static void ErrorsAreThreadLocal() {
    // Different errors raised at once on many threads: each thread gets its own message.
    var errors = new List<string>();
    var threads = new List<Thread>();
    for (int k = 0; k < 8; ++k) {
      int id = k;
      var t = new Thread(() => {
        for (int i = 0; i < 200; ++i) {
          string name = "activation_" + id + "_" + i;
          try {
            using (var o = new LayerOptions(LayerType.Gru, 4, 3)) {
              o.Activation = name;
              Layer.Create(o).Dispose();
            }
            lock (errors) errors.Add("no exception for " + name);
          } catch (RecurException e) {
            if (e.Status != Status.InvalidArgument || !e.Message.Contains(name))
              lock (errors) errors.Add("thread " + id + " got '" + e.Message + "' for " + name);
          }
        }
      });
      threads.Add(t);
      t.Start();
    }
    foreach (var t in threads) t.Join();
    Check(errors.Count == 0, string.Join("; ", errors.Take(3)));
  }

  // ---- lifetime -------------------------------------------------------------------------------

  static void DisposeTwiceAndUseAfterDispose() {
    var o = new LayerOptions(LayerType.Gru, 4, 3);
    var l = Layer.Create(o);
    var s = new State(l, 1);
    var m = Model.Open(Path.Combine(modelDir, "sentiment_keras3.keras"));
    s.Dispose();
    s.Dispose();
    Check(s.IsDisposed, "state disposed");
    Throws<ObjectDisposedException>(() => s.Reset(), "state after dispose");
    Throws<ObjectDisposedException>(() => s.Get(), "state get after dispose");
    Throws<ObjectDisposedException>(() => l.ForwardState(s, new float[3], 1, new float[4]), "disposed state argument");
    Throws<ObjectDisposedException>(() => Library.CStepNanoseconds(l, s, new float[3], new float[4], 1), "bench with disposed state");
    l.Dispose();
    l.Dispose();
    Check(l.IsDisposed, "layer disposed");
    Throws<ObjectDisposedException>(() => l.Forward(new float[3], 1, 1), "layer after dispose");
    Throws<ObjectDisposedException>(() => { var i = l.Info; }, "info after dispose");
    Throws<ObjectDisposedException>(() => l.GetWeights(), "weights after dispose");
    Throws<ObjectDisposedException>(() => new State(l, 1), "state of a disposed layer");
    o.Dispose();
    o.Dispose();
    Throws<ObjectDisposedException>(() => { o.Units = 3; }, "options after dispose");
    Throws<ObjectDisposedException>(() => { o.Activation = "tanh"; }, "options string after dispose");
    Throws<ObjectDisposedException>(() => Layer.Create(o), "create from disposed options");
    using (var l2 = m.GetLayer(FirstRecurrentLayer(m))) {
      m.Dispose();
      m.Dispose();
      Throws<ObjectDisposedException>(() => m.Run(new float[10], 1, 10), "model after dispose");
      Throws<ObjectDisposedException>(() => m.GetLayer("x"), "get_layer after dispose");
      Check(l2.Info.Units > 0, "a layer taken from a model outlives it");
    }
  }

  static void FinalizersFreeUndisposedObjects() {
    for (int i = 0; i < 2000; ++i) {
      var l = MakeGru(8, 8);
      var s = new State(l, 2);
      var o = new LayerOptions(LayerType.Lstm, 2, 2);
      o.Activation = "relu";
      GC.KeepAlive(s);
    }
    GC.Collect();
    GC.WaitForPendingFinalizers();
    GC.Collect();
  }

  // ---- concurrency: many states on one layer from many threads == serial ---------------------

  static void ConcurrentStatesMatchSerial() {
    const int U = 16, F = 8, streams = 32, steps = 40, threads = 8;
    using (var l = MakeGru(U, F, false)) {
      Func<int, float[]> input = k => Pattern(steps * F, 1.0, k * 0.7);
      var serial = new float[streams][];
      for (int k = 0; k < streams; ++k) {
        using (var s = new State(l, 1)) {
          var x = input(k);
          var step = new float[F];
          var o = new float[U];
          for (int t = 0; t < steps; ++t) {
            Array.Copy(x, t * F, step, 0, F);
            l.ForwardState(s, step, 1, o);
          }
          serial[k] = s.Get();
        }
      }
      var parallel = new float[streams][];
      var states = new State[streams];
      for (int k = 0; k < streams; ++k) states[k] = new State(l, 1);
      Exception failure = null;
      var workers = new List<Thread>();
      for (int w = 0; w < threads; ++w) {
        int id = w;
        var t = new Thread(() => {
          try {
            var step = new float[F];
            var o = new float[U];
            // Interleave the streams this thread owns step by step.
            for (int t2 = 0; t2 < steps; ++t2)
              for (int k = id; k < streams; k += threads) {
                Array.Copy(input(k), t2 * F, step, 0, F);
                l.ForwardState(states[k], step, 1, o);
              }
            for (int k = id; k < streams; k += threads) parallel[k] = states[k].Get();
          } catch (Exception e) {
            failure = e;
          }
        });
        workers.Add(t);
        t.Start();
      }
      foreach (var t in workers) t.Join();
      foreach (var s in states) s.Dispose();
      if (failure != null) throw failure;
      for (int k = 0; k < streams; ++k) Check(MaxDiff(serial[k], parallel[k]) == 0, "stream " + k + " equals the serial run");
    }
  }

  // ---- Keras parity and the bundled model -----------------------------------------------------

  static string FirstRecurrentLayer(Model m) {
    for (int i = 0; i < m.Info.NumLayers; ++i) {
      var e = m.LayerAt(i);
      if (e.Recurrent) return e.Name;
    }
    throw new Exception("no recurrent layer");
  }

  static void BundledModel() {
    var ids = File.ReadAllLines(Path.Combine(modelDir, "sentiment_inputs.txt")).Where(x => x.Trim().Length > 0)
                  .Select(x => x.Split(new[] { ' ' }, StringSplitOptions.RemoveEmptyEntries).Select(float.Parse).ToArray())
                  .ToArray();
    var keras = File.ReadAllLines(Path.Combine(modelDir, "sentiment_keras3_keras.txt")).Where(x => x.Trim().Length > 0)
                    .SelectMany(x => x.Split(new[] { ' ' }, StringSplitOptions.RemoveEmptyEntries)
                                      .Select(v => float.Parse(v, System.Globalization.CultureInfo.InvariantCulture)))
                    .ToArray();
    int B = ids.Length, T = ids[0].Length;
    using (var m = Model.Open(Path.Combine(modelDir, "sentiment_keras3.keras"))) {
      var info = m.Info;
      Check(info.Runnable && info.Unsupported == "" && info.TakesTokenIds && info.Dialect == Dialect.Keras3, "model info");
      var output = m.Run(ids.SelectMany(r => r).ToArray(), B, T);
      Check(MaxDiff(output, keras) <= 1e-5, "model output equals Keras: " + MaxDiff(output, keras));
      using (var l = m.GetLayer(FirstRecurrentLayer(m))) Check(l.NumWeights >= 2, "layer from the model");
      var entry = m.LayerAt(0);
      Check(entry.Name != null && entry.ClassName != null && entry.ConfigJson.StartsWith("{"), "model layer entry");
    }
  }

  // ---- devices --------------------------------------------------------------------------------

  static readonly string[] BadDevices = { "gpu", "cuda:-1", "cuda:x", "CUDA", "", "cuda:" };
  const double GpuTolerance = 1e-5;
  // A batched step rounds like a batch of all its rows, so it matches per-state steps to float rounding.
  const double BatchRounding = 1e-6;
  static bool Gpu { get { return Library.DeviceCount > 0; } }

  static bool NamesWhatIsMissing(string message) {
    return new[] { "plugin", "driver", "GPU", "cuDNN" }.Any(p => message.Contains(p));
  }

  static void DeviceChecks() {
    Check(Library.DeviceCount >= 0, "device count");
    Library.CheckDevice("cpu");
    Library.CheckDevice("auto");
    foreach (var bad in BadDevices)
      Fails(Status.InvalidArgument, () => Library.CheckDevice(bad), "device '" + bad + "'", "\"cuda:N\"");
    Throws<ArgumentNullException>(() => Library.CheckDevice(null), "null device");
    if (Gpu) {
      Library.CheckDevice("cuda");
    } else {
      var e = Fails(Status.Unsupported, () => Library.CheckDevice("cuda"), "cuda without a GPU", "cuda:0");
      Check(NamesWhatIsMissing(e.Message), "says what is missing: " + e.Message);
    }
  }

  static void LayerDevices() {
    const int B = 2, T = 4;
    using (var l = MakeGru(5, 3)) {
      var d = l.Device;
      Check(d.Requested == "cpu" && d.Backend == "cpu" && d.Path == "cpu" && d.DeviceName == "" && d.Reason != "",
            "a new layer is on the CPU: " + d);
      var x = Pattern(B * T * 3, 1.0, 0.2);
      var mask = new byte[] { 1, 0, 1, 1, 1, 1, 0, 1 };
      var cpu = l.Forward(x, B, T, mask);
      l.SetDevice("cpu");
      Check(MaxDiff(l.Forward(x, B, T, mask), cpu) == 0, "cpu keeps the results");
      l.SetDevice("auto");
      d = l.Device;
      Check(d.Requested == "auto", "auto requested");
      if (Gpu) {
        Check(d.Backend == "cuda:0" && MaxDiff(l.Forward(x, B, T, mask), cpu) <= GpuTolerance, "auto on the GPU: " + d);
      } else {
        Check(d.Backend == "cpu" && NamesWhatIsMissing(d.Reason), "auto on the CPU says why: " + d);
        Check(MaxDiff(l.Forward(x, B, T, mask), cpu) == 0, "auto keeps the results");
      }
      l.SetDevice("cpu");
      if (Gpu) {
        l.SetDevice("cuda");
        Check(l.Device.Backend == "cuda:0" && l.Device.DeviceName != "", "on cuda:0");
        Check(MaxDiff(l.Forward(x, B, T, mask), cpu) <= GpuTolerance, "cuda matches the CPU");
        // The GPU emulator keeps device memory on the host, so pinned arrays stand in for device pointers.
        if (l.Device.DeviceName.StartsWith("recur GPU emulator")) {
          var y = new float[cpu.Length];
          var xh = GCHandle.Alloc(x, GCHandleType.Pinned);
          var yh = GCHandle.Alloc(y, GCHandleType.Pinned);
          try {
            l.ForwardDevice(IntPtr.Zero, xh.AddrOfPinnedObject(), B, T, mask, IntPtr.Zero, 0, yh.AddrOfPinnedObject(),
                            IntPtr.Zero);
          } finally {
            xh.Free();
            yh.Free();
          }
          Check(MaxDiff(y, cpu) <= GpuTolerance, "ForwardDevice matches the CPU");
        }
      } else {
        var e = Fails(Status.Unsupported, () => l.SetDevice("cuda"), "cuda without a GPU", "cuda:0");
        Check(NamesWhatIsMissing(e.Message), "says what is missing: " + e.Message);
        Check(l.Device.Backend == "cpu" && MaxDiff(l.Forward(x, B, T, mask), cpu) == 0, "still usable on the CPU");
        Fails(Status.State, () => l.ForwardDevice(IntPtr.Zero, IntPtr.Zero, 1, 1, null, IntPtr.Zero, 0, IntPtr.Zero,
                                                  IntPtr.Zero),
              "forward_device on the CPU", "recur_layer_set_device");
      }
      foreach (var bad in BadDevices)
        Fails(Status.InvalidArgument, () => l.SetDevice(bad), "device '" + bad + "'", "recur_layer_set_device");
      Throws<ArgumentNullException>(() => l.SetDevice(null), "null device");
    }
    var closed = MakeGru(2, 2);
    closed.Dispose();
    Throws<ObjectDisposedException>(() => { var d = closed.Device; }, "Device after Dispose");
    Throws<ObjectDisposedException>(() => closed.SetDevice("cpu"), "SetDevice after Dispose");
  }

  static void ForwardStatesEqualsForwardState() {
    foreach (var type in new[] { LayerType.Gru, LayerType.Lstm }) {
      using (var o = new LayerOptions(type, 5, 3)) {
        o.ReturnSequences = 1;
        o.Seed = 5;
        using (var l = Layer.Create(o)) {
          if (Gpu) l.SetDevice("cuda");
          var batches = new[] { 1, 3, 2 };
          int rows = batches.Sum();
          var batched = batches.Select(b => new State(l, b)).ToArray();
          var single = batches.Select(b => new State(l, b)).ToArray();
          try {
            for (int step = 0; step < 3; ++step) {
              var x = Pattern(rows * 3, 0.8, step);
              var mask = Enumerable.Range(0, rows).Select(r => (byte)((r + step) % 4 == 2 ? 0 : 1)).ToArray();
              var got = new float[rows * 5];
              var want = new float[rows * 5];
              l.ForwardStates(batched, x, got, mask);
              int row = 0;
              for (int i = 0; i < batches.Length; ++i) {
                var yi = new float[batches[i] * 5];
                l.ForwardState(single[i], x.Skip(row * 3).Take(batches[i] * 3).ToArray(), 1, yi,
                               mask.Skip(row).Take(batches[i]).ToArray());
                Array.Copy(yi, 0, want, row * 5, yi.Length);
                row += batches[i];
              }
              Check(MaxDiff(got, want) <= (Gpu ? GpuTolerance : BatchRounding),
                    type + " step " + step + ": " + MaxDiff(got, want));
            }
            for (int i = 0; i < batches.Length; ++i) {
              Check(MaxDiff(batched[i].Get(), single[i].Get()) <= (Gpu ? GpuTolerance : BatchRounding),
                    "final state " + i);
              Check(batched[i].Device.Path == (Gpu ? "device-resident" : "cpu"), "state path " + batched[i].Device);
            }
            var y = new float[rows * 5];
            var x0 = new float[rows * 3];
            Fails(Status.InvalidArgument, () => l.ForwardStates(new[] { batched[0], batched[1], batched[0] }, x0, y),
                  "a state twice", "same state");
            Fails(Status.Shape, () => l.ForwardStates(batched, x0, new float[rows * 5 - 1]), "short output");
            Fails(Status.InvalidArgument, () => l.ForwardStates(new State[0], x0, y), "no states", "num_states");
            Throws<ArgumentNullException>(() => l.ForwardStates(null, x0, y), "null states");
            Throws<ArgumentNullException>(() => l.ForwardStates(new[] { batched[0], null }, x0, y), "a null state");
            single[0].Dispose();
            Throws<ObjectDisposedException>(() => l.ForwardStates(new[] { single[0] }, x0, y), "a disposed state");
          } finally {
            foreach (var s in batched.Concat(single)) s.Dispose();
          }
        }
      }
    }
  }

  // Many states stepped on device buffers: on the CPU the call says to move the layer first; on the
  // GPU emulator (device memory on the host, so pinned arrays stand in for device pointers) the
  // numbers are exactly ForwardStates's.
  static void ForwardStatesDeviceEqualsForwardStates() {
    foreach (var type in new[] { LayerType.Gru, LayerType.Lstm }) {
      using (var o = new LayerOptions(type, 5, 3)) {
        o.ReturnSequences = 1;
        o.Seed = 5;
        using (var l = Layer.Create(o)) {
          using (var s = new State(l, 1))
            Fails(Status.State, () => l.ForwardStatesDevice(IntPtr.Zero, new[] { s }, IntPtr.Zero, null, IntPtr.Zero),
                  "forward_states_device on the CPU", "recur_layer_set_device");
          Throws<ArgumentNullException>(() => l.ForwardStatesDevice(IntPtr.Zero, null, IntPtr.Zero, null, IntPtr.Zero),
                                        "null states");
          if (!Gpu) {
            Console.WriteLine("  ForwardStatesDevice numbers not checked: no GPU (Library.DeviceCount is 0)");
            continue;
          }
          l.SetDevice("cuda");
          var batches = new[] { 1, 3, 2 };
          int rows = batches.Sum();
          var host = batches.Select(b => new State(l, b)).ToArray();
          var dev = batches.Select(b => new State(l, b)).ToArray();
          try {
            Fails(Status.InvalidArgument, () => l.ForwardStatesDevice(IntPtr.Zero, dev, IntPtr.Zero, null,
                                                                      new IntPtr(8)),
                  "a zero input", "d_input");
            Fails(Status.InvalidArgument, () => l.ForwardStatesDevice(IntPtr.Zero, new[] { dev[0], dev[1], dev[0] },
                                                                      new IntPtr(8), null, new IntPtr(8)),
                  "a state twice", "same state");
            var name = l.Device.DeviceName;
            if (!name.StartsWith("recur GPU emulator")) {
              Console.WriteLine("  ForwardStatesDevice numbers not checked: device memory needs a CUDA library "
                                + "in the test; the GPU is " + name);
              continue;
            }
            for (int step = 0; step < 3; ++step) {
              var x = Pattern(rows * 3, 0.8, step);
              var mask = Enumerable.Range(0, rows).Select(r => (byte)((r + step) % 3 == 1 ? 0 : 1)).ToArray();
              var want = new float[rows * 5];
              var got = new float[rows * 5];
              l.ForwardStates(host, x, want, mask);
              var xh = GCHandle.Alloc(x, GCHandleType.Pinned);
              var yh = GCHandle.Alloc(got, GCHandleType.Pinned);
              try {
                l.ForwardStatesDevice(IntPtr.Zero, dev, xh.AddrOfPinnedObject(), mask, yh.AddrOfPinnedObject());
              } finally {
                xh.Free();
                yh.Free();
              }
              Check(got.SequenceEqual(want), type + " step " + step + ": " + MaxDiff(got, want));
            }
            for (int i = 0; i < batches.Length; ++i)
              Check(dev[i].Get().SequenceEqual(host[i].Get()), "final state " + i);
          } finally {
            foreach (var s in host.Concat(dev)) s.Dispose();
          }
        }
      }
    }
  }

  static void ModelDevices() {
    using (var m = Model.Open(Path.Combine(modelDir, "sentiment_keras3.keras"))) {
      var ids = Enumerable.Range(0, 2 * 10).Select(i => (float)(i * 7 % 19 + 1)).ToArray();
      var cpu = m.Run(ids, 2, 10);
      Check(m.Device.Backend == "cpu", "a model starts on the CPU");
      m.SetDevice("cpu");
      Check(MaxDiff(m.Run(ids, 2, 10), cpu) == 0, "cpu keeps the results");
      m.SetDevice("auto");
      var d = m.Device;
      Check(d.Requested == "auto", "auto requested");
      // Every layer of this model has a GPU kernel: each goes where the model goes.
      for (int i = 0; i < m.Info.NumLayers; ++i)
        Check(m.LayerDevice(i).Backend == d.Backend, "layer " + i);
      Check(Gpu ? MaxDiff(m.Run(ids, 2, 10), cpu) <= GpuTolerance : MaxDiff(m.Run(ids, 2, 10), cpu) == 0,
            "auto matches the CPU");
      Fails(Status.InvalidArgument, () => m.LayerDevice(-2), "layer -2", "layer_index");
      Fails(Status.InvalidArgument, () => m.SetDevice("gpu"), "model device 'gpu'", "recur_model_set_device");
      if (!Gpu) Fails(Status.Unsupported, () => m.SetDevice("cuda"), "model on cuda without a GPU", "cuda:0");
    }
  }

  // ---- CPU threads and kernels -----------------------------------------------------------------

  // Bit for bit, so -0 vs 0 or two different NaNs would count as a difference.
  static bool SameBits(float[] a, float[] b) {
    if (a.Length != b.Length) return false;
    for (int i = 0; i < a.Length; ++i)
      if (BitConverter.ToInt32(BitConverter.GetBytes(a[i]), 0) != BitConverter.ToInt32(BitConverter.GetBytes(b[i]), 0))
        return false;
    return true;
  }

  static void CpuKernels() {
    var k = Library.CpuKernels;
    Check(k == "avx512" || k == "avx2" || k == "baseline", "kernel set '" + k + "'");
    Check(Library.CpuKernels == k, "the same set on every call");
  }

  static void ResourceLimits() {
    const ulong MiB = 1UL << 20, GiB = 1UL << 30;
    var defaults = new Dictionary<Limit, ulong> {
      { Limit.Units, 65536 }, { Limit.Batch, 1048576 }, { Limit.StateBytes, 256 * MiB },
      { Limit.WeightBytes, GiB }, { Limit.FileBytes, 4 * GiB }, { Limit.TensorBytes, GiB },
      { Limit.TotalStateBytes, 256 * MiB }, { Limit.RunBytes, 512 * MiB }, { Limit.Timesteps, 1048576 },
      { Limit.InitWork, 1UL << 31 },
      { Limit.RunWork, 1UL << 38 }
    };
    Check(Enum.GetValues(typeof(Limit)).Length == 11, "eleven limits");
    foreach (var kv in defaults) {
      Check(Limits.Default(kv.Key) == kv.Value, kv.Key + " default " + Limits.Default(kv.Key));
      Check(Limits.Get(kv.Key) == kv.Value, kv.Key + " starts at its default, got " + Limits.Get(kv.Key));
      try {
        Limits.Set(kv.Key, 12345);
        Check(Limits.Get(kv.Key) == 12345, kv.Key + " reads back what was set");
        Check(Limits.Default(kv.Key) == kv.Value, kv.Key + " default stays");
        Limits.Set(kv.Key, ulong.MaxValue);
        Check(Limits.Get(kv.Key) == ulong.MaxValue, kv.Key + " takes all 64 bits");
      } finally {
        Limits.Set(kv.Key, 0);
      }
      Check(Limits.Get(kv.Key) == kv.Value, "0 restores " + kv.Key);
    }
    foreach (var bad in new[] { (Limit)(-1), (Limit)11, (Limit)99 }) {
      Fails(Status.InvalidArgument, () => Limits.Get(bad), "Get(" + (int)bad + ")", "limit");
      Fails(Status.InvalidArgument, () => Limits.Default(bad), "Default(" + (int)bad + ")", "limit");
      Fails(Status.InvalidArgument, () => Limits.Set(bad, 5), "Set(" + (int)bad + ")", "limit");
    }
    Check(Library.StatusString(Status.Limit) == "over a resource limit", "status string of Status.Limit");

    // Refusals: a layer over the units limit, a state over the batch limit, a model over the
    // weight limit; each is made again once the limit is restored.
    using (var big = new LayerOptions(LayerType.Gru, 16, 4)) {
      Limits.Set(Limit.Units, 8);
      try {
        var e = Fails(Status.Limit, () => Layer.Create(big), "16 units over a units limit of 8", "units limit of 8");
        Check(e.StatusName == "over a resource limit", "StatusName " + e.StatusName);
      } finally {
        Limits.Set(Limit.Units, 0);
      }
      using (var l = Layer.Create(big)) Check(l.Info.Units == 16, "made once the limit is restored");
    }
    using (var l = MakeGru(4, 3)) {
      Limits.Set(Limit.Batch, 2);
      try {
        Fails(Status.Limit, () => new State(l, 3), "state batch 3 over a batch limit of 2", "batch limit of 2");
        using (var s = new State(l, 2)) {}
      } finally {
        Limits.Set(Limit.Batch, 0);
      }
    }
    var path = Path.Combine(modelDir, "sentiment_keras3.keras");
    Limits.Set(Limit.WeightBytes, 1024);
    try {
      Fails(Status.Limit, () => Model.Open(path), "model over a weight limit of 1 KiB", "weight_bytes limit");
    } finally {
      Limits.Set(Limit.WeightBytes, 0);
    }
    using (var m = Model.Open(path)) Check(m.Info.Runnable, "the model opens with the default limit");
  }

  static void LayerNumThreads() {
    using (var l = MakeGru(5, 3)) {
      Check(l.NumThreads == 1, "1 by default, got " + l.NumThreads);
      l.NumThreads = 2;
      Check(l.NumThreads == 2, "2 after setting 2");
      l.NumThreads = 0;
      Check(l.NumThreads == 0, "0 (one per core) reads back as 0");
      l.NumThreads = 1024;
      Check(l.NumThreads == 1024, "1024 is the largest count");
      foreach (var bad in new[] { -1, 1025, int.MinValue })
        Fails(Status.InvalidArgument, () => { l.NumThreads = bad; }, "NumThreads = " + bad, "num_threads");
    }
    var closed = MakeGru(2, 2);
    closed.Dispose();
    Throws<ObjectDisposedException>(() => { var n = closed.NumThreads; }, "NumThreads after Dispose");
    Throws<ObjectDisposedException>(() => { closed.NumThreads = 2; }, "setting NumThreads after Dispose");
  }

  static void Precision() {
    using (var l = MakeGru(5, 3)) {
      Check(l.Precision == "float32", "float32 by default, got " + l.Precision);
      var x = Pattern(2 * 4 * 3, 0.8, 0.3);
      var f32 = l.Forward(x, 2, 4);
      foreach (var p in new[] { "bf16", "int8" }) {
        l.Precision = p;
        Check(l.Precision == p, p + " reads back");
        var d = MaxDiff(f32, l.Forward(x, 2, 4));
        Check(d > 0 && d < 0.05, p + " stays within 0.05 of float32, got " + d);
      }
      l.Precision = "float32";
      Check(MaxDiff(f32, l.Forward(x, 2, 4)) == 0, "float32 again is exact");
      Fails(Status.InvalidArgument, () => { l.Precision = "fp16"; }, "Precision = fp16", "\"bf16\" or \"int8\"");
    }
    using (var m = Model.Open(Path.Combine(modelDir, "sentiment_keras3.keras"))) {
      Check(m.Precision == "float32", "model float32 by default");
      m.Precision = "int8";
      Check(m.Precision == "int8", "model int8 reads back");
      Fails(Status.InvalidArgument, () => { m.Precision = "int4"; }, "model Precision = int4", "unknown precision");
    }
  }

  static void ThreadsGiveBitwiseTheSameNumbers() {
    // Big enough per timestep that a call is split between threads (small calls stay on one).
    const int B = 16, T = 12, F = 64, U = 128;
    foreach (var type in new[] { LayerType.Gru, LayerType.Lstm }) {
      using (var o = new LayerOptions(type, U, F)) {
        o.ReturnSequences = 1;
        o.Seed = 23;
        using (var l = Layer.Create(o)) {
          var x = Pattern(B * T * F, 0.8, 0.5);
          var mask = Enumerable.Range(0, B * T).Select(i => (byte)(i % 7 == 6 ? 0 : 1)).ToArray();
          var one = l.Forward(x, B, T, mask);
          var streamedOne = new float[one.Length];
          using (var s = new State(l, B)) l.ForwardState(s, x, T, streamedOne, mask);
          foreach (var threads in new[] { 2, 0 }) {
            l.NumThreads = threads;
            Check(SameBits(l.Forward(x, B, T, mask), one), type + ": Forward with " + threads + " threads");
            var streamed = new float[one.Length];
            using (var s = new State(l, B)) l.ForwardState(s, x, T, streamed, mask);
            Check(SameBits(streamed, streamedOne), type + ": ForwardState with " + threads + " threads");
          }
        }
      }
    }
  }

  static void ModelNumThreads() {
    var m = Model.Open(Path.Combine(modelDir, "sentiment_keras3.keras"));
    using (m) {
      Check(m.NumThreads == 1, "1 by default");
      var ids = Enumerable.Range(0, 4 * 10).Select(i => (float)(i * 7 % 19 + 1)).ToArray();
      var one = m.Run(ids, 4, 10);
      m.NumThreads = 2;
      Check(m.NumThreads == 2, "2 after setting 2");
      Check(SameBits(m.Run(ids, 4, 10), one), "Run with 2 threads");
      for (int i = 0; i < m.Info.NumLayers; ++i)
        if (m.LayerAt(i).Recurrent)
          using (var l = m.GetLayer(m.LayerAt(i).Name))
            Check(l.NumThreads == 2, "a layer taken afterwards gets the count");
      m.NumThreads = 0;
      Check(m.NumThreads == 0, "0 reads back as 0");
      Check(SameBits(m.Run(ids, 4, 10), one), "Run with one thread per core");
      foreach (var bad in new[] { -1, 1025 })
        Fails(Status.InvalidArgument, () => { m.NumThreads = bad; }, "model NumThreads = " + bad, "num_threads");
    }
    Throws<ObjectDisposedException>(() => { var n = m.NumThreads; }, "model NumThreads after Dispose");
    Throws<ObjectDisposedException>(() => { m.NumThreads = 1; }, "setting model NumThreads after Dispose");
  }

  static int Main(string[] args) {
    if (args.Length < 4) {
      Console.Error.WriteLine("usage: RecurTests.exe parity_cases.txt MODEL_DIR GRAPH_DIR CLI_MODEL_DIR");
      return 2;
    }
    fixturePath = args[0];
    modelDir = args[1];
    graphDir = args[2];
    cliModelDir = args[3];
    Console.WriteLine("recur " + Library.Version + ", C# binding on " + Environment.Version);
    // First, while no other test has left garbage that the collector could free meanwhile.
    RunLeakTests();
    Run("Version", Version);
    Run("OptionsAndInfo", OptionsAndInfo);
    Run("WeightsRoundTrip", WeightsRoundTrip);
    Run("StreamingEqualsSequence", StreamingEqualsSequence);
    Run("ForwardWithMaskAndInitialState", ForwardWithMaskAndInitialState);
    Run("Cells", Cells);
    Run("LossesAndConstraints", LossesAndConstraints);
    Run("StatefulLayer", StatefulLayer);
    Run("ErrorPaths", ErrorPaths);
    Run("ManagedArgumentChecks", ManagedArgumentChecks);
    Run("ErrorsAreThreadLocal", ErrorsAreThreadLocal);
    Run("DisposeTwiceAndUseAfterDispose", DisposeTwiceAndUseAfterDispose);
    Run("FinalizersFreeUndisposedObjects", FinalizersFreeUndisposedObjects);
    Run("ConcurrentStatesMatchSerial", ConcurrentStatesMatchSerial);
    Run("BundledModel", BundledModel);
    Run("DeviceChecks", DeviceChecks);
    Run("LayerDevices", LayerDevices);
    Run("ForwardStatesEqualsForwardState", ForwardStatesEqualsForwardState);
    Run("ForwardStatesDeviceEqualsForwardStates", ForwardStatesDeviceEqualsForwardStates);
    Run("ModelDevices", ModelDevices);
    Run("CpuKernels", CpuKernels);
    Run("ResourceLimits", ResourceLimits);
    Run("LayerNumThreads", LayerNumThreads);
    Run("ThreadsGiveBitwiseTheSameNumbers", ThreadsGiveBitwiseTheSameNumbers);
    Run("ModelNumThreads", ModelNumThreads);
    Run("Precision", Precision);
    RunGraphTests();
    RunNamedTests();
    RunTextTests();
    List<FixtureCase> cases = null;
    Run("LoadParityCases", () => { cases = FixtureCase.Load(fixturePath); Check(cases.Count >= 15, "cases"); });
    if (cases != null)
      foreach (var c in cases) {
        var fc = c;
        Run("Parity " + c.Name, () => {
          double worst = fc.Run();
          Check(worst <= fc.Tolerance, "max abs error " + worst + " > " + fc.Tolerance);
        });
      }
    Run("NoLiveHandlesAtExit", NoLiveHandlesAtExit);
    Console.WriteLine("{0} passed, {1} failed", passed, failed);
    return failed == 0 ? 0 : 1;
  }
}

}
