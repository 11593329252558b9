// SPDX-License-Identifier: Apache-2.0
package recur.flink;

/** An error of the recur Flink operator: the message says what went wrong and what to do. */
public class RecurFlinkException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public RecurFlinkException(String message) {
    super(message);
  }

  public RecurFlinkException(String message, Throwable cause) {
    super(message, cause);
  }
}
