// SPDX-License-Identifier: Apache-2.0
package recur;

/** {@link Recur#ERR_INTERNAL}: A bug in recur; the message says what happened. */
public class InternalException extends RecurException {
  private static final long serialVersionUID = 1L;

  public InternalException(int status, String message) {
    super(status, message);
  }
}
