// SPDX-License-Identifier: Apache-2.0
package recur;

/** {@link Recur#ERR_IO}: File access: a missing, truncated or corrupt model file. */
public class IoException extends RecurException {
  private static final long serialVersionUID = 1L;

  public IoException(int status, String message) {
    super(status, message);
  }
}
