// SPDX-License-Identifier: Apache-2.0
package recur;

/**
 * One stateful layer of a model (recur_model_stateful_layer): the name that
 * {@link Model#getStates(String)} and {@link Model#setStates(String, float[])} take ("name/forward"
 * or "name/backward" for a Bidirectional half) and the shape of its states, numStates x (batch, units).
 */
public final class StatefulLayer {
  /** Position among the model's stateful layers (config order). */
  public final int index;
  public final String name;
  /** States per layer: 1 (GRU, SimpleRNN: h) or 2 (LSTM: h and c). */
  public final int numStates;
  /** The batch_size the layer fixes. */
  public final int batch;
  public final int units;

  StatefulLayer(int index, String name, int numStates, int batch, int units) {
    this.index = index;
    this.name = name;
    this.numStates = numStates;
    this.batch = batch;
    this.units = units;
  }

  /** Floats of its states: numStates * batch * units (what {@link Model#statesLength(String)} says). */
  public int statesLength() {
    return Buffers.length((long) numStates * batch * units);
  }

  /** "lstm (2, 3, 4)": the states' shape (states, batch, units). */
  @Override
  public String toString() {
    return name + " (" + numStates + ", " + batch + ", " + units + ")";
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof StatefulLayer)) return false;
    StatefulLayer s = (StatefulLayer) o;
    return index == s.index && name.equals(s.name) && numStates == s.numStates && batch == s.batch && units == s.units;
  }

  @Override
  public int hashCode() {
    return ((31 * index + name.hashCode()) * 31 + numStates) * 31 + units;
  }
}
