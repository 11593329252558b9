// SPDX-License-Identifier: Apache-2.0
package recur;

import static org.junit.jupiter.api.Assertions.*;
import static recur.ErrorTest.raises;

import java.io.ByteArrayInputStream;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * Models as graphs (recur 0.4): several inputs and outputs, models opened from memory, stateful
 * models, Keras backends and streams through a whole model, against the Keras graph fixtures
 * (tests/keras/graphs: model files and Keras's predictions) and the CLI's model files.
 */
@SuppressWarnings("unchecked")
class GraphModelTest {
  static final Path GRAPHS = Paths.get(System.getProperty("recur.graphs", "tests/keras/graphs"));
  static final Path CLI_MODELS = Paths.get(System.getProperty("recur.cliModels", "tests/cli/models"));
  static final double TOL = 1e-5;
  /** Cases run through every file and dialect (the C++ parity suite runs them all). */
  static final String[] PARITY_CASES = {
    "multi_io", "return_state_outputs", "seq2seq_initial_state", "merges_mixed_masks", "masking_sequential",
    "embedding_masked_full_row", "bidirectional_return_state", "stateful_sequential_gru",
    "stateful_functional_lstm_gru", "simple_rnn"};

  static final Map<String, Map<String, Object>> DOCS = new HashMap<>();

  static synchronized Map<String, Object> doc(String dialect) throws Exception {
    Map<String, Object> d = DOCS.get(dialect);
    if (d == null) {
      d = (Map<String, Object>) MiniJson.parse(new String(Files.readAllBytes(GRAPHS.resolve(dialect + ".json")), "UTF-8"));
      DOCS.put(dialect, d);
    }
    return d;
  }

  static Map<String, Object> graphCase(String dialect, String name) throws Exception {
    for (Object c : (List<Object>) doc(dialect).get("cases"))
      if (name.equals(((Map<String, Object>) c).get("name"))) return (Map<String, Object>) c;
    throw new AssertionError(dialect + ".json has no case " + name);
  }

  static String file(String dialect, String name, String ext) {
    return GRAPHS.resolve(dialect).resolve(name + "." + ext).toString();
  }

  static List<Object> calls(Map<String, Object> c) {
    return (List<Object>) c.get("calls");
  }

  static float[][] tensors(Map<String, Object> call, String key) {
    List<Object> ts = (List<Object>) call.get(key);
    float[][] out = new float[ts.size()][];
    for (int i = 0; i < out.length; ++i) out[i] = ParityTest.floats(ts.get(i));
    return out;
  }

  static int batchOf(Map<String, Object> call) {
    return ParityTest.shape(((List<Object>) call.get("inputs")).get(0))[0];
  }

  /** Axis 1 of each input (its timesteps where it has them; ignored by recur otherwise). */
  static int[] timestepsOf(Map<String, Object> call) {
    List<Object> ins = (List<Object>) call.get("inputs");
    int[] t = new int[ins.size()];
    for (int i = 0; i < t.length; ++i) {
      int[] s = ParityTest.shape(ins.get(i));
      t[i] = s.length > 1 ? s[1] : 0;
    }
    return t;
  }

  static long[] shapeOf(Object tensor) {
    return Arrays.stream(ParityTest.shape(tensor)).asLongStream().toArray();
  }

  static void near(float[] want, float[] got, double tol, String what) {
    assertEquals(want.length, got.length, what + ": length");
    for (int i = 0; i < want.length; i++)
      if (!(Math.abs(want[i] - got[i]) <= tol * (1 + Math.abs(want[i]))))
        fail(what + "[" + i + "]: want " + want[i] + ", got " + got[i]);
  }

  static float[] pattern(int n, double phase) {
    float[] v = new float[n];
    for (int i = 0; i < n; ++i) v[i] = (float) Math.sin(i * 0.37 + phase);
    return v;
  }

  /** Runs every call of a case and compares every output with Keras's. */
  static void runCase(Model m, Map<String, Object> c, String what) {
    int k = 0;
    for (Object o : calls(c)) {
      Map<String, Object> call = (Map<String, Object>) o;
      if (Boolean.TRUE.equals(call.get("reset_states_before"))) m.resetStates();
      int batch = batchOf(call);
      int[] ts = timestepsOf(call);
      float[][] got = m.run(tensors(call, "inputs"), batch, ts);
      List<Object> want = (List<Object>) call.get("outputs");
      assertEquals(want.size(), got.length, what + ": number of outputs");
      long[][] dims = m.outputDims(batch, ts);
      for (int i = 0; i < got.length; ++i) {
        assertArrayEquals(shapeOf(want.get(i)), dims[i], what + " call " + k + " output " + i + ": dims");
        near(ParityTest.floats(want.get(i)), got[i], TOL, what + " call " + k + " output " + i);
      }
      ++k;
    }
  }

  @TestFactory
  Stream<DynamicTest> kerasParity() {
    List<DynamicTest> tests = new ArrayList<>();
    for (String dialect : new String[] {"keras2", "keras3", "keras3_jax"})
      for (String name : PARITY_CASES)
        for (String ext : new String[] {"keras", "h5"}) {
          String what = dialect + "/" + name + "." + ext;
          tests.add(DynamicTest.dynamicTest(what, () -> {
            Map<String, Object> c = graphCase(dialect, name);
            try (Model m = Model.open(file(dialect, name, ext))) {
              if (dialect.equals("keras3_jax")) m.setKerasBackend("jax");
              assertEquals(((List<Object>) c.get("input_names")).size(), m.numInputs(), what + ": inputs");
              for (int i = 0; i < m.numInputs(); ++i)
                assertEquals(((List<Object>) c.get("input_names")).get(i), m.input(i).name, what + ": input name");
              assertEquals(Boolean.TRUE.equals(c.get("stateful")), m.isStateful(), what + ": stateful");
              runCase(m, c, what);
            }
          }));
        }
    return tests.stream();
  }

  // ---- opening -------------------------------------------------------------------------------

  @Test
  void openFromMemory() throws Exception {
    String path = file("keras3", "multi_io", "keras");
    byte[] bytes = Files.readAllBytes(Paths.get(path));
    Map<String, Object> call = (Map<String, Object>) calls(graphCase("keras3", "multi_io")).get(0);
    float[][] want;
    try (Model m = Model.open(path)) {
      want = m.run(tensors(call, "inputs"), 3, timestepsOf(call));
    }
    try (Model a = Model.open(bytes);
         Model b = Model.open(bytes, "multi_io.keras");
         Model c = Model.open(new ByteArrayInputStream(bytes));
         Model d = Model.open(new ByteArrayInputStream(bytes), "stream.keras")) {
      ByteBuffer direct = ByteBuffer.allocateDirect(bytes.length + 7);
      direct.position(7);
      direct.put(bytes).position(7);
      try (Model e = Model.open(direct, null)) {
        for (Model m : new Model[] {a, b, c, d, e}) {
          assertEquals(2, m.numInputs());
          float[][] got = m.run(tensors(call, "inputs"), 3, timestepsOf(call));
          for (int i = 0; i < got.length; ++i) assertArrayEquals(want[i], got[i]);
        }
      }
    }
    Arrays.fill(bytes, 0, 4, (byte) 0); // the caller's array was copied: models made from it are unaffected
    // An .h5 image too.
    try (Model h = Model.open(Files.readAllBytes(Paths.get(file("keras3", "multi_io", "h5"))))) {
      assertEquals("probs", h.output(0).name);
    }
  }

  @Test
  void openFromBytesThatAreNotAModel() {
    byte[] junk = "this is not a Keras file".getBytes();
    raises(IoException.class, Recur.ERR_IO, "<memory>", () -> Model.open(junk));
    raises(IoException.class, Recur.ERR_IO, "junk.keras", () -> Model.open(junk, "junk.keras"));
    raises(IoException.class, Recur.ERR_IO, "piped", () -> Model.open(new ByteArrayInputStream(junk), "piped"));
    raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "empty", () -> Model.open(new byte[0]));
    // A truncated file image.
    byte[] whole;
    try {
      whole = Files.readAllBytes(Paths.get(file("keras3", "multi_io", "keras")));
    } catch (java.io.IOException e) {
      throw new AssertionError(e);
    }
    raises(IoException.class, Recur.ERR_IO, "cut.keras", () -> Model.open(Arrays.copyOf(whole, whole.length / 2), "cut.keras"));
    assertThrows(NullPointerException.class, () -> Model.open((byte[]) null));
    assertThrows(NullPointerException.class, () -> Model.open((java.io.InputStream) null));
    assertThrows(IllegalArgumentException.class, () -> Model.open(ByteBuffer.wrap(junk), "heap buffer"));
  }

  // ---- inputs and outputs ----------------------------------------------------------------------

  @Test
  void descriptors() {
    try (Model m = Model.open(file("keras3", "multi_io", "keras"))) {
      assertEquals(2, m.numInputs());
      assertEquals(2, m.numOutputs());
      List<ModelTensor> in = m.inputs(), out = m.outputs();
      assertEquals("seq", in.get(0).name);
      assertArrayEquals(new long[] {-1, 7, 4}, in.get(0).dims());
      assertEquals(3, in.get(0).rank());
      assertEquals(-1, in.get(0).dim(0));
      assertFalse(in.get(0).tokenIds);
      assertEquals("static", in.get(1).name);
      assertArrayEquals(new long[] {-1, 5}, in.get(1).dims());
      assertEquals(1, in.get(1).index);
      assertEquals("probs", out.get(0).name);
      assertArrayEquals(new long[] {-1, 3}, out.get(0).dims());
      assertEquals("value", out.get(1).name);
      assertArrayEquals(new long[] {-1, 2}, out.get(1).dims());
      assertEquals(in.get(0), m.input(0));
      assertEquals("seq (-1, 7, 4)", in.get(0).toString());
      long[] d = in.get(0).dims();
      d[1] = 99; // a copy
      assertEquals(7, m.input(0).dim(1));
      assertThrows(UnsupportedOperationException.class, () -> m.inputs().clear());
      // Which inputs have a timesteps axis, from the C ABI: (B, 7, 4) yes, (B, 5) features no.
      assertTrue(in.get(0).sequence);
      assertTrue(m.isSequence(0));
      assertFalse(in.get(1).sequence);
      assertFalse(m.isSequence(1));
      assertFalse(out.get(0).sequence);
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "index 2 is out of range", () -> m.isSequence(2));
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "index -1", () -> m.isSequence(-1));
      assertEquals(0, m.numStatefulLayers());
      assertTrue(m.statefulLayers().isEmpty());

      int[] ts = {7, 0};
      assertEquals(3 * 7 * 4 + 3 * 5, m.inputsLength(3, ts));
      assertEquals(3 * 3 + 3 * 2, m.outputsLength(3, ts));
      assertArrayEquals(new long[] {3, 3}, m.outputDims(0, 3, ts));
      assertArrayEquals(new long[] {3, 2}, m.outputDims(1, 3, null)); // every length is fixed: no timesteps needed
      assertArrayEquals(new long[][] {{4, 3}, {4, 2}}, m.outputDims(4, ts));

      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "index 2 is out of range", () -> m.input(2));
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "index -1 is out of range", () -> m.output(-1));
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "index 5", () -> m.outputDims(5, 3, ts));
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "num_timesteps", () -> m.outputsLength(3, new int[] {7}));
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "batch", () -> m.inputsLength(0, ts));
    }
    try (Model m = Model.open(file("keras3", "embedding_masked_full_row", "keras"))) {
      ModelTensor ids = m.input(0);
      assertTrue(ids.tokenIds);
      assertArrayEquals(new long[] {-1, -1}, ids.dims());
      assertTrue(ids.sequence, "(B, T) token ids are a sequence");
      assertEquals(3 * 9, m.inputsLength(3, new int[] {9}));
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "timesteps", () -> m.inputsLength(3, new int[] {0}));
    }
    try (Model m = Model.open(CLI_MODELS.resolve("keras3/tokens.keras").toString())) {
      assertTrue(m.input(0).tokenIds);
      assertTrue(m.input(0).sequence);
    }
  }

  @Test
  void runErrors() throws Exception {
    Map<String, Object> call = (Map<String, Object>) calls(graphCase("keras3", "multi_io")).get(0);
    float[][] x = tensors(call, "inputs");
    int[] ts = timestepsOf(call);
    try (Model m = Model.open(file("keras3", "multi_io", "keras"))) {
      raises(ShapeException.class, Recur.ERR_SHAPE, "'static'", () -> m.run(new float[][] {x[0], new float[4]}, 3, ts));
      raises(ShapeException.class, Recur.ERR_SHAPE, "masks", () -> m.run(x, 3, ts, new byte[][] {new byte[5], null}));
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "one per model input",
             () -> m.run(new float[][] {x[0]}, 3, ts));
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "masks", () -> m.run(x, 3, ts, new byte[1][]));
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "num_timesteps", () -> m.run(x, 3, new int[] {7}));
      float[] flat = Buffers.concat(x, 2, "x");
      raises(ShapeException.class, Recur.ERR_SHAPE, "outputs", () -> m.runInputs(flat, 3, ts, null, new float[14]));
      assertThrows(NullPointerException.class, () -> m.run(null, 3, ts));
      assertThrows(NullPointerException.class, () -> m.run(new float[][] {x[0], null}, 3, ts));
      // The flat form and direct buffers give the run's numbers.
      float[] out = new float[m.outputsLength(3, ts)];
      m.runInputs(flat, 3, ts, null, out);
      float[][] split = m.run(x, 3, ts);
      assertArrayEquals(split[0], Arrays.copyOf(out, 9));
      FloatBuffer fin = Buffers.allocate(flat.length), fout = Buffers.allocate(out.length);
      fin.put(flat).flip();
      m.runInputs(fin, 3, ts, null, fout);
      float[] viaBuffers = new float[out.length];
      fout.get(viaBuffers);
      assertArrayEquals(out, viaBuffers);
    }
    try (Model m = Model.open(CLI_MODELS.resolve("keras2/tokens.keras").toString())) {
      float[] ids = new float[3 * 6];
      ids[4] = 20; // Embedding(20, ...)
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "token id 20",
             () -> m.run(new float[][] {ids}, 3, new int[] {6}));
    }
  }

  @Test
  void masks() throws Exception {
    // binone: one (B, T, 3) input and no Masking layer (a Masking layer would replace the mask, as
    // in Keras): an all-ones mask changes nothing, holes change both outputs.
    float[][] x = {pattern(3 * 6 * 3, 0.3)};
    int[] ts = {6};
    try (Model m = Model.open(CLI_MODELS.resolve("keras3/binone.keras").toString())) {
      float[][] plain = m.run(x, 3, ts);
      assertEquals(2, plain.length);
      byte[] ones = new byte[18];
      Arrays.fill(ones, (byte) 1);
      assertArrayEquals(plain[0], m.run(x, 3, ts, new byte[][] {ones})[0]);
      assertArrayEquals(plain[1], m.run(x, 3, ts, new byte[][] {null})[1]);
      byte[] holes = ones.clone();
      holes[2] = 0;
      holes[17] = 0;
      float[][] masked = m.run(x, 3, ts, new byte[][] {holes});
      assertFalse(Arrays.equals(plain[0], masked[0]), "the mask changes the forward output");
      assertFalse(Arrays.equals(plain[1], masked[1]), "the mask changes the backward output");
      raises(ShapeException.class, Recur.ERR_SHAPE, "masks: expected 18", () -> m.run(x, 3, ts, new byte[][] {new byte[17]}));
    }
  }

  // ---- stateful models ------------------------------------------------------------------------

  @Test
  void statefulModel() throws Exception {
    Map<String, Object> c = graphCase("keras3", "stateful_sequential_gru");
    List<Object> cs = calls(c);
    try (Model m = Model.open(file("keras3", "stateful_sequential_gru", "keras"))) {
      assertTrue(m.isStateful());
      // The stateful layers with their states' shapes; the input and output report the fixed batch.
      assertEquals(1, m.numStatefulLayers());
      StatefulLayer gru = m.statefulLayer(0);
      assertEquals(new StatefulLayer(0, "gru", 1, 3, 4), gru);
      assertEquals(m.statesLength("gru"), gru.statesLength());
      assertEquals("gru (1, 3, 4)", gru.toString());
      assertEquals(List.of(gru), m.statefulLayers());
      assertEquals(3, m.input(0).dim(0));
      assertEquals(3, m.output(0).dim(0));
      assertTrue(m.input(0).sequence);
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "index 1 is out of range", () -> m.statefulLayer(1));
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "index -1", () -> m.statefulLayer(-1));
      assertEquals(3 * 4, m.statesLength("gru"));
      assertArrayEquals(new float[12], m.getStates("gru"), "zero before the first call");
      Map<String, Object> first = (Map<String, Object>) cs.get(0), second = (Map<String, Object>) cs.get(1);
      float[][] y1 = m.run(tensors(first, "inputs"), 3, timestepsOf(first));
      float[] after1 = m.getStates("gru");
      assertFalse(Arrays.equals(new float[12], after1), "states after a call");
      float[][] y2 = m.run(tensors(second, "inputs"), 3, timestepsOf(second));
      near(ParityTest.floats(((List<Object>) second.get("outputs")).get(0)), y2[0], TOL, "the second call goes on from the first");
      // Rewind to the states after call 1: call 2 again gives the same numbers.
      m.setStates("gru", after1);
      float[] buf = new float[12];
      m.getStates("gru", buf);
      assertArrayEquals(after1, buf);
      assertArrayEquals(y2[0], m.run(tensors(second, "inputs"), 3, timestepsOf(second))[0]);
      m.resetStates();
      assertArrayEquals(new float[12], m.getStates("gru"));
      assertArrayEquals(y1[0], m.run(tensors(first, "inputs"), 3, timestepsOf(first))[0], "after reset_states: call 1 again");

      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "no layer 'nosuch'", () -> m.getStates("nosuch"));
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "'dense'", () -> m.statesLength("dense"));
      raises(ShapeException.class, Recur.ERR_SHAPE, "got 11", () -> m.setStates("gru", new float[11]));
      raises(ShapeException.class, Recur.ERR_SHAPE, "got 13", () -> m.getStates("gru", new float[13]));
      raises(ShapeException.class, Recur.ERR_SHAPE, "fixed batch of 3", () -> m.run(new float[][] {new float[2 * 4 * 3]}, 2, new int[] {4}));
      assertThrows(NullPointerException.class, () -> m.getStates(null));
      assertThrows(NullPointerException.class, () -> m.setStates("gru", null));
    }
    try (Model m = Model.open(file("keras3", "stateful_functional_lstm_gru", "h5"))) {
      assertTrue(m.isStateful());
      assertEquals(2 * 3 * 4, m.statesLength("lstm"));  // h and c
      assertEquals(3 * 3, m.statesLength("gru"));
      List<StatefulLayer> ls = m.statefulLayers();
      assertEquals(2, ls.size());
      assertEquals(new StatefulLayer(0, "lstm", 2, 3, 4), ls.get(0)); // config order
      assertEquals(new StatefulLayer(1, "gru", 1, 3, 3), ls.get(1));
      for (StatefulLayer l : ls) assertEquals(m.statesLength(l.name), l.statesLength(), l.name);
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "index 2 is out of range", () -> m.statefulLayer(2));
    }
    try (Model m = Model.open(CLI_MODELS.resolve("keras3/bigru.keras").toString())) {
      assertFalse(m.isStateful());
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "not stateful", () -> m.statesLength("bi/forward"));
      assertEquals(0, m.numStatefulLayers());
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "index 0 is out of range", () -> m.statefulLayer(0));
      assertEquals(-1, m.input(0).dim(0)); // not stateful: the batch is given at run time
      m.resetStates(); // nothing to reset: no error
    }
  }

  // ---- Keras backends ---------------------------------------------------------------------------

  @Test
  void kerasBackend() throws Exception {
    // masked_initial_state: rows start with masked steps and the initial states are not zero, so
    // the backends differ (TensorFlow outputs zeros there, JAX the initial state).
    Map<String, Object> tf = (Map<String, Object>) calls(graphCase("keras3", "masked_initial_state")).get(0);
    Map<String, Object> jax = (Map<String, Object>) calls(graphCase("keras3_jax", "masked_initial_state")).get(0);
    float[][] wantTf = tensors(tf, "outputs"), wantJax = tensors(jax, "outputs");
    for (int i = 0; i < wantTf.length; ++i)
      assertFalse(Arrays.equals(wantTf[i], wantJax[i]), "the fixture shows the backends' difference in output " + i);
    try (Model m = Model.open(file("keras3", "masked_initial_state", "keras"))) {
      float[][] got = m.run(tensors(tf, "inputs"), 3, timestepsOf(tf));
      for (int i = 0; i < got.length; ++i) near(wantTf[i], got[i], TOL, "tensorflow (the default), output " + i);
      m.setKerasBackend("jax");
      got = m.run(tensors(jax, "inputs"), 3, timestepsOf(jax));
      for (int i = 0; i < got.length; ++i) near(wantJax[i], got[i], TOL, "jax, output " + i);
      m.setKerasBackend("tensorflow");
      got = m.run(tensors(tf, "inputs"), 3, timestepsOf(tf));
      for (int i = 0; i < got.length; ++i) near(wantTf[i], got[i], TOL, "tensorflow again, output " + i);
      for (String bad : new String[] {"torch", "numpy", "JAX", ""})
        raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "\"tensorflow\" or \"jax\"", () -> m.setKerasBackend(bad));
      assertThrows(NullPointerException.class, () -> m.setKerasBackend(null));
    }
    try (Model m = Model.open(CLI_MODELS.resolve("keras2/bigru.keras").toString())) {
      raises(UnsupportedException.class, Recur.ERR_UNSUPPORTED, "Keras 2", () -> m.setKerasBackend("jax"));
      m.setKerasBackend("tensorflow");
    }
    // One layer: a masked head outputs zeros under TensorFlow and the initial state under JAX.
    try (Model m = Model.open(CLI_MODELS.resolve("keras3/tokens.keras").toString());
         Layer gru = m.getLayer("gru")) {
      int f = gru.info().inputSize, u = gru.info().units;
      float[] x = pattern(2 * 3 * f, 0.5);
      byte[] mask = {0, 1, 1, 1, 1, 1};
      float[] h0 = pattern(2 * u, 1.5);
      float[] tfOut = new float[gru.outputLength(2, 3)], jaxOut = new float[tfOut.length];
      gru.forward(x, 2, 3, mask, h0, 1, false, tfOut, null);
      gru.setKerasBackend("jax");
      gru.forward(x, 2, 3, mask, h0, 1, false, jaxOut, null);
      assertTrue(gru.info().returnSequences);
      for (int k = 0; k < u; ++k) {
        assertEquals(0f, tfOut[k], "tensorflow: a masked first step outputs 0");
        assertEquals(h0[k], jaxOut[k], "jax: a masked first step outputs the initial state");
      }
      assertArrayEquals(Arrays.copyOfRange(tfOut, u, 3 * u), Arrays.copyOfRange(jaxOut, u, 3 * u), "the valid steps agree");
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "got \"mxnet\"", () -> gru.setKerasBackend("mxnet"));
    }
    try (Model m = Model.open(CLI_MODELS.resolve("keras2/tokens.keras").toString()); Layer gru = m.getLayer("gru")) {
      raises(UnsupportedException.class, Recur.ERR_UNSUPPORTED, "Keras 2", () -> gru.setKerasBackend("jax"));
    }
  }

  // ---- streams -------------------------------------------------------------------------------

  /** inputs[i][b, t0:t0+n, ...] of the sequence inputs, the whole of the others. */
  static float[][] chunk(float[][] inputs, long[][] dims, boolean[] sequence, int t0, int n) {
    float[][] out = new float[inputs.length][];
    for (int i = 0; i < inputs.length; ++i) {
      if (!sequence[i]) {
        out[i] = inputs[i];
        continue;
      }
      int b = (int) dims[i][0], t = (int) dims[i][1], rest = inputs[i].length / (b * t);
      out[i] = new float[b * n * rest];
      for (int r = 0; r < b; ++r)
        System.arraycopy(inputs[i], (r * t + t0) * rest, out[i], r * n * rest, n * rest);
    }
    return out;
  }

  /** Steps a case's first call through a ModelState chunk timesteps at a time; returns the outputs as run gives them. */
  static float[][] streamed(Model m, Map<String, Object> call, int chunk) {
    float[][] x = tensors(call, "inputs");
    List<Object> ins = (List<Object>) call.get("inputs");
    int batch = batchOf(call);
    long[][] dims = new long[x.length][];
    boolean[] seq = new boolean[x.length];
    int T = 0;
    for (int i = 0; i < x.length; ++i) {
      dims[i] = shapeOf(ins.get(i));
      seq[i] = m.input(i).sequence;
      if (seq[i]) T = (int) dims[i][1];
    }
    long[][] full = m.outputDims(batch, timestepsOf(call));
    float[][] out = new float[full.length][];
    for (int i = 0; i < out.length; ++i) out[i] = new float[(int) Buffers.product(full[i])];
    try (ModelState s = new ModelState(m, batch)) {
      assertEquals(batch, s.batch());
      for (int t0 = 0; t0 < T; t0 += chunk) {
        int n = Math.min(chunk, T - t0);
        float[][] y = s.step(chunk(x, dims, seq, t0, n), n);
        long[][] yd = s.outputDims(n);
        for (int i = 0; i < y.length; ++i) {
          if (yd[i].length >= 3) { // a sequence output: these steps
            int rest = y[i].length / (batch * n);
            for (int r = 0; r < batch; ++r)
              System.arraycopy(y[i], r * n * rest, out[i], (r * (int) full[i][1] + t0) * rest, n * rest);
          } else {
            out[i] = y[i]; // as it stands after these steps
          }
        }
      }
    }
    return out;
  }

  @Test
  void streamsEqualRuns() throws Exception {
    for (String name : new String[] {"multi_io", "masking_sequential", "embedding_masked_full_row", "branches_concat"})
      for (int chunk : new int[] {1, 2, 7}) {
        Map<String, Object> call = (Map<String, Object>) calls(graphCase("keras3", name)).get(0);
        try (Model m = Model.open(file("keras3", name, "keras"))) {
          assertEquals("", m.streamable(), name);
          assertTrue(m.canStream());
          float[][] whole = m.run(tensors(call, "inputs"), batchOf(call), timestepsOf(call));
          float[][] pieces = streamed(m, call, chunk);
          for (int i = 0; i < whole.length; ++i) near(whole[i], pieces[i], 1e-6, name + " chunk " + chunk + " output " + i);
          List<Object> want = (List<Object>) call.get("outputs");
          for (int i = 0; i < whole.length; ++i) near(ParityTest.floats(want.get(i)), pieces[i], TOL, name + ": Keras");
        }
      }
  }

  @Test
  void modelStateApi() throws Exception {
    Map<String, Object> call = (Map<String, Object>) calls(graphCase("keras3", "multi_io")).get(0);
    float[][] x = tensors(call, "inputs");
    Model m = Model.open(file("keras3", "multi_io", "keras"));
    ModelState s = new ModelState(m, 3);
    assertEquals(3 * 2 * 4 + 3 * 5, s.inputsLength(2));
    assertEquals(3 * 3 + 3 * 2, s.outputsLength(2));
    assertArrayEquals(new long[][] {{3, 3}, {3, 2}}, s.outputDims(2));
    assertArrayEquals(new long[] {3, 2}, s.outputDims(1, 5));
    raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "index 2 is out of range", () -> s.outputDims(2, 1));
    raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "index -1", () -> s.outputDims(-1, 1));
    raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "timesteps", () -> s.outputDims(0, 0));
    float[] in = new float[s.inputsLength(1)], out = new float[s.outputsLength(1)];
    System.arraycopy(pattern(12, 0.1), 0, in, 0, 12);
    s.step(in, 1, null, out);
    float[] first = out.clone();
    s.step(in, 1, null, out);
    assertFalse(Arrays.equals(first, out), "the stream carries its state");
    s.reset();
    s.step(in, 1, null, out);
    assertArrayEquals(first, out, "reset starts a new stream");
    byte[] ones = {1, 1, 1};
    s.reset();
    float[][] split = s.step(new float[][] {Arrays.copyOf(in, 12), Arrays.copyOfRange(in, 12, 27)}, 1, new byte[][] {ones, null});
    assertArrayEquals(Arrays.copyOf(first, 9), split[0]);
    FloatBuffer fin = Buffers.allocate(in.length), fout = Buffers.allocate(out.length);
    fin.put(in).flip();
    s.reset();
    s.step(fin, 1, null, fout);
    float[] viaBuffers = new float[out.length];
    fout.get(viaBuffers);
    assertArrayEquals(first, viaBuffers);

    raises(ShapeException.class, Recur.ERR_SHAPE, "inputs", () -> s.step(new float[in.length - 1], 1, null, out));
    raises(ShapeException.class, Recur.ERR_SHAPE, "masks", () -> s.step(in, 1, new byte[2], out));
    raises(ShapeException.class, Recur.ERR_SHAPE, null, () -> s.step(in, 1, null, new float[out.length + 1]));
    raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "timesteps", () -> s.step(in, 0, null, out));
    raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "timesteps", () -> s.inputsLength(0));
    raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "one per model input", () -> s.step(new float[][] {in}, 1));
    raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "batch", () -> new ModelState(m, 0));
    assertThrows(NullPointerException.class, () -> new ModelState(null, 1));

    // A state outlives its model.
    m.close();
    s.reset();
    s.step(in, 1, null, out);
    assertArrayEquals(first, out);
    assertThrows(ClosedException.class, () -> new ModelState(m, 1));
    s.close();
    s.close();
    assertTrue(s.isClosed());
    assertThrows(ClosedException.class, s::reset);
    assertThrows(ClosedException.class, () -> s.step(in, 1, null, out));
    assertThrows(ClosedException.class, () -> s.step(x, 1));
    assertThrows(ClosedException.class, () -> s.inputsLength(1));
    assertThrows(ClosedException.class, s::batch);
    assertThrows(ClosedException.class, () -> s.outputDims(0, 1));
    assertThrows(ClosedException.class, () -> s.outputDims(1));
  }

  @Test
  void modelsThatDoNotStream() {
    try (Model m = Model.open(CLI_MODELS.resolve("keras3/bigru.keras").toString())) {
      String why = m.streamable();
      assertTrue(why.contains("'bi'") && why.contains("Bidirectional"), why);
      assertFalse(m.canStream());
      raises(UnsupportedException.class, Recur.ERR_UNSUPPORTED, "layer 'bi' (Bidirectional)", () -> new ModelState(m, 1));
    }
    try (Model m = Model.open(file("keras3", "seq2seq_initial_state", "keras"))) {
      assertTrue(m.streamable().contains("initial_state"), m.streamable());
      raises(UnsupportedException.class, Recur.ERR_UNSUPPORTED, "'lstm_1'", () -> new ModelState(m, 3));
    }
    // A stateful model streams with its fixed batch only.
    try (Model m = Model.open(file("keras3", "stateful_sequential_gru", "keras"))) {
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "fixed batch of 3", () -> new ModelState(m, 2));
      try (ModelState s = new ModelState(m, 3)) {
        assertEquals(3 * 2 * 2, s.outputsLength(2));
        // (3, T, 2) sequence output: a step's dims hold its timesteps.
        assertArrayEquals(new long[] {3, 2, 2}, s.outputDims(0, 2));
        assertArrayEquals(new long[] {3, 5, 2}, s.outputDims(0, 5));
      }
    }
  }

  @Test
  void closedModel() {
    Model m = Model.open(file("keras3", "multi_io", "keras"));
    m.close();
    for (org.junit.jupiter.api.function.Executable e : new org.junit.jupiter.api.function.Executable[] {
             m::numInputs, m::numOutputs, () -> m.input(0), () -> m.output(0), m::inputs, m::isStateful, m::resetStates,
             () -> m.isSequence(0), m::numStatefulLayers, () -> m.statefulLayer(0), m::statefulLayers,
             () -> m.statesLength("gru"), () -> m.setKerasBackend("jax"), m::streamable,
             () -> m.outputDims(0, 1, null), () -> m.run(new float[][] {new float[28], new float[5]}, 1, null),
             () -> m.runInputs(new float[33], 1, null, null, new float[5])})
      assertThrows(ClosedException.class, e);
  }
}
