// SPDX-License-Identifier: Apache-2.0
package recur;

import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.util.Arrays;

/**
 * One model input of a named run or step ({@link Model#run(java.util.Map)}): row-major values
 * with their dims, batch first, and an optional (batch, timesteps) mask for a sequence input
 * (nonzero = valid step). The name is the key of the map it is passed in. float32 values are read
 * as they are; int32 and int64 values that feed an Embedding reach it as integers (exact at any
 * size), and elsewhere are cast to float32 as Keras casts them. A Tensor only wraps the caller's
 * array or direct buffer (native byte order; the elements between position and limit), which is
 * read during each call and never kept: changing the array changes what the next call reads.
 */
public final class Tensor {
  /** Element types (recur_dtype). */
  public enum DType {
    FLOAT32(1), INT32(2), INT64(3),
    /** Text for a string model input (since 0.7). */
    STRING(4);

    final int code;

    DType(int code) {
      this.code = code;
    }
  }

  final DType dtype;
  final Object data;
  final long[] dims;
  final Object mask;

  private Tensor(DType dtype, Object data, long[] dims, Object mask) {
    this.dtype = dtype;
    this.data = data;
    this.dims = dims;
    this.mask = mask;
  }

  private static long[] checkedDims(long[] dims) {
    if (dims == null) throw new NullPointerException("dims");
    if (dims.length < 1 || dims.length > Recur.MAX_RANK)
      throw new IllegalArgumentException("recur: dims must hold 1 to " + Recur.MAX_RANK + " values (batch first), got "
          + dims.length);
    return dims.clone();
  }

  private static <B extends Buffer> B direct(B b, ByteOrder order, String what) {
    if (b == null) throw new NullPointerException("data");
    if (!b.isDirect())
      throw new IllegalArgumentException("recur: a " + what + " must be direct (ByteBuffer.allocateDirect(n).order("
          + "ByteOrder.nativeOrder()).as" + what + "()); use the array overload otherwise");
    if (order != ByteOrder.nativeOrder())
      throw new IllegalArgumentException("recur: a " + what + " must be in native byte order (" + ByteOrder.nativeOrder() + ")");
    return b;
  }

  /** float32 values. */
  public static Tensor of(float[] data, long... dims) {
    if (data == null) throw new NullPointerException("data");
    return new Tensor(DType.FLOAT32, data, checkedDims(dims), null);
  }

  /** int32 values (token ids). */
  public static Tensor of(int[] data, long... dims) {
    if (data == null) throw new NullPointerException("data");
    return new Tensor(DType.INT32, data, checkedDims(dims), null);
  }

  /** int64 values (token ids). */
  public static Tensor of(long[] data, long... dims) {
    if (data == null) throw new NullPointerException("data");
    return new Tensor(DType.INT64, data, checkedDims(dims), null);
  }

  /**
   * Texts for a string model input (Keras dtype "string", read by StringLookup or
   * TextVectorization; {@link ModelTensor#strings}), row-major over dims, e.g. (batch, 1) for a
   * TextVectorization: one text per row (since 0.7). Unlike the numeric overloads, the texts are
   * encoded to UTF-8 here, once: later changes to the array are not seen. A text holding '\0'
   * (which the C ABI's NUL-terminated strings cannot carry) or a null element is refused with
   * IllegalArgumentException / NullPointerException naming its index.
   */
  public static Tensor ofStrings(String[] texts, long... dims) {
    if (texts == null) throw new NullPointerException("texts");
    byte[][] utf8 = new byte[texts.length][];
    for (int i = 0; i < texts.length; ++i) {
      if (texts[i] == null) throw new NullPointerException("texts[" + i + "]");
      if (texts[i].indexOf('\0') >= 0)
        throw new IllegalArgumentException("recur: texts[" + i + "] holds a NUL character, which a text input cannot carry");
      byte[] b = texts[i].getBytes(java.nio.charset.StandardCharsets.UTF_8);
      utf8[i] = Arrays.copyOf(b, b.length + 1);  // NUL-terminated
    }
    return new Tensor(DType.STRING, utf8, checkedDims(dims), null);
  }

  /** float32 values in a direct buffer (zero copy). */
  public static Tensor of(FloatBuffer data, long... dims) {
    return new Tensor(DType.FLOAT32, direct(data, data == null ? null : data.order(), "FloatBuffer"), checkedDims(dims), null);
  }

  /** int32 values in a direct buffer (zero copy). */
  public static Tensor of(IntBuffer data, long... dims) {
    return new Tensor(DType.INT32, direct(data, data == null ? null : data.order(), "IntBuffer"), checkedDims(dims), null);
  }

  /** int64 values in a direct buffer (zero copy). */
  public static Tensor of(LongBuffer data, long... dims) {
    return new Tensor(DType.INT64, direct(data, data == null ? null : data.order(), "LongBuffer"), checkedDims(dims), null);
  }

  /** This tensor with a (batch, timesteps) mask (nonzero = valid step); null removes it. */
  public Tensor withMask(byte[] mask) {
    return new Tensor(dtype, data, dims, mask);
  }

  /** {@link #withMask(byte[])} from a direct ByteBuffer (its bytes between position and limit). */
  public Tensor withMask(ByteBuffer mask) {
    if (mask != null && !mask.isDirect())
      throw new IllegalArgumentException("recur: a ByteBuffer mask must be direct (ByteBuffer.allocateDirect); use the byte[] overload otherwise");
    return new Tensor(dtype, data, dims, mask);
  }

  public DType dtype() {
    return dtype;
  }

  /** A copy of the dims. */
  public long[] dims() {
    return dims.clone();
  }

  @Override
  public String toString() {
    return "Tensor(" + dtype + ", " + Arrays.toString(dims) + (mask != null ? ", masked" : "") + ")";
  }
}
