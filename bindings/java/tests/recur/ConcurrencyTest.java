// SPDX-License-Identifier: Apache-2.0
package recur;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** Many states on one layer from many threads: the results equal a serial run. */
class ConcurrencyTest {
  static final int STREAMS = 32, STEPS = 200, F = 8, U = 16;

  static float input(int stream, int t, int j) {
    return (float) Math.sin(0.1 * stream + 0.37 * t + 0.91 * j);
  }

  static float[] run(Layer l, int stream, boolean buffers) {
    float[] all = new float[STEPS * U];
    try (State s = new State(l, 1)) {
      if (buffers) {
        FloatBuffer in = Buffers.allocate(F), out = Buffers.allocate(U);
        for (int t = 0; t < STEPS; t++) {
          for (int j = 0; j < F; j++) in.put(j, input(stream, t, j));
          l.forwardState(s, in, out);
          out.get(all, t * U, U);
          out.clear();
        }
      } else {
        float[] in = new float[F], out = new float[U];
        for (int t = 0; t < STEPS; t++) {
          for (int j = 0; j < F; j++) in[j] = input(stream, t, j);
          l.forwardState(s, in, out);
          System.arraycopy(out, 0, all, t * U, U);
        }
      }
    }
    return all;
  }

  @Test
  void manyStatesOneLayer() throws Exception {
    try (LayerOptions o = LayerOptions.of(Recur.LAYER_LSTM, U, F)) {
      o.setSeed(42);
      try (Layer l = Layer.create(o)) {
        float[][] serial = new float[STREAMS][];
        for (int i = 0; i < STREAMS; i++) serial[i] = run(l, i, false);
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
          List<Future<float[]>> fs = new ArrayList<>();
          for (int i = 0; i < STREAMS; i++) {
            final int stream = i;
            fs.add(pool.submit(() -> run(l, stream, stream % 2 == 0)));
          }
          for (int i = 0; i < STREAMS; i++) assertArrayEquals(serial[i], fs.get(i).get(), "stream " + i);
        } finally {
          pool.shutdown();
        }
      }
    }
  }

  @Test
  void errorsStayOnTheirThread() throws Exception {
    // Each thread gets its own failure's message (recur_last_error is read in the same native call).
    try (Layer l = Layer.fromJson("{\"class_name\": \"GRU\", \"config\": {\"units\": 3}}", 2, 0, null)) {
      ExecutorService pool = Executors.newFixedThreadPool(4);
      try {
        List<Future<String>> fs = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
          final int n = i % 2 == 0 ? 5 : 7;
          fs.add(pool.submit(() -> {
            try {
              l.forward(new float[n], 1, 2);
              return "no error";
            } catch (ShapeException e) {
              return e.getMessage();
            }
          }));
        }
        for (int i = 0; i < fs.size(); i++)
          assertTrue(fs.get(i).get().contains(i % 2 == 0 ? "5" : "7"), fs.get(i).get());
      } finally {
        pool.shutdown();
      }
    }
  }
}
