// SPDX-License-Identifier: Apache-2.0
package recur;

/** {@link Recur#ERR_STATE}: The object cannot do this (e.g. reset_states on a layer that is not stateful). */
public class StateException extends RecurException {
  private static final long serialVersionUID = 1L;

  public StateException(int status, String message) {
    super(status, message);
  }
}
