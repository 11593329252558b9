// SPDX-License-Identifier: Apache-2.0
/*
 * recur from Java: loads the bundled Keras model files (.keras and .h5, from Keras 2 and Keras 3),
 * runs the sample token sequences and prints recur's predictions next to Keras's.
 * Exits with status 1 if any prediction differs from Keras's by more than 1e-5.
 *
 * Run with nothing but the jar (the native libraries are extracted from it):
 *   java -cp recur.jar examples/java/SentimentExample.java examples/models
 */
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import recur.Model;
import recur.ModelInfo;
import recur.Recur;

public class SentimentExample {
  static float[][] readMatrix(Path p) throws IOException {
    List<float[]> rows = new ArrayList<>();
    for (String line : Files.readAllLines(p)) {
      line = line.trim();
      if (line.isEmpty()) continue;
      String[] f = line.split("\\s+");
      float[] r = new float[f.length];
      for (int i = 0; i < f.length; i++) r[i] = (float) Double.parseDouble(f[i]);
      rows.add(r);
    }
    return rows.toArray(new float[0][]);
  }

  public static void main(String[] args) throws IOException {
    Path dir = Paths.get(args.length > 0 ? args[0] : "examples/models");
    System.out.println("recur " + Recur.bindingVersion() + " (Java binding)");
    float[][] ids = readMatrix(dir.resolve("sentiment_inputs.txt"));
    int batch = ids.length, steps = ids[0].length;
    float[] input = new float[batch * steps];
    System.out.printf("%nsample token sequences (B=%d, T=%d, 0 = padding):%n", batch, steps);
    for (int b = 0; b < batch; b++) {
      StringBuilder sb = new StringBuilder("  ");
      for (int t = 0; t < steps; t++) {
        input[b * steps + t] = ids[b][t];
        sb.append(String.format("%3d", (int) ids[b][t]));
      }
      System.out.println(sb);
    }
    boolean ok = true;
    for (String dialect : new String[] {"keras2", "keras3"}) {
      float[][] keras = readMatrix(dir.resolve("sentiment_" + dialect + "_keras.txt"));
      for (String format : new String[] {"keras", "h5"}) {
        Path file = dir.resolve("sentiment_" + dialect + "." + format);
        try (Model model = Model.open(file.toString())) {
          ModelInfo info = model.info();
          System.out.printf("%n== %s (Keras %s, %d layers, %s) ==%n", file, info.kerasVersion, info.numLayers,
              info.runnable ? "runnable" : info.unsupported);
          float[] out = model.run(input, batch, steps);
          int cols = info.outputSize;
          double worst = 0;
          System.out.printf("  sample  %-26s %-26s%n", "recur", "Keras");
          for (int b = 0; b < batch; b++) {
            StringBuilder sb = new StringBuilder(String.format("  %6d ", b));
            for (int j = 0; j < cols; j++) sb.append(String.format(" %12.9f", out[b * cols + j]));
            sb.append(' ');
            for (int j = 0; j < cols; j++) {
              worst = Math.max(worst, Math.abs((double) out[b * cols + j] - keras[b][j]));
              sb.append(String.format(" %12.9f", keras[b][j]));
            }
            System.out.println(sb);
          }
          System.out.printf("  max abs difference to Keras: %.3g%n", worst);
          if (worst > 1e-5) {
            System.err.printf("error: %s differs from Keras by %.3g%n", file, worst);
            ok = false;
          }
        }
      }
    }
    if (!ok) System.exit(1);
    System.out.println("\nexample finished");
  }
}
