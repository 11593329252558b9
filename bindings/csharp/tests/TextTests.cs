// SPDX-License-Identifier: Apache-2.0
// Text inputs (C ABI 0.7) through the C# binding: NamedTensor of string[] into TextVectorization
// and StringLookup models, against Keras's numbers in tests/keras/graphs/text.
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using Recur;

namespace RecurTests {

static partial class Program {
  static void TextModelsMatchKeras() {
    foreach (var dialect in new[] { "keras2", "keras3" })
      foreach (var name in new[] { "text_vectorization_lstm", "string_lookup_gru", "text_vectorization_ragged_bigrams" }) {
        var c = GraphCase(Path.Combine("text", dialect), name);
        var call = Calls(c)[0];
        var input = (Dictionary<string, object>)((List<object>)call["inputs"])[0];
        string[] texts = ((List<object>)input["data"]).Cast<string>().ToArray();
        string file = Path.Combine(graphDir, "..", (string)((List<object>)c["files"])[0]);
        using (var m = Model.Open(file)) {
          Check(m.Input(0).Strings && m.TakesStrings(0) && !m.Input(0).TokenIds, dialect + "/" + name + ": a string input");
          var outs = m.Run(new[] { new NamedTensor("text", texts, ShapeOf(input)) });
          Near(Data(((List<object>)call["outputs"])[0]), outs["out"].Values, 1e-5, dialect + "/" + name);
        }
      }
  }

  static void TextInputErrors() {
    Throws<ArgumentException>(() => new NamedTensor("text", new[] { "a\0b" }, new long[] { 1, 1 }), "a NUL in a text");
    Throws<ArgumentNullException>(() => new NamedTensor("text", new[] { "a", null }, new long[] { 2, 1 }), "a null text");
    using (var m = Model.Open(Path.Combine(graphDir, "text", "keras3", "text_vectorization_lstm.keras"))) {
      Fails(Status.InvalidArgument, () => m.Run(new[] { new NamedTensor("text", new float[3], new long[] { 3, 1 }) }),
            "floats to a string input", "the input holds strings");
      Fails(Status.Shape, () => m.Run(new[] { new NamedTensor("text", new[] { "a", "b" }, new long[] { 3, 1 }) }),
            "too few texts", "('text').length");
      var outs = m.Run(new[] { new NamedTensor("text", new[] { "the cat", "", "naïve «café»" }, new long[] { 3, 1 }) });
      Check(outs["out"].Values.Length == 6, "a run after errors");
    }
  }

  static void RunTextTests() {
    Run("TextModelsMatchKeras", TextModelsMatchKeras);
    Run("TextInputErrors", TextInputErrors);
  }
}

}
