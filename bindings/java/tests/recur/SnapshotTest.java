// SPDX-License-Identifier: Apache-2.0
package recur;

import static org.junit.jupiter.api.Assertions.*;
import static recur.ErrorTest.raises;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** ModelState.save/load: a stream saved mid-sequence goes on in a new state with the same bits. */
class SnapshotTest {
  static Model open(String rel) {
    return Model.open(GraphModelTest.GRAPHS.resolve(rel).toString());
  }

  static float[] input(ModelState s, int t) {
    float[] x = new float[s.inputsLength(1)];
    for (int i = 0; i < x.length; ++i) x[i] = ((i * 13 + t * 5) % 17) * 0.1f - 0.8f;
    return x;
  }

  static float[] step(ModelState s, int t) {
    float[] y = new float[s.outputsLength(1)];
    s.step(input(s, t), 1, null, y);
    return y;
  }

  @Test
  void savedStreamGoesOnBitIdentically() {
    try (Model m = open("keras3/nested_sequential.keras");
         ModelState whole = new ModelState(m, 3);
         ModelState first = new ModelState(m, 3);
         ModelState resumed = new ModelState(m, 3)) {
      float[][] want = new float[6][];
      for (int t = 0; t < 6; ++t) want[t] = step(whole, t);
      for (int t = 0; t < 3; ++t) step(first, t);
      byte[] bytes = first.save();
      assertEquals('R', bytes[0]);
      resumed.load(bytes);
      assertArrayEquals(bytes, resumed.save());
      for (int t = 3; t < 6; ++t)
        assertEquals(Arrays.toString(want[t]), Arrays.toString(step(resumed, t)), "step " + t);
    }
  }

  @Test
  void badBytesAnotherBatchAnotherModel() {
    try (Model m = open("keras3/nested_sequential.keras");
         Model other = open("keras3/masking_sequential.keras");
         ModelState s = new ModelState(m, 3);
         ModelState b2 = new ModelState(m, 2);
         ModelState o = new ModelState(other, 3)) {
      step(s, 0);
      byte[] bytes = s.save();
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "too short", () -> s.load(new byte[3]));
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "checksum",
             () -> s.load(Arrays.copyOf(bytes, bytes.length - 1)));
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "batch 3", () -> b2.load(bytes));
      raises(StateException.class, Recur.ERR_STATE, "saved by another model", () -> o.load(bytes));
      assertThrows(NullPointerException.class, () -> s.load(null));
      assertArrayEquals(bytes, s.save(), "a failed load leaves the state as it was");
      s.close();
      assertThrows(ClosedException.class, s::save);
    }
  }
}
