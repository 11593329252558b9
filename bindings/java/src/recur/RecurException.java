// SPDX-License-Identifier: Apache-2.0
package recur;

/**
 * A failed recur call: the C status ({@link Recur#ERR_SHAPE}, ...) and the library's message, which
 * names the argument and what was expected. Each status has its own subclass.
 */
public class RecurException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final int status;

  public RecurException(int status, String message) {
    super(message);
    this.status = status;
  }

  /** The recur_status code (negative). */
  public int status() {
    return status;
  }
}
