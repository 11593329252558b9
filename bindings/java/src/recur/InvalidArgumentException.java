// SPDX-License-Identifier: Apache-2.0
package recur;

/** {@link Recur#ERR_INVALID_ARGUMENT}: A NULL or out-of-range argument, or an unknown name. */
public class InvalidArgumentException extends RecurException {
  private static final long serialVersionUID = 1L;

  public InvalidArgumentException(int status, String message) {
    super(status, message);
  }
}
