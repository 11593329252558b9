// SPDX-License-Identifier: Apache-2.0
package recur.flink;

import java.time.Duration;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.java.typeutils.ResultTypeQueryable;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;
import recur.Model;
import recur.ModelState;
import recur.Recur;
import recur.RecurException;

/**
 * Steps a recur model stream per key: each event is one timestep of its key's sequence, and the
 * operator emits what the model outputs for it. Each key's stream lives in Flink managed keyed
 * state as the bytes of {@link ModelState#save()} ({@code ValueState<byte[]>}), so checkpoints
 * and savepoints carry every key's recurrent states, a restart goes on with every sequence where
 * it stopped, and rescaling moves each key's state with the key. The model is opened once per
 * task (open()); one scratch {@link ModelState} of batch 1 is loaded with a key's bytes when an
 * event comes, stepped, and saved back.
 *
 * <pre>{@code
 * events.keyBy(e -> e.user)
 *       .process(new RecurKeyedFunction<String, Event, Score>(
 *           ModelSource.distributedCache("model"),
 *           e -> e.features,                                 // one step's floats
 *           (user, e, y) -> new Score(user, e.time, y[0]),   // the model's outputs
 *           TypeInformation.of(Score.class))
 *         .withStateTtl(Duration.ofHours(12))
 *         .withSessionEnd(e -> e.logout));
 * }</pre>
 *
 * @param <K> the key
 * @param <IN> the events
 * @param <OUT> the records emitted
 */
public class RecurKeyedFunction<K, IN, OUT> extends KeyedProcessFunction<K, IN, OUT> implements ResultTypeQueryable<OUT> {
  private static final long serialVersionUID = 1L;

  /** Says whether an event is the last of its key's sequence (a session end). */
  @FunctionalInterface
  public interface SessionEnd<IN> extends java.io.Serializable {
    boolean endsSession(IN event) throws Exception;
  }

  /** What to do with a key whose saved state another model (or model version) wrote. */
  public enum OnModelMismatch {
    /** Fail the task, naming the key and what differs (the default). */
    FAIL,
    /** Start that key's sequence afresh (after deploying a new model version on purpose). */
    RESET
  }

  private final ModelSource source;
  private final InputMapper<IN> inputs;
  private final OutputMapper<K, IN, OUT> outputs;
  private final TypeInformation<OUT> outType;
  private Duration ttl;
  private SessionEnd<IN> sessionEnd;
  private OnModelMismatch onMismatch = OnModelMismatch.FAIL;
  private boolean skipBadEvents;
  private String stateName = "recur-stream";

  private transient Model model;
  private transient ModelState scratch;
  private transient ValueState<byte[]> streams;
  private transient int inputsLength, outputsLength;
  private transient Object lastKey;      // the key whose bytes the scratch state holds
  private transient byte[] lastBytes;    // ... as saved to Flink's state (same reference: no load)
  private transient Counter badEvents, resets;

  /**
   * @param source where each task finds the model
   * @param inputs an event's floats for one step ({@code inputsLength(1)} of a batch-1 stream)
   * @param outputs the record for an event and the model's outputs for it
   * @param outType the emitted records' type (null: Flink extracts it, which fails for lambdas)
   */
  public RecurKeyedFunction(ModelSource source, InputMapper<IN> inputs, OutputMapper<K, IN, OUT> outputs,
                            TypeInformation<OUT> outType) {
    if (source == null) throw new NullPointerException("source");
    if (inputs == null) throw new NullPointerException("inputs");
    if (outputs == null) throw new NullPointerException("outputs");
    this.source = source;
    this.inputs = inputs;
    this.outputs = outputs;
    this.outType = outType;
  }

  /** Keys idle for ttl lose their stream (Flink's StateTtlConfig, on write): they start afresh. */
  public RecurKeyedFunction<K, IN, OUT> withStateTtl(Duration ttl) {
    this.ttl = ttl;
    return this;
  }

  /** Events for which end returns true are stepped and emitted, then their key starts afresh. */
  public RecurKeyedFunction<K, IN, OUT> withSessionEnd(SessionEnd<IN> end) {
    this.sessionEnd = end;
    return this;
  }

  /** See {@link OnModelMismatch}; FAIL by default. */
  public RecurKeyedFunction<K, IN, OUT> onModelMismatch(OnModelMismatch what) {
    this.onMismatch = what == null ? OnModelMismatch.FAIL : what;
    return this;
  }

  /** Drop events the input mapper cannot turn into the model's inputs (counted in the metric recurBadEvents) instead of failing. */
  public RecurKeyedFunction<K, IN, OUT> skipBadEvents(boolean skip) {
    this.skipBadEvents = skip;
    return this;
  }

  /** The keyed state's name ("recur-stream"); two of these operators in one job need not differ (state is per operator). */
  public RecurKeyedFunction<K, IN, OUT> withStateName(String name) {
    this.stateName = name;
    return this;
  }

  @Override
  public TypeInformation<OUT> getProducedType() {
    if (outType == null)
      throw new RecurFlinkException("recur-flink: pass the output type (TypeInformation) to RecurKeyedFunction's constructor");
    return outType;
  }

  /**
   * Loads recur's native library (from recur.jar's copy, java.library.path or -Drecur.library),
   * or throws a RecurFlinkException that says what to ship to the task manager.
   */
  public static void checkNativeLibrary() {
    try {
      Recur.bindingVersion();
    } catch (UnsatisfiedLinkError | NoClassDefFoundError | ExceptionInInitializerError e) {
      throw new RecurFlinkException("recur-flink: recur's native library cannot load on task manager " + ModelSource.hostName()
          + " (" + System.getProperty("os.name") + " " + System.getProperty("os.arch") + "): " + e
          + ". Ship recur.jar built for this platform in the job jar or the task managers' lib/ folder (its native "
          + "libraries are extracted from it), or install librecur-java and set java.library.path, or "
          + "-Drecur.library=/path/to/librecur_java.so (env.java.opts.taskmanager)", e);
    }
  }

  @Override
  public void open(OpenContext openContext) throws Exception {
    checkNativeLibrary();
    try {
      model = source.open(getRuntimeContext());
    } catch (RecurFlinkException e) {
      throw e;
    } catch (RecurException e) {
      throw new RecurFlinkException("recur-flink: cannot open the model " + source + ": " + e.getMessage(), e);
    }
    String why = model.streamable();
    if (why != null && !why.isEmpty()) {
      model.close();
      throw new RecurFlinkException("recur-flink: the model " + source + " cannot stream event by event: " + why);
    }
    scratch = new ModelState(model, 1);
    inputsLength = scratch.inputsLength(1);
    outputsLength = scratch.outputsLength(1);
    ValueStateDescriptor<byte[]> d = new ValueStateDescriptor<>(stateName, PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO);
    if (ttl != null)
      d.enableTimeToLive(StateTtlConfig.newBuilder(ttl)
                             .setUpdateType(StateTtlConfig.UpdateType.OnCreateAndWrite)
                             .setStateVisibility(StateTtlConfig.StateVisibility.NeverReturnExpired)
                             .build());
    streams = getRuntimeContext().getState(d);
    badEvents = getRuntimeContext().getMetricGroup().counter("recurBadEvents");
    resets = getRuntimeContext().getMetricGroup().counter("recurModelMismatchResets");
  }

  @Override
  public void processElement(IN event, Context ctx, Collector<OUT> out) throws Exception {
    final K key = ctx.getCurrentKey();
    float[] x;
    try {
      x = inputs.toInputs(event);
      if (x == null) throw new IllegalArgumentException("the input mapper returned null");
      if (x.length != inputsLength)
        throw new IllegalArgumentException("the input mapper gave " + x.length + " floats, the model takes " + inputsLength
            + " per event (every input's features for one step, in input order)");
    } catch (Exception e) {
      if (skipBadEvents) {
        badEvents.inc();
        return;
      }
      throw new RecurFlinkException("recur-flink: key " + key + ": bad event " + brief(event) + ": " + e.getMessage(), e);
    }
    restore(key);
    float[] y = new float[outputsLength];
    try {
      scratch.step(x, 1, null, y);
    } catch (RecurException e) {
      lastKey = null;  // a failed step leaves the scratch state as it was; the next event reloads anyway
      if (skipBadEvents) {
        badEvents.inc();
        return;
      }
      throw new RecurFlinkException("recur-flink: key " + key + ": the model refused event " + brief(event) + ": " + e.getMessage(), e);
    }
    if (sessionEnd != null && sessionEnd.endsSession(event)) {
      streams.clear();
      lastKey = null;
    } else {
      byte[] bytes = scratch.save();
      streams.update(bytes);
      lastKey = key;
      lastBytes = bytes;
    }
    OUT o = outputs.toOutput(key, event, y);
    if (o != null) out.collect(o);
  }

  /** Puts the key's saved stream (or a new one) into the scratch state. */
  private void restore(K key) throws Exception {
    byte[] bytes = streams.value();
    if (bytes != null && bytes == lastBytes && key.equals(lastKey)) return;  // the scratch state holds it already
    if (bytes == null) {
      scratch.reset();
      return;
    }
    try {
      scratch.load(bytes);
    } catch (RecurException e) {
      if (onMismatch == OnModelMismatch.RESET && e.status() == Recur.ERR_STATE) {
        resets.inc();
        scratch.reset();
        return;
      }
      throw new RecurFlinkException("recur-flink: key " + key + ": its saved stream state does not fit the model " + source
          + ": " + e.getMessage() + ". The job was restored from a checkpoint or savepoint taken with another model"
          + " (or model version): deploy that model, or set onModelMismatch(RESET) to start such keys afresh", e);
    }
  }

  private static String brief(Object event) {
    String s = String.valueOf(event);
    return s.length() > 200 ? s.substring(0, 200) + "..." : s;
  }

  @Override
  public void close() throws Exception {
    if (scratch != null) scratch.close();
    if (model != null) model.close();
    scratch = null;
    model = null;
  }

  @Override
  public String toString() {
    return "RecurKeyedFunction(" + source + ", ttl=" + ttl + ", sessionEnd=" + (sessionEnd != null) + ")";
  }
}
