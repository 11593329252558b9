// SPDX-License-Identifier: Apache-2.0
// The process-wide log handler (recur_set_log_callback): one static native callback, alive for
// the whole process, that forwards each message to the handler installed now.
using System;
using System.Runtime.InteropServices;
using System.Text;

namespace Recur {

/// <summary>Levels of recur's log messages (recur_log_level).</summary>
public enum LogLevel {
  Debug = 0,
  Info = 1,
  Warning = 2,
  Error = 3
}

public static partial class Library {
  [UnmanagedFunctionPointer(CallingConvention.Cdecl)]
  delegate void NativeLogCallback(IntPtr userData, int level, IntPtr message);

  // Kept in a static field for the life of the process, so the GC never collects the delegate
  // whose function pointer native code holds.
  static readonly NativeLogCallback logTrampoline = LogTrampoline;
  static readonly object logGate = new object();
  static volatile Action<LogLevel, string> logHandler;
  [ThreadStatic] static bool inLogHandler;

  static unsafe void LogTrampoline(IntPtr userData, int level, IntPtr message) {
    Action<LogLevel, string> handler = logHandler;
    if (handler == null || inLogHandler) return;
    inLogHandler = true;
    try {
      var bytes = (byte*)message;
      int length = 0;
      if (bytes != null)
        while (bytes[length] != 0) ++length;
      handler((LogLevel)level, bytes == null ? "" : Encoding.UTF8.GetString(bytes, length));
    } catch (Exception) {
      // A handler's exception must not unwind into native code; it is dropped.
    } finally {
      inLogHandler = false;
    }
  }

  /// <summary>Installs the process-wide log handler, which hears what recur decided and why: the
  /// CPU kernel set, each layer's and model's device and route with its reason, fallbacks, a
  /// summary of each model opened, limits set. Messages below <paramref name="minLevel"/> are not
  /// built. null turns logging off. Thread rules: the handler may run on any thread that calls
  /// into recur (recur's own worker threads included) and on several at once, so it must be
  /// thread-safe and return promptly; an exception it throws is caught and dropped (it never
  /// unwinds into native code). It must not call SetLogHandler (that throws
  /// InvalidOperationException); other recur calls are allowed. When SetLogHandler returns, the
  /// previous handler is not running and will not be called again. ArgumentOutOfRangeException
  /// for a minLevel that is not a LogLevel.</summary>
  public static void SetLogHandler(Action<LogLevel, string> handler, LogLevel minLevel = LogLevel.Info) {
    if (inLogHandler)
      throw new InvalidOperationException("SetLogHandler was called from inside the log handler; that would deadlock, call it from elsewhere");
    if (handler != null && (minLevel < LogLevel.Debug || minLevel > LogLevel.Error))
      throw new ArgumentOutOfRangeException("minLevel", minLevel, "minLevel: expected LogLevel.Debug, Info, Warning or Error");
    NativeLoader.Load();
    lock (logGate) {
      if (handler == null) {
        recur.recur_cs_set_log_callback(IntPtr.Zero, IntPtr.Zero, 0);
        logHandler = null;
      } else {
        logHandler = handler;
        recur.recur_cs_set_log_callback(Marshal.GetFunctionPointerForDelegate(logTrampoline), IntPtr.Zero, (int)minLevel);
      }
    }
  }

  /// <summary>How many RunOptions exist now (created, not yet freed) in this process
  /// (recur_live_run_options), for leak checks beside <see cref="LiveHandles"/>, which counts
  /// them too. Safe from any thread.</summary>
  public static ulong LiveRunOptions {
    get {
      NativeLoader.Load();
      ulong n;
      recur.recur_cs_live_run_options(out n);
      return n;
    }
  }
}

}
