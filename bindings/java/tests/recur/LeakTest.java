// SPDX-License-Identifier: Apache-2.0
package recur;

import static org.junit.jupiter.api.Assertions.*;

import java.io.ByteArrayInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * Native leak checks with the live-handle counts (Recur.liveHandles): everything a test makes and
 * closes, on success and on every error path, and everything it forgets to close once the
 * finalizers have run, leaves the counts where they were.
 *
 * Tagged "leaks": ctest runs this class alone in its own JVM (java_leaks, through LeakCheck, which
 * also checks that the counts end at zero), so no other test's objects move the counts meanwhile;
 * the java_junit run leaves it out.
 */
@Tag("leaks")
class LeakTest {
  static final String GRU = "{\"class_name\": \"GRU\", \"config\": {\"units\": 3, \"return_sequences\": true}}";
  static final Path MODELS = Paths.get(System.getProperty("recur.models", "examples/models"));
  static final Path CLI_MODELS = Paths.get(System.getProperty("recur.cliModels", "tests/cli/models"));
  static final LiveHandles NONE = new LiveHandles(0, 0, 0, 0);

  /**
   * Runs the garbage collector and the finalizers until the counts read want, or until timeoutMs
   * has passed; returns the last counts read.
   */
  static LiveHandles awaitCounts(LiveHandles want, long timeoutMs) throws InterruptedException {
    long end = System.nanoTime() + timeoutMs * 1_000_000L;
    LiveHandles now = Recur.liveHandles();
    while (!now.equals(want) && System.nanoTime() < end) {
      System.gc();
      System.runFinalization();
      Thread.sleep(10);
      now = Recur.liveHandles();
    }
    return now;
  }

  /** The counts once the garbage of earlier code is collected (they stop falling). */
  static LiveHandles settled() throws InterruptedException {
    LiveHandles last = Recur.liveHandles();
    for (int same = 0, i = 0; same < 3 && i < 200; ++i) {
      System.gc();
      System.runFinalization();
      Thread.sleep(10);
      LiveHandles now = Recur.liveHandles();
      same = now.equals(last) ? same + 1 : 0;
      last = now;
    }
    return last;
  }

  static void raises(Class<? extends Throwable> cls, Executable e) {
    assertThrows(cls, e);
  }

  LiveHandles before;

  @BeforeEach
  void settle() throws InterruptedException {
    before = settled();
  }

  void assertBack(String what) {
    assertEquals(before, Recur.liveHandles(), what);
  }

  @Test
  void countsFollowCreateAndClose() throws Exception {
    try (Layer l = Layer.fromJson(GRU, 2, Recur.DIALECT_AUTO, null)) {
      assertEquals(before.layers + 1, Recur.liveHandles().layers);
      try (State s = new State(l, 2)) {
        LiveHandles now = Recur.liveHandles();
        assertEquals(before.states + 1, now.states);
        assertEquals(before.total() + 2, now.total());
      }
      assertEquals(before.states, Recur.liveHandles().states);
    }
    try (Model m = Model.open(MODELS.resolve("sentiment_keras2.keras").toString())) {
      assertEquals(before.models + 1, Recur.liveHandles().models);
      try (ModelState s = new ModelState(m, 1); Layer gru = m.getLayer("gru")) {
        LiveHandles now = Recur.liveHandles();
        assertEquals(before.modelStates + 1, now.modelStates);
        assertEquals(before.layers + 1, now.layers);
      }
    }
    assertBack("after closing everything");
    LiveHandles h = new LiveHandles(1, 2, 3, 4);
    assertEquals(10, h.total());
    assertEquals("layers 1, states 2, models 3, model states 4", h.toString());
    assertEquals(h, new LiveHandles(1, 2, 3, 4));
    assertEquals(h.hashCode(), new LiveHandles(1, 2, 3, 4).hashCode());
    assertNotEquals(h, new LiveHandles(1, 2, 3, 5));
  }

  /** Every kind of object, made, used once and closed. */
  @Test
  void explicitClose() throws Exception {
    try (LayerOptions o = LayerOptions.of(Recur.LAYER_LSTM, 4, 3); Layer l = Layer.create(o); State s = new State(l, 2)) {
      l.forward(new float[2 * 5 * 3], 2, 5);
      l.forwardState(s, new float[2 * 3], 1);
      l.forwardStates(new State[] {s}, new float[2 * 3], null, new float[2 * 4]);
      s.reset();
    }
    try (LayerOptions o = LayerOptions.of(Recur.LAYER_GRU_CELL, 3, 2); Layer cell = Layer.create(o)) {
      cell.cellCall(new float[2 * 2], 2, new float[2 * 3]);
    }
    byte[] bytes = Files.readAllBytes(MODELS.resolve("sentiment_keras2.keras"));
    try (Model file = Model.open(MODELS.resolve("sentiment_keras2.keras").toString());
         Model fromBytes = Model.open(bytes, "sentiment.keras");
         Model fromDirect = Model.open((java.nio.ByteBuffer) java.nio.ByteBuffer.allocateDirect(bytes.length).put(bytes).flip(), "direct.keras");
         Model fromStream = Model.open(new ByteArrayInputStream(bytes), "stream.keras");
         Layer gru = file.getLayer("gru")) {
      for (Model m : new Model[] {file, fromBytes, fromDirect, fromStream}) m.run(new float[10], 1, 10);
      gru.info();
      try (ModelState s = new ModelState(file, 1)) {
        float[] in = new float[s.inputsLength(1)], out = new float[s.outputsLength(1)];
        s.step(in, 1, null, out);
        s.reset();
      }
    }
    assertBack("after closing everything");
  }

  /** Failed creates leave no handle; calls that throw leave nothing of what they made. */
  @Test
  void errorPaths() throws Exception {
    raises(ParseException.class, () -> Layer.fromJson("{not json", 2, Recur.DIALECT_AUTO, null));
    try (LayerOptions o = LayerOptions.of(Recur.LAYER_GRU, 0, 4)) {
      raises(InvalidArgumentException.class, () -> Layer.create(o));
    }
    try (LayerOptions o = LayerOptions.of(Recur.LAYER_GRU, 3, 4)) {
      o.setActivation("no_such_activation");
      raises(InvalidArgumentException.class, () -> Layer.create(o));
    }
    try (Layer l = Layer.fromJson(GRU, 2, Recur.DIALECT_AUTO, null)) {
      raises(InvalidArgumentException.class, () -> new State(l, 0));
      raises(ShapeException.class, () -> l.forward(new float[5], 1, 2));
      raises(IllegalArgumentException.class, () -> l.forwardRaw("not an array", 1, 1, null, null, 0, 0, new float[3], null));
      try (State s = new State(l, 1)) {
        raises(ShapeException.class, () -> l.forwardState(s, new float[3], new float[3]));
        raises(ShapeException.class, () -> s.set(new float[2], 1));
      }
    }
    raises(IoException.class, () -> Model.open(MODELS.resolve("no_such_model.keras").toString()));
    raises(IoException.class, () -> Model.open(new byte[] {1, 2, 3, 4}, "junk.keras"));
    raises(InvalidArgumentException.class, () -> Model.open(new byte[0], "empty.keras"));
    byte[] whole = Files.readAllBytes(MODELS.resolve("sentiment_keras2.keras"));
    raises(RecurException.class, () -> Model.open(java.util.Arrays.copyOf(whole, whole.length / 2), "cut.keras"));
    try (Model m = Model.open(whole, "sentiment.keras")) {
      raises(ShapeException.class, () -> m.run(new float[3], 1, 10));
      raises(InvalidArgumentException.class, () -> m.getLayer("no_such_layer"));
      raises(InvalidArgumentException.class, () -> new ModelState(m, 0));
      try (ModelState s = new ModelState(m, 1)) {
        raises(ShapeException.class, () -> s.step(new float[s.inputsLength(1) + 1], 1, null, new float[s.outputsLength(1)]));
      }
    }
    try (Model bi = Model.open(CLI_MODELS.resolve("keras3/bigru.keras").toString())) {
      raises(UnsupportedException.class, () -> new ModelState(bi, 1));
    }
    long limit = Recur.getLimit(Limit.UNITS);
    try {
      Recur.setLimit(Limit.UNITS, 2);
      raises(LimitException.class, () -> Layer.fromJson(GRU, 2, Recur.DIALECT_AUTO, null));
      raises(LimitException.class, () -> Model.open(whole, "sentiment.keras"));
    } finally {
      Recur.setLimit(Limit.UNITS, limit == Recur.defaultLimit(Limit.UNITS) ? 0 : limit);
    }
    assertBack("after the failures");
  }

  /** Objects never closed: their finalizers free them once they are unreachable. */
  @Test
  void forgottenObjectsAreFinalized() throws Exception {
    makeAndForget();
    LiveHandles left = awaitCounts(before, 30_000);
    assertEquals(before, left, "after the garbage collector and the finalizers");
  }

  private static void makeAndForget() throws Exception {
    byte[] bytes = Files.readAllBytes(MODELS.resolve("sentiment_keras2.keras"));
    for (int i = 0; i < 20; ++i) {
      Layer l = Layer.fromJson(GRU, 2, Recur.DIALECT_AUTO, null);
      State s = new State(l, 2);
      l.forwardState(s, new float[4], 1);
      Layer cell = Layer.create(LayerOptions.of(Recur.LAYER_LSTM_CELL, 2, 2));
      Model m = Model.open(bytes, "sentiment.keras");
      ModelState ms = new ModelState(m, 1);
      Layer taken = m.getLayer("lstm");
      assertNotNull(cell);
      assertNotNull(ms);
      assertNotNull(taken);
    }
    Model fromFile = Model.open(MODELS.resolve("sentiment_keras2.keras").toString());
    assertTrue(Recur.liveHandles().models > 0);
    assertNotNull(fromFile);
  }

  /** Run options: counted while open, freed by close (twice is fine), by a failed run and by the finalizer when forgotten. */
  @Test
  void runOptionsAreCountedAndFreed() throws Exception {
    long none = settledRunOptions();
    try (RunOptions o = new RunOptions(); RunOptions p = new RunOptions()) {
      assertEquals(none + 2, Recur.liveRunOptions());
      o.cancel();
      try (Model m = Model.open(MODELS.resolve("sentiment_keras3.keras").toString())) {
        java.util.Map<String, Tensor> in = java.util.Collections.singletonMap(m.input(0).name, Tensor.of(new int[10], 1, 10));
        raises(CancelledException.class, () -> m.run(in, null, o));
        raises(InvalidArgumentException.class, () -> m.run(in, java.util.Collections.singleton("no_such_output"), p));
        m.run(in, null, p);
      }
      p.close();
      assertEquals(none + 1, Recur.liveRunOptions());
    }
    assertEquals(none, Recur.liveRunOptions());
    assertBack("after the named runs");
    for (int i = 0; i < 20; ++i) assertNotNull(new RunOptions());
    long end = System.nanoTime() + 30_000_000_000L;
    while (Recur.liveRunOptions() != none && System.nanoTime() < end) {
      System.gc();
      System.runFinalization();
      Thread.sleep(10);
    }
    assertEquals(none, Recur.liveRunOptions(), "forgotten run options after the finalizers");
  }

  /** The run-options count once the garbage of earlier code is collected. */
  static long settledRunOptions() throws InterruptedException {
    long last = Recur.liveRunOptions();
    for (int same = 0, i = 0; same < 3 && i < 200; ++i) {
      System.gc();
      System.runFinalization();
      Thread.sleep(10);
      long now = Recur.liveRunOptions();
      same = now == last ? same + 1 : 0;
      last = now;
    }
    return last;
  }
}
