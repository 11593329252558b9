// SPDX-License-Identifier: Apache-2.0
package recur.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * recur-spark against Keras: every row of tests/fixtures/sequences.parquet (240 sequences of 1 to
 * 12 steps) scored on local[2] equals Keras's output for that row alone (expected.parquet, from
 * make_fixtures.py), padded and masked or grouped by length; and the errors users meet. One
 * SparkSession for the whole class.
 */
class SparkScoringTest {
  static final Path FIXTURES = Paths.get(System.getProperty("recur.spark.fixtures"));
  static final double TOL = 1e-5;
  static SparkSession spark;
  static Dataset<Row> sequences;
  static Map<Long, Row> expected = new HashMap<>();

  @BeforeAll
  static void start() {
    spark = SparkSession.builder().master("local[2]").appName("recur-spark tests")
        .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate();
    spark.sparkContext().setLogLevel("ERROR");
    if (System.getProperty("recur.library") != null) return;  // the native-missing run reads no fixtures
    // Four partitions: each task scores its own rows, batches of mixed lengths in each.
    sequences = spark.read().parquet(FIXTURES.resolve("sequences.parquet").toString()).repartition(4).cache();
    for (Row r : spark.read().parquet(FIXTURES.resolve("expected.parquet").toString()).collectAsList()) {
      expected.put(r.getLong(r.fieldIndex("id")), r);
    }
    assertEquals(240, expected.size());
  }

  @AfterAll
  static void stop() {
    if (spark != null) spark.stop();
  }

  static String model(String name) {
    return FIXTURES.resolve(name).toString();
  }

  /** Compares output column `col` of every scored row with Keras's `want`; returns the worst difference. */
  static double compare(Dataset<Row> scored, String col, String want) {
    List<Row> rows = scored.collectAsList();
    assertEquals(240, rows.size(), "every row scored once");
    double worst = 0;
    for (Row r : rows) {
      long id = r.getLong(r.fieldIndex("id"));
      List<Float> got = r.getList(r.fieldIndex(col));
      List<Float> ref = expected.get(id).getList(expected.get(id).fieldIndex(want));
      assertEquals(ref.size(), got.size(), "row id=" + id + " " + col + " length");
      for (int i = 0; i < ref.size(); ++i) worst = Math.max(worst, Math.abs(got.get(i) - ref.get(i)));
    }
    System.out.printf("  %s vs Keras %s: 240 rows, worst |diff| %.3g%n", col, want, worst);
    assertTrue(worst <= TOL, col + ": worst difference " + worst + " over " + TOL);
    return worst;
  }

  @Test
  void keras3MaskingGruFromFilePaddedAndMasked() {
    Dataset<Row> scored = RecurScorer.fromFile(model("gru_masking_keras3.keras")).sequenceColumn("seq").keyColumns("id")
        .batchSize(16).score(sequences);
    assertEquals(Arrays.asList("id", "score", "gru"), Arrays.asList(scored.columns()));
    compare(scored, "score", "k3_score");
    compare(scored, "gru", "k3_gru");  // a sequence output: each row's own steps only
  }

  @Test
  void keras3GroupedByLength() {
    Dataset<Row> scored = RecurScorer.fromFile(model("gru_masking_keras3.keras")).padding(Padding.GROUP).batchSize(64)
        .score(sequences);
    compare(scored, "score", "k3_score");
    compare(scored, "gru", "k3_gru");
  }

  @Test
  void keras2LstmWithoutMaskingFromBytes() throws Exception {
    // No Masking layer: padded rows give Keras's numbers only through the mask recur-spark passes.
    byte[] bytes = Files.readAllBytes(Paths.get(model("lstm_keras2.h5")));
    Dataset<Row> scored = RecurScorer.fromBytes(bytes, "lstm_keras2.h5").keyColumns("id").batchSize(32).score(sequences);
    compare(scored, "prob", "k2_prob");
  }

  @Test
  void keras2FromSparkFilesWithFlatColumn() {
    spark.sparkContext().addFile(model("lstm_keras2.h5"));
    Dataset<Row> flat = sequences.selectExpr("id", "flatten(seq) AS values");
    Dataset<Row> scored = RecurScorer.fromSparkFile("lstm_keras2.h5").sequenceColumn("values").outputPrefix("y_")
        .score(flat);
    compare(scored, "y_prob", "k2_prob");
  }

  @Test
  void tokenIdsThroughEmbeddingMaskZero() {
    // A (batch, steps) input: array<int> holds one id per step; Embedding(mask_zero) masks the padding too.
    Dataset<Row> scored = RecurScorer.fromFile(model("embedding_gru_keras3.keras")).sequenceColumn("tokens")
        .keyColumns("id").batchSize(50).score(sequences);
    compare(scored, "tok_score", "k3_tok");
    compare(RecurScorer.fromFile(model("embedding_gru_keras3.keras")).sequenceColumn("tokens").keyColumns("id")
                .padding(Padding.GROUP).score(sequences), "tok_score", "k3_tok");
  }

  static Dataset<Row> badTable() {
    StructType schema = DataTypes.createStructType(Arrays.asList(
        DataTypes.createStructField("id", DataTypes.LongType, false),
        DataTypes.createStructField("seq", DataTypes.createArrayType(DataTypes.createArrayType(DataTypes.DoubleType)), true)));
    List<Double> step = Arrays.asList(0.5, -0.25, 1.0, 0.75);
    return spark.createDataFrame(Arrays.asList(
        RowFactory.create(1L, Arrays.asList(step, step)),
        RowFactory.create(7L, Arrays.asList(step, Arrays.asList(1.0, 2.0, 3.0))),
        RowFactory.create(8L, null),
        RowFactory.create(9L, Arrays.asList()),
        RowFactory.create(10L, Arrays.asList(Arrays.asList(1.0, null, 3.0, 4.0))),
        RowFactory.create(11L, Arrays.asList(step))), schema).coalesce(1);
  }

  @Test
  void badRowFailsNamingItsKey() {
    Exception e = assertThrows(Exception.class,
        () -> RecurScorer.fromFile(model("lstm_keras2.h5")).score(badTable()).collectAsList());
    String m = rootMessage(e);
    assertTrue(m.contains("row id=7") && m.contains("step 1 has 3 features") && m.contains("takes 4"), m);
  }

  @Test
  void badRowsSkipped() {
    RecurScorer s = RecurScorer.fromFile(model("lstm_keras2.h5")).badRows(BadRows.SKIP);
    List<Row> rows = s.score(badTable()).collectAsList();
    assertEquals(2, rows.size());
    assertEquals(4, s.skippedRows());
    // The good rows score as they do alone.
    List<Row> alone = RecurScorer.fromFile(model("lstm_keras2.h5"))
        .score(badTable().where("id IN (1, 11)")).collectAsList();
    assertEquals(alone.get(0).getList(1), rows.get(0).getList(1));
  }

  @Test
  void nullAndEmptyRowsNamed() {
    for (String[] c : new String[][] {{"8", "the sequence is null"}, {"9", "the sequence is empty"},
                                      {"10", "step 0, feature 1 is null"}}) {
      Exception e = assertThrows(Exception.class, () -> RecurScorer.fromFile(model("lstm_keras2.h5"))
          .score(badTable().where("id = " + c[0])).collectAsList());
      String m = rootMessage(e);
      assertTrue(m.contains("row id=" + c[0]) && m.contains(c[1]), m);
    }
  }

  @Test
  void missingModelFile() {
    RecurSparkException e = assertThrows(RecurSparkException.class,
        () -> RecurScorer.fromFile("/nonexistent/model.keras").score(sequences));
    assertTrue(e.getMessage().contains("/nonexistent/model.keras does not exist") && e.getMessage().contains("--files"),
               e.getMessage());
  }

  @Test
  void sparkFileNotShipped() {
    RecurSparkException e = assertThrows(RecurSparkException.class,
        () -> RecurScorer.fromSparkFile("never_added.keras").score(sequences));
    assertTrue(e.getMessage().contains("'never_added.keras' was not shipped") && e.getMessage().contains("addFile"),
               e.getMessage());
  }

  @Test
  void columnsThatHoldNoSequences() {
    RecurSparkException e = assertThrows(RecurSparkException.class,
        () -> RecurScorer.fromFile(model("lstm_keras2.h5")).sequenceColumn("id").score(sequences));
    assertTrue(e.getMessage().contains("column 'id' is bigint"), e.getMessage());
    e = assertThrows(RecurSparkException.class,
        () -> RecurScorer.fromFile(model("lstm_keras2.h5")).sequenceColumn("nope").score(sequences));
    assertTrue(e.getMessage().contains("no sequence column 'nope'"), e.getMessage());
  }

  @Test
  void corruptModelBytes() {
    RecurSparkException e = assertThrows(RecurSparkException.class,
        () -> RecurScorer.fromBytes(new byte[] {1, 2, 3, 4}, "junk.keras").score(sequences));
    assertTrue(e.getMessage().contains("cannot open the model junk.keras") && e.getMessage().contains("junk.keras:"),
               e.getMessage());
  }

  @Test
  void taskGpuWithoutGpuResources() {
    Exception e = assertThrows(Exception.class, () -> RecurScorer.fromFile(model("lstm_keras2.h5")).device("cuda:task")
        .score(badTable().where("id = 1")).collectAsList());
    String m = rootMessage(e);
    assertTrue(m.contains("device \"cuda:task\" needs a GPU assigned to each task") && m.contains("spark.task.resource.gpu.amount"), m);
  }

  @Test
  void statefulModelRefused() {
    RecurSparkException e = assertThrows(RecurSparkException.class,
        () -> RecurScorer.fromFile(model("stateful_gru_keras3.keras")).score(sequences));
    assertTrue(e.getMessage().contains("is stateful") && e.getMessage().contains("stateful=False"), e.getMessage());
  }

  static String rootMessage(Throwable e) {
    StringBuilder s = new StringBuilder();
    for (Throwable t = e; t != null; t = t.getCause()) s.append(t.getMessage()).append('\n');
    return s.toString();
  }

  /** Run alone, in a JVM started with -Drecur.library=<a file that does not exist>. */
  @Test
  @Tag("native-missing")
  void nativeLibraryThatDoesNotLoad() {
    RecurSparkException e = assertThrows(RecurSparkException.class,
        () -> RecurScorer.fromFile(model("lstm_keras2.h5")).score(badTable()));
    assertTrue(e.getMessage().contains("the recur native library cannot be loaded on the driver")
        && e.getMessage().contains("--jars"), e.getMessage());
  }
}
