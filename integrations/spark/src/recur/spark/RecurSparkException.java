// SPDX-License-Identifier: Apache-2.0
package recur.spark;

/**
 * A scoring job that cannot go on: the native library does not load on an executor, the model
 * file is missing there, a bad row (its key in the message) with {@link BadRows#FAIL}, a model
 * recur-spark cannot score row by row. The message says what to do.
 */
public class RecurSparkException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public RecurSparkException(String message) {
    super(message);
  }

  public RecurSparkException(String message, Throwable cause) {
    super(message, cause);
  }
}
