// SPDX-License-Identifier: Apache-2.0
package recur.spark;

/** What a row that cannot be scored (null or empty sequence, wrong feature count) does. */
public enum BadRows {
  /** Fails the task, and so the job, with the row's key in the message (the default). */
  FAIL,
  /** Leaves the row out of the output; {@link RecurScorer#skippedRows()} counts them. */
  SKIP
}
