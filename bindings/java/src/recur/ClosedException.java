// SPDX-License-Identifier: Apache-2.0
package recur;

/** A method was called on a Layer, State, Model or LayerOptions after close(). */
public class ClosedException extends IllegalStateException {
  private static final long serialVersionUID = 1L;

  public ClosedException(String message) {
    super(message);
  }
}
