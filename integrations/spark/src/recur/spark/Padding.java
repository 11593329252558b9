// SPDX-License-Identifier: Apache-2.0
package recur.spark;

/** How rows of different lengths share one model call. */
public enum Padding {
  /**
   * Rows are padded with zeros to the batch's longest and a (rows, steps) mask marks each row's
   * own steps, as Keras's call(mask=...) takes it: each row scores as Keras scores it alone for
   * models whose layers honour masks (recurrent layers, Masking, Embedding(mask_zero), pooling
   * with masks, Dense and other per-step layers). The default.
   */
  MASK,
  /**
   * Rows of one length are run together, without padding: exact for any model (convolutions,
   * attention without masks), at the cost of smaller calls when lengths vary a lot.
   */
  GROUP
}
