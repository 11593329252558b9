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
