// SPDX-License-Identifier: Apache-2.0
// Hand-written part of the Recur C# binding: exceptions, constants, small helpers.
using System;
using System.Runtime.InteropServices;

namespace Recur {

/// <summary>A recur call failed. <see cref="Status"/> is the C recur_status (a negative
/// <see cref="Recur.Status"/> constant), the message is recur_last_error() of the failing call.</summary>
public class RecurException : Exception {
  public int Status { get; private set; }

  public RecurException(int status, string message) : base(message) { Status = status; }

  /// <summary>"invalid argument", "shape mismatch", ... for <see cref="Status"/>.</summary>
  public string StatusName { get { return Library.StatusString(Status); } }

  public override string ToString() {
    return "Recur.RecurException (" + Status + ", " + StatusName + "): " + Message;
  }

  // The exception a failing status raises: RecurCancelledException for Status.Cancelled (what
  // C# code catches for a cancelled operation), RecurException for the others.
  internal static Exception From(int status, string message) {
    if (status == global::Recur.Status.Cancelled) return new RecurCancelledException(message);
    return new RecurException(status, message);
  }
}

/// <summary>A run or step was cancelled through its <see cref="RunOptions"/> (or the
/// CancellationToken it was given): an OperationCanceledException, so that code catching those
/// for any cancelled .NET operation sees it, carrying <see cref="Status"/> =
/// <see cref="Recur.Status.Cancelled"/>. A cancelled call wrote no output and left a stateful
/// model or a ModelState as it was before the call.</summary>
public sealed class RecurCancelledException : System.OperationCanceledException {
  /// <summary>Always <see cref="Recur.Status.Cancelled"/>.</summary>
  public int Status { get { return global::Recur.Status.Cancelled; } }

  internal RecurCancelledException(string message) : base(message) {}
  internal RecurCancelledException(string message, Exception inner, System.Threading.CancellationToken token)
      : base(message, inner, token) {}
}

/// <summary>recur_status values.</summary>
public static class Status {
  public const int Ok = 0;
  public const int InvalidArgument = -1;
  public const int Shape = -2;
  public const int Unsupported = -3;
  public const int Parse = -4;
  public const int State = -5;
  public const int OutOfMemory = -6;
  public const int IO = -7;
  /// <summary>Over a resource limit (<see cref="Limits"/>); the message names the limit.</summary>
  public const int Limit = -8;
  /// <summary>The call was cancelled (RunOptions.Cancel); raised as RecurCancelledException.</summary>
  public const int Cancelled = -9;
  public const int Internal = -100;
}

/// <summary>The process-wide resource limits (recur_limit): counts for Units and Batch, bytes
/// for the others. See <see cref="Limits"/>.</summary>
public enum Limit {
  /// <summary>Units of one recurrent layer (default 65536).</summary>
  Units = 0,
  /// <summary>Batch of a stateful layer, a State or a ModelState (default 1048576).</summary>
  Batch = 1,
  /// <summary>Bytes of the states one stateful layer or one state holds (default 256 MiB).</summary>
  StateBytes = 2,
  /// <summary>Bytes of the weights of one layer as the CPU kernels hold them (each gate padded to
  /// whole panels of 8, 16 or 32 columns), and of all the layers of one model as stored (default 1 GiB).</summary>
  WeightBytes = 3,
  /// <summary>Bytes of a model file or image, and of one member of a .keras archive (default 4 GiB).</summary>
  FileBytes = 4,
  /// <summary>Bytes of one tensor a model allocates while it is built, runs or streams (default 1 GiB).</summary>
  TensorBytes = 5,
  /// <summary>Bytes of the states of all the stateful layers of one model together, or of one
  /// ModelState (default 256 MiB; since 0.8).</summary>
  TotalStateBytes = 6,
  /// <summary>Bytes of the tensors live at once in one run or stream step, planned from the shapes
  /// before it starts (default 512 MiB; since 0.8).</summary>
  RunBytes = 7,
  /// <summary>Timesteps one layer creates: RepeatVector's n, UpSampling1D's output (default 1048576;
  /// since 0.8).</summary>
  Timesteps = 8,
  /// <summary>Multiply-adds of one initializer whose work grows faster than its output
  /// (Orthogonal's QR) (default 2^31; since 0.8).</summary>
  InitWork = 9,
  /// <summary>The work of one model run or stream step, planned from the shapes before it starts,
  /// in units of about one multiply-add of a large matrix product (default 2^38: at most about 4
  /// seconds on one core; since 0.9).</summary>
  RunWork = 10
}

/// <summary>Process-wide resource limits. Every size that comes from a model file, a JSON config
/// or an argument is checked against them before recur allocates for it; going over one throws
/// RecurException with <see cref="Status.Limit"/> and a message that names the limit. Safe to
/// call from any thread; objects that exist keep what they hold.</summary>
public static class Limits {
  /// <summary>The current value of <paramref name="limit"/>. An unknown value throws
  /// RecurException (Status.InvalidArgument).</summary>
  public static ulong Get(Limit limit) { NativeLoader.Load(); ulong v; recur.recur_binding_get_limit((int)limit, out v); return v; }

  /// <summary>The built-in default of <paramref name="limit"/>.</summary>
  public static ulong Default(Limit limit) { NativeLoader.Load(); ulong v; recur.recur_binding_default_limit((int)limit, out v); return v; }

  /// <summary>Sets <paramref name="limit"/> for the whole process; 0 restores its default.</summary>
  public static void Set(Limit limit, ulong value) { NativeLoader.Load(); recur.recur_binding_set_limit((int)limit, value); }
}

/// <summary>recur_layer_type values for LayerOptions.Type.</summary>
public static class LayerType {
  public const int Gru = 1;
  public const int Lstm = 2;
  public const int CuDnnGru = 3;
  public const int CuDnnLstm = 4;
  public const int GruCell = 5;
  public const int LstmCell = 6;
  public const int SimpleRnn = 7;
  public const int SimpleRnnCell = 8;
}

/// <summary>recur_dialect values.</summary>
public static class Dialect {
  public const int Auto = 0;
  public const int Keras2 = 2;
  public const int Keras3 = 3;
}

/// <summary>Where a layer, state or model runs, by which route, and why (recur_device_info).</summary>
public sealed class DeviceInfo {
  /// <summary>"cpu", "cuda:N" or "auto", as last set ("cpu" by default).</summary>
  public string Requested { get; internal set; }
  /// <summary>Where calls run now: "cpu" or "cuda:N".</summary>
  public string Backend { get; internal set; }
  /// <summary>"cpu", "cudnn" or "kernel" (a state: "cpu" or "device-resident").</summary>
  public string Path { get; internal set; }
  /// <summary>Why this backend and path, e.g. why "auto" stayed on the CPU.</summary>
  public string Reason { get; internal set; }
  /// <summary>The GPU's name and cuDNN version, or "" on the CPU.</summary>
  public string DeviceName { get; internal set; }

  internal static DeviceInfo From(IntPtr requested, IntPtr backend, IntPtr path, IntPtr reason, IntPtr deviceName) {
    return new DeviceInfo {
      Requested = Util.Str(requested), Backend = Util.Str(backend), Path = Util.Str(path), Reason = Util.Str(reason),
      DeviceName = Util.Str(deviceName)
    };
  }

  public override string ToString() {
    return Backend + " (" + Path + (DeviceName == "" ? "" : ", " + DeviceName) + "): " + Reason;
  }
}

/// <summary>How many native handles of each kind were alive at one moment
/// (<see cref="Library.LiveHandles"/>): layers (cells included), states, models and model states
/// created and not yet freed, and the RunOptions not yet freed.</summary>
public struct LiveHandles : IEquatable<LiveHandles> {
  readonly ulong layers, states, models, modelStates, runOptions;

  public LiveHandles(ulong layers, ulong states, ulong models, ulong modelStates, ulong runOptions = 0) {
    this.layers = layers;
    this.states = states;
    this.models = models;
    this.modelStates = modelStates;
    this.runOptions = runOptions;
  }

  public ulong Layers { get { return layers; } }
  public ulong States { get { return states; } }
  public ulong Models { get { return models; } }
  public ulong ModelStates { get { return modelStates; } }
  /// <summary>RunOptions not yet freed (recur_live_run_options).</summary>
  public ulong RunOptions { get { return runOptions; } }
  /// <summary>All five counts together: 0 when nothing is alive.</summary>
  public ulong Total { get { return layers + states + models + modelStates + runOptions; } }

  public bool Equals(LiveHandles o) {
    return layers == o.layers && states == o.states && models == o.models && modelStates == o.modelStates &&
           runOptions == o.runOptions;
  }
  public override bool Equals(object o) { return o is LiveHandles && Equals((LiveHandles)o); }
  public override int GetHashCode() {
    return (int)((((layers * 31 + states) * 31 + models) * 31 + modelStates) * 31 + runOptions);
  }
  public static bool operator ==(LiveHandles a, LiveHandles b) { return a.Equals(b); }
  public static bool operator !=(LiveHandles a, LiveHandles b) { return !a.Equals(b); }

  /// <summary>"layers 1, states 0, models 2, model states 0, run options 0".</summary>
  public override string ToString() {
    return "layers " + layers + ", states " + states + ", models " + models + ", model states " + modelStates +
           ", run options " + runOptions;
  }
}

/// <summary>Library-wide functions.</summary>
public static partial class Library {
  /// <summary>RECUR_DEFAULT: "the Keras default" for int options.</summary>
  public const int Default = -1;

  /// <summary>"MAJOR.MINOR.PATCH" of the loaded native library.</summary>
  public static string Version { get { NativeLoader.Load(); return recur.recur_binding_version(); } }

  /// <summary>MAJOR*10000 + MINOR*100 + PATCH of the loaded native library.</summary>
  public static int VersionNumber { get { NativeLoader.Load(); return (int)recur.recur_binding_version_number(); } }

  /// <summary>A short description of a status code.</summary>
  public static string StatusString(int status) { NativeLoader.Load(); return recur.recur_binding_status_string(status); }

  /// <summary>Number of usable CUDA devices: 0 when the GPU plugin, the driver or a GPU is missing
  /// (<see cref="CheckDevice"/> says which).</summary>
  public static int DeviceCount { get { NativeLoader.Load(); int n; recur.recur_binding_device_count(out n); return n; } }

  /// <summary>Returns when <paramref name="device"/> ("cpu", "cuda", "cuda:N" or "auto") can run now;
  /// throws RecurException otherwise: Status.InvalidArgument for a bad string, Status.Unsupported
  /// for a GPU that cannot run, with a message that says what is missing.</summary>
  public static void CheckDevice(string device) {
    Util.NotNull(device, "device");
    NativeLoader.Load();
    recur.recur_binding_device_check(device);
  }

  /// <summary>The CPU kernel set this process runs: "avx512", "avx2" or "baseline", chosen when the
  /// library loads from the CPU's features (the environment variable RECUR_CPU_KERNELS, read at
  /// load, can ask for a lower set).</summary>
  public static string CpuKernels { get { NativeLoader.Load(); return recur.recur_binding_cpu_kernels(); } }

  /// <summary>How many native handles of each kind are alive in this process now
  /// (recur_live_handles), for leak checks: a program that has disposed of everything it made
  /// reads zeros. Objects that were never disposed of count until their finalizer has run
  /// (GC.Collect(); GC.WaitForPendingFinalizers()). Safe from any thread.</summary>
  public static global::Recur.LiveHandles LiveHandles {
    get {
      NativeLoader.Load();
      ulong layers, states, models, modelStates;
      recur.recur_binding_live_handles(out layers, out states, out models, out modelStates);
      return new global::Recur.LiveHandles(layers, states, models, modelStates, LiveRunOptions);
    }
  }

  /// <summary>Nanoseconds per streaming step (T=1) measured by a loop in C through the C ABI, for
  /// comparing the binding's per-call overhead. input/output as in Layer.ForwardState.</summary>
  public static unsafe double CStepNanoseconds(Layer layer, State state, float[] input, float[] output, int iterations) {
    Util.Live(layer); Util.Live(state); Util.NotNull(input, "input"); Util.NotNull(output, "output");
    fixed (float* i = input) fixed (float* o = output) {
      return recur.recur_binding_c_step_ns(layer, state, (IntPtr)i, (ulong)input.Length, (IntPtr)o,
                                           (ulong)output.Length, iterations);
    }
  }
}

internal static class Util {
  internal static void NotNull(object o, string name) {
    if (o == null) throw new ArgumentNullException(name);
  }
  internal static void Live(Layer o) {
    if (o == null) throw new ArgumentNullException("layer");
    o.CheckDisposed();
  }
  internal static void Live(State o) {
    if (o == null) throw new ArgumentNullException("state");
    o.CheckDisposed();
  }
  internal static ulong Len(Array a) { return a == null ? 0UL : (ulong)a.LongLength; }
  internal static string Str(IntPtr p) { return p == IntPtr.Zero ? null : Marshal.PtrToStringAnsi(p); }
  internal static bool Disposed(HandleRef h) { return h.Handle == IntPtr.Zero; }
}

}
