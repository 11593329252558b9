// SPDX-License-Identifier: Apache-2.0
// Native leak checks with the live-handle counts (Library.LiveHandles): everything a test makes and
// disposes of, on success and on every error path, and everything it forgets once the finalizers
// have run, leaves the counts where they were; at the end of the whole program they read zero.
// Main runs these tests first and one at a time, before any other test has made garbage, so
// nothing else moves the counts they compare.
using System;
using System.IO;
using System.Threading;
using Recur;

namespace RecurTests {

static partial class Program {
  const string LeakGru = "{\"class_name\": \"GRU\", \"config\": {\"units\": 3, \"return_sequences\": true}}";

  static void CollectGarbage() {
    GC.Collect();
    GC.WaitForPendingFinalizers();
    GC.Collect();
  }

  // Collects and finalizes until the counts read `want` or `timeoutMs` has passed; returns the
  // last counts read.
  static LiveHandles AwaitLiveHandles(LiveHandles want, int timeoutMs) {
    var end = DateTime.UtcNow.AddMilliseconds(timeoutMs);
    var now = Library.LiveHandles;
    while (now != want && DateTime.UtcNow < end) {
      CollectGarbage();
      Thread.Sleep(10);
      now = Library.LiveHandles;
    }
    return now;
  }

  static LiveHandles SettledLiveHandles() {
    CollectGarbage();
    return Library.LiveHandles;
  }

  static void CheckBack(LiveHandles before, string what) {
    var now = Library.LiveHandles;
    Check(now == before, what + ": " + now + ", was " + before);
  }

  static string SentimentModel { get { return Path.Combine(modelDir, "sentiment_keras2.keras"); } }

  static void LiveHandlesCounts() {
    var before = SettledLiveHandles();
    using (var l = Layer.FromJson(LeakGru, 2)) {
      Check(Library.LiveHandles.Layers == before.Layers + 1, "a layer counts");
      using (var s = new State(l, 2)) {
        var now = Library.LiveHandles;
        Check(now.States == before.States + 1, "a state counts");
        Check(now.Total == before.Total + 2, "total");
      }
      Check(Library.LiveHandles.States == before.States, "a disposed state does not count");
    }
    using (var m = Model.Open(SentimentModel)) {
      Check(Library.LiveHandles.Models == before.Models + 1, "a model counts");
      using (var s = new ModelState(m, 1))
      using (var gru = m.GetLayer("gru")) {
        var now = Library.LiveHandles;
        Check(now.ModelStates == before.ModelStates + 1, "a model state counts");
        Check(now.Layers == before.Layers + 1, "a layer taken from a model counts");
      }
    }
    CheckBack(before, "after disposing of everything");
    var h = new LiveHandles(1, 2, 3, 4);
    Check(h.Layers == 1 && h.States == 2 && h.Models == 3 && h.ModelStates == 4 && h.Total == 10, "fields");
    Check(h.ToString() == "layers 1, states 2, models 3, model states 4, run options 0", h.ToString());
    var r = new LiveHandles(1, 2, 3, 4, 5);
    Check(r.RunOptions == 5 && r.Total == 15 && r != h, "run options count");
    Check(h == new LiveHandles(1, 2, 3, 4) && h != new LiveHandles(1, 2, 3, 5), "equality");
    Check(h.GetHashCode() == new LiveHandles(1, 2, 3, 4).GetHashCode(), "hash");
  }

  // Every kind of object, made, used once and disposed of.
  static void LeaksExplicitDispose() {
    var before = SettledLiveHandles();
    using (var o = new LayerOptions(LayerType.Lstm, 4, 3))
    using (var l = Layer.Create(o))
    using (var s = new State(l, 2)) {
      l.Forward(new float[2 * 5 * 3], 2, 5);
      l.ForwardState(s, new float[2 * 3], 1, new float[2 * 4]);
      l.ForwardStates(new[] { s }, new float[2 * 3], new float[2 * 4]);
      s.Reset();
    }
    using (var o = new LayerOptions(LayerType.GruCell, 3, 2))
    using (var cell = Layer.Create(o))
      cell.CellCall(new float[2 * 2], 2, new float[2 * 3], 1, false, new float[2 * 3], null);
    var bytes = File.ReadAllBytes(SentimentModel);
    using (var file = Model.Open(SentimentModel))
    using (var fromBytes = Model.Open(bytes, "sentiment.keras"))
    using (var fromStream = Model.Open(new MemoryStream(bytes), "stream.keras"))
    using (var gru = file.GetLayer("gru")) {
      foreach (var m in new[] { file, fromBytes, fromStream }) m.Run(new float[10], 1, 10);
      Check(gru.Info.Units > 0, "a layer taken from a model");
      using (var s = new ModelState(file, 1)) {
        s.Step(new float[s.InputsLength(1)], 1, null, new float[s.OutputsLength(1)]);
        s.Reset();
      }
    }
    CheckBack(before, "after disposing of everything");
  }

  // Failed creates leave no handle; calls that throw leave nothing of what they made.
  static void LeaksErrorPaths() {
    var before = SettledLiveHandles();
    Fails(Status.Parse, () => Layer.FromJson("{not json", 2), "bad JSON");
    using (var o = new LayerOptions(LayerType.Gru, 0, 4))
      Fails(Status.InvalidArgument, () => Layer.Create(o), "units 0");
    using (var o = new LayerOptions(LayerType.Gru, 3, 4)) {
      o.Activation = "no_such_activation";
      Fails(Status.InvalidArgument, () => Layer.Create(o), "unknown activation");
    }
    using (var l = Layer.FromJson(LeakGru, 2)) {
      Fails(Status.InvalidArgument, () => new State(l, 0), "state of batch 0");
      Fails(Status.Shape, () => l.Forward(new float[5], 1, 2), "forward input length");
      Throws<ArgumentNullException>(() => l.Forward(null, 1, 2), "null input");
      using (var s = new State(l, 1)) {
        Fails(Status.Shape, () => l.ForwardState(s, new float[3], 1, new float[3]), "step input length");
        Fails(Status.Shape, () => s.Set(new float[2], 1), "state values length");
      }
    }
    Fails(Status.IO, () => Model.Open(Path.Combine(modelDir, "no_such_model.keras")), "missing file");
    Fails(Status.IO, () => Model.Open(new byte[] { 1, 2, 3, 4 }, "junk.keras"), "junk bytes");
    Fails(Status.InvalidArgument, () => Model.Open(new byte[0]), "no bytes");
    var whole = File.ReadAllBytes(SentimentModel);
    var cut = new byte[whole.Length / 2];
    Array.Copy(whole, cut, cut.Length);
    Throws<RecurException>(() => Model.Open(cut, "cut.keras"), "cut file");
    using (var m = Model.Open(whole, "sentiment.keras")) {
      Fails(Status.Shape, () => m.Run(new float[3], 1, 10), "model input length");
      Fails(Status.InvalidArgument, () => m.GetLayer("no_such_layer"), "unknown layer");
      Fails(Status.InvalidArgument, () => new ModelState(m, 0), "model state of batch 0");
      using (var s = new ModelState(m, 1))
        Fails(Status.Shape, () => s.Step(new float[s.InputsLength(1) + 1], 1, null, new float[s.OutputsLength(1)]),
              "step input length");
    }
    using (var bi = Model.Open(Path.Combine(cliModelDir, "keras3", "bigru.keras")))
      Fails(Status.Unsupported, () => new ModelState(bi, 1), "a model that does not stream");
    var units = Limits.Get(Limit.Units);
    try {
      Limits.Set(Limit.Units, 2);
      Fails(Status.Limit, () => Layer.FromJson(LeakGru, 2), "layer over the units limit");
      Fails(Status.Limit, () => Model.Open(whole, "sentiment.keras"), "model over the units limit");
    } finally {
      Limits.Set(Limit.Units, units == Limits.Default(Limit.Units) ? 0 : units);
    }
    CheckBack(before, "after the failures");
  }

  // Objects never disposed of: their finalizers free them once they are unreachable. They are made
  // on a thread that has ended by the time the collector runs, so no stale stack slot (mono scans
  // stacks conservatively) keeps one alive.
  static void LeaksFinalizers() {
    var before = SettledLiveHandles();
    var bytes = File.ReadAllBytes(SentimentModel);
    Exception failure = null;
    var t = new Thread(() => {
      try {
        for (int i = 0; i < 20; ++i) {
          var l = Layer.FromJson(LeakGru, 2);
          var s = new State(l, 2);
          l.ForwardState(s, new float[4], 1, new float[6]);
          var cell = Layer.Create(new LayerOptions(LayerType.LstmCell, 2, 2));
          var m = Model.Open(bytes, "sentiment.keras");
          var ms = new ModelState(m, 1);
          var taken = m.GetLayer("lstm");
          Check(cell != null && ms != null && taken != null, "made");
        }
        Check(Model.Open(SentimentModel) != null, "made");
        Check(Library.LiveHandles.Total > before.Total, "alive until collected");
      } catch (Exception e) {
        failure = e;
      }
    });
    t.Start();
    t.Join();
    if (failure != null) throw failure;
    var left = AwaitLiveHandles(before, 30000);
    Check(left == before, "after the collector and the finalizers: " + left + ", was " + before);
  }

  // At the end of the whole program: nothing alive once the finalizers have run.
  static void NoLiveHandlesAtExit() {
    var left = AwaitLiveHandles(new LiveHandles(0, 0, 0, 0), 30000);
    Check(left.Total == 0, "native handles alive after the tests: " + left);
  }

  static void RunLeakTests() {
    Run("LiveHandlesCounts", LiveHandlesCounts);
    Run("LeaksExplicitDispose", LeaksExplicitDispose);
    Run("LeaksErrorPaths", LeaksErrorPaths);
    Run("LeaksFinalizers", LeaksFinalizers);
    Run("LeaksRunOptions", LeaksRunOptions);
  }
}

}
