// SPDX-License-Identifier: Apache-2.0
// Public API of State (the h, and c, of a batch of streams).
using System;

namespace Recur {

/// <summary>The states of <c>batch</c> streams shaped for a layer, advanced with
/// <see cref="Layer.ForwardState"/>. One state is used by one thread at a time.</summary>
public sealed partial class State {
  /// <summary>A zero state of <paramref name="batch"/> streams for <paramref name="layer"/> (the layer is
  /// only read; the state does not reference it afterwards).</summary>
  public State(Layer layer, int batch) : this(CreateHandle(layer, batch), true) {}

  static IntPtr CreateHandle(Layer layer, int batch) {
    Util.Live(layer);
    State made = create(layer, batch);
    return Interop.TakeOver(made, ref made.swigCPtr, ref made.swigCMemOwn);
  }

  internal void CheckDisposed() {
    if (Util.Disposed(swigCPtr)) throw new ObjectDisposedException("Recur.State");
  }

  public bool IsDisposed { get { return Util.Disposed(swigCPtr); } }

  /// <summary>Number of state tensors (1 or 2).</summary>
  public int NumStates { get { CheckDisposed(); int n, b, u; shape(out n, out b, out u); return n; } }
  public int Batch { get { CheckDisposed(); int n, b, u; shape(out n, out b, out u); return b; } }
  public int Units { get { CheckDisposed(); int n, b, u; shape(out n, out b, out u); return u; } }
  /// <summary>NumStates * Batch * Units.</summary>
  public long Length {
    get { CheckDisposed(); int n, b, u; shape(out n, out b, out u); return (long)n * b * u; }
  }

  /// <summary>Copies the states (num_states x (batch, units)) into output.</summary>
  public unsafe void Get(float[] output) {
    CheckDisposed();
    Util.NotNull(output, "output");
    fixed (float* p = output) get((IntPtr)p, (ulong)output.LongLength);
  }

  public float[] Get() {
    return Interop.Filled(Length, Get);
  }

  /// <summary>Sets the states; values.Length = numStates * batch * units.</summary>
  public unsafe void Set(float[] values, int numStates) {
    CheckDisposed();
    Util.NotNull(values, "values");
    fixed (float* p = values) set((IntPtr)p, (ulong)values.LongLength, numStates);
  }

  /// <summary>Moves the states to <paramref name="device"/> ("cpu", "cuda", "cuda:N" or "auto") now;
  /// they also move when a layer on another device steps them. Throws RecurException with
  /// Status.Unsupported for a GPU that cannot run (the state stays where it was).</summary>
  public void SetDevice(string device) {
    CheckDisposed();
    Util.NotNull(device, "device");
    set_device(device);
  }

  /// <summary>Where the states live: "cpu", or "device-resident" on the GPU of the layer that last
  /// stepped them.</summary>
  public DeviceInfo Device { get { CheckDisposed(); return Interop.Device(get_device); } }

  /// <summary>Zero-fills the states (a new stream).</summary>
  public void Reset() { CheckDisposed(); reset(); }
}

}
