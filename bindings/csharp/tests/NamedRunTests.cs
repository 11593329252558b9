// SPDX-License-Identifier: Apache-2.0
// Named runs and steps (C ABI 0.6) through the C# binding: NamedTensor inputs of float, int and
// long, outputs by name (allocated or in the caller's arrays), RunOptions and CancellationToken
// cancellation, the log handler, and their error paths and leak checks.
using System;
using System.Collections.Generic;
using System.Diagnostics;
using System.IO;
using System.Linq;
using System.Threading;
using Recur;

namespace RecurTests {

static partial class Program {
  static string SentimentKeras3 { get { return Path.Combine(modelDir, "sentiment_keras3.keras"); } }

  static float[][] SentimentIds() {
    return File.ReadAllLines(Path.Combine(modelDir, "sentiment_inputs.txt")).Where(x => x.Trim().Length > 0)
               .Select(x => x.Split(new[] { ' ' }, StringSplitOptions.RemoveEmptyEntries).Select(float.Parse).ToArray())
               .ToArray();
  }

  static T ThrowsNamed<T>(Action action, string what, string paramName) where T : ArgumentException {
    var e = Throws<T>(action, what);
    if (e.ParamName != paramName) throw new Exception(what + ": ParamName '" + e.ParamName + "', want '" + paramName + "'");
    return e;
  }

  // ---- named runs equal positional runs ---------------------------------------------------------

  static void NamedRunSentimentEqualsPositional() {
    var rows = SentimentIds();
    int B = rows.Length, T = rows[0].Length;
    float[] flat = rows.SelectMany(r => r).ToArray();
    using (var m = Model.Open(SentimentKeras3)) {
      float[] positional = m.Run(flat, B, T);
      string input = m.Input(0).Name, output = m.OutputNames[0];
      var dims = new long[] { B, T };
      var tensors = new[] {
        new NamedTensor(input, flat, dims),
        new NamedTensor(input, flat.Select(v => (int)v).ToArray(), dims),
        new NamedTensor(input, flat.Select(v => (long)v).ToArray(), dims) };
      foreach (var t in tensors) {
        var got = m.Run(new[] { t });
        Check(got.Count == 1 && got.ContainsKey(output), t.ElementType + ": one output, by its name");
        Check(SameBits(got[output].Values, positional), t.ElementType + ": named run equals Run to the bit");
        Check(got[output].Dims.SequenceEqual(m.OutputDims(0, B, new[] { T })), t.ElementType + ": dims");
        Check(got[output].Name == output, "output name");
      }
      // Integer ids at the Embedding's edge: the last row is valid, one past it is refused by name.
      int vocab = 0;
      for (int i = 0; i < m.Info.NumLayers; ++i)
        if (m.LayerAt(i).ClassName == "Embedding")
          vocab = (int)(double)((Dictionary<string, object>)((Dictionary<string, object>)MiniJson.Parse(m.LayerAt(i).ConfigJson))["config"])["input_dim"];
      Check(vocab > 1, "the model's Embedding input_dim");
      var edge = new long[B * T];
      edge[0] = vocab - 1;
      m.Run(new[] { new NamedTensor(input, edge, dims) });
      edge[0] = vocab;
      Fails(Status.InvalidArgument, () => m.Run(new[] { new NamedTensor(input, edge, dims) }), "an id past the Embedding",
            input);
      var negative = new int[B * T];
      negative[3] = -1;
      Fails(Status.InvalidArgument, () => m.Run(new[] { new NamedTensor(input, negative, dims) }), "a negative id", "-1");
    }
  }

  static NamedTensor[] MultiIoInputs(Dictionary<string, object> call, Model m, bool reversed) {
    var list = new List<NamedTensor>();
    var tensors = (List<object>)call["inputs"];
    for (int i = 0; i < tensors.Count; ++i) list.Add(new NamedTensor(m.Input(i).Name, Data(tensors[i]), ShapeOf(tensors[i])));
    if (reversed) list.Reverse();
    return list.ToArray();
  }

  static void NamedRunMultiInputEqualsPositional() {
    var c = GraphCase("keras3", "multi_io");
    var call = Calls(c)[0];
    using (var m = Model.Open(GraphFile("keras3", "multi_io", "keras"))) {
      var positional = m.Run(Tensors(call, "inputs"), BatchOf(call), TimestepsOf(call));
      var names = m.OutputNames;
      Check(names.SequenceEqual(new[] { "probs", "value" }), "output names: " + string.Join(",", names));
      var inputs = MultiIoInputs(call, m, true);  // in the other order than the model's
      var all = m.Run(inputs);
      Check(all.Keys.SequenceEqual(names), "every output, in the model's order");
      for (int i = 0; i < names.Length; ++i) {
        Check(SameBits(all[names[i]].Values, positional[i]), names[i] + ": named equals positional to the bit");
        Near(Data(((List<object>)call["outputs"])[i]), all[names[i]].Values, GraphTolerance, names[i] + ": Keras");
      }
      var subset = m.Run(inputs, new[] { "value", "probs" });
      Check(subset.Keys.SequenceEqual(new[] { "value", "probs" }), "outputs in the order asked");
      Check(SameBits(subset["value"].Values, positional[1]) && SameBits(subset["probs"].Values, positional[0]), "reordered");
      var one = m.Run(inputs, new[] { "value" });
      Check(one.Count == 1 && SameBits(one["value"].Values, positional[1]), "one output of two");
      // Shapes, and the caller-buffer form.
      var shapes = m.OutputShapes(inputs, new[] { "value", "probs" });
      Check(shapes["value"].SequenceEqual(m.OutputDims(1, BatchOf(call), TimestepsOf(call))), "OutputShapes");
      var buffers = new[] { new OutputBuffer("value"), new OutputBuffer("probs") };
      m.OutputShapes(inputs, buffers);
      Check(buffers[0].Length == positional[1].Length && buffers[1].Length == positional[0].Length, "sized by OutputShapes");
      foreach (var b in buffers) b.Buffer = Enumerable.Repeat(float.NaN, (int)b.Length + 3).ToArray();
      m.RunInto(inputs, buffers);
      Check(SameBits(buffers[0].Buffer.Take((int)buffers[0].Length).ToArray(), positional[1]), "RunInto value");
      Check(SameBits(buffers[1].Buffer.Take((int)buffers[1].Length).ToArray(), positional[0]), "RunInto probs");
      Check(float.IsNaN(buffers[0].Buffer[buffers[0].Length]), "nothing written past the output");
      Check(buffers[1].Dims.SequenceEqual(shapes["probs"]) && buffers[1].Rank == 2 && buffers[1].Dim(1) == 3, "dims back");
      Throws<ArgumentOutOfRangeException>(() => buffers[1].Dim(2), "Dim past the rank");
      m.RunInto(inputs, new OutputBuffer[0]);  // no outputs: valid, only runs
    }
  }

  // A Keras 3 layer's several outputs share its name: "name:k" picks each.
  static void NamedRunSharedOutputNames() {
    foreach (var name in new[] { "return_state_outputs", "bidirectional_return_state" }) {
      var call = Calls(GraphCase("keras3", name))[0];
      using (var m = Model.Open(GraphFile("keras3", name, "keras"))) {
        var positional = m.Run(Tensors(call, "inputs"), BatchOf(call), TimestepsOf(call));
        var inputs = MultiIoInputs(call, m, false);
        var names = m.OutputNames;
        Check(names.Distinct().Count() == names.Length, name + ": distinct names " + string.Join(",", names));
        var shared = m.Outputs.GroupBy(o => o.Name).FirstOrDefault(g => g.Count() > 1);
        var got = m.Run(inputs, names.Reverse());
        for (int i = 0; i < names.Length; ++i) Check(SameBits(got[names[i]].Values, positional[i]), name + ": " + names[i]);
        Check(shared != null, name + ": a Keras 3 layer with several outputs");
        Fails(Status.InvalidArgument, () => m.Run(inputs, new[] { shared.Key }), name + ": the bare shared name", shared.Key);
      }
    }
  }

  static void NamedStepEqualsPositional() {
    var call = Calls(GraphCase("keras3", "multi_io"))[0];
    using (var m = Model.Open(GraphFile("keras3", "multi_io", "keras"))) {
      int batch = BatchOf(call);
      var ts = TimestepsOf(call);
      var inputs = MultiIoInputs(call, m, true);
      using (var a = new ModelState(m, batch))
      using (var b = new ModelState(m, batch)) {
        var positional = a.Step(Tensors(call, "inputs"), ts[0]);
        var named = b.Step(inputs, new[] { "value", "probs" });
        Check(SameBits(named["value"].Values, positional[1]) && SameBits(named["probs"].Values, positional[0]), "named step");
        Check(b.OutputShapes(inputs)["probs"].SequenceEqual(a.OutputDims(0, ts[0])), "state OutputShapes");
        var buffers = new[] { new OutputBuffer("probs", new float[positional[0].Length]) };
        var again = a.Step(Tensors(call, "inputs"), ts[0]);
        b.StepInto(inputs, buffers);
        Check(SameBits(buffers[0].Buffer, again[0]), "StepInto continues the stream as Step");
        Check(b.OutputNames.SequenceEqual(m.OutputNames), "state output names");
        var seq = (List<object>)call["inputs"];
        var badBatch = new[] { new NamedTensor("seq", new float[4 * 7 * 4], new long[] { 4, 7, 4 }),
                               new NamedTensor("static", new float[4 * 5], new long[] { 4, 5 }) };
        Fails(Status.Shape, () => b.Step(badBatch), "a batch other than the state's", "batch");
      }
    }
  }

  // ---- errors ---------------------------------------------------------------------------------

  static void NamedRunErrors() {
    var call = Calls(GraphCase("keras3", "multi_io"))[0];
    using (var m = Model.Open(GraphFile("keras3", "multi_io", "keras"))) {
      var good = MultiIoInputs(call, m, false);
      var seq = good[0];
      var stat = good[1];
      // Managed argument checks.
      ThrowsNamed<ArgumentNullException>(() => m.Run(null), "null inputs", "inputs");
      ThrowsNamed<ArgumentNullException>(() => m.Run(new[] { seq, null }), "a null input", "inputs");
      ThrowsNamed<ArgumentNullException>(() => m.Run(good, new[] { "probs", null }), "a null output name", "outputNames");
      ThrowsNamed<ArgumentNullException>(() => m.RunInto(null, new OutputBuffer[0]), "RunInto null inputs", "inputs");
      ThrowsNamed<ArgumentNullException>(() => m.RunInto(good, null), "RunInto null outputs", "outputs");
      ThrowsNamed<ArgumentNullException>(() => m.RunInto(good, new OutputBuffer[] { null }), "RunInto a null output", "outputs");
      var e = ThrowsNamed<ArgumentNullException>(() => m.RunInto(good, new[] { new OutputBuffer("probs") }), "no Buffer", "outputs");
      Check(e.Message.Contains("probs") && e.Message.Contains("OutputShapes"), "the message names the output: " + e.Message);
      ThrowsNamed<ArgumentNullException>(() => new NamedTensor(null, new float[1], new long[] { 1 }), "null name", "name");
      ThrowsNamed<ArgumentNullException>(() => new NamedTensor("seq", (float[])null, new long[] { 1 }), "null data", "data");
      ThrowsNamed<ArgumentNullException>(() => new NamedTensor("seq", new int[1], null), "null dims", "dims");
      ThrowsNamed<ArgumentException>(() => new NamedTensor("seq", new long[1], new long[0]), "no dims", "dims");
      ThrowsNamed<ArgumentException>(() => new NamedTensor("seq", new float[1], new long[9]), "9 dims", "dims");
      ThrowsNamed<ArgumentNullException>(() => new OutputBuffer(null), "null output name", "name");
      // The C ABI's checks, each message naming the argument.
      Fails(Status.InvalidArgument, () => m.Run(new[] { seq, new NamedTensor("nope", stat.Data as float[], stat.Dims) }),
            "an unknown input name", "nope");
      Fails(Status.InvalidArgument, () => m.Run(new[] { seq }), "a missing input", "static");
      Fails(Status.InvalidArgument, () => m.Run(new[] { seq, stat, seq }), "a repeated input", "seq");
      Fails(Status.InvalidArgument, () => m.Run(good, new[] { "nope" }), "an unknown output", "nope");
      Fails(Status.InvalidArgument, () => m.Run(good, new[] { "probs", "probs" }), "a repeated output", "probs");
      Fails(Status.Shape, () => m.Run(new[] { new NamedTensor("seq", new float[3 * 7 * 5], new long[] { 3, 7, 5 }), stat }),
            "a feature dim other than the model's", "seq");
      Fails(Status.Shape, () => m.Run(new[] { new NamedTensor("seq", new float[10], new long[] { 3, 7, 4 }), stat }),
            "data shorter than the dims", "seq");
      Fails(Status.Shape, () => m.Run(new[] { seq, new NamedTensor("static", new float[2 * 5], new long[] { 2, 5 }) }),
            "inputs of different batches", "static");
      Fails(Status.InvalidArgument, () => m.Run(new[] { seq, new NamedTensor("static", (float[])stat.Data, stat.Dims, new byte[3]) }),
            "a mask on an input without timesteps", "static");
      Fails(Status.Shape, () => m.Run(new[] { new NamedTensor("seq", (float[])seq.Data, seq.Dims, new byte[5]), stat }),
            "a mask of the wrong length", "seq");
      var small = new[] { new OutputBuffer("probs", Enumerable.Repeat(-7f, 4).ToArray()) };
      Fails(Status.Shape, () => m.RunInto(good, small), "a buffer too small", "probs");
      Check(small[0].Buffer.All(v => v == -7f) && small[0].Rank == 0 && small[0].Length == 0, "a failed call wrote nothing");
      Fails(Status.InvalidArgument, () => m.OutputShapes(good, new[] { "nope" }), "OutputShapes: an unknown output", "nope");
      // Disposed objects.
      var options = new RunOptions();
      options.Dispose();
      Throws<ObjectDisposedException>(() => m.Run(good, null, options), "disposed RunOptions");
      m.Dispose();
      Throws<ObjectDisposedException>(() => m.Run(good), "Run after Dispose");
      Throws<ObjectDisposedException>(() => m.RunInto(good, new OutputBuffer[0]), "RunInto after Dispose");
      Throws<ObjectDisposedException>(() => m.OutputShapes(good), "OutputShapes after Dispose");
      Throws<ObjectDisposedException>(() => { var n = m.OutputNames; }, "OutputNames after Dispose");
    }
  }

  // ---- cancellation -----------------------------------------------------------------------------

  // A run of the sentiment model that takes a while: B rows of T token ids.
  static NamedTensor LongSentimentInput(Model m, int batch, int timesteps) {
    var ids = new int[batch * timesteps];
    for (int i = 0; i < ids.Length; ++i) ids[i] = 1 + i % 19;  // within the model's Embedding (input_dim 20)
    return new NamedTensor(m.Input(0).Name, ids, new long[] { batch, timesteps });
  }

  // Doubles the timesteps until an uncancelled run takes at least 300 ms; returns its time.
  static NamedTensor[] LongRun(Model m, out long full) {
    for (int timesteps = 10000; ; timesteps *= 2) {
      var input = new[] { LongSentimentInput(m, 8, timesteps) };
      var watch = Stopwatch.StartNew();
      m.Run(input);
      full = watch.ElapsedMilliseconds;
      if (full >= 300 || timesteps >= 1 << 22) return input;
    }
  }

  static void CancelFromAnotherThread() {
    using (var m = Model.Open(SentimentKeras3))
    using (var options = new RunOptions()) {
      long full;
      var input = LongRun(m, out full);
      Check(!options.IsCancelled, "new options are not cancelled");
      var canceller = new Thread(() => { Thread.Sleep((int)(full / 10)); options.Cancel(); });
      canceller.Start();
      var e = Throws<RecurCancelledException>(() => m.Run(input, null, options), "cancelled run");
      canceller.Join();
      Check(e is OperationCanceledException && e.Status == Status.Cancelled, "an OperationCanceledException, Status.Cancelled");
      Check(e.Message.Contains("cancel"), "message: " + e.Message);
      Check(options.IsCancelled, "cancelled until Reset");
      Throws<RecurCancelledException>(() => m.Run(new[] { LongSentimentInput(m, 1, 5) }, null, options), "a later call, still cancelled");
      var shapeOptions = m.OutputShapes(new[] { LongSentimentInput(m, 1, 5) });  // shapes take no options
      Check(shapeOptions.Count == 1, "shapes");
      options.Reset();
      Check(!options.IsCancelled, "Reset");
      m.Run(new[] { LongSentimentInput(m, 1, 5) }, null, options);
      // Dispose while a call runs with the options is refused.
      var running = new Thread(() => { try { m.Run(input, null, options); } catch (RecurCancelledException) {} });
      running.Start();
      Thread.Sleep((int)(full / 10));
      var busy = Throws<InvalidOperationException>(() => options.Dispose(), "Dispose during a call");
      Check(busy.Message.Contains("running"), busy.Message);
      options.Cancel();
      running.Join();
    }
  }

  static void CancelWithToken() {
    using (var m = Model.Open(SentimentKeras3)) {
      long full;
      var input = LongRun(m, out full);
      using (var cts = new CancellationTokenSource()) {
        cts.CancelAfter((int)(full / 10));
        var e = Throws<RecurCancelledException>(() => m.Run(input, null, cts.Token), "cancelled by the token");
        Check(e.CancellationToken == cts.Token, "the exception carries the token");
        Check(e.Status == Status.Cancelled, "status");
      }
      var outputs = new[] { new OutputBuffer(m.OutputNames[0], new float[16]) };
      using (var cts = new CancellationTokenSource()) {
        cts.Cancel();
        Throws<RecurCancelledException>(() => m.RunInto(input, outputs, cts.Token), "an already cancelled token");
      }
      var small = new[] { LongSentimentInput(m, 2, 5) };
      var want = m.Run(small);
      var got = m.Run(small, null, new CancellationTokenSource().Token);
      Check(SameBits(want.Values.First().Values, got.Values.First().Values), "an uncancelled token runs");
      Check(m.Run(small, null, CancellationToken.None).Count == 1, "CancellationToken.None");
    }
    // A stream's cancelled step leaves it as before.
    var call = Calls(GraphCase("keras3", "multi_io"))[0];
    using (var m = Model.Open(GraphFile("keras3", "multi_io", "keras")))
    using (var s = new ModelState(m, BatchOf(call)))
    using (var fresh = new ModelState(m, BatchOf(call)))
    using (var options = new RunOptions()) {
      var inputs = MultiIoInputs(call, m, false);
      options.Cancel();
      Throws<RecurCancelledException>(() => s.Step(inputs, null, options), "cancelled step");
      using (var cts = new CancellationTokenSource()) {
        cts.Cancel();
        Throws<RecurCancelledException>(() => s.Step(inputs, null, cts.Token), "step cancelled by a token");
      }
      Check(SameBits(s.Step(inputs)["probs"].Values, fresh.Step(inputs)["probs"].Values), "the stream is as before");
    }
  }

  // ---- the log handler ----------------------------------------------------------------------------

  static void LogHandler() {
    var messages = new List<KeyValuePair<LogLevel, string>>();
    Exception inner = null;
    ThrowsNamed<ArgumentOutOfRangeException>(() => Library.SetLogHandler((l, s) => {}, (LogLevel)7), "a bad level", "minLevel");
    try {
      Library.SetLogHandler((level, message) => {
        lock (messages) messages.Add(new KeyValuePair<LogLevel, string>(level, message));
        if (message.Contains("nested")) return;
        try { Library.SetLogHandler(null); } catch (InvalidOperationException e) { inner = e; }
        throw new Exception("a handler's exception is dropped");
      }, LogLevel.Debug);
      using (var m = Model.Open(SentimentKeras3)) m.Run(new[] { LongSentimentInput(m, 1, 3) });
      int count;
      lock (messages) count = messages.Count;
      Check(count > 0, "messages received");
      lock (messages) Check(messages.Any(p => p.Key == LogLevel.Info && p.Value.Contains("opened model")), "the model's summary");
      lock (messages) Check(messages.Any(p => p.Value.Length > 0 && !p.Value.Contains("\n")), "lines of text");
      Check(inner != null, "SetLogHandler from inside the handler is refused");
      // Above Error, nothing an ordinary open says reaches the handler.
      Library.SetLogHandler((level, message) => { lock (messages) messages.Add(new KeyValuePair<LogLevel, string>(level, message)); },
                            LogLevel.Error);
      lock (messages) messages.Clear();
      using (var m = Model.Open(SentimentKeras3)) {}
      lock (messages) Check(messages.All(p => p.Key == LogLevel.Error), "only errors at LogLevel.Error");
      // Removed: nothing more.
      Library.SetLogHandler(null);
      lock (messages) messages.Clear();
      using (var m = Model.Open(SentimentKeras3)) m.Run(new[] { LongSentimentInput(m, 1, 3) });
      lock (messages) Check(messages.Count == 0, "nothing after the handler is removed: " + messages.Count);
    } finally {
      Library.SetLogHandler(null);
    }
  }

  // ---- no garbage per call, leaks, Dispose ----------------------------------------------------------

  static void RunIntoAllocatesNothing() {
    var call = Calls(GraphCase("keras3", "multi_io"))[0];
    using (var m = Model.Open(GraphFile("keras3", "multi_io", "keras")))
    using (var s = new ModelState(m, BatchOf(call)))
    using (var options = new RunOptions()) {
      var inputs = MultiIoInputs(call, m, true);
      var outputs = new[] { new OutputBuffer("value", new float[64]), new OutputBuffer("probs", new float[64]) };
      m.RunInto(inputs, outputs, options);  // warm: JIT, first-call caches
      s.StepInto(inputs, outputs, options);
      long before = GC.GetAllocatedBytesForCurrentThread();
      for (int i = 0; i < 1000; ++i) {
        m.RunInto(inputs, outputs, options);
        s.StepInto(inputs, outputs);
      }
      long allocated = GC.GetAllocatedBytesForCurrentThread() - before;
      Check(allocated == 0, "bytes allocated by 2000 calls: " + allocated);
      // The check can fail: the allocating form does allocate.
      before = GC.GetAllocatedBytesForCurrentThread();
      m.Run(inputs);
      Check(GC.GetAllocatedBytesForCurrentThread() - before > 0, "Run allocates its outputs");
    }
  }

  static void LeaksRunOptions() {
    var before = SettledLiveHandles();
    ulong live = Library.LiveRunOptions;
    var options = new RunOptions();
    Check(Library.LiveRunOptions == live + 1 && Library.LiveHandles.RunOptions == live + 1, "counted");
    options.Dispose();
    options.Dispose();  // twice: nothing
    Check(Library.LiveRunOptions == live, "freed");
    Throws<ObjectDisposedException>(() => options.Cancel(), "Cancel after Dispose");
    Throws<ObjectDisposedException>(() => options.Reset(), "Reset after Dispose");
    Throws<ObjectDisposedException>(() => { var c = options.IsCancelled; }, "IsCancelled after Dispose");
    Check(options.IsDisposed, "IsDisposed");
    var call = Calls(GraphCase("keras3", "multi_io"))[0];
    using (var m = Model.Open(GraphFile("keras3", "multi_io", "keras"))) {
      var inputs = MultiIoInputs(call, m, false);
      using (var cts = new CancellationTokenSource()) {
        m.Run(inputs, null, cts.Token);
        cts.Cancel();
        Throws<RecurCancelledException>(() => m.Run(inputs, null, cts.Token), "token");
      }
      Throws<RecurException>(() => m.Run(inputs, new[] { "nope" }), "an error path");
      Throws<RecurException>(() => m.RunInto(inputs, new[] { new OutputBuffer("probs", new float[1]) }), "an error path");
    }
    CheckBack(before, "named runs, tokens and their errors");
    // Forgotten options are freed by their finalizer.
    var t = new Thread(() => { for (int i = 0; i < 10; ++i) new RunOptions().Cancel(); });
    t.Start();
    t.Join();
    var left = AwaitLiveHandles(before, 30000);
    Check(left == before, "finalized: " + left + ", was " + before);
  }

  static void RunNamedTests() {
    Run("NamedRunSentimentEqualsPositional", NamedRunSentimentEqualsPositional);
    Run("NamedRunMultiInputEqualsPositional", NamedRunMultiInputEqualsPositional);
    Run("NamedRunSharedOutputNames", NamedRunSharedOutputNames);
    Run("NamedStepEqualsPositional", NamedStepEqualsPositional);
    Run("NamedRunErrors", NamedRunErrors);
    Run("CancelFromAnotherThread", CancelFromAnotherThread);
    Run("CancelWithToken", CancelWithToken);
    Run("LogHandler", LogHandler);
    Run("RunIntoAllocatesNothing", RunIntoAllocatesNothing);
    Run("StepStatesEqualsStepsOneByOne", StepStatesEqualsStepsOneByOne);
  }

  // Model.StepStates (since 0.8): states of different batches stepped in one call give the
  // numbers of stepping each alone (a masked sequence input, a static input given whole).
  static void StepStatesEqualsStepsOneByOne() {
    using (var m = Model.Open(Path.Combine(graphDir, "keras3", "multi_io.keras"))) {
      int[] batches = { 2, 1, 3 };
      var alone = batches.Select(b => new ModelState(m, b)).ToList();
      var together = batches.Select(b => new ModelState(m, b)).ToList();
      int seed = 0;
      for (int call = 0; call < 4; ++call) {
        int t = 1 + call % 2;
        var want = new Dictionary<string, List<float>>();
        var seqAll = new List<float>();
        var statAll = new List<float>();
        var maskAll = new List<byte>();
        for (int s = 0; s < batches.Length; ++s) {
          int b = batches[s];
          float[] seq = Enumerable.Range(seed, b * t * 4).Select(i => (float)Math.Sin(i * 0.37) * 0.9f).ToArray();
          float[] stat = Enumerable.Range(seed + 3, b * 5).Select(i => (float)Math.Cos(i * 0.21) * 0.7f).ToArray();
          byte[] mask = Enumerable.Range(0, b * t).Select(i => (byte)((seed + i) % 3 != 0 ? 1 : 0)).ToArray();
          seed += 11;
          var got1 = alone[s].Step(new[] { new NamedTensor("seq", seq, new long[] { b, t, 4 }, mask),
                                           new NamedTensor("static", stat, new long[] { b, 5 }) });
          foreach (var kv in got1) {
            if (!want.ContainsKey(kv.Key)) want[kv.Key] = new List<float>();
            want[kv.Key].AddRange(kv.Value.Values);
          }
          seqAll.AddRange(seq);
          statAll.AddRange(stat);
          maskAll.AddRange(mask);
        }
        var all = new[] { new NamedTensor("seq", seqAll.ToArray(), new long[] { 6, t, 4 }, maskAll.ToArray()),
                          new NamedTensor("static", statAll.ToArray(), new long[] { 6, 5 }) };
        if (call == 2) {
          var bad = new[] { all[0], new NamedTensor("static", statAll.Take(25).ToArray(), new long[] { 5, 5 }) };
          Fails(Status.Shape, () => m.StepStates(together, bad), "StepStates with 5 rows", "the rows of the 3 states");
          Fails(Status.InvalidArgument, () => m.StepStates(new[] { together[0], together[0] }, all), "one state twice",
                "are the same state");
        }
        var got = m.StepStates(together, all);
        Check(got.Count == want.Count, "StepStates: every output");
        foreach (var kv in got) {
          float[] w = want[kv.Key].ToArray(), g = kv.Value.Values;
          Check(w.Length == g.Length, kv.Key + ": length");
          for (int i = 0; i < w.Length; ++i) Check(Math.Abs(w[i] - g[i]) <= 1e-6, kv.Key + "[" + i + "] within 1e-6");
        }
      }
      foreach (var s in alone) s.Dispose();
      foreach (var s in together) s.Dispose();
    }
  }
}

}
