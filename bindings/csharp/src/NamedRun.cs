// SPDX-License-Identifier: Apache-2.0
// Named runs and steps (recur_model_run_named, recur_model_output_shapes,
// recur_model_state_step_named, recur_model_state_output_shapes): the C descriptors, laid out in
// stack memory, and the one routine that pins the managed arrays, fills the descriptors and calls.
using System;
using System.Collections.Generic;
using System.Runtime.InteropServices;
using System.Text;
using System.Threading;

namespace Recur {

// recur_tensor, version 1 (x86-64/arm64 layout; the bindings are 64-bit only).
[StructLayout(LayoutKind.Sequential)]
internal unsafe struct NativeTensor {
  public uint Version;
  public IntPtr Name;
  public int DType;
  public IntPtr Data;
  public ulong Length;
  public int Rank;
  public fixed long Dims[8];
  public IntPtr Mask;
  public ulong MaskLength;
}

// recur_output, version 1.
[StructLayout(LayoutKind.Sequential)]
internal unsafe struct NativeOutput {
  public uint Version;
  public IntPtr Name;
  public IntPtr Data;
  public ulong Capacity;
  public int Rank;
  public fixed long Dims[8];
  public ulong Length;
}

internal static class NamedRun {
  internal const int MaxRank = 8;  // RECUR_MAX_RANK
  const uint TensorVersion = 1, OutputVersion = 1;
  // Descriptors for up to this many bytes live on the stack; more (hundreds of inputs) in native memory.
  const int StackBytes = 16384;

  internal enum Call { ModelRun, ModelShapes, StateStep, StateShapes, StatesStep, StatesShapes }

  internal static byte[] Utf8(string s) {
    var bytes = new byte[Encoding.UTF8.GetByteCount(s) + 1];
    Encoding.UTF8.GetBytes(s, 0, s.Length, bytes, 0);
    return bytes;
  }

  static unsafe IntPtr Pin(Array a, IntPtr* handles, ref int pinned) {
    if (a == null) return IntPtr.Zero;
    GCHandle h = GCHandle.Alloc(a, GCHandleType.Pinned);
    handles[pinned++] = GCHandle.ToIntPtr(h);
    return h.AddrOfPinnedObject();
  }

  // Checks the arguments, pins every array once, fills the descriptors and makes the call; on
  // success copies each output's rank, dims and length back into its OutputBuffer. Allocates
  // nothing on the managed heap.
  internal static unsafe void Invoke(Model model, ModelState state, Call call, IReadOnlyList<NamedTensor> inputs,
                                     IReadOnlyList<OutputBuffer> outputs, RunOptions options,
                                     IntPtr states = default(IntPtr), int numStates = 0) {
    if (inputs == null) throw new ArgumentNullException("inputs");
    if (outputs == null) throw new ArgumentNullException("outputs");
    bool shapes = call == Call.ModelShapes || call == Call.StateShapes || call == Call.StatesShapes;
    int n = inputs.Count, m = outputs.Count;
    for (int i = 0; i < n; ++i)
      if (inputs[i] == null) throw new ArgumentNullException("inputs", "inputs[" + i + "] is null: pass a NamedTensor for each model input");
    for (int j = 0; j < m; ++j) {
      if (outputs[j] == null) throw new ArgumentNullException("outputs", "outputs[" + j + "] is null: pass an OutputBuffer for each output wanted");
      if (!shapes && outputs[j].Buffer == null)
        throw new ArgumentNullException("outputs", "outputs[" + j + "] ('" + outputs[j].Name + "').Buffer is null: give it a float[] of at least the output's length (OutputShapes tells it)");
    }

    long bytes = (long)n * sizeof(NativeTensor) + (long)m * sizeof(NativeOutput) + (3L * n + 2L * m) * IntPtr.Size;
    IntPtr heap = IntPtr.Zero;
    byte* mem;
    if (bytes <= StackBytes) {
      byte* stack = stackalloc byte[StackBytes];
      mem = stack;
    } else {
      heap = Marshal.AllocHGlobal(new IntPtr(bytes));
      mem = (byte*)heap;
    }
    var tensors = (NativeTensor*)mem;
    var outs = (NativeOutput*)(mem + (long)n * sizeof(NativeTensor));
    var handles = (IntPtr*)((byte*)outs + (long)m * sizeof(NativeOutput));
    int pinned = 0;
    IntPtr[] textPointers = null;  // native arrays of a string input's pointers, freed after the call
    IntPtr optionsHandle = IntPtr.Zero;
    bool entered = false;
    try {
      for (int i = 0; i < n; ++i) {
        NamedTensor t = inputs[i];
        NativeTensor* d = tensors + i;
        d->Version = TensorVersion;
        d->Name = Pin(t.NameUtf8, handles, ref pinned);
        d->DType = (int)t.ElementType;
        if (t.ElementType == ElementType.String) {
          // recur takes `length` pointers to NUL-terminated UTF-8 texts: into the pinned blob.
          if (textPointers == null) textPointers = new IntPtr[n];
          int count = t.TextOffsets.Length;
          textPointers[i] = Marshal.AllocHGlobal(new IntPtr(Math.Max(1, count) * IntPtr.Size));
          IntPtr blob = Pin(t.TextBlob, handles, ref pinned);
          var ptrs = (IntPtr*)textPointers[i];
          for (int e = 0; e < count; ++e) ptrs[e] = blob + t.TextOffsets[e];
          d->Data = textPointers[i];
          d->Length = (ulong)count;
        } else {
          d->Data = Pin(t.Data, handles, ref pinned);
          d->Length = (ulong)t.Data.LongLength;
        }
        long[] dims = t.DimsRef;
        d->Rank = dims.Length;
        for (int k = 0; k < MaxRank; ++k) d->Dims[k] = k < dims.Length ? dims[k] : 0;
        d->Mask = Pin(t.Mask, handles, ref pinned);
        d->MaskLength = Util.Len(t.Mask);
      }
      for (int j = 0; j < m; ++j) {
        OutputBuffer o = outputs[j];
        NativeOutput* d = outs + j;
        d->Version = OutputVersion;
        d->Name = Pin(o.NameUtf8, handles, ref pinned);
        d->Data = shapes ? IntPtr.Zero : Pin(o.Buffer, handles, ref pinned);
        d->Capacity = shapes ? 0UL : (ulong)o.Buffer.LongLength;
        d->Rank = 0;
        d->Length = 0;
        for (int k = 0; k < MaxRank; ++k) d->Dims[k] = 0;
      }
      if (options != null) {
        optionsHandle = options.Enter();
        entered = true;
      }
      switch (call) {
        case Call.ModelRun: model.run_named((IntPtr)tensors, n, (IntPtr)outs, m, optionsHandle); break;
        case Call.ModelShapes: model.output_shapes((IntPtr)tensors, n, (IntPtr)outs, m); break;
        case Call.StateStep: state.step_named((IntPtr)tensors, n, (IntPtr)outs, m, optionsHandle); break;
        case Call.StateShapes: state.output_shapes((IntPtr)tensors, n, (IntPtr)outs, m); break;
        case Call.StatesStep: recur.recur_cs_states_step_named(states, numStates, (IntPtr)tensors, n, (IntPtr)outs, m, optionsHandle); break;
        case Call.StatesShapes: recur.recur_cs_states_output_shapes(states, numStates, (IntPtr)tensors, n, (IntPtr)outs, m); break;
      }
      for (int j = 0; j < m; ++j) {
        OutputBuffer o = outputs[j];
        NativeOutput* d = outs + j;
        o.Rank = d->Rank;
        o.Length = (long)d->Length;
        for (int k = 0; k < MaxRank; ++k) o.DimsRef[k] = k < d->Rank ? d->Dims[k] : 0;
      }
    } finally {
      if (entered) options.Exit();
      for (int p = 0; p < pinned; ++p) GCHandle.FromIntPtr(handles[p]).Free();
      if (textPointers != null)
        foreach (IntPtr t in textPointers)
          if (t != IntPtr.Zero) Marshal.FreeHGlobal(t);
      if (heap != IntPtr.Zero) Marshal.FreeHGlobal(heap);
    }
  }

  internal static List<T> List<T>(IEnumerable<T> items, string name) {
    if (items == null) throw new ArgumentNullException(name);
    var list = new List<T>(items);
    for (int i = 0; i < list.Count; ++i)
      if (list[i] == null) throw new ArgumentNullException(name, name + "[" + i + "] is null");
    return list;
  }

  // The model's output names as named runs address them: "name:k" for the outputs of a Keras 3
  // layer that share one name (as recur.hpp's Model::outputs).
  internal static string[] OutputNames(Model model) {
    ModelTensor[] outputs = model.Outputs;
    var names = new string[outputs.Length];
    for (int i = 0; i < outputs.Length; ++i) {
      int same = 0, before = 0;
      for (int j = 0; j < outputs.Length; ++j)
        if (outputs[j].Name == outputs[i].Name) {
          if (j < i) ++before;
          ++same;
        }
      names[i] = same > 1 ? outputs[i].Name + ":" + before : outputs[i].Name;
    }
    return names;
  }

  static List<OutputBuffer> Buffers(IEnumerable<string> outputNames, string[] all) {
    var names = outputNames == null ? new List<string>(all) : List(outputNames, "outputNames");
    var buffers = new List<OutputBuffer>(names.Count);
    foreach (string name in names) buffers.Add(new OutputBuffer(name));
    return buffers;
  }

  // The allocating forms: sizes the outputs, allocates them, runs, returns them by name.
  internal static IReadOnlyDictionary<string, ModelOutput> Allocating(Model model, ModelState state,
      IEnumerable<NamedTensor> inputs, IEnumerable<string> outputNames, string[] all, RunOptions options) {
    var ins = List(inputs, "inputs");
    var buffers = Buffers(outputNames, all);
    bool onModel = model != null;
    Invoke(model, state, onModel ? Call.ModelShapes : Call.StateShapes, ins, buffers, null);
    foreach (OutputBuffer b in buffers) b.Buffer = new float[b.Length];
    Invoke(model, state, onModel ? Call.ModelRun : Call.StateStep, ins, buffers, options);
    var result = new Dictionary<string, ModelOutput>(buffers.Count);
    foreach (OutputBuffer b in buffers) result.Add(b.Name, new ModelOutput(b.Name, b.Dims, b.Buffer));
    return result;
  }

  internal static IReadOnlyDictionary<string, long[]> Shapes(Model model, ModelState state,
      IEnumerable<NamedTensor> inputs, IEnumerable<string> outputNames, string[] all) {
    var buffers = Buffers(outputNames, all);
    Invoke(model, state, model != null ? Call.ModelShapes : Call.StateShapes, List(inputs, "inputs"), buffers, null);
    var result = new Dictionary<string, long[]>(buffers.Count);
    foreach (OutputBuffer b in buffers) result.Add(b.Name, b.Dims);
    return result;
  }

  // A call under a CancellationToken: temporary RunOptions that the token cancels. The exception
  // of a call the token cancelled carries the token, as .NET's own cancelled operations do.
  internal static T WithToken<T>(CancellationToken token, Func<RunOptions, T> call) {
    if (!token.CanBeCanceled) return call(null);
    using (var options = new RunOptions()) {
      using (token.Register(options.Cancel)) {
        try {
          return call(options);
        } catch (RecurCancelledException e) when (token.IsCancellationRequested) {
          throw new RecurCancelledException(e.Message, e, token);
        }
      }
    }
  }
}

public sealed partial class Model {
  string[] outputNames;

  /// <summary>The names <see cref="Run(IEnumerable{NamedTensor}, IEnumerable{string}, RunOptions)"/>
  /// addresses outputs by, in Keras's model.outputs order ("name:k" for the outputs of a Keras 3
  /// layer that share its name).</summary>
  public string[] OutputNames {
    get {
      CheckDisposed();
      if (outputNames == null) outputNames = NamedRun.OutputNames(this);
      return (string[])outputNames.Clone();
    }
  }

  string[] AllOutputNames() {
    CheckDisposed();
    if (outputNames == null) outputNames = NamedRun.OutputNames(this);
    return outputNames;
  }

  /// <summary>Runs the model on named inputs (Keras's model.predict on one batch) and returns the
  /// outputs asked for by name (all of them when <paramref name="outputNames"/> is null), in the
  /// order asked. inputs: every model input exactly once, in any order; float, int or long
  /// (integer token ids reach an Embedding as integers). options: null, or RunOptions another
  /// thread may cancel (then RecurCancelledException). Errors: ArgumentNullException for a null
  /// argument or element, RecurException (Status.InvalidArgument for an unknown, missing or
  /// repeated name or a token id out of range, Status.Shape for dims, lengths or masks that do
  /// not fit), each message naming the input or output.</summary>
  public IReadOnlyDictionary<string, ModelOutput> Run(IEnumerable<NamedTensor> inputs, IEnumerable<string> outputNames = null,
                                                      RunOptions options = null) {
    return NamedRun.Allocating(this, null, inputs, outputNames, AllOutputNames(), options);
  }

  /// <summary>Run, cancelled when <paramref name="token"/> is: the call then throws
  /// RecurCancelledException (an OperationCanceledException carrying the token).</summary>
  public IReadOnlyDictionary<string, ModelOutput> Run(IEnumerable<NamedTensor> inputs, IEnumerable<string> outputNames,
                                                      CancellationToken token) {
    return NamedRun.WithToken(token, o => Run(inputs, outputNames, o));
  }

  /// <summary>Runs the model into the caller's arrays: each OutputBuffer names an output and holds
  /// its array (at least the output's length), and gets the dims and length written back. Pins
  /// each array once for the call and allocates nothing on the managed heap, so a loop over it
  /// makes no garbage. Errors as Run, plus ArgumentNullException for a null Buffer and
  /// Status.Shape for one too short; on any error no buffer is written.</summary>
  public void RunInto(IReadOnlyList<NamedTensor> inputs, IReadOnlyList<OutputBuffer> outputs, RunOptions options = null) {
    CheckDisposed();
    NamedRun.Invoke(this, null, NamedRun.Call.ModelRun, inputs, outputs, options);
  }

  /// <summary>RunInto, cancelled when <paramref name="token"/> is.</summary>
  public void RunInto(IReadOnlyList<NamedTensor> inputs, IReadOnlyList<OutputBuffer> outputs, CancellationToken token) {
    NamedRun.WithToken(token, o => { RunInto(inputs, outputs, o); return 0; });
  }

  /// <summary>The dims of each output asked for (all when null) for these inputs, without running;
  /// the inputs' arrays must fit their dims but their values are not read. Errors as Run.</summary>
  public IReadOnlyDictionary<string, long[]> OutputShapes(IEnumerable<NamedTensor> inputs, IEnumerable<string> outputNames = null) {
    return NamedRun.Shapes(this, null, inputs, outputNames, AllOutputNames());
  }

  /// <summary>Sets each OutputBuffer's Rank, Dims and Length for these inputs without running (its
  /// Buffer may be null), to size the arrays for <see cref="RunInto(IReadOnlyList{NamedTensor}, IReadOnlyList{OutputBuffer}, RunOptions)"/>.</summary>
  public void OutputShapes(IReadOnlyList<NamedTensor> inputs, IReadOnlyList<OutputBuffer> outputs) {
    CheckDisposed();
    NamedRun.Invoke(this, null, NamedRun.Call.ModelShapes, inputs, outputs, null);
  }
}

public sealed partial class ModelState {
  string[] outputNames;  // the model's, copied at creation

  /// <summary>The names the named Step addresses outputs by (see Model.OutputNames).</summary>
  public string[] OutputNames { get { CheckDisposed(); return (string[])outputNames.Clone(); } }

  /// <summary>Feeds the next steps of a stream by name: every sequence input holds the same number
  /// of steps (its dims[1]; its batch is the state's), inputs without timesteps are given whole.
  /// Returns the outputs asked for (all when null): sequence outputs hold the steps fed, the others
  /// their value after them. On any error, cancellation included, the stream is left exactly as
  /// before the call. Errors as Model.Run, plus Status.Shape for a batch other than the state's or
  /// sequence inputs of different lengths.</summary>
  public IReadOnlyDictionary<string, ModelOutput> Step(IEnumerable<NamedTensor> inputs, IEnumerable<string> outputNames = null,
                                                       RunOptions options = null) {
    CheckDisposed();
    return NamedRun.Allocating(null, this, inputs, outputNames, this.outputNames, options);
  }

  /// <summary>Step, cancelled when <paramref name="token"/> is.</summary>
  public IReadOnlyDictionary<string, ModelOutput> Step(IEnumerable<NamedTensor> inputs, IEnumerable<string> outputNames,
                                                       CancellationToken token) {
    return NamedRun.WithToken(token, o => Step(inputs, outputNames, o));
  }

  /// <summary>Step into the caller's arrays, allocating nothing (see Model.RunInto).</summary>
  public void StepInto(IReadOnlyList<NamedTensor> inputs, IReadOnlyList<OutputBuffer> outputs, RunOptions options = null) {
    CheckDisposed();
    NamedRun.Invoke(null, this, NamedRun.Call.StateStep, inputs, outputs, options);
  }

  /// <summary>The dims of each output asked for (all when null) of a step with these inputs.</summary>
  public IReadOnlyDictionary<string, long[]> OutputShapes(IEnumerable<NamedTensor> inputs, IEnumerable<string> outputNames = null) {
    CheckDisposed();
    return NamedRun.Shapes(null, this, inputs, outputNames, this.outputNames);
  }

  /// <summary>Sets each OutputBuffer's Rank, Dims and Length for a step with these inputs.</summary>
  public void OutputShapes(IReadOnlyList<NamedTensor> inputs, IReadOnlyList<OutputBuffer> outputs) {
    CheckDisposed();
    NamedRun.Invoke(null, this, NamedRun.Call.StateShapes, inputs, outputs, null);
  }
}


public sealed partial class Model {
  /// <summary>Steps many states of this model in one call, as one batch (one matrix product per
  /// layer per timestep for all of them): the numbers of calling ModelState.Step on each with its
  /// own rows. The inputs hold the rows of every state one after another in the order of
  /// <paramref name="states"/> (dims[0] = the sum of their batches), masks likewise; so do the
  /// outputs. Each state appears once and was made on this model. On any error (a RecurException
  /// naming the argument) every state is left exactly as before the call. The states must not be
  /// used by other threads during the call. (Since 0.8.)</summary>
  public IReadOnlyDictionary<string, ModelOutput> StepStates(IReadOnlyList<ModelState> states, IEnumerable<NamedTensor> inputs,
                                                             IEnumerable<string> outputNames = null, RunOptions options = null) {
    var ins = NamedRun.List(inputs, "inputs");
    var names = outputNames == null ? new List<string>(AllOutputNames()) : NamedRun.List(outputNames, "outputNames");
    var buffers = new List<OutputBuffer>(names.Count);
    foreach (string name in names) buffers.Add(new OutputBuffer(name));
    IntPtr[] handles = StateHandles(states);
    GCHandle pin = GCHandle.Alloc(handles, GCHandleType.Pinned);
    try {
      IntPtr p = pin.AddrOfPinnedObject();
      NamedRun.Invoke(this, null, NamedRun.Call.StatesShapes, ins, buffers, null, p, handles.Length);
      foreach (OutputBuffer b in buffers) b.Buffer = new float[b.Length];
      NamedRun.Invoke(this, null, NamedRun.Call.StatesStep, ins, buffers, options, p, handles.Length);
    } finally {
      pin.Free();
      GC.KeepAlive(states);
    }
    var result = new Dictionary<string, ModelOutput>(buffers.Count);
    foreach (OutputBuffer b in buffers) result.Add(b.Name, new ModelOutput(b.Name, b.Dims, b.Buffer));
    return result;
  }

  static IntPtr[] StateHandles(IReadOnlyList<ModelState> states) {
    if (states == null) throw new ArgumentNullException("states");
    var handles = new IntPtr[states.Count];
    for (int i = 0; i < handles.Length; ++i) {
      ModelState s = states[i];
      if (s == null) throw new ArgumentNullException("states", "states[" + i + "] is null");
      if (s.IsDisposed) throw new ObjectDisposedException("Recur.ModelState", "states[" + i + "] is disposed");
      handles[i] = ModelState.getCPtr(s).Handle;
    }
    return handles;
  }
}

}
