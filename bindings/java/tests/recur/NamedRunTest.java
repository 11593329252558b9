// SPDX-License-Identifier: Apache-2.0
package recur;

import static org.junit.jupiter.api.Assertions.*;
import static recur.ErrorTest.raises;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Named runs and steps (C ABI 0.6): inputs and outputs by name, integer ids, run options and
 * cancellation, the log handler. Named results are compared with the positional API's to the bit.
 */
class NamedRunTest {
  static final Path MODELS = Paths.get(System.getProperty("recur.models", "examples/models"));
  static final Path GRAPHS = Paths.get(System.getProperty("recur.graphs", "tests/keras/graphs"));

  static Model sentiment() {
    return Model.open(MODELS.resolve("sentiment_keras3.keras").toString());
  }

  static Model multiIo() {
    return Model.open(GRAPHS.resolve("keras3").resolve("multi_io.keras").toString());
  }

  static float[] ramp(int n, float scale) {
    float[] x = new float[n];
    for (int i = 0; i < n; ++i) x[i] = (float) Math.sin(i * 0.37) * scale;
    return x;
  }

  /** Token ids 1..vocab-1 as ints, for a (batch, t) input. */
  static int[] ids(int n, long vocab) {
    int[] x = new int[n];
    for (int i = 0; i < n; ++i) x[i] = (int) (1 + (i * 7L) % (vocab - 1));
    return x;
  }

  static long vocab(Model m) throws Exception {
    // The Embedding's input_dim, from its config.
    for (int i = 0; ; ++i) {
      ModelLayer l = m.layer(i);
      if ("Embedding".equals(l.className)) {
        String cfg = l.configJson;
        int k = cfg.indexOf("\"input_dim\"");
        String rest = cfg.substring(cfg.indexOf(':', k) + 1).trim();
        return Long.parseLong(rest.split("[,}\\s]")[0]);
      }
    }
  }

  static Map<String, Tensor> map(Object... kv) {
    Map<String, Tensor> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], (Tensor) kv[i + 1]);
    return m;
  }

  static void assertBits(float[] want, float[] got, String what) {
    assertEquals(want.length, got.length, what + " length");
    for (int i = 0; i < want.length; ++i)
      assertEquals(Float.floatToRawIntBits(want[i]), Float.floatToRawIntBits(got[i]),
                   what + "[" + i + "]: " + want[i] + " vs " + got[i]);
  }

  @Test
  void sentimentNamedMatchesPositionalWithFloatIntAndLongIds() throws Exception {
    try (Model m = sentiment()) {
      String in = m.input(0).name;
      long vocab = vocab(m);
      int b = 3, t = 6;
      int[] ints = ids(b * t, vocab);
      float[] floats = new float[ints.length];
      long[] longs = new long[ints.length];
      for (int i = 0; i < ints.length; ++i) {
        floats[i] = ints[i];
        longs[i] = ints[i];
      }
      float[] positional = m.run(floats, b, t);
      String out = m.outputNames().get(0);
      for (Tensor x : new Tensor[] {Tensor.of(floats, b, t), Tensor.of(ints, b, t), Tensor.of(longs, b, t)}) {
        Map<String, ModelOutput> r = m.run(map(in, x));
        assertEquals(Collections.singletonList(out), new ArrayList<>(r.keySet()));
        assertBits(positional, r.get(out).values(), x.toString());
        assertArrayEquals(m.outputDims(0, b, new int[] {t}), r.get(out).dims());
      }
      // Direct buffers (zero copy), read between position and limit.
      IntBuffer ib = ByteBuffer.allocateDirect(4 * (ints.length + 2)).order(ByteOrder.nativeOrder()).asIntBuffer();
      ib.put(new int[] {-1, -1}).put(ints).position(2);
      assertBits(positional, m.run(map(in, Tensor.of(ib, b, t))).get(out).values(), "IntBuffer");
      LongBuffer lb = ByteBuffer.allocateDirect(8 * longs.length).order(ByteOrder.nativeOrder()).asLongBuffer();
      lb.put(longs).flip();
      assertBits(positional, m.run(map(in, Tensor.of(lb, b, t))).get(out).values(), "LongBuffer");
      // A mask: the same as the positional run's.
      byte[] mask = new byte[b * t];
      Arrays.fill(mask, (byte) 1);
      mask[t - 1] = 0;
      mask[2 * t - 2] = 0;
      float[] masked = new float[positional.length];
      m.run(floats, b, t, mask, masked);
      assertBits(masked, m.run(map(in, Tensor.of(ints, b, t).withMask(mask))).get(out).values(), "masked");
    }
  }

  @Test
  void multiInputNamedMatchesPositionalInAnyOrder() {
    try (Model m = multiIo()) {
      assertEquals(Arrays.asList("seq", "static"), Arrays.asList(m.input(0).name, m.input(1).name));
      assertEquals(Arrays.asList("probs", "value"), m.outputNames());
      int b = 2, t = 7;
      float[] seq = ramp(b * t * 4, 1f), stat = ramp(b * 5, 0.5f);
      float[][] positional = m.run(new float[][] {seq, stat}, b, new int[] {t, 0});
      // Inputs in the other order; a subset of outputs; outputs in the other order.
      Map<String, Tensor> in = map("static", Tensor.of(stat, b, 5), "seq", Tensor.of(seq, b, t, 4));
      Map<String, ModelOutput> all = m.run(in);
      assertEquals(Arrays.asList("probs", "value"), new ArrayList<>(all.keySet()));
      assertBits(positional[0], all.get("probs").values(), "probs");
      assertBits(positional[1], all.get("value").values(), "value");
      assertArrayEquals(new long[] {b, 3}, all.get("probs").dims());
      assertArrayEquals(new long[] {b, 2}, all.get("value").dims());
      Map<String, ModelOutput> one = m.run(in, Collections.singleton("value"));
      assertEquals(Collections.singleton("value"), one.keySet());
      assertBits(positional[1], one.get("value").values(), "value alone");
      Map<String, ModelOutput> swapped = m.run(in, Arrays.asList("value", "probs"), null);
      assertEquals(Arrays.asList("value", "probs"), new ArrayList<>(swapped.keySet()));
      assertBits(positional[0], swapped.get("probs").values(), "probs swapped");
      assertBits(positional[1], swapped.get("value").values(), "value swapped");
      // Shapes first, then into the caller's buffers (an array and a direct FloatBuffer).
      Map<String, long[]> shapes = m.outputShapes(in, Arrays.asList("value", "probs"));
      assertArrayEquals(new long[] {b, 2}, shapes.get("value"));
      assertArrayEquals(new long[] {b, 3}, shapes.get("probs"));
      float[] probs = new float[b * 3 + 5];
      Arrays.fill(probs, -7f);
      FloatBuffer value = ByteBuffer.allocateDirect(4 * b * 2).order(ByteOrder.nativeOrder()).asFloatBuffer();
      OutputBuffer po = OutputBuffer.of(probs), vo = OutputBuffer.of(value);
      Map<String, OutputBuffer> outs = new LinkedHashMap<>();
      outs.put("value", vo);
      outs.put("probs", po);
      m.runInto(in, outs, null);
      assertBits(positional[0], Arrays.copyOf(probs, b * 3), "probs into");
      assertEquals(-7f, probs[b * 3], "nothing past the output");
      float[] v = new float[b * 2];
      value.get(v);
      assertBits(positional[1], v, "value into");
      assertArrayEquals(new long[] {b, 3}, po.dims());
      assertEquals(b * 3, po.length());
      assertArrayEquals(new long[] {b, 2}, vo.dims());
      // Direct float input buffers.
      FloatBuffer sb = ByteBuffer.allocateDirect(4 * seq.length).order(ByteOrder.nativeOrder()).asFloatBuffer();
      sb.put(seq).flip();
      assertBits(positional[0], m.run(map("seq", Tensor.of(sb, b, t, 4), "static", Tensor.of(stat, b, 5))).get("probs").values(),
                 "FloatBuffer input");
      // Another number of timesteps than declared, as Keras runs it.
      float[] seq3 = ramp(b * 3 * 4, 1f);
      float[][] p3 = m.run(new float[][] {seq3, stat}, b, new int[] {3, 0});
      assertBits(p3[0], m.run(map("seq", Tensor.of(seq3, b, 3, 4), "static", Tensor.of(stat, b, 5))).get("probs").values(), "T=3");
    }
  }

  @Test
  void outputsOfOneLayerAreAddressedByIndex() {
    try (Model m = Model.open(GRAPHS.resolve("keras3").resolve("return_state_outputs.keras").toString())) {
      assertEquals(Arrays.asList("gru:0", "gru:1", "lstm:0", "lstm:1", "lstm:2"), m.outputNames());
      long[] d = m.input(0).dims();
      int b = 2, t = 5, f = (int) d[d.length - 1];
      float[] x = ramp(b * t * f, 1f);
      float[][] positional = m.run(new float[][] {x}, b, new int[] {t});
      Map<String, Tensor> in = map(m.input(0).name, Tensor.of(x, b, t, f));
      Map<String, ModelOutput> all = m.run(in);
      for (int i = 0; i < positional.length; ++i)
        assertBits(positional[i], all.get(m.outputNames().get(i)).values(), m.outputNames().get(i));
      assertBits(positional[3], m.run(in, Collections.singleton("lstm:1")).get("lstm:1").values(), "lstm:1 alone");
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "gru", () -> m.run(in, Collections.singleton("gru")));
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "gru:2", () -> m.run(in, Collections.singleton("gru:2")));
    }
  }

  @Test
  void namedStepsMatchPositionalSteps() {
    try (Model m = multiIo(); ModelState named = new ModelState(m, 2); ModelState positional = new ModelState(m, 2)) {
      float[] stat = ramp(2 * 5, 0.5f);
      for (int k = 0; k < 3; ++k) {
        float[] seq = ramp(2 * 2 * 4, 1f + k);
        float[][] want = positional.step(new float[][] {seq, stat}, 2);
        Map<String, ModelOutput> got =
            named.step(map("static", Tensor.of(stat, 2, 5), "seq", Tensor.of(seq, 2, 2, 4)), Arrays.asList("value", "probs"), null);
        assertEquals(Arrays.asList("value", "probs"), new ArrayList<>(got.keySet()));
        assertBits(want[0], got.get("probs").values(), "step " + k + " probs");
        assertBits(want[1], got.get("value").values(), "step " + k + " value");
      }
      Map<String, Tensor> in = map("seq", Tensor.of(ramp(2 * 4, 1f), 2, 1, 4), "static", Tensor.of(stat, 2, 5));
      assertArrayEquals(new long[] {2, 3}, named.outputShapes(in, null).get("probs"));
      float[] want = positional.step(new float[][] {ramp(2 * 4, 1f), stat}, 1)[0];
      float[] into = new float[6];
      named.stepInto(in, Collections.singletonMap("probs", OutputBuffer.of(into)), null);
      assertBits(want, into, "stepInto");
      // A step with a batch other than the state's.
      raises(ShapeException.class, Recur.ERR_SHAPE, "seq",
             () -> named.step(map("seq", Tensor.of(ramp(3 * 4, 1f), 3, 1, 4), "static", Tensor.of(ramp(15, 1f), 3, 5))));
    }
  }

  @Test
  void errorsNameTheArgumentAndWriteNothing() throws Exception {
    try (Model m = multiIo()) {
      int b = 2, t = 7;
      Tensor seq = Tensor.of(ramp(b * t * 4, 1f), b, t, 4), stat = Tensor.of(ramp(b * 5, 1f), b, 5);
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "static", () -> m.run(map("seq", seq)));
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "nope",
             () -> m.run(map("seq", seq, "static", stat, "nope", stat)));
      // A repeated name cannot be built with a Map; the same tensor under an unknown name stands in.
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "probz",
             () -> m.run(map("seq", seq, "static", stat), Collections.singleton("probz")));
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "probs",
             () -> m.run(map("seq", seq, "static", stat), Arrays.asList("probs", "probs"), null));
      raises(ShapeException.class, Recur.ERR_SHAPE, "seq",
             () -> m.run(map("seq", Tensor.of(ramp(b * t * 4, 1f), b, t * 4), "static", stat)));
      raises(ShapeException.class, Recur.ERR_SHAPE, "static",
             () -> m.run(map("seq", seq, "static", Tensor.of(ramp(b * 6, 1f), b, 6))));
      raises(ShapeException.class, Recur.ERR_SHAPE, "static",
             () -> m.run(map("seq", seq, "static", Tensor.of(ramp(b * 5 - 1, 1f), b, 5))));
      raises(ShapeException.class, Recur.ERR_SHAPE, "mask",
             () -> m.run(map("seq", seq.withMask(new byte[3]), "static", stat)));
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "static",
             () -> m.run(map("seq", seq, "static", stat.withMask(new byte[b]))));
      // A buffer too small: named in the message, nothing written.
      float[] small = new float[b * 3 - 1];
      Arrays.fill(small, 5f);
      OutputBuffer sb = OutputBuffer.of(small);
      raises(ShapeException.class, Recur.ERR_SHAPE, "probs",
             () -> m.runInto(map("seq", seq, "static", stat), Collections.singletonMap("probs", sb), null));
      for (float f : small) assertEquals(5f, f);
      assertEquals(0, sb.dims().length);
      // Java-side argument checks.
      assertThrows(NullPointerException.class, () -> m.run(null));
      assertThrows(NullPointerException.class, () -> m.run(map("seq", seq, "static", null)));
      assertThrows(NullPointerException.class, () -> m.run(map("seq", seq, "static", stat), Arrays.asList("probs", null), null));
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Tensor.of(FloatBuffer.allocate(4), 1, 4));
      assertTrue(e.getMessage().contains("direct"), e.getMessage());
      e = assertThrows(IllegalArgumentException.class, () -> Tensor.of(new float[1], new long[Recur.MAX_RANK + 1]));
      assertTrue(e.getMessage().contains("dims"), e.getMessage());
      assertThrows(IllegalArgumentException.class, () -> Tensor.of(new float[1]));
    }
    try (Model m = sentiment()) {
      String in = m.input(0).name;
      long vocab = vocab(m);
      int[] x = ids(2 * 4, vocab);
      x[5] = (int) vocab;
      InvalidArgumentException ex =
          raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, in, () -> m.run(map(in, Tensor.of(x, 2, 4))));
      assertTrue(ex.getMessage().contains(Long.toString(vocab)), ex.getMessage());
      long[] big = new long[8];
      Arrays.fill(big, 1);
      big[3] = (1L << 40) + 1; // not a float: the message shows it went through as an int64
      ex = raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, in, () -> m.run(map(in, Tensor.of(big, 2, 4))));
      assertTrue(ex.getMessage().contains(Long.toString((1L << 40) + 1)), ex.getMessage());
      int[] neg = ids(8, vocab);
      neg[0] = -1;
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, in, () -> m.run(map(in, Tensor.of(neg, 2, 4))));
    }
  }

  @Test
  void runOptionsCancelResetAndClose() {
    try (Model m = multiIo()) {
      Map<String, Tensor> in = map("seq", Tensor.of(ramp(2 * 7 * 4, 1f), 2, 7, 4), "static", Tensor.of(ramp(10, 1f), 2, 5));
      float[] want = m.run(in).get("probs").values();
      RunOptions o = new RunOptions();
      assertFalse(o.isCancelled());
      assertBits(want, m.run(in, null, o).get("probs").values(), "with options");
      o.cancel();
      assertTrue(o.isCancelled());
      float[] out = new float[6];
      Arrays.fill(out, 3f);
      CancelledException c = raises(CancelledException.class, Recur.ERR_CANCELLED, "cancel",
                                    () -> m.runInto(in, Collections.singletonMap("probs", OutputBuffer.of(out)), o));
      assertTrue(c instanceof RecurException);
      for (float f : out) assertEquals(3f, f, "a cancelled run writes nothing");
      o.reset();
      assertFalse(o.isCancelled());
      assertBits(want, m.run(in, null, o).get("probs").values(), "after reset");
      o.close();
      o.close();
      assertTrue(o.isClosed());
      assertThrows(ClosedException.class, o::cancel);
      assertThrows(ClosedException.class, o::reset);
      assertThrows(ClosedException.class, o::isCancelled);
      assertThrows(ClosedException.class, () -> m.run(in, null, o));
    }
  }

  @Test
  void cancelledStepLeavesTheStreamAsBefore() {
    try (Model m = multiIo(); ModelState s = new ModelState(m, 1); ModelState ref = new ModelState(m, 1);
         RunOptions o = new RunOptions()) {
      Map<String, Tensor> a = map("seq", Tensor.of(ramp(4 * 4, 1f), 1, 4, 4), "static", Tensor.of(ramp(5, 1f), 1, 5));
      Map<String, Tensor> b = map("seq", Tensor.of(ramp(2 * 4, 2f), 1, 2, 4), "static", Tensor.of(ramp(5, 1f), 1, 5));
      s.step(a);
      ref.step(a);
      o.cancel();
      raises(CancelledException.class, Recur.ERR_CANCELLED, null, () -> s.step(b, null, o));
      assertBits(ref.step(b).get("probs").values(), s.step(b).get("probs").values(), "after the cancelled step");
    }
  }

  @Test
  void timeoutStopsARunAndLeavesTheStreamAsBefore() {
    try (Model m = multiIo(); ModelState s = new ModelState(m, 1); ModelState ref = new ModelState(m, 1);
         RunOptions o = new RunOptions()) {
      assertEquals(0.0, o.getTimeout());
      Map<String, Tensor> a = map("seq", Tensor.of(ramp(4 * 4, 1f), 1, 4, 4), "static", Tensor.of(ramp(5, 1f), 1, 5));
      s.step(a);
      ref.step(a);
      o.setTimeout(1e-9);
      assertEquals(1e-9, o.getTimeout());
      raises(LimitException.class, Recur.ERR_LIMIT, "deadline passed after", () -> s.step(a, null, o));
      raises(LimitException.class, Recur.ERR_LIMIT, "deadline passed after", () -> m.run(a, null, o));
      o.setTimeout(3600);
      assertBits(ref.step(a).get("probs").values(), s.step(a, null, o).get("probs").values(), "after the stopped step");
      for (double bad : new double[] {-1, Double.NaN, Double.POSITIVE_INFINITY})
        raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "seconds", () -> o.setTimeout(bad));
    }
  }

  @Test
  void cancelFromAnotherThreadStopsALongRun() throws Exception {
    try (Model m = sentiment(); RunOptions o = new RunOptions()) {
      String in = m.input(0).name;
      int b = 64, t = 40_000;
      Map<String, Tensor> x = map(in, Tensor.of(ids(b * t, vocab(m)), b, t));
      ExecutorService ex = Executors.newSingleThreadExecutor();
      try {
        CountDownLatch started = new CountDownLatch(1);
        Future<Long> f = ex.submit(() -> {
          started.countDown();
          long t0 = System.nanoTime();
          try {
            m.run(x, null, o);
            return -(System.nanoTime() - t0);
          } catch (CancelledException e) {
            return System.nanoTime() - t0;
          }
        });
        started.await();
        Thread.sleep(200);
        o.cancel();
        long ns = f.get(60, TimeUnit.SECONDS);
        assertTrue(ns > 0, "the run finished in " + (-ns / 1e6) + " ms, before the cancel at 200 ms: make it longer");
      } finally {
        ex.shutdownNow();
      }
    }
  }

  @Test
  void logHandlerHearsMessagesUntilTurnedOff() throws Exception {
    List<String> got = Collections.synchronizedList(new ArrayList<>());
    AtomicInteger throwing = new AtomicInteger();
    try {
      Recur.setLogHandler((level, msg) -> {
        assertNotNull(level);
        got.add(level + " " + msg);
        throwing.incrementAndGet();
        throw new RuntimeException("a handler that throws is dropped, not propagated");
      }, LogLevel.DEBUG);
      try (Model m = multiIo()) {
        assertFalse(got.isEmpty(), "messages while opening a model");
        assertTrue(String.join("\n", got).contains("multi_io"), String.join("\n", got));
        m.run(map("seq", Tensor.of(ramp(2 * 7 * 4, 1f), 2, 7, 4), "static", Tensor.of(ramp(10, 1f), 2, 5)));
      }
      // Messages from threads the JVM did not start see the handler too (concurrent runs).
      ExecutorService ex = Executors.newFixedThreadPool(2);
      try {
        List<Future<?>> fs = new ArrayList<>();
        for (int i = 0; i < 4; ++i) fs.add(ex.submit(() -> {
          try (Model m = multiIo()) {
            m.setNumThreads(2);
            m.run(map("seq", Tensor.of(ramp(2 * 7 * 4, 1f), 2, 7, 4), "static", Tensor.of(ramp(10, 1f), 2, 5)));
          }
        }));
        for (Future<?> f : fs) f.get();
      } finally {
        ex.shutdown();
      }
      // Handlers swapped while other threads log: each call sees one handler or none, never a freed one.
      AtomicInteger swapped = new AtomicInteger();
      ExecutorService loggers = Executors.newFixedThreadPool(2);
      try {
        List<Future<?>> fs = new ArrayList<>();
        for (int i = 0; i < 2; ++i) fs.add(loggers.submit(() -> {
          for (int k = 0; k < 10; ++k) multiIo().close();
        }));
        for (int k = 0; k < 40; ++k)
          Recur.setLogHandler(k % 3 == 2 ? null : (level, msg) -> swapped.incrementAndGet(), LogLevel.INFO);
        for (Future<?> f : fs) f.get();
      } finally {
        loggers.shutdown();
      }
      // A handler may not reinstall a handler (it would wait for itself).
      List<Throwable> inner = Collections.synchronizedList(new ArrayList<>());
      Recur.setLogHandler((level, msg) -> {
        try {
          Recur.setLogHandler(null, null);
        } catch (Throwable th) {
          inner.add(th);
        }
      }, LogLevel.DEBUG);
      multiIo().close();
      assertFalse(inner.isEmpty());
      assertTrue(inner.get(0) instanceof IllegalStateException, inner.get(0).toString());
      // Only messages at or above the level.
      got.clear();
      Recur.setLogHandler((level, msg) -> got.add(level.name()), LogLevel.ERROR);
      multiIo().close();
      for (String s : got) assertEquals("ERROR", s);
    } finally {
      Recur.setLogHandler(null, null);
    }
    int seen = got.size();
    multiIo().close();
    assertEquals(seen, got.size(), "no message after the handler is off");
    assertTrue(throwing.get() > 0);
    assertThrows(NullPointerException.class, () -> Recur.setLogHandler((l, s) -> {}, null));
  }

  @Test
  void closedModelsAndStatesThrowClosedException() {
    Model m = multiIo();
    ModelState s = new ModelState(m, 1);
    Map<String, Tensor> in = map("seq", Tensor.of(ramp(4, 1f), 1, 1, 4), "static", Tensor.of(ramp(5, 1f), 1, 5));
    m.close();
    m.close();
    assertThrows(ClosedException.class, () -> m.run(in));
    assertThrows(ClosedException.class, () -> m.outputShapes(in, null));
    assertThrows(ClosedException.class, () -> m.runInto(in, Collections.emptyMap(), null));
    // The state outlives its model.
    assertEquals(Arrays.asList("probs", "value"), new ArrayList<>(s.step(in).keySet()));
    s.close();
    s.close();
    assertThrows(ClosedException.class, () -> s.step(in));
    assertThrows(ClosedException.class, () -> s.outputShapes(in, null));
    assertThrows(ClosedException.class, () -> s.stepInto(in, Collections.emptyMap(), null));
  }
}
