// SPDX-License-Identifier: Apache-2.0
package recur;

/**
 * How many native handles of each kind were alive at one moment ({@link Recur#liveHandles()}):
 * layers (cells included), states, models and model states created and not yet freed.
 */
public final class LiveHandles {
  public final long layers;
  public final long states;
  public final long models;
  public final long modelStates;

  LiveHandles(long layers, long states, long models, long modelStates) {
    this.layers = layers;
    this.states = states;
    this.models = models;
    this.modelStates = modelStates;
  }

  /** All four counts together: 0 when nothing is alive. */
  public long total() {
    return layers + states + models + modelStates;
  }

  /** "layers 1, states 0, models 2, model states 0". */
  @Override
  public String toString() {
    return "layers " + layers + ", states " + states + ", models " + models + ", model states " + modelStates;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof LiveHandles)) return false;
    LiveHandles h = (LiveHandles) o;
    return layers == h.layers && states == h.states && models == h.models && modelStates == h.modelStates;
  }

  @Override
  public int hashCode() {
    return (int) (((layers * 31 + states) * 31 + models) * 31 + modelStates);
  }
}
