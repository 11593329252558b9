// SPDX-License-Identifier: Apache-2.0
package recur.spark;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import recur.Model;
import recur.ModelOutput;
import recur.RecurException;
import recur.Tensor;

/** One partition's rows, read batchSize at a time, each batch one model call (a few with GROUP). */
final class PartitionScorer implements Iterator<Row> {
  private final RecurScorer cfg;
  private final RecurScorer.Plan plan;
  private final Iterator<Row> rows;
  private final ArrayDeque<Row> ready = new ArrayDeque<>();
  private final int width;  // floats per step
  private Model model;
  private long seen;

  /** A row read and checked: its carried columns, its steps, its length. */
  private static final class Item {
    Object[] keys;
    float[] data;
    int steps;
  }

  /** A row that cannot be scored. */
  private static final class BadRow extends Exception {
    private static final long serialVersionUID = 1L;

    BadRow(String message) {
      super(message, null, false, false);
    }
  }

  PartitionScorer(RecurScorer cfg, RecurScorer.Plan plan, Iterator<Row> rows) {
    this.cfg = cfg;
    this.plan = plan;
    this.rows = rows;
    this.width = Math.max(plan.features, 1);
  }

  @Override
  public boolean hasNext() {
    while (ready.isEmpty() && rows.hasNext()) nextBatch();
    return !ready.isEmpty();
  }

  @Override
  public Row next() {
    if (!hasNext()) throw new NoSuchElementException();
    return ready.poll();
  }

  private void nextBatch() {
    List<Item> batch = new ArrayList<>(cfg.batchSize);
    while (batch.size() < cfg.batchSize && rows.hasNext()) {
      Row r = rows.next();
      ++seen;
      try {
        batch.add(read(r));
      } catch (BadRow e) {
        bad(describe(r), e.getMessage());
      }
    }
    if (batch.isEmpty()) return;
    if (model == null) {
      TaskContext tc = TaskContext.get();
      model = cfg.source.model(tc != null ? "executor " + org.apache.spark.SparkEnv.get().executorId() : "this JVM");
    }
    if (cfg.padding == Padding.GROUP) {
      // Rows of one length together, in the batch's order of first appearance; output in input order.
      Map<Integer, List<Integer>> byLength = new LinkedHashMap<>();
      for (int i = 0; i < batch.size(); ++i) byLength.computeIfAbsent(batch.get(i).steps, k -> new ArrayList<>()).add(i);
      Row[] out = new Row[batch.size()];
      for (List<Integer> idx : byLength.values()) {
        List<Item> group = new ArrayList<>(idx.size());
        for (int i : idx) group.add(batch.get(i));
        List<Row> scored = scoreOrSplit(group);
        for (int j = 0; j < idx.size(); ++j) out[idx.get(j)] = scored.get(j);
      }
      for (Row r : out) if (r != null) ready.add(r);
    } else {
      for (Row r : scoreOrSplit(batch)) if (r != null) ready.add(r);
    }
  }

  /** Scores items in one call; when it fails, each row alone, so that the message names the row that fails. */
  private List<Row> scoreOrSplit(List<Item> items) {
    try {
      return run(items);
    } catch (RecurException e) {
      if (items.size() == 1) {
        bad(describe(items.get(0).keys), e.getMessage());
        return Collections.singletonList(null);
      }
      List<Row> out = new ArrayList<>(items.size());
      for (Item it : items) out.add(scoreOrSplit(Collections.singletonList(it)).get(0));
      return out;
    }
  }

  private List<Row> run(List<Item> items) {
    int b = items.size(), t = 0;
    for (Item it : items) t = Math.max(t, it.steps);
    boolean padded = false;
    float[] x = new float[b * t * width];
    byte[] mask = new byte[b * t];
    for (int i = 0; i < b; ++i) {
      Item it = items.get(i);
      System.arraycopy(it.data, 0, x, i * t * width, it.steps * width);
      Arrays.fill(mask, i * t, i * t + it.steps, (byte) 1);
      padded |= it.steps != t;
    }
    Tensor in = plan.features > 0 ? Tensor.of(x, b, t, plan.features) : Tensor.of(x, b, t);
    if (padded) in = in.withMask(mask);
    Map<String, ModelOutput> res = model.run(Collections.singletonMap(plan.inputName, in), Arrays.asList(plan.outputNames));
    int nOut = plan.outputNames.length;
    float[][][] perRow = new float[b][nOut][];
    for (int o = 0; o < nOut; ++o) {
      ModelOutput mo = res.get(plan.outputNames[o]);
      long[] d = mo.dims();
      float[] v = mo.values();
      int rowSize = 1;
      for (int k = 1; k < d.length; ++k) rowSize = Math.multiplyExact(rowSize, (int) d[k]);
      // A sequence output (batch, steps, ...) whose steps follow the input's: each row keeps its own.
      boolean steps = d.length >= 3 && plan.outputDims[o].length == d.length && plan.outputDims[o][1] < 0 && d[1] == t;
      int perStep = steps ? rowSize / t : 0;
      for (int i = 0; i < b; ++i) {
        int n = steps ? items.get(i).steps * perStep : rowSize;
        perRow[i][o] = Arrays.copyOfRange(v, i * rowSize, i * rowSize + n);
      }
    }
    List<Row> out = new ArrayList<>(b);
    for (int i = 0; i < b; ++i) {
      Object[] vals = Arrays.copyOf(items.get(i).keys, plan.keys.length + nOut);
      System.arraycopy(perRow[i], 0, vals, plan.keys.length, nOut);
      out.add(RowFactory.create(vals));
    }
    return out;
  }

  private void bad(String row, String why) {
    if (cfg.badRows == BadRows.SKIP) {
      plan.skipped.add(1);
      return;
    }
    throw new RecurSparkException("recur-spark: cannot score row " + row + ": " + why
        + " (badRows(BadRows.SKIP) leaves such rows out)");
  }

  private String describe(Row r) {
    Object[] keys = new Object[plan.keys.length];
    for (int i = 0; i < keys.length; ++i) keys[i] = r.get(plan.keys[i]);
    return describe(keys);
  }

  private String describe(Object[] keys) {
    if (keys.length == 0) {
      TaskContext tc = TaskContext.get();
      return "#" + seen + " of partition " + (tc != null ? tc.partitionId() : 0);
    }
    StringBuilder s = new StringBuilder();
    for (int i = 0; i < keys.length; ++i) {
      if (i > 0) s.append(", ");
      String v = String.valueOf(keys[i]);
      s.append(plan.keyNames[i]).append('=').append(v.length() > 64 ? v.substring(0, 64) + "..." : v);
    }
    return s.toString();
  }

  private Item read(Row r) throws BadRow {
    Item it = new Item();
    it.keys = new Object[plan.keys.length];
    for (int i = 0; i < it.keys.length; ++i) it.keys[i] = r.get(plan.keys[i]);
    Object seq = r.get(plan.sequence);
    if (seq == null) throw new BadRow("the sequence is null");
    int n = size(seq);
    if (plan.nested) {
      it.steps = n;
      it.data = new float[Math.multiplyExact(n, width)];
      for (int s = 0; s < n; ++s) {
        Object step = at(seq, s);
        if (step == null) throw new BadRow("step " + s + " is null");
        int f = size(step);
        if (f != width) {
          throw new BadRow("step " + s + " has " + f + " features; the model's input '" + plan.inputName + "' takes " + width);
        }
        for (int k = 0; k < f; ++k) it.data[s * width + k] = number(at(step, k), s, k);
      }
    } else {
      if (n % width != 0) {
        throw new BadRow("the flattened sequence has " + n + " values, not a multiple of the model's " + width
            + " features (input '" + plan.inputName + "')");
      }
      it.steps = n / width;
      it.data = new float[n];
      for (int k = 0; k < n; ++k) it.data[k] = number(at(seq, k), k / width, k % width);
    }
    if (it.steps == 0) throw new BadRow("the sequence is empty (a row needs at least one step)");
    return it;
  }

  private static float number(Object v, int step, int feature) throws BadRow {
    if (v == null) throw new BadRow("step " + step + ", feature " + feature + " is null");
    return ((Number) v).floatValue();
  }

  private static int size(Object seq) {
    if (seq instanceof scala.collection.Seq) return ((scala.collection.Seq<?>) seq).length();
    if (seq instanceof List) return ((List<?>) seq).size();
    return java.lang.reflect.Array.getLength(seq);
  }

  private static Object at(Object seq, int i) {
    if (seq instanceof scala.collection.Seq) return ((scala.collection.Seq<?>) seq).apply(i);
    if (seq instanceof List) return ((List<?>) seq).get(i);
    return java.lang.reflect.Array.get(seq, i);
  }
}
