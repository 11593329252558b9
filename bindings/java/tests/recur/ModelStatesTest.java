// SPDX-License-Identifier: Apache-2.0
package recur;

import static org.junit.jupiter.api.Assertions.*;
import static recur.ErrorTest.raises;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Model.stepStates: many model states stepped in one call give the numbers of stepping each alone. */
class ModelStatesTest {
  @Test
  void manyStatesInOneCallMatchStepsOneByOne() {
    try (Model m = NamedRunTest.multiIo()) {
      int[] batches = {2, 1, 3};
      List<ModelState> alone = new ArrayList<>(), together = new ArrayList<>();
      for (int b : batches) {
        alone.add(new ModelState(m, b));
        together.add(new ModelState(m, b));
      }
      int seed = 0;
      for (int call = 0; call < 4; ++call) {
        int t = 1 + call % 2;
        Map<String, float[]> want = new LinkedHashMap<>();
        float[] seqAll = new float[0], statAll = new float[0];
        byte[] maskAll = new byte[0];
        for (int s = 0; s < batches.length; ++s) {
          int b = batches[s];
          float[] seq = NamedRunTest.ramp(b * t * 4 + seed, 0.9f);
          seq = Arrays.copyOfRange(seq, seed, seq.length);
          float[] stat = NamedRunTest.ramp(b * 5 + seed + 3, 0.7f);
          stat = Arrays.copyOfRange(stat, seed + 3, stat.length);
          byte[] mask = new byte[b * t];
          for (int i = 0; i < mask.length; ++i) mask[i] = (byte) ((seed + i) % 3 != 0 ? 1 : 0);
          seed += 11;
          Map<String, Tensor> in = new LinkedHashMap<>();
          in.put("seq", Tensor.of(seq, b, t, 4).withMask(mask));
          in.put("static", Tensor.of(stat, b, 5));
          for (Map.Entry<String, ModelOutput> e : alone.get(s).step(in).entrySet())
            want.merge(e.getKey(), e.getValue().values(), ModelStatesTest::concat);
          seqAll = concat(seqAll, seq);
          statAll = concat(statAll, stat);
          byte[] mm = Arrays.copyOf(maskAll, maskAll.length + mask.length);
          System.arraycopy(mask, 0, mm, maskAll.length, mask.length);
          maskAll = mm;
        }
        Map<String, Tensor> all = new LinkedHashMap<>();
        all.put("seq", Tensor.of(seqAll, 6, t, 4).withMask(maskAll));
        all.put("static", Tensor.of(statAll, 6, 5));
        if (call == 2) {
          Map<String, Tensor> bad = new LinkedHashMap<>(all);
          bad.put("static", Tensor.of(Arrays.copyOf(statAll, 25), 5, 5));
          raises(ShapeException.class, Recur.ERR_SHAPE, "the rows of the 3 states", () -> m.stepStates(together, bad));
          raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "are the same state",
                 () -> m.stepStates(Arrays.asList(together.get(0), together.get(0)), all));
        }
        Map<String, ModelOutput> got = m.stepStates(together, all);
        assertEquals(want.keySet(), got.keySet());
        for (Map.Entry<String, ModelOutput> e : got.entrySet()) {
          float[] w = want.get(e.getKey()), g = e.getValue().values();
          assertEquals(w.length, g.length, e.getKey());
          for (int i = 0; i < w.length; ++i) assertEquals(w[i], g[i], 1e-6f, e.getKey() + "[" + i + "]");
        }
      }
      for (ModelState s : alone) s.close();
      for (ModelState s : together) s.close();
    }
  }

  static float[] concat(float[] a, float[] b) {
    float[] c = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, c, a.length, b.length);
    return c;
  }
}
