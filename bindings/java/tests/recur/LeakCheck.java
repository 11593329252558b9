// SPDX-License-Identifier: Apache-2.0
package recur;

import org.junit.platform.console.ConsoleLauncher;

/**
 * The JUnit console launcher (same arguments), then a native leak check: once the tests pass, the
 * garbage collector and the finalizers run until every live-handle count (run options included) reads zero, or 30 s have
 * passed. Exits 1 naming what was left, so the whole run of a ctest test is shown leak-free.
 */
public final class LeakCheck {
  private LeakCheck() {}

  public static void main(String[] args) throws Exception {
    int code = ConsoleLauncher.execute(System.out, System.err, args).getExitCode();
    System.out.flush();
    if (code == 0) {
      LiveHandles left = LeakTest.awaitCounts(LeakTest.NONE, 30_000);
      long options = Recur.liveRunOptions();
      for (long end = System.nanoTime() + 30_000_000_000L; options != 0 && System.nanoTime() < end; options = Recur.liveRunOptions()) {
        System.gc();
        System.runFinalization();
        Thread.sleep(10);
      }
      if (left.total() != 0 || options != 0) {
        System.out.println("LEAK: native handles alive after the tests: " + left + ", run options " + options);
        code = 1;
      } else {
        System.out.println("no native handles alive after the tests");
      }
    }
    System.exit(code);
  }
}
