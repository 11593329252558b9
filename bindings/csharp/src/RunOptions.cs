// SPDX-License-Identifier: Apache-2.0
// RunOptions: the handle another thread cancels a named run or step with (recur_run_options).
using System;

namespace Recur {

/// <summary>Options of a named run or step: the handle another thread cancels it with. One
/// RunOptions may be passed to any number of calls on any threads; <see cref="Cancel"/> stops all
/// of them, and every later call, until <see cref="Reset"/>. A cancelled call throws
/// <see cref="RecurCancelledException"/> (an OperationCanceledException with Status.Cancelled),
/// writes no output and leaves a stateful model or stream as it was. A call stops after the
/// timestep or layer that is running (on a GPU, after the recurrent layer's sequence). Dispose it
/// when no call is using it (Dispose during a call throws InvalidOperationException); the
/// CancellationToken overloads make and dispose one per call.</summary>
public sealed class RunOptions : IDisposable {
  readonly object gate = new object();
  IntPtr handle;
  int users;  // calls running with these options now

  /// <summary>New options, not cancelled.</summary>
  public RunOptions() {
    NativeLoader.Load();
    IntPtr h;
    recur.recur_cs_run_options_create(out h);
    handle = h;
  }

  ~RunOptions() {
    // A call holds a reference to these options, so none is running when the finalizer does.
    if (handle != IntPtr.Zero) recur.recur_cs_run_options_destroy(handle);
  }

  /// <summary>True after Dispose.</summary>
  public bool IsDisposed { get { lock (gate) return handle == IntPtr.Zero; } }

  IntPtr Live() {
    if (handle == IntPtr.Zero) throw new ObjectDisposedException("Recur.RunOptions");
    return handle;
  }

  /// <summary>Stops every call running with these options and every later one until Reset. Safe
  /// from any thread at any time, meant to be called while a call runs; calling it twice is
  /// harmless.</summary>
  public void Cancel() {
    lock (gate) recur.recur_cs_run_options_cancel(Live());
  }

  /// <summary>Clears a cancel so that the options can be used again; call it when no call is
  /// running with them.</summary>
  public void Reset() {
    lock (gate) recur.recur_cs_run_options_reset(Live());
  }

  /// <summary>True after Cancel, until Reset.</summary>
  public bool IsCancelled {
    get {
      lock (gate) {
        int c;
        recur.recur_cs_run_options_is_cancelled(Live(), out c);
        return c != 0;
      }
    }
  }

  /// <summary>Seconds each call made with these options may run (0, the default: no limit). A call
  /// that runs longer stops at its next check (between layers and between timesteps) and throws
  /// RecurException with Status.Limit ("deadline passed after ... ms"), leaving a stateful model's
  /// states and a stream as before the call. Setting a negative, NaN or infinite value throws
  /// RecurException with Status.InvalidArgument. Since 0.8.</summary>
  public double TimeoutSeconds {
    get { lock (gate) return recur.recur_cs_run_options_get_timeout(Live()); }
    set { lock (gate) recur.recur_cs_run_options_set_timeout(Live(), value); }
  }

  // A call starts using the options: they cannot be freed until Exit.
  internal IntPtr Enter() {
    lock (gate) {
      IntPtr h = Live();
      ++users;
      return h;
    }
  }

  internal void Exit() {
    lock (gate) --users;
  }

  /// <summary>Frees the native options. A second Dispose does nothing. Throws
  /// InvalidOperationException while a call is running with them (cancel it and let it return
  /// first).</summary>
  public void Dispose() {
    lock (gate) {
      if (handle == IntPtr.Zero) return;
      if (users > 0)
        throw new InvalidOperationException("RunOptions.Dispose: " + users + " call(s) are running with these options; " +
                                            "cancel them and dispose after they return");
      recur.recur_cs_run_options_destroy(handle);
      handle = IntPtr.Zero;
    }
    GC.SuppressFinalize(this);
  }
}

}
