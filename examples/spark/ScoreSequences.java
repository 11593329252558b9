// SPDX-License-Identifier: Apache-2.0
// Scores a Parquet table of sequences with a Keras model on Spark (recur-spark; docs/spark.md).
//
//   spark-submit --class ScoreSequences --jars recur.jar,recur-spark.jar --files model.keras \
//       score-sequences.jar model.keras sequences.parquet [scores.parquet]
//
// or, without spark-submit (local[2]; see README.md for the JVM options Spark needs on Java 17):
//   java <options> -cp recur.jar:recur-spark.jar:<pyspark>/jars/* ScoreSequences.java MODEL PARQUET [OUT]
import java.nio.file.Paths;
import org.apache.spark.SparkConf;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import recur.spark.BadRows;
import recur.spark.RecurScorer;

public class ScoreSequences {
  public static void main(String[] args) {
    if (args.length < 2) {
      System.err.println("usage: ScoreSequences MODEL PARQUET [OUT]");
      System.exit(2);
    }
    SparkSession.Builder b = SparkSession.builder().appName("recur-spark example");
    if (!new SparkConf().contains("spark.master")) b.master("local[2]");  // spark-submit sets the master
    SparkSession spark = b.getOrCreate();
    spark.sparkContext().setLogLevel("WARN");

    // The model travels with the job (as spark-submit --files does) and each executor opens it once.
    String model = args[0];
    if (!spark.sparkContext().listFiles().exists(f -> f.endsWith("/" + Paths.get(model).getFileName()))) {
      spark.sparkContext().addFile(model);
    }
    Dataset<Row> sequences = spark.read().parquet(args[1]);  // id: bigint, seq: array<array<float>>
    RecurScorer scorer = RecurScorer.fromSparkFile(Paths.get(model).getFileName().toString())
        .sequenceColumn("seq").keyColumns("id")
        .batchSize(256)             // rows per model call
        .badRows(BadRows.SKIP);     // bad rows are left out (and counted) rather than failing the job
    Dataset<Row> scores = scorer.score(sequences);
    if (args.length > 2) {
      scores.write().mode("overwrite").parquet(args[2]);
    } else {
      scores.show(3, 80);
    }
    long n = args.length > 2 ? spark.read().parquet(args[2]).count() : scores.count();
    System.out.println("example finished: " + n + " rows scored, " + scorer.skippedRows() + " skipped");
    spark.stop();
  }
}
