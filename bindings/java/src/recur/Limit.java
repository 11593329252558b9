// SPDX-License-Identifier: Apache-2.0
package recur;

/**
 * The process-wide resource limits (recur_limit). Every size that comes from a model file, a JSON
 * config or an argument is checked against them before recur allocates for it; going over one
 * throws {@link LimitException}. Read and change them with {@link Recur#getLimit},
 * {@link Recur#setLimit} and {@link Recur#defaultLimit}.
 */
public enum Limit {
  /** Units of one recurrent layer (default 65536). */
  UNITS(Recur.LIMIT_UNITS),
  /** Batch of a stateful layer, a {@link State} or a {@link ModelState} (default 1048576). */
  BATCH(Recur.LIMIT_BATCH),
  /** Bytes of the states one stateful layer or one state holds (default 256 MiB). */
  STATE_BYTES(Recur.LIMIT_STATE_BYTES),
  /**
   * Bytes of the weights of one layer as the CPU kernels hold them (each gate padded to whole
   * panels of 8, 16 or 32 columns), and of all the layers of one model as stored (default 1 GiB).
   */
  WEIGHT_BYTES(Recur.LIMIT_WEIGHT_BYTES),
  /** Bytes of a model file or image, and of one member of a .keras archive (default 4 GiB). */
  FILE_BYTES(Recur.LIMIT_FILE_BYTES),
  /** Bytes of one tensor a model allocates while it is built, runs or streams (default 1 GiB). */
  TENSOR_BYTES(Recur.LIMIT_TENSOR_BYTES),
  /**
   * Bytes of the states of all the stateful layers of one model together, or of one {@link
   * ModelState} (default 256 MiB; since 0.8).
   */
  TOTAL_STATE_BYTES(Recur.LIMIT_TOTAL_STATE_BYTES),
  /**
   * Bytes of the tensors live at once in one run or stream step, planned from the shapes before it
   * starts (default 512 MiB; since 0.8).
   */
  RUN_BYTES(Recur.LIMIT_RUN_BYTES),
  /** Timesteps one layer creates: RepeatVector's n, UpSampling1D's output (default 1048576; since 0.8). */
  TIMESTEPS(Recur.LIMIT_TIMESTEPS),
  /**
   * Multiply-adds of one initializer whose work grows faster than its output (Orthogonal's QR)
   * (default 2^31; since 0.8).
   */
  INIT_WORK(Recur.LIMIT_INIT_WORK),
  /**
   * The work of one model run or stream step, planned from the shapes before it starts, in units
   * of about one multiply-add of a large matrix product (default 2^38: at most about 4 seconds on
   * one core; since 0.9).
   */
  RUN_WORK(Recur.LIMIT_RUN_WORK);

  private final int code;

  Limit(int code) {
    this.code = code;
  }

  /** The recur_limit value. */
  public int code() {
    return code;
  }
}
