// SPDX-License-Identifier: Apache-2.0
package recur.spark;

import java.lang.management.ManagementFactory;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * Rows per second of RecurScorer over a Parquet file (bench.sh makes it): the scored Dataset
 * written to Spark's "noop" sink, once to warm up, then timed. Prints wall time and the JVM's
 * CPU time (every thread: Spark's, the JIT's, the GC's, recur's) per row. Not a test.
 *
 *   java ... recur.spark.SparkBench MASTER PARQUET MODEL [BATCH] [REPEATS]
 */
public final class SparkBench {
  public static void main(String[] args) {
    String master = args[0], parquet = args[1], model = args[2];
    int batch = args.length > 3 ? Integer.parseInt(args[3]) : 256;
    int repeats = args.length > 4 ? Integer.parseInt(args[4]) : 3;
    SparkSession spark = SparkSession.builder().master(master).appName("recur-spark bench")
        .config("spark.ui.enabled", "false").getOrCreate();
    spark.sparkContext().setLogLevel("ERROR");
    Dataset<Row> in = spark.read().parquet(parquet);
    long rows = in.count();
    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    RecurScorer scorer = RecurScorer.fromFile(model).keyColumns("id").batchSize(batch);
    scorer.score(in).write().format("noop").mode("overwrite").save();  // warm-up: JIT, model opened
    double best = Double.MAX_VALUE, cpuAtBest = 0;
    for (int r = 0; r < repeats; ++r) {
      long cpu0 = os.getProcessCpuTime(), t0 = System.nanoTime();
      scorer.score(in).write().format("noop").mode("overwrite").save();
      double wall = (System.nanoTime() - t0) / 1e9, cpu = (os.getProcessCpuTime() - cpu0) / 1e9;
      if (wall < best) {
        best = wall;
        cpuAtBest = cpu;
      }
    }
    System.out.printf("java %s batch %d: %d rows in %.3f s (best of %d): %.0f rows/s, CPU %.1f us/row%n", master, batch,
                      rows, best, repeats, rows / best, cpuAtBest * 1e6 / rows);
    spark.stop();
  }
}
