// SPDX-License-Identifier: Apache-2.0
package recur;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/** Every error path: the typed exception, its status and the library's message. */
class ErrorTest {
  static final String GRU = "{\"class_name\": \"GRU\", \"config\": {\"units\": 3, \"return_sequences\": true}}";

  static <T extends RecurException> T raises(Class<T> cls, int status, String inMessage, Executable e) {
    T ex = assertThrows(cls, e);
    assertEquals(status, ex.status());
    assertNotNull(ex.getMessage());
    assertFalse(ex.getMessage().isEmpty(), "a message");
    if (inMessage != null)
      assertTrue(ex.getMessage().contains(inMessage), "'" + ex.getMessage() + "' should mention " + inMessage);
    return ex;
  }

  @Test
  void invalidArgument() {
    try (LayerOptions o = LayerOptions.of(Recur.LAYER_GRU, 0, 4)) {
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "units", () -> Layer.create(o));
    }
    try (LayerOptions o = LayerOptions.of(Recur.LAYER_GRU, 3, 4)) {
      o.setActivation("no_such_activation");
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, "no_such_activation", () -> Layer.create(o));
    }
    try (Layer l = Layer.fromJson(GRU, 2, Recur.DIALECT_AUTO, null)) {
      raises(InvalidArgumentException.class, Recur.ERR_INVALID_ARGUMENT, null, () -> l.getWeight(7));
    }
  }

  @Test
  void shape() {
    try (Layer l = Layer.fromJson(GRU, 2, Recur.DIALECT_AUTO, null)) {
      raises(ShapeException.class, Recur.ERR_SHAPE, "input", () -> l.forward(new float[5], 1, 2));
      raises(ShapeException.class, Recur.ERR_SHAPE, null, () -> l.setWeights(new float[3]));
      raises(ShapeException.class, Recur.ERR_SHAPE, null,
          () -> l.forward(new float[4], 1, 2, new byte[5], null, 0, false, new float[6], null));
      try (State s = new State(l, 1)) {
        raises(ShapeException.class, Recur.ERR_SHAPE, null, () -> l.forwardState(s, new float[3], new float[3]));
        raises(ShapeException.class, Recur.ERR_SHAPE, null, () -> s.set(new float[2], 1));
        FloatBuffer in = Buffers.allocate(2), out = Buffers.allocate(4);
        raises(ShapeException.class, Recur.ERR_SHAPE, null, () -> l.forwardState(s, in, out));
      }
    }
  }

  @Test
  void unsupported() {
    try (LayerOptions o = LayerOptions.of(Recur.LAYER_CUDNN_GRU, 3, 4)) {
      o.setDialect(Recur.DIALECT_KERAS3);
      raises(UnsupportedException.class, Recur.ERR_UNSUPPORTED, null, () -> Layer.create(o));
    }
  }

  @Test
  void parse() {
    raises(ParseException.class, Recur.ERR_PARSE, null, () -> Layer.fromJson("{\"class_name\": \"GRU\", ", 2, 0, null));
  }

  @Test
  void state() {
    try (Layer l = Layer.fromJson(GRU, 2, Recur.DIALECT_AUTO, null)) {
      raises(StateException.class, Recur.ERR_STATE, "stateful", l::resetStates);
      raises(StateException.class, Recur.ERR_STATE, null,
          () -> l.cellCall(new float[2], 1, new float[3], 1, false, new float[3], null));
    }
  }

  @Test
  void io() {
    raises(IoException.class, Recur.ERR_IO, "no_such_model.keras", () -> Model.open("/nonexistent/no_such_model.keras"));
  }

  @Test
  void statusesAreDistinctClasses() {
    // OUT_OF_MEMORY and INTERNAL cannot be provoked from outside; their classes carry the status too.
    assertEquals(Recur.ERR_OUT_OF_MEMORY, new OutOfMemoryException(Recur.ERR_OUT_OF_MEMORY, "m").status());
    assertEquals(Recur.ERR_INTERNAL, new InternalException(Recur.ERR_INTERNAL, "m").status());
    assertTrue(RecurException.class.isAssignableFrom(IoException.class));
    assertTrue(RuntimeException.class.isAssignableFrom(RecurException.class));
  }

  @Test
  void javaSideArgumentErrors() {
    try (Layer l = Layer.fromJson(GRU, 2, Recur.DIALECT_AUTO, null); State s = new State(l, 1)) {
      FloatBuffer heap = FloatBuffer.allocate(2);
      FloatBuffer out = Buffers.allocate(3);
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> l.forwardState(s, heap, out));
      assertTrue(e.getMessage().contains("direct"));
      FloatBuffer swapped = ByteBuffer.allocateDirect(8)
          .order(ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN ? ByteOrder.BIG_ENDIAN : ByteOrder.LITTLE_ENDIAN)
          .asFloatBuffer();
      assertThrows(IllegalArgumentException.class, () -> l.forwardState(s, swapped, out));
      assertThrows(java.nio.ReadOnlyBufferException.class, () -> l.forwardState(s, Buffers.allocate(2), out.asReadOnlyBuffer()));
      assertThrows(NullPointerException.class, () -> l.forward((float[]) null, 1, 1));
      assertThrows(NullPointerException.class, () -> new State(null, 1));
      // The library stays usable after errors.
      assertEquals(3, l.forwardState(s, new float[2], 1).length);
    }
  }
}
