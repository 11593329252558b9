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

  /** A direct FloatBuffer in native order of n floats. */
  static FloatBuffer allocate(int n) {
    return ByteBuffer.allocateDirect(4 * n).order(ByteOrder.nativeOrder()).asFloatBuffer();
  }
}
