// SPDX-License-Identifier: Apache-2.0
package recur;

/** What a layer is, after defaults were resolved (recur_layer_info). */
public final class LayerInfo {
  public final int type, dialect, units, inputSize, numStates, numWeights;
  public final boolean returnSequences, returnState, goBackwards, stateful, timeMajor, resetAfter;
  public final int batchSize, implementation;

  LayerInfo(LayerInfoRaw r) {
    type = r.getType();
    dialect = r.getDialect();
    units = r.getUnits();
    inputSize = r.getInputSize();
    numStates = r.getNumStates();
    numWeights = r.getNumWeights();
    returnSequences = r.getReturnSequences() != 0;
    returnState = r.getReturnState() != 0;
    goBackwards = r.getGoBackwards() != 0;
    stateful = r.getStateful() != 0;
    timeMajor = r.getTimeMajor() != 0;
    batchSize = r.getBatchSize();
    implementation = r.getImplementation();
    resetAfter = r.getResetAfter() != 0;
  }

  @Override
  public String toString() {
    return "LayerInfo{type=" + type + ", dialect=" + dialect + ", units=" + units + ", inputSize=" + inputSize
        + ", numStates=" + numStates + ", returnSequences=" + returnSequences + ", stateful=" + stateful + "}";
  }
}
