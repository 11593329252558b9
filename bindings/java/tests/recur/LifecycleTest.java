// SPDX-License-Identifier: Apache-2.0
package recur;

import static org.junit.jupiter.api.Assertions.*;

import org.junit.jupiter.api.Test;

/** close() twice, and every kind of use after close: a ClosedException, never a crash. */
class LifecycleTest {
  static final String LSTM = "{\"class_name\": \"LSTM\", \"config\": {\"units\": 2}}";

  static void closed(org.junit.jupiter.api.function.Executable e, String what) {
    ClosedException ex = assertThrows(ClosedException.class, e);
    assertTrue(ex.getMessage().contains(what), ex.getMessage());
  }

  @Test
  void layer() {
    Layer l = Layer.fromJson(LSTM, 3, Recur.DIALECT_AUTO, null);
    assertFalse(l.isClosed());
    l.close();
    l.close();
    assertTrue(l.isClosed());
    closed(l::info, "Layer");
    closed(() -> l.forward(new float[3], 1, 1), "Layer");
    closed(l::resetStates, "Layer");
    closed(l::getWeights, "Layer");
    closed(() -> l.setWeights(new float[1]), "Layer");
    closed(l::losses, "Layer");
    closed(l::applyConstraints, "Layer");
    closed(() -> new State(l, 1), "Layer");
  }

  @Test
  void state() {
    try (Layer l = Layer.fromJson(LSTM, 3, Recur.DIALECT_AUTO, null)) {
      State s = new State(l, 2);
      assertEquals(2, s.numStates());
      assertEquals(2, s.batch());
      assertEquals(2, s.units());
      s.close();
      s.close();
      closed(s::get, "State");
      closed(s::reset, "State");
      closed(s::batch, "State");
      closed(() -> l.forwardState(s, new float[6], new float[4]), "State");
      closed(() -> l.forwardState(s, Buffers.allocate(6), Buffers.allocate(4)), "State");
      // The layer outlives its closed state, and a state outlives its closed layer.
      State s2 = new State(l, 1);
      l.close();
      assertEquals(4, s2.get().length);
      s2.close();
    }
  }

  @Test
  void model() {
    String path = java.nio.file.Paths.get(System.getProperty("recur.models", "examples/models"), "sentiment_keras2.h5").toString();
    Model m = Model.open(path);
    Layer taken = null;
    for (int i = 0; i < m.info().numLayers; i++)
      if (m.layer(i).recurrent) { taken = m.getLayer(m.layer(i).name); break; }
    assertNotNull(taken);
    m.close();
    m.close();
    closed(m::info, "Model");
    closed(() -> m.run(new float[10], 1, 10), "Model");
    closed(() -> m.getLayer("x"), "Model");
    assertTrue(taken.info().units > 0); // layers taken from a model stay valid
    taken.close();
  }

  @Test
  void options() {
    LayerOptions o = LayerOptions.of(Recur.LAYER_GRU, 2, 2);
    o.close();
    o.close();
    closed(o::getUnits, "LayerOptions");
    closed(() -> o.setActivation("relu"), "LayerOptions");
    closed(() -> Layer.create(o), "LayerOptions");
  }

  @Test
  void tryWithResources() {
    float[] out;
    try (LayerOptions o = LayerOptions.of(Recur.LAYER_GRU, 2, 2);
         Layer l = Layer.create(o);
         State s = new State(l, 1)) {
      out = l.forwardState(s, new float[] {1, 2}, 1);
    }
    assertEquals(2, out.length);
  }
}
