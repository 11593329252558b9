// SPDX-License-Identifier: Apache-2.0
package recur.flink;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.CloseableIterator;
import recur.flink.Fixtures.Event;
import recur.flink.Fixtures.Result;

/**
 * The Flink integration's tests, in Flink's local MiniCluster: {@code FlinkTests <test> [args]}.
 * Each compares every event's output with Keras's output for its key's whole sequence
 * (make_fixtures.py), and checks that no output is lost or doubled.
 */
public final class FlinkTests {
  static final double TOL = 1e-5;
  static Path fixtures;

  public static void main(String[] args) throws Exception {
    fixtures = Paths.get(System.getProperty("recur.flink.fixtures", "integrations/flink/tests/fixtures"));
    switch (args[0]) {
      case "parity" -> parity(args[1], Integer.parseInt(args[2]));
      case "failure" -> failureRestart();
      case "savepoint" -> savepointRescale();
      case "options" -> options();
      case "errors" -> errors();
      case "native" -> nativeLoadError();
      default -> throw new IllegalArgumentException("no test " + args[0]);
    }
    System.out.println("PASS " + String.join(" ", args));
    System.exit(0);  // the MiniCluster's threads would keep the JVM
  }

  static void check(boolean ok, String what) {
    if (!ok) throw new AssertionError(what);
  }

  static Fixtures cases(String model) throws Exception {
    return Fixtures.read(fixtures.resolve(model + "_cases.txt"));
  }

  static ModelSource source(String model) throws Exception {
    return ModelSource.bytesOf(fixtures.resolve(model + ".keras").toString());
  }

  static RecurKeyedFunction<Integer, Event, Result> function(ModelSource src) {
    return new RecurKeyedFunction<Integer, Event, Result>(src, e -> e.x, (k, e, y) -> new Result(k, e.t, y),
                                                          TypeInformation.of(Result.class));
  }

  static StreamExecutionEnvironment env(int parallelism, Configuration conf) {
    conf.set(RestartStrategyOptions.RESTART_STRATEGY, conf.getOptional(RestartStrategyOptions.RESTART_STRATEGY).orElse("none"));
    StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(parallelism, conf);
    env.setMaxParallelism(16);
    return env;
  }

  /** The events in order from a one-task source (a key's events keep their order through keyBy). */
  static DataStream<Event> events(StreamExecutionEnvironment env, List<Event> all, MapFunction<Event, Event> through) {
    final ArrayList<Event> list = new ArrayList<>(all);
    DataStream<Event> s = env.fromSequence(0, list.size() - 1).uid("sequence").setParallelism(1)
                              .map(i -> list.get(i.intValue())).returns(Event.class).uid("events").setParallelism(1);
    if (through != null) s = s.map(through).returns(Event.class).uid("through").setParallelism(1);
    return s;
  }

  /** Every (key, t) once, and each output as Keras's within TOL. */
  static void compare(Fixtures f, Iterable<Result> got, int expected, String what) {
    Set<Long> seen = new HashSet<>();
    int n = 0;
    double worst = 0;
    for (Result r : got) {
      ++n;
      check(seen.add(((long) r.key << 32) | r.t), what + ": key " + r.key + " step " + r.t + " emitted twice");
      float[] want = f.y.get(r.key).get(r.t);
      check(want.length == r.y.length, what + ": key " + r.key + ": " + r.y.length + " outputs, Keras has " + want.length);
      for (int i = 0; i < want.length; ++i) {
        double err = Math.abs(r.y[i] - want[i]);
        worst = Math.max(worst, err);
        check(err <= TOL * Math.max(1, Math.abs(want[i])),
              what + ": key " + r.key + " step " + r.t + " output " + i + ": " + r.y[i] + ", Keras " + want[i]);
      }
    }
    check(n == expected, what + ": " + n + " outputs, expected " + expected + " (outputs lost)");
    System.out.println(what + ": " + n + " outputs of " + f.x.size() + " keys equal Keras's (worst error " + worst + ")");
  }

  static List<Result> collect(DataStream<Result> s, String job) throws Exception {
    List<Result> out = new ArrayList<>();
    try (CloseableIterator<Result> it = s.executeAndCollect(job)) {
      it.forEachRemaining(out::add);
    }
    return out;
  }

  // ---- parity ----------------------------------------------------------------------------------

  static void parity(String model, int parallelism) throws Exception {
    Fixtures f = cases(model);
    List<Event> all = f.interleaved();
    StreamExecutionEnvironment env = env(parallelism, new Configuration());
    DataStream<Result> out = events(env, all, null).keyBy(e -> e.key).process(function(source(model))).uid("recur");
    compare(f, collect(out, "recur parity " + model), all.size(), model + " at parallelism " + parallelism);
  }

  // ---- a failure after a checkpoint ------------------------------------------------------------

  /** Sleeps a little per event (so that checkpoints complete mid-stream) and throws once, after one has. */
  static final class FailOnce implements MapFunction<Event, Event>, CheckpointListener {
    private static final long serialVersionUID = 1L;
    static final AtomicBoolean failed = new AtomicBoolean();
    static final AtomicInteger checkpoints = new AtomicInteger();
    final int after;
    int seen;

    FailOnce(int after) {
      this.after = after;
    }

    @Override
    public Event map(Event e) throws Exception {
      Thread.sleep(2);
      if (++seen >= after && checkpoints.get() > 0 && failed.compareAndSet(false, true))
        throw new RuntimeException("injected failure (FailOnce), once");
      return e;
    }

    @Override
    public void notifyCheckpointComplete(long id) {
      checkpoints.incrementAndGet();
    }
  }

  static void failureRestart() throws Exception {
    Fixtures f = cases("gru");
    List<Event> all = f.interleaved();
    Configuration conf = new Configuration();
    conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
    conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 2);
    conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(10));
    StreamExecutionEnvironment env = env(2, conf);
    env.enableCheckpointing(40);
    DataStream<Result> out = events(env, all, new FailOnce(all.size() / 2)).keyBy(e -> e.key)
                                 .process(function(source("gru"))).uid("recur");
    List<Result> got = collect(out, "recur failure and restart");
    check(FailOnce.failed.get(), "the failure was injected (a checkpoint completed before half the events)");
    compare(f, got, all.size(), "gru, a task failed once after a checkpoint and the job restarted from it");
  }

  // ---- stop with a savepoint, go on at another parallelism -------------------------------------

  static final ConcurrentLinkedQueue<Result> sunk = new ConcurrentLinkedQueue<>();

  static final class Slow implements MapFunction<Event, Event> {
    private static final long serialVersionUID = 1L;

    @Override
    public Event map(Event e) throws Exception {
      Thread.sleep(3);
      return e;
    }
  }

  /** The job of the savepoint tests: results into `sunk` (at-least-once alone; exactly once here, see below). */
  static JobClient start(String model, int parallelism, String savepoint, List<Event> all, boolean slow,
                         RecurKeyedFunction.OnModelMismatch onMismatch) throws Exception {
    Configuration conf = new Configuration();
    if (savepoint != null) conf.set(StateRecoveryOptions.SAVEPOINT_PATH, savepoint);
    StreamExecutionEnvironment env = env(parallelism, conf);
    env.enableCheckpointing(1000);
    events(env, all, slow ? new Slow() : e -> e)
        .keyBy(e -> e.key)
        .process(function(source(model)).onModelMismatch(onMismatch)).uid("recur")
        .map(r -> {
          sunk.add(r);
          return r;
        }).returns(Result.class).uid("sunk")
        .sinkTo(new DiscardingSink<>()).uid("discard");
    return env.executeAsync("recur savepoint " + model + " p" + parallelism);
  }

  static void savepointRescale() throws Exception {
    Fixtures f = cases("gru");
    List<Event> all = f.interleaved();
    Path dir = Files.createTempDirectory("recur-flink-savepoints");
    JobClient first = start("gru", 1, null, all, true, RecurKeyedFunction.OnModelMismatch.FAIL);
    while (sunk.size() < all.size() / 3) Thread.sleep(5);
    // Stop-with-savepoint: the sources stop at the savepoint's barrier, so the results in `sunk`
    // are exactly those of the events before it, and a job from the savepoint goes on from there.
    String savepoint = first.stopWithSavepoint(false, dir.toUri().toString(), SavepointFormatType.CANONICAL).get();
    first.getJobExecutionResult().get();
    List<Result> results = new ArrayList<>(sunk);
    final int before = results.size();
    check(before < all.size(), "the first job stopped mid-stream (" + before + " of " + all.size() + ")");
    System.out.println("stopped with a savepoint after " + before + " of " + all.size() + " events");
    sunk.clear();
    start("gru", 2, savepoint, all, false, RecurKeyedFunction.OnModelMismatch.FAIL).getJobExecutionResult().get();
    results.addAll(sunk);
    compare(f, results, all.size(), "gru, stopped with a savepoint at parallelism 1, restarted at parallelism 2");

    // Another model's job from this savepoint fails, naming a key and what differs ...
    sunk.clear();
    try {
      start("lstm", 2, savepoint, all, false, RecurKeyedFunction.OnModelMismatch.FAIL).getJobExecutionResult().get();
      check(false, "a job of another model restored the savepoint");
    } catch (Exception e) {
      String m = messages(e);
      check(m.contains("does not fit the model") && m.contains("key ") && m.contains("saved by another model"),
            "the mismatch names the key and what differs: " + m);
      System.out.println("another model's savepoint: " + firstLine(m, "recur-flink: key"));
    }
    // ... or, asked to, starts such keys afresh.
    sunk.clear();
    start("lstm", 2, savepoint, all, false, RecurKeyedFunction.OnModelMismatch.RESET).getJobExecutionResult().get();
    check(sunk.size() == all.size() - before, "RESET: every remaining event was stepped (" + sunk.size() + ")");
  }

  static String messages(Throwable e) {
    StringBuilder b = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause()) b.append(t).append('\n');
    return b.toString();
  }

  static String firstLine(String m, String start) {
    for (String l : m.split("\n")) {
      int i = l.indexOf(start);
      if (i >= 0) return l.substring(i);
    }
    return m;
  }

  // ---- options: session ends, TTL, bad events --------------------------------------------------

  /** Waits before the events of a second pass, so that state TTL expires between them. */
  static final class GapBefore implements MapFunction<Event, Event> {
    private static final long serialVersionUID = 1L;
    final int at;
    final long millis;
    int seen;

    GapBefore(int at, long millis) {
      this.at = at;
      this.millis = millis;
    }

    @Override
    public Event map(Event e) throws Exception {
      if (seen++ == at) Thread.sleep(millis);
      return e;
    }
  }

  static void options() throws Exception {
    Fixtures f = cases("lstm");
    List<Event> pass = f.interleaved();
    // Session ends: every key's sequence twice, its last event of the first pass marked; the
    // second pass starts afresh and gives Keras's outputs again.
    List<Event> twice = new ArrayList<>();
    for (Event e : pass) {
      Event c = new Event(e.key, e.t, e.x);
      c.last = e.t == f.x.get(e.key).size() - 1;
      twice.add(c);
    }
    twice.addAll(pass);
    StreamExecutionEnvironment env = env(2, new Configuration());
    List<Result> got = collect(events(env, twice, null).keyBy(e -> e.key)
                                   .process(function(source("lstm")).withSessionEnd(e -> e.last)).uid("recur"),
                               "recur session ends");
    Map<Long, Integer> count = new HashMap<>();
    for (Result r : got) count.merge(((long) r.key << 32) | r.t, 1, Integer::sum);
    check(got.size() == 2 * pass.size() && count.values().stream().allMatch(c -> c == 2), "each event twice");
    List<Result> firstOfEach = new ArrayList<>(), secondOfEach = new ArrayList<>();
    Set<Long> seen = new HashSet<>();
    for (Result r : got) (seen.add(((long) r.key << 32) | r.t) ? firstOfEach : secondOfEach).add(r);
    compare(f, firstOfEach, pass.size(), "lstm, first pass");
    compare(f, secondOfEach, pass.size(), "lstm, second pass after each key's session end");

    // TTL: without session ends, a second pass after the keys' states expired starts afresh too.
    List<Event> again = new ArrayList<>(pass);
    again.addAll(pass);
    env = env(1, new Configuration());
    got = collect(events(env, again, new GapBefore(pass.size(), 1500)).keyBy(e -> e.key)
                      .process(function(source("lstm")).withStateTtl(Duration.ofMillis(500))).uid("recur"),
                  "recur ttl");
    seen.clear();
    firstOfEach.clear();
    secondOfEach.clear();
    for (Result r : got) (seen.add(((long) r.key << 32) | r.t) ? firstOfEach : secondOfEach).add(r);
    compare(f, firstOfEach, pass.size(), "lstm, first pass (TTL 500 ms)");
    compare(f, secondOfEach, pass.size(), "lstm, second pass after the states expired");

    // skipBadEvents: events of the wrong size are dropped, the others go on unchanged.
    List<Event> withBad = new ArrayList<>();
    for (Event e : pass) {
      withBad.add(e);
      if (e.t == 0) withBad.add(new Event(e.key, -1, new float[] {1, 2}));
    }
    env = env(2, new Configuration());
    got = collect(events(env, withBad, null).keyBy(e -> e.key)
                      .process(function(source("lstm")).skipBadEvents(true)).uid("recur"),
                  "recur skip bad events");
    compare(f, got, pass.size(), "lstm, with a bad event per key skipped");
  }

  // ---- errors users meet -----------------------------------------------------------------------

  static String failure(StreamExecutionEnvironment env, DataStream<Result> out, String job) {
    try {
      collect(out, job);
    } catch (Exception e) {
      return messages(e);
    }
    throw new AssertionError(job + ": the job did not fail");
  }

  static void errors() throws Exception {
    Fixtures f = cases("gru");
    List<Event> pass = f.interleaved();
    // A bad event fails the task, naming the key, the event and the sizes.
    List<Event> withBad = new ArrayList<>(pass.subList(0, 5));
    withBad.add(new Event(3, 99, new float[] {1, 2}));
    StreamExecutionEnvironment env = env(1, new Configuration());
    String m = failure(env, events(env, withBad, null).keyBy(e -> e.key).process(function(source("gru"))), "bad event");
    check(m.contains("key 3: bad event Event(key=3, t=99)") && m.contains("gave 2 floats, the model takes 3"), m);
    System.out.println("bad event: " + firstLine(m, "recur-flink:"));
    // A missing model file fails open(), naming the file and what to do.
    env = env(1, new Configuration());
    m = failure(env, events(env, pass, null).keyBy(e -> e.key).process(function(ModelSource.file("/nonexistent/model.keras"))),
                "missing model");
    check(m.contains("/nonexistent/model.keras does not exist on task manager") && m.contains("distributedCache"), m);
    System.out.println("missing model: " + firstLine(m, "recur-flink:"));
    // A file that is not a model.
    Path junk = Files.createTempFile("recur-flink", ".keras");
    Files.writeString(junk, "not a model");
    env = env(1, new Configuration());
    m = failure(env, events(env, pass, null).keyBy(e -> e.key).process(function(ModelSource.file(junk.toString()))),
                "not a model");
    check(m.contains("cannot open the model " + junk), m);
    System.out.println("not a model: " + firstLine(m, "recur-flink:"));
    // The distributed cache: a registered file opens on the task; an unregistered name says how to register it.
    env = env(2, new Configuration());
    env.registerCachedFile(fixtures.resolve("gru.keras").toString(), "model");
    compare(f, collect(events(env, pass, null).keyBy(e -> e.key).process(function(ModelSource.distributedCache("model"))),
                       "recur distributed cache"),
            pass.size(), "gru from Flink's distributed cache");
    env = env(1, new Configuration());
    m = failure(env, events(env, pass, null).keyBy(e -> e.key).process(function(ModelSource.distributedCache("absent"))),
                "unregistered cache file");
    check(m.contains("registerCachedFile"), m);
    System.out.println("unregistered cache file: " + firstLine(m, "recur-flink:"));
  }

  /** Run with -Drecur.library=/nonexistent/librecur_java.so: the native library cannot load. */
  static void nativeLoadError() {
    try {
      RecurKeyedFunction.checkNativeLibrary();
    } catch (RecurFlinkException e) {
      check(e.getMessage().contains("native library cannot load on task manager") && e.getMessage().contains("recur.jar"),
            e.getMessage());
      System.out.println("native library: " + e.getMessage());
      return;
    }
    throw new AssertionError("the native library loaded although -Drecur.library names no file");
  }
}
