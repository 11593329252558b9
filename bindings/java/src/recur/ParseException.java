// SPDX-License-Identifier: Apache-2.0
package recur;

/** {@link Recur#ERR_PARSE}: Malformed JSON. */
public class ParseException extends RecurException {
  private static final long serialVersionUID = 1L;

  public ParseException(int status, String message) {
    super(status, message);
  }
}
