// SPDX-License-Identifier: Apache-2.0
package recur;

/**
 * {@link Recur#ERR_LIMIT}: Over a resource limit; the message names the limit, the amount asked
 * for and how to raise it ({@link Recur#setLimit}).
 */
public class LimitException extends RecurException {
  private static final long serialVersionUID = 1L;

  public LimitException(int status, String message) {
    super(status, message);
  }
}
