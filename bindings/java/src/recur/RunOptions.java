// SPDX-License-Identifier: Apache-2.0
package recur;

/**
 * Options of a named run or step: the handle another thread cancels it with (recur_run_options).
 * One RunOptions may be passed to any number of calls on any threads; {@link #cancel()} stops all
 * of them, each throwing {@link CancelledException} and changing nothing, and every later call
 * until {@link #reset()}. Close it once no call uses it.
 */
public final class RunOptions implements AutoCloseable {
  private volatile long handle;

  /** New options, not cancelled. */
  public RunOptions() {
    handle = NativeApi.optionsCreate();
  }

  long ptr() {
    long p = handle;
    if (p == 0) throw new ClosedException("recur: this RunOptions is closed");
    return p;
  }

  /** Asks every call running with these options, and every later one, to stop. Safe from any thread at any time before close. */
  public void cancel() {
    NativeApi.optionsCancel(ptr());
  }

  /** Clears a cancel so that the options can be used again (call it when no call runs with them). */
  public void reset() {
    NativeApi.optionsReset(ptr());
  }

  /** Whether {@link #cancel()} was called since creation or the last {@link #reset()}. */
  public boolean isCancelled() {
    return NativeApi.optionsIsCancelled(ptr());
  }

  /**
   * Sets the seconds each call made with these options may run (0, the default: no limit). A call
   * that runs longer stops at its next check (between layers and between timesteps) and throws
   * {@link LimitException} ("deadline passed after ... ms"), leaving a stateful model's states and a
   * stream as before the call. Throws {@link InvalidArgumentException} for a negative, NaN or
   * infinite value. Since 0.8.
   */
  public void setTimeout(double seconds) {
    NativeApi.optionsSetTimeout(ptr(), seconds);
  }

  /** The timeout {@link #setTimeout} set, in seconds (0: none). Since 0.8. */
  public double getTimeout() {
    return NativeApi.optionsGetTimeout(ptr());
  }

  /** Whether {@link #close()} has been called. */
  public boolean isClosed() {
    return handle == 0;
  }

  /** Frees the native options. Idempotent; not while a call runs with them. */
  @Override
  public synchronized void close() {
    long p = handle;
    handle = 0;
    if (p != 0) NativeApi.optionsDestroy(p);
  }

  @SuppressWarnings("deprecation")
  @Override
  protected void finalize() {
    close();
  }
}
