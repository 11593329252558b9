// SPDX-License-Identifier: Apache-2.0
package recur;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.nio.file.Paths;
import org.junit.jupiter.api.Test;

/** Devices: "cpu" and "auto" always run; "cuda" runs when a GPU backend can (else fails cleanly). */
class DeviceTest {
  static final float GPU_TOLERANCE = 1e-5f;
  /** A batched step rounds like a batch of all its rows, so it matches per-state steps to float rounding. */
  static final float BATCH_ROUNDING = 1e-6f;
  static final String[] BAD = {"gpu", "cuda:-1", "cuda:x", "CUDA", "", "cuda:"};

  static Layer layer(int type) {
    try (LayerOptions o = LayerOptions.of(type, 5, 3)) {
      o.setReturnSequences(1);
      o.setSeed(11);
      return Layer.create(o);
    }
  }

  static float[] data(int n, double phase) {
    float[] v = new float[n];
    for (int i = 0; i < n; i++) v[i] = (float) (0.8 * Math.sin(0.37 * i + phase));
    return v;
  }

  static float maxDiff(float[] a, float[] b) {
    assertEquals(a.length, b.length);
    float d = 0;
    for (int i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i] - b[i]));
    return d;
  }

  static boolean gpu() {
    return Recur.deviceCount() > 0;
  }

  static boolean namesWhatIsMissing(String message) {
    for (String part : new String[] {"plugin", "driver", "GPU", "cuDNN"})
      if (message.contains(part)) return true;
    return false;
  }

  @Test
  void libraryCalls() {
    assertTrue(Recur.deviceCount() >= 0);
    Recur.checkDevice("cpu");
    Recur.checkDevice("auto");
    for (String bad : BAD)
      ErrorTest.raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "\"cuda:N\"",
          () -> Recur.checkDevice(bad));
    assertThrows(NullPointerException.class, () -> Recur.checkDevice(null));
    if (gpu()) {
      Recur.checkDevice("cuda");
    } else {
      UnsupportedException e = ErrorTest.raises(UnsupportedException.class, Recur.ERR_UNSUPPORTED, "cuda:0",
          () -> Recur.checkDevice("cuda"));
      assertTrue(namesWhatIsMissing(e.getMessage()), e.getMessage());
    }
  }

  @Test
  void layerDevices() {
    try (Layer l = layer(Recur.LAYER_GRU)) {
      DeviceInfo d = l.device();
      assertEquals("cpu", d.requested);
      assertEquals("cpu", d.backend);
      assertEquals("cpu", d.path);
      assertEquals("", d.deviceName);
      assertFalse(d.reason.isEmpty());

      float[] x = data(2 * 4 * 3, 0);
      byte[] mask = {1, 1, 0, 1, 1, 0, 1, 1};
      float[] cpu = l.forward(x, 2, 4, mask);
      l.setDevice("cpu");
      assertArrayEquals(cpu, l.forward(x, 2, 4, mask));

      l.setDevice("auto");
      d = l.device();
      assertEquals("auto", d.requested);
      if (gpu()) {
        assertEquals("cuda:0", d.backend);
        assertTrue(maxDiff(cpu, l.forward(x, 2, 4, mask)) <= GPU_TOLERANCE);
      } else {
        assertEquals("cpu", d.backend);
        assertTrue(namesWhatIsMissing(d.reason), d.reason);
        assertArrayEquals(cpu, l.forward(x, 2, 4, mask));
      }

      l.setDevice("cpu");
      if (gpu()) {
        l.setDevice("cuda");
        d = l.device();
        assertEquals("cuda:0", d.backend);
        assertFalse(d.deviceName.isEmpty());
        assertTrue(maxDiff(cpu, l.forward(x, 2, 4, mask)) <= GPU_TOLERANCE, d.toString());
      } else {
        UnsupportedException e = ErrorTest.raises(UnsupportedException.class, Recur.ERR_UNSUPPORTED, "cuda:0",
            () -> l.setDevice("cuda"));
        assertTrue(namesWhatIsMissing(e.getMessage()), e.getMessage());
        assertEquals("cpu", l.device().backend);  // stays usable where it was
        assertArrayEquals(cpu, l.forward(x, 2, 4, mask));
      }

      for (String bad : BAD)
        ErrorTest.raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "recur_layer_set_device",
            () -> l.setDevice(bad));
      assertThrows(NullPointerException.class, () -> l.setDevice(null));
      if (!gpu())
        ErrorTest.raises(StateException.class, Recur.ERR_STATE, "recur_layer_set_device",
            () -> l.forwardDevice(0, 0, 1, 1, null, 0, 0, 0, 0));
    }
    Layer closed = layer(Recur.LAYER_GRU);
    closed.close();
    assertThrows(ClosedException.class, closed::device);
    assertThrows(ClosedException.class, () -> closed.setDevice("cpu"));
  }

  @Test
  void forwardStatesEqualsForwardState() {
    for (int type : new int[] {Recur.LAYER_GRU, Recur.LAYER_LSTM}) {
      try (Layer l = layer(type)) {
        if (gpu()) l.setDevice("cuda");
        int[] batches = {1, 3, 2};
        State[] batched = new State[batches.length], single = new State[batches.length];
        int rows = 0;
        for (int i = 0; i < batches.length; i++) {
          batched[i] = new State(l, batches[i]);
          single[i] = new State(l, batches[i]);
          rows += batches[i];
        }
        try {
          for (int step = 0; step < 3; step++) {
            float[] x = data(rows * 3, step);
            byte[] mask = new byte[rows];
            for (int r = 0; r < rows; r++) mask[r] = (byte) ((r + step) % 4 == 2 ? 0 : 1);
            float[] got = new float[rows * 5], want = new float[rows * 5];
            if (step % 2 == 0) {
              l.forwardStates(batched, x, mask, got);
            } else {  // the direct-buffer overload
              FloatBuffer in = Buffers.allocate(x.length).put(x), out = Buffers.allocate(got.length);
              in.flip();
              ByteBuffer m = ByteBuffer.allocateDirect(mask.length).put(mask);
              m.flip();
              l.forwardStates(batched, in, m, out);
              out.get(got);
            }
            int row = 0;
            for (int i = 0; i < batches.length; i++) {
              float[] xi = java.util.Arrays.copyOfRange(x, row * 3, (row + batches[i]) * 3);
              byte[] mi = java.util.Arrays.copyOfRange(mask, row, row + batches[i]);
              float[] yi = new float[batches[i] * 5];
              l.forwardState(single[i], xi, 1, mi, yi);
              System.arraycopy(yi, 0, want, row * 5, yi.length);
              row += batches[i];
            }
            assertTrue(maxDiff(want, got) <= (gpu() ? GPU_TOLERANCE : BATCH_ROUNDING), "step " + step);
          }
          for (int i = 0; i < batches.length; i++) {
            assertTrue(maxDiff(single[i].get(), batched[i].get()) <= (gpu() ? GPU_TOLERANCE : BATCH_ROUNDING));
            assertEquals(gpu() ? "device-resident" : "cpu", batched[i].device().path);
          }
          float[] y = new float[rows * 5], shortY = new float[rows * 5 - 1];
          float[] x = new float[rows * 3];
          ErrorTest.raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "same state",
              () -> l.forwardStates(new State[] {batched[0], batched[1], batched[0]}, x, null, y));
          ErrorTest.raises(ShapeException.class, Recur.ERR_SHAPE, null,
              () -> l.forwardStates(batched, x, null, shortY));
          ErrorTest.raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "num_states",
              () -> l.forwardStates(new State[0], x, null, y));
          assertThrows(NullPointerException.class, () -> l.forwardStates(null, x, null, y));
          assertThrows(NullPointerException.class, () -> l.forwardStates(new State[] {batched[0], null}, x, null, y));
          single[0].close();
          assertThrows(ClosedException.class, () -> l.forwardStates(new State[] {single[0]}, x, null, y));
        } finally {
          for (int i = 0; i < batches.length; i++) {
            batched[i].close();
            single[i].close();
          }
        }
      }
    }
  }

  /** sun.misc.Unsafe, for native memory standing in for device memory on the GPU emulator. */
  static sun.misc.Unsafe unsafe() throws ReflectiveOperationException {
    java.lang.reflect.Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
    f.setAccessible(true);
    return (sun.misc.Unsafe) f.get(null);
  }

  /** Why forwardStatesDevice's numbers cannot be checked on this layer, or "" when they can. */
  static String whyNoDeviceMemory(Layer l) {
    String name = l.device().deviceName;
    return name.startsWith("recur GPU emulator") ? ""
        : "device memory needs a CUDA library in the test; the GPU is " + name;
  }

  @Test
  void forwardStatesDeviceOnTheCpuSaysSetDevice() {
    try (Layer l = layer(Recur.LAYER_GRU); State s = new State(l, 1)) {
      // Refused before any pointer is looked at: the layer must be moved to a GPU first.
      ErrorTest.raises(StateException.class, Recur.ERR_STATE, "recur_layer_set_device",
          () -> l.forwardStatesDevice(0, new State[] {s}, 0, null, 0));
      assertThrows(NullPointerException.class, () -> l.forwardStatesDevice(0, null, 0, null, 0));
    }
  }

  @Test
  void forwardStatesDeviceEqualsForwardStates() throws ReflectiveOperationException {
    if (!gpu()) {
      System.out.println("forwardStatesDeviceEqualsForwardStates: skipped, no GPU (run by java_device_gpu_emulator)");
      return;
    }
    for (int type : new int[] {Recur.LAYER_GRU, Recur.LAYER_LSTM}) {
      try (Layer l = layer(type)) {
        l.setDevice("cuda");
        int[] batches = {1, 3, 2};
        State[] host = new State[batches.length], dev = new State[batches.length];
        int rows = 0;
        for (int i = 0; i < batches.length; i++) {
          host[i] = new State(l, batches[i]);
          dev[i] = new State(l, batches[i]);
          rows += batches[i];
        }
        try {
          ErrorTest.raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "d_input",
              () -> l.forwardStatesDevice(0, dev, 0, null, 8));
          ErrorTest.raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "same state",
              () -> l.forwardStatesDevice(0, new State[] {dev[0], dev[1], dev[0]}, 8, null, 8));
          String why = whyNoDeviceMemory(l);
          if (!why.isEmpty()) {
            System.out.println("forwardStatesDeviceEqualsForwardStates: numbers not checked, " + why);
            continue;
          }
          // The GPU emulator keeps device memory on the host, so native memory stands in for it.
          sun.misc.Unsafe u = unsafe();
          long dx = u.allocateMemory(4L * rows * 3), dy = u.allocateMemory(4L * rows * 5);
          try {
            for (int step = 0; step < 3; step++) {
              float[] x = data(rows * 3, step);
              byte[] mask = new byte[rows];
              for (int r = 0; r < rows; r++) mask[r] = (byte) ((r + step) % 3 == 1 ? 0 : 1);
              for (int k = 0; k < x.length; k++) u.putFloat(dx + 4L * k, x[k]);
              float[] want = new float[rows * 5], got = new float[rows * 5];
              l.forwardStates(host, x, mask, want);
              l.forwardStatesDevice(0, dev, dx, mask, dy);
              for (int k = 0; k < got.length; k++) got[k] = u.getFloat(dy + 4L * k);
              assertArrayEquals(want, got, "step " + step);
            }
          } finally {
            u.freeMemory(dx);
            u.freeMemory(dy);
          }
          for (int i = 0; i < batches.length; i++) assertArrayEquals(host[i].get(), dev[i].get(), "state " + i);
        } finally {
          for (int i = 0; i < batches.length; i++) {
            host[i].close();
            dev[i].close();
          }
        }
      }
    }
  }

  // ---- CPU threads and kernels ----------------------------------------------------------------

  /** Big enough per timestep that a call is split between threads (small calls stay on one). */
  static Layer bigLayer(int type) {
    try (LayerOptions o = LayerOptions.of(type, 128, 64)) {
      o.setReturnSequences(1);
      o.setSeed(23);
      return Layer.create(o);
    }
  }

  @Test
  void cpuKernels() {
    String k = Recur.cpuKernels();
    assertTrue(java.util.Set.of("avx512", "avx2", "baseline").contains(k), k);
    assertEquals(k, Recur.cpuKernels());
  }

  @Test
  void layerNumThreads() {
    try (Layer l = layer(Recur.LAYER_GRU)) {
      assertEquals(1, l.getNumThreads());
      l.setNumThreads(2);
      assertEquals(2, l.getNumThreads());
      l.setNumThreads(0);
      assertEquals(0, l.getNumThreads());  // one per core, reported as set
      l.setNumThreads(1024);
      assertEquals(1024, l.getNumThreads());
      for (int bad : new int[] {-1, 1025, Integer.MIN_VALUE})
        ErrorTest.raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "num_threads",
            () -> l.setNumThreads(bad));
    }
    Layer closed = layer(Recur.LAYER_GRU);
    closed.close();
    assertThrows(ClosedException.class, closed::getNumThreads);
    assertThrows(ClosedException.class, () -> closed.setNumThreads(2));
  }

  @Test
  void threadsGiveBitwiseTheSameNumbers() {
    final int batch = 16, steps = 12, features = 64;
    for (int type : new int[] {Recur.LAYER_GRU, Recur.LAYER_LSTM}) {
      try (Layer l = bigLayer(type)) {
        float[] x = data(batch * steps * features, 0.5);
        byte[] mask = new byte[batch * steps];
        for (int i = 0; i < mask.length; i++) mask[i] = (byte) (i % 7 == 6 ? 0 : 1);
        float[] one = l.forward(x, batch, steps, mask);
        float[] streamedOne = new float[one.length];
        try (State s = new State(l, batch)) {
          l.forwardState(s, x, steps, mask, streamedOne);
        }
        for (int threads : new int[] {2, 0}) {
          l.setNumThreads(threads);
          assertArrayEquals(one, l.forward(x, batch, steps, mask), "threads " + threads);
          float[] streamed = new float[one.length];
          try (State s = new State(l, batch)) {
            l.forwardState(s, x, steps, mask, streamed);
          }
          assertArrayEquals(streamedOne, streamed, "forwardState, threads " + threads);
        }
      }
    }
  }

  @Test
  void modelNumThreads() {
    String path = Paths.get(System.getProperty("recur.models", "examples/models"), "sentiment_keras3.keras").toString();
    try (Model m = Model.open(path)) {
      assertEquals(1, m.getNumThreads());
      float[] ids = new float[4 * 10];
      for (int i = 0; i < ids.length; i++) ids[i] = (i * 7) % 19 + 1;
      float[] one = m.run(ids, 4, 10);
      m.setNumThreads(2);
      assertEquals(2, m.getNumThreads());
      assertArrayEquals(one, m.run(ids, 4, 10));
      for (int i = 0; i < m.info().numLayers; i++)
        if (m.layer(i).recurrent)
          try (Layer l = m.getLayer(m.layer(i).name)) {
            assertEquals(2, l.getNumThreads());  // layers taken afterwards get the count too
          }
      m.setNumThreads(0);
      assertEquals(0, m.getNumThreads());
      assertArrayEquals(one, m.run(ids, 4, 10));
      for (int bad : new int[] {-1, 1025})
        ErrorTest.raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "num_threads",
            () -> m.setNumThreads(bad));
      m.close();
      assertThrows(ClosedException.class, m::getNumThreads);
      assertThrows(ClosedException.class, () -> m.setNumThreads(1));
    }
  }

  @Test
  void modelDevices() {
    String path = Paths.get(System.getProperty("recur.models", "examples/models"), "sentiment_keras3.keras").toString();
    try (Model m = Model.open(path)) {
      float[] ids = new float[2 * 10];
      for (int i = 0; i < ids.length; i++) ids[i] = (i * 7) % 19 + 1;
      float[] cpu = m.run(ids, 2, 10);
      assertEquals("cpu", m.device().backend);
      m.setDevice("cpu");
      assertArrayEquals(cpu, m.run(ids, 2, 10));
      m.setDevice("auto");
      DeviceInfo d = m.device();
      assertEquals("auto", d.requested);
      // Every layer of this model has a GPU kernel: each goes where the model goes.
      for (int i = 0; i < m.info().numLayers; i++) assertEquals(d.backend, m.device(i).backend);
      if (gpu())
        assertTrue(maxDiff(cpu, m.run(ids, 2, 10)) <= GPU_TOLERANCE);
      else
        assertArrayEquals(cpu, m.run(ids, 2, 10));
      ErrorTest.raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "layer_index", () -> m.device(-2));
      ErrorTest.raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "recur_model_set_device",
          () -> m.setDevice("gpu"));
      if (!gpu())
        ErrorTest.raises(UnsupportedException.class, Recur.ERR_UNSUPPORTED, "cuda:0", () -> m.setDevice("cuda"));
    }
  }

  @Test
  void precision() {
    try (Layer l = layer(Recur.LAYER_GRU)) {
      assertEquals("float32", l.getPrecision());
      float[] x = data(2 * 4 * 3, 0.3);
      float[] f32 = l.forward(x, 2, 4, null);
      for (String p : new String[] {"bf16", "int8"}) {
        l.setPrecision(p);
        assertEquals(p, l.getPrecision());
        float[] y = l.forward(x, 2, 4, null);
        float d = maxDiff(f32, y);
        assertTrue(d > 0 && d < 0.05f, p + ": " + d);
      }
      l.setPrecision("float32");
      assertArrayEquals(f32, l.forward(x, 2, 4, null));
      ErrorTest.raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "\"bf16\" or \"int8\"",
          () -> l.setPrecision("fp16"));
    }
    String path = Paths.get(System.getProperty("recur.models", "examples/models"), "sentiment_keras3.keras").toString();
    try (Model m = Model.open(path)) {
      assertEquals("float32", m.getPrecision());
      m.setPrecision("int8");
      assertEquals("int8", m.getPrecision());
      ErrorTest.raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "unknown precision",
          () -> m.setPrecision("int4"));
      if (gpu())
        ErrorTest.raises(UnsupportedException.class, Recur.ERR_UNSUPPORTED, "float32 only", () -> m.setDevice("cuda"));
    }
  }
}
