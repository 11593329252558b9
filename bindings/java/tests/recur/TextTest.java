// SPDX-License-Identifier: Apache-2.0
package recur;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Text inputs (C ABI 0.7): Tensor.ofStrings into TextVectorization and StringLookup models, against Keras's numbers. */
@SuppressWarnings("unchecked")
class TextTest {
  static final Path GRAPHS = Paths.get(System.getProperty("recur.graphs", "tests/keras/graphs"));

  static Map<String, Object> textCase(String dialect, String name) throws Exception {
    return GraphModelTest.graphCase("text/" + dialect, name);
  }

  @Test
  void textModelsMatchKeras() throws Exception {
    for (String dialect : new String[] {"keras2", "keras3"})
      for (String name : new String[] {"text_vectorization_lstm", "string_lookup_gru", "text_vectorization_ragged_bigrams"}) {
        Map<String, Object> c = textCase(dialect, name);
        Map<String, Object> call = (Map<String, Object>) ((List<Object>) c.get("calls")).get(0);
        Map<String, Object> in = (Map<String, Object>) ((List<Object>) call.get("inputs")).get(0);
        List<Object> data = (List<Object>) in.get("data");
        String[] texts = data.toArray(new String[0]);
        int[] shape = ParityTest.shape(in);
        long[] dims = new long[shape.length];
        for (int i = 0; i < dims.length; ++i) dims[i] = shape[i];
        String file = GRAPHS.resolve("..").resolve((String) ((List<Object>) c.get("files")).get(0)).toString();
        try (Model m = Model.open(file)) {
          assertTrue(m.input(0).strings, name);
          assertFalse(m.input(0).tokenIds, name);
          Map<String, ModelOutput> out = m.run(Collections.singletonMap("text", Tensor.ofStrings(texts, dims)));
          float[] want = ParityTest.floats(((List<Object>) call.get("outputs")).get(0));
          float[] got = out.get("out").values();
          assertEquals(want.length, got.length, name);
          for (int i = 0; i < want.length; ++i) assertEquals(want[i], got[i], 1e-5, dialect + "/" + name + " [" + i + "]");
        }
      }
  }

  @Test
  void badTextsAreRefused() throws Exception {
    assertThrows(IllegalArgumentException.class, () -> Tensor.ofStrings(new String[] {"a\0b"}, 1, 1));
    assertThrows(NullPointerException.class, () -> Tensor.ofStrings(new String[] {"a", null}, 2, 1));
    try (Model m = Model.open(GRAPHS.resolve("text/keras3/text_vectorization_lstm.keras").toString())) {
      InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
          () -> m.run(Collections.singletonMap("text", Tensor.of(new float[] {1, 2}, 2, 1))));
      assertTrue(e.getMessage().contains("the input holds strings"), e.getMessage());
      ShapeException s = assertThrows(ShapeException.class,
          () -> m.run(Collections.singletonMap("text", Tensor.ofStrings(new String[] {"a", "b"}, 3, 1))));
      assertTrue(s.getMessage().contains("('text').length"), s.getMessage());
    }
  }
}
