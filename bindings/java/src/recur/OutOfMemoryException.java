// SPDX-License-Identifier: Apache-2.0
package recur;

/** {@link Recur#ERR_OUT_OF_MEMORY}: The library could not allocate memory. */
public class OutOfMemoryException extends RecurException {
  private static final long serialVersionUID = 1L;

  public OutOfMemoryException(int status, String message) {
    super(status, message);
  }
}
