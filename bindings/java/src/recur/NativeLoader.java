package recur;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * Loads the JNI library: System.loadLibrary("recur_java") from java.library.path, else the copy in
 * this jar (/native/linux-x86-64/librecur_java.so and librecur.so.0, which it finds through its
 * RUNPATH $ORIGIN) extracted to a temporary folder that is deleted when the JVM exits.
 * -Drecur.library=/path/to/librecur_java.so loads that file instead.
 */
final class NativeLoader {
  private static final String RESOURCE_DIR = "/native/linux-x86-64/";
  private static final String[] FILES = {"librecur.so.0", "librecur_java.so"};
  private static boolean loaded;

  private NativeLoader() {}

  static synchronized void load() {
    if (loaded) return;
    String explicit = System.getProperty("recur.library");
    if (explicit != null) {
      System.load(explicit);
      loaded = true;
      return;
    }
    UnsatisfiedLinkError first;
    try {
      System.loadLibrary("recur_java");
      loaded = true;
      return;
    } catch (UnsatisfiedLinkError e) {
      first = e;
    }
    try {
      Path dir = Files.createTempDirectory("recur-java-");
      dir.toFile().deleteOnExit();
      Path last = null;
      for (String f : FILES) {
        try (InputStream in = NativeLoader.class.getResourceAsStream(RESOURCE_DIR + f)) {
          if (in == null) throw new UnsatisfiedLinkError("recur: no " + f + " in java.library.path ("
              + first.getMessage() + ") nor in the jar under " + RESOURCE_DIR);
          Path p = dir.resolve(f);
          Files.copy(in, p, StandardCopyOption.REPLACE_EXISTING);
          p.toFile().deleteOnExit();
          last = p;
        }
      }
      System.load(dir.resolve(FILES[0]).toAbsolutePath().toString());
      System.load(last.toAbsolutePath().toString());
      loaded = true;
    } catch (IOException e) {
      UnsatisfiedLinkError u = new UnsatisfiedLinkError("recur: cannot extract the native library: " + e);
      u.initCause(e);
      throw u;
    }
  }
}
