// SPDX-License-Identifier: Apache-2.0
package recur.flink;

import java.io.IOException;
import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** The keyed sequences of make_fixtures.py: each key's inputs and Keras's whole-sequence outputs. */
final class Fixtures {
  /** One event: step t of key's sequence. */
  public static class Event implements Serializable {
    private static final long serialVersionUID = 1L;
    public int key;
    public int t;
    public float[] x;
    public boolean last;  // a session end (the options tests)

    public Event() {}

    Event(int key, int t, float[] x) {
      this.key = key;
      this.t = t;
      this.x = x;
    }

    @Override
    public String toString() {
      return "Event(key=" + key + ", t=" + t + ")";
    }
  }

  /** One output: what the operator emitted for step t of key. */
  public static class Result implements Serializable {
    private static final long serialVersionUID = 1L;
    public int key;
    public int t;
    public float[] y;

    public Result() {}

    Result(int key, int t, float[] y) {
      this.key = key;
      this.t = t;
      this.y = y;
    }
  }

  final Map<Integer, List<float[]>> x = new TreeMap<>(), y = new TreeMap<>();

  static Fixtures read(Path cases) throws IOException {
    Fixtures f = new Fixtures();
    List<float[]> xs = null, ys = null;
    for (String line : Files.readAllLines(cases)) {
      if (line.startsWith("#") || line.isBlank()) continue;
      if (line.startsWith("key ")) {
        int k = Integer.parseInt(line.split(" ")[1]);
        f.x.put(k, xs = new ArrayList<>());
        f.y.put(k, ys = new ArrayList<>());
        continue;
      }
      String[] parts = line.split("\\|");
      xs.add(floats(parts[0]));
      ys.add(floats(parts[1]));
    }
    return f;
  }

  private static float[] floats(String s) {
    String[] w = s.trim().split("\\s+");
    float[] a = new float[w.length];
    for (int i = 0; i < w.length; ++i) a[i] = Float.parseFloat(w[i]);
    return a;
  }

  /** Every key's events interleaved: step 0 of every key, then step 1 of those that have one, ... */
  List<Event> interleaved() {
    List<Event> out = new ArrayList<>();
    for (int t = 0;; ++t) {
      boolean any = false;
      for (Map.Entry<Integer, List<float[]>> e : x.entrySet())
        if (t < e.getValue().size()) {
          out.add(new Event(e.getKey(), t, e.getValue().get(t)));
          any = true;
        }
      if (!any) return out;
    }
  }
}
