// SPDX-License-Identifier: Apache-2.0
package recur;

import java.nio.FloatBuffer;
import java.util.Arrays;

/**
 * A caller's buffer that a named run or step writes one output into
 * ({@link Model#runInto}, {@link ModelState#stepInto}), for calls without allocation: size it
 * with {@link Model#outputShapes}, then reuse it. After a successful call {@link #dims()} and
 * {@link #length()} say what was written; a failed call writes nothing.
 */
public final class OutputBuffer {
  final Object buffer;
  final long[] lastDims = new long[Recur.MAX_RANK];
  int lastRank;
  long lastLength;

  private OutputBuffer(Object buffer) {
    this.buffer = buffer;
  }

  /** Writes into array (at least the output's size). */
  public static OutputBuffer of(float[] array) {
    if (array == null) throw new NullPointerException("array");
    return new OutputBuffer(array);
  }

  /** Writes into a direct FloatBuffer in native byte order, from its position to its limit (zero copy). */
  public static OutputBuffer of(FloatBuffer buffer) {
    if (buffer == null) throw new NullPointerException("buffer");
    return new OutputBuffer(Buffers.out(buffer));
  }

  /** The dims of the last output written (empty before the first call). */
  public long[] dims() {
    return Arrays.copyOf(lastDims, lastRank);
  }

  /** The floats written by the last call. */
  public long length() {
    return lastLength;
  }
}
