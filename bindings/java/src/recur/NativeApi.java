// SPDX-License-Identifier: Apache-2.0
package recur;

import java.nio.charset.StandardCharsets;

/** The JNI functions written by hand in named_java.i: named calls, run options and the log callback. */
final class NativeApi {
  static {
    NativeLoader.load();
  }

  private NativeApi() {}

  static final int RUN = 0, MODEL_SHAPES = 1, STEP = 2, STATE_SHAPES = 3, STEP_STATES = 4, STATES_SHAPES = 5;

  static native void named(int op, long handle, Object[] names, int[] dtypes, Object[] data, long[] dims, int[] ranks,
                           Object[] masks, Object[] outNames, Object[] outBufs, long[] outDims, int[] outRanks,
                           long[] outLengths, long options);

  /** The count and the handles in C memory: the handle of named's STEP_STATES and STATES_SHAPES. */
  static native long statesArray(long[] handles);
  static native void freeStatesArray(long array);

  static native long optionsCreate();
  static native void optionsDestroy(long options);
  static native void optionsCancel(long options);
  static native void optionsReset(long options);
  static native boolean optionsIsCancelled(long options);
  static native long liveRunOptions();
  static native void setLogHandler(Object handler, int minLevel);

  /**
   * Serialises Recur.setLogHandler. A private lock, not Recur.class: setLogHandler waits for running
   * handlers to return, and a handler that took a lock the waiting thread holds would never return.
   */
  static final Object LOG_LOCK = new Object();

  /** The thread that is inside a log handler, so that it cannot reinstall one (that would deadlock). */
  static final ThreadLocal<Boolean> IN_LOG_HANDLER = new ThreadLocal<>();

  /** Called from the native log callback, on any thread: whatever the handler throws is dropped. */
  static void dispatchLog(Object handler, int level, byte[] message) {
    Boolean outer = IN_LOG_HANDLER.get(); // a handler's own recur call may log again, nested
    IN_LOG_HANDLER.set(Boolean.TRUE);
    try {
      ((RecurLogHandler) handler).log(LogLevel.of(level), new String(message, StandardCharsets.UTF_8));
    } catch (Throwable dropped) {
      // A log handler must not break the recur call that logged (see Recur.setLogHandler).
    } finally {
      if (outer == null) IN_LOG_HANDLER.remove();
    }
  }
}
