// SPDX-License-Identifier: Apache-2.0
package recur;

/**
 * Receives recur's log messages ({@link Recur#setLogHandler}): what recur decided and why (the CPU
 * kernel set, each layer's device and route, fallbacks, models opened, limits set). Called on any
 * thread that calls into recur, several at once: it must be thread-safe and return promptly. What
 * it throws is caught and dropped.
 */
@FunctionalInterface
public interface RecurLogHandler {
  /** One message: a line without a newline. */
  void log(LogLevel level, String message);
}
