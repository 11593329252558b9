// SPDX-License-Identifier: Apache-2.0
package recur;

import java.util.Arrays;

/** One output of a named run or step: its name as requested, its dims (batch first) and its values, row-major. */
public final class ModelOutput {
  public final String name;
  private final long[] dims;
  private final float[] values;

  ModelOutput(String name, long[] dims, float[] values) {
    this.name = name;
    this.dims = dims;
    this.values = values;
  }

  /** A copy of the dims. */
  public long[] dims() {
    return dims.clone();
  }

  /** The values (this output's own array, not a copy). */
  public float[] values() {
    return values;
  }

  @Override
  public String toString() {
    return name + " " + Arrays.toString(dims);
  }
}
