// SPDX-License-Identifier: Apache-2.0
package recur.flink;

import java.io.File;
import java.io.IOException;
import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import org.apache.flink.api.common.functions.RuntimeContext;
import recur.Model;

/**
 * Where a task finds the model (a .keras or .h5 file): bytes carried in the job graph, a path on
 * every task manager, or a file registered with Flink's distributed cache
 * ({@code env.registerCachedFile(path, name)}). Each task opens it once, in open().
 */
public abstract class ModelSource implements Serializable {
  private static final long serialVersionUID = 1L;

  /** The model's bytes, shipped inside the job (fine for models up to a few MB). */
  public static ModelSource bytes(byte[] modelFile, String name) {
    if (modelFile == null) throw new NullPointerException("modelFile");
    final byte[] copy = modelFile.clone();
    final String n = name == null ? "model" : name;
    return new ModelSource() {
      private static final long serialVersionUID = 1L;

      @Override
      Model open(RuntimeContext ctx) {
        return Model.open(copy, n);
      }

      @Override
      public String toString() {
        return n + " (" + copy.length + " bytes in the job)";
      }
    };
  }

  /** The model's bytes read now, on the client, from a local file, and shipped in the job. */
  public static ModelSource bytesOf(String path) throws IOException {
    return bytes(Files.readAllBytes(new File(path).toPath()), new File(path).getName());
  }

  /** A path that every task manager can read (a shared volume, or a file shipped with the image). */
  public static ModelSource file(String path) {
    if (path == null) throw new NullPointerException("path");
    return new ModelSource() {
      private static final long serialVersionUID = 1L;

      @Override
      Model open(RuntimeContext ctx) throws IOException {
        return openFile(new File(path), "model file " + path);
      }

      @Override
      public String toString() {
        return path;
      }
    };
  }

  /** A file registered with {@code env.registerCachedFile(path, name)}: Flink copies it to each task manager. */
  public static ModelSource distributedCache(String name) {
    if (name == null) throw new NullPointerException("name");
    return new ModelSource() {
      private static final long serialVersionUID = 1L;

      @Override
      Model open(RuntimeContext ctx) throws IOException {
        File f;
        try {
          f = ctx.getDistributedCache().getFile(name);
        } catch (RuntimeException e) {
          throw new RecurFlinkException("recur-flink: no file '" + name + "' in Flink's distributed cache ("
              + e.getMessage() + "); register it with env.registerCachedFile(path, \"" + name + "\")", e);
        }
        return openFile(f, "distributed-cache file '" + name + "' (" + f + ")");
      }

      @Override
      public String toString() {
        return "distributed cache '" + name + "'";
      }
    };
  }

  static Model openFile(File f, String what) throws IOException {
    if (!f.isFile())
      throw new RecurFlinkException("recur-flink: the " + what + " does not exist on task manager "
          + hostName() + "; ship it to every task manager (same path), use ModelSource.distributedCache, or "
          + "ModelSource.bytesOf to carry it in the job", new NoSuchFileException(f.getPath()));
    return Model.open(f.getPath());
  }

  static String hostName() {
    try {
      return java.net.InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      return "(unknown host)";
    }
  }

  abstract Model open(RuntimeContext ctx) throws Exception;
}
