// SPDX-License-Identifier: Apache-2.0
package recur;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The named calls of Model and ModelState: maps of tensors and outputs to the descriptors NativeApi.named takes. */
final class NamedRun {
  private NamedRun() {}

  /** The inputs as parallel arrays, in the map's iteration order. */
  private static final class Inputs {
    final Object[] names, data, masks;
    final int[] dtypes, ranks;
    final long[] dims;

    Inputs(Map<String, Tensor> inputs) {
      if (inputs == null) throw new NullPointerException("inputs");
      int n = inputs.size();
      names = new Object[n];
      data = new Object[n];
      masks = new Object[n];
      dtypes = new int[n];
      ranks = new int[n];
      dims = new long[n * Recur.MAX_RANK];
      int i = 0;
      for (Map.Entry<String, Tensor> e : inputs.entrySet()) {
        if (e.getKey() == null) throw new NullPointerException("inputs: a null input name");
        Tensor t = e.getValue();
        if (t == null) throw new NullPointerException("inputs['" + e.getKey() + "']");
        names[i] = cString(e.getKey());
        data[i] = t.data;
        masks[i] = t.mask;
        dtypes[i] = t.dtype.code;
        ranks[i] = t.dims.length;
        System.arraycopy(t.dims, 0, dims, i * Recur.MAX_RANK, t.dims.length);
        ++i;
      }
    }
  }

  private static byte[] cString(String s) {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    byte[] z = new byte[b.length + 1];
    System.arraycopy(b, 0, z, 0, b.length);
    return z;
  }

  private static List<String> names(Collection<String> outputs) {
    List<String> l = new ArrayList<>(outputs);
    for (String s : l)
      if (s == null) throw new NullPointerException("outputs: a null output name");
    return l;
  }

  /**
   * The names that address every model output, in the model's order: its name, or "name:k" for
   * the k-th output of a Keras 3 layer whose outputs share one name.
   */
  static List<String> outputNames(Model model) {
    List<ModelTensor> outs = model.outputs();
    Map<String, Integer> count = new HashMap<>();
    for (ModelTensor t : outs) count.merge(t.name, 1, Integer::sum);
    Map<String, Integer> seen = new HashMap<>();
    List<String> names = new ArrayList<>(outs.size());
    for (ModelTensor t : outs) {
      if (count.get(t.name) == 1) {
        names.add(t.name);
      } else {
        int k = seen.merge(t.name, 1, Integer::sum) - 1;
        names.add(t.name + ":" + k);
      }
    }
    return Collections.unmodifiableList(names);
  }

  private static final class Result {
    final long[] dims;
    final int[] ranks;
    final long[] lengths;

    Result(int m) {
      dims = new long[m * Recur.MAX_RANK];
      ranks = new int[m];
      lengths = new long[m];
    }

    long[] dims(int i) {
      long[] d = new long[ranks[i]];
      System.arraycopy(dims, i * Recur.MAX_RANK, d, 0, d.length);
      return d;
    }
  }

  private static Object[] cStrings(List<String> names) {
    Object[] o = new Object[names.size()];
    for (int i = 0; i < o.length; ++i) o[i] = cString(names.get(i));
    return o;
  }

  private static Result call(int op, long handle, Inputs in, Object[] outNames, Object[] bufs, RunOptions options) {
    Result r = new Result(outNames.length);
    NativeApi.named(op, handle, in.names, in.dtypes, in.data, in.dims, in.ranks, in.masks, outNames, bufs, r.dims,
                    r.ranks, r.lengths, options == null ? 0 : options.ptr());
    return r;
  }

  static Map<String, long[]> shapes(int op, long handle, Map<String, Tensor> inputs, Collection<String> outputs) {
    Inputs in = new Inputs(inputs);
    List<String> names = names(outputs);
    Result r = call(op, handle, in, cStrings(names), new Object[names.size()], null);
    Map<String, long[]> m = new LinkedHashMap<>();
    for (int i = 0; i < names.size(); ++i) m.put(names.get(i), r.dims(i));
    return m;
  }

  static Map<String, ModelOutput> run(int shapesOp, int runOp, long handle, Map<String, Tensor> inputs,
                                      Collection<String> outputs, RunOptions options) {
    Inputs in = new Inputs(inputs);
    List<String> names = names(outputs);
    Object[] outNames = cStrings(names);
    Result shapes = call(shapesOp, handle, in, outNames, new Object[names.size()], null);
    float[][] values = new float[names.size()][];
    for (int i = 0; i < values.length; ++i) values[i] = new float[Buffers.length(shapes.lengths[i])];
    Result r = call(runOp, handle, in, outNames, values, options);
    Map<String, ModelOutput> m = new LinkedHashMap<>();
    for (int i = 0; i < values.length; ++i) m.put(names.get(i), new ModelOutput(names.get(i), r.dims(i), values[i]));
    return Collections.unmodifiableMap(m);
  }

  static void runInto(int op, long handle, Map<String, Tensor> inputs, Map<String, OutputBuffer> outputs,
                      RunOptions options) {
    Inputs in = new Inputs(inputs);
    if (outputs == null) throw new NullPointerException("outputs");
    List<String> names = new ArrayList<>(outputs.size());
    Object[] bufs = new Object[outputs.size()];
    OutputBuffer[] targets = new OutputBuffer[outputs.size()];
    int i = 0;
    for (Map.Entry<String, OutputBuffer> e : outputs.entrySet()) {
      if (e.getKey() == null) throw new NullPointerException("outputs: a null output name");
      if (e.getValue() == null) throw new NullPointerException("outputs['" + e.getKey() + "']");
      names.add(e.getKey());
      targets[i] = e.getValue();
      bufs[i++] = e.getValue().buffer;
    }
    Result r = call(op, handle, in, cStrings(names), bufs, options);
    for (i = 0; i < targets.length; ++i) {
      System.arraycopy(r.dims, i * Recur.MAX_RANK, targets[i].lastDims, 0, Recur.MAX_RANK);
      targets[i].lastRank = r.ranks[i];
      targets[i].lastLength = r.lengths[i];
    }
  }
}
