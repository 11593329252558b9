// SPDX-License-Identifier: Apache-2.0
package recur.flink;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;
import recur.Model;
import recur.ModelState;

/**
 * Benchmark (prints numbers, asserts nothing): events per second per core of a recur model stream
 * per key kept as snapshot bytes (what RecurKeyedFunction does) against the stateless alternative
 * (each event re-runs its key's last N events through recur), first in one thread without Flink,
 * then as Flink jobs at parallelism 1; and the savepoint size of 1000 keys.
 */
public final class FlinkBench {
  static final int F = 16, KEYS = 1000, E2E_KEYS = 200, WINDOW_KEYS = 100;
  static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

  public static void main(String[] args) throws Exception {
    Path dir = Paths.get(args[0]);
    System.out.println("cores: " + Runtime.getRuntime().availableProcessors() + ", " + KEYS + " keys, " + F + " features");
    for (int units : new int[] {64, 256}) {
      Path model = dir.resolve("gru" + units + ".keras");
      int events = units == 64 ? 100000 : 30000;
      System.out.printf("%nGRU(%d) -> Dense(4)%n", units);
      System.out.printf("  one thread, no Flink (events/s of CPU time):%n");
      System.out.printf("    per-key stream (load + step + save per event, %d keys): %,.0f%n", KEYS, stateful(model, events));
      for (int n : new int[] {16, 64})
        System.out.printf("    stateless, last %d events re-run per event: %,.0f%n", n, stateless(model, events / n * 4, n));
      System.out.printf("  Flink job, parallelism 1, %d keys, %,d events (events/s of the process's CPU time, the "
                        + "MiniCluster's included; and of the CPU time above a job without the model):%n", E2E_KEYS, events);
      if (units == 64) jobCpu(model, events, -1);  // warms up the JVM and Flink's classes
      double base = jobCpu(model, events, -1);
      for (int w : new int[] {0, 16}) {
        double cpu = jobCpu(model, events, w);
        System.out.printf("    %s: %,.0f (%,.0f)%n", w == 0 ? "RecurKeyedFunction" : "stateless window of " + w, events / cpu,
                          events / (cpu - base));
      }
      System.out.printf("  checkpoint: %s%n", savepointSize(model));
    }
    System.exit(0);
  }

  static float[] event(long i) {
    float[] x = new float[F];
    for (int k = 0; k < F; ++k) x[k] = (float) Math.sin(i * 0.37 + k * 0.11);
    return x;
  }

  static double cpuSeconds() {
    return THREADS.getCurrentThreadCpuTime() / 1e9;
  }

  static double stateful(Path model, int events) {
    try (Model m = Model.open(model.toString()); ModelState s = new ModelState(m, 1)) {
      Map<Integer, byte[]> store = new HashMap<>();
      float[] y = new float[s.outputsLength(1)];
      for (int pass = 0; pass < 2; ++pass) {  // the first pass warms up
        store.clear();
        double t0 = cpuSeconds();
        for (int i = 0; i < events; ++i) {
          int k = i % KEYS;
          byte[] b = store.get(k);
          if (b == null) s.reset();
          else s.load(b);
          s.step(event(i), 1, null, y);
          store.put(k, s.save());
        }
        if (pass == 1) return events / (cpuSeconds() - t0);
      }
    }
    return 0;
  }

  static double stateless(Path model, int events, int n) {
    try (Model m = Model.open(model.toString())) {
      Map<Integer, ArrayDeque<float[]>> windows = new HashMap<>();
      double t0 = 0;
      int fill = WINDOW_KEYS * n;  // the first events fill every key's window (and warm up)
      for (int i = 0; i < fill + events; ++i) {
        if (i == fill) t0 = cpuSeconds();
        ArrayDeque<float[]> w = windows.computeIfAbsent(i % WINDOW_KEYS, k -> new ArrayDeque<>());
        w.addLast(event(i));
        if (w.size() > n) w.removeFirst();
        float[] x = new float[w.size() * F];
        int o = 0;
        for (float[] e : w) {
          System.arraycopy(e, 0, x, o, F);
          o += F;
        }
        m.run(x, 1, w.size());
      }
      return events / (cpuSeconds() - t0);
    }
  }

  /** The stateless alternative as a Flink operator: each key's last n events in ValueState<float[]>. */
  static final class Window extends KeyedProcessFunction<Integer, long[], float[]> {
    private static final long serialVersionUID = 1L;
    final String path;
    final int n;
    transient Model model;
    transient ValueState<float[]> last;

    Window(String path, int n) {
      this.path = path;
      this.n = n;
    }

    @Override
    public void open(OpenContext c) {
      model = Model.open(path);
      last = getRuntimeContext().getState(new ValueStateDescriptor<>("window", PrimitiveArrayTypeInfo.FLOAT_PRIMITIVE_ARRAY_TYPE_INFO));
    }

    @Override
    public void processElement(long[] v, Context ctx, Collector<float[]> out) throws Exception {
      float[] e = event(v[1]);
      float[] w = last.value();
      int have = w == null ? 0 : w.length / F, keep = Math.min(have, n - 1);
      float[] x = new float[(keep + 1) * F];
      if (keep > 0) System.arraycopy(w, (have - keep) * F, x, 0, keep * F);
      System.arraycopy(e, 0, x, keep * F, F);
      last.update(x);
      out.collect(model.run(x, 1, keep + 1));
    }

    @Override
    public void close() {
      if (model != null) model.close();
    }
  }

  static double processCpu() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime() / 1e9;
  }

  /** The job's events, passed through unchanged: the cost of Flink without a model. */
  static final class PassThrough extends KeyedProcessFunction<Integer, long[], float[]> {
    private static final long serialVersionUID = 1L;

    @Override
    public void processElement(long[] v, Context ctx, Collector<float[]> out) {
      out.collect(event(v[1]));
    }
  }

  /** CPU seconds of a job of `events` events over E2E_KEYS keys; window 0: RecurKeyedFunction, -1: no model, else the stateless window. */
  static double jobCpu(Path model, int events, int window) throws Exception {
    StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(1, new Configuration());
    var keyed = env.fromSequence(0, events - 1).map(i -> new long[] {i % E2E_KEYS, i}).returns(long[].class)
                    .keyBy(v -> (int) v[0]);
    if (window == 0) {
      keyed.process(new RecurKeyedFunction<Integer, long[], float[]>(ModelSource.file(model.toString()), v -> event(v[1]),
                                                                      (k, v, y) -> y, TypeInformation.of(float[].class)))
          .sinkTo(new DiscardingSink<>());
    } else if (window < 0) {
      keyed.process(new PassThrough()).returns(float[].class).sinkTo(new DiscardingSink<>());
    } else {
      keyed.process(new Window(model.toString(), window)).returns(float[].class).sinkTo(new DiscardingSink<>());
    }
    double t0 = processCpu();
    env.execute("bench");
    return processCpu() - t0;
  }

  static final AtomicLong emitted = new AtomicLong();

  /** Stops a job of KEYS keys (two events each) with a savepoint and sums its files' sizes. */
  static String savepointSize(Path model) throws Exception {
    int events = 2 * KEYS;
    Path dir = Files.createTempDirectory("recur-flink-bench");
    StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(1, new Configuration());
    env.enableCheckpointing(60000);
    emitted.set(0);
    env.fromSequence(0, events + 1000).map((MapFunction<Long, long[]>) i -> {
          if (i >= events) Thread.sleep(20);  // a slow tail: time to stop with a savepoint
          return new long[] {i % KEYS, i};
        }).returns(long[].class)
        .keyBy(v -> (int) v[0])
        .process(new RecurKeyedFunction<Integer, long[], float[]>(ModelSource.file(model.toString()), v -> event(v[1]),
                                                                  (k, v, y) -> y, TypeInformation.of(float[].class)))
        .map(y -> {
          emitted.incrementAndGet();
          return y;
        }).returns(float[].class)
        .sinkTo(new DiscardingSink<>());
    JobClient job = env.executeAsync("bench savepoint");
    while (emitted.get() < events) Thread.sleep(10);
    String sp = job.stopWithSavepoint(false, dir.toUri().toString(), SavepointFormatType.CANONICAL).get();
    job.getJobExecutionResult().get();
    long bytes;
    try (Stream<Path> files = Files.walk(Paths.get(java.net.URI.create(sp)))) {
      bytes = files.filter(Files::isRegularFile).mapToLong(p -> p.toFile().length()).sum();
    }
    long snapshot;
    try (Model m = Model.open(model.toString()); ModelState s = new ModelState(m, 1)) {
      s.step(event(0), 1, null, new float[s.outputsLength(1)]);
      snapshot = s.save().length;
    }
    return String.format("%d bytes per key's snapshot; a savepoint of %d keys: %,d bytes (%,d per 1000 keys)", snapshot, KEYS,
                         bytes, bytes * 1000 / KEYS);
  }
}
