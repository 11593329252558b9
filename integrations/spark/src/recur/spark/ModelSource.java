// SPDX-License-Identifier: Apache-2.0
package recur.spark;

import java.io.Serializable;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkFiles;
import org.apache.spark.TaskContext;
import org.apache.spark.resource.ResourceInformation;
import org.apache.spark.broadcast.Broadcast;
import recur.Model;

/**
 * Where executors find the model: a path they all see, a file shipped with addFile / --files
 * (SparkFiles), or the bytes of the file broadcast with the job. Each JVM opens a source once and
 * keeps the model for its lifetime: the tasks of an executor share it (a stateless model is safe
 * to run from several threads at once).
 */
final class ModelSource implements Serializable {
  private static final long serialVersionUID = 1L;
  private static final ConcurrentHashMap<String, Model> OPEN = new ConcurrentHashMap<>();
  static final String TASK_GPU = "cuda:task";

  enum Kind { FILE, SPARK_FILE, BYTES }

  final Kind kind;
  final String path;              // FILE: the path; SPARK_FILE: the name given to addFile
  final transient byte[] bytes;   // BYTES, on the driver until broadcast
  Broadcast<byte[]> broadcast;    // BYTES, on executors
  final String name;              // stands for the model in messages
  final String device;
  final int numThreads;

  ModelSource(Kind kind, String path, byte[] bytes, String name, String device, int numThreads) {
    this.kind = kind;
    this.path = path;
    this.bytes = bytes;
    this.name = name;
    this.device = device;
    this.numThreads = numThreads;
  }

  ModelSource with(String device, int numThreads) {
    ModelSource s = new ModelSource(kind, path, bytes, name, device, numThreads);
    s.broadcast = broadcast;
    return s;
  }

  /** The device this JVM opens the model on: "cuda:task" is the GPU Spark assigned to the running task (the CPU on the driver). */
  String resolvedDevice() {
    if (!TASK_GPU.equals(device)) return device;
    TaskContext tc = TaskContext.get();
    if (tc == null) return "cpu";  // the driver only plans
    ResourceInformation gpu = tc.resourcesJMap().get("gpu");
    if (gpu == null || gpu.addresses().length == 0) {
      throw new RecurSparkException("recur-spark: device \"" + TASK_GPU + "\" needs a GPU assigned to each task, and task "
          + tc.taskAttemptId() + " on host " + host() + " has none: set spark.executor.resource.gpu.amount,"
          + " spark.task.resource.gpu.amount and spark.executor.resource.gpu.discoveryScript (docs/spark.md, GPUs)");
    }
    return "cuda:" + gpu.addresses()[0];
  }

  private String key() {
    String where = kind == Kind.BYTES ? (broadcast != null ? "broadcast:" + broadcast.id() : "bytes:" + System.identityHashCode(bytes))
                                      : kind + ":" + path;
    return where + "|" + resolvedDevice() + "|" + numThreads;
  }

  static String host() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (Exception e) {
      return "?";
    }
  }

  /** The model of this source in this JVM, opened on first use. */
  Model model(String where) {
    Model m = OPEN.get(key());
    if (m != null) return m;
    synchronized (OPEN) {
      m = OPEN.get(key());
      if (m == null) {
        m = open(where);
        OPEN.put(key(), m);
      }
      return m;
    }
  }

  private Model open(String where) {
    byte[] image = null;
    Path file = null;
    switch (kind) {
      case FILE:
        file = Paths.get(path);
        if (!Files.isRegularFile(file)) {
          throw new RecurSparkException("recur-spark: the model file " + path + " does not exist on " + where + " (host "
              + host() + "): put it where every executor sees it (a shared file system), or ship it with"
              + " spark-submit --files / SparkContext.addFile and use RecurScorer.fromSparkFile(\"" + file.getFileName() + "\")");
        }
        break;
      case SPARK_FILE:
        String local;
        try {
          local = SparkFiles.get(path);
        } catch (RuntimeException e) {
          throw new RecurSparkException("recur-spark: cannot look up the Spark file '" + path + "' on " + where + ": " + e, e);
        }
        file = Paths.get(local);
        if (!Files.isRegularFile(file)) {
          throw new RecurSparkException("recur-spark: the model '" + path + "' was not shipped to " + where + " (host " + host()
              + "; looked for " + local + "): add it with spark-submit --files /path/" + path
              + " or spark.sparkContext().addFile(\"/path/" + path + "\") before scoring");
        }
        break;
      case BYTES:
        image = bytes != null ? bytes : broadcast != null ? broadcast.value() : null;
        if (image == null) throw new RecurSparkException("recur-spark: the model's bytes did not reach " + where);
        break;
      default:
        throw new IllegalStateException(kind.toString());
    }
    Model m;
    try {
      m = image != null ? Model.open(image, name) : Model.open(file.toString());
    } catch (LinkageError e) {
      // UnsatisfiedLinkError (the loader lists every place it tried), or NoClassDefFoundError /
      // ExceptionInInitializerError when an earlier task of this JVM failed to load it.
      throw new RecurSparkException("recur-spark: the recur native library cannot be loaded on " + where + " (host " + host()
          + ", " + System.getProperty("os.name") + " " + System.getProperty("os.arch") + "): " + e.getMessage()
          + "\nShip recur.jar with spark-submit --jars (it carries librecur_java.so and librecur.so.0 for linux-x86-64 and"
          + " extracts them to a temporary folder), or install librecur-java on every executor, or name the library with"
          + " spark.executor.extraJavaOptions=-Drecur.library=/path/librecur_java.so", e);
    } catch (RuntimeException e) {
      throw new RecurSparkException("recur-spark: cannot open the model " + name + " on " + where + ": " + e.getMessage(), e);
    }
    try {
      if (m.isStateful()) {
        throw new RecurSparkException("recur-spark: the model " + name + " is stateful: its rows would carry states into"
            + " each other; save it with stateful=False to score rows independently");
      }
      if (numThreads != 1) m.setNumThreads(numThreads);
      String dev = resolvedDevice();
      if (!dev.equals("cpu")) m.setDevice(dev);
    } catch (RuntimeException e) {
      m.close();
      if (e instanceof RecurSparkException) throw e;
      throw new RecurSparkException("recur-spark: model " + name + " on " + where + ": " + e.getMessage(), e);
    }
    return m;
  }
}
