// SPDX-License-Identifier: Apache-2.0
package recur;

/** {@link Recur#ERR_SHAPE}: A length or dimension that does not agree. */
public class ShapeException extends RecurException {
  private static final long serialVersionUID = 1L;

  public ShapeException(int status, String message) {
    super(status, message);
  }
}
