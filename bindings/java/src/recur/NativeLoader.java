// SPDX-License-Identifier: Apache-2.0
package recur;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;

/**
 * Loads the JNI library, trying in order:
 * <ol>
 *   <li>-Drecur.library=/path/to/librecur_java.so, that file and nothing else;</li>
 *   <li>System.loadLibrary("recur_java"), from java.library.path (Debian's default path holds
 *       /usr/lib/&lt;multiarch&gt;/jni, where the librecur-java package installs it);</li>
 *   <li>the installed tree around this jar: &lt;prefix&gt;/share/java/recur.jar finds
 *       &lt;prefix&gt;/&lt;libdir&gt;/jni/librecur_java.so (the jar's /native/jni-dir names that folder
 *       relative to share/java);</li>
 *   <li>the copies in this jar (/native/linux-x86-64/librecur_java.so and librecur.so.0, which it
 *       finds through its RUNPATH $ORIGIN) extracted to a temporary folder that is deleted when
 *       the JVM exits.</li>
 * </ol>
 * The library finds librecur.so.0 through its RUNPATH ($ORIGIN, $ORIGIN/..). When nothing loads,
 * the UnsatisfiedLinkError lists every place tried and what happened there.
 */
final class NativeLoader {
  private static final String RESOURCE_DIR = "/native/linux-x86-64/";
  private static final String JNI_DIR_RESOURCE = "/native/jni-dir";
  private static final String JNI_FILE = "librecur_java.so";
  private static final String[] FILES = {"librecur.so.0", JNI_FILE};
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
    List<String> tried = new ArrayList<>();
    try {
      System.loadLibrary("recur_java");
      loaded = true;
      return;
    } catch (UnsatisfiedLinkError e) {
      tried.add("java.library.path: " + e.getMessage());
    }
    Path installed = installedLibrary();
    if (installed != null) {
      if (Files.isRegularFile(installed)) {
        try {
          System.load(installed.toString());
          loaded = true;
          return;
        } catch (UnsatisfiedLinkError e) {
          tried.add(installed + " (the installed tree around the jar): " + e.getMessage());
        }
      } else {
        tried.add(installed + " (the installed tree around the jar): no such file");
      }
    }
    try {
      loadFromJar(tried);
      loaded = true;
    } catch (IOException e) {
      tried.add("the copies in the jar: cannot extract them: " + e);
      throw failure(tried, e);
    }
  }

  // <jar folder>/<jni-dir>/librecur_java.so, or null when the jar's location or the resource is unknown.
  private static Path installedLibrary() {
    try (InputStream in = NativeLoader.class.getResourceAsStream(JNI_DIR_RESOURCE)) {
      if (in == null) return null;
      String relative = new String(in.readAllBytes(), StandardCharsets.UTF_8).trim();
      Path jar = Paths.get(NativeLoader.class.getProtectionDomain().getCodeSource().getLocation().toURI());
      if (!Files.isRegularFile(jar) || relative.isEmpty()) return null;
      return jar.toAbsolutePath().getParent().resolve(relative).resolve(JNI_FILE).normalize();
    } catch (Exception e) {
      return null;  // no code source, not a file URI, unreadable resource: this place is skipped
    }
  }

  private static void loadFromJar(List<String> tried) throws IOException {
    Path dir = Files.createTempDirectory("recur-java-");
    dir.toFile().deleteOnExit();
    Path last = null;
    for (String f : FILES) {
      try (InputStream in = NativeLoader.class.getResourceAsStream(RESOURCE_DIR + f)) {
        if (in == null) {
          tried.add("the jar: no " + RESOURCE_DIR + f);
          throw failure(tried, null);
        }
        Path p = dir.resolve(f);
        Files.copy(in, p, StandardCopyOption.REPLACE_EXISTING);
        p.toFile().deleteOnExit();
        last = p;
      }
    }
    System.load(dir.resolve(FILES[0]).toAbsolutePath().toString());
    System.load(last.toAbsolutePath().toString());
  }

  private static UnsatisfiedLinkError failure(List<String> tried, Throwable cause) {
    StringBuilder m = new StringBuilder("recur: cannot load the JNI library " + JNI_FILE + ". Tried, in order:");
    for (int i = 0; i < tried.size(); ++i) m.append("\n  ").append(i + 1).append(". ").append(tried.get(i));
    m.append("\nUse the recur.jar that recur installs (it carries the native libraries), or name the library with"
        + " -Drecur.library=<libdir>/jni/" + JNI_FILE + ", or install the librecur-java package.");
    UnsatisfiedLinkError u = new UnsatisfiedLinkError(m.toString());
    if (cause != null) u.initCause(cause);
    return u;
  }
}
