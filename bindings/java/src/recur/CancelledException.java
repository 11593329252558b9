// SPDX-License-Identifier: Apache-2.0
package recur;

/** {@link Recur#ERR_CANCELLED}: {@link RunOptions#cancel()} stopped the call; it changed nothing. */
public class CancelledException extends RecurException {
  private static final long serialVersionUID = 1L;

  public CancelledException(int status, String message) {
    super(status, message);
  }
}
