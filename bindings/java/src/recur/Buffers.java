// SPDX-License-Identifier: Apache-2.0
package recur;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;

/** Checks of the arguments passed to the native raw methods. */
final class Buffers {
  private Buffers() {}

  static Object in(FloatBuffer b) {
    if (b == null) return null;
    if (!b.isDirect())
      throw new IllegalArgumentException("recur: a FloatBuffer argument must be direct "
          + "(ByteBuffer.allocateDirect(4 * n).order(ByteOrder.nativeOrder()).asFloatBuffer()); use the float[] overload otherwise");
    if (b.order() != ByteOrder.nativeOrder())
      throw new IllegalArgumentException("recur: a FloatBuffer argument must be in native byte order (" + ByteOrder.nativeOrder() + ")");
    return b;
  }

  static Object out(FloatBuffer b) {
    if (b != null && b.isReadOnly()) throw new java.nio.ReadOnlyBufferException();
    return in(b);
  }

  static Object mask(ByteBuffer b) {
    if (b == null) return null;
    if (!b.isDirect())
      throw new IllegalArgumentException("recur: a ByteBuffer mask must be direct (ByteBuffer.allocateDirect); use the byte[] overload otherwise");
    return b;
  }

  static void needArray(Object a, String name) {
    if (a == null) throw new NullPointerException(name);
  }

  static int length(long n) {
    if (n < 0 || n > Integer.MAX_VALUE - 8) throw new IllegalArgumentException("recur: " + n + " floats do not fit a Java array");
    return (int) n;
  }

  /** The per-input arrays of a model call, concatenated in input order (what the C ABI takes). */
  static float[] concat(float[][] parts, int count, String what) {
    if (parts == null) throw new NullPointerException(what);
    if (parts.length != count)
      throw new InvalidArgumentException(Recur.ERR_INVALID_ARGUMENT,
          what + ": expected " + count + " arrays (one per model input), got " + parts.length);
    long n = 0;
    for (int i = 0; i < parts.length; ++i) {
      if (parts[i] == null) throw new NullPointerException(what + "[" + i + "]");
      n += parts[i].length;
    }
    float[] out = new float[length(n)];
    int o = 0;
    for (float[] p : parts) {
      System.arraycopy(p, 0, out, o, p.length);
      o += p.length;
    }
    return out;
  }

  /**
   * The masks of a model call: null, or one entry per input, null for an input without a mask;
   * the others are concatenated in input order (null when every entry is null).
   */
  static byte[] concatMasks(byte[][] masks, int count) {
    if (masks == null) return null;
    if (masks.length != count)
      throw new InvalidArgumentException(Recur.ERR_INVALID_ARGUMENT,
          "masks: expected " + count + " entries (one per model input, null where none), got " + masks.length);
    long n = 0;
    boolean any = false;
    for (byte[] m : masks)
      if (m != null) {
        n += m.length;
        any = true;
      }
    if (!any) return null;
    byte[] out = new byte[length(n)];
    int o = 0;
    for (byte[] m : masks)
      if (m != null) {
        System.arraycopy(m, 0, out, o, m.length);
        o += m.length;
      }
    return out;
  }

  static long product(long[] dims) {
    long n = 1;
    for (long d : dims) n *= d;
    return n;
  }

  /** Splits the concatenated outputs of a model call into one array per output. */
  static float[][] split(float[] flat, long[][] dims) {
    float[][] out = new float[dims.length][];
    int o = 0;
    for (int i = 0; i < dims.length; ++i) {
      int n = length(product(dims[i]));
      if (o + n > flat.length) throw new IllegalStateException("recur: the outputs' dims exceed the outputs' length");
      out[i] = java.util.Arrays.copyOfRange(flat, o, o + n);
      o += n;
    }
    if (o != flat.length) throw new IllegalStateException("recur: the outputs' dims do not cover the outputs' length");
    return out;
  }

  /** A direct FloatBuffer in native order of n floats. */
  static FloatBuffer allocate(int n) {
    return ByteBuffer.allocateDirect(4 * n).order(ByteOrder.nativeOrder()).asFloatBuffer();
  }
}
