// SPDX-License-Identifier: Apache-2.0
package recur;

/** {@link Recur#ERR_UNSUPPORTED}: Valid Keras that this dialect or recur does not support. */
public class UnsupportedException extends RecurException {
  private static final long serialVersionUID = 1L;

  public UnsupportedException(int status, String message) {
    super(status, message);
  }
}
