// SPDX-License-Identifier: Apache-2.0
package recur;

import java.util.Arrays;

/**
 * One input or output of a model (recur_model_input / recur_model_output): its Keras name and dims,
 * batch axis first, with -1 for an axis given at run time (the batch, unless a stateful model fixes
 * it, and the timesteps axis of a sequence input whose length the model leaves open).
 */
public final class ModelTensor {
  /** Position among the model's inputs (or outputs), as Keras's model.inputs / model.outputs. */
  public final int index;
  /** The InputLayer's name for an input; Keras's model.output_names entry for an output. */
  public final String name;
  private final long[] dims;
  /** An input of integer ids (Keras dtype int*, or one that feeds an Embedding), passed as floats. Always false for outputs. */
  public final boolean tokenIds;
  /**
   * An input with a timesteps axis (axis 1), as the C ABI says (recur_model_input_sequence): its
   * length comes from the run's timesteps, masks address it and {@link ModelState} feeds it a few
   * steps at a time; other inputs are given whole. Always false for outputs.
   */
  public final boolean sequence;
  /**
   * An input of texts (Keras dtype "string", read by StringLookup or TextVectorization): pass it
   * as {@link Tensor#ofStrings} (since 0.7). Always false for outputs.
   */
  public final boolean strings;

  ModelTensor(int index, String name, long[] dims, boolean tokenIds, boolean sequence, boolean strings) {
    this.index = index;
    this.name = name;
    this.dims = dims;
    this.tokenIds = tokenIds;
    this.sequence = sequence;
    this.strings = strings;
  }

  /** A copy of the dims (rank values, -1 where given at run time). */
  public long[] dims() {
    return dims.clone();
  }

  /** Number of axes, the batch axis included. */
  public int rank() {
    return dims.length;
  }

  /** Axis {@code axis}, -1 where given at run time. */
  public long dim(int axis) {
    return dims[axis];
  }

  /** "name (-1, 7, 4)"; token-id inputs add " token ids". */
  @Override
  public String toString() {
    StringBuilder b = new StringBuilder(name).append(" (");
    for (int i = 0; i < dims.length; ++i) b.append(i == 0 ? "" : ", ").append(dims[i]);
    return b.append(dims.length == 1 ? ",)" : ")").append(tokenIds ? " token ids" : strings ? " strings" : "").toString();
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof ModelTensor)) return false;
    ModelTensor t = (ModelTensor) o;
    return index == t.index && name.equals(t.name) && Arrays.equals(dims, t.dims) && tokenIds == t.tokenIds
        && sequence == t.sequence && strings == t.strings;
  }

  @Override
  public int hashCode() {
    return 31 * (31 * index + name.hashCode()) + Arrays.hashCode(dims) + (sequence ? 1 : 0);
  }
}
