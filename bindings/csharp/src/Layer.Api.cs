// SPDX-License-Identifier: Apache-2.0
// Public API of Layer (a Keras sequence layer or cell). Arrays are pinned with `fixed` for the
// duration of one native call (never copied); their Length is passed as the C length.
using System;

namespace Recur {

/// <summary>What a layer is, after defaults were resolved (recur_layer_info).</summary>
public sealed class LayerInfo {
  public int Type { get; internal set; }
  public int Dialect { get; internal set; }
  public int Units { get; internal set; }
  public int InputSize { get; internal set; }
  /// <summary>1 (h) or 2 (h, c).</summary>
  public int NumStates { get; internal set; }
  public int NumWeights { get; internal set; }
  public bool ReturnSequences { get; internal set; }
  public bool ReturnState { get; internal set; }
  public bool GoBackwards { get; internal set; }
  public bool Stateful { get; internal set; }
  public bool TimeMajor { get; internal set; }
  public int BatchSize { get; internal set; }
  public int Implementation { get; internal set; }
  public bool ResetAfter { get; internal set; }
  public bool IsCell {
    get { return Type == LayerType.GruCell || Type == LayerType.LstmCell || Type == LayerType.SimpleRnnCell; }
  }
}

/// <summary>A Keras GRU / LSTM / CuDNNGRU / CuDNNLSTM / SimpleRNN layer or GRUCell / LSTMCell /
/// SimpleRNNCell. Dispose it (or
/// use `using`); a finalizer frees it otherwise. Any call after Dispose throws
/// ObjectDisposedException. Failures throw <see cref="RecurException"/>.
/// Threads: <see cref="ForwardState"/> may run concurrently on one layer with different states;
/// calls that change the layer (weights, stateful or training calls, Dispose) must not.</summary>
public sealed partial class Layer {
  internal void CheckDisposed() {
    if (Util.Disposed(swigCPtr)) throw new ObjectDisposedException("Recur.Layer");
  }

  /// <summary>True once Dispose has run.</summary>
  public bool IsDisposed { get { return Util.Disposed(swigCPtr); } }

  /// <summary>Creates a layer or cell from options; weights come from its initializers.</summary>
  public static Layer Create(LayerOptions options) {
    Util.NotNull(options, "options");
    options.CheckDisposed();
    return create(options);
  }

  /// <summary>Creates a layer or cell from the JSON Keras writes for it ({"class_name": "GRU",
  /// "config": {...}}). inputSize &lt;= 0 takes it from the JSON; dialect is a
  /// <see cref="Recur.Dialect"/> constant; kerasVersion may be null.</summary>
  public static Layer FromJson(string json, int inputSize = 0, int dialect = Recur.Dialect.Auto,
                               string kerasVersion = null) {
    Util.NotNull(json, "json");
    NativeLoader.Load();
    return create_from_json(json, inputSize, dialect, kerasVersion);
  }

  /// <summary>The layer's resolved configuration.</summary>
  public LayerInfo Info {
    get {
      CheckDisposed();
      using (var n = new NativeLayerInfo()) {
        get_info(n);
        return new LayerInfo {
          Type = n.type, Dialect = n.dialect, Units = n.units, InputSize = n.input_size, NumStates = n.num_states,
          NumWeights = n.num_weights, ReturnSequences = n.return_sequences != 0, ReturnState = n.return_state != 0,
          GoBackwards = n.go_backwards != 0, Stateful = n.stateful != 0, TimeMajor = n.time_major != 0,
          BatchSize = n.batch_size, Implementation = n.implementation, ResetAfter = n.reset_after != 0
        };
      }
    }
  }

  /// <summary>Floats Forward writes: B*T*units with return_sequences, else B*units.</summary>
  public long OutputLength(int batch, int timesteps) {
    CheckDisposed();
    ulong n;
    output_length(batch, timesteps, out n);
    return (long)n;
  }

  /// <summary>Runs the layer over a batch of sequences, as Keras's layer call.
  /// input (B, T, F) ((T, B, F) for time_major); mask null or (B, T) bytes, nonzero = valid;
  /// initialState null or numInitialStates tensors (B, units) concatenated; output of
  /// <see cref="OutputLength"/> floats; finalState null or num_states x (B, units).</summary>
  public unsafe void Forward(float[] input, int batch, int timesteps, byte[] mask, float[] initialState,
                             int numInitialStates, bool training, float[] output, float[] finalState) {
    CheckDisposed();
    Util.NotNull(input, "input");
    Util.NotNull(output, "output");
    fixed (float* i = input) fixed (byte* m = mask) fixed (float* s = initialState) fixed (float* o = output)
    fixed (float* f = finalState) {
      forward((IntPtr)i, Util.Len(input), batch, timesteps, (IntPtr)m, Util.Len(mask), (IntPtr)s,
              Util.Len(initialState), initialState == null ? 0 : numInitialStates, training ? 1 : 0, (IntPtr)o,
              Util.Len(output), (IntPtr)f, Util.Len(finalState));
    }
  }

  /// <summary>Inference call that allocates and returns the output.</summary>
  public float[] Forward(float[] input, int batch, int timesteps, byte[] mask = null) {
    return Interop.Filled(OutputLength(batch, timesteps),
                          output => Forward(input, batch, timesteps, mask, null, 0, false, output, null));
  }

  /// <summary>Advances <paramref name="state"/> through <paramref name="timesteps"/> steps (inference).
  /// input (B, T, F) with B = the state's batch; output of OutputLength(B, T) floats. No copy and no
  /// allocation: the streaming fast path. Safe concurrently on one layer with different states.</summary>
  public unsafe void ForwardState(State state, float[] input, int timesteps, float[] output, byte[] mask = null) {
    CheckDisposed();
    Util.Live(state);
    Util.NotNull(input, "input");
    Util.NotNull(output, "output");
    fixed (float* i = input) fixed (byte* m = mask) fixed (float* o = output) {
      forward_state(state, (IntPtr)i, (ulong)input.LongLength, timesteps, (IntPtr)m, Util.Len(mask), (IntPtr)o,
                    (ulong)output.LongLength);
    }
  }

  /// <summary>One step (T=1) for many independent streams as one batch, on the layer's device:
  /// input holds the rows of every state in order (sum of their batches x input_size), output
  /// (rows, units), mask null or one byte per row. Equals <see cref="ForwardState"/> on each state
  /// with one timestep; a state may appear once.</summary>
  public unsafe void ForwardStates(State[] states, float[] input, float[] output, byte[] mask = null) {
    CheckDisposed();
    Util.NotNull(states, "states");
    Util.NotNull(input, "input");
    Util.NotNull(output, "output");
    var handles = new long[states.Length];
    for (int k = 0; k < states.Length; ++k) {
      if (states[k] == null) throw new ArgumentNullException("states[" + k + "]");
      states[k].CheckDisposed();
      handles[k] = State.getCPtr(states[k]).Handle.ToInt64();
    }
    fixed (long* h = handles) fixed (float* i = input) fixed (byte* m = mask) fixed (float* o = output) {
      forward_states((IntPtr)h, handles.Length, (IntPtr)i, (ulong)input.LongLength, (IntPtr)m, Util.Len(mask),
                     (IntPtr)o, (ulong)output.LongLength);
    }
    GC.KeepAlive(states);  // the native call saw only their handles
  }

  /// <summary>Moves the layer (its weights, and a stateful layer's states) to <paramref name="device"/>:
  /// "cpu", "cuda", "cuda:N" or "auto" (a GPU when one can run, else the CPU; <see cref="Device"/>
  /// says why). Throws RecurException with Status.Unsupported for a GPU that cannot run (the
  /// layer stays where it was).</summary>
  public void SetDevice(string device) {
    CheckDisposed();
    Util.NotNull(device, "device");
    set_device(device);
  }

  /// <summary>Where the layer runs, by which route, and why.</summary>
  public DeviceInfo Device { get { CheckDisposed(); return Interop.Device(get_device); } }

  /// <summary>Threads one call on this layer may use on the CPU (Forward, ForwardState,
  /// ForwardStates, CellCall): 1, the default, runs on the calling thread only; 0 means one per
  /// core. Results are bitwise the same for every count; small calls stay on the calling thread
  /// whatever the count, and calls on a GPU ignore it. Setting a negative value or one above 1024
  /// throws RecurException with Status.InvalidArgument; reading gives the count as set (0 stays 0).</summary>
  public int NumThreads {
    get {
      CheckDisposed();
      int n;
      get_num_threads(out n);
      return n;
    }
    set {
      CheckDisposed();
      set_num_threads(value);
    }
  }

  /// <summary>The precision of the kernel and recurrent kernel in this layer's matrix products on the
  /// CPU: "float32" (the default, Keras's numbers), "bf16" or "int8" (faster; outputs then differ
  /// from Keras's, see docs/precision.md). The float32 weights are kept: GetWeights is unchanged and
  /// "float32" again gives exactly the float32 numbers. An unknown name throws RecurException with
  /// Status.InvalidArgument (the message lists the valid ones); a layer on a GPU, Status.Unsupported.</summary>
  public string Precision {
    get {
      CheckDisposed();
      return get_precision();
    }
    set {
      CheckDisposed();
      set_precision(value);
    }
  }

  /// <summary><see cref="Forward(float[], int, int, byte[], float[], int, bool, float[], float[])"/> on
  /// CUDA device memory of the layer's GPU, for callers with a CUDA interop library: input, output,
  /// initialState and finalState are device pointers (the last two may be IntPtr.Zero),
  /// cudaStream a cudaStream_t (IntPtr.Zero: the default stream); mask stays a host array (or
  /// null). Returns once the outputs are written. Status.State when the layer is not on a GPU.</summary>
  public unsafe void ForwardDevice(IntPtr cudaStream, IntPtr input, int batch, int timesteps, byte[] mask,
                                   IntPtr initialState, int numInitialStates, IntPtr output, IntPtr finalState) {
    CheckDisposed();
    fixed (byte* m = mask) {
      forward_device(cudaStream.ToInt64(), input.ToInt64(), batch, timesteps, (IntPtr)m, Util.Len(mask),
                     initialState.ToInt64(), numInitialStates, output.ToInt64(), finalState.ToInt64());
    }
  }

  /// <summary><see cref="ForwardStates"/> on CUDA device memory of the layer's GPU, for callers with a
  /// CUDA interop library (the serving case of many streams per step): the states (each on the
  /// layer's GPU) advance by one timestep as one batch; input (rows x input_size) and output (rows
  /// x units) are device pointers, rows the sum of the states' batches; cudaStream a cudaStream_t
  /// (IntPtr.Zero: recur's own stream for the calling thread); mask stays a host array (null, or
  /// one byte per row). No host copy is made; returns once output is written. The same numbers as
  /// ForwardStates; a state may appear once. Status.State when the layer is not on a GPU;
  /// Status.InvalidArgument for a zero pointer, no states or a state twice.</summary>
  public unsafe void ForwardStatesDevice(IntPtr cudaStream, State[] states, IntPtr input, byte[] mask, IntPtr output) {
    CheckDisposed();
    Util.NotNull(states, "states");
    var handles = new long[states.Length];
    for (int k = 0; k < states.Length; ++k) {
      if (states[k] == null) throw new ArgumentNullException("states[" + k + "]");
      states[k].CheckDisposed();
      handles[k] = State.getCPtr(states[k]).Handle.ToInt64();
    }
    fixed (long* h = handles) fixed (byte* m = mask) {
      forward_states_device(cudaStream.ToInt64(), (IntPtr)h, handles.Length, input.ToInt64(), (IntPtr)m,
                            Util.Len(mask), output.ToInt64());
    }
    GC.KeepAlive(states);  // the native call saw only their handles
  }

  /// <summary>Zero-fills a stateful layer's states (Keras reset_states()).</summary>
  public void ResetStates() { CheckDisposed(); reset_states(); }

  /// <summary>Sets a stateful layer's states: numStates tensors (batch_size, units) concatenated.</summary>
  public unsafe void SetStates(float[] states, int numStates) {
    CheckDisposed();
    Util.NotNull(states, "states");
    fixed (float* p = states) set_states((IntPtr)p, (ulong)states.LongLength, numStates);
  }

  /// <summary>Copies a stateful layer's current states into output.</summary>
  public unsafe void GetStates(float[] output) {
    CheckDisposed();
    Util.NotNull(output, "output");
    fixed (float* p = output) get_states((IntPtr)p, (ulong)output.LongLength);
  }

  /// <summary>A stateful layer's current states: num_states x (batch_size, units).</summary>
  public float[] GetStates() {
    var info = Info;
    return Interop.Filled((long)info.NumStates * info.BatchSize * info.Units, GetStates);
  }

  /// <summary>Keras get_initial_state: zeros, num_states x (batch, units).</summary>
  public unsafe float[] GetInitialState(int batch) {
    var info = Info;
    var output = new float[Math.Max(0L, (long)info.NumStates * batch * info.Units)];
    fixed (float* p = output) get_initial_state(batch, (IntPtr)p, (ulong)output.LongLength);
    return output;
  }

  /// <summary>One step of a cell: input (B, F); states num_states x (B, units); output (B, units);
  /// newStates null or num_states x (B, units).</summary>
  public unsafe void CellCall(float[] input, int batch, float[] states, int numStates, bool training, float[] output,
                              float[] newStates) {
    CheckDisposed();
    Util.NotNull(input, "input");
    Util.NotNull(states, "states");
    Util.NotNull(output, "output");
    fixed (float* i = input) fixed (float* s = states) fixed (float* o = output) fixed (float* n = newStates) {
      cell_call((IntPtr)i, (ulong)input.LongLength, batch, (IntPtr)s, (ulong)states.LongLength, numStates,
                training ? 1 : 0, (IntPtr)o, (ulong)output.LongLength, (IntPtr)n, Util.Len(newStates));
    }
  }

  /// <summary>The cell's cached input dropout masks (count x (batch, input_size)); empty without dropout.</summary>
  public unsafe float[] GetDropoutMask(int batch, bool training) {
    CheckDisposed();
    int count;
    dropout_mask(batch, training ? 1 : 0, IntPtr.Zero, 0, out count);
    var output = new float[(long)count * batch * Info.InputSize];
    fixed (float* p = output) dropout_mask(batch, training ? 1 : 0, (IntPtr)p, (ulong)output.LongLength, out count);
    return output;
  }

  /// <summary>The cell's cached recurrent dropout masks (count x (batch, units)).</summary>
  public unsafe float[] GetRecurrentDropoutMask(int batch, bool training) {
    CheckDisposed();
    int count;
    recurrent_dropout_mask(batch, training ? 1 : 0, IntPtr.Zero, 0, out count);
    var output = new float[(long)count * batch * Info.Units];
    fixed (float* p = output)
      recurrent_dropout_mask(batch, training ? 1 : 0, (IntPtr)p, (ulong)output.LongLength, out count);
    return output;
  }

  public void ResetDropoutMask() { CheckDisposed(); reset_dropout_mask(); }
  public void ResetRecurrentDropoutMask() { CheckDisposed(); reset_recurrent_dropout_mask(); }

  /// <summary>Number of weight tensors (Keras get_weights order: kernel, recurrent_kernel[, bias]).</summary>
  public int NumWeights { get { CheckDisposed(); int n; num_weights(out n); return n; } }

  /// <summary>Shape of weight <paramref name="index"/> (1 or 2 dimensions).</summary>
  public long[] WeightShape(int index) {
    CheckDisposed();
    long d0, d1;
    int nd;
    weight_shape(index, out d0, out d1, out nd);
    return nd == 1 ? new[] { d0 } : new[] { d0, d1 };
  }

  /// <summary>"kernel", "recurrent_kernel" or "bias".</summary>
  public string WeightName(int index) {
    CheckDisposed();
    IntPtr p;
    weight_name(index, out p);
    return Util.Str(p);
  }

  public unsafe void GetWeight(int index, float[] output) {
    CheckDisposed();
    Util.NotNull(output, "output");
    fixed (float* p = output) get_weight(index, (IntPtr)p, (ulong)output.LongLength);
  }

  /// <summary>Weight <paramref name="index"/>, row-major.</summary>
  public float[] GetWeight(int index) {
    return Interop.Filled(GraphUtil.Product(WeightShape(index)), output => GetWeight(index, output));
  }

  /// <summary>Sets weight <paramref name="index"/> (row-major; the length must match its shape).</summary>
  public unsafe void SetWeight(int index, float[] values) {
    CheckDisposed();
    Util.NotNull(values, "values");
    fixed (float* p = values) set_weight(index, (IntPtr)p, (ulong)values.LongLength);
  }

  /// <summary>Total floats of all weights.</summary>
  public long WeightsLength { get { CheckDisposed(); ulong n; weights_length(out n); return (long)n; } }

  public unsafe void GetWeights(float[] output) {
    CheckDisposed();
    Util.NotNull(output, "output");
    fixed (float* p = output) get_weights((IntPtr)p, (ulong)output.LongLength);
  }

  /// <summary>All weights concatenated in get_weights order.</summary>
  public float[] GetWeights() {
    return Interop.Filled(WeightsLength, GetWeights);
  }

  /// <summary>Sets all weights (concatenated in get_weights order); validated before anything changes.</summary>
  public unsafe void SetWeights(float[] values) {
    CheckDisposed();
    Util.NotNull(values, "values");
    fixed (float* p = values) set_weights((IntPtr)p, (ulong)values.LongLength);
  }

  /// <summary>Keras layer.losses: activity penalties of the last call, then weight penalties.</summary>
  public unsafe float[] GetLosses() {
    CheckDisposed();
    int count;
    get_losses(IntPtr.Zero, 0, out count);
    var output = new float[count];
    fixed (float* p = output) get_losses((IntPtr)p, (ulong)output.LongLength, out count);
    return output;
  }

  /// <summary>Name of loss <paramref name="index"/> ("activity:output", "kernel", ...).</summary>
  public string LossName(int index) {
    CheckDisposed();
    IntPtr p;
    loss_name(index, out p);
    return Util.Str(p);
  }

  /// <summary>Applies the kernel/recurrent/bias constraints to the weights.</summary>
  public void ApplyConstraints() { CheckDisposed(); apply_constraints(); }
}

}
