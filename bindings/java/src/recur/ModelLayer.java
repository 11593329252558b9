// SPDX-License-Identifier: Apache-2.0
package recur;

/** One entry of a model's config (recur_model_layer). */
public final class ModelLayer {
  public final int index;
  public final String name, className, configJson;
  /** Sizes of the last input and output axes (0 if unknown). */
  public final int inputSize, outputSize;
  /** Whether Model.getLayer can return this layer. */
  public final boolean recurrent;

  ModelLayer(int index, String name, String className, String configJson, int inputSize, int outputSize, boolean recurrent) {
    this.index = index;
    this.name = name;
    this.className = className;
    this.configJson = configJson;
    this.inputSize = inputSize;
    this.outputSize = outputSize;
    this.recurrent = recurrent;
  }

  @Override
  public String toString() {
    return name + " (" + className + ")";
  }
}
