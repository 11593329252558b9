// SPDX-License-Identifier: Apache-2.0
package recur;

/** What a Keras model file holds (recur_model_info). */
public final class ModelInfo {
  public final int dialect;
  public final String kerasVersion;
  public final int numLayers;
  public final boolean runnable;
  /** Why the model cannot run ("" if runnable). */
  public final String unsupported;
  public final int inputSize;
  public final boolean takesTokenIds;
  public final int outputSize;
  public final boolean returnsSequences;
  public final int numOutputs;

  ModelInfo(ModelInfoRaw r) {
    dialect = r.getDialect();
    kerasVersion = r.getKerasVersion();
    numLayers = r.getNumLayers();
    runnable = r.getRunnable() != 0;
    unsupported = r.getUnsupported();
    inputSize = r.getInputSize();
    takesTokenIds = r.getTakesTokenIds() != 0;
    outputSize = r.getOutputSize();
    returnsSequences = r.getReturnsSequences() != 0;
    numOutputs = r.getNumOutputs();
  }
}
