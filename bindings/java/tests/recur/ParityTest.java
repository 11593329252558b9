// SPDX-License-Identifier: Apache-2.0
package recur;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/** Keras parity through the binding: the fixtures computed with real Keras (tests/keras/fixtures). */
@SuppressWarnings("unchecked")
class ParityTest {
  static final Path FIXTURES = Paths.get(System.getProperty("recur.fixtures", "tests/keras/fixtures"));
  static final String[] FILES = {
    "keras2/gru.json", "keras3/gru.json", "keras2/lstm.json", "keras3/lstm.json", "keras2/cudnn.json",
    "keras2/masks.json", "keras3/masks.json", "keras2/stateful.json", "keras3/stateful.json",
    "keras2/cells.json", "keras3/cells.json", "keras2/large.json", "keras3/large.json",
    "keras2/simple_rnn.json", "keras3/simple_rnn.json"};

  static Map<String, Object> load(String file) throws Exception {
    return (Map<String, Object>) MiniJson.parse(new String(Files.readAllBytes(FIXTURES.resolve(file)), "UTF-8"));
  }

  static float[] floats(Object tensor) {
    List<Object> d = (List<Object>) ((Map<String, Object>) tensor).get("data");
    float[] f = new float[d.size()];
    for (int i = 0; i < f.length; i++) f[i] = (float) (double) (Double) d.get(i);
    return f;
  }

  static int[] shape(Object tensor) {
    List<Object> d = (List<Object>) ((Map<String, Object>) tensor).get("shape");
    int[] s = new int[d.size()];
    for (int i = 0; i < s.length; i++) s[i] = (int) (double) (Double) d.get(i);
    return s;
  }

  static float[] concat(List<Object> tensors) {
    int n = 0;
    for (Object t : tensors) n += floats(t).length;
    float[] out = new float[n];
    int o = 0;
    for (Object t : tensors) {
      float[] f = floats(t);
      System.arraycopy(f, 0, out, o, f.length);
      o += f.length;
    }
    return out;
  }

  static void near(float[] want, float[] got, double tol, String what) {
    assertEquals(want.length, got.length, what + ": length");
    for (int i = 0; i < want.length; i++)
      if (!(Math.abs(want[i] - got[i]) <= tol)) fail(what + "[" + i + "]: Keras " + want[i] + ", recur " + got[i]);
  }

  static Layer layerOf(Map<String, Object> file, Map<String, Object> c) {
    int dialect = "keras2".equals(file.get("dialect")) ? Recur.DIALECT_KERAS2 : Recur.DIALECT_KERAS3;
    String kv = (String) ((Map<String, Object>) file.get("versions")).get("keras");
    Layer layer = Layer.fromJson(MiniJson.write(c.get("layer")), (int) (double) (Double) c.get("input_size"), dialect, kv);
    List<Object> w = (List<Object>) c.get("weights");
    layer.setWeights(concat(w));
    return layer;
  }

  /** Runs one case: every call, compared with Keras's outputs. */
  static void runCase(Map<String, Object> file, Map<String, Object> c) {
    double tol = (Double) c.get("tolerance");
    String cls = (String) ((Map<String, Object>) c.get("layer")).get("class_name");
    try (Layer layer = layerOf(file, c)) {
      LayerInfo info = layer.info();
      int k = 0;
      for (Object callObj : (List<Object>) c.get("calls")) {
        Map<String, Object> call = (Map<String, Object>) callObj;
        String tag = c.get("name") + " call " + k++;
        Object rs = call.get("reset_states");
        if (rs != null) {
          List<Object> l = (List<Object>) rs;
          if (l.isEmpty()) layer.resetStates();
          else layer.setStates(concat(l), l.size());
        }
        Object inT = call.get("input");
        float[] x = floats(inT);
        int[] xs = shape(inT);
        List<Object> outs = (List<Object>) call.get("outputs");
        List<Object> init = (List<Object>) call.get("initial_state");
        if (cls.endsWith("Cell")) {
          int batch = xs[0];
          float[] out = new float[batch * info.units];
          float[] ns = new float[info.numStates * batch * info.units];
          layer.cellCall(x, batch, concat(init), init.size(), false, out, ns);
          near(floats(outs.get(0)), out, tol, tag + " output");
          near(concat(outs.subList(1, outs.size())), ns, tol, tag + " states");
          continue;
        }
        int batch = info.timeMajor ? xs[1] : xs[0], steps = info.timeMajor ? xs[0] : xs[1];
        byte[] mask = null;
        if (call.get("mask") != null) {
          float[] m = floats(call.get("mask"));
          mask = new byte[m.length];
          for (int i = 0; i < m.length; i++) mask[i] = (byte) (m[i] != 0 ? 1 : 0);
        }
        float[] out = new float[layer.outputLength(batch, steps)];
        float[] fin = new float[info.numStates * batch * info.units];
        layer.forward(x, batch, steps, mask, init.isEmpty() ? null : concat(init), init.size(), false, out, fin);
        near(floats(outs.get(0)), out, tol, tag + " output");
        if (outs.size() > 1) near(concat(outs.subList(1, outs.size())), fin, tol, tag + " final state");
      }
    }
  }

  @TestFactory
  Stream<DynamicTest> kerasFixtures() throws Exception {
    List<DynamicTest> tests = new ArrayList<>();
    for (String f : FILES) {
      Map<String, Object> file = load(f);
      for (Object o : (List<Object>) file.get("cases")) {
        Map<String, Object> c = (Map<String, Object>) o;
        if (c.get("tolerance") == null || ((List<Object>) c.get("calls")).isEmpty()) continue;
        tests.add(DynamicTest.dynamicTest(f + ":" + c.get("name"), () -> runCase(file, c)));
      }
    }
    assertTrue(tests.size() > 100, "fixture cases found: " + tests.size());
    return tests.stream();
  }

  /** The same numbers through direct FloatBuffers (zero copy) and through a streaming State. */
  @Test
  void bufferAndStreamingPathsMatchArrays() throws Exception {
    Map<String, Object> file = load("keras2/masks.json");
    Map<String, Object> c = null;
    for (Object o : (List<Object>) file.get("cases"))
      if ("mask_gru_ra_right".equals(((Map<String, Object>) o).get("name"))) c = (Map<String, Object>) o;
    assertNotNull(c);
    Map<String, Object> call = (Map<String, Object>) ((List<Object>) c.get("calls")).get(0);
    double tol = (Double) c.get("tolerance");
    try (Layer layer = layerOf(file, c)) {
      LayerInfo info = layer.info();
      int[] xs = shape(call.get("input"));
      int batch = xs[0], steps = xs[1];
      float[] x = floats(call.get("input"));
      float[] m = floats(call.get("mask"));
      byte[] mask = new byte[m.length];
      for (int i = 0; i < m.length; i++) mask[i] = (byte) m[i];
      float[] want = floats(((List<Object>) call.get("outputs")).get(0));

      FloatBuffer xb = Buffers.allocate(x.length).put(x);
      xb.flip();
      ByteBuffer mb = ByteBuffer.allocateDirect(mask.length).put(mask);
      mb.flip();
      FloatBuffer ob = Buffers.allocate(layer.outputLength(batch, steps));
      FloatBuffer fb = Buffers.allocate(info.numStates * batch * info.units);
      layer.forward(xb, batch, steps, mb, null, 0, false, ob, fb);
      float[] got = new float[ob.capacity()];
      ob.get(got);
      near(want, got, tol, "FloatBuffer output");

      // A window of a larger buffer: position..limit is what is passed.
      FloatBuffer big = Buffers.allocate(x.length + 7);
      big.position(7);
      big.put(x);
      big.position(7);
      FloatBuffer ob2 = Buffers.allocate(got.length + 3);
      ob2.position(3);
      layer.forward(big, batch, steps, mb, null, 0, false, ob2, null);
      for (int i = 0; i < got.length; i++) assertEquals(got[i], ob2.get(3 + i));

      // Streaming: the sequence step by step through a State gives the same outputs.
      if (info.returnSequences) {
        int f = info.inputSize, u = info.units;
        try (State st = new State(layer, batch)) {
          float[] step = new float[batch * f];
          float[] out = new float[batch * u];
          byte[] sm = new byte[batch];
          for (int t = 0; t < steps; t++) {
            for (int b = 0; b < batch; b++) {
              System.arraycopy(x, (b * steps + t) * f, step, b * f, f);
              sm[b] = mask[b * steps + t];
            }
            layer.forwardState(st, step, 1, sm, out);
            for (int b = 0; b < batch; b++)
              for (int j = 0; j < u; j++)
                assertEquals(want[(b * steps + t) * u + j], out[b * u + j], tol, "stream t=" + t);
          }
        }
      }
    }
  }

  @Test
  void optionsLayerWeightsAndLosses() {
    try (LayerOptions o = LayerOptions.of(Recur.LAYER_LSTM, 3, 2)) {
      o.setSeed(7);
      o.setKernelRegularizer("l2");
      o.setName("my_lstm");
      assertEquals(3, o.getUnits());
      try (Layer l = Layer.create(o)) {
        LayerInfo i = l.info();
        assertEquals(Recur.LAYER_LSTM, i.type);
        assertEquals(2, i.numStates);
        assertEquals(3, l.numWeights());
        assertArrayEquals(new long[] {2, 12}, l.weightShape(0));
        assertArrayEquals(new long[] {12}, l.weightShape(2));
        assertEquals("recurrent_kernel", l.weightName(1));
        float[] w = l.getWeights();
        assertEquals(l.weightsLength(), w.length);
        float[] k = l.getWeight(0);
        assertEquals(24, k.length);
        k[0] = 5f;
        l.setWeight(0, k);
        assertEquals(5f, l.getWeights()[0]);
        float[] losses = l.losses();
        assertEquals(1, losses.length);
        assertEquals("kernel", l.lossName(0));
        assertTrue(losses[0] > 0);
        l.applyConstraints();
        assertEquals(3 * 2, l.forward(new float[2 * 4 * 2], 2, 4).length);
      }
    }
  }

  @Test
  void cellDropoutMasks() {
    try (LayerOptions o = LayerOptions.of(Recur.LAYER_GRU_CELL, 4, 3)) {
      o.setDropout(0.5f);
      o.setSeed(1);
      try (Layer cell = Layer.create(o)) {
        float[] m = cell.dropoutMask(2, true);
        assertTrue(m.length > 0 && m.length % (2 * 3) == 0, "masks of (batch, input_size)");
        for (float v : m) assertTrue(v == 0f || Math.abs(v - 2f) < 1e-6);
        assertEquals(0, cell.recurrentDropoutMask(2, true).length);
        cell.resetDropoutMask();
        cell.resetRecurrentDropoutMask();
        float[][] r = cell.cellCall(new float[2 * 3], 2, new float[2 * 4]);
        assertEquals(8, r[0].length);
        assertEquals(8, r[1].length);
      }
    }
  }

  @Test
  void modelFileAndLayers() {
    Path models = Paths.get(System.getProperty("recur.models", "examples/models"));
    try (Model m = Model.open(models.resolve("sentiment_keras3.keras").toString())) {
      ModelInfo mi = m.info();
      assertTrue(mi.runnable);
      assertTrue(mi.takesTokenIds);
      boolean found = false;
      for (int i = 0; i < mi.numLayers; i++) {
        ModelLayer ml = m.layer(i);
        assertNotNull(ml.className);
        if (ml.recurrent) {
          found = true;
          try (Layer l = m.getLayer(ml.name)) {
            assertEquals(ml.outputSize, l.info().units);
          }
        }
      }
      assertTrue(found);
      float[] ids = new float[2 * 10];
      ids[3] = 5;
      ids[13] = 7;
      float[] a = m.run(ids, 2, 10);
      FloatBuffer in = Buffers.allocate(ids.length).put(ids);
      in.flip();
      FloatBuffer out = Buffers.allocate(m.outputLength(2, 10));
      m.run(in, 2, 10, null, out);
      for (int i = 0; i < a.length; i++) assertEquals(a[i], out.get(i));
    }
  }
}
