// SPDX-License-Identifier: Apache-2.0
package recur.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.NumericType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.LongAccumulator;
import recur.Model;
import recur.ModelTensor;

/**
 * Scores a Dataset of sequences with a Keras model through recur, batch by batch within each
 * partition ({@code mapPartitions}); each executor JVM opens the model once and its tasks share it.
 *
 * <pre>{@code
 * Dataset<Row> scores = RecurScorer.fromSparkFile("model.keras")   // shipped with --files
 *     .sequenceColumn("seq").keyColumns("id").batchSize(256)
 *     .score(spark.read().parquet("sequences.parquet"));
 * }</pre>
 *
 * The sequence column is {@code array<array<float|double|...>>} (steps of the model's feature
 * count) or {@code array<number>} (steps flattened row-major; a model whose input is (batch,
 * steps) of token ids takes one number per step). Rows of different lengths share a call, padded
 * and masked ({@link Padding#MASK}) or grouped by length ({@link Padding#GROUP}). The output holds
 * the key columns and one {@code array<float>} column per model output, named by the output
 * (":" becomes "_"), each row's values flattened row-major; a sequence output (batch, steps, ...)
 * holds the row's own steps only.
 */
public final class RecurScorer implements Serializable {
  private static final long serialVersionUID = 1L;

  ModelSource source;
  String sequenceColumn = "seq";
  String[] keyColumns;  // null: every column but the sequence
  int batchSize = 256;
  BadRows badRows = BadRows.FAIL;
  Padding padding = Padding.MASK;
  String outputPrefix = "";
  private transient LongAccumulator skipped;

  private RecurScorer(ModelSource source) {
    this.source = source;
  }

  /** A model file at a path that the driver and every executor see (a shared or local file system). */
  public static RecurScorer fromFile(String path) {
    if (path == null) throw new NullPointerException("path");
    return new RecurScorer(new ModelSource(ModelSource.Kind.FILE, path, null, path, "cpu", 1));
  }

  /** A model file shipped to every node with spark-submit --files or SparkContext.addFile: its file name. */
  public static RecurScorer fromSparkFile(String fileName) {
    if (fileName == null) throw new NullPointerException("fileName");
    return new RecurScorer(new ModelSource(ModelSource.Kind.SPARK_FILE, fileName, null, fileName, "cpu", 1));
  }

  /**
   * The bytes of a .keras or .h5 file, sent with the job (broadcast once per executor when scoring
   * starts). name stands for the model in messages.
   */
  public static RecurScorer fromBytes(byte[] bytes, String name) {
    if (bytes == null) throw new NullPointerException("bytes");
    return new RecurScorer(new ModelSource(ModelSource.Kind.BYTES, null, bytes.clone(), name != null ? name : "<memory>", "cpu", 1));
  }

  /** The column that holds each row's sequence ("seq" by default). */
  public RecurScorer sequenceColumn(String column) {
    this.sequenceColumn = java.util.Objects.requireNonNull(column, "column");
    return this;
  }

  /** The columns carried into the output (default: every column but the sequence); messages name their values. */
  public RecurScorer keyColumns(String... columns) {
    this.keyColumns = columns.clone();
    return this;
  }

  /** Rows per model call (256 by default): larger calls amortise the call, smaller ones pad less. */
  public RecurScorer batchSize(int rows) {
    if (rows < 1) throw new IllegalArgumentException("recur-spark: batchSize must be at least 1, got " + rows);
    this.batchSize = rows;
    return this;
  }

  /** What a bad row does: {@link BadRows#FAIL} (the default) or {@link BadRows#SKIP}. */
  public RecurScorer badRows(BadRows mode) {
    this.badRows = java.util.Objects.requireNonNull(mode, "mode");
    return this;
  }

  /** How rows of different lengths share a call ({@link Padding#MASK} by default). */
  public RecurScorer padding(Padding mode) {
    this.padding = java.util.Objects.requireNonNull(mode, "mode");
    return this;
  }

  /** Threads each model call uses (1 by default: Spark already runs a task per core; 0 = one per core). */
  public RecurScorer numThreads(int n) {
    if (n < 0) throw new IllegalArgumentException("recur-spark: numThreads must be >= 0, got " + n);
    this.source = source.with(source.device, n);
    return this;
  }

  /**
   * Where executors run the model: "cpu" (the default), "cuda", "cuda:N", "auto", or "cuda:task":
   * the GPU Spark's resource scheduling assigned to the task (spark.task.resource.gpu.amount), one
   * model per GPU in each executor. The driver, which only plans, stays on the CPU.
   */
  public RecurScorer device(String device) {
    this.source = source.with(java.util.Objects.requireNonNull(device, "device"), source.numThreads);
    return this;
  }

  /** A prefix for the output columns' names ("" by default). */
  public RecurScorer outputPrefix(String prefix) {
    this.outputPrefix = java.util.Objects.requireNonNull(prefix, "prefix");
    return this;
  }

  /** Rows left out by {@link BadRows#SKIP} in the last {@link #score} (read it after an action has run). */
  public long skippedRows() {
    return skipped != null ? skipped.value() : 0;
  }

  /**
   * The scored Dataset (lazy, like any transformation). The driver opens the model once to learn
   * its inputs and outputs (and so needs recur.jar's native library too).
   * @throws RecurSparkException no such column, a column type that holds no sequences, a model
   *         with other than one input, a missing model file, a native library that does not load
   */
  public Dataset<Row> score(Dataset<Row> input) {
    SparkSession spark = input.sparkSession();
    StructType schema = input.schema();
    Plan plan = new Plan();
    plan.sequence = fieldIndex(schema, sequenceColumn, "sequence");
    DataType type = schema.fields()[plan.sequence].dataType();
    List<String> keys = new ArrayList<>();
    if (keyColumns == null) {
      for (StructField f : schema.fields()) if (!f.name().equals(sequenceColumn)) keys.add(f.name());
    } else {
      keys.addAll(Arrays.asList(keyColumns));
    }
    plan.keyNames = keys.toArray(new String[0]);
    plan.keys = new int[plan.keyNames.length];
    List<StructField> out = new ArrayList<>();
    for (int i = 0; i < plan.keys.length; ++i) {
      plan.keys[i] = fieldIndex(schema, plan.keyNames[i], "key");
      out.add(schema.fields()[plan.keys[i]]);
    }

    if (source.kind == ModelSource.Kind.BYTES && source.broadcast == null) {
      source.broadcast = JavaSparkContext.fromSparkContext(spark.sparkContext()).broadcast(source.bytes);
    }
    Model model = source.model("the driver");
    if (model.numInputs() != 1) {
      throw new RecurSparkException("recur-spark: the model " + source.name + " has " + model.numInputs()
          + " inputs; RecurScorer scores models with one sequence input (run several-input models with recur.Model.run in your own mapPartitions)");
    }
    ModelTensor in = model.input(0);
    long[] dims = in.dims();
    if (!in.sequence || in.strings || dims.length < 2 || dims.length > 3 || (dims.length == 3 && dims[2] < 1)) {
      throw new RecurSparkException("recur-spark: the model " + source.name + "'s input '" + in.name + "' is " + in
          + "; RecurScorer takes (batch, steps, features) with a known feature count, or (batch, steps) token ids");
    }
    plan.inputName = in.name;
    plan.features = dims.length == 3 ? (int) dims[2] : 0;
    plan.nested = isArrayOf(type, true);
    if (!plan.nested && !isArrayOf(type, false)) {
      throw new RecurSparkException("recur-spark: column '" + sequenceColumn + "' is " + type.simpleString()
          + "; it must hold array<array<number>> (steps of " + Math.max(plan.features, 1) + " features) or array<number> (steps flattened)");
    }
    if (plan.nested && plan.features == 0) {
      throw new RecurSparkException("recur-spark: the model " + source.name + " takes token ids (batch, steps): column '"
          + sequenceColumn + "' must be array<number>, one id per step, not " + type.simpleString());
    }
    plan.outputNames = model.outputNames().toArray(new String[0]);
    plan.outputDims = new long[plan.outputNames.length][];
    for (int o = 0; o < plan.outputNames.length; ++o) {
      plan.outputDims[o] = model.output(o).dims();
      String col = outputPrefix + plan.outputNames[o].replace(':', '_');
      if (Arrays.asList(schema.fieldNames()).contains(col) && keys.contains(col)) {
        throw new RecurSparkException("recur-spark: output column '" + col + "' clashes with a key column; set outputPrefix");
      }
      out.add(DataTypes.createStructField(col, DataTypes.createArrayType(DataTypes.FloatType, false), false));
    }
    StructType outSchema = DataTypes.createStructType(out);
    skipped = spark.sparkContext().longAccumulator("recur-spark skipped rows");
    plan.skipped = skipped;
    final RecurScorer self = this;
    return input.mapPartitions(
        (org.apache.spark.api.java.function.MapPartitionsFunction<Row, Row>) rows -> new PartitionScorer(self, plan, rows),
        Encoders.row(outSchema));
  }

  private static int fieldIndex(StructType schema, String name, String what) {
    for (int i = 0; i < schema.fields().length; ++i) if (schema.fields()[i].name().equals(name)) return i;
    throw new RecurSparkException("recur-spark: no " + what + " column '" + name + "' among " + Arrays.toString(schema.fieldNames()));
  }

  private static boolean isArrayOf(DataType t, boolean nested) {
    if (!(t instanceof ArrayType)) return false;
    DataType e = ((ArrayType) t).elementType();
    if (nested) return e instanceof ArrayType && ((ArrayType) e).elementType() instanceof NumericType;
    return e instanceof NumericType;
  }

  /** What the driver learnt, shipped to the tasks. */
  static final class Plan implements Serializable {
    private static final long serialVersionUID = 1L;
    int sequence;
    int[] keys;
    String[] keyNames;
    String inputName;
    int features;     // 0: (batch, steps) token ids
    boolean nested;
    String[] outputNames;
    long[][] outputDims;
    LongAccumulator skipped;
  }
}
