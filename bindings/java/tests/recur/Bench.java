// SPDX-License-Identifier: Apache-2.0
package recur;

import java.lang.management.ManagementFactory;
import java.nio.FloatBuffer;

/**
 * One streaming step (batch 1, T=1, input size = units) through the binding against the same step
 * through the C ABI in the same process (Recur.cStepNs). Prints ns per call, the overhead and the Java
 * heap bytes allocated per call; asserts nothing about timings.
 */
public final class Bench {
  static long allocated() {
    java.lang.management.ThreadMXBean b = ManagementFactory.getThreadMXBean();
    if (b instanceof com.sun.management.ThreadMXBean)
      return ((com.sun.management.ThreadMXBean) b).getThreadAllocatedBytes(Thread.currentThread().getId());
    return -1;
  }

  public static void main(String[] args) {
    System.out.println("recur " + Recur.bindingVersion() + " Java binding benchmark: one streaming step, batch 1, T=1 (best of 5 rounds)");
    System.out.printf("%-6s %-5s %10s %14s %12s %12s %10s %10s%n", "layer", "units", "C ns", "FloatBuffer ns", "float[] ns",
        "ovh buf ns", "ovh arr ns", "B/call");
    for (String type : new String[] {"GRU", "LSTM"}) {
      for (int units : new int[] {64, 256}) {
        int iters = units == 64 ? 20_000 : 2_000;
        try (LayerOptions o = LayerOptions.of(type.equals("GRU") ? Recur.LAYER_GRU : Recur.LAYER_LSTM, units, units)) {
          o.setSeed(1);
          try (Layer l = Layer.create(o); State s = new State(l, 1)) {
            FloatBuffer in = Buffers.allocate(units), out = Buffers.allocate(units);
            float[] ia = new float[units], oa = new float[units];
            for (int j = 0; j < units; j++) {
              in.put(j, (float) Math.sin(j));
              ia[j] = (float) Math.sin(j);
            }
            double bestC = Double.MAX_VALUE, bestB = Double.MAX_VALUE, bestA = Double.MAX_VALUE;
            long bytes = 0;
            for (int round = 0; round < 6; round++) { // round 0 warms up (JIT)
              double c = Recur.cStepNs(l, s, in, out, iters);
              long a0 = allocated();
              long t0 = System.nanoTime();
              for (int i = 0; i < iters; i++) l.forwardState(s, in, out);
              long t1 = System.nanoTime();
              long a1 = allocated();
              for (int i = 0; i < iters; i++) l.forwardState(s, ia, oa);
              long t2 = System.nanoTime();
              if (round == 0) continue;
              bestC = Math.min(bestC, c);
              bestB = Math.min(bestB, (t1 - t0) / (double) iters);
              bestA = Math.min(bestA, (t2 - t1) / (double) iters);
              bytes = a1 - a0;
            }
            System.out.printf("%-6s %-5d %10.1f %14.1f %12.1f %12.1f %10.1f %10.2f%n", type, units, bestC, bestB, bestA,
                bestB - bestC, bestA - bestC, bytes / (double) iters);
          }
        }
      }
    }
    System.out.println("benchmark finished");
  }
}
