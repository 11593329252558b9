// SPDX-License-Identifier: Apache-2.0
// Public API of models as graphs (recur 0.4): several inputs and outputs, models opened from
// memory, stateful models, Keras backends, and ModelState, one stream through a whole model.
using System;
using System.IO;

namespace Recur {

/// <summary>One input or output of a model (recur_model_input / recur_model_output).</summary>
public sealed class ModelTensor {
  long[] dims;

  /// <summary>Position among the model's inputs (or outputs), in Keras's model.inputs /
  /// model.outputs order.</summary>
  public int Index { get; internal set; }
  /// <summary>The InputLayer's name for an input; Keras's model.output_names entry for an output.</summary>
  public string Name { get; internal set; }
  /// <summary>A copy of the dims, batch axis first, with -1 for an axis given at run time (the batch,
  /// unless a stateful model fixes it, and the timesteps axis of a sequence input whose length the
  /// model leaves open).</summary>
  public long[] Dims { get { return (long[])dims.Clone(); } internal set { dims = value; } }
  /// <summary>Number of axes, the batch axis included.</summary>
  public int Rank { get { return dims.Length; } }
  /// <summary>An input of integer ids (Keras dtype int*, or one that feeds an Embedding), passed as
  /// floats. Always false for outputs.</summary>
  public bool TokenIds { get; internal set; }
  /// <summary>An input with a timesteps axis (axis 1), as the C ABI says
  /// (recur_model_input_sequence): its length comes from the run's timesteps, masks address it and
  /// <see cref="ModelState"/> feeds it a few steps at a time; other inputs are given whole. Always
  /// false for outputs.</summary>
  public bool Sequence { get; internal set; }
  /// <summary>An input of texts (Keras dtype "string", read by StringLookup or TextVectorization):
  /// pass a <see cref="NamedTensor"/> of string[] (since 0.7). Always false for outputs.</summary>
  public bool Strings { get; internal set; }

  public override string ToString() {
    return Name + " (" + string.Join(", ", dims) + (dims.Length == 1 ? ",)" : ")") +
           (TokenIds ? " token ids" : Strings ? " strings" : "");
  }
}

/// <summary>One stateful layer of a model (recur_model_stateful_layer): the name
/// <see cref="Model.GetStates(string)"/> takes ("name/forward" or "name/backward" for a
/// Bidirectional half) and the shape of its states, NumStates x (Batch, Units).</summary>
public sealed class StatefulLayer {
  /// <summary>Position among the model's stateful layers (config order).</summary>
  public int Index { get; internal set; }
  public string Name { get; internal set; }
  /// <summary>States per layer: 1 (GRU, SimpleRNN: h) or 2 (LSTM: h and c).</summary>
  public int NumStates { get; internal set; }
  /// <summary>The batch_size the layer fixes.</summary>
  public int Batch { get; internal set; }
  public int Units { get; internal set; }
  /// <summary>Floats of its states: NumStates * Batch * Units (what Model.StatesLength says).</summary>
  public long StatesLength { get { return (long)NumStates * Batch * Units; } }

  public override string ToString() {
    return Name + " (" + NumStates + ", " + Batch + ", " + Units + ")";
  }
}

/// <summary>A Keras model: a graph with any number of inputs and outputs.</summary>
public sealed partial class Model {
  /// <summary>Opens a model from the bytes of a .keras or legacy .h5 file (copied during the call).
  /// <paramref name="name"/> stands for the file in messages (null: "&lt;memory&gt;"). Throws
  /// RecurException with Status.IO when the bytes are not a Keras file, Status.InvalidArgument when
  /// there are none.</summary>
  public static unsafe Model Open(byte[] bytes, string name = null) {
    Util.NotNull(bytes, "bytes");
    NativeLoader.Load();
    fixed (byte* p = bytes) return open_memory((IntPtr)p, (ulong)bytes.LongLength, name);
  }

  /// <summary>Reads a .keras or .h5 file image from <paramref name="stream"/> to its end (the stream
  /// is not closed) and opens it.</summary>
  public static Model Open(Stream stream, string name = null) {
    Util.NotNull(stream, "stream");
    using (var copy = new MemoryStream()) {
      stream.CopyTo(copy);
      return Open(copy.ToArray(), name);
    }
  }

  /// <summary>Number of model inputs (Keras's model.inputs).</summary>
  public int NumInputs { get { CheckDisposed(); int n; num_inputs(out n); return n; } }

  /// <summary>Number of model outputs (Keras's model.outputs).</summary>
  public int NumOutputs { get { CheckDisposed(); int n; num_outputs(out n); return n; } }

  /// <summary>Input <paramref name="index"/>: name, dims, whether it takes token ids and whether it is
  /// a sequence. Status.InvalidArgument for an index out of range.</summary>
  public unsafe ModelTensor Input(int index) {
    CheckDisposed();
    var dims = new long[recur.MAX_RANK];
    IntPtr name;
    int rank, ids;
    fixed (long* d = dims) input(index, out name, out rank, out ids, (IntPtr)d, dims.Length);
    return new ModelTensor { Index = index, Name = Util.Str(name), Dims = GraphUtil.Head(dims, rank), TokenIds = ids != 0,
                             Sequence = IsSequence(index), Strings = TakesStrings(index) };
  }

  /// <summary>True when input <paramref name="index"/> holds texts (Keras dtype "string"): pass it
  /// as a <see cref="NamedTensor"/> of string[] (since 0.7). Status.InvalidArgument for an index
  /// out of range.</summary>
  public bool TakesStrings(int index) {
    CheckDisposed();
    int d;
    input_dtype(index, out d);
    return d == (int)ElementType.String;
  }

  /// <summary>True when input <paramref name="index"/> has a timesteps axis (axis 1): its length
  /// comes from the run's timesteps, masks address it, and ModelState.Step feeds it a few steps at a
  /// time (the others are given whole on every step). Status.InvalidArgument for an index out of
  /// range.</summary>
  public bool IsSequence(int index) {
    CheckDisposed();
    int s;
    input_sequence(index, out s);
    return s != 0;
  }

  /// <summary>Output <paramref name="index"/>: name (Keras's model.output_names) and dims.</summary>
  public unsafe ModelTensor Output(int index) {
    CheckDisposed();
    var dims = new long[recur.MAX_RANK];
    IntPtr name;
    int rank;
    fixed (long* d = dims) output(index, out name, out rank, (IntPtr)d, dims.Length);
    return new ModelTensor { Index = index, Name = Util.Str(name), Dims = GraphUtil.Head(dims, rank) };
  }

  /// <summary>Every input, in Keras's model.inputs order.</summary>
  public ModelTensor[] Inputs {
    get { return Interop.Each(NumInputs, Input); }
  }

  /// <summary>Every output, in Keras's model.outputs order.</summary>
  public ModelTensor[] Outputs {
    get { return Interop.Each(NumOutputs, Output); }
  }

  // null timesteps: every input's length is fixed by the model.
  int[] Steps(int[] timesteps) { return timesteps ?? new int[NumInputs]; }

  /// <summary>The dims of output <paramref name="index"/> for <paramref name="batch"/> rows and
  /// timesteps[i] steps of input i (null when every input's length is fixed). Status.Shape when the
  /// timesteps do not fit the graph.</summary>
  public unsafe long[] OutputDims(int index, int batch, int[] timesteps) {
    CheckDisposed();
    var ts = Steps(timesteps);
    var dims = new long[recur.MAX_RANK];
    int rank;
    fixed (int* t = ts) fixed (long* d = dims) output_dims(index, batch, (IntPtr)t, ts.Length, out rank, (IntPtr)d, dims.Length);
    return GraphUtil.Head(dims, rank);
  }

  /// <summary>The dims of every output for those shapes.</summary>
  public long[][] OutputDims(int batch, int[] timesteps) {
    return Interop.Each(NumOutputs, i => OutputDims(i, batch, timesteps));
  }

  /// <summary>Floats <see cref="RunInputs"/> reads: every input for those shapes, concatenated.</summary>
  public unsafe long InputsLength(int batch, int[] timesteps) {
    CheckDisposed();
    var ts = Steps(timesteps);
    ulong n;
    fixed (int* t = ts) inputs_length(batch, (IntPtr)t, ts.Length, out n);
    return (long)n;
  }

  /// <summary>Floats <see cref="RunInputs"/> writes: every output for those shapes, concatenated.</summary>
  public unsafe long OutputsLength(int batch, int[] timesteps) {
    CheckDisposed();
    var ts = Steps(timesteps);
    ulong n;
    fixed (int* t = ts) outputs_length(batch, (IntPtr)t, ts.Length, out n);
    return (long)n;
  }

  /// <summary>Runs the graph (Keras's model.predict on one batch): one row-major array per model
  /// input (token ids as floats), timesteps[i] the steps of input i (ignored for inputs of a fixed
  /// length; null when every length is fixed), masks null or one entry per input, the (B, T_i) mask
  /// of a sequence input (nonzero = valid) or null (give masks for every sequence input or none).
  /// Returns one array per model output, shaped as <see cref="OutputDims(int, int[])"/>.
  /// Status.Unsupported names a layer recur cannot run; Status.Shape a length that does not fit.</summary>
  public float[][] Run(float[][] inputs, int batch, int[] timesteps, byte[][] masks = null) {
    CheckDisposed();
    int n = NumInputs;
    var x = GraphUtil.Concat(inputs, n, "inputs");
    var m = GraphUtil.ConcatMasks(masks, n);
    var ts = Steps(timesteps);
    var y = new float[OutputsLength(batch, ts)];
    RunInputs(x, batch, ts, m, y);
    return GraphUtil.Split(y, OutputDims(batch, ts));
  }

  /// <summary>The C ABI's form of Run: every input concatenated, masks null or concatenated, every
  /// output concatenated into <paramref name="outputs"/> (no allocation).</summary>
  public unsafe void RunInputs(float[] inputs, int batch, int[] timesteps, byte[] masks, float[] outputs) {
    CheckDisposed();
    Util.NotNull(inputs, "inputs");
    Util.NotNull(outputs, "outputs");
    var ts = Steps(timesteps);
    fixed (int* t = ts) fixed (float* i = inputs) fixed (byte* m = masks) fixed (float* o = outputs) {
      run_inputs(batch, (IntPtr)t, ts.Length, (IntPtr)i, (ulong)inputs.LongLength, (IntPtr)m, Util.Len(masks),
                 (IntPtr)o, (ulong)outputs.LongLength);
    }
  }

  /// <summary>True when some layer is stateful: runs then carry its states from call to call, as in
  /// Keras (one run at a time).</summary>
  public bool IsStateful { get { CheckDisposed(); int s; is_stateful(out s); return s != 0; } }

  /// <summary>Zeroes the states of every stateful layer (Keras's model.reset_states()).</summary>
  public void ResetStates() { CheckDisposed(); reset_states(); }

  /// <summary>Number of stateful layers (Bidirectional halves count one each).</summary>
  public int NumStatefulLayers { get { CheckDisposed(); int n; num_stateful_layers(out n); return n; } }

  /// <summary>Stateful layer <paramref name="index"/>, in config order: the name GetStates takes and
  /// its states' shape. Status.InvalidArgument for an index out of range.</summary>
  public StatefulLayer GetStatefulLayer(int index) {
    CheckDisposed();
    IntPtr name;
    int ns, batch, units;
    stateful_layer(index, out name, out ns, out batch, out units);
    return new StatefulLayer { Index = index, Name = Util.Str(name), NumStates = ns, Batch = batch, Units = units };
  }

  /// <summary>Every stateful layer, in config order (empty for a model that is not stateful).</summary>
  public StatefulLayer[] StatefulLayers {
    get { return Interop.Each(NumStatefulLayers, GetStatefulLayer); }
  }

  /// <summary>Floats of the states of stateful layer <paramref name="layer"/> ("name/forward" or
  /// "name/backward" for a Bidirectional half). Status.InvalidArgument when there is no such layer
  /// or it is not stateful.</summary>
  public long StatesLength(string layer) {
    CheckDisposed();
    Util.NotNull(layer, "layer");
    ulong n;
    states_length(layer, out n);
    return (long)n;
  }

  /// <summary>Copies the states of stateful layer <paramref name="layer"/> (num_states x
  /// (batch_size, units), h then c) into <paramref name="output"/>.</summary>
  public unsafe void GetStates(string layer, float[] output) {
    CheckDisposed();
    Util.NotNull(layer, "layer");
    Util.NotNull(output, "output");
    fixed (float* p = output) get_states(layer, (IntPtr)p, (ulong)output.LongLength);
  }

  /// <summary>The states of stateful layer <paramref name="layer"/>.</summary>
  public float[] GetStates(string layer) {
    return Interop.Filled(StatesLength(layer), output => GetStates(layer, output));
  }

  /// <summary>Sets all the states of stateful layer <paramref name="layer"/> (StatesLength(layer)
  /// floats; Status.Shape otherwise). Not thread-safe with runs of the model.</summary>
  public unsafe void SetStates(string layer, float[] states) {
    CheckDisposed();
    Util.NotNull(layer, "layer");
    Util.NotNull(states, "states");
    fixed (float* p = states) set_states(layer, (IntPtr)p, (ulong)states.LongLength);
  }

  /// <summary>Keras 3 backend semantics for every layer: "tensorflow" (the default, also torch's) or
  /// "jax" (also numpy's); they differ at masked steps before the first valid one.
  /// Status.InvalidArgument for another name, Status.Unsupported for "jax" on a Keras 2 model.</summary>
  public void SetKerasBackend(string backend) {
    CheckDisposed();
    Util.NotNull(backend, "backend");
    set_keras_backend(backend);
  }

  /// <summary>"" when the model streams (<see cref="ModelState"/>), else why not, naming the layer.</summary>
  public string Streamable {
    get {
      CheckDisposed();
      IntPtr why;
      streamable(out why);
      return Util.Str(why) ?? "";
    }
  }

  /// <summary>True when <see cref="Streamable"/> is "".</summary>
  public bool CanStream { get { return Streamable.Length == 0; } }
}

/// <summary>One stream (a batch of rows) through a whole model, stepped some timesteps at a time:
/// feeding a sequence in pieces gives the outputs of one Model.Run over all of it. Any
/// number of states may step one model from any number of threads (each state by one thread at a
/// time). A state stays valid after its model is disposed. Dispose it.</summary>
public sealed partial class ModelState {
  int batch, numInputs, numOutputs;  // copied at creation (the state outlives its model)

  /// <summary>A zero state of <paramref name="batch"/> rows for <paramref name="model"/>. Status.Unsupported
  /// when the model does not stream (the message names the layer); Status.InvalidArgument for batch
  /// &lt;= 0 or not the batch_size of the model's stateful layers.</summary>
  public ModelState(Model model, int batch) : this(CreateHandle(model, batch), true) {
    this.batch = batch;
    numInputs = model.NumInputs;
    numOutputs = model.NumOutputs;
    outputNames = model.OutputNames;
  }

  static IntPtr CreateHandle(Model model, int batch) {
    Util.NotNull(model, "model");
    model.CheckDisposed();
    ModelState made = create(model, batch);
    return Interop.TakeOver(made, ref made.swigCPtr, ref made.swigCMemOwn);
  }

  internal void CheckDisposed() {
    if (Util.Disposed(swigCPtr)) throw new ObjectDisposedException("Recur.ModelState");
  }

  public bool IsDisposed { get { return Util.Disposed(swigCPtr); } }

  /// <summary>Rows of the stream.</summary>
  public int Batch { get { CheckDisposed(); return batch; } }

  /// <summary>Floats a step of <paramref name="timesteps"/> steps reads (every input, concatenated).</summary>
  public long InputsLength(int timesteps) {
    CheckDisposed();
    ulong i, o;
    lengths(timesteps, out i, out o);
    return (long)i;
  }

  /// <summary>Floats a step of <paramref name="timesteps"/> steps writes (every output, concatenated).</summary>
  public long OutputsLength(int timesteps) {
    CheckDisposed();
    ulong i, o;
    lengths(timesteps, out i, out o);
    return (long)o;
  }

  /// <summary>The dims of output <paramref name="index"/> of a step of <paramref name="timesteps"/>
  /// steps (recur_model_state_output_dims): sequence outputs hold those steps, the others are what
  /// the model outputs after them. Status.InvalidArgument for an index out of range or timesteps
  /// &lt; 1.</summary>
  public unsafe long[] OutputDims(int index, int timesteps) {
    CheckDisposed();
    var dims = new long[recur.MAX_RANK];
    int rank;
    fixed (long* d = dims) output_dims(index, timesteps, out rank, (IntPtr)d, dims.Length);
    return GraphUtil.Head(dims, rank);
  }

  /// <summary>The dims of every output of a step of <paramref name="timesteps"/> steps.</summary>
  public long[][] OutputDims(int timesteps) {
    CheckDisposed();
    return Interop.Each(numOutputs, i => OutputDims(i, timesteps));
  }

  /// <summary>Feeds the next <paramref name="timesteps"/> (&gt;= 1) steps of every sequence input
  /// (inputs without a timesteps axis are given whole on every call) and returns what the model
  /// outputs for them, one array per output (see OutputDims). masks: null, or one entry per
  /// input, a (batch, timesteps) mask for a sequence input or null.</summary>
  public float[][] Step(float[][] inputs, int timesteps, byte[][] masks = null) {
    CheckDisposed();
    var x = GraphUtil.Concat(inputs, numInputs, "inputs");
    var m = GraphUtil.ConcatMasks(masks, numInputs);
    var dims = OutputDims(timesteps);
    var y = new float[OutputsLength(timesteps)];
    Step(x, timesteps, m, y);
    return GraphUtil.Split(y, dims);
  }

  /// <summary>The C ABI's form of Step: every input concatenated, masks null or concatenated, every
  /// output concatenated into <paramref name="outputs"/> (pinned, no allocation).</summary>
  public unsafe void Step(float[] inputs, int timesteps, byte[] masks, float[] outputs) {
    CheckDisposed();
    Util.NotNull(inputs, "inputs");
    Util.NotNull(outputs, "outputs");
    fixed (float* i = inputs) fixed (byte* m = masks) fixed (float* o = outputs) {
      step(timesteps, (IntPtr)i, (ulong)inputs.LongLength, (IntPtr)m, Util.Len(masks), (IntPtr)o,
           (ulong)outputs.LongLength);
    }
  }

  /// <summary>Zeroes the state: the next step starts a new stream.</summary>
  public void Reset() { CheckDisposed(); reset(); }

  /// <summary>Everything the stream carries to its next step (recurrent states, causal layers'
  /// past inputs) as versioned little-endian bytes (recur_model_state_save): Load of them into a
  /// new state of the same model and batch goes on with bit-identical outputs (since 0.9).</summary>
  public unsafe byte[] Save() {
    CheckDisposed();
    ulong n;
    save_size(out n);
    var bytes = new byte[n];
    fixed (byte* p = bytes) save((IntPtr)p, (ulong)bytes.LongLength, out n);
    return bytes;
  }

  /// <summary>Loads bytes from Save (all or nothing: on an error the state is unchanged).
  /// Status.InvalidArgument for bytes that are not a snapshot (truncated, corrupt, another format
  /// version) or were saved at another batch; Status.State for another model's or model
  /// version's (since 0.9).</summary>
  public unsafe void Load(byte[] bytes) {
    CheckDisposed();
    Util.NotNull(bytes, "bytes");
    fixed (byte* p = bytes) load((IntPtr)p, (ulong)bytes.LongLength);
  }
}

public sealed partial class Layer {
  /// <summary>Keras 3 backend semantics: "tensorflow" (the default, also torch's) or "jax" (also
  /// numpy's). They differ at masked steps before the first valid one (JAX outputs the initial
  /// state, TensorFlow zeros) and in that JAX's unroll=True ignores zero_output_for_mask.
  /// Status.InvalidArgument for another name, Status.Unsupported for "jax" on a Keras 2 layer.</summary>
  public void SetKerasBackend(string backend) {
    CheckDisposed();
    Util.NotNull(backend, "backend");
    set_keras_backend(backend);
  }
}

internal static class GraphUtil {
  internal static long[] Head(long[] a, int n) {
    var r = new long[Math.Max(0, Math.Min(n, a.Length))];
    Array.Copy(a, r, r.Length);
    return r;
  }

  internal static long Product(long[] dims) {
    long n = 1;
    foreach (var d in dims) n *= d;
    return n;
  }

  // The per-input arrays of a model call, concatenated in input order.
  internal static float[] Concat(float[][] parts, int count, string what) {
    Util.NotNull(parts, what);
    if (parts.Length != count)
      throw new RecurException(Status.InvalidArgument,
                               what + ": expected " + count + " arrays (one per model input), got " + parts.Length);
    long n = 0;
    for (int i = 0; i < parts.Length; ++i) {
      if (parts[i] == null) throw new ArgumentNullException(what + "[" + i + "]");
      n += parts[i].LongLength;
    }
    var r = new float[n];
    long o = 0;
    foreach (var p in parts) {
      Array.Copy(p, 0, r, o, p.LongLength);
      o += p.LongLength;
    }
    return r;
  }

  // null, or one entry per input (null where none); the others concatenated (null if none).
  internal static byte[] ConcatMasks(byte[][] masks, int count) {
    if (masks == null) return null;
    if (masks.Length != count)
      throw new RecurException(Status.InvalidArgument, "masks: expected " + count +
                               " entries (one per model input, null where none), got " + masks.Length);
    long n = 0;
    bool any = false;
    foreach (var m in masks)
      if (m != null) {
        n += m.LongLength;
        any = true;
      }
    if (!any) return null;
    var r = new byte[n];
    long o = 0;
    foreach (var m in masks)
      if (m != null) {
        Array.Copy(m, 0, r, o, m.LongLength);
        o += m.LongLength;
      }
    return r;
  }

  // The concatenated outputs of a model call, one array per output.
  internal static float[][] Split(float[] flat, long[][] dims) {
    var r = new float[dims.Length][];
    long o = 0;
    for (int i = 0; i < dims.Length; ++i) {
      long n = Product(dims[i]);
      if (o + n > flat.LongLength) throw new InvalidOperationException("recur: the outputs' dims exceed their length");
      r[i] = new float[n];
      Array.Copy(flat, o, r[i], 0, n);
      o += n;
    }
    if (o != flat.LongLength) throw new InvalidOperationException("recur: the outputs' dims do not cover their length");
    return r;
  }
}

}
