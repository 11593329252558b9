// SPDX-License-Identifier: Apache-2.0
// Models as graphs (recur 0.4) through the C# binding: several inputs and outputs, models opened
// from memory, stateful models, Keras backends and ModelState streams, against the Keras graph
// fixtures (tests/keras/graphs: model files and Keras's predictions) and the CLI's model files.
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using Recur;

namespace RecurTests {

static partial class Program {
  static string graphDir, cliModelDir;
  const double GraphTolerance = 1e-5;
  // Cases run through every file and dialect (the C++ parity suite runs them all).
  static readonly string[] ParityCases = {
    "multi_io", "return_state_outputs", "seq2seq_initial_state", "merges_mixed_masks", "masking_sequential",
    "embedding_masked_full_row", "bidirectional_return_state", "stateful_sequential_gru",
    "stateful_functional_lstm_gru", "simple_rnn"};
  static readonly Dictionary<string, Dictionary<string, object>> graphDocs = new Dictionary<string, Dictionary<string, object>>();

  static Dictionary<string, object> GraphDoc(string dialect) {
    Dictionary<string, object> d;
    if (!graphDocs.TryGetValue(dialect, out d)) {
      d = (Dictionary<string, object>)MiniJson.Parse(File.ReadAllText(Path.Combine(graphDir, dialect + ".json")));
      graphDocs[dialect] = d;
    }
    return d;
  }

  static Dictionary<string, object> GraphCase(string dialect, string name) {
    foreach (Dictionary<string, object> c in (List<object>)GraphDoc(dialect)["cases"])
      if ((string)c["name"] == name) return c;
    throw new Exception(dialect + ".json has no case " + name);
  }

  static string GraphFile(string dialect, string name, string ext) {
    return Path.Combine(graphDir, dialect, name + "." + ext);
  }

  static string CliModel(string dialect, string file) { return Path.Combine(cliModelDir, dialect, file); }

  static List<Dictionary<string, object>> Calls(Dictionary<string, object> c) {
    return ((List<object>)c["calls"]).Cast<Dictionary<string, object>>().ToList();
  }

  static float[] Data(object tensor) {
    return ((List<object>)((Dictionary<string, object>)tensor)["data"]).Select(v => (float)(double)v).ToArray();
  }

  static long[] ShapeOf(object tensor) {
    return ((List<object>)((Dictionary<string, object>)tensor)["shape"]).Select(v => (long)(double)v).ToArray();
  }

  static float[][] Tensors(Dictionary<string, object> call, string key) {
    return ((List<object>)call[key]).Select(Data).ToArray();
  }

  static int BatchOf(Dictionary<string, object> call) { return (int)ShapeOf(((List<object>)call["inputs"])[0])[0]; }

  // Axis 1 of each input (its timesteps where it has them; recur ignores the others).
  static int[] TimestepsOf(Dictionary<string, object> call) {
    return ((List<object>)call["inputs"]).Select(t => { var s = ShapeOf(t); return s.Length > 1 ? (int)s[1] : 0; }).ToArray();
  }

  static void Near(float[] want, float[] got, double tol, string what) {
    Check(want.Length == got.Length, what + ": length " + got.Length + ", want " + want.Length);
    for (int i = 0; i < want.Length; ++i)
      if (!(Math.Abs(want[i] - got[i]) <= tol * (1 + Math.Abs(want[i]))))
        throw new Exception(what + "[" + i + "]: want " + want[i] + ", got " + got[i]);
  }

  static bool Same(float[] a, float[] b) { return a.Length == b.Length && MaxDiff(a, b) == 0; }

  static void RunGraphCase(Model m, Dictionary<string, object> c, string what) {
    int k = 0;
    foreach (var call in Calls(c)) {
      if ((bool)call["reset_states_before"]) m.ResetStates();
      int batch = BatchOf(call);
      var ts = TimestepsOf(call);
      var got = m.Run(Tensors(call, "inputs"), batch, ts);
      var want = (List<object>)call["outputs"];
      Check(got.Length == want.Count, what + ": number of outputs");
      var dims = m.OutputDims(batch, ts);
      for (int i = 0; i < got.Length; ++i) {
        Check(dims[i].SequenceEqual(ShapeOf(want[i])), what + " call " + k + " output " + i + ": dims");
        Near(Data(want[i]), got[i], GraphTolerance, what + " call " + k + " output " + i);
      }
      ++k;
    }
  }

  static void GraphParity(string dialect, string name, string ext) {
    var c = GraphCase(dialect, name);
    string what = dialect + "/" + name + "." + ext;
    using (var m = Model.Open(GraphFile(dialect, name, ext))) {
      if (dialect == "keras3_jax") m.SetKerasBackend("jax");
      var names = (List<object>)c["input_names"];
      Check(m.NumInputs == names.Count, what + ": inputs");
      for (int i = 0; i < names.Count; ++i) Check(m.Input(i).Name == (string)names[i], what + ": input name " + i);
      Check(m.IsStateful == (bool)c["stateful"], what + ": stateful");
      RunGraphCase(m, c, what);
    }
  }

  // ---- opening ---------------------------------------------------------------------------------

  static void GraphOpenFromMemory() {
    string path = GraphFile("keras3", "multi_io", "keras");
    var bytes = File.ReadAllBytes(path);
    var call = Calls(GraphCase("keras3", "multi_io"))[0];
    float[][] want;
    using (var m = Model.Open(path)) want = m.Run(Tensors(call, "inputs"), 3, TimestepsOf(call));
    using (var a = Model.Open(bytes))
    using (var b = Model.Open(bytes, "multi_io.keras"))
    using (var s = Model.Open(new MemoryStream(bytes)))
    using (var n = Model.Open(new MemoryStream(bytes), "stream.keras"))
      foreach (var m in new[] { a, b, s, n }) {
        Check(m.NumInputs == 2, "two inputs");
        var got = m.Run(Tensors(call, "inputs"), 3, TimestepsOf(call));
        for (int i = 0; i < got.Length; ++i) Check(Same(want[i], got[i]), "output " + i + " from memory");
      }
    using (var h = Model.Open(File.ReadAllBytes(GraphFile("keras3", "multi_io", "h5")))) Check(h.Output(0).Name == "probs", "an .h5 image");
  }

  static void GraphOpenFromBytesThatAreNotAModel() {
    var junk = System.Text.Encoding.ASCII.GetBytes("this is not a Keras file");
    Fails(Status.IO, () => Model.Open(junk), "junk bytes", "<memory>");
    Fails(Status.IO, () => Model.Open(junk, "junk.keras"), "named junk bytes", "junk.keras");
    Fails(Status.IO, () => Model.Open(new MemoryStream(junk), "piped"), "a junk stream", "piped");
    Fails(Status.InvalidArgument, () => Model.Open(new byte[0]), "no bytes", "empty");
    var whole = File.ReadAllBytes(GraphFile("keras3", "multi_io", "keras"));
    Fails(Status.IO, () => Model.Open(whole.Take(whole.Length / 2).ToArray(), "cut.keras"), "a truncated file", "cut.keras");
    Throws<ArgumentNullException>(() => Model.Open((byte[])null), "null bytes");
    Throws<ArgumentNullException>(() => Model.Open((Stream)null), "null stream");
  }

  // ---- inputs and outputs ----------------------------------------------------------------------

  static void GraphDescriptors() {
    using (var m = Model.Open(GraphFile("keras3", "multi_io", "keras"))) {
      Check(m.NumInputs == 2 && m.NumOutputs == 2, "counts");
      var inputs = m.Inputs;
      var outputs = m.Outputs;
      Check(inputs[0].Name == "seq" && inputs[0].Dims.SequenceEqual(new long[] { -1, 7, 4 }) && inputs[0].Rank == 3 &&
                !inputs[0].TokenIds && inputs[0].Index == 0, "input 0: " + inputs[0]);
      Check(inputs[1].Name == "static" && inputs[1].Dims.SequenceEqual(new long[] { -1, 5 }), "input 1: " + inputs[1]);
      Check(outputs[0].Name == "probs" && outputs[0].Dims.SequenceEqual(new long[] { -1, 3 }), "output 0: " + outputs[0]);
      Check(outputs[1].Name == "value" && outputs[1].Dims.SequenceEqual(new long[] { -1, 2 }), "output 1: " + outputs[1]);
      Check(inputs[0].ToString() == "seq (-1, 7, 4)", inputs[0].ToString());
      inputs[0].Dims[1] = 99;
      Check(m.Input(0).Dims[1] == 7, "Dims is a copy");
      var ts = new[] { 7, 0 };
      Check(m.InputsLength(3, ts) == 3 * 7 * 4 + 3 * 5, "inputs length");
      Check(m.OutputsLength(3, ts) == 3 * 3 + 3 * 2, "outputs length");
      Check(m.OutputDims(0, 3, ts).SequenceEqual(new long[] { 3, 3 }), "output dims");
      Check(m.OutputDims(1, 3, null).SequenceEqual(new long[] { 3, 2 }), "fixed lengths need no timesteps");
      var all = m.OutputDims(4, ts);
      Check(all.Length == 2 && all[1].SequenceEqual(new long[] { 4, 2 }), "every output's dims");
      Fails(Status.InvalidArgument, () => m.Input(2), "input 2", "index 2 is out of range");
      Fails(Status.InvalidArgument, () => m.Output(-1), "output -1", "index -1 is out of range");
      Fails(Status.InvalidArgument, () => m.OutputDims(5, 3, ts), "output dims 5", "index 5");
      Fails(Status.InvalidArgument, () => m.OutputsLength(3, new[] { 7 }), "one timestep for two inputs", "num_timesteps");
      Fails(Status.InvalidArgument, () => m.InputsLength(0, ts), "batch 0", "batch");
      // Which inputs have a timesteps axis, from the C ABI: (B, 7, 4) yes, (B, 5) features no.
      Check(inputs[0].Sequence && m.IsSequence(0), "input 0 is a sequence");
      Check(!inputs[1].Sequence && !m.IsSequence(1), "input 1 is not a sequence");
      Check(!outputs[0].Sequence, "outputs are not flagged");
      Fails(Status.InvalidArgument, () => m.IsSequence(2), "IsSequence(2)", "index 2 is out of range");
      Fails(Status.InvalidArgument, () => m.IsSequence(-1), "IsSequence(-1)", "index -1");
      Check(m.NumStatefulLayers == 0 && m.StatefulLayers.Length == 0, "no stateful layers");
    }
    using (var m = Model.Open(GraphFile("keras3", "embedding_masked_full_row", "keras"))) {
      var ids = m.Input(0);
      Check(ids.TokenIds && ids.Dims.SequenceEqual(new long[] { -1, -1 }), "token ids of any length: " + ids);
      Check(ids.Sequence, "(B, T) token ids are a sequence");
      Check(m.InputsLength(3, new[] { 9 }) == 27, "3 x 9 ids");
      Fails(Status.InvalidArgument, () => m.InputsLength(3, new[] { 0 }), "0 timesteps", "timesteps");
    }
    using (var m = Model.Open(CliModel("keras3", "tokens.keras"))) Check(m.Input(0).TokenIds, "tokens takes ids");
  }

  static void GraphRunErrors() {
    var call = Calls(GraphCase("keras3", "multi_io"))[0];
    var x = Tensors(call, "inputs");
    var ts = TimestepsOf(call);
    using (var m = Model.Open(GraphFile("keras3", "multi_io", "keras"))) {
      Fails(Status.Shape, () => m.Run(new[] { x[0], new float[4] }, 3, ts), "short static input", "'static'");
      Fails(Status.Shape, () => m.Run(x, 3, ts, new[] { new byte[5], null }), "short mask", "masks");
      Fails(Status.InvalidArgument, () => m.Run(new[] { x[0] }, 3, ts), "one input of two", "one per model input");
      Fails(Status.InvalidArgument, () => m.Run(x, 3, ts, new byte[1][]), "one mask entry of two", "masks");
      Fails(Status.InvalidArgument, () => m.Run(x, 3, new[] { 7 }), "one timestep of two", "num_timesteps");
      var flat = x[0].Concat(x[1]).ToArray();
      Fails(Status.Shape, () => m.RunInputs(flat, 3, ts, null, new float[14]), "short outputs", "outputs");
      Throws<ArgumentNullException>(() => m.Run(null, 3, ts), "null inputs");
      Throws<ArgumentNullException>(() => m.Run(new[] { x[0], null }, 3, ts), "a null input");
      Throws<ArgumentNullException>(() => m.RunInputs(flat, 3, ts, null, null), "null outputs");
      var y = new float[m.OutputsLength(3, ts)];
      m.RunInputs(flat, 3, ts, null, y);
      var split = m.Run(x, 3, ts);
      Check(Same(split[0], y.Take(9).ToArray()) && Same(split[1], y.Skip(9).ToArray()), "RunInputs == Run");
    }
    using (var m = Model.Open(CliModel("keras2", "tokens.keras"))) {
      var ids = new float[3 * 6];
      ids[4] = 20;  // Embedding(20, ...)
      Fails(Status.InvalidArgument, () => m.Run(new[] { ids }, 3, new[] { 6 }), "token id out of range", "token id 20");
    }
  }

  static void GraphMasks() {
    // binone: no Masking layer (one would replace the mask, as in Keras).
    var x = new[] { Pattern(3 * 6 * 3, 1.0, 0.3) };
    var ts = new[] { 6 };
    using (var m = Model.Open(CliModel("keras3", "binone.keras"))) {
      var plain = m.Run(x, 3, ts);
      Check(plain.Length == 2, "two outputs");
      var ones = Enumerable.Repeat((byte)1, 18).ToArray();
      Check(Same(plain[0], m.Run(x, 3, ts, new[] { ones })[0]), "an all-ones mask changes nothing");
      Check(Same(plain[1], m.Run(x, 3, ts, new byte[][] { null })[1]), "a null mask entry is no mask");
      var holes = (byte[])ones.Clone();
      holes[2] = 0;
      holes[17] = 0;
      var masked = m.Run(x, 3, ts, new[] { holes });
      Check(!Same(plain[0], masked[0]) && !Same(plain[1], masked[1]), "holes change both outputs");
      Fails(Status.Shape, () => m.Run(x, 3, ts, new[] { new byte[17] }), "17 mask values", "masks: expected 18");
    }
  }

  // ---- stateful models ---------------------------------------------------------------------------

  static void GraphStatefulModel() {
    var calls = Calls(GraphCase("keras3", "stateful_sequential_gru"));
    using (var m = Model.Open(GraphFile("keras3", "stateful_sequential_gru", "keras"))) {
      Check(m.IsStateful, "stateful");
      Check(m.StatesLength("gru") == 12, "3 x 4 states");
      // The stateful layers with their states' shapes; the input and output report the fixed batch.
      Check(m.NumStatefulLayers == 1, "one stateful layer");
      var gru = m.GetStatefulLayer(0);
      Check(gru.Index == 0 && gru.Name == "gru" && gru.NumStates == 1 && gru.Batch == 3 && gru.Units == 4, "gru: " + gru);
      Check(gru.StatesLength == m.StatesLength("gru") && gru.ToString() == "gru (1, 3, 4)", "gru's states length");
      Check(m.StatefulLayers.Length == 1 && m.StatefulLayers[0].Name == "gru", "StatefulLayers");
      Check(m.Input(0).Dims[0] == 3 && m.Output(0).Dims[0] == 3, "the fixed batch: " + m.Input(0) + ", " + m.Output(0));
      Check(m.Input(0).Sequence, "(3, T, 3) is a sequence");
      Fails(Status.InvalidArgument, () => m.GetStatefulLayer(1), "stateful layer 1", "index 1 is out of range");
      Fails(Status.InvalidArgument, () => m.GetStatefulLayer(-1), "stateful layer -1", "index -1");
      Check(m.GetStates("gru").All(v => v == 0), "zero before the first call");
      var first = calls[0];
      var second = calls[1];
      var y1 = m.Run(Tensors(first, "inputs"), 3, TimestepsOf(first));
      var after1 = m.GetStates("gru");
      Check(after1.Any(v => v != 0), "states after a call");
      var y2 = m.Run(Tensors(second, "inputs"), 3, TimestepsOf(second));
      Near(Data(((List<object>)second["outputs"])[0]), y2[0], GraphTolerance, "the second call goes on from the first");
      m.SetStates("gru", after1);
      var buf = new float[12];
      m.GetStates("gru", buf);
      Check(Same(buf, after1), "set/get states");
      Check(Same(m.Run(Tensors(second, "inputs"), 3, TimestepsOf(second))[0], y2[0]), "rewound to after call 1");
      m.ResetStates();
      Check(m.GetStates("gru").All(v => v == 0), "reset");
      Check(Same(m.Run(Tensors(first, "inputs"), 3, TimestepsOf(first))[0], y1[0]), "after reset: call 1 again");
      Fails(Status.InvalidArgument, () => m.GetStates("nosuch"), "unknown layer", "no layer 'nosuch'");
      Fails(Status.InvalidArgument, () => m.StatesLength("dense"), "not recurrent", "'dense'");
      Fails(Status.Shape, () => m.SetStates("gru", new float[11]), "11 states", "got 11");
      Fails(Status.Shape, () => m.GetStates("gru", new float[13]), "13 states", "got 13");
      Fails(Status.Shape, () => m.Run(new[] { new float[2 * 4 * 3] }, 2, new[] { 4 }), "another batch", "fixed batch of 3");
      Throws<ArgumentNullException>(() => m.GetStates(null), "null layer");
      Throws<ArgumentNullException>(() => m.SetStates("gru", null), "null states");
    }
    using (var m = Model.Open(GraphFile("keras3", "stateful_functional_lstm_gru", "h5"))) {
      Check(m.IsStateful && m.StatesLength("lstm") == 24 && m.StatesLength("gru") == 9, "LSTM h, c and GRU h");
      var ls = m.StatefulLayers;
      Check(ls.Length == 2, "two stateful layers");
      Check(ls[0].Name == "lstm" && ls[0].NumStates == 2 && ls[0].Batch == 3 && ls[0].Units == 4, "lstm first: " + ls[0]);
      Check(ls[1].Name == "gru" && ls[1].Index == 1 && ls[1].NumStates == 1 && ls[1].Batch == 3 && ls[1].Units == 3, "then gru: " + ls[1]);
      foreach (var l in ls) Check(l.StatesLength == m.StatesLength(l.Name), l.Name + ": states length");
      Fails(Status.InvalidArgument, () => m.GetStatefulLayer(2), "stateful layer 2", "index 2 is out of range");
    }
    using (var m = Model.Open(CliModel("keras3", "bigru.keras"))) {
      Check(!m.IsStateful, "not stateful");
      Fails(Status.InvalidArgument, () => m.StatesLength("bi/forward"), "a layer that is not stateful", "not stateful");
      Check(m.NumStatefulLayers == 0, "no stateful layers");
      Fails(Status.InvalidArgument, () => m.GetStatefulLayer(0), "stateful layer 0 of none", "index 0 is out of range");
      Check(m.Input(0).Dims[0] == -1, "not stateful: the batch is given at run time");
      m.ResetStates();
    }
  }

  // ---- Keras backends ----------------------------------------------------------------------------

  static void GraphKerasBackend() {
    // masked_initial_state: rows start with masked steps and the initial states are not zero, so
    // the backends differ (TensorFlow outputs zeros there, JAX the initial state).
    var tf = Calls(GraphCase("keras3", "masked_initial_state"))[0];
    var jax = Calls(GraphCase("keras3_jax", "masked_initial_state"))[0];
    var wantTf = Tensors(tf, "outputs");
    var wantJax = Tensors(jax, "outputs");
    for (int i = 0; i < wantTf.Length; ++i) Check(!Same(wantTf[i], wantJax[i]), "the fixture shows the backends' difference " + i);
    using (var m = Model.Open(GraphFile("keras3", "masked_initial_state", "keras"))) {
      var got = m.Run(Tensors(tf, "inputs"), 3, TimestepsOf(tf));
      for (int i = 0; i < got.Length; ++i) Near(wantTf[i], got[i], GraphTolerance, "tensorflow (the default), output " + i);
      m.SetKerasBackend("jax");
      got = m.Run(Tensors(jax, "inputs"), 3, TimestepsOf(jax));
      for (int i = 0; i < got.Length; ++i) Near(wantJax[i], got[i], GraphTolerance, "jax, output " + i);
      m.SetKerasBackend("tensorflow");
      got = m.Run(Tensors(tf, "inputs"), 3, TimestepsOf(tf));
      for (int i = 0; i < got.Length; ++i) Near(wantTf[i], got[i], GraphTolerance, "tensorflow again, output " + i);
      foreach (var bad in new[] { "torch", "numpy", "JAX", "" })
        Fails(Status.InvalidArgument, () => m.SetKerasBackend(bad), "backend '" + bad + "'", "\"tensorflow\" or \"jax\"");
      Throws<ArgumentNullException>(() => m.SetKerasBackend(null), "null backend");
    }
    using (var m = Model.Open(CliModel("keras2", "bigru.keras"))) {
      Fails(Status.Unsupported, () => m.SetKerasBackend("jax"), "jax for Keras 2", "Keras 2");
      m.SetKerasBackend("tensorflow");
    }
    using (var m = Model.Open(CliModel("keras3", "tokens.keras")))
    using (var gru = m.GetLayer("gru")) {
      int f = gru.Info.InputSize, u = gru.Info.Units;
      var x = Pattern(2 * 3 * f, 1.0, 0.5);
      var mask = new byte[] { 0, 1, 1, 1, 1, 1 };
      var h0 = Pattern(2 * u, 1.0, 1.5);
      var tfOut = new float[gru.OutputLength(2, 3)];
      var jaxOut = new float[tfOut.Length];
      gru.Forward(x, 2, 3, mask, h0, 1, false, tfOut, null);
      gru.SetKerasBackend("jax");
      gru.Forward(x, 2, 3, mask, h0, 1, false, jaxOut, null);
      Check(gru.Info.ReturnSequences, "the GRU returns sequences");
      for (int k = 0; k < u; ++k) {
        Check(tfOut[k] == 0, "tensorflow: a masked first step outputs 0");
        Check(jaxOut[k] == h0[k], "jax: a masked first step outputs the initial state");
      }
      Check(Same(tfOut.Skip(u).ToArray(), jaxOut.Skip(u).ToArray()), "the valid steps agree");
      Fails(Status.InvalidArgument, () => gru.SetKerasBackend("mxnet"), "layer backend 'mxnet'", "got \"mxnet\"");
    }
    using (var m = Model.Open(CliModel("keras2", "tokens.keras")))
    using (var gru = m.GetLayer("gru"))
      Fails(Status.Unsupported, () => gru.SetKerasBackend("jax"), "jax for a Keras 2 layer", "Keras 2");
  }

  // ---- streams -----------------------------------------------------------------------------------

  // inputs[i][b, t0:t0+n, ...] of the sequence inputs, the whole of the others.
  static float[][] Chunk(float[][] inputs, long[][] dims, bool[] sequence, int t0, int n) {
    var r = new float[inputs.Length][];
    for (int i = 0; i < inputs.Length; ++i) {
      if (!sequence[i]) { r[i] = inputs[i]; continue; }
      int b = (int)dims[i][0], t = (int)dims[i][1], rest = inputs[i].Length / (b * t);
      r[i] = new float[b * n * rest];
      for (int row = 0; row < b; ++row) Array.Copy(inputs[i], (row * t + t0) * rest, r[i], row * n * rest, n * rest);
    }
    return r;
  }

  static float[][] Streamed(Model m, Dictionary<string, object> call, int chunk) {
    var x = Tensors(call, "inputs");
    var ins = (List<object>)call["inputs"];
    int batch = BatchOf(call), T = 0;
    var dims = ins.Select(ShapeOf).ToArray();
    var seq = new bool[x.Length];
    for (int i = 0; i < x.Length; ++i) {
      seq[i] = m.Input(i).Sequence;
      if (seq[i]) T = (int)dims[i][1];
    }
    var full = m.OutputDims(batch, TimestepsOf(call));
    var r = full.Select(d => new float[d.Aggregate(1L, (a, v) => a * v)]).ToArray();
    using (var s = new ModelState(m, batch)) {
      Check(s.Batch == batch, "state batch");
      for (int t0 = 0; t0 < T; t0 += chunk) {
        int n = Math.Min(chunk, T - t0);
        var y = s.Step(Chunk(x, dims, seq, t0, n), n);
        var yd = s.OutputDims(n);
        for (int i = 0; i < y.Length; ++i) {
          if (yd[i].Length >= 3) {
            int rest = y[i].Length / (batch * n);
            for (int row = 0; row < batch; ++row)
              Array.Copy(y[i], row * n * rest, r[i], (row * (int)full[i][1] + t0) * rest, n * rest);
          } else {
            r[i] = y[i];
          }
        }
      }
    }
    return r;
  }

  static void GraphStreamsEqualRuns() {
    foreach (var name in new[] { "multi_io", "masking_sequential", "embedding_masked_full_row", "branches_concat" })
      foreach (var chunk in new[] { 1, 2, 7 }) {
        var call = Calls(GraphCase("keras3", name))[0];
        using (var m = Model.Open(GraphFile("keras3", name, "keras"))) {
          Check(m.Streamable == "" && m.CanStream, name + " streams: " + m.Streamable);
          var whole = m.Run(Tensors(call, "inputs"), BatchOf(call), TimestepsOf(call));
          var pieces = Streamed(m, call, chunk);
          var want = (List<object>)call["outputs"];
          for (int i = 0; i < whole.Length; ++i) {
            Near(whole[i], pieces[i], 1e-6, name + " chunk " + chunk + " output " + i);
            Near(Data(want[i]), pieces[i], GraphTolerance, name + ": Keras");
          }
        }
      }
  }

  static void GraphModelStateApi() {
    var m = Model.Open(GraphFile("keras3", "multi_io", "keras"));
    var s = new ModelState(m, 3);
    Check(s.InputsLength(2) == 3 * 2 * 4 + 3 * 5 && s.OutputsLength(2) == 3 * 3 + 3 * 2, "lengths");
    var d = s.OutputDims(2);
    Check(d.Length == 2 && d[0].SequenceEqual(new long[] { 3, 3 }) && d[1].SequenceEqual(new long[] { 3, 2 }), "step dims");
    Check(s.OutputDims(1, 5).SequenceEqual(new long[] { 3, 2 }), "step dims of output 1");
    Fails(Status.InvalidArgument, () => s.OutputDims(2, 1), "step dims of output 2", "index 2 is out of range");
    Fails(Status.InvalidArgument, () => s.OutputDims(-1, 1), "step dims of output -1", "index -1");
    Fails(Status.InvalidArgument, () => s.OutputDims(0, 0), "step dims of 0 timesteps", "timesteps");
    var input = new float[s.InputsLength(1)];
    Array.Copy(Pattern(12, 1.0, 0.1), input, 12);
    var output = new float[s.OutputsLength(1)];
    s.Step(input, 1, null, output);
    var first = (float[])output.Clone();
    s.Step(input, 1, null, output);
    Check(!Same(first, output), "the stream carries its state");
    s.Reset();
    s.Step(input, 1, null, output);
    Check(Same(first, output), "Reset starts a new stream");
    s.Reset();
    var split = s.Step(new[] { input.Take(12).ToArray(), input.Skip(12).ToArray() }, 1, new[] { new byte[] { 1, 1, 1 }, null });
    Check(Same(split[0], first.Take(9).ToArray()) && Same(split[1], first.Skip(9).ToArray()), "split outputs");
    Fails(Status.Shape, () => s.Step(new float[input.Length - 1], 1, null, output), "short inputs", "inputs");
    Fails(Status.Shape, () => s.Step(input, 1, new byte[2], output), "short masks", "masks");
    Fails(Status.Shape, () => s.Step(input, 1, null, new float[output.Length + 1]), "long outputs");
    Fails(Status.InvalidArgument, () => s.Step(input, 0, null, output), "0 timesteps", "timesteps");
    Fails(Status.InvalidArgument, () => s.InputsLength(0), "lengths of 0 timesteps", "timesteps");
    Fails(Status.InvalidArgument, () => s.Step(new[] { input }, 1), "one input of two", "one per model input");
    Fails(Status.InvalidArgument, () => new ModelState(m, 0), "batch 0", "batch");
    Throws<ArgumentNullException>(() => new ModelState(null, 1), "null model");
    Throws<ArgumentNullException>(() => s.Step(null, 1, null, output), "null inputs");
    m.Dispose();
    s.Reset();
    s.Step(input, 1, null, output);
    Check(Same(first, output), "a state outlives its model");
    Throws<ObjectDisposedException>(() => new ModelState(m, 1), "state of a disposed model");
    s.Dispose();
    s.Dispose();
    Check(s.IsDisposed, "disposed");
    Throws<ObjectDisposedException>(() => s.Reset(), "Reset after Dispose");
    Throws<ObjectDisposedException>(() => s.Step(input, 1, null, output), "Step after Dispose");
    Throws<ObjectDisposedException>(() => s.InputsLength(1), "InputsLength after Dispose");
    Throws<ObjectDisposedException>(() => { var b = s.Batch; }, "Batch after Dispose");
    Throws<ObjectDisposedException>(() => s.OutputDims(0, 1), "OutputDims after Dispose");
  }

  static void GraphModelsThatDoNotStream() {
    using (var m = Model.Open(CliModel("keras3", "bigru.keras"))) {
      Check(m.Streamable.Contains("'bi'") && m.Streamable.Contains("Bidirectional") && !m.CanStream, m.Streamable);
      Fails(Status.Unsupported, () => new ModelState(m, 1), "a state of bigru", "layer 'bi' (Bidirectional)");
    }
    using (var m = Model.Open(GraphFile("keras3", "seq2seq_initial_state", "keras"))) {
      Check(m.Streamable.Contains("initial_state"), m.Streamable);
      Fails(Status.Unsupported, () => new ModelState(m, 3), "a state of seq2seq", "'lstm_1'");
    }
    using (var m = Model.Open(GraphFile("keras3", "stateful_sequential_gru", "keras"))) {
      Fails(Status.InvalidArgument, () => new ModelState(m, 2), "another batch than the stateful one", "fixed batch of 3");
      using (var s = new ModelState(m, 3)) {
        Check(s.OutputsLength(2) == 12, "3 x 2 x 2 outputs");
        Check(s.OutputDims(0, 2).SequenceEqual(new long[] { 3, 2, 2 }) && s.OutputDims(0, 5).SequenceEqual(new long[] { 3, 5, 2 }),
              "a sequence output's step dims hold its timesteps");
      }
    }
  }

  static void GraphDisposedModel() {
    var m = Model.Open(GraphFile("keras3", "multi_io", "keras"));
    m.Dispose();
    var calls = new Action[] {
      () => { var n = m.NumInputs; }, () => { var n = m.NumOutputs; }, () => m.Input(0), () => m.Output(0),
      () => { var i = m.Inputs; }, () => { var s = m.IsStateful; }, () => m.ResetStates(), () => m.StatesLength("gru"),
      () => m.SetKerasBackend("jax"), () => { var s = m.Streamable; }, () => m.OutputDims(0, 1, null),
      () => m.IsSequence(0), () => { var n = m.NumStatefulLayers; }, () => m.GetStatefulLayer(0),
      () => { var l = m.StatefulLayers; },
      () => m.Run(new[] { new float[28], new float[5] }, 1, null), () => m.RunInputs(new float[33], 1, null, null, new float[5])};
    for (int i = 0; i < calls.Length; ++i) Throws<ObjectDisposedException>(calls[i], "call " + i + " after Dispose");
  }

  // ModelState.Save/Load: a stream saved mid-sequence goes on in a new state with the same bits;
  // bad bytes, another batch and another model's bytes are refused with the state unchanged.
  static void GraphModelStateSnapshot() {
    var m = Model.Open(GraphFile("keras3", "nested_sequential", "keras"));
    Func<ModelState, int, float[]> step = (st, t) => {
      var x = new float[st.InputsLength(1)];
      for (int i = 0; i < x.Length; ++i) x[i] = ((i * 13 + t * 5) % 17) * 0.1f - 0.8f;
      var y = new float[st.OutputsLength(1)];
      st.Step(x, 1, null, y);
      return y;
    };
    var whole = new ModelState(m, 3);
    var first = new ModelState(m, 3);
    var want = new float[6][];
    for (int t = 0; t < 6; ++t) want[t] = step(whole, t);
    for (int t = 0; t < 3; ++t) step(first, t);
    var bytes = first.Save();
    var resumed = new ModelState(m, 3);
    resumed.Load(bytes);
    Check(resumed.Save().SequenceEqual(bytes), "a loaded state saves the same bytes");
    for (int t = 3; t < 6; ++t) {
      var got = step(resumed, t);
      for (int k = 0; k < got.Length; ++k)
        Check(BitConverter.GetBytes(got[k]).SequenceEqual(BitConverter.GetBytes(want[t][k])), "step " + t + " value " + k);
    }
    Fails(Status.InvalidArgument, () => first.Load(new byte[3]), "short bytes", "too short");
    Fails(Status.InvalidArgument, () => first.Load(bytes.Take(bytes.Length - 1).ToArray()), "cut bytes", "checksum");
    Fails(Status.InvalidArgument, () => new ModelState(m, 2).Load(bytes), "another batch", "batch 3");
    var other = Model.Open(GraphFile("keras3", "masking_sequential", "keras"));
    Fails(Status.State, () => new ModelState(other, 3).Load(bytes), "another model", "saved by another model");
    Throws<ArgumentNullException>(() => first.Load(null), "null bytes");
    first.Dispose();
    Throws<ObjectDisposedException>(() => first.Save(), "Save after Dispose");
  }

  static void RunGraphTests() {
    Run("GraphModelStateSnapshot", GraphModelStateSnapshot);
    Run("GraphOpenFromMemory", GraphOpenFromMemory);
    Run("GraphOpenFromBytesThatAreNotAModel", GraphOpenFromBytesThatAreNotAModel);
    Run("GraphDescriptors", GraphDescriptors);
    Run("GraphRunErrors", GraphRunErrors);
    Run("GraphMasks", GraphMasks);
    Run("GraphStatefulModel", GraphStatefulModel);
    Run("GraphKerasBackend", GraphKerasBackend);
    Run("GraphStreamsEqualRuns", GraphStreamsEqualRuns);
    Run("GraphModelStateApi", GraphModelStateApi);
    Run("GraphModelsThatDoNotStream", GraphModelsThatDoNotStream);
    Run("GraphDisposedModel", GraphDisposedModel);
    foreach (var dialect in new[] { "keras2", "keras3", "keras3_jax" })
      foreach (var name in ParityCases)
        foreach (var ext in new[] { "keras", "h5" }) {
          string d = dialect, n = name, e = ext;
          Run("GraphParity " + d + "/" + n + "." + e, () => GraphParity(d, n, e));
        }
  }
}

}
